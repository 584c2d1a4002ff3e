/*
 * Elementwise and softmax kernels: each ISA variant (AVX2; AVX-512 where the
 * op has one and the CPU the ISA) against its scalar reference (the
 * baseline), measured interleaved in the same process, in
 * elements per nanosecond and as a ratio. Tensors of 16 K elements (in L1/L2)
 * and 4 M (beyond the L2: memory-bound for the cheap ops). Best of the
 * rounds, as the SGEMM bench. Prints figures only; never fails on time.
 *
 *   axle_bench_elementwise [--rounds R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle_kernels.h"
#include "axle_kernels_elementwise.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Variants: [0] the scalar reference, [1] AVX2, [2] AVX-512 or NULL. */
typedef struct job_t {
  const char* name;
  int kind; /* 0 binary, 1 unary, 2 softmax rows of 1000 */
  axle_binary_fn bin[3];
  axle_unary_fn un[3];
  void (*soft[3])(size_t, size_t, size_t, const float*, float*);
} job_t;

static float* g_a;
static float* g_b;
static float* g_y;

/* Seconds per call of variant v of job j on n elements, over ~20 ms. */
static double time_call(const job_t* j, int v, size_t n) {
  const float prm[2] = {0.1f, 0.0f};
  size_t calls = 0;
  const double t0 = now_s();
  double t;
  do {
    if (j->kind == 0)
      j->bin[v](g_a, 1, g_b, 1, g_y, n);
    else if (j->kind == 1)
      j->un[v](g_a, g_y, n, prm);
    else
      j->soft[v](n / 1000, 1000, 1, g_a, g_y);
    ++calls;
  } while ((t = now_s() - t0) < 0.02);
  return t / (double)calls;
}

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
  if (axle_kernels_isa() < AXLE_ISA_AVX2_FMA) {
    printf("elementwise: no AVX2/FMA on this machine: only the references run here\n");
    return 0;
  }
  const job_t jobs[] = {
      {"Add", 0, {axle_f32_add_scalar, axle_f32_add__avx2}, {0}, {0}},
      {"Mul", 0, {axle_f32_mul_scalar, axle_f32_mul__avx2}, {0}, {0}},
      {"Max", 0, {axle_f32_max_scalar, axle_f32_max__avx2}, {0}, {0}},
      {"Relu", 1, {0}, {axle_f32_relu_scalar, axle_f32_relu__avx2}, {0}},
      {"LeakyRelu", 1, {0}, {axle_f32_leaky_relu_scalar, axle_f32_leaky_relu__avx2}, {0}},
      {"Exp", 1, {0}, {axle_f32_exp_scalar, axle_f32_exp__avx2, axle_f32_exp__avx512}, {0}},
      {"Sigmoid",
       1,
       {0},
       {axle_f32_sigmoid_scalar, axle_f32_sigmoid__avx2, axle_f32_sigmoid__avx512},
       {0}},
      {"Tanh", 1, {0}, {axle_f32_tanh_scalar, axle_f32_tanh__avx2, axle_f32_tanh__avx512}, {0}},
      {"Softmax (rows of 1000)",
       2,
       {0},
       {0},
       {axle_f32_softmax_scalar, axle_f32_softmax__avx2, axle_f32_softmax__avx512}},
      {"LogSoftmax (rows of 1000)",
       2,
       {0},
       {0},
       {axle_f32_logsoftmax_scalar, axle_f32_logsoftmax__avx2, axle_f32_logsoftmax__avx512}},
  };
  const int avx512 = axle_kernels_isa() >= AXLE_ISA_AVX512;
  const size_t sizes[] = {16000, 4000000};
  const size_t most = sizes[1];
  g_a = malloc(most * sizeof(float));
  g_b = malloc(most * sizeof(float));
  g_y = malloc(most * sizeof(float));
  for (size_t i = 0; i < most; ++i) {
    g_a[i] = (float)((i * 2654435761u) % 20001) / 2500.0f - 4.0f;
    g_b[i] = (float)((i * 40503u) % 10007) / 2500.0f - 2.0f;
  }
  printf(
      "Elementwise kernels, 1 thread, best of %d rounds: elements per ns of the scalar "
      "reference (the baseline) and of each ISA variant, and the best variant's ratio to the "
      "reference\n",
      rounds);
  printf("%-26s %9s %10s %10s %10s %8s\n", "op", "elements", "reference", "avx2", "avx512",
         "ratio");
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; ++j) {
      const job_t* job = &jobs[j];
      const int has512 = avx512 && (job->un[2] || job->soft[2]);
      double best[3] = {1e30, 1e30, 1e30};
      for (int r = 0; r < rounds; ++r)
        for (int v = 0; v < (has512 ? 3 : 2); ++v) {
          const double t = time_call(job, v, sizes[s]);
          if (t < best[v]) best[v] = t;
        }
      char col512[16] = "-";
      if (has512) snprintf(col512, sizeof col512, "%.3f", sizes[s] / best[2] * 1e-9);
      const double fastest = best[1] < best[2] ? best[1] : best[2];
      printf("%-26s %9zu %10.3f %10.3f %10s %8.2f\n", job->name, sizes[s],
             sizes[s] / best[0] * 1e-9, sizes[s] / best[1] * 1e-9, col512, best[0] / fastest);
    }
  free(g_a);
  free(g_b);
  free(g_y);
  return 0;
}
