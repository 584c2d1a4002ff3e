/*
 * SGEMM figures: Axle's axle_f32_gemm against OpenBLAS's cblas_sgemm, both as
 * a fraction of the FMA peak this program measures itself (12 independent
 * FMA chains on the widest vectors the CPU has, 16 floats with AVX-512,
 * else 8: what one core can issue).
 *
 * The three are measured interleaved, round after round, and each reports
 * its best round: on a shared machine the best is the figure least disturbed
 * by other processes, and interleaving exposes all three to the same load.
 * Single-threaded (OpenBLAS is pinned to 1 thread) unless --threads says
 * otherwise. Prints figures only; never fails on time.
 *
 *   axle_bench_sgemm [--threads N] [--rounds R] [--csv]
 *   axle_bench_sgemm --peak      (the FMA peak alone: "GFLOP/s isa")
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "axle_kernels.h"

void openblas_set_num_threads(int num_threads);

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* GFLOP/s of dependent-free FMA streams on `bytes`-wide vectors: 12
 * accumulators cover a 4-cycle FMA latency on two pipes (8 in flight), for
 * AVX2 on Zen 3 and for AVX-512 on Sapphire Rapids alike. Written with
 * vector extensions so that one body serves both widths; a * m + c
 * contracts to an FMA (gnu11's -ffp-contract=fast). */
#define FMA_CHAINS 12
#define DEFINE_FMA_PEAK(name, target_isa, bytes)                                             \
  __attribute__((target(target_isa))) static double name(void) {                             \
    typedef float vec __attribute__((vector_size(bytes)));                                    \
    enum { LANES = (bytes) / sizeof(float) };                                                 \
    /* Distinct starting values: identical chains would be merged into one by                 \
     * the compiler, and the loop would then measure FMA latency instead. */                  \
    volatile float seed = 1.0f;                                                               \
    const float s0 = seed;                                                                    \
    vec acc[FMA_CHAINS];                                                                      \
    for (int j = 0; j < FMA_CHAINS; ++j) acc[j] = (vec){0} + (s0 + (float)j);                 \
    const vec m = (vec){0} + 0.9999999f, c = (vec){0} + 1e-7f;                                \
    const long iters = 20 * 1000 * 1000;                                                      \
    const double t0 = now_s();                                                                \
    for (long i = 0; i < iters; ++i) {                                                        \
      _Pragma("GCC unroll 12") for (int j = 0; j < FMA_CHAINS; ++j) acc[j] = acc[j] * m + c;  \
    }                                                                                         \
    const double t = now_s() - t0;                                                            \
    vec sum = acc[0];                                                                         \
    for (int j = 1; j < FMA_CHAINS; ++j) sum += acc[j];                                       \
    volatile float keep = sum[0]; /* the chains must not be optimised away */                 \
    (void)keep;                                                                               \
    return (double)iters * FMA_CHAINS * 2.0 * LANES / t / 1e9;                                \
  }
DEFINE_FMA_PEAK(fma_peak_avx2, "avx2,fma", 32)
DEFINE_FMA_PEAK(fma_peak_avx512, "avx512f", 64)

/* The widest FMA this CPU has, whatever AXLE_KERNELS_ISA caps Axle at, so
 * that figures under different caps share one peak. */
static int peak_is_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

/* One measurement of the peak of the widest FMA (see peak_is_avx512). */
static double fma_peak(int avx512) { return avx512 ? fma_peak_avx512() : fma_peak_avx2(); }

static const char* ukernel_name(void) {
  const axle_f32_gemm_ukernel_fn uk = axle_f32_gemm_ukernel();
  /* At AVX-512 the driver pairs A and B panels into 12x32 tiles; a lone panel
   * left at the end takes the 6x16 kernel, or the narrow tile (rows in the
   * lanes) for its last 8 columns or fewer, as the AVX2 kernel does for 4. */
  if (uk == axle_f32_gemm_6x16__avx512)
    return "axle_f32_gemm_12x32__avx512 (6x16 or narrow for a last lone panel)";
  if (uk == axle_f32_gemm_6x16__avx2_fma)
    return "axle_f32_gemm_6x16__avx2_fma (narrow for a last 1-4 columns)";
  return "axle_f32_gemm_6x16__scalar";
}

typedef struct shape_t {
  const char* name;
  int m, n, k;
} shape_t;

/* Square sizes, then convolution-shaped products (M = output channels,
 * N = output pixels, K = input channels x kernel taps) from the benchmark
 * networks. */
static const shape_t k_shapes[] = {
    {"square 256", 256, 256, 256},
    {"square 512", 512, 512, 512},
    {"square 1024", 1024, 1024, 1024},
    {"square 2048", 2048, 2048, 2048},
    {"resnet50 conv1 7x7s2", 64, 12544, 147},
    {"resnet50 res2 3x3", 64, 3136, 576},
    {"resnet50 res3 1x1 expand", 512, 784, 128},
    {"resnet50 res4 3x3", 256, 196, 2304},
    {"resnet50 res5 1x1 reduce", 512, 49, 2048},
    {"mobilenetv2 1x1 expand 56x56", 144, 3136, 24},
};

typedef struct bench_t {
  const shape_t* s;
  float *a, *b, *c, *c_ref;
  void* scratch;
  axle_f32_gemm_t g;
} bench_t;

static float* rand_matrix(size_t n) {
  float* p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  for (size_t i = 0; i < n; ++i) p[i] = (float)((rand() % 2001) - 1000) / 1000.0f;
  return p;
}

static double time_axle(bench_t* b, const axle_parallel_t* par) {
  const double t0 = now_s();
  axle_f32_gemm(&b->g, b->scratch, par);
  return now_s() - t0;
}

static double time_blas(bench_t* b) {
  const shape_t* s = b->s;
  const double t0 = now_s();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f, b->a, s->k,
              b->b, s->n, 0.0f, b->c_ref, s->n);
  return now_s() - t0;
}

/* Enough repetitions of one shape for ~0.1 s at `gflops` (the best peak
 * measured so far), at least 3. At a fixed 80 GFLOP/s (Zen 3's rate) a Zen
 * 5 core spent 0.03 s a round on N = 1024: three calls, the floor. */
static int reps_for(const shape_t* s, double gflops) {
  const double flop = 2.0 * s->m * s->n * s->k;
  const int r = (int)(0.1 * gflops * 1e9 / flop);
  return r < 3 ? 3 : r;
}

int main(int argc, char** argv) {
  int threads = 1, rounds = 5, csv = 0, peak_only = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--peak"))
      peak_only = 1;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv"))
      csv = 1;
    else {
      fprintf(stderr, "usage: %s [--threads N] [--rounds R] [--csv] | --peak\n", argv[0]);
      return 2;
    }
  }
  const int avx512_peak = peak_is_avx512();
  if (peak_only) {
    /* For bench/cpu/run.py's whole-network figures: the best of a few
     * measurements, as the SGEMM rounds take it. */
    double peak = 0.0;
    for (int r = 0; r < 3; ++r) {
      const double p = fma_peak(avx512_peak);
      if (p > peak) peak = p;
    }
    printf("%.2f %s\n", peak, avx512_peak ? "avx512" : "avx2");
    return 0;
  }
  if (threads != 1) {
    fprintf(stderr, "%s: only 1 thread is measured here (the plugin's pool is not linked)\n",
            argv[0]);
    threads = 1;
  }
  openblas_set_num_threads(threads);
  if (axle_kernels_isa() < AXLE_ISA_AVX2_FMA)
    fprintf(stderr, "note: no AVX2/FMA here (or AXLE_KERNELS_ISA=scalar): reference kernels\n");

  const size_t count = sizeof k_shapes / sizeof k_shapes[0];
  bench_t* b = calloc(count, sizeof *b);
  for (size_t i = 0; i < count; ++i) {
    const shape_t* s = &k_shapes[i];
    b[i].s = s;
    b[i].a = rand_matrix((size_t)s->m * s->k);
    b[i].b = rand_matrix((size_t)s->k * s->n);
    b[i].c = rand_matrix((size_t)s->m * s->n);
    b[i].c_ref = rand_matrix((size_t)s->m * s->n);
    axle_f32_gemm_t* g = &b[i].g;
    memset(g, 0, sizeof *g);
    g->m = (size_t)s->m;
    g->n = (size_t)s->n;
    g->k = (size_t)s->k;
    g->a.data = b[i].a;
    g->a.rs = (size_t)s->k;
    g->a.cs = 1;
    g->alpha = 1.0f;
    g->b.data = b[i].b;
    g->b.rs = (size_t)s->n;
    g->b.cs = 1;
    g->c = b[i].c;
    g->ldc = (size_t)s->n;
    b[i].scratch = aligned_alloc(64, (axle_f32_gemm_scratch_size(g, 1) + 63) / 64 * 64 + 64);
  }

  /* Both libraries must compute the same product before either is timed. */
  for (size_t i = 0; i < count; ++i) {
    time_axle(&b[i], NULL);
    time_blas(&b[i]);
    const size_t n = (size_t)b[i].s->m * b[i].s->n;
    double worst = 0.0;
    for (size_t j = 0; j < n; ++j) worst = fmax(worst, fabs(b[i].c[j] - b[i].c_ref[j]));
    if (worst > 1e-3 * b[i].s->k) {
      fprintf(stderr, "%s: Axle and OpenBLAS differ by %g\n", b[i].s->name, worst);
      return 1;
    }
  }

  double peak = 0.0;
  double* best_axle = calloc(count, sizeof(double));
  double* best_blas = calloc(count, sizeof(double));
  for (int r = 0; r < rounds; ++r) {
    const double p = fma_peak(avx512_peak);
    if (p > peak) peak = p;
    for (size_t i = 0; i < count; ++i) {
      const double flop = 2.0 * b[i].s->m * b[i].s->n * b[i].s->k;
      const int reps = reps_for(b[i].s, peak);
      for (int k = 0; k < reps; ++k) {
        const double ga = flop / time_axle(&b[i], NULL) / 1e9;
        const double gb = flop / time_blas(&b[i]) / 1e9;
        if (ga > best_axle[i]) best_axle[i] = ga;
        if (gb > best_blas[i]) best_blas[i] = gb;
      }
    }
  }

  if (csv) {
    printf("shape,m,n,k,axle_gflops,openblas_gflops,peak_gflops,peak_isa,axle_ukernel\n");
    for (size_t i = 0; i < count; ++i)
      printf("%s,%d,%d,%d,%.2f,%.2f,%.2f,%s,%s\n", b[i].s->name, b[i].s->m, b[i].s->n, b[i].s->k,
             best_axle[i], best_blas[i], peak, avx512_peak ? "avx512" : "avx2", ukernel_name());
  } else {
    printf("SGEMM, 1 thread, best of %d rounds; FMA peak measured here: %.1f GFLOP/s (%s)\n",
           rounds, peak, avx512_peak ? "AVX-512, 16-wide" : "AVX2, 8-wide");
    printf("Axle's micro-kernel: %s\n", ukernel_name());
    printf("%-30s %5s %6s %5s %9s %7s %9s %7s %9s\n", "shape", "M", "N", "K", "Axle", "/peak",
           "OpenBLAS", "/peak", "Axle/OB");
    for (size_t i = 0; i < count; ++i)
      printf("%-30s %5d %6d %5d %9.1f %7.2f %9.1f %7.2f %9.2f\n", b[i].s->name, b[i].s->m,
             b[i].s->n, b[i].s->k, best_axle[i], best_axle[i] / peak, best_blas[i],
             best_blas[i] / peak, best_axle[i] / best_blas[i]);
  }
  return 0;
}
