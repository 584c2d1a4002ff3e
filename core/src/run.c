/* Synchronous runs and the argument checks shared with asynchronous ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "status.h"
#include "tensor.h"

static void shape_text(const int64_t* shape, uint32_t rank, char* out, size_t n) {
  size_t at = (size_t)snprintf(out, n, "[");
  for (uint32_t i = 0; i < rank && at < n; ++i)
    at += (size_t)snprintf(out + at, n - at, "%s%lld", i ? "," : "", (long long)shape[i]);
  if (at < n) snprintf(out + at, n - at, "]");
}

static axle_status_t check_tensor(const axle_session_t* s, const axle_hal_tensor_t* want,
                                  const axle_tensor_t* got, const char* what) {
  if ((int32_t)got->dtype != want->dtype)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: %s '%s' must be %s, got %s",
                            s->graph.source, what, want->name,
                            axle_dtype_name((axle_dtype_t)want->dtype), axle_dtype_name(got->dtype));
  int same = got->rank == want->rank;
  for (uint32_t d = 0; same && d < want->rank; ++d) same = got->shape[d] == want->shape[d];
  if (!same) {
    char a[128], b[128];
    shape_text(want->shape, want->rank, a, sizeof(a));
    shape_text(got->shape, got->rank, b, sizeof(b));
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: %s '%s' must have shape %s, got %s",
                            s->graph.source, what, want->name, a, b);
  }
  return AXLE_OK;
}

axle_status_t axle_session_bind_inputs(const axle_session_t* s, const char* const* names,
                                       axle_tensor_t* const* inputs, uint32_t count, void** io) {
  const axle_graph_t* g = &s->graph;
  if (count && (!names || !inputs))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "input names and tensors are required");
  for (uint32_t i = 0; i < g->input_count; ++i) io[i] = NULL;
  for (uint32_t i = 0; i < count; ++i) {
    if (!names[i] || !inputs[i])
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "input %u has no name or tensor", i);
    int32_t found = axle_session_find_input(g, names[i]);
    if (found < 0) return axle_session_unknown_input(g, names[i]);
    uint32_t k = (uint32_t)found;
    if (io[k])
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: input '%s' is given twice",
                              g->source, names[i]);
    axle_status_t st = check_tensor(s, &g->tensors[g->inputs[k]], inputs[i], "input");
    if (st != AXLE_OK) return st;
    io[k] = axle_tensor_data(inputs[i]);
    if (!io[k] && inputs[i]->bytes)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: input '%s' has no host data",
                              g->source, names[i]);
    if (!io[k]) io[k] = (void*)&io[k]; /* zero-size tensors still need a non-NULL slot */
  }
  for (uint32_t k = 0; k < g->input_count; ++k)
    if (!io[k])
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: input '%s' is missing",
                              g->source, g->tensors[g->inputs[k]].name);
  return AXLE_OK;
}

axle_status_t axle_session_resolve_outputs(const axle_session_t* s, const char* const* names,
                                           uint32_t count, uint32_t* indices) {
  const axle_graph_t* g = &s->graph;
  if (!names) {
    if (count != g->output_count)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "%s: %u outputs requested without names, the model has %u",
                              g->source, count, g->output_count);
    for (uint32_t i = 0; i < count; ++i) indices[i] = i;
    return AXLE_OK;
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t k = 0;
    while (k < g->output_count && (!names[i] || strcmp(g->tensors[g->outputs[k]].name, names[i]) != 0))
      ++k;
    if (k == g->output_count)
      return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s: the model has no output '%s'",
                              g->source, names[i] ? names[i] : "(null)");
    indices[i] = k;
  }
  return AXLE_OK;
}

axle_status_t axle_session_bind_outputs(const axle_session_t* s, const uint32_t* indices,
                                        uint32_t count, axle_tensor_t** outputs, int* created,
                                        void** io) {
  const axle_graph_t* g = &s->graph;
  void** out_io = io + g->input_count;
  for (uint32_t i = 0; i < count; ++i) created[i] = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const axle_hal_tensor_t* t = &g->tensors[g->outputs[indices[i]]];
    if (outputs[i]) {
      axle_status_t st = check_tensor(s, t, outputs[i], "output");
      if (st != AXLE_OK) return st;
    } else {
      axle_status_t st = axle_tensor_create((axle_dtype_t)t->dtype, t->rank, t->shape, &outputs[i]);
      if (st != AXLE_OK) {
        /* A model can ask for more than the machine has: say for what. */
        char why[256];
        snprintf(why, sizeof why, "%s", axle_status_message());
        return axle_status_make(st, "%s: output '%s' (%llu bytes): %s", g->source, t->name,
                                (unsigned long long)t->size_bytes, why);
      }
      created[i] = 1;
    }
    out_io[indices[i]] = axle_tensor_data(outputs[i]);
  }
  return AXLE_OK;
}

axle_status_t axle_session_scratch_outputs(const axle_session_t* s, void** io, void** scratch) {
  const axle_graph_t* g = &s->graph;
  *scratch = NULL;
  size_t total = 0;
  for (uint32_t j = 0; j < g->output_count; ++j)
    if (!io[g->input_count + j]) total += (g->tensors[g->outputs[j]].size_bytes + 63) & ~(size_t)63;
  if (!total) return AXLE_OK;
  char* mem = (char*)aligned_alloc(64, total);
  if (!mem) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  size_t at = 0;
  for (uint32_t j = 0; j < g->output_count; ++j)
    if (!io[g->input_count + j]) {
      io[g->input_count + j] = mem + at;
      at += (g->tensors[g->outputs[j]].size_bytes + 63) & ~(size_t)63;
    }
  *scratch = mem;
  return AXLE_OK;
}

axle_status_t axle_session_run(axle_session_t* s, const axle_run_options_t* run_options,
                               const char* const* input_names, axle_tensor_t* const* inputs,
                               uint32_t input_count, const char* const* output_names,
                               axle_tensor_t** outputs, uint32_t output_count) {
  if (!s) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "session is NULL");
  if (output_count && !outputs)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "outputs array is NULL");
  uint64_t deadline = 0;
  if (run_options && run_options->struct_size >= offsetof(axle_run_options_t, timeout_ms) + 4 &&
      run_options->timeout_ms)
    deadline = axle_now_ns() + (uint64_t)run_options->timeout_ms * 1000000ull;

  /* Small models (the common case) keep all bookkeeping on the stack. */
  enum { kStack = 32 };
  void* io_stack[kStack];
  uint32_t idx_stack[kStack];
  int created_stack[kStack];
  uint32_t nio = s->slot_count - 1;
  int heap = nio > kStack || output_count > kStack;
  void** io = heap ? (void**)calloc(nio + 1, sizeof(void*)) : io_stack;
  uint32_t* idx = heap ? (uint32_t*)calloc(output_count + 1, sizeof(uint32_t)) : idx_stack;
  int* created = heap ? (int*)calloc(output_count + 1, sizeof(int)) : created_stack;
  if (!io || !idx || !created) {
    if (heap) {
      free(io);
      free(idx);
      free(created);
    }
    return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (uint32_t i = 0; i < nio; ++i) io[i] = NULL;
  for (uint32_t i = 0; i < output_count; ++i) created[i] = 0;
  void* scratch = NULL;
  axle_exec_ctx_t* ctx = NULL;
  uint64_t t0 = (s->flags & AXLE_SESSION_PROFILE) ? axle_now_ns() : 0;
  axle_status_t st = axle_session_bind_inputs(s, input_names, inputs, input_count, io);
  if (st == AXLE_OK) st = axle_session_resolve_outputs(s, output_names, output_count, idx);
  if (st == AXLE_OK) st = axle_session_bind_outputs(s, idx, output_count, outputs, created, io);
  if (st == AXLE_OK) st = axle_session_scratch_outputs(s, io, &scratch);
  if (st == AXLE_OK) st = axle_exec_ctx_acquire(s, &ctx);
  if (st == AXLE_OK) {
    st = axle_exec_run(s, ctx, io, deadline, NULL);
    axle_exec_ctx_release(s, ctx);
  }
  if (s->flags & AXLE_SESSION_PROFILE)
    axle_trace_record(&s->trace, 0, "run", "session", t0, axle_now_ns() - t0, NULL);
  free(scratch);
  if (st != AXLE_OK)
    for (uint32_t i = 0; i < output_count; ++i)
      if (created[i]) {
        axle_tensor_release(outputs[i]);
        outputs[i] = NULL;
      }
  if (heap) {
    free(io);
    free(idx);
    free(created);
  }
  return st;
}
