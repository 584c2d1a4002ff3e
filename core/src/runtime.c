#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "status.h"

static axle_status_t add_diagnostic(axle_runtime_t* rt, const char* text) {
  char** grown = (char**)realloc(rt->diagnostics, (rt->diagnostic_count + 1) * sizeof(char*));
  if (!grown) return AXLE_STATUS_OUT_OF_MEMORY;
  rt->diagnostics = grown;
  char* copy = strdup(text);
  if (!copy) return AXLE_STATUS_OUT_OF_MEMORY;
  rt->diagnostics[rt->diagnostic_count++] = copy;
  return AXLE_OK;
}

static const axle_plugin_t* find_plugin(const axle_runtime_t* rt, const char* name) {
  for (uint32_t i = 0; i < rt->plugin_count; ++i)
    if (strcmp(rt->plugins[i]->name, name) == 0) return rt->plugins[i];
  return NULL;
}

static void close_devices_of(axle_runtime_t* rt, uint32_t first_device) {
  while (rt->device_count > first_device) {
    axle_device_t* d = rt->devices[--rt->device_count];
    if (d->hal && AXLE_PLUGIN_HAS(d->plugin, device_close)) d->plugin->table->device_close(d->hal);
    free(d);
  }
}

/* Enumerates and opens the plugin's devices; all or nothing. */
static axle_status_t open_devices(axle_runtime_t* rt, axle_plugin_t* p) {
  const axle_hal_plugin_t* t = p->table;
  uint32_t count = 0;
  int32_t st = t->device_count(p->state, &count);
  if (st != AXLE_HAL_OK)
    return axle_status_annotate((axle_status_t)st, "%s: plugin '%s': device enumeration failed",
                                p->path, p->name);
  if (count > 1024)
    return axle_status_make(AXLE_STATUS_ABI_MISMATCH, "%s: plugin '%s' reports %u devices",
                            p->path, p->name, count);
  uint32_t first = rt->device_count;
  axle_device_t** grown =
      (axle_device_t**)realloc(rt->devices, (rt->device_count + count) * sizeof(*grown));
  if (!grown && count) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  if (grown) rt->devices = grown;
  for (uint32_t i = 0; i < count; ++i) {
    axle_device_t* d = (axle_device_t*)calloc(1, sizeof(*d));
    if (!d) {
      close_devices_of(rt, first);
      return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    d->plugin = p;
    d->info.struct_size = sizeof(d->info);
    st = t->device_info(p->state, i, &d->info);
    d->info.name[sizeof(d->info.name) - 1] = '\0';
    d->info.description[sizeof(d->info.description) - 1] = '\0';
    if (st == AXLE_HAL_OK && d->info.name[0] == '\0')
      st = axle_status_make(AXLE_STATUS_ABI_MISMATCH, "device %u has no name", i);
    if (st == AXLE_HAL_OK) {
      for (uint32_t j = 0; j < rt->device_count; ++j)
        if (strcmp(rt->devices[j]->info.name, d->info.name) == 0)
          st = axle_status_make(AXLE_STATUS_ABI_MISMATCH,
                                "device name '%s' is already taken by plugin '%s'",
                                d->info.name, rt->devices[j]->plugin->name);
    }
    if (st == AXLE_HAL_OK) st = t->device_open(p->state, i, &d->hal);
    if (st != AXLE_HAL_OK) {
      free(d);
      close_devices_of(rt, first);
      return axle_status_annotate((axle_status_t)st, "%s: plugin '%s': device %u", p->path,
                                  p->name, i);
    }
    d->index = rt->device_count;
    rt->devices[rt->device_count++] = d;
  }
  return AXLE_OK;
}

axle_status_t axle_runtime_load_plugin(axle_runtime_t* rt, const char* path) {
  if (!rt || !path)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "runtime and path are required");
  axle_plugin_t* p = NULL;
  axle_status_t st = axle_plugin_open(path, &p);
  if (st != AXLE_OK) return st;
  const axle_plugin_t* other = find_plugin(rt, p->name);
  if (other) {
    char name[64], other_path[512];
    snprintf(name, sizeof(name), "%s", p->name);
    snprintf(other_path, sizeof(other_path), "%s", other->path);
    axle_plugin_close(p);
    return axle_status_make(AXLE_STATUS_BUSY, "%s: plugin '%s' is already loaded from %s", path,
                            name, other_path);
  }
  axle_plugin_t** grown =
      (axle_plugin_t**)realloc(rt->plugins, (rt->plugin_count + 1) * sizeof(*grown));
  if (!grown) {
    axle_plugin_close(p);
    return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  rt->plugins = grown;
  st = open_devices(rt, p);
  if (st != AXLE_OK) {
    axle_plugin_close(p);
    return st;
  }
  rt->plugins[rt->plugin_count++] = p;
  return AXLE_OK;
}

static int name_cmp(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Loads every axle_plugin_*.so in dir, in name order; failures become
 * diagnostics. A plugin name already loaded from an earlier directory is
 * skipped quietly: earlier search-path entries override later ones. */
static void discover_dir(axle_runtime_t* rt, const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  char** names = NULL;
  size_t n = 0, cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "axle_plugin_", 12) != 0 || len < 4 ||
        strcmp(e->d_name + len - 3, ".so") != 0)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      char** g = (char**)realloc(names, cap * sizeof(char*));
      if (!g) break;
      names = g;
    }
    names[n] = strdup(e->d_name);
    if (names[n]) ++n;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof(char*), name_cmp);
  for (size_t i = 0; i < n; ++i) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    /* "axle_plugin_<name>.so": skip a name an earlier directory provided. */
    char plugin_name[64];
    snprintf(plugin_name, sizeof(plugin_name), "%.*s", (int)(strlen(names[i]) - 15),
             names[i] + 12);
    int loaded = 0;
    for (uint32_t k = 0; k < rt->plugin_count; ++k)
      if (strcmp(rt->plugins[k]->name, plugin_name) == 0) loaded = 1;
    if (!loaded && axle_runtime_load_plugin(rt, path) != AXLE_OK)
      add_diagnostic(rt, axle_status_message());
    free(names[i]);
  }
  free(names);
}

static void discover(axle_runtime_t* rt, const char* search_path) {
  if (search_path) {
    char* copy = strdup(search_path);
    if (copy) {
      char* save = NULL;
      for (char* dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        if (*dir) discover_dir(rt, dir);
      free(copy);
    }
  }
  /* The install directory relative to libaxle itself, so build and install
   * trees (and relocated installs) work without configuration. */
  Dl_info info;
  if (dladdr((void*)axle_runtime_create, &info) && info.dli_fname) {
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", info.dli_fname);
    char* slash = strrchr(dir, '/');
    if (slash) {
      *slash = '\0';
      char plugins[4200];
      snprintf(plugins, sizeof(plugins), "%s/%s", dir, AXLE_PLUGIN_SUBDIR);
      discover_dir(rt, plugins);
    }
  }
}

axle_status_t axle_runtime_create(const axle_runtime_options_t* options,
                                  axle_runtime_t** out_runtime) {
  if (!out_runtime)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_runtime is NULL");
  *out_runtime = NULL;
  axle_runtime_options_t opts = {sizeof(opts), 0, NULL};
  if (options) {
    if (options->struct_size < sizeof(uint32_t))
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "axle_runtime_options_t.struct_size is not set");
    memcpy(&opts, options,
           options->struct_size < sizeof(opts) ? options->struct_size : sizeof(opts));
  }
  axle_runtime_t* rt = (axle_runtime_t*)calloc(1, sizeof(*rt));
  if (!rt) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_init(&rt->workers_mu, NULL);
  if (!(opts.flags & AXLE_RUNTIME_NO_DISCOVERY))
    discover(rt, opts.plugin_path ? opts.plugin_path : getenv("AXLE_PLUGIN_PATH"));
  axle_status_clear();
  *out_runtime = rt;
  return AXLE_OK;
}

void axle_runtime_release(axle_runtime_t* rt) {
  if (!rt) return;
  axle_worker_pool_destroy(rt->workers);
  close_devices_of(rt, 0);
  for (uint32_t i = 0; i < rt->plugin_count; ++i) axle_plugin_close(rt->plugins[i]);
  for (uint32_t i = 0; i < rt->diagnostic_count; ++i) free(rt->diagnostics[i]);
  free(rt->diagnostics);
  free(rt->plugins);
  free(rt->devices);
  pthread_mutex_destroy(&rt->workers_mu);
  free(rt);
}

uint32_t axle_runtime_diagnostic_count(const axle_runtime_t* rt) {
  return rt ? rt->diagnostic_count : 0;
}

const char* axle_runtime_diagnostic(const axle_runtime_t* rt, uint32_t index) {
  return rt && index < rt->diagnostic_count ? rt->diagnostics[index] : NULL;
}

uint32_t axle_runtime_plugin_count(const axle_runtime_t* rt) { return rt ? rt->plugin_count : 0; }

axle_status_t axle_runtime_plugin_info(const axle_runtime_t* rt, uint32_t index,
                                       axle_plugin_info_t* info) {
  if (!rt || !info || info->struct_size < sizeof(uint32_t))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "runtime and info (with struct_size) are required");
  if (index >= rt->plugin_count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "plugin index %u out of range (%u loaded)",
                            index, rt->plugin_count);
  const axle_plugin_t* p = rt->plugins[index];
  axle_plugin_info_t full = {sizeof(full),        p->name, p->table->header.description,
                             p->path,             p->abi_version, p->table->header.features};
  if (!full.description) full.description = "";
  uint32_t size = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy(info, &full, size);
  info->struct_size = size;
  return AXLE_OK;
}

uint32_t axle_runtime_device_count(const axle_runtime_t* rt) { return rt ? rt->device_count : 0; }

axle_status_t axle_runtime_device_info(const axle_runtime_t* rt, uint32_t index,
                                       axle_device_info_t* info) {
  if (!rt || !info || info->struct_size < sizeof(uint32_t))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "runtime and info (with struct_size) are required");
  if (index >= rt->device_count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "device index %u out of range (%u devices)",
                            index, rt->device_count);
  const axle_device_t* d = rt->devices[index];
  axle_device_info_t full = {sizeof(full),
                             d->info.name,
                             d->info.description,
                             d->plugin->name,
                             (axle_device_kind_t)d->info.kind,
                             d->info.emulated,
                             d->info.memory_bytes,
                             d->info.dtype_mask};
  uint32_t size = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy(info, &full, size);
  info->struct_size = size;
  return AXLE_OK;
}

axle_status_t axle_runtime_device_find(const axle_runtime_t* rt, const char* name,
                                       uint32_t* out_index) {
  if (out_index) *out_index = 0;
  if (!rt || !name || !out_index)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "runtime, name and out_index are required");
  for (uint32_t i = 0; i < rt->device_count; ++i)
    if (strcmp(rt->devices[i]->info.name, name) == 0) {
      *out_index = i;
      return AXLE_OK;
    }
  char known[512] = "";
  size_t at = 0;
  for (uint32_t i = 0; i < rt->device_count && at < sizeof(known); ++i)
    at += (size_t)snprintf(known + at, sizeof(known) - at, "%s%s", i ? ", " : "",
                           rt->devices[i]->info.name);
  return axle_status_make(AXLE_STATUS_NOT_FOUND, "unknown device '%s' (available: %s)", name,
                          rt->device_count ? known : "none; is AXLE_PLUGIN_PATH set?");
}

axle_device_t* axle_runtime_cpu_device(const axle_runtime_t* rt) {
  for (uint32_t i = 0; i < rt->device_count; ++i)
    if (strcmp(rt->devices[i]->info.name, "cpu") == 0) return rt->devices[i];
  for (uint32_t i = 0; i < rt->device_count; ++i)
    if (rt->devices[i]->info.kind == AXLE_HAL_DEVICE_CPU) return rt->devices[i];
  return NULL;
}
