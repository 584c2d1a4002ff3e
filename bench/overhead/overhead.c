/*
 * Per-run overhead of a synchronous run through the C API.
 *
 * usage: axle_bench_overhead MODEL [RUNS]
 * MODEL is a small one-input one-output float model (bench/run.sh passes the
 * 1-node Add 1x1000 model). Prints median/p10/p90 per run, for caller-owned
 * outputs (zero allocation) and for library-allocated outputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle/axle.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int fail(const char* what, axle_status_t st) {
  fprintf(stderr, "%s: %s: %s\n", what, axle_status_string(st), axle_status_message());
  return 1;
}

static void report(const char* label, double* t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  printf("%-34s median %7.3f us  p10 %7.3f us  p90 %7.3f us  (%d runs)\n", label, t[n / 2],
         t[n / 10], t[n * 9 / 10], n);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL [RUNS]\n", argv[0]);
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 20000;
  if (runs < 100) runs = 100;
  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* sess = NULL;
  axle_status_t st = axle_runtime_create(NULL, &rt);
  if (st != AXLE_OK) return fail("runtime", st);
  if ((st = axle_model_load_file(argv[1], &model)) != AXLE_OK) return fail("model", st);
  if ((st = axle_session_create(rt, model, NULL, &sess)) != AXLE_OK) return fail("session", st);

  axle_tensor_info_t in_info = {.struct_size = sizeof(in_info)}, out_info = {.struct_size = sizeof(out_info)};
  axle_session_input_info(sess, 0, &in_info);
  axle_session_output_info(sess, 0, &out_info);
  axle_tensor_t *in = NULL, *out = NULL;
  if ((st = axle_tensor_create(in_info.dtype, in_info.rank, in_info.shape, &in)) != AXLE_OK)
    return fail("input", st);
  if ((st = axle_tensor_create(out_info.dtype, out_info.rank, out_info.shape, &out)) != AXLE_OK)
    return fail("output", st);
  uint32_t n_in = axle_session_input_count(sess);
  const char* names[8];
  axle_tensor_t* inputs[8];
  for (uint32_t i = 0; i < n_in && i < 8; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof(info)};
    axle_session_input_info(sess, i, &info);
    names[i] = info.name;
    inputs[i] = in;
  }
  double* t = (double*)malloc(sizeof(double) * (size_t)runs);
  if (!t) return 1;

  for (int i = 0; i < 1000; ++i)
    if ((st = axle_session_run(sess, NULL, names, inputs, n_in, NULL, &out, 1)) != AXLE_OK)
      return fail("run", st);
  for (int i = 0; i < runs; ++i) {
    double t0 = now_us();
    axle_session_run(sess, NULL, names, inputs, n_in, NULL, &out, 1);
    t[i] = now_us() - t0;
  }
  report("C API, caller-owned output", t, runs);

  for (int i = 0; i < runs; ++i) {
    axle_tensor_t* fresh = NULL;
    double t0 = now_us();
    axle_session_run(sess, NULL, names, inputs, n_in, NULL, &fresh, 1);
    t[i] = now_us() - t0;
    axle_tensor_release(fresh);
  }
  report("C API, library-allocated output", t, runs);

  free(t);
  axle_tensor_release(in);
  axle_tensor_release(out);
  axle_session_release(sess);
  axle_model_release(model);
  axle_runtime_release(rt);
  return 0;
}
