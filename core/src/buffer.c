#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "tensor.h"

static axle_status_t buffer_new(axle_runtime_t* rt, uint32_t device, axle_buffer_t** out) {
  *out = NULL;
  if (!rt) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "runtime is NULL");
  if (device >= rt->device_count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "device index %u out of range (%u devices)",
                            device, rt->device_count);
  axle_buffer_t* b = (axle_buffer_t*)calloc(1, sizeof(*b));
  if (!b) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  b->refcount = 1;
  b->device = rt->devices[device];
  pthread_mutex_init(&b->mu, NULL);
  *out = b;
  return AXLE_OK;
}

axle_status_t axle_buffer_allocate(axle_runtime_t* rt, uint32_t device, uint64_t size,
                                   axle_buffer_t** out_buffer) {
  if (!out_buffer) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_buffer is NULL");
  axle_buffer_t* b;
  axle_status_t st = buffer_new(rt, device, &b);
  *out_buffer = NULL;
  if (st != AXLE_OK) return st;
  axle_device_t* d = b->device;
  if (!AXLE_PLUGIN_HAS(d->plugin, memory_allocate)) {
    axle_buffer_release(b);
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: device '%s' cannot allocate memory",
                            d->plugin->name, d->info.name);
  }
  st = (axle_status_t)d->plugin->table->memory_allocate(d->hal, size, 64, &b->memory);
  if (st != AXLE_OK) {
    axle_buffer_release(b);
    return axle_status_annotate(st, "%s: device '%s': allocating %llu bytes", d->plugin->name,
                                d->info.name, (unsigned long long)size);
  }
  b->size = size;
  *out_buffer = b;
  return AXLE_OK;
}

axle_status_t axle_buffer_import(axle_runtime_t* rt, uint32_t device, void* host_ptr,
                                 uint64_t size, axle_buffer_t** out_buffer) {
  if (!out_buffer) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_buffer is NULL");
  *out_buffer = NULL;
  if (!host_ptr) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "host_ptr is NULL");
  axle_buffer_t* b;
  axle_status_t st = buffer_new(rt, device, &b);
  if (st != AXLE_OK) return st;
  axle_device_t* d = b->device;
  if (!AXLE_PLUGIN_HAS(d->plugin, memory_import)) {
    axle_buffer_release(b);
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: device '%s' cannot import host memory",
                            d->plugin->name, d->info.name);
  }
  st = (axle_status_t)d->plugin->table->memory_import(d->hal, host_ptr, size, &b->memory);
  if (st != AXLE_OK) {
    axle_buffer_release(b);
    return axle_status_annotate(st, "%s: device '%s': importing %llu bytes", d->plugin->name,
                                d->info.name, (unsigned long long)size);
  }
  b->size = size;
  *out_buffer = b;
  return AXLE_OK;
}

axle_status_t axle_buffer_map(axle_buffer_t* b, void** out_host_ptr) {
  if (!out_host_ptr) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_host_ptr is NULL");
  *out_host_ptr = NULL;
  if (!b) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "buffer is NULL");
  axle_device_t* d = b->device;
  pthread_mutex_lock(&b->mu);
  axle_status_t st = AXLE_OK;
  if (b->map_count == 0) {
    if (!AXLE_PLUGIN_HAS(d->plugin, memory_map))
      st = axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: device '%s' cannot map memory",
                            d->plugin->name, d->info.name);
    else
      st = (axle_status_t)d->plugin->table->memory_map(d->hal, b->memory, &b->mapped);
  }
  if (st == AXLE_OK) {
    ++b->map_count;
    *out_host_ptr = b->mapped;
  }
  pthread_mutex_unlock(&b->mu);
  return st;
}

void axle_buffer_unmap(axle_buffer_t* b) {
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  if (b->map_count > 0 && --b->map_count == 0) {
    if (AXLE_PLUGIN_HAS(b->device->plugin, memory_unmap))
      b->device->plugin->table->memory_unmap(b->device->hal, b->memory);
    b->mapped = NULL;
  }
  pthread_mutex_unlock(&b->mu);
}

uint64_t axle_buffer_size(const axle_buffer_t* b) { return b ? b->size : 0; }

void axle_buffer_retain(axle_buffer_t* b) {
  if (b) __atomic_add_fetch(&b->refcount, 1, __ATOMIC_RELAXED);
}

void axle_buffer_release(axle_buffer_t* b) {
  if (!b || __atomic_sub_fetch(&b->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  axle_device_t* d = b->device;
  if (b->map_count && AXLE_PLUGIN_HAS(d->plugin, memory_unmap))
    d->plugin->table->memory_unmap(d->hal, b->memory);
  if (b->memory && AXLE_PLUGIN_HAS(d->plugin, memory_free))
    d->plugin->table->memory_free(d->hal, b->memory);
  pthread_mutex_destroy(&b->mu);
  free(b);
}
