/*
 * Runtime internals: loaded plugins and opened devices.
 * A runtime is built by axle_runtime_create/load_plugin (one thread), then
 * read-only; sessions and buffers borrow its devices.
 */
#ifndef AXLE_CORE_RUNTIME_H_
#define AXLE_CORE_RUNTIME_H_

#include <pthread.h>

#include "axle/axle.h"
#include "axle/hal.h"

typedef struct axle_plugin_t {
  char* path;
  void* library;                     /* dlopen handle */
  const axle_hal_plugin_t* table;
  uint32_t abi_version;              /* negotiated */
  axle_hal_plugin_state_t* state;
  char name[64];
} axle_plugin_t;

typedef struct axle_device_t {
  axle_plugin_t* plugin;
  axle_hal_device_t* hal;
  axle_hal_device_info_t info;
  uint32_t index;                    /* in the runtime */
} axle_device_t;

/* Plugin function presence: the table may be shorter than this core's
 * (older plugin) — a function is usable only when covered by struct_size and
 * non-NULL. */
#define AXLE_PLUGIN_HAS(plugin, fn)                                          \
  ((plugin)->table->header.struct_size >=                                   \
       offsetof(axle_hal_plugin_t, fn) + sizeof((plugin)->table->fn) &&     \
   (plugin)->table->fn != NULL)

typedef struct axle_worker_pool_t axle_worker_pool_t;

struct axle_runtime_t {
  axle_plugin_t** plugins;
  uint32_t plugin_count;
  axle_device_t** devices;
  uint32_t device_count;
  char** diagnostics;
  uint32_t diagnostic_count;
  axle_worker_pool_t* workers;       /* created on first async submit */
  pthread_mutex_t workers_mu;
};

/* plugin_loader.c: opens path, negotiates the ABI, validates the header and
 * runs init. On failure nothing is left loaded and the message reads
 * "FILE: reason". */
axle_status_t axle_plugin_open(const char* path, axle_plugin_t** out_plugin);
void axle_plugin_close(axle_plugin_t* plugin);

/* The device named "cpu" (or the first CPU-kind device), or NULL. */
axle_device_t* axle_runtime_cpu_device(const axle_runtime_t* runtime);

/* Worker pool for asynchronous runs (executor.c). */
typedef void (*axle_work_fn)(void* arg);
axle_status_t axle_runtime_post(axle_runtime_t* runtime, axle_work_fn fn, void* arg);
void axle_worker_pool_destroy(axle_worker_pool_t* pool);

#endif /* AXLE_CORE_RUNTIME_H_ */
