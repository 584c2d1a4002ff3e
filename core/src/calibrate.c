/*
 * Calibration: runs the specialised float graph on the CPU device over the
 * user's sample inputs, observes every float tensor's range and records it as
 * per-tensor asymmetric uint8 quantization, which 8-bit devices (KPU, DRP-AI)
 * read when they compile.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "status.h"
#include "tensor.h"

static void observe(const axle_hal_tensor_t* t, const float* data, float* lo, float* hi) {
  int64_t n = axle_hal_tensor_elements(t);
  for (int64_t i = 0; i < n; ++i) {
    float v = data[i];
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
}

axle_status_t axle_session_calibrate(axle_session_t* s, axle_device_t* cpu,
                                     axle_tensor_t* const* samples, uint32_t sample_count) {
  axle_graph_t* g = &s->graph;
  if (!cpu)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: calibration needs the CPU plugin", g->source);
  if (!samples) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "calibration inputs are NULL");
  uint32_t nt = g->tensor_count;
  /* Every non-constant tensor gets its own place: calibration wants them all. */
  axle_hal_tensor_location_t* locs = (axle_hal_tensor_location_t*)calloc(nt + 1, sizeof(*locs));
  float* lo = (float*)malloc((nt + 1) * sizeof(float));
  float* hi = (float*)malloc((nt + 1) * sizeof(float));
  void** io = (void**)calloc(g->input_count + 2, sizeof(void*));
  axle_hal_binding_t* bind = (axle_hal_binding_t*)calloc(g->input_count + 1, sizeof(*bind));
  if (!locs || !lo || !hi || !io || !bind) {
    free(locs);
    free(lo);
    free(hi);
    free(io);
    free(bind);
    return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  uint32_t nloc = 0;
  uint64_t arena = 0;
  for (uint32_t t = 0; t < nt; ++t) {
    lo[t] = FLT_MAX;
    hi[t] = -FLT_MAX;
    const axle_hal_tensor_t* tt = &g->tensors[t];
    if (tt->flags & AXLE_HAL_TENSOR_CONSTANT) continue;
    locs[nloc].tensor = (int32_t)t;
    locs[nloc].slot = 0;
    for (uint32_t i = 0; i < g->input_count; ++i)
      if (g->inputs[i] == (int32_t)t) locs[nloc].slot = 1 + i;
    if (locs[nloc].slot == 0) {
      locs[nloc].offset = arena;
      arena += (tt->size_bytes + 63) & ~(uint64_t)63;
    }
    ++nloc;
  }
  axle_status_t st = AXLE_OK;
  char* mem = (char*)aligned_alloc(64, arena ? arena : 64);
  if (!mem) st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "calibration needs %llu bytes",
                                  (unsigned long long)arena);
  for (uint32_t k = 0; st == AXLE_OK && k < s->order_count; ++k) {
    char reason[256];
    uint32_t n = s->order[k];
    if (cpu->plugin->table->node_supported(cpu->hal, &g->hal, n, reason, sizeof(reason)) != AXLE_HAL_OK)
      st = axle_status_make(AXLE_STATUS_UNSUPPORTED,
                            "%s: calibration runs the model on the CPU, which cannot run node '%s' (%s): %s",
                            g->source, g->nodes[n].name, g->nodes[n].op_type, reason);
  }
  axle_hal_executable_t* exe = NULL;
  if (st == AXLE_OK) {
    axle_hal_subgraph_t sub = {sizeof(sub), &g->hal, s->order_count, s->order, nloc, locs,
                               1 + g->input_count};
    axle_hal_compile_options_t copts = {sizeof(copts), s->threads,
                                        AXLE_HAL_COMPILE_KEEP_INTERMEDIATES};
    st = (axle_status_t)cpu->plugin->table->compile(cpu->hal, &sub, &copts, &exe);
    if (st != AXLE_OK) st = axle_status_annotate(st, "%s: calibration", g->source);
  }
  axle_completion_t done;
  axle_completion_init(&done);
  for (uint32_t sample = 0; st == AXLE_OK && sample < sample_count; ++sample) {
    axle_tensor_t* const* in = samples + (size_t)sample * g->input_count;
    const char* names[64];
    if (g->input_count > 64) {
      st = axle_status_make(AXLE_STATUS_UNSUPPORTED, "calibration supports up to 64 inputs");
      break;
    }
    for (uint32_t i = 0; i < g->input_count; ++i) names[i] = g->tensors[g->inputs[i]].name;
    st = axle_session_bind_inputs(s, names, in, g->input_count, io);
    if (st != AXLE_OK) {
      st = axle_status_annotate(st, "calibration sample %u", sample);
      break;
    }
    bind[0].host_ptr = mem;
    for (uint32_t i = 0; i < g->input_count; ++i) bind[1 + i].host_ptr = io[i];
    axle_completion_reset(&done);
    axle_hal_submit_info_t info = {sizeof(info), exe, 1 + g->input_count, bind, &done, NULL, 0, NULL};
    st = (axle_status_t)cpu->plugin->table->submit(cpu->hal, &info);
    if (st == AXLE_OK) {
      axle_completion_wait(&done, 0);
      st = (axle_status_t)done.status;
    }
    for (uint32_t i = 0; st == AXLE_OK && i < nloc; ++i) {
      const axle_hal_tensor_t* t = &g->tensors[locs[i].tensor];
      if (t->dtype != AXLE_HAL_DTYPE_F32) continue;
      const float* data = locs[i].slot ? (const float*)io[locs[i].slot - 1]
                                       : (const float*)(mem + locs[i].offset);
      observe(t, data, &lo[locs[i].tensor], &hi[locs[i].tensor]);
    }
  }
  axle_completion_destroy(&done);
  if (exe) cpu->plugin->table->executable_release(exe);
  /* Asymmetric uint8 covering [min(lo,0), max(hi,0)]: zero stays exact,
   * which padding and ReLU rely on. */
  for (uint32_t i = 0; st == AXLE_OK && i < nloc; ++i) {
    int32_t t = locs[i].tensor;
    axle_hal_tensor_t* tt = &g->tensors[t];
    if (tt->dtype != AXLE_HAL_DTYPE_F32 || lo[t] > hi[t]) continue;
    float a = lo[t] < 0.0f ? lo[t] : 0.0f, b = hi[t] > 0.0f ? hi[t] : 0.0f;
    float* scale = (float*)axle_arena_alloc(&g->arena, sizeof(float), 4);
    int32_t* zp = (int32_t*)axle_arena_alloc(&g->arena, sizeof(int32_t), 4);
    if (!scale || !zp) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      break;
    }
    *scale = b > a ? (b - a) / 255.0f : 1.0f;
    long z = lroundf(-a / *scale);
    *zp = (int32_t)(z < 0 ? 0 : z > 255 ? 255 : z);
    tt->quant.count = 1;
    tt->quant.axis = 0;
    tt->quant.scales = scale;
    tt->quant.zero_points = zp;
  }
  free(mem);
  free(locs);
  free(lo);
  free(hi);
  free(io);
  free(bind);
  return st;
}
