/*
 * The K210 plugin's HAL glue: device "k210", an emulated Kendryte K210 (KPU
 * plus the CPU layers of its SDK runtime). Executables are kmodel v3
 * programs, from a user's file (artifact_load), from executable_serialize
 * (executable_load) or from Axle's compiler (compile). A worker thread per
 * device plays the chip: it runs one submission at a time, the KPU's layer
 * interrupts drive each program forward, and host->complete() ends it.
 *
 * Environment, read when a device opens:
 *   AXLE_K210_ROUNDING  "v0.2" (default) or "v0.1": which published
 *                       activation rule the KPU follows (docs/k210.md)
 *   AXLE_K210_SIMD      "0" uses the scalar reference kernel only
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "axle/hal.h"
#include "k210_compile.h"
#include "k210_cycles.h"
#include "k210_kmodel.h"
#include "k210_ops.h"
#include "k210_run.h"
#include "k210_scratch.h"
#include "plugin_queue.h"

#define K210_NAME "k210"
#define K210_EXPORT __attribute__((visibility("default")))
/* The host-table fields this plugin calls. */
#define K210_HOST_MIN_SIZE (offsetof(axle_hal_host_t, now_ns) + sizeof(void*))

struct axle_hal_plugin_state_t {
  const axle_hal_host_t* host;
};

struct axle_hal_memory_t {
  void* ptr;
  uint64_t size;
  int imported;
};

struct axle_hal_executable_t {
  axle_hal_device_t* device;
  k210_kmodel_t* model;
  /* Native programs bind slot 0 (unused arena), then slot 1 + i per input
   * and output; compiled ones use the slots their trailer records. */
  int native;
  uint32_t slot_count;
  axle_hal_tensor_t* io; /* executable_describe's view of model->io */
};

typedef struct k210_job_t {
  axle_plugin_job_t q; /* the queue's part: token, cancellation */
  const axle_hal_executable_t* exe;
  void* io[];          /* resolved address of every input/output */
} k210_job_t;

struct axle_hal_device_t {
  const axle_hal_host_t* host;
  k210_act_rule_t rule;
  /* The chip and the input staging buffer belong to the worker thread. */
  k210_chip_t chip;
  uint8_t* staging;
  size_t staging_cap;
  axle_plugin_queue_t queue; /* its worker runs the chip */
};

/* ------------------------------------------------------------------------ */
/* Lifetime and devices.                                                     */
/* ------------------------------------------------------------------------ */

static int32_t k210_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out_state) {
  if (out_state) *out_state = NULL;
  if (!host || host->struct_size < K210_HOST_MIN_SIZE) return AXLE_HAL_ABI_MISMATCH;
  if (!out_state) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": init: out_state is NULL");
  axle_hal_plugin_state_t* st = (axle_hal_plugin_state_t*)host->alloc(sizeof(*st), 16);
  if (!st) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": init: out of memory");
  st->host = host;
  *out_state = st;
  return AXLE_HAL_OK;
}

static void k210_shutdown(axle_hal_plugin_state_t* state) {
  if (state) state->host->free(state);
}

static int32_t k210_device_count(axle_hal_plugin_state_t* state, uint32_t* out_count) {
  (void)state;
  if (!out_count) return AXLE_HAL_INVALID_ARGUMENT;
  *out_count = 1;
  return AXLE_HAL_OK;
}

static int32_t k210_device_info(axle_hal_plugin_state_t* state, uint32_t index, axle_hal_device_info_t* info) {
  const axle_hal_host_t* host = state->host;
  if (!info || info->struct_size < sizeof(uint32_t))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": device_info: info is NULL or has no size");
  if (index != 0)
    return host->status_make(AXLE_HAL_NOT_FOUND, K210_NAME ": device index %u out of range (1 device)", index);
  axle_hal_device_info_t full;
  memset(&full, 0, sizeof(full));
  snprintf(full.name, sizeof(full.name), K210_NAME);
  snprintf(full.description, sizeof(full.description),
           "Kendryte K210 KPU (emulated): kmodel v3; u8 Conv/BatchNorm/activation/pooling");
  full.kind = AXLE_HAL_DEVICE_NPU;
  full.emulated = 1;
  full.dtype_mask = (1ull << AXLE_HAL_DTYPE_F32) | (1ull << AXLE_HAL_DTYPE_U8);
  /* No HOST_ACCESS: like the chip, whose DMA needs imported buffers. */
  size_t n = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy((char*)info + sizeof(uint32_t), (const char*)&full + sizeof(uint32_t), n - sizeof(uint32_t));
  return AXLE_HAL_OK;
}

static int32_t execute(void* owner, axle_plugin_job_t* queued);

static int32_t k210_device_open(axle_hal_plugin_state_t* state, uint32_t index, axle_hal_device_t** out) {
  const axle_hal_host_t* host = state->host;
  if (out) *out = NULL;
  if (!out) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": device_open: out is NULL");
  if (index != 0)
    return host->status_make(AXLE_HAL_NOT_FOUND, K210_NAME ": device index %u out of range (1 device)", index);
  axle_hal_device_t* dev = (axle_hal_device_t*)host->alloc(sizeof(*dev), 16);
  if (!dev) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": device_open: out of memory");
  memset(dev, 0, sizeof(*dev));
  dev->host = host;
  if (!k210_chip_init(&dev->chip)) {
    host->free(dev);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": cannot allocate the emulated KPU RAM");
  }
  const char* rounding = getenv("AXLE_K210_ROUNDING");
  dev->rule = rounding && strcmp(rounding, "v0.1") == 0 ? K210_ACT_RULE_V01 : K210_ACT_RULE_V02;
  const char* simd = getenv("AXLE_K210_SIMD");
  k210_kpu_set_simd(dev->chip.kpu, !(simd && strcmp(simd, "0") == 0));
  if (axle_plugin_queue_start(&dev->queue, host, execute, dev) != 0) {
    k210_chip_free(&dev->chip);
    host->free(dev);
    return host->status_make(AXLE_HAL_RESOURCE_EXHAUSTED, K210_NAME ": cannot start the worker thread");
  }
  *out = dev;
  return AXLE_HAL_OK;
}

static void k210_device_close(axle_hal_device_t* dev) {
  if (!dev) return;
  /* Queued work completes as CANCELLED: no completion token is lost. */
  axle_plugin_queue_stop(&dev->queue);
  k210_chip_free(&dev->chip);
  free(dev->staging);
  dev->host->free(dev);
}

/* ------------------------------------------------------------------------ */
/* Device memory: host RAM standing in for the chip's SRAM.                  */
/* ------------------------------------------------------------------------ */

static int32_t k210_memory_allocate(axle_hal_device_t* dev, uint64_t size, uint64_t align,
                                    axle_hal_memory_t** out) {
  const axle_hal_host_t* host = dev->host;
  if (out) *out = NULL;
  if (!out) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": memory_allocate: out is NULL");
  if (align & (align - 1))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             K210_NAME ": memory_allocate: alignment %llu is not a power of two",
                             (unsigned long long)align);
  if (align < 64) align = 64;
  if (size > (uint64_t)SIZE_MAX - align)
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": memory_allocate: %llu bytes is too large",
                             (unsigned long long)size);
  axle_hal_memory_t* m = (axle_hal_memory_t*)host->alloc(sizeof(*m), 16);
  void* p = m ? host->alloc(size ? (size_t)size : 1, (size_t)align) : NULL;
  if (!p) {
    if (m) host->free(m);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": cannot allocate %llu bytes",
                             (unsigned long long)size);
  }
  *m = (axle_hal_memory_t){p, size, 0};
  *out = m;
  return AXLE_HAL_OK;
}

static void k210_memory_free(axle_hal_device_t* dev, axle_hal_memory_t* m) {
  if (!m) return;
  if (!m->imported) dev->host->free(m->ptr);
  dev->host->free(m);
}

static int32_t k210_memory_map(axle_hal_device_t* dev, axle_hal_memory_t* m, void** out) {
  if (out) *out = NULL;
  if (!m || !out) return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": memory_map: NULL argument");
  *out = m->ptr;
  return AXLE_HAL_OK;
}

static void k210_memory_unmap(axle_hal_device_t* dev, axle_hal_memory_t* m) {
  (void)dev; /* host RAM: nothing to write back */
  (void)m;
}

static int range_ok(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

static int32_t k210_memory_copy(axle_hal_device_t* dev, axle_hal_memory_t* dst, uint64_t dst_offset,
                                axle_hal_memory_t* src, uint64_t src_offset, uint64_t size) {
  if (!dst || !src) return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": memory_copy: NULL memory");
  if (!range_ok(dst_offset, size, dst->size) || !range_ok(src_offset, size, src->size))
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                  K210_NAME ": memory_copy of %llu bytes out of bounds (dst %llu+ of %llu, "
                                  "src %llu+ of %llu)",
                                  (unsigned long long)size, (unsigned long long)dst_offset,
                                  (unsigned long long)dst->size, (unsigned long long)src_offset,
                                  (unsigned long long)src->size);
  if (size) memmove((uint8_t*)dst->ptr + dst_offset, (const uint8_t*)src->ptr + src_offset, (size_t)size);
  return AXLE_HAL_OK;
}

static int32_t k210_memory_import(axle_hal_device_t* dev, void* host_ptr, uint64_t size, axle_hal_memory_t** out) {
  if (out) *out = NULL;
  if (!out || (!host_ptr && size))
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": memory_import: NULL argument");
  axle_hal_memory_t* m = (axle_hal_memory_t*)dev->host->alloc(sizeof(*m), 16);
  if (!m) return dev->host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": out of memory");
  *m = (axle_hal_memory_t){host_ptr, size, 1};
  *out = m;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Executables.                                                              */
/* ------------------------------------------------------------------------ */

static void k210_executable_release(axle_hal_executable_t* exe) {
  if (!exe) return;
  const axle_hal_host_t* host = exe->device->host;
  k210_kmodel_free(exe->model);
  host->free(exe->io);
  host->free(exe);
}

static uint64_t io_bytes(const k210_io_t* io) { return k210_io_elements(io) * axle_hal_dtype_size(io->dtype); }

/* Wraps a parsed model (taking ownership) as an executable. */
static int32_t wrap_model(axle_hal_device_t* dev, k210_kmodel_t* m, int native, axle_hal_executable_t** out) {
  const axle_hal_host_t* host = dev->host;
  axle_hal_executable_t* exe = (axle_hal_executable_t*)host->alloc(sizeof(*exe), 16);
  axle_hal_tensor_t* io = exe ? (axle_hal_tensor_t*)host->alloc(sizeof(axle_hal_tensor_t) * m->io_count, 16) : NULL;
  if (!io) {
    if (exe) host->free(exe);
    k210_kmodel_free(m);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": out of memory");
  }
  memset(io, 0, sizeof(axle_hal_tensor_t) * m->io_count);
  for (uint32_t i = 0; i < m->io_count; ++i) {
    k210_io_t* src = &m->io[i];
    io[i].name = src->name;
    io[i].dtype = src->dtype;
    io[i].rank = src->rank;
    memcpy(io[i].shape, src->shape, sizeof(io[i].shape));
    io[i].flags = i == 0 ? AXLE_HAL_TENSOR_GRAPH_INPUT : AXLE_HAL_TENSOR_GRAPH_OUTPUT;
    io[i].size_bytes = io_bytes(src);
    if (src->quantized) io[i].quant = (axle_hal_quant_t){1, 0, &src->scale, &src->zero_point};
  }
  *exe = (axle_hal_executable_t){dev, m, native, native ? 1 + m->io_count : m->slot_count, io};
  *out = exe;
  return AXLE_HAL_OK;
}

static uint32_t io_slot(const axle_hal_executable_t* exe, uint32_t i) {
  return exe->native ? 1 + i : exe->model->io[i].slot;
}

static uint64_t io_offset(const axle_hal_executable_t* exe, uint32_t i) {
  return exe->native ? 0 : exe->model->io[i].offset;
}

static int32_t k210_executable_serialize(axle_hal_executable_t* exe, void** out_data, size_t* out_size) {
  if (out_data) *out_data = NULL;
  if (out_size) *out_size = 0;
  if (!exe || !out_data || !out_size) return AXLE_HAL_INVALID_ARGUMENT;
  const axle_hal_host_t* host = exe->device->host;
  void* buf = host->alloc(exe->model->size, 16);
  if (!buf) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": serialize: out of memory");
  memcpy(buf, exe->model->data, exe->model->size);
  *out_data = buf;
  *out_size = exe->model->size;
  return AXLE_HAL_OK;
}

static int32_t load(axle_hal_device_t* dev, const char* name, const void* data, size_t size, int from_user,
                    axle_hal_executable_t** out) {
  int32_t st = AXLE_HAL_OK;
  char why[512];
  k210_kmodel_t* m = k210_kmodel_parse(data, size, name, &st, why, sizeof(why));
  if (!m) {
    /* A user's file that is a kmodel but cannot run is "mine, but broken":
     * UNSUPPORTED would read as "not mine" and lose the message. */
    if (from_user && st == AXLE_HAL_UNSUPPORTED) st = AXLE_HAL_INVALID_MODEL;
    return dev->host->status_make(st, K210_NAME ": %s", why);
  }
  /* A user's file binds natively; an executable_serialize artifact with a
   * trailer restores the slots it was compiled for. */
  int native = from_user || !(m->flags & K210_KMODEL_FLAG_AXLE_TRAILER);
  return wrap_model(dev, m, native, out);
}

static int32_t k210_executable_load(axle_hal_device_t* dev, const void* data, size_t size,
                                    axle_hal_executable_t** out) {
  if (out) *out = NULL;
  if (!out || (!data && size))
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": executable_load: NULL argument");
  return load(dev, "kmodel artifact", data, size, 0, out);
}

static int32_t k210_artifact_load(axle_hal_device_t* dev, const char* path, const void* data, size_t size,
                                  axle_hal_executable_t** out) {
  if (out) *out = NULL;
  if (!out) return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": artifact_load: out is NULL");
  if (!data || !k210_kmodel_recognise(data, size, path)) return AXLE_HAL_UNSUPPORTED;
  return load(dev, path ? path : "kmodel", data, size, 1, out);
}

static int32_t k210_executable_describe(axle_hal_executable_t* exe, axle_hal_native_info_t* info) {
  if (!exe || !info || info->struct_size < sizeof(uint32_t)) return AXLE_HAL_INVALID_ARGUMENT;
  axle_hal_native_info_t full = {sizeof(full), 1, exe->model->output_count, exe->io, 0};
  size_t n = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy((char*)info + sizeof(uint32_t), (const char*)&full + sizeof(uint32_t), n - sizeof(uint32_t));
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Capability query and compile.                                             */
/* ------------------------------------------------------------------------ */

static int32_t k210_node_supported(axle_hal_device_t* dev, const axle_hal_graph_t* graph, uint32_t node,
                                   char* reason, size_t reason_size) {
  (void)dev;
  return k210_node_check(graph, node, reason, reason_size);
}

static void compile_note(void* ctx, const char* message) {
  const axle_hal_host_t* host = (const axle_hal_host_t*)ctx;
  host->log(2, K210_NAME, message);
}

static int32_t k210_compile_subgraph(axle_hal_device_t* dev, const axle_hal_subgraph_t* sg,
                                     const axle_hal_compile_options_t* options, axle_hal_executable_t** out) {
  const axle_hal_host_t* host = dev->host;
  if (out) *out = NULL;
  if (!out || !sg || sg->struct_size < offsetof(axle_hal_subgraph_t, slot_count) + sizeof(uint32_t) ||
      !sg->graph || (sg->node_count && !sg->nodes) || (sg->location_count && !sg->locations))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": compile: malformed subgraph description");
  uint8_t* bytes = NULL;
  size_t size = 0;
  char why[512];
  /* threads is a hint this one-chip emulator has no use for; flags matter. */
  uint32_t flags = options && options->struct_size >= offsetof(axle_hal_compile_options_t, flags) + sizeof(uint32_t)
                       ? options->flags
                       : 0;
  k210_compile_log_t log = {(void*)host, compile_note};
  int32_t st = k210_compile(sg, flags, &log, &bytes, &size, why, sizeof(why));
  if (st != AXLE_HAL_OK) return host->status_make(st, "%s", why);
  k210_kmodel_t* m = k210_kmodel_parse(bytes, size, "compiled program", &st, why, sizeof(why));
  free(bytes);
  if (!m) return host->status_make(AXLE_HAL_INTERNAL, K210_NAME ": the compiler wrote a bad kmodel: %s", why);
  return wrap_model(dev, m, 0, out);
}

/* ------------------------------------------------------------------------ */
/* Execution.                                                                */
/* ------------------------------------------------------------------------ */

static int32_t k210_submit(axle_hal_device_t* dev, const axle_hal_submit_info_t* info) {
  const axle_hal_host_t* host = dev->host;
  if (!info || info->struct_size < offsetof(axle_hal_submit_info_t, trace_ctx) + sizeof(void*) ||
      !info->executable)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": submit: malformed submit info");
  const axle_hal_executable_t* exe = info->executable;
  if (exe->device != dev)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": submit: executable belongs to another device");
  if (info->binding_count < exe->slot_count || !info->bindings)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, K210_NAME ": submit: %u bindings for %u slots",
                             info->binding_count, exe->slot_count);
  uint32_t count = exe->model->io_count;
  k210_job_t* job = (k210_job_t*)host->alloc(sizeof(k210_job_t) + sizeof(void*) * count, 16);
  if (!job) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": submit: out of memory");
  /* Everything is checked and resolved now: bindings live only during this
   * call, and errors found later have no caller thread to report to. */
  for (uint32_t i = 0; i < count; ++i) {
    const k210_io_t* io = &exe->model->io[i];
    const axle_hal_binding_t* b = &info->bindings[io_slot(exe, i)];
    uint64_t off = io_offset(exe, i), bytes = io_bytes(io);
    uint8_t* base = b->memory ? (uint8_t*)b->memory->ptr : (uint8_t*)b->host_ptr;
    int fits = !b->memory || (range_ok(b->offset, 0, b->memory->size) &&
                              range_ok(off, bytes, b->memory->size - b->offset));
    if (!base || !fits) {
      host->free(job);
      return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                               K210_NAME ": submit: %s '%s' (slot %u, offset %llu, %llu bytes) %s",
                               i ? "output" : "input", io->name, io_slot(exe, i), (unsigned long long)off,
                               (unsigned long long)bytes, base ? "is outside the bound memory" : "has no memory bound");
    }
    job->io[i] = base + b->offset + off;
  }
  axle_plugin_job_init(&job->q, info);
  job->exe = exe;
  if (axle_plugin_queue_push(&dev->queue, &job->q) != 0) {
    host->free(job);
    return host->status_make(AXLE_HAL_BUSY, K210_NAME ": submit: device is closing");
  }
  return AXLE_HAL_OK;
}

typedef struct run_ctx_t {
  axle_hal_device_t* dev;
  k210_job_t* job;
} run_ctx_t;

static int32_t should_stop(void* ctx) {
  run_ctx_t* r = (run_ctx_t*)ctx;
  return axle_plugin_job_should_stop(r->dev->host, &r->job->q);
}

static const char* const k_pool_names[K210_POOL_COUNT] = {
    "bypass", "max_2_s2", "mean_2_s2", "max_4_s4", "mean_4_s4",
    "left_top_2_s2", "right_top_2_s2", "left_top_4_s4", "mean_2_s1", "max_2_s1"};

/* One trace event per layer: KPU layers on track 1 with their cycle-model
 * count, CPU layers on track 2 with their estimate; both with host time. */
static void layer_done(void* ctx, const k210_layer_report_t* r) {
  run_ctx_t* rc = (run_ctx_t*)ctx;
  const axle_hal_host_t* host = rc->dev->host;
  char name[64], args[512];
  snprintf(name, sizeof(name), "layer %u %s", r->index, k210_kl_name(r->type));
  int n = snprintf(args, sizeof(args),
                   "{\"layer\":%u,\"type\":\"%s\",\"cycles\":%llu,\"chip_ns\":%llu,\"host_ns\":%llu",
                   r->index, k210_kl_name(r->type), (unsigned long long)r->cycles,
                   (unsigned long long)k210_cycles_to_ns(r->cycles),
                   (unsigned long long)(r->end_ns - r->start_ns));
  if (r->on_kpu && n > 0 && (size_t)n < sizeof(args)) {
    const k210_layer_t* l = r->words;
    snprintf(args + n, sizeof(args) - (size_t)n,
             ",\"macs\":%llu,\"kernel\":\"%s\",\"depthwise\":%s,\"pool\":\"%s\",\"in\":[%lld,%lld,%lld],"
             "\"out\":[%lld,%lld,%lld]}",
             (unsigned long long)r->macs, l->kernel_type == K210_KERNEL_3X3 ? "3x3" : "1x1",
             l->depth_wise_layer ? "true" : "false", k_pool_names[l->pool_type], (long long)l->i_ch_num + 1,
             (long long)l->i_col_high + 1, (long long)l->i_row_wid + 1, (long long)l->o_ch_num + 1,
             (long long)l->o_col_high + 1, (long long)l->o_row_wid + 1);
  } else if (n > 0 && (size_t)n < sizeof(args) - 1) {
    snprintf(args + n, sizeof(args) - (size_t)n, "}");
  }
  axle_hal_trace_event_t ev = {sizeof(ev), name, r->on_kpu ? "kpu" : "k210 cpu", r->start_ns,
                               r->end_ns - r->start_ns, args, r->on_kpu ? 1 : 2};
  host->trace(rc->job->q.trace_ctx, &ev);
}

/* Quantizes the caller's floats to the program's u8 input:
 * q = clamp(round_half_even(x / scale) + zero_point, 0, 255). */
static void quantize_input(const k210_io_t* io, const float* x, uint8_t* q, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    float v = rintf(x[i] / io->scale) + (float)io->zero_point;
    q[i] = (uint8_t)(!(v >= 0.0f) ? 0.0f : v > 255.0f ? 255.0f : v);
  }
}

static int32_t execute(void* owner, axle_plugin_job_t* queued) {
  axle_hal_device_t* dev = (axle_hal_device_t*)owner;
  k210_job_t* job = (k210_job_t*)queued;
  const axle_hal_host_t* host = dev->host;
  const k210_kmodel_t* m = job->exe->model;
  const k210_io_t* in = &m->io[0];
  const void* input = job->io[0];
  if (in->quantized) {
    uint64_t n = io_bytes(in) / sizeof(float);
    dev->staging = (uint8_t*)k210_grow(dev->staging, &dev->staging_cap, (size_t)n);
    if (!dev->staging) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, K210_NAME ": out of memory");
    quantize_input(in, (const float*)job->io[0], dev->staging, n);
    input = dev->staging;
  }
  run_ctx_t ctx = {dev, job};
  k210_run_hooks_t hooks = {&ctx, host->now_ns, should_stop, job->q.trace_ctx ? layer_done : NULL};
  uint64_t t0 = host->now_ns(), cycles = 0;
  char why[512];
  int32_t st = k210_run(&dev->chip, m, input, job->io + 1, dev->rule, &hooks, &cycles, why, sizeof(why));
  if (job->q.trace_ctx) {
    char args[200];
    snprintf(args, sizeof(args), "{\"device\":\"" K210_NAME "\",\"layers\":%u,\"cycles\":%llu,\"chip_ns\":%llu,\"status\":%d}",
             m->layer_count, (unsigned long long)cycles, (unsigned long long)k210_cycles_to_ns(cycles), (int)st);
    uint64_t t1 = host->now_ns();
    axle_hal_trace_event_t ev = {sizeof(ev), K210_NAME " execute", "device", t0, t1 - t0, args, 0};
    host->trace(job->q.trace_ctx, &ev);
  }
  /* The message travels to the waiting thread with complete(). */
  if (st != AXLE_HAL_OK) host->status_make(st, K210_NAME ": %s", why);
  return st;
}

static int32_t k210_cancel(axle_hal_device_t* dev, void* completion) {
  axle_plugin_queue_cancel(&dev->queue, completion);
  return AXLE_HAL_OK;
}

static int32_t k210_reset(axle_hal_device_t* dev) {
  axle_plugin_queue_reset(&dev->queue);
  return AXLE_HAL_OK;
}

/* The emulator has no sticky faults: every program is validated when loaded. */
static int32_t k210_device_status(axle_hal_device_t* dev) {
  (void)dev;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* The table and the entry point.                                            */
/* ------------------------------------------------------------------------ */

static const axle_hal_plugin_t g_k210_plugin = {
    .header = {.abi_version = 1,
               .struct_size = sizeof(axle_hal_plugin_t),
               .name = K210_NAME,
               .description = "Kendryte K210 KPU emulator: kmodel v3, ONNX Conv/BN/activation/pool in u8",
               .features = AXLE_HAL_FEATURE_ASYNC | AXLE_HAL_FEATURE_PROFILING | AXLE_HAL_FEATURE_SERIALIZE,
               .reserved = {0, 0, 0, 0}},
    .init = k210_init,
    .shutdown = k210_shutdown,
    .device_count = k210_device_count,
    .device_info = k210_device_info,
    .device_open = k210_device_open,
    .device_close = k210_device_close,
    .memory_allocate = k210_memory_allocate,
    .memory_free = k210_memory_free,
    .memory_map = k210_memory_map,
    .memory_unmap = k210_memory_unmap,
    .memory_copy = k210_memory_copy,
    .memory_import = k210_memory_import,
    .node_supported = k210_node_supported,
    .compile = k210_compile_subgraph,
    .executable_release = k210_executable_release,
    .executable_serialize = k210_executable_serialize,
    .executable_load = k210_executable_load,
    .submit = k210_submit,
    .cancel = k210_cancel,
    .reset = k210_reset,
    .device_status = k210_device_status,
    .artifact_load = k210_artifact_load,
    .executable_describe = k210_executable_describe,
};

K210_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version, const axle_hal_host_t* host);

const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version, const axle_hal_host_t* host) {
  if (core_abi_version < 1) {
    if (host && host->struct_size >= offsetof(axle_hal_host_t, status_make) + sizeof(void*) && host->status_make)
      host->status_make(AXLE_HAL_ABI_MISMATCH, K210_NAME ": the core speaks ABI version %u; this plugin needs 1",
                        core_abi_version);
    return NULL;
  }
  return &g_k210_plugin;
}

static const axle_hal_entry_fn k210_entry_type_check __attribute__((unused)) = axle_hal_plugin_entry;
