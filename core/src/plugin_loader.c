#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "runtime.h"
#include "status.h"

/* The v1 table must reach device_close: without enumeration and compile a
 * plugin is useless, so a shorter table is a broken plugin, not an old one. */
#define AXLE_PLUGIN_MIN_SIZE (offsetof(axle_hal_plugin_t, compile) + sizeof(void*))

static axle_status_t refuse(void* lib, axle_status_t code, const char* path, const char* why) {
  if (lib) dlclose(lib);
  return axle_status_make(code, "%s: %s", path, why);
}

axle_status_t axle_plugin_open(const char* path, axle_plugin_t** out_plugin) {
  *out_plugin = NULL;
  if (!path || !*path)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "plugin path is empty");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s: cannot load: %s", path,
                            err ? err : "unknown dlopen error");
  }
  axle_hal_entry_fn entry;
  *(void**)&entry = dlsym(lib, AXLE_HAL_ENTRY_NAME);
  if (!entry)
    return refuse(lib, AXLE_STATUS_ABI_MISMATCH, path,
                  "not an Axle plugin: no '" AXLE_HAL_ENTRY_NAME "' symbol");

  axle_status_clear();
  const axle_hal_plugin_t* table = entry(AXLE_HAL_ABI_VERSION, axle_host_table());
  if (!table) {
    char why[900];
    const char* msg = axle_status_message();
    snprintf(why, sizeof(why), "the entry point declined ABI version %u%s%s",
             AXLE_HAL_ABI_VERSION, *msg ? ": " : "", msg);
    return refuse(lib, AXLE_STATUS_ABI_MISMATCH, path, why);
  }
  const axle_hal_plugin_header_t* h = &table->header;
  /* Copies: the header lives in the library, which is unloaded on refusal. */
  uint32_t version = h->abi_version, size = h->struct_size;
  if (version == 0 || version > AXLE_HAL_ABI_VERSION) {
    dlclose(lib);
    return axle_status_make(AXLE_STATUS_ABI_MISMATCH,
                            "%s: plugin speaks ABI version %u, this core speaks 1..%u", path,
                            version, AXLE_HAL_ABI_VERSION);
  }
  if (size < AXLE_PLUGIN_MIN_SIZE) {
    dlclose(lib);
    return axle_status_make(AXLE_STATUS_ABI_MISMATCH,
                            "%s: plugin table is %u bytes, ABI version %u needs at least %zu",
                            path, size, version, (size_t)AXLE_PLUGIN_MIN_SIZE);
  }
  if (!h->name || !h->name[0] || strlen(h->name) >= 64)
    return refuse(lib, AXLE_STATUS_ABI_MISMATCH, path, "plugin header has no valid name");
  if (!table->init || !table->device_count || !table->device_info || !table->device_open ||
      !table->node_supported || !table->compile)
    return refuse(lib, AXLE_STATUS_ABI_MISMATCH, path,
                  "plugin table lacks a required function (init, device_count, device_info, "
                  "device_open, node_supported or compile)");

  axle_plugin_t* p = (axle_plugin_t*)calloc(1, sizeof(*p));
  char* path_copy = strdup(path);
  if (!p || !path_copy) {
    free(p);
    free(path_copy);
    return refuse(lib, AXLE_STATUS_OUT_OF_MEMORY, path, "out of memory");
  }
  p->path = path_copy;
  p->library = lib;
  p->table = table;
  p->abi_version = h->abi_version;
  snprintf(p->name, sizeof(p->name), "%s", h->name);

  axle_status_clear();
  int32_t st = table->init(axle_host_table(), &p->state);
  if (st != AXLE_HAL_OK) {
    char msg[900];
    snprintf(msg, sizeof(msg), "%s", axle_status_message());
    axle_status_make((axle_status_t)st, "%s: plugin '%s' failed to initialise: %s", path,
                     p->name, *msg ? msg : axle_status_string((axle_status_t)st));
    free(p->path);
    free(p);
    dlclose(lib);
    return (axle_status_t)st;
  }
  *out_plugin = p;
  return AXLE_OK;
}

void axle_plugin_close(axle_plugin_t* p) {
  if (!p) return;
  if (AXLE_PLUGIN_HAS(p, shutdown)) p->table->shutdown(p->state);
  /* Sanitizer builds keep the library mapped so leak reports can still
   * symbolise plugin frames. */
#if !defined(__SANITIZE_ADDRESS__)
  dlclose(p->library);
#endif
  free(p->path);
  free(p);
}
