/*
 * Shared scaffolding for the deliberately broken test plugins. Each fake_*.c
 * breaks exactly one thing; everything else here is a minimal, working
 * host-RAM device so that the core gets as far as the broken step.
 * Not an example to copy: see hal-plugins/reference for that.
 */
#ifndef AXLE_FAKE_COMMON_H_
#define AXLE_FAKE_COMMON_H_

#include <stdlib.h>
#include <string.h>

#include "axle/hal.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
/* Not every fake uses every helper. */
#define FAKE_FN static __attribute__((unused))

static const axle_hal_host_t* g_fake_host __attribute__((unused));

struct axle_hal_plugin_state_t { int unused; };
struct axle_hal_device_t { int unused; };
struct axle_hal_memory_t { void* ptr; uint64_t size; int imported; };
struct axle_hal_executable_t { int unused; };

static axle_hal_plugin_state_t g_fake_state __attribute__((unused));
static axle_hal_device_t g_fake_device __attribute__((unused));
static axle_hal_executable_t g_fake_exe __attribute__((unused));

FAKE_FN int32_t fake_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out) {
  g_fake_host = host;
  *out = &g_fake_state;
  return AXLE_HAL_OK;
}
FAKE_FN void fake_shutdown(axle_hal_plugin_state_t* s) { (void)s; }
FAKE_FN int32_t fake_device_count(axle_hal_plugin_state_t* s, uint32_t* n) {
  (void)s;
  *n = 1;
  return AXLE_HAL_OK;
}
FAKE_FN int32_t fake_device_open(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_t** out) {
  (void)s;
  *out = NULL;
  if (i != 0) return AXLE_HAL_NOT_FOUND;
  *out = &g_fake_device;
  return AXLE_HAL_OK;
}
FAKE_FN void fake_device_close(axle_hal_device_t* d) { (void)d; }

FAKE_FN int32_t fake_memory_allocate(axle_hal_device_t* d, uint64_t size, uint64_t align,
                                    axle_hal_memory_t** out) {
  (void)d;
  (void)align;
  *out = NULL;
  axle_hal_memory_t* m = (axle_hal_memory_t*)calloc(1, sizeof(*m));
  void* p = m ? calloc(1, size ? (size_t)size : 1) : NULL;
  if (!p) {
    free(m);
    return AXLE_HAL_OUT_OF_MEMORY;
  }
  m->ptr = p;
  m->size = size;
  *out = m;
  return AXLE_HAL_OK;
}
FAKE_FN void fake_memory_free(axle_hal_device_t* d, axle_hal_memory_t* m) {
  (void)d;
  if (!m) return;
  if (!m->imported) free(m->ptr);
  free(m);
}
FAKE_FN int32_t fake_memory_map(axle_hal_device_t* d, axle_hal_memory_t* m, void** out) {
  (void)d;
  *out = m->ptr;
  return AXLE_HAL_OK;
}
FAKE_FN void fake_memory_unmap(axle_hal_device_t* d, axle_hal_memory_t* m) {
  (void)d;
  (void)m;
}
FAKE_FN int32_t fake_memory_copy(axle_hal_device_t* d, axle_hal_memory_t* dst, uint64_t doff,
                                axle_hal_memory_t* src, uint64_t soff, uint64_t size) {
  (void)d;
  if (doff + size > dst->size || soff + size > src->size) return AXLE_HAL_INVALID_ARGUMENT;
  memmove((char*)dst->ptr + doff, (const char*)src->ptr + soff, (size_t)size);
  return AXLE_HAL_OK;
}
FAKE_FN int32_t fake_memory_import(axle_hal_device_t* d, void* ptr, uint64_t size,
                                  axle_hal_memory_t** out) {
  (void)d;
  *out = NULL;
  axle_hal_memory_t* m = (axle_hal_memory_t*)calloc(1, sizeof(*m));
  if (!m) return AXLE_HAL_OUT_OF_MEMORY;
  m->ptr = ptr;
  m->size = size;
  m->imported = 1;
  *out = m;
  return AXLE_HAL_OK;
}

/* Says yes to float32 Relu only, so placement sends exactly those nodes here. */
FAKE_FN int32_t fake_relu_only(axle_hal_device_t* d, const axle_hal_graph_t* g, uint32_t node,
                              char* reason, size_t reason_size) {
  (void)d;
  const axle_hal_node_t* n = &g->nodes[node];
  if (strcmp(n->op_type, "Relu") == 0 && n->domain[0] == '\0' && n->input_count == 1 &&
      n->inputs[0] >= 0 && g->tensors[n->inputs[0]].dtype == AXLE_HAL_DTYPE_F32)
    return AXLE_HAL_OK;
  if (reason && reason_size) {
    strncpy(reason, "fake: only float32 Relu", reason_size - 1);
    reason[reason_size - 1] = '\0';
  }
  return AXLE_HAL_UNSUPPORTED;
}
FAKE_FN void fake_executable_release(axle_hal_executable_t* e) { (void)e; }
/* Compiles to a dummy executable (fakes that break compile replace it). */
FAKE_FN int32_t fake_compile_ok(axle_hal_device_t* d, const axle_hal_subgraph_t* sg,
                                const axle_hal_compile_options_t* o, axle_hal_executable_t** out) {
  (void)d;
  (void)sg;
  (void)o;
  *out = &g_fake_exe;
  return AXLE_HAL_OK;
}

FAKE_FN void fake_fill_info(axle_hal_device_info_t* info, const char* name) {
  uint32_t size = info->struct_size;
  axle_hal_device_info_t full;
  memset(&full, 0, sizeof(full));
  full.struct_size = size;
  strncpy(full.name, name, sizeof(full.name) - 1);
  strncpy(full.description, "broken test device", sizeof(full.description) - 1);
  full.kind = AXLE_HAL_DEVICE_OTHER;
  full.emulated = 1;
  full.dtype_mask = 1ull << AXLE_HAL_DTYPE_F32;
  memcpy(info, &full, size < sizeof(full) ? size : sizeof(full));
}

/* A complete table whose only device is named device_name; each fake patches
 * the one field it breaks. */
#define FAKE_TABLE(plugin_name, info_fn)                                                   \
  {                                                                                        \
    .header = {.abi_version = 1, .struct_size = sizeof(axle_hal_plugin_t),                 \
               .name = plugin_name, .description = "deliberately broken test plugin",      \
               .features = 0},                                                             \
    .init = fake_init, .shutdown = fake_shutdown, .device_count = fake_device_count,        \
    .device_info = info_fn, .device_open = fake_device_open,                               \
    .device_close = fake_device_close, .memory_allocate = fake_memory_allocate,            \
    .memory_free = fake_memory_free, .memory_map = fake_memory_map,                        \
    .memory_unmap = fake_memory_unmap, .memory_copy = fake_memory_copy,                    \
    .memory_import = fake_memory_import, .node_supported = fake_relu_only,                 \
    .compile = fake_compile_ok, .executable_release = fake_executable_release              \
  }

#endif /* AXLE_FAKE_COMMON_H_ */
