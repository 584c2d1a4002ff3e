/*
 * Drives the k210 plugin through its HAL table, as the core would, with the
 * conformance suite's minimal host (tests/cts/cts_host.c): no libaxle.
 */
#ifndef AXLE_K210_PLUGIN_TEST_H_
#define AXLE_K210_PLUGIN_TEST_H_

#include <dlfcn.h>

#include "axle/hal.h"
#include "cts_host.h"
#include "k210_test.h"

typedef struct k210_plugin_t {
  void* lib;
  const axle_hal_plugin_t* t;
  axle_hal_plugin_state_t* state;
  axle_hal_device_t* dev;
} k210_plugin_t;

static inline int k210_plugin_open(k210_plugin_t* p, const char* path) {
  memset(p, 0, sizeof(*p));
  p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->lib) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return 0;
  }
  axle_hal_entry_fn entry = (axle_hal_entry_fn)dlsym(p->lib, AXLE_HAL_ENTRY_NAME);
  p->t = entry ? entry(AXLE_HAL_ABI_VERSION, cts_host()) : NULL;
  return p->t && p->t->init(cts_host(), &p->state) == AXLE_HAL_OK &&
         p->t->device_open(p->state, 0, &p->dev) == AXLE_HAL_OK;
}

static inline void k210_plugin_close(k210_plugin_t* p) {
  if (p->dev) p->t->device_close(p->dev);
  if (p->state) p->t->shutdown(p->state);
  if (p->lib) dlclose(p->lib);
}

/* Submits exe with `slots` host-pointer bindings and waits; returns the
 * completion status (or submit's failure). trace may be NULL. */
static inline int32_t k210_plugin_run(k210_plugin_t* p, axle_hal_executable_t* exe, void* const* slots,
                                      uint32_t slot_count, const volatile int32_t* cancel,
                                      uint64_t deadline_ns, cts_trace_t* trace, cts_token_t* token) {
  axle_hal_binding_t b[16];
  memset(b, 0, sizeof(b));
  for (uint32_t i = 0; i < slot_count && i < 16; ++i) b[i].host_ptr = slots[i];
  axle_hal_submit_info_t info = {sizeof(info), exe, slot_count, b, token, cancel, deadline_ns, trace};
  int32_t st = p->t->submit(p->dev, &info);
  if (st != AXLE_HAL_OK) return st;
  if (!cts_token_wait(token, 20000)) return AXLE_HAL_TIMEOUT;
  return token->status;
}

#endif /* AXLE_K210_PLUGIN_TEST_H_ */
