/*
 * Per-layer profile of a model on the CPU plugin: warm-up runs, then R
 * profiled runs; writes the Chrome trace of the profiled runs (per-node
 * events, fused groups named by their Conv with "fused" in args) so
 * bench/cpu/layers.py can attribute time and GFLOP/s to layers.
 *
 *   axle_bench_layers MODEL TRACE.json [--threads N] [--runs R] [--warmup W]
 *
 * Inputs are zeros of the model's input shapes (layer times of these
 * networks do not depend on values).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"

static int fail(axle_status_t st, const char* what) {
  fprintf(stderr, "axle_bench_layers: %s: %s\n", what, axle_status_message());
  return st ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL TRACE.json [--threads N] [--runs R] [--warmup W]\n", argv[0]);
    return 2;
  }
  uint32_t threads = 1, runs = 10, warmup = 3;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--runs")) runs = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warmup = (uint32_t)atoi(argv[i + 1]);
  }
  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* s = NULL;
  axle_status_t st = axle_runtime_create(NULL, &rt);
  if (st != AXLE_OK) return fail(st, "runtime");
  if ((st = axle_model_load_file(argv[1], &model)) != AXLE_OK) return fail(st, argv[1]);
  axle_session_options_t so = {.struct_size = sizeof so, .flags = AXLE_SESSION_PROFILE,
                               .threads = threads};
  if ((st = axle_session_create(rt, model, &so, &s)) != AXLE_OK) return fail(st, "session");
  const uint32_t n_in = axle_session_input_count(s), n_out = axle_session_output_count(s);
  const char** names = calloc(n_in + 1, sizeof *names);
  axle_tensor_t** in = calloc(n_in + 1, sizeof *in);
  axle_tensor_t** out = calloc(n_out + 1, sizeof *out);
  for (uint32_t i = 0; i < n_in; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    if ((st = axle_session_input_info(s, i, &info)) != AXLE_OK) return fail(st, "input info");
    names[i] = info.name;
    if ((st = axle_tensor_create(info.dtype, info.rank, info.shape, &in[i])) != AXLE_OK)
      return fail(st, "input tensor");
    memset(axle_tensor_data(in[i]), 0, axle_tensor_byte_size(in[i]));
  }
  for (uint32_t r = 0; r < warmup + runs; ++r) {
    if (r == warmup) axle_session_trace_clear(s);
    if ((st = axle_session_run(s, NULL, names, in, n_in, NULL, out, n_out)) != AXLE_OK)
      return fail(st, "run");
  }
  if ((st = axle_session_trace_write(s, argv[2])) != AXLE_OK) return fail(st, "trace");
  for (uint32_t i = 0; i < n_in; ++i) axle_tensor_release(in[i]);
  for (uint32_t i = 0; i < n_out; ++i) axle_tensor_release(out[i]);
  free(names);
  free(in);
  free(out);
  axle_session_release(s);
  axle_model_release(model);
  axle_runtime_release(rt);
  return 0;
}
