/*
 * The f32 elementwise and softmax ISA variants against their scalar
 * references (axle_kernels_elementwise.h, axle_kernels.h): every length
 * from 0 to 40 and longer ones (all tail sizes), the operand strides the
 * broadcasting driver passes and others, in place, NaN, infinities, signed
 * zeros and subnormals. Arithmetic and piecewise activations must give the
 * references' bits; exp, sigmoid and tanh stay within 2, 4 and 3 ulp of
 * libm (measured: 1, 3, 2), softmax within a few ulp; the AVX-512 variants
 * (exp, sigmoid, tanh, softmax) likewise where the CPU has AVX-512. Stores past n are caught by
 * guard values, and the lookup from reference to variant is checked at each ISA level.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"
#include "axle_kernels_elementwise.h"
#include "kernel_test.h"

#define GUARD 8 /* floats after each output, which no kernel may touch */
static const uint32_t k_guard_bits = 0x7fbadbadu;

static int have_avx2(void) { return axle_kernels_isa() >= AXLE_ISA_AVX2_FMA; }

/* Special values mixed into the inputs. */
static const float k_special[] = {NAN,    -NAN,    INFINITY, -INFINITY, 0.0f, -0.0f,
                                  1e-40f, -1e-40f, 3.0e38f,  -3.0e38f,  1.0f, -1.0f};

/* n inputs in [-scale, scale), one in every 5 replaced by a special value,
 * followed by GUARD guard floats. */
static float* inputs(size_t n, float scale, int specials) {
  float* p = malloc((n + GUARD) * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    p[i] = kt_rand() * scale;
    if (specials && kt_next() % 5 == 0)
      p[i] = k_special[kt_next() % (sizeof k_special / sizeof k_special[0])];
  }
  for (size_t i = n; i < n + GUARD; ++i) memcpy(&p[i], &k_guard_bits, sizeof(float));
  return p;
}

static int guards_intact(const float* y, size_t n) {
  for (size_t i = n; i < n + GUARD; ++i)
    if (memcmp(&y[i], &k_guard_bits, sizeof(float)) != 0) {
      fprintf(stderr, "\nstore past the end: element %zu of %zu\n", i, n);
      return 0;
    }
  return 1;
}

/* Bits equal, any NaN matching any NaN. */
static int same_bits(const char* what, const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (isnan(got[i]) && isnan(want[i])) continue;
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      fprintf(stderr, "\n%s: element %zu of %zu: got %.9g want %.9g\n", what, i, n, (double)got[i],
              (double)want[i]);
      return 0;
    }
  }
  return 1;
}

/* Distance in units in the last place (floats ordered as integers). */
static int64_t ulps(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  const int64_t oa = ia < 0 ? -(int64_t)(ia & 0x7fffffff) : ia;
  const int64_t ob = ib < 0 ? -(int64_t)(ib & 0x7fffffff) : ib;
  return oa > ob ? oa - ob : ob - oa;
}

static int within_ulps(const char* what, const float* got, const float* want, size_t n,
                       int64_t max_ulps) {
  for (size_t i = 0; i < n; ++i) {
    if (isnan(got[i]) != isnan(want[i]) || (!isnan(want[i]) && ulps(got[i], want[i]) > max_ulps)) {
      fprintf(stderr, "\n%s: element %zu of %zu: got %.9g want %.9g\n", what, i, n, (double)got[i],
              (double)want[i]);
      return 0;
    }
  }
  return 1;
}

static const size_t k_lengths[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,   14,
                                   15, 16, 17, 18, 19, 20, 23, 24, 25, 31, 32, 33, 40, 1000, 1003};
#define N_LENGTHS (sizeof k_lengths / sizeof k_lengths[0])

/* ---- binary -------------------------------------------------------------- */

typedef struct binary_case_t {
  const char* name;
  axle_binary_fn reference, variant;
} binary_case_t;

#define BINARY_CASE_(op) {#op, axle_f32_##op##_scalar, axle_f32_##op##__avx2},
static const binary_case_t k_binary_cases[] = {AXLE_F32_BINARY_AVX2_OPS(BINARY_CASE_)};

static void test_binary_bits(void) {
  if (!have_avx2()) return kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
  /* Strides: both streams, a scalar on either side, both scalars and a
   * general stride (the last two go to the reference inside the variant). */
  static const ptrdiff_t strides[][2] = {{1, 1}, {0, 1}, {1, 0}, {0, 0}, {2, 1}};
  for (size_t c = 0; c < sizeof k_binary_cases / sizeof k_binary_cases[0]; ++c) {
    const binary_case_t* bc = &k_binary_cases[c];
    for (size_t l = 0; l < N_LENGTHS; ++l) {
      const size_t n = k_lengths[l];
      float* a = inputs(2 * n + 1, 4.0f, 1);
      float* b = inputs(2 * n + 1, 4.0f, 1);
      float* want = inputs(n, 0.0f, 0);
      float* got = inputs(n, 0.0f, 0);
      for (size_t s = 0; s < sizeof strides / sizeof strides[0]; ++s) {
        char what[96];
        snprintf(what, sizeof what, "f32 %s, n %zu, strides %td/%td", bc->name, n, strides[s][0],
                 strides[s][1]);
        bc->reference(a, strides[s][0], b, strides[s][1], want, n);
        bc->variant(a, strides[s][0], b, strides[s][1], got, n);
        CU_ASSERT(same_bits(what, got, want, n));
        CU_ASSERT(guards_intact(got, n));
      }
      /* In place over either operand, element for element. */
      float* a2 = malloc((n + GUARD) * sizeof(float));
      memcpy(a2, a, (n + GUARD) * sizeof(float));
      bc->reference(a, 1, b, 1, want, n);
      bc->variant(a2, 1, b, 1, a2, n);
      CU_ASSERT(same_bits("in place over a", a2, want, n));
      memcpy(a2, b, (n + GUARD) * sizeof(float));
      bc->variant(a, 1, a2, 1, a2, n);
      CU_ASSERT(same_bits("in place over b", a2, want, n));
      free(a2);
      free(a);
      free(b);
      free(want);
      free(got);
    }
  }
}

/* ---- unary --------------------------------------------------------------- */

typedef struct unary_case_t {
  const char* name;
  axle_unary_fn reference, variant;
  float p[2];
  int64_t max_ulps; /* 0: the reference's bits */
  float scale;      /* inputs in [-scale, scale) */
} unary_case_t;

static const unary_case_t k_unary_cases[] = {
    {"relu", axle_f32_relu_scalar, axle_f32_relu__avx2, {0, 0}, 0, 4.0f},
    {"leaky_relu", axle_f32_leaky_relu_scalar, axle_f32_leaky_relu__avx2, {0.1f, 0}, 0, 4.0f},
    {"clip", axle_f32_clip_scalar, axle_f32_clip__avx2, {-0.5f, 0.75f}, 0, 2.0f},
    /* lo > hi: ONNX's min(max(x, lo), hi) gives hi everywhere. */
    {"clip lo > hi", axle_f32_clip_scalar, axle_f32_clip__avx2, {1.0f, -1.0f}, 0, 2.0f},
    {"hard_sigmoid",
     axle_f32_hard_sigmoid_scalar,
     axle_f32_hard_sigmoid__avx2,
     {0.2f, 0.5f},
     0,
     6.0f},
    {"hard_swish", axle_f32_hard_swish_scalar, axle_f32_hard_swish__avx2, {0, 0}, 0, 6.0f},
    {"neg", axle_f32_neg_scalar, axle_f32_neg__avx2, {0, 0}, 0, 4.0f},
    {"abs", axle_f32_abs_scalar, axle_f32_abs__avx2, {0, 0}, 0, 4.0f},
    {"exp", axle_f32_exp_scalar, axle_f32_exp__avx2, {0, 0}, 2, 100.0f},
    {"exp near 0", axle_f32_exp_scalar, axle_f32_exp__avx2, {0, 0}, 2, 1.0f},
    {"sigmoid", axle_f32_sigmoid_scalar, axle_f32_sigmoid__avx2, {0, 0}, 4, 40.0f},
    {"tanh", axle_f32_tanh_scalar, axle_f32_tanh__avx2, {0, 0}, 3, 12.0f},
    {"tanh near 0", axle_f32_tanh_scalar, axle_f32_tanh__avx2, {0, 0}, 3, 1.0f},
};

static const unary_case_t k_unary_avx512_cases[] = {
    {"exp avx512", axle_f32_exp_scalar, axle_f32_exp__avx512, {0, 0}, 2, 100.0f},
    {"exp near 0 avx512", axle_f32_exp_scalar, axle_f32_exp__avx512, {0, 0}, 2, 1.0f},
    {"sigmoid avx512", axle_f32_sigmoid_scalar, axle_f32_sigmoid__avx512, {0, 0}, 4, 40.0f},
    {"tanh avx512", axle_f32_tanh_scalar, axle_f32_tanh__avx512, {0, 0}, 3, 12.0f},
    {"tanh near 0 avx512", axle_f32_tanh_scalar, axle_f32_tanh__avx512, {0, 0}, 3, 1.0f},
};

static int have_avx512(void) { return axle_kernels_isa() >= AXLE_ISA_AVX512; }

static void run_unary_cases(const unary_case_t* cases, size_t count) {
  for (size_t c = 0; c < count; ++c) {
    const unary_case_t* uc = &cases[c];
    for (size_t l = 0; l < N_LENGTHS; ++l) {
      const size_t n = k_lengths[l];
      float* x = inputs(n, uc->scale, 1);
      float* want = inputs(n, 0.0f, 0);
      float* got = inputs(n, 0.0f, 0);
      char what[96];
      snprintf(what, sizeof what, "f32 %s, n %zu", uc->name, n);
      uc->reference(x, want, n, uc->p);
      uc->variant(x, got, n, uc->p);
      CU_ASSERT(uc->max_ulps ? within_ulps(what, got, want, n, uc->max_ulps)
                             : same_bits(what, got, want, n));
      CU_ASSERT(guards_intact(got, n));
      uc->variant(x, x, n, uc->p); /* in place */
      CU_ASSERT(uc->max_ulps ? within_ulps(what, x, want, n, uc->max_ulps)
                             : same_bits(what, x, want, n));
      free(x);
      free(want);
      free(got);
    }
  }
}

static void test_unary(void) {
  if (!have_avx2()) return kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
  run_unary_cases(k_unary_cases, sizeof k_unary_cases / sizeof k_unary_cases[0]);
  if (!have_avx512()) return kt_skip("no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)");
  run_unary_cases(k_unary_avx512_cases,
                  sizeof k_unary_avx512_cases / sizeof k_unary_avx512_cases[0]);
}

/* exp, sigmoid and tanh over a dense sweep of their whole useful range:
 * where the polynomial hands over to the exp form (tanh at 0.625), the
 * overflow and subnormal ends of e^x, and the tiny arguments. */
static void test_unary_sweeps(void) {
  if (!have_avx2()) return kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
  static const struct {
    const char* name;
    axle_unary_fn reference, variant[2]; /* AVX2, AVX-512 */
    float lo, hi;
    int64_t max_ulps;
  } sweeps[] = {
      {"exp", axle_f32_exp_scalar, {axle_f32_exp__avx2, axle_f32_exp__avx512}, -110.0f, 90.0f, 2},
      {"exp subnormal",
       axle_f32_exp_scalar,
       {axle_f32_exp__avx2, axle_f32_exp__avx512},
       -104.5f,
       -86.0f,
       2},
      {"exp overflow",
       axle_f32_exp_scalar,
       {axle_f32_exp__avx2, axle_f32_exp__avx512},
       88.0f,
       89.0f,
       2},
      {"sigmoid",
       axle_f32_sigmoid_scalar,
       {axle_f32_sigmoid__avx2, axle_f32_sigmoid__avx512},
       -110.0f,
       110.0f,
       4},
      {"tanh",
       axle_f32_tanh_scalar,
       {axle_f32_tanh__avx2, axle_f32_tanh__avx512},
       -12.0f,
       12.0f,
       3},
      {"tanh handover",
       axle_f32_tanh_scalar,
       {axle_f32_tanh__avx2, axle_f32_tanh__avx512},
       0.6f,
       0.65f,
       3},
      {"tanh tiny",
       axle_f32_tanh_scalar,
       {axle_f32_tanh__avx2, axle_f32_tanh__avx512},
       -1e-3f,
       1e-3f,
       3},
  };
  const size_t n = 200003;
  float* x = malloc(n * sizeof(float));
  float* want = malloc(n * sizeof(float));
  float* got = malloc(n * sizeof(float));
  for (size_t s = 0; s < sizeof sweeps / sizeof sweeps[0]; ++s) {
    for (size_t i = 0; i < n; ++i)
      x[i] = sweeps[s].lo + (sweeps[s].hi - sweeps[s].lo) * (float)i / (float)(n - 1);
    sweeps[s].reference(x, want, n, NULL);
    for (int v = 0; v < (have_avx512() ? 2 : 1); ++v) {
      sweeps[s].variant[v](x, got, n, NULL);
      CU_ASSERT(within_ulps(sweeps[s].name, got, want, n, sweeps[s].max_ulps));
    }
  }
  if (!have_avx512())
    kt_skip("AVX-512 sweeps: no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)");
  free(x);
  free(want);
  free(got);
}

/* ---- softmax ------------------------------------------------------------- */

typedef void (*softmax_fn)(size_t outer, size_t axis, size_t inner, const float* x, float* y);

/* The variants under test: [level][log], level 0 AVX2, 1 AVX-512. */
static const softmax_fn k_softmax_variants[2][2] = {
    {axle_f32_softmax__avx2, axle_f32_logsoftmax__avx2},
    {axle_f32_softmax__avx512, axle_f32_logsoftmax__avx512}};

static void softmax_case(int level, size_t outer, size_t axis, size_t inner, int kind) {
  const size_t n = outer * axis * inner;
  float* x = inputs(n, 8.0f, 0);
  /* kind 1: large logits; kind 2: -inf entries and a constant row. */
  for (size_t i = 0; i < n; ++i) {
    if (kind == 1) x[i] *= 1e4f;
    if (kind == 2 && i % 7 == 3) x[i] = -INFINITY;
  }
  if (kind == 2)
    for (size_t j = 0; j < axis; ++j) x[j * inner] = 2.5f;
  float* want = inputs(n, 0.0f, 0);
  float* got = inputs(n, 0.0f, 0);
  for (int log = 0; log < 2; ++log) {
    char what[96];
    snprintf(what, sizeof what, "%s %s [%zu, %zu, %zu] kind %d", log ? "logsoftmax" : "softmax",
             level ? "avx512" : "avx2", outer, axis, inner, kind);
    (log ? axle_f32_logsoftmax_scalar : axle_f32_softmax_scalar)(outer, axis, inner, x, want);
    k_softmax_variants[level][log](outer, axis, inner, x, got);
    /* Softmax: sums of up to axis terms in another order, each within an
     * ulp or two; log-softmax: x - max exact, log(sum) close. */
    CU_ASSERT(kt_close(what, got, want, n, 2e-6, log ? 2e-6 : 1e-9));
    CU_ASSERT(guards_intact(got, n));
    /* In place. */
    float* y = malloc((n + GUARD) * sizeof(float));
    memcpy(y, x, (n + GUARD) * sizeof(float));
    k_softmax_variants[level][log](outer, axis, inner, y, y);
    CU_ASSERT(same_bits(what, y, got, n));
    free(y);
  }
  free(x);
  free(want);
  free(got);
}

static void test_softmax(void) {
  if (!have_avx2()) return kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
  static const size_t shapes[][3] = {{1, 1, 1},  {3, 10, 1}, {2, 1000, 1}, {5, 7, 1},
                                     {1, 17, 1}, {4, 7, 8},  {2, 5, 13},   {1, 33, 3},
                                     {3, 1, 9},  {2, 6, 24}, {1, 1000, 5}, {7, 3, 1}};
  for (int level = 0; level < (have_avx512() ? 2 : 1); ++level)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
      for (int kind = 0; kind < 3; ++kind)
        softmax_case(level, shapes[s][0], shapes[s][1], shapes[s][2], kind);
  if (!have_avx512())
    kt_skip("AVX-512 softmax: no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)");
}

/* ---- threads ------------------------------------------------------------- */

/* A parallelism description that runs the tasks in turn on the caller and
 * counts regions and tasks, so the split itself can be checked. */
typedef struct counting_t {
  size_t regions, tasks;
} counting_t;

static void counting_run(void* ctx, size_t tasks, axle_task_fn fn, void* arg) {
  counting_t* c = ctx;
  ++c->regions;
  c->tasks += tasks;
  for (size_t t = tasks; t-- > 0;) fn(arg, t, (uint32_t)(t % 2)); /* in reverse: no order assumed */
}

/* A broadcasting plan for out = a (op) b as the CPU plugin builds one. */
static void plan(axle_nd_t* nd, uint32_t rank, const int64_t* out, uint32_t ra, const int64_t* sa,
                 uint32_t rb, const int64_t* sb) {
  memset(nd, 0, sizeof *nd);
  nd->rank = rank;
  nd->ops = 3;
  memcpy(nd->shape, out, rank * sizeof(int64_t));
  axle_nd_contiguous_strides(rank, out, nd->stride[0]);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(rank, out, ra, sa, nd->stride[1]), 0);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(rank, out, rb, sb, nd->stride[2]), 0);
  axle_nd_simplify(nd);
}

static void test_parallel_drivers(void) {
  /* Shapes: rows of 1000 with a row vector and a column (shares end mid
   * row), a full-size pair (one run), a scalar, three floors' worth (tasks
   * a multiple of the threads) and one too small to split. */
  static const struct {
    uint32_t rank, ra, rb;
    int64_t out[3], a[3], b[3];
    int split;
  } cases[] = {
      {3, 3, 2, {3, 37, 1000}, {3, 1, 1000}, {37, 1}, 1},
      {2, 2, 2, {129, 513}, {129, 513}, {129, 513}, 1},
      {2, 2, 1, {64, 1024}, {64, 1024}, {1}, 1},
      {2, 2, 2, {50, 1000}, {50, 1000}, {1, 1000}, 1},
      {2, 2, 2, {31, 1000}, {31, 1000}, {1, 1000}, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    axle_nd_t nd;
    plan(&nd, cases[c].rank, cases[c].out, cases[c].ra, cases[c].a, cases[c].rb, cases[c].b);
    size_t n = 1, na = 1, nb = 1;
    for (uint32_t d = 0; d < cases[c].rank; ++d) n *= (size_t)cases[c].out[d];
    for (uint32_t d = 0; d < cases[c].ra; ++d) na *= (size_t)cases[c].a[d];
    for (uint32_t d = 0; d < cases[c].rb; ++d) nb *= (size_t)cases[c].b[d];
    float* a = inputs(na, 3.0f, 0);
    float* b = inputs(nb, 3.0f, 0);
    float* want = inputs(n, 0.0f, 0);
    float* got = inputs(n, 0.0f, 0);
    const axle_binary_fn fn = axle_binary_kernel_for_isa(axle_f32_sub_scalar);
    axle_nd_binary_scalar(&nd, fn, want, 4, a, 4, b, 4);
    for (uint32_t threads = 2; threads <= 3; ++threads) {
      uint32_t storage;
      axle_parallel_t real;
      memset(got, 0, n * sizeof(float));
      axle_nd_binary_parallel(&nd, fn, got, 4, a, 4, b, 4, kt_parallel(&storage, &real, threads));
      CU_ASSERT(same_bits("binary on threads", got, want, n));
      CU_ASSERT(guards_intact(got, n));
      counting_t count = {0, 0};
      axle_parallel_t par = {counting_run, &count, threads};
      memset(got, 0, n * sizeof(float));
      axle_nd_binary_parallel(&nd, fn, got, 4, a, 4, b, 4, &par);
      CU_ASSERT(same_bits("binary, tasks in reverse", got, want, n));
      CU_ASSERT_EQUAL(count.regions, cases[c].split ? 1u : 0u);
      CU_ASSERT(count.tasks <= 4 * threads);
      if (cases[c].split) CU_ASSERT(count.tasks >= 2);
      CU_ASSERT(count.tasks < threads || count.tasks % threads == 0);
    }
    /* The unary split over the same number of elements. */
    const axle_unary_fn un = axle_unary_kernel_for_isa(axle_f32_tanh_scalar);
    float* uwant = inputs(na, 0.0f, 0);
    float* ugot = inputs(na, 0.0f, 0);
    un(a, uwant, na, NULL);
    for (uint32_t threads = 2; threads <= 3; ++threads) {
      counting_t count = {0, 0};
      axle_parallel_t par = {counting_run, &count, threads};
      axle_unary_parallel(un, a, ugot, na, sizeof(float), NULL, &par);
      CU_ASSERT(same_bits("unary split", ugot, uwant, na));
      CU_ASSERT(guards_intact(ugot, na));
      CU_ASSERT_EQUAL(count.regions, na >= 2 * AXLE_PARALLEL_MIN_ELEMENTS ? 1u : 0u);
    }
    free(uwant);
    free(ugot);
    free(a);
    free(b);
    free(want);
    free(got);
  }
  /* Softmax: whole rows per task, so the same bits as one call. */
  static const size_t shapes[][3] = {{300, 200, 1}, {40, 100, 9}, {2, 20000, 1}, {10, 10, 10}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const size_t n = shapes[s][0] * shapes[s][1] * shapes[s][2];
    float* x = inputs(n, 6.0f, 0);
    float* want = inputs(n, 0.0f, 0);
    float* got = inputs(n, 0.0f, 0);
    for (int log = 0; log < 2; ++log) {
      (log ? axle_f32_logsoftmax : axle_f32_softmax)(shapes[s][0], shapes[s][1], shapes[s][2], x,
                                                     want, NULL);
      counting_t count = {0, 0};
      axle_parallel_t par = {counting_run, &count, 2};
      (log ? axle_f32_logsoftmax : axle_f32_softmax)(shapes[s][0], shapes[s][1], shapes[s][2], x,
                                                     got, &par);
      CU_ASSERT(same_bits("softmax split by rows", got, want, n));
      CU_ASSERT(guards_intact(got, n));
      CU_ASSERT_EQUAL(count.regions,
                      n >= 2 * AXLE_PARALLEL_MIN_ELEMENTS && shapes[s][0] >= 2 ? 1u : 0u);
    }
    free(x);
    free(want);
    free(got);
  }
}

/* ---- dispatch ------------------------------------------------------------ */

static void test_variant_lookup(void) {
  const axle_isa_t best = axle_kernels_isa();
  axle_kernels_set_isa(AXLE_ISA_SCALAR);
  CU_ASSERT(axle_binary_kernel_for_isa(axle_f32_add_scalar) == axle_f32_add_scalar);
  CU_ASSERT(axle_unary_kernel_for_isa(axle_f32_tanh_scalar) == axle_f32_tanh_scalar);
  CU_ASSERT(axle_unary_kernel_for_isa(NULL) == NULL);
  /* The scalar entry point is the reference itself. */
  float x[12], want[12], got[12];
  for (int i = 0; i < 12; ++i) x[i] = kt_rand() * 3.0f;
  axle_f32_softmax_scalar(3, 4, 1, x, want);
  axle_f32_softmax(3, 4, 1, x, got, NULL);
  CU_ASSERT(memcmp(got, want, sizeof want) == 0);
  axle_kernels_set_isa(best);
  if (!have_avx2()) return kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
  for (size_t c = 0; c < sizeof k_binary_cases / sizeof k_binary_cases[0]; ++c)
    CU_ASSERT(axle_binary_kernel_for_isa(k_binary_cases[c].reference) == k_binary_cases[c].variant);
  /* At the AVX2 level the AVX2 variants; above it the AVX-512 ones where
   * they exist. */
  const axle_isa_t top = axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
  for (size_t c = 0; c < sizeof k_unary_cases / sizeof k_unary_cases[0]; ++c)
    CU_ASSERT(axle_unary_kernel_for_isa(k_unary_cases[c].reference) == k_unary_cases[c].variant);
  axle_kernels_set_isa(top);
  if (have_avx512()) {
    for (size_t c = 0; c < sizeof k_unary_avx512_cases / sizeof k_unary_avx512_cases[0]; ++c)
      CU_ASSERT(axle_unary_kernel_for_isa(k_unary_avx512_cases[c].reference) ==
                k_unary_avx512_cases[c].variant);
    CU_ASSERT(axle_unary_kernel_for_isa(axle_f32_relu_scalar) == axle_f32_relu__avx2);
  }
  /* Kernels without a variant come back as they are. */
  CU_ASSERT(axle_binary_kernel_for_isa(axle_f32_pow_scalar) == axle_f32_pow_scalar);
  CU_ASSERT(axle_binary_kernel_for_isa(axle_i32_add_scalar) == axle_i32_add_scalar);
  CU_ASSERT(axle_unary_kernel_for_isa(axle_f32_erf_scalar) == axle_f32_erf_scalar);
  /* The entry point runs the top level's variant. */
  (have_avx512() ? axle_f32_logsoftmax__avx512 : axle_f32_logsoftmax__avx2)(3, 4, 1, x, want);
  axle_f32_logsoftmax(3, 4, 1, x, got, NULL);
  CU_ASSERT(memcmp(got, want, sizeof want) == 0);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  static const kt_entry_t tests[] = {
      {"binary variants give the reference's bits", test_binary_bits},
      {"unary variants: exact ops bit for bit, exp/sigmoid/tanh within 2-4 ulp", test_unary},
      {"exp, sigmoid and tanh over dense sweeps", test_unary_sweeps},
      {"softmax and log-softmax against the references", test_softmax},
      {"reference -> variant lookup at each ISA level", test_variant_lookup},
      {"threaded drivers: equal shares, the serial walk's bits", test_parallel_drivers},
  };
  if (KT_ADD_SUITE("elementwise kernels", tests) != 0) return 1;
  return kt_run_all();
}
