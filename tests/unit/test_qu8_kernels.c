/*
 * Tests of the uint8 QDQ kernels (axle_kernels_qu8.h). The reference
 * convolution is checked against values worked out by hand; every algorithm
 * of the prepared convolution, under every ISA, serially and on two real
 * threads, must give the reference's bits on edge shapes (partial tiles,
 * padding, dilation, groups, channel multipliers, 1-D and 3-D, batches,
 * extreme values and zero points, clamps, exact .5 ties), including a
 * plan whose weights were packed for a higher ISA level than the one it
 * runs at. The AVX2 and AVX-512 VNNI pieces are compared with their scalar
 * twins directly as well, and the addition against an unfused float
 * computation written here.
 */

#include "axle_kernels_qu8.h"

#define KT_SEED 20261122u
#include "kernel_test.h"

/* Uniform in [lo, hi]. */
static int32_t qt_int(int32_t lo, int32_t hi) {
  return lo + (int32_t)(kt_next() % (uint32_t)(hi - lo + 1));
}

/* The best ISA level dispatch may use: the CPU's, under AXLE_KERNELS_ISA. */
static axle_isa_t qt_best_isa(void) {
  const axle_isa_t prev = axle_kernels_set_isa(AXLE_ISA_AVX512);
  const axle_isa_t best = axle_kernels_isa();
  axle_kernels_set_isa(prev);
  return best;
}

static int qt_avx2(void) { return qt_best_isa() >= AXLE_ISA_AVX2_FMA; }
static int qt_avx512(void) { return qt_best_isa() >= AXLE_ISA_AVX512; }

static int qt_same(const char* what, const uint8_t* got, const uint8_t* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "\n%s: element %zu of %zu: got %u want %u\n", what, i, n, got[i], want[i]);
      CU_FAIL(what);
      return 0;
    }
  }
  CU_PASS(what);
  return 1;
}

/* ---- convolution geometry ------------------------------------------------ */

typedef struct qt_conv_case_t {
  const char* name;
  int64_t batch, groups, cin, cout;
  int64_t in[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
} qt_conv_case_t;

static axle_f32_conv_params_t qt_params(const qt_conv_case_t* c) {
  axle_f32_conv_params_t p;
  memset(&p, 0, sizeof p);
  p.batch = c->batch;
  p.groups = c->groups;
  p.in_channels = c->cin;
  p.out_channels = c->cout;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = c->in[d];
    p.kernel[d] = c->kernel[d];
    p.stride[d] = c->stride[d];
    p.dilation[d] = c->dilation[d];
    p.pad[d] = c->pad[d];
    const int64_t span = (c->kernel[d] - 1) * c->dilation[d] + 1;
    p.out[d] = (c->in[d] + c->pad[d] + c->pad_end[d] - span) / c->stride[d] + 1;
  }
  return p;
}

static size_t qt_vol(const int64_t* d) { return (size_t)(d[0] * d[1] * d[2]); }

/* How operands are filled. */
enum { QT_RANDOM = 0, QT_X_MAX_W_MIN, QT_X_MIN_W_MAX, QT_X_MAX_W_MAX, QT_TIES };

typedef struct qt_conv_data_t {
  axle_f32_conv_params_t p;
  int32_t zp;
  uint8_t* x;
  int8_t* w;
  int32_t* bias;
  float* scale;
  axle_qu8_requant_t rq;
  uint8_t* want;
  size_t x_n, w_n, y_n;
} qt_conv_data_t;

static void qt_conv_data(const qt_conv_case_t* c, int32_t zp, int fill, uint8_t lo, uint8_t hi,
                         qt_conv_data_t* d) {
  d->p = qt_params(c);
  d->zp = zp;
  const size_t k = (size_t)(c->cin / c->groups) * qt_vol(c->kernel);
  d->x_n = (size_t)c->batch * (size_t)c->cin * qt_vol(c->in);
  d->w_n = (size_t)c->cout * k;
  d->y_n = (size_t)c->batch * (size_t)c->cout * qt_vol(d->p.out);
  d->x = kt_scratch(d->x_n);
  d->w = kt_scratch(d->w_n);
  d->bias = kt_scratch((size_t)c->cout * sizeof(int32_t));
  d->scale = kt_scratch((size_t)c->cout * sizeof(float));
  d->want = kt_scratch(d->y_n);
  for (size_t i = 0; i < d->x_n; ++i)
    d->x[i] =
        (uint8_t)(fill == QT_RANDOM ? qt_int(0, 255)
                  : fill == QT_TIES ? qt_int(zp - 4 < 0 ? 0 : zp - 4, zp + 4 > 255 ? 255 : zp + 4)
                  : fill == QT_X_MIN_W_MAX ? 0
                                           : 255);
  for (size_t i = 0; i < d->w_n; ++i)
    d->w[i] = (int8_t)(fill == QT_RANDOM        ? qt_int(-128, 127)
                       : fill == QT_TIES        ? qt_int(-4, 4)
                       : fill == QT_X_MAX_W_MIN ? -128
                                                : 127);
  for (int64_t o = 0; o < c->cout; ++o) {
    d->bias[o] = fill == QT_RANDOM ? qt_int(-20000, 20000) : qt_int(-3, 3);
    /* Spread the outputs over the u8 range: a random sum of k products has
     * magnitude about sqrt(k) * 255 * 74. Ties: small operands and scales
     * 1/2 and 1/4, so every odd (or 2 mod 4) sum lands exactly on .5.
     * Extremes: small enough that even k * 255 * 128 stays inside the
     * range and is not merely clamped. */
    const float spread = 60.0f / ((float)sqrt((double)k) * 255.0f * 74.0f);
    d->scale[o] = fill == QT_RANDOM ? spread * (0.5f + (float)qt_int(0, 1000) / 1000.0f)
                  : fill == QT_TIES ? (qt_int(0, 1) ? 0.5f : 0.25f)
                                    : 100.0f / ((float)k * 255.0f * 128.0f);
  }
  axle_qu8_requant_init(&d->rq, d->scale, (size_t)c->cout, fill == QT_RANDOM ? qt_int(0, 255) : 128,
                        lo, hi);
  axle_qu8_conv_direct__scalar(&d->p, d->x, zp, d->w, d->bias, &d->rq, d->want);
}

static void qt_conv_data_free(qt_conv_data_t* d) {
  free(d->x);
  free(d->w);
  free(d->bias);
  free(d->scale);
  free(d->want);
}

/* Runs the prepared convolution with algorithm algo (-1: the planner's)
 * and compares with the reference. The plan and packing use the ISA level
 * set now, the run run_isa. On threads, also with them split by output
 * channels (split_channels). */
static void qt_conv_check(const qt_conv_data_t* d, int algo, uint32_t threads, axle_isa_t run_isa,
                          const char* what) {
  for (int split = 0; split <= (threads > 1); ++split) {
    axle_qu8_conv_plan_t plan;
    axle_qu8_conv_plan(&d->p, d->zp, &plan);
    if (algo >= 0) plan.algo = algo;
    plan.split_channels = split;
    void* packed = kt_scratch(axle_qu8_conv_packed_size(&plan));
    axle_qu8_conv_pack(&plan, d->w, d->bias, packed);
    void* scratch = kt_scratch(axle_qu8_conv_scratch_size(&plan, threads));
    uint8_t* y = kt_scratch(d->y_n);
    uint32_t tstore = threads;
    const axle_parallel_t par = {kt_pool_run, &tstore, threads};
    const axle_isa_t plan_isa = axle_kernels_set_isa(run_isa);
    axle_qu8_conv(&plan, d->x, packed, &d->rq, y, scratch, threads > 1 ? &par : NULL);
    axle_kernels_set_isa(plan_isa);
    char msg[256];
    snprintf(msg, sizeof msg, "%s, algo %d, layout %d, isa %d (planned at %d), %u thread(s)%s",
             what, plan.algo, plan.gemm_layout, (int)run_isa, (int)plan_isa, threads,
             split ? " split by channels" : "");
    qt_same(msg, y, d->want, d->y_n);
    free(packed);
    free(scratch);
    free(y);
  }
}

static int qt_is_pointwise(const axle_f32_conv_params_t* p) {
  for (int d = 0; d < 3; ++d)
    if (p->kernel[d] != 1 || p->stride[d] != 1 || p->pad[d] != 0 || p->in[d] != p->out[d]) return 0;
  return 1;
}

/* Every algorithm that applies, every ISA, 1 and 2 threads; then weights
 * packed at the best ISA level run at each level below it. */
static void qt_conv_all(const qt_conv_case_t* c, int32_t zp, int fill, uint8_t lo, uint8_t hi) {
  qt_conv_data_t d;
  qt_conv_data(c, zp, fill, lo, hi, &d);
  char what[160];
  snprintf(what, sizeof what, "%s (x zero point %d, fill %d, clamp %u..%u)", c->name, zp, fill, lo,
           hi);
  const int depthwise = d.p.in_channels == d.p.groups && d.p.groups > 1;
  const axle_isa_t best = qt_best_isa();
  const axle_isa_t prev = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  for (int isa = 0; isa <= (int)best; ++isa) {
    axle_kernels_set_isa((axle_isa_t)isa);
    for (uint32_t threads = 1; threads <= 2; ++threads) {
      qt_conv_check(&d, -1, threads, (axle_isa_t)isa, what);
      if (!depthwise) qt_conv_check(&d, AXLE_QU8_CONV_IM2COL, threads, (axle_isa_t)isa, what);
      if (qt_is_pointwise(&d.p))
        qt_conv_check(&d, AXLE_QU8_CONV_GEMM, threads, (axle_isa_t)isa, what);
    }
  }
  axle_kernels_set_isa(best);
  for (int isa = 0; isa < (int)best; ++isa) {
    qt_conv_check(&d, -1, 1, (axle_isa_t)isa, what);
    if (!depthwise) qt_conv_check(&d, AXLE_QU8_CONV_IM2COL, 1, (axle_isa_t)isa, what);
  }
  axle_kernels_set_isa(prev);
  qt_conv_data_free(&d);
}

#define QT_1 \
  { 1, 1, 1 }
#define QT_0 \
  { 0, 0, 0 }

static const qt_conv_case_t qt_cases[] = {
    /* name, batch, groups, cin, cout, in, kernel, stride, dilation, pad, pad_end */
    {"1x1 1->1 1 pixel", 1, 1, 1, 1, QT_1, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 3->5 17x3", 1, 1, 3, 5, {1, 17, 3}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 17->33 5x7", 1, 1, 17, 33, {1, 5, 7}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 33->7 4x4 (full strips)", 1, 1, 33, 7, {1, 4, 4}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 96->24 7x7", 1, 1, 96, 24, {1, 7, 7}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 67->37 9x5 (K, M, N tails)", 1, 1, 67, 37, {1, 9, 5}, QT_1, QT_1, QT_1, QT_0, QT_0},
    /* Narrow last strips (4 and 1 columns) that join the one before on
     * AVX-512, the second after 2 and 3 threads' pixel chunks. */
    {"1x1 40->27 6x6 (4-column last strip)", 1, 1, 40, 27, {1, 6, 6}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 9->14 33x33 (1-column last strip)",
     1,
     1,
     9,
     14,
     {1, 33, 33},
     QT_1,
     QT_1,
     QT_1,
     QT_0,
     QT_0},
    {"3x3 pad 1 14->26 6x11",
     1,
     1,
     14,
     26,
     {1, 6, 11},
     {1, 3, 3},
     QT_1,
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"1x1 5->13 batch 2", 2, 1, 5, 13, {1, 6, 9}, QT_1, QT_1, QT_1, QT_0, QT_0},
    /* One pixel per image (a fully connected layer): the one-column tiles,
     * K and M tails past their 4-step and panel blocks. */
    {"fully connected 301->37", 1, 1, 301, 37, QT_1, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"fully connected 64->13 batch 3", 3, 1, 64, 13, QT_1, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1x1 stride 2", 1, 1, 6, 7, {1, 9, 9}, QT_1, {1, 2, 2}, QT_1, QT_0, QT_0},
    {"3x3 s1 pad 1 3->5", 1, 1, 3, 5, {1, 9, 11}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}},
    {"3x3 s2 pad 1 3->17",
     1,
     1,
     3,
     17,
     {1, 13, 12},
     {1, 3, 3},
     {1, 2, 2},
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"5x5 pad 2 4->6", 1, 1, 4, 6, {1, 8, 7}, {1, 5, 5}, QT_1, QT_1, {0, 2, 2}, {0, 2, 2}},
    /* 103 strips of 16 pixels, K = 72: im2col in several 64 KB blocks, the
     * last one partial, cut at the threads' chunk bounds too. */
    {"3x3 pad 1 8->5 40x41 (im2col blocks)",
     1,
     1,
     8,
     5,
     {1, 40, 41},
     {1, 3, 3},
     QT_1,
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    /* Maps wide enough that 2 threads' pixel chunks (8 of them, 288 and
     * 272 pixels) write through their private rows, batch 2 so a thread
     * reuses them: pointwise, and im2col with a ragged last strip. */
    {"1x1 8->20 48x48 batch 2 (private rows)",
     2,
     1,
     8,
     20,
     {1, 48, 48},
     QT_1,
     QT_1,
     QT_1,
     QT_0,
     QT_0},
    {"3x3 s2 3->7 95x101 (private rows)",
     1,
     1,
     3,
     7,
     {1, 95, 101},
     {1, 3, 3},
     {1, 2, 2},
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"3x3 dilation 2", 1, 1, 5, 3, {1, 10, 9}, {1, 3, 3}, QT_1, {1, 2, 2}, {0, 2, 2}, {0, 1, 2}},
    {"groups 3, 6->9", 1, 3, 6, 9, {1, 7, 6}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}},
    {"groups 2 pointwise 8->6", 2, 2, 8, 6, {1, 5, 5}, QT_1, QT_1, QT_1, QT_0, QT_0},
    {"1-D k5 s2", 2, 1, 3, 5, {1, 1, 33}, {1, 1, 5}, {1, 1, 2}, QT_1, {0, 0, 2}, {0, 0, 1}},
    {"3-D 3x3x3", 1, 1, 2, 3, {4, 5, 6}, {3, 3, 3}, QT_1, QT_1, {1, 1, 1}, {1, 1, 1}},
    {"depthwise 3x3 s1 5 ch 17x19",
     1,
     5,
     5,
     5,
     {1, 17, 19},
     {1, 3, 3},
     QT_1,
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"depthwise 3x3 s2 3 ch 15x33",
     2,
     3,
     3,
     3,
     {1, 15, 33},
     {1, 3, 3},
     {1, 2, 2},
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"depthwise 3x3 s2 even 16x16",
     1,
     4,
     4,
     4,
     {1, 16, 16},
     {1, 3, 3},
     {1, 2, 2},
     QT_1,
     {0, 0, 0},
     {0, 1, 1}},
    {"depthwise 3x3 no pad 1x3 out", 1, 2, 2, 2, {1, 3, 5}, {1, 3, 3}, QT_1, QT_1, QT_0, QT_0},
    {"depthwise 3x3 pad 2 (wider)",
     1,
     2,
     2,
     2,
     {1, 4, 6},
     {1, 3, 3},
     QT_1,
     QT_1,
     {0, 2, 2},
     {0, 2, 2}},
    /* 16 channels a call at the AVX2 level: a partial last group, groups
     * that stop at an image's end (batch 2), stride 2 onto 7x7. */
    {"depthwise 3x3 s1 21 ch 9x11",
     2,
     21,
     21,
     21,
     {1, 9, 11},
     {1, 3, 3},
     QT_1,
     QT_1,
     {0, 1, 1},
     {0, 1, 1}},
    {"depthwise 3x3 s2 35 ch 14x14",
     1,
     35,
     35,
     35,
     {1, 14, 14},
     {1, 3, 3},
     {1, 2, 2},
     QT_1,
     {0, 0, 0},
     {0, 1, 1}},
    {"depthwise multiplier 2", 1, 3, 3, 6, {1, 9, 10}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}},
    {"depthwise 5x5 s2", 1, 4, 4, 4, {1, 11, 12}, {1, 5, 5}, {1, 2, 2}, QT_1, {0, 2, 2}, {0, 2, 2}},
    {"depthwise 3x3 dilation 2",
     1,
     2,
     2,
     2,
     {1, 9, 9},
     {1, 3, 3},
     QT_1,
     {1, 2, 2},
     {0, 2, 2},
     {0, 2, 2}},
};

static void test_direct_by_hand(void) {
  /* 1-D: x = [10, 20, 30], x zero point 10, w = [2, -1], pad 1 both ends,
   * bias 5: accumulators 5, 5 - 10 = -5, 5 + 20 - 20 = 5, 5 + 40 = 45;
   * times 0.5 gives 2.5, -2.5, 2.5, 22.5, which round half to even to 2,
   * -2, 2, 22; plus 100. */
  const qt_conv_case_t c = {"hand",    1,    1,    1,         1,        {1, 1, 3},
                            {1, 1, 2}, QT_1, QT_1, {0, 0, 1}, {0, 0, 1}};
  const axle_f32_conv_params_t p = qt_params(&c);
  CU_ASSERT_EQUAL(p.out[2], 4);
  const uint8_t x[3] = {10, 20, 30};
  const int8_t w[2] = {2, -1};
  const int32_t bias[1] = {5};
  const float scale[1] = {0.5f};
  axle_qu8_requant_t rq;
  axle_qu8_requant_init(&rq, scale, 1, 100, 0, 255);
  uint8_t y[4];
  axle_qu8_conv_direct__scalar(&p, x, 10, w, bias, &rq, y);
  const uint8_t want[4] = {102, 98, 102, 122};
  qt_same("hand-computed 1-D convolution", y, want, 4);
  /* The clamp: [99, 110]. */
  rq.min = 99;
  rq.max = 110;
  axle_qu8_conv_direct__scalar(&p, x, 10, w, bias, &rq, y);
  const uint8_t clamped[4] = {102, 99, 102, 110};
  qt_same("hand-computed 1-D convolution, clamped", y, clamped, 4);
}

/* Empty runs (batch 0) size their scratch and return on any thread
 * count: the split they would have used divides by the image count. */
static void test_conv_empty(void) {
  const qt_conv_case_t c = {"empty", 0, 1, 8, 20, {1, 48, 48}, QT_1, QT_1, QT_1, QT_0, QT_0};
  const axle_f32_conv_params_t p = qt_params(&c);
  axle_qu8_conv_plan_t plan;
  axle_qu8_conv_plan(&p, 3, &plan);
  for (uint32_t threads = 1; threads <= 3; ++threads) {
    void* packed = kt_scratch(axle_qu8_conv_packed_size(&plan) + 64);
    void* scratch = kt_scratch(axle_qu8_conv_scratch_size(&plan, threads) + 64);
    uint32_t tstore = threads;
    const axle_parallel_t par = {kt_pool_run, &tstore, threads};
    const float scale[20] = {0.5f};
    axle_qu8_requant_t rq;
    axle_qu8_requant_init(&rq, scale, 20, 0, 0, 255);
    uint8_t y[1] = {7};
    axle_qu8_conv(&plan, y, packed, &rq, y, scratch, threads > 1 ? &par : NULL);
    CU_ASSERT_EQUAL(y[0], 7);
    free(packed);
    free(scratch);
  }
}

static void test_conv_random(void) {
  for (size_t i = 0; i < sizeof qt_cases / sizeof qt_cases[0]; ++i)
    qt_conv_all(&qt_cases[i], qt_int(0, 255), QT_RANDOM, 0, 255);
}

static void test_conv_zero_points(void) {
  static const int32_t zps[] = {0, 128, 255};
  for (size_t i = 0; i < sizeof qt_cases / sizeof qt_cases[0]; ++i)
    for (size_t z = 0; z < 3; ++z) qt_conv_all(&qt_cases[i], zps[z], QT_RANDOM, 0, 255);
}

static void test_conv_extremes(void) {
  /* All-255 or all-0 inputs against all -128 or all 127 weights: the
   * largest sums there are, with scales that keep them off the clamp. */
  for (size_t i = 0; i < sizeof qt_cases / sizeof qt_cases[0]; ++i) {
    qt_conv_all(&qt_cases[i], 0, QT_X_MAX_W_MIN, 0, 255);
    qt_conv_all(&qt_cases[i], 0, QT_X_MAX_W_MAX, 0, 255);
    qt_conv_all(&qt_cases[i], 255, QT_X_MIN_W_MAX, 0, 255);
    qt_conv_all(&qt_cases[i], 255, QT_X_MAX_W_MIN, 0, 255);
  }
}

static void test_conv_ties_and_clamps(void) {
  for (size_t i = 0; i < sizeof qt_cases / sizeof qt_cases[0]; ++i) {
    qt_conv_all(&qt_cases[i], 128, QT_TIES, 0, 255);
    qt_conv_all(&qt_cases[i], qt_int(0, 255), QT_RANDOM, 40, 200);
    qt_conv_all(&qt_cases[i], qt_int(0, 255), QT_RANDOM, 128, 128);
  }
}

static void test_conv_ties_are_exercised(void) {
  /* The ties fill must really produce .5 cases, or the test above could
   * not tell round-half-even from round-half-away. */
  qt_conv_data_t d;
  qt_conv_data(&qt_cases[2], 128, QT_TIES, 0, 255, &d);
  const int64_t k = 17;
  size_t ties = 0;
  for (int64_t o = 0; o < d.p.out_channels; ++o)
    for (size_t px = 0; px < qt_vol(d.p.out); ++px) {
      int64_t acc = d.bias[o];
      for (int64_t c = 0; c < k; ++c)
        acc += (int64_t)(d.x[(size_t)c * qt_vol(d.p.out) + px] - 128) * d.w[o * k + c];
      const double v = (double)acc * d.scale[o];
      if (v - floor(v) == 0.5) ++ties;
    }
  CU_ASSERT(ties > 20);
  qt_conv_data_free(&d);
}

/* ---- micro-kernels ------------------------------------------------------- */

static void test_pack_b_variants(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: the AVX2 packer cannot run");
    return;
  }
  for (size_t kc = 0; kc <= 9; ++kc) {
    for (size_t cols = 1; cols <= AXLE_QU8_GEMM_NR; cols += 5) {
      const size_t rs = 19;
      uint8_t* x = kt_scratch(kc * rs + AXLE_QU8_GEMM_NR);
      for (size_t i = 0; i < kc * rs + AXLE_QU8_GEMM_NR; ++i) x[i] = (uint8_t)qt_int(0, 255);
      const size_t bytes = (kc + 1) / 2 * AXLE_QU8_GEMM_NR * 2 * sizeof(int16_t);
      int16_t* a = kt_scratch(bytes);
      int16_t* b = kt_scratch(bytes);
      axle_qu8_gemm_pack_b_16__scalar(kc, cols, x, rs, a);
      axle_qu8_gemm_pack_b_16__avx2(kc, cols, x, rs, b);
      CU_ASSERT(memcmp(a, b, bytes) == 0);
      /* Independent check of the layout. */
      for (size_t k = 0; k < kc; ++k)
        for (size_t j = 0; j < cols; ++j)
          CU_ASSERT_EQUAL(a[(k / 2 * AXLE_QU8_GEMM_NR + j) * 2 + k % 2], x[k * rs + j]);
      /* The quad layout, zero past kc and cols. */
      const size_t bytes4 = (kc + 3) / 4 * AXLE_QU8_GEMM_NR * 4;
      uint8_t* a4 = kt_scratch(bytes4);
      uint8_t* b4 = kt_scratch(bytes4);
      axle_qu8_gemm_pack_b_16c4__scalar(kc, cols, x, rs, a4);
      axle_qu8_gemm_pack_b_16c4__avx2(kc, cols, x, rs, b4);
      CU_ASSERT(memcmp(a4, b4, bytes4) == 0);
      for (size_t k = 0; k < (kc + 3) / 4 * 4; ++k)
        for (size_t j = 0; j < AXLE_QU8_GEMM_NR; ++j)
          CU_ASSERT_EQUAL(a4[(k / 4 * AXLE_QU8_GEMM_NR + j) * 4 + k % 4],
                          k < kc && j < cols ? x[k * rs + j] : 0);
      /* The dense column of the one-column tiles: column 0 of the NR-wide
       * strips, padded to whole pairs and quads with 0. */
      int16_t d[10];
      uint8_t d4[12];
      memset(d, 0x5A, sizeof d);
      memset(d4, 0x5A, sizeof d4);
      axle_qu8_gemm_pack_b_1__scalar(kc, x, rs, d);
      axle_qu8_gemm_pack_b_1c4__scalar(kc, x, rs, d4);
      for (size_t k = 0; k < (kc + 1) / 2 * 2; ++k)
        CU_ASSERT_EQUAL(d[k], a[k / 2 * AXLE_QU8_GEMM_NR * 2 + k % 2]);
      for (size_t k = 0; k < (kc + 3) / 4 * 4; ++k)
        CU_ASSERT_EQUAL(d4[k], a4[k / 4 * AXLE_QU8_GEMM_NR * 4 + k % 4]);
      free(x);
      free(a);
      free(b);
      free(a4);
      free(b4);
    }
  }
}

/* The output stages a variant test runs against the scalar kernels:
 * stage % 4 picks the zero point and clamp (the test's own; zero point 0
 * and clamp [0, 255], whose steps the vector epilogues may skip; one of
 * the two), and stage / 4 picks skip as axle_qu8_requant_init sets it or
 * 0 (every step taken, which most tests' scales below 1 would skip). */
enum { QT_STAGE_AS_GIVEN = 0, QT_STAGE_FULL = 4, QT_STAGES = 8 };
static axle_qu8_requant_t qt_requant(int stage, const float* scale, size_t channels,
                                     int32_t zero_point, uint8_t lo, uint8_t hi) {
  if (stage % 4 == 1 || stage % 4 == 3) zero_point = 0;
  if (stage % 4 == 1 || stage % 4 == 2) {
    lo = 0;
    hi = 255;
  }
  axle_qu8_requant_t rq;
  axle_qu8_requant_init(&rq, scale, channels, zero_point, lo, hi);
  if (stage >= QT_STAGE_FULL) rq.skip = 0;
  return rq;
}

/* Scales for the extremes of the conversion to int32: random small ones,
 * the largest below 1 (whose products with sums near +-2^31 come within
 * 128 of the int32 bounds, uncapped), and 1.5 (which the cap must catch). */
enum { QT_SCALE_SMALL = 0, QT_SCALE_BELOW_ONE, QT_SCALE_ABOVE_ONE, QT_SCALE_KINDS };
static float qt_scale(int kind) {
  return kind == QT_SCALE_SMALL       ? 1.0f / (float)qt_int(100, 3000)
         : kind == QT_SCALE_BELOW_ONE ? nextafterf(1.0f, 0.0f)
                                      : 1.5f;
}
/* A term for those scales: random, or within the weights' reach of
 * INT32_MAX or INT32_MIN (the sums wrap there as the contract says). */
static int32_t qt_term(int kind) {
  if (kind == QT_SCALE_SMALL) return qt_int(-100000, 100000);
  return qt_int(0, 1) ? INT32_MAX - qt_int(0, 400000) : INT32_MIN + qt_int(0, 400000);
}

static void test_requant_init(void) {
  const float below[3] = {0.5f, 1e-9f, nextafterf(1.0f, 0.0f)};
  const float one[2] = {0.5f, 1.0f};
  const float nan[2] = {0.25f, NAN};
  const float inf[1] = {INFINITY};
  axle_qu8_requant_t rq;
  axle_qu8_requant_init(&rq, below, 3, 7, 1, 254);
  CU_ASSERT_PTR_EQUAL(rq.scale, below);
  CU_ASSERT_EQUAL(rq.zero_point, 7);
  CU_ASSERT_EQUAL(rq.min, 1);
  CU_ASSERT_EQUAL(rq.max, 254);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_CAP);
  axle_qu8_requant_init(&rq, one, 2, 0, 0, 255);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_ZERO_POINT | AXLE_QU8_SKIP_CLAMP);
  axle_qu8_requant_init(&rq, nan, 2, 1, 0, 255);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_CLAMP);
  axle_qu8_requant_init(&rq, inf, 1, 0, 0, 254);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_ZERO_POINT);
  axle_qu8_requant_init(&rq, below, 3, 0, 0, 255);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_ALL);
  axle_qu8_requant_init(&rq, below, 3, 0, 1, 255);
  CU_ASSERT_EQUAL(rq.skip, AXLE_QU8_SKIP_CAP | AXLE_QU8_SKIP_ZERO_POINT);
}

static void test_ukernel_variants(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: the AVX2 micro-kernel cannot run");
    return;
  }
  enum { MR = AXLE_QU8_GEMM_MR, NR = AXLE_QU8_GEMM_NR, PANELS = 3, STRIPS = 3 };
  enum { M = PANELS * MR, N = STRIPS * NR, LDY = N + 4 };
  /* Blocks: every tile shape alone, then several panels and strips with
   * full and partial tiles mixed. */
  static const size_t kps[] = {0, 1, 2, 7, 40};
  static const size_t ms[] = {7, 12, 13, 18}, ns[] = {17, 32, 33, 47, 48};
  for (size_t ki = 0; ki < 5 * QT_SCALE_KINDS * QT_STAGES; ++ki) {
    const size_t kp = kps[ki % 5];
    const int kind = (int)(ki / 5 % QT_SCALE_KINDS), stage = (int)(ki / 5 / QT_SCALE_KINDS);
    int16_t* a = kt_scratch((kp + 1) * M * 2 * sizeof(int16_t));
    int16_t* b = kt_scratch((kp + 1) * N * 2 * sizeof(int16_t));
    for (size_t i = 0; i < kp * M * 2; ++i) a[i] = (int16_t)qt_int(-128, 127);
    for (size_t i = 0; i < kp * N * 2; ++i) b[i] = (int16_t)qt_int(0, 255);
    int32_t terms[M];
    float scale[M];
    for (int i = 0; i < M; ++i) {
      terms[i] = qt_term(kind);
      scale[i] = qt_scale(kind);
    }
    const axle_qu8_requant_t rq = qt_requant(stage, scale, M, qt_int(0, 255), 3, 250);
    for (size_t shape = 0; shape < MR * NR + 4 * 5; ++shape) {
      const size_t m = shape < MR * NR ? shape / NR + 1 : ms[(shape - MR * NR) / 5];
      const size_t n = shape < MR * NR ? shape % NR + 1 : ns[(shape - MR * NR) % 5];
      uint8_t want[M * LDY], got[M * LDY], tiles[M * LDY];
      memset(want, 7, sizeof want);
      memset(got, 7, sizeof got);
      memset(tiles, 7, sizeof tiles);
      axle_qu8_gemm_6x16__scalar(m, n, kp, a, b, terms, scale, &rq, want, LDY);
      axle_qu8_gemm_6x16__avx2(m, n, kp, a, b, terms, scale, &rq, got, LDY);
      /* The block is its tiles: each (panel, strip) alone. */
      for (size_t i0 = 0; i0 < m; i0 += MR)
        for (size_t j0 = 0; j0 < n; j0 += NR)
          axle_qu8_gemm_6x16__scalar(m - i0 < MR ? m - i0 : MR, n - j0 < NR ? n - j0 : NR, kp,
                                     a + i0 * kp * 2, b + j0 * kp * 2, terms + i0, scale + i0, &rq,
                                     tiles + i0 * LDY + j0, LDY);
      char what[96];
      snprintf(what, sizeof what, "6x16 avx2, kp %zu scales %d stage %d m %zu n %zu", kp, kind,
               stage, m, n);
      qt_same(what, got, want, sizeof want);
      snprintf(what, sizeof what, "6x16 scalar block = tiles, kp %zu m %zu n %zu", kp, m, n);
      qt_same(what, want, tiles, sizeof want);
    }
    free(a);
    free(b);
  }
  CU_PASS("6x16 avx2 = scalar");
}

/* Operands of the VNNI micro-kernel test. */
enum { QT_C4_RANDOM = 0, QT_C4_MAX_MIN, QT_C4_MAX_MAX, QT_C4_CORNERS, QT_C4_FILLS };

/* Operands for a fill: n weights and n_b inputs, and MR terms and scales
 * for K groups of up to 4 products (the scales keep even the largest sums,
 * 4 groups x 255 x 128, off the clamp). */
static void qt_fill_weights(int fill, int8_t* a, size_t n) {
  for (size_t i = 0; i < n; ++i)
    a[i] = (int8_t)(fill == QT_C4_RANDOM    ? qt_int(-128, 127)
                    : fill == QT_C4_MAX_MIN ? -128
                    : fill == QT_C4_MAX_MAX ? 127
                                            : (qt_int(0, 1) ? 127 : -128));
}

static void qt_fill_inputs(int fill, uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    b[i] = (uint8_t)(fill == QT_C4_RANDOM    ? qt_int(0, 255)
                     : fill == QT_C4_CORNERS ? (qt_int(0, 1) ? 255 : 0)
                                             : 255);
}

static void qt_fill_terms(int fill, size_t k_groups, size_t rows, int32_t* terms, float* scale) {
  const float extreme = 100.0f / ((float)(k_groups + 1) * 4.0f * 255.0f * 128.0f);
  for (size_t i = 0; i < rows; ++i) {
    /* All-positive products on a term near INT32_MAX wrap around, as a
     * wrapped packed term's sum must (a saturating vpdpbusds would stick
     * at INT32_MAX). */
    terms[i] = fill == QT_C4_MAX_MAX ? INT32_MAX - qt_int(0, 1000) : qt_int(-100000, 100000);
    scale[i] = fill == QT_C4_RANDOM ? 1.0f / (float)qt_int(100, 3000) : extreme;
  }
}

/* The VNNI tiles' operands for kq K quads on a fill: a panel of weights,
 * a strip (and a second one where b2 is not NULL; all freed by the
 * caller), the panel's terms and scales. */
static void qt_c4_operands(int fill, size_t kq, int8_t** a, uint8_t** b, uint8_t** b2,
                           int32_t* terms, float* scale) {
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR };
  *a = kt_scratch((kq + 1) * MR * 4);
  qt_fill_weights(fill, *a, kq * MR * 4);
  *b = kt_scratch((kq + 1) * NR * 4);
  qt_fill_inputs(fill, *b, kq * NR * 4);
  if (b2) {
    *b2 = kt_scratch((kq + 1) * NR * 4);
    qt_fill_inputs(fill, *b2, kq * NR * 4);
  }
  qt_fill_terms(fill, kq, MR, terms, scale);
}

/* Whether dispatch can run at exactly this level here (a CPU at
 * AXLE_ISA_AVX512 may lack AVX-VNNI, so levels are not all nested). */
static int qt_has_level(axle_isa_t level) {
  const axle_isa_t prev = axle_kernels_set_isa(level);
  const int has = axle_kernels_isa() == level;
  axle_kernels_set_isa(prev);
  return has;
}

/* The VNNI blocks and the level each needs. */
static const struct {
  const char* name;
  axle_isa_t level;
  axle_qu8_gemm_c4_block_fn fn;
} qt_c4_variants[] = {
    {"12x16c4 avx512 = scalar", AXLE_ISA_AVX512, axle_qu8_gemm_12x16c4__avx512},
    {"12x16c4 avxvnni = scalar", AXLE_ISA_AVX2_VNNI, axle_qu8_gemm_12x16c4__avxvnni}};
enum { QT_C4_VARIANTS = sizeof qt_c4_variants / sizeof qt_c4_variants[0] };

/* The VNNI tiles (AVX-512 and AVX-VNNI) against the scalar one, bit for
 * bit, on every row and column count and on the fills' extreme operands. */
static void test_ukernel_c4_variants(void) {
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR, LDY = 21 };
  static const size_t kqs[] = {0, 1, 2, 3, 7, 40, 129};
  for (size_t v = 0; v < QT_C4_VARIANTS; ++v) {
    if (!qt_has_level(qt_c4_variants[v].level)) {
      printf("\n  skipped %s: this CPU lacks its VNNI (or AXLE_KERNELS_ISA caps it)\n",
             qt_c4_variants[v].name);
      continue;
    }
    for (size_t ki = 0; ki < sizeof kqs / sizeof kqs[0]; ++ki) {
      for (int fill = 0; fill < QT_C4_FILLS * QT_SCALE_KINDS * QT_STAGES; ++fill) {
        const size_t kq = kqs[ki];
        const int kind = fill / QT_C4_FILLS % QT_SCALE_KINDS;
        const int stage = fill / QT_C4_FILLS / QT_SCALE_KINDS;
        int8_t* a;
        uint8_t* b;
        int32_t terms[MR];
        float scale[MR];
        qt_c4_operands(fill % QT_C4_FILLS, kq, &a, &b, NULL, terms, scale);
        for (size_t i = 0; kind != QT_SCALE_SMALL && i < MR; ++i) {
          terms[i] = qt_term(kind);
          scale[i] = qt_scale(kind);
        }
        const axle_qu8_requant_t rq = qt_requant(stage, scale, MR, qt_int(0, 255), 3, 250);
        for (size_t mr = 1; mr <= MR; ++mr) {
          for (size_t nr = 1; nr <= NR; ++nr) {
            uint8_t want[MR * LDY], got[MR * LDY];
            memset(want, 7, sizeof want);
            memset(got, 7, sizeof got);
            axle_qu8_gemm_12x16c4__scalar(mr, nr, kq, a, b, terms, scale, &rq, want, LDY);
            qt_c4_variants[v].fn(mr, nr, kq, a, b, terms, scale, &rq, got, LDY);
            char what[96];
            snprintf(what, sizeof what, "%s, kq %zu fill %d mr %zu nr %zu", qt_c4_variants[v].name,
                     kq, fill, mr, nr);
            qt_same(what, got, want, sizeof want);
          }
        }
        free(a);
        free(b);
      }
    }
    CU_PASS(qt_c4_variants[v].name);
  }
}

/* The VNNI blocks (several panels and strips a call, full and partial
 * tiles mixed) against the scalar block, and the scalar block against its
 * tiles run one by one. */
static void test_ukernel_c4_blocks(void) {
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR, M = 3 * MR, N = 3 * NR, LDY = N + 3 };
  static const size_t kqs[] = {0, 1, 5, 40};
  static const size_t ms[] = {1, 5, 12, 13, 20, 24, 30, 36}, ns[] = {1, 9, 16, 17, 33, 48};
  for (size_t ki = 0; ki < sizeof kqs / sizeof kqs[0]; ++ki) {
    for (int stage = 0; stage < QT_STAGES; ++stage) {
      const size_t kq = kqs[ki];
      int8_t* a = kt_scratch((kq + 1) * M * 4);
      uint8_t* b = kt_scratch((kq + 1) * N * 4);
      for (size_t i = 0; i < kq * M * 4; ++i) a[i] = (int8_t)qt_int(-128, 127);
      for (size_t i = 0; i < kq * N * 4; ++i) b[i] = (uint8_t)qt_int(0, 255);
      int32_t terms[M];
      float scale[M];
      /* Sums of 4 kq random products reach ~1e4 sqrt(kq): scaled to ~100. */
      for (int i = 0; i < M; ++i) {
        terms[i] = qt_int(-20000, 20000);
        scale[i] = 0.01f / sqrtf((float)kq + 1.0f) * (float)(1 + i % 3);
      }
      const axle_qu8_requant_t rq = qt_requant(stage, scale, M, qt_int(0, 255), 3, 250);
      for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; ++mi) {
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ++ni) {
          const size_t m = ms[mi], n = ns[ni];
          uint8_t want[M * LDY], tiles[M * LDY], got[M * LDY];
          memset(want, 7, sizeof want);
          memset(tiles, 7, sizeof tiles);
          axle_qu8_gemm_12x16c4__scalar(m, n, kq, a, b, terms, scale, &rq, want, LDY);
          for (size_t i0 = 0; i0 < m; i0 += MR)
            for (size_t j0 = 0; j0 < n; j0 += NR)
              axle_qu8_gemm_12x16c4__scalar(m - i0 < MR ? m - i0 : MR, n - j0 < NR ? n - j0 : NR,
                                            kq, a + i0 * kq * 4, b + j0 * kq * 4, terms + i0,
                                            scale + i0, &rq, tiles + i0 * LDY + j0, LDY);
          char what[96];
          snprintf(what, sizeof what, "12x16c4 scalar block = tiles, kq %zu m %zu n %zu", kq, m, n);
          qt_same(what, want, tiles, sizeof want);
          for (size_t v = 0; v < QT_C4_VARIANTS; ++v) {
            if (!qt_has_level(qt_c4_variants[v].level)) continue;
            memset(got, 7, sizeof got);
            qt_c4_variants[v].fn(m, n, kq, a, b, terms, scale, &rq, got, LDY);
            snprintf(what, sizeof what, "%s, block, kq %zu stage %d m %zu n %zu",
                     qt_c4_variants[v].name, kq, stage, m, n);
            qt_same(what, got, want, sizeof want);
          }
        }
      }
      free(a);
      free(b);
    }
  }
  CU_PASS("12x16c4 blocks = scalar = its tiles");
}

/* The AVX-512 tile with a narrow second strip against the scalar tile run
 * on each strip, every row count and 1..4 extra columns, on the VNNI
 * test's fills. */
static void test_ukernel_c4_extra(void) {
  if (!qt_has_level(AXLE_ISA_AVX512)) {
    CU_PASS("no AVX-512 VNNI here: the tile with extra columns cannot run");
    return;
  }
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR, LDY = 21 };
  static const size_t kqs[] = {0, 1, 2, 7, 40};
  for (size_t ki = 0; ki < sizeof kqs / sizeof kqs[0]; ++ki) {
    for (int fill = 0; fill < QT_C4_FILLS * QT_STAGES; ++fill) {
      const size_t kq = kqs[ki];
      const int stage = fill / QT_C4_FILLS;
      int8_t* a;
      uint8_t *b, *b2;
      int32_t terms[MR];
      float scale[MR];
      qt_c4_operands(fill % QT_C4_FILLS, kq, &a, &b, &b2, terms, scale);
      const axle_qu8_requant_t rq = qt_requant(stage, scale, MR, qt_int(0, 255), 3, 250);
      for (size_t mr = 1; mr <= MR; ++mr) {
        for (size_t e = 1; e <= AXLE_QU8_GEMM_EXTRA_MAX; ++e) {
          uint8_t want[MR * LDY], got[MR * LDY];
          memset(want, 7, sizeof want);
          memset(got, 7, sizeof got);
          axle_qu8_gemm_12x16c4__scalar(mr, NR, kq, a, b, terms, scale, &rq, want, LDY);
          axle_qu8_gemm_12x16c4__scalar(mr, e, kq, a, b2, terms, scale, &rq, want + NR, LDY);
          axle_qu8_gemm_12x16e4c4__avx512(mr, e, kq, a, b, b2, terms, scale, &rq, got, LDY);
          char what[96];
          snprintf(what, sizeof what, "12x16e4c4 avx512 = scalar, kq %zu fill %d mr %zu e %zu", kq,
                   fill, mr, e);
          qt_same(what, got, want, sizeof want);
        }
      }
      free(a);
      free(b);
      free(b2);
    }
  }
  CU_PASS("12x16e4c4 avx512 = scalar on both strips");
}

/* The one-column tiles against their layout's scalar tile at nr = 1, on
 * the fills of the VNNI test (random, extreme products, terms about to
 * wrap). Pairs: K pair counts around the 4-pair step; quads likewise. */
typedef void (*qt_c4_fn)(size_t, size_t, size_t, const int8_t*, const uint8_t*, const int32_t*,
                         const float*, const axle_qu8_requant_t*, uint8_t*, size_t);

static void qt_column_case(size_t k_groups, int fill, int quads, qt_c4_fn c4,
                           const char* what) {
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR, LDY = 3 };
  const size_t rows = quads ? MR : AXLE_QU8_GEMM_MR, per = quads ? 4 : 2;
  const size_t a_n = (k_groups + 1) * rows * per, b_n = (k_groups + 1) * NR * per;
  int8_t* a8 = kt_scratch(a_n);
  uint8_t* b8 = kt_scratch(b_n);
  int16_t* a16 = kt_scratch(a_n * sizeof(int16_t));
  int16_t* b16 = kt_scratch(b_n * sizeof(int16_t));
  qt_fill_weights(fill, a8, a_n);
  qt_fill_inputs(fill, b8, b_n);
  for (size_t i = 0; i < a_n; ++i) a16[i] = a8[i];
  for (size_t i = 0; i < b_n; ++i) b16[i] = b8[i];
  /* The column the one-column tiles read: column 0 of the strip, dense. */
  const size_t dense_n = (k_groups + 1) * per;
  uint8_t* col8 = kt_scratch(dense_n);
  int16_t* col16 = kt_scratch(dense_n * sizeof(int16_t));
  for (size_t i = 0; i < dense_n; ++i) {
    col8[i] = b8[i / per * NR * per + i % per];
    col16[i] = b16[i / per * NR * per + i % per];
  }
  int32_t terms[MR];
  float scale[MR];
  qt_fill_terms(fill, k_groups, MR, terms, scale);
  const axle_qu8_requant_t rq = qt_requant(QT_STAGE_AS_GIVEN, scale, MR, qt_int(0, 255), 3, 250);
  for (size_t mr = 1; mr <= rows; ++mr) {
    uint8_t want[MR * LDY], got[MR * LDY];
    memset(want, 7, sizeof want);
    memset(got, 7, sizeof got);
    if (quads) {
      axle_qu8_gemm_12x16c4__scalar(mr, 1, k_groups, a8, b8, terms, scale, &rq, want, LDY);
      c4(mr, 1, k_groups, a8, col8, terms, scale, &rq, got, LDY);
    } else {
      axle_qu8_gemm_6x16__scalar(mr, 1, k_groups, a16, b16, terms, scale, &rq, want, LDY);
      axle_qu8_gemm_6x1__avx2(mr, 1, k_groups, a16, col16, terms, scale, &rq, got, LDY);
    }
    char case_name[128];
    snprintf(case_name, sizeof case_name, "%s, K groups %zu fill %d mr %zu", what, k_groups, fill,
             mr);
    qt_same(case_name, got, want, sizeof want);
  }
  free(a8);
  free(b8);
  free(a16);
  free(b16);
  free(col8);
  free(col16);
}

static void test_ukernel_column_variants(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: the one-column tiles cannot run");
    return;
  }
  static const size_t groups[] = {0, 1, 3, 4, 5, 7, 8, 40, 130};
  for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; ++gi) {
    for (int fill = 0; fill < QT_C4_FILLS; ++fill) {
      qt_column_case(groups[gi], fill, 0, NULL, "6x1 avx2 = 6x16 scalar");
      qt_column_case(groups[gi], fill, 1, axle_qu8_gemm_12x1c4__avx2,
                     "12x1c4 avx2 = 12x16c4 scalar");
      if (qt_avx512())
        qt_column_case(groups[gi], fill, 1, axle_qu8_gemm_12x1c4__avx512,
                       "12x1c4 avx512 = 12x16c4 scalar");
    }
  }
  if (!qt_avx512()) printf("\n  skipped: 12x1c4 avx512 (this CPU lacks AVX-512 VNNI)\n");
  CU_PASS("one-column tiles = scalar");
}

/* The AVX2 stride-2 gather from buffers of exactly the bytes it may read
 * (2 count - 1), so a read past them shows under AddressSanitizer, and the
 * AVX2 im2col against the scalar one on stride-2 windows (pads, widths
 * around the 16- and 32-byte steps, partial row and column blocks). */
static void test_im2col_avx2(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: the AVX2 im2col cannot run");
    return;
  }
  for (size_t count = 1; count <= 100; ++count) {
    uint8_t* src = malloc(2 * count - 1);
    uint8_t *want = malloc(count), *got = malloc(count);
    for (size_t i = 0; i < 2 * count - 1; ++i) src[i] = (uint8_t)qt_int(0, 255);
    for (size_t i = 0; i < count; ++i) want[i] = src[2 * i];
    axle_qu8_gather_stride2__avx2(got, src, count);
    if (memcmp(want, got, count) != 0) {
      fprintf(stderr, "\ngather stride 2, count %zu differs\n", count);
      CU_FAIL("gather stride 2");
    }
    free(src);
    free(want);
    free(got);
  }
  static const int64_t widths[] = {1, 2, 15, 16, 17, 31, 33, 34, 35, 64, 67, 224};
  static const int64_t kernels[] = {1, 3, 7};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
    for (size_t ki = 0; ki < 3; ++ki) {
      for (int64_t pad = 0; pad <= kernels[ki] / 2; ++pad) {
        axle_f32_conv_params_t p;
        memset(&p, 0, sizeof p);
        const int64_t kk = kernels[ki], w = widths[wi], h = 5;
        p.batch = 1;
        p.groups = 1;
        p.in_channels = 2;
        p.out_channels = 1;
        p.in[0] = p.out[0] = p.kernel[0] = p.stride[0] = p.dilation[0] = 1;
        p.in[1] = h;
        p.in[2] = w;
        p.kernel[1] = p.kernel[2] = kk;
        p.stride[1] = p.stride[2] = 2;
        p.dilation[1] = p.dilation[2] = 1;
        p.pad[1] = p.pad[2] = pad; /* the same padding at the end: out below */
        p.out[1] = (h + 2 * pad - kk) / 2 + 1;
        p.out[2] = (w + 2 * pad - kk) / 2 + 1;
        if (p.out[1] < 1 || p.out[2] < 1) continue;
        const size_t in_n = (size_t)(2 * h * w), k = (size_t)(2 * kk * kk);
        const size_t n = (size_t)(p.out[1] * p.out[2]);
        uint8_t* x = malloc(in_n);
        for (size_t i = 0; i < in_n; ++i) x[i] = (uint8_t)qt_int(0, 255);
        /* Whole matrix, then a block of rows and columns from the middle. */
        const size_t blocks[2][4] = {{0, k, 0, n}, {k / 3, k - k / 3, n / 3, n - n / 3}};
        for (size_t bi = 0; bi < 2; ++bi) {
          const size_t k0 = blocks[bi][0], kc = blocks[bi][1], n0 = blocks[bi][2];
          const size_t nc = blocks[bi][3];
          if (kc == 0 || nc == 0) continue;
          uint8_t *want = malloc(kc * nc), *got = malloc(kc * nc);
          axle_qu8_im2col_block(&p, x, 77, k0, kc, n0, nc, want);
          axle_qu8_im2col_block__avx2(&p, x, 77, k0, kc, n0, nc, got);
          if (memcmp(want, got, kc * nc) != 0) {
            fprintf(stderr, "\nim2col avx2 width %lld kernel %lld pad %lld block %zu differs\n",
                    (long long)w, (long long)kk, (long long)pad, bi);
            CU_FAIL("im2col avx2 = scalar");
          }
          free(want);
          free(got);
        }
        free(x);
      }
    }
  }
  CU_PASS("im2col avx2 = scalar");
}

static void test_ukernel_c4_by_hand(void) {
  /* One K quad, 0..255 against -128..127 at their ends: 255 * -128 + 0 * 127
   * + 255 * 127 + 1 * -1 = -256, plus the term 6 is -250; times 0.5 gives
   * -125, plus the zero point 130 is 5. Pixel 1 has x = 0 everywhere: 6 *
   * 0.5 + 130 = 133. */
  enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR };
  int8_t a[MR * 4];
  uint8_t b[NR * 4];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  const int8_t w[4] = {-128, 127, 127, -1};
  const uint8_t x[4] = {255, 0, 255, 1};
  memcpy(a, w, 4);
  memcpy(b, x, 4);
  const int32_t terms[1] = {6};
  const float scale[1] = {0.5f};
  const axle_qu8_requant_t rq = qt_requant(QT_STAGE_AS_GIVEN, scale, 1, 130, 0, 255);
  uint8_t y[2];
  axle_qu8_gemm_12x16c4__scalar(1, 2, 1, a, b, terms, scale, &rq, y, 2);
  CU_ASSERT_EQUAL(y[0], 5);
  CU_ASSERT_EQUAL(y[1], 133);
}

/* ---- depthwise plane kernels ------------------------------------------- */

/* The pieces of a 3x3 depthwise case on one channel, shared by the plane
 * and 16-channel checks: its geometry (0 when it has no output), and for a
 * fill (QT_RANDOM or an extreme) the zero point, input bytes, taps with
 * their term and scale, and the requantisation. */
static int qt_dw_params(int64_t ih, int64_t iw, int64_t stride, int64_t pad, int64_t pad_end,
                        axle_f32_conv_params_t* p) {
  memset(p, 0, sizeof *p);
  p->batch = 1;
  p->groups = p->in_channels = p->out_channels = 1;
  const int64_t in[3] = {1, ih, iw}, kernel[3] = {1, 3, 3};
  for (int d = 0; d < 3; ++d) {
    p->in[d] = in[d];
    p->kernel[d] = kernel[d];
    p->stride[d] = d ? stride : 1;
    p->dilation[d] = 1;
    p->pad[d] = d ? pad : 0;
    p->out[d] = (in[d] + (d ? pad + pad_end : 0) - kernel[d]) / p->stride[d] + 1;
  }
  return p->out[1] >= 1 && p->out[2] >= 1;
}

static int32_t qt_dw_zero_point(int fill) {
  return fill == QT_RANDOM ? qt_int(0, 255) : fill == QT_X_MIN_W_MAX ? 255 : 0;
}

static uint8_t qt_dw_byte(int fill) {
  return (uint8_t)(fill == QT_RANDOM ? qt_int(0, 255) : fill == QT_X_MIN_W_MAX ? 0 : 255);
}

static void qt_dw_channel(int fill, int32_t zp, int16_t* w, int32_t* term, float* scale) {
  int64_t sum = 0;
  for (int t = 0; t < 9; ++t) {
    w[t] = (int16_t)(fill == QT_RANDOM        ? qt_int(-128, 127)
                     : fill == QT_X_MAX_W_MIN ? -128
                                              : 127);
    sum += w[t];
  }
  *term = (fill == QT_RANDOM ? qt_int(-20000, 20000) : 0) - zp * (int32_t)sum;
  *scale = fill == QT_RANDOM ? 1.0f / (float)qt_int(20, 400) : 100.0f / (9.0f * 255.0f * 128.0f);
}

static axle_qu8_requant_t qt_dw_requant(int fill, int stage, const float* scales, size_t channels) {
  return qt_requant(stage, scales, channels, fill == QT_RANDOM ? qt_int(0, 255) : 128,
                    (uint8_t)(fill == QT_RANDOM ? qt_int(0, 20) : 0),
                    (uint8_t)(fill == QT_RANDOM ? qt_int(235, 255) : 255));
}

/* One plane of every 3x3 depthwise variant against the scalar one, bit for
 * bit, with a canary after the plane (tail stores must stop at its end),
 * on the scales of qt_scale(kind) (the channel's own for QT_SCALE_SMALL)
 * and the output stage of qt_requant(stage). The input is allocated to its exact size,
 * so the sanitizer build sees a read past it. */
static void qt_dw_plane_on(int64_t ih, int64_t iw, int64_t stride, int64_t pad, int64_t pad_end,
                           int fill, int kind, int stage) {
  axle_f32_conv_params_t p;
  if (!qt_dw_params(ih, iw, stride, pad, pad_end, &p)) return;
  const size_t n_in = (size_t)(ih * iw), n_out = (size_t)(p.out[1] * p.out[2]);
  const int32_t zp = qt_dw_zero_point(fill);
  uint8_t* x = malloc(n_in);
  for (size_t i = 0; i < n_in; ++i) x[i] = qt_dw_byte(fill);
  int16_t w[10] = {0};
  int32_t term;
  float scale;
  qt_dw_channel(fill, zp, w, &term, &scale);
  if (kind != QT_SCALE_SMALL) {
    term = qt_term(kind);
    scale = qt_scale(kind);
  }
  const float scales[1] = {scale};
  const axle_qu8_requant_t rq = qt_dw_requant(fill, stage, scales, 1);
  void* tmp = kt_scratch(axle_qu8_dwconv_tmp_size(&p));
  uint8_t* want = kt_scratch(n_out + 64);
  uint8_t* got = kt_scratch(n_out + 64);
  axle_qu8_dwconv_plane__scalar(&p, x, zp, w, term, scale, &rq, want, tmp);
  static const struct {
    const char* name;
    axle_isa_t level;
    axle_qu8_dwconv_plane_fn fn;
  } variants[] = {{"avx2", AXLE_ISA_AVX2_FMA, axle_qu8_dwconv_plane_3x3__avx2},
                  {"avxvnni", AXLE_ISA_AVX2_VNNI, axle_qu8_dwconv_plane_3x3__avxvnni},
                  {"avx512", AXLE_ISA_AVX512, axle_qu8_dwconv_plane_3x3__avx512}};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    if (!qt_has_level(variants[v].level)) continue;
    memset(got, 0xA5, n_out + 64);
    variants[v].fn(&p, x, zp, w, term, scale, &rq, got, tmp);
    char what[160];
    snprintf(what, sizeof what,
             "dwconv 3x3 %s, %lldx%lld stride %lld pad %lld/%lld fill %d scales %d stage %d",
             variants[v].name, (long long)ih, (long long)iw, (long long)stride, (long long)pad,
             (long long)pad_end, fill, kind, stage);
    if (qt_same(what, got, want, n_out + 64) == 0) break;
  }
  free(x);
  free(tmp);
  free(want);
  free(got);
}

/* A plane on every output stage; the extreme scales on random operands,
 * with skip as set and forced to 0. */
static void qt_dw_plane(int64_t ih, int64_t iw, int64_t stride, int64_t pad, int64_t pad_end,
                        int fill) {
  for (int stage = 0; stage < QT_STAGES; ++stage)
    qt_dw_plane_on(ih, iw, stride, pad, pad_end, fill, QT_SCALE_SMALL, stage);
  for (int stage = 0; fill == QT_RANDOM && stage < QT_STAGES; stage += QT_STAGE_FULL) {
    qt_dw_plane_on(ih, iw, stride, pad, pad_end, fill, QT_SCALE_BELOW_ONE, stage);
    qt_dw_plane_on(ih, iw, stride, pad, pad_end, fill, QT_SCALE_ABOVE_ONE, stage);
  }
}

static void test_dwconv_plane_variants(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: no 3x3 depthwise variant to compare");
    return;
  }
  static const int64_t pads[][2] = {{1, 1}, {0, 0}, {0, 1}, {2, 2}};
  for (int64_t ih = 1; ih <= 20; ++ih)
    for (int64_t iw = 1; iw <= 20; ++iw)
      for (int64_t stride = 1; stride <= 2; ++stride)
        for (int pi = 0; pi < 4; ++pi) {
          qt_dw_plane(ih, iw, stride, pads[pi][0], pads[pi][1], QT_RANDOM);
          if (pi == 0)
            for (int fill = QT_X_MAX_W_MIN; fill <= QT_X_MAX_W_MAX; ++fill)
              qt_dw_plane(ih, iw, stride, 1, 1, fill);
        }
  /* Planes as wide as MobileNetV2's, whose groups run across many loads. */
  qt_dw_plane(56, 56, 1, 1, 1, QT_RANDOM);
  qt_dw_plane(57, 113, 2, 0, 1, QT_RANDOM);
}

/* The 16-channel kernel on `channels` planes of ih x iw (contiguous, the
 * input allocated to its exact size), weights and terms strided as in a
 * packed plan, against the scalar plane kernel channel by channel, with a
 * canary after the last output plane. */
static void qt_dw16(int64_t ih, int64_t iw, int64_t stride, int64_t pad, int64_t pad_end,
                    size_t channels, int fill) {
  axle_f32_conv_params_t p;
  if (!qt_dw_params(ih, iw, stride, pad, pad_end, &p) || !axle_qu8_dwconv16_3x3__avx2_supports(&p))
    return;
  enum { W_STRIDE = 12, T_STRIDE = 3 };
  const size_t n_in = (size_t)(ih * iw), n_out = (size_t)(p.out[1] * p.out[2]);
  const int32_t zp = qt_dw_zero_point(fill);
  uint8_t* x = malloc(n_in * channels);
  for (size_t i = 0; i < n_in * channels; ++i) x[i] = qt_dw_byte(fill);
  int16_t* w = calloc(channels * W_STRIDE, sizeof(int16_t));
  int32_t* terms = calloc(channels * T_STRIDE, sizeof(int32_t));
  float* scales = malloc(channels * sizeof(float));
  for (size_t c = 0; c < channels; ++c)
    qt_dw_channel(fill, zp, w + c * W_STRIDE, terms + c * T_STRIDE, scales + c);
  const axle_qu8_requant_t rq = qt_dw_requant(fill, QT_STAGE_AS_GIVEN, scales, channels);
  void* tmp = kt_scratch(axle_qu8_dwconv_tmp_size(&p) + axle_qu8_dwconv16_tmp_size(&p));
  uint8_t* want = kt_scratch(n_out * channels + 64);
  uint8_t* got = kt_scratch(n_out * channels + 64);
  for (size_t c = 0; c < channels; ++c)
    axle_qu8_dwconv_plane__scalar(&p, x + c * n_in, zp, w + c * W_STRIDE, terms[c * T_STRIDE],
                                  scales[c], &rq, want + c * n_out, tmp);
  axle_qu8_dwconv16_3x3__avx2(&p, x, channels, zp, w, W_STRIDE, terms, T_STRIDE, scales, &rq, got,
                              tmp);
  char what[160];
  snprintf(what, sizeof what, "dwconv16 3x3, %zu ch %lldx%lld stride %lld pad %lld/%lld fill %d",
           channels, (long long)ih, (long long)iw, (long long)stride, (long long)pad,
           (long long)pad_end, fill);
  qt_same(what, got, want, n_out * channels + 64);
  free(x);
  free(w);
  free(terms);
  free(scales);
  free(tmp);
  free(want);
  free(got);
}

static void test_dwconv16_variants(void) {
  if (!qt_avx2()) {
    CU_PASS("no AVX2 on this machine: the 16-channel depthwise kernel cannot run");
    return;
  }
  /* (1, 0) leaves input columns past the last window, next to padding. */
  static const int64_t pads[][2] = {{1, 1}, {0, 0}, {0, 1}, {2, 2}, {1, 0}};
  static const size_t counts[] = {1, 5, 15, 16};
  for (int64_t ih = 3; ih <= 20; ++ih)
    for (int64_t iw = 3; iw <= 20; ++iw)
      for (int64_t stride = 1; stride <= 2; ++stride)
        for (int pi = 0; pi < 5; ++pi)
          qt_dw16(ih, iw, stride, pads[pi][0], pads[pi][1], counts[(ih + iw + pi) % 4], QT_RANDOM);
  for (int fill = QT_X_MAX_W_MIN; fill <= QT_X_MAX_W_MAX; ++fill) {
    qt_dw16(7, 7, 1, 1, 1, 16, fill);
    qt_dw16(14, 14, 2, 0, 1, 16, fill);
  }
  /* MobileNetV2's shapes, and the largest plane taken. */
  qt_dw16(14, 14, 1, 1, 1, 16, QT_RANDOM);
  qt_dw16(7, 7, 1, 1, 1, 16, QT_RANDOM);
  qt_dw16(16, 16, 1, 1, 1, 16, QT_RANDOM);
  qt_dw16(32, 32, 2, 1, 1, 3, QT_RANDOM);
}

/* ---- expansion + depthwise pairs ----------------------------------------- */

/* A pointwise convolution cin -> cout on an h x w map and a 3x3 depthwise
 * one (stride, pads) after it, as a pair at every ISA level on 1-3 threads,
 * against the reference run twice. The depthwise layer's input zero point
 * differs from the expansion's output one (legal, if unusual): each half
 * must use its own. */
static void qt_pair_case(int64_t batch, int64_t cin, int64_t cout, int64_t h, int64_t w,
                         int64_t stride, int64_t pad, int64_t pad_end) {
  const qt_conv_case_t pc = {
      "pair expansion", batch, 1, cin, cout, {1, h, w}, QT_1, QT_1, QT_1, QT_0, QT_0};
  const qt_conv_case_t dc = {"pair depthwise",
                             batch,
                             cout,
                             cout,
                             cout,
                             {1, h, w},
                             {1, 3, 3},
                             {1, stride, stride},
                             QT_1,
                             {0, pad, pad},
                             {0, pad_end, pad_end}};
  qt_conv_data_t pd, dd;
  qt_conv_data(&pc, qt_int(0, 255), QT_RANDOM, 0, 255, &pd);
  qt_conv_data(&dc, qt_int(0, 255), QT_RANDOM, (uint8_t)qt_int(0, 30), (uint8_t)qt_int(225, 255),
               &dd);
  axle_qu8_conv_direct__scalar(&dd.p, pd.want, dd.zp, dd.w, dd.bias, &dd.rq, dd.want);
  const axle_isa_t best = qt_best_isa();
  const axle_isa_t prev = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  for (int isa = 0; isa <= (int)best; ++isa) {
    axle_kernels_set_isa((axle_isa_t)isa);
    axle_qu8_conv_plan_t pp, dp;
    axle_qu8_conv_plan(&pd.p, pd.zp, &pp);
    axle_qu8_conv_plan(&dd.p, dd.zp, &dp);
    CU_ASSERT_FATAL(axle_qu8_conv_pair_supports(&pp, &dp));
    void* ppk = kt_scratch(axle_qu8_conv_packed_size(&pp));
    void* dpk = kt_scratch(axle_qu8_conv_packed_size(&dp));
    axle_qu8_conv_pack(&pp, pd.w, pd.bias, ppk);
    axle_qu8_conv_pack(&dp, dd.w, dd.bias, dpk);
    const axle_qu8_conv_pair_t pair = {&pp, ppk, &pd.rq, &dp, dpk, &dd.rq};
    for (uint32_t threads = 1; threads <= 3; ++threads) {
      void* scratch = kt_scratch(axle_qu8_conv_pair_scratch_size(&pair, threads));
      uint8_t* y = kt_scratch(dd.y_n);
      uint32_t tstore = threads;
      const axle_parallel_t par = {kt_pool_run, &tstore, threads};
      axle_qu8_conv_pair(&pair, pd.x, y, scratch, threads > 1 ? &par : NULL);
      char what[200];
      snprintf(what, sizeof what,
               "pair %lld x %lld -> %lld at %lldx%lld, stride %lld pad %lld/%lld, isa %d, %u "
               "thread(s)",
               (long long)batch, (long long)cin, (long long)cout, (long long)h, (long long)w,
               (long long)stride, (long long)pad, (long long)pad_end, isa, threads);
      qt_same(what, y, dd.want, dd.y_n);
      free(scratch);
      free(y);
    }
    free(ppk);
    free(dpk);
  }
  axle_kernels_set_isa(prev);
  qt_conv_data_free(&pd);
  qt_conv_data_free(&dd);
}

static void test_conv_pair(void) {
  /* Partial panels (13, 7 channels) and strips (63, 5 pixels), a last
   * strip of one pixel (49: packed dense beside the block's strips), a 1x1
   * map, both strides, pads of 0 and 1, two images; MobileNetV2's 56x56
   * block. */
  qt_pair_case(1, 5, 13, 7, 9, 1, 1, 1);
  qt_pair_case(2, 10, 14, 7, 7, 1, 1, 1);
  qt_pair_case(1, 16, 7, 1, 5, 1, 1, 1);
  qt_pair_case(2, 3, 24, 8, 8, 2, 0, 1);
  qt_pair_case(1, 24, 25, 1, 1, 1, 1, 1);
  qt_pair_case(1, 9, 30, 11, 6, 2, 1, 1);
  qt_pair_case(1, 24, 144, 56, 56, 1, 1, 1);
  /* Which pairs pay: MobileNetV2's 56x56 expansion, not its 14x14 one. */
  axle_f32_conv_params_t e56 =
      qt_params(&(qt_conv_case_t){"", 1, 1, 24, 144, {1, 56, 56}, QT_1, QT_1, QT_1, QT_0, QT_0});
  axle_f32_conv_params_t d56 = qt_params(&(qt_conv_case_t){
      "", 1, 144, 144, 144, {1, 56, 56}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}});
  axle_f32_conv_params_t e14 =
      qt_params(&(qt_conv_case_t){"", 1, 1, 64, 384, {1, 14, 14}, QT_1, QT_1, QT_1, QT_0, QT_0});
  axle_f32_conv_params_t d14 = qt_params(&(qt_conv_case_t){
      "", 1, 384, 384, 384, {1, 14, 14}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}});
  axle_qu8_conv_plan_t pe, pd;
  axle_qu8_conv_plan(&e56, 0, &pe);
  axle_qu8_conv_plan(&d56, 0, &pd);
  CU_ASSERT(axle_qu8_conv_pair_pays(&pe, &pd));
  axle_qu8_conv_plan(&e14, 0, &pe);
  axle_qu8_conv_plan(&d14, 0, &pd);
  CU_ASSERT(axle_qu8_conv_pair_supports(&pe, &pd));
  CU_ASSERT(!axle_qu8_conv_pair_pays(&pe, &pd));
  /* What the pair does not take. */
  axle_f32_conv_params_t a =
      qt_params(&(qt_conv_case_t){"", 1, 1, 4, 8, {1, 5, 5}, QT_1, QT_1, QT_1, QT_0, QT_0});
  axle_f32_conv_params_t b = qt_params(
      &(qt_conv_case_t){"", 1, 8, 8, 8, {1, 5, 5}, {1, 3, 3}, QT_1, QT_1, {0, 1, 1}, {0, 1, 1}});
  axle_qu8_conv_plan_t pa, pb;
  axle_qu8_conv_plan(&a, 0, &pa);
  axle_qu8_conv_plan(&b, 0, &pb);
  CU_ASSERT(axle_qu8_conv_pair_supports(&pa, &pb));
  CU_ASSERT(!axle_qu8_conv_pair_supports(&pb, &pa));
  b.in[2] = b.out[2] = 6; /* not the expansion's output shape */
  axle_qu8_conv_plan(&b, 0, &pb);
  CU_ASSERT(!axle_qu8_conv_pair_supports(&pa, &pb));
  b.in[2] = 5;
  b.out_channels = 16; /* channel multiplier 2 */
  b.out[2] = 5;
  axle_qu8_conv_plan(&b, 0, &pb);
  CU_ASSERT(!axle_qu8_conv_pair_supports(&pa, &pb));
}

/* ---- addition ------------------------------------------------------------ */

/* DequantizeLinear, Add, QuantizeLinear as three float32 steps; volatile
 * keeps the compiler from fusing the multiply and the add. */
static uint8_t qt_add_ref(uint8_t a, uint8_t b, const axle_qu8_add_params_t* q) {
  volatile float va = (float)(a - q->a_zero_point) * q->a_scale;
  volatile float vb = (float)(b - q->b_zero_point) * q->b_scale;
  volatile float sum = va + vb;
  const float r = nearbyintf(sum / q->y_scale);
  const float lo = (float)q->min - (float)q->y_zero_point;
  const float hi = (float)q->max - (float)q->y_zero_point;
  return (uint8_t)((r < lo ? lo : r > hi ? hi : r) + (float)q->y_zero_point);
}

static void qt_add_case(const axle_qu8_add_params_t* q, size_t n, const char* what) {
  uint8_t* a = kt_scratch(n);
  uint8_t* b = kt_scratch(n);
  uint8_t* want = kt_scratch(n);
  uint8_t* got = kt_scratch(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = (uint8_t)qt_int(0, 255);
    b[i] = (uint8_t)qt_int(0, 255);
    want[i] = qt_add_ref(a[i], b[i], q);
  }
  memset(got, 0, n);
  axle_qu8_add__scalar(n, a, b, q, got);
  qt_same(what, got, want, n);
  if (qt_avx2()) {
    memset(got, 0, n);
    axle_qu8_add__avx2(n, a, b, q, got);
    qt_same(what, got, want, n);
  }
  for (uint32_t threads = 1; threads <= 2; ++threads) {
    uint32_t tstore = threads;
    const axle_parallel_t par = {kt_pool_run, &tstore, threads};
    memset(got, 0, n);
    axle_qu8_add(n, a, b, q, got, threads > 1 ? &par : NULL);
    qt_same(what, got, want, n);
  }
  free(a);
  free(b);
  free(want);
  free(got);
}

static void test_add(void) {
  for (size_t n = 0; n <= 67; ++n) {
    const axle_qu8_add_params_t q = {0.02f + (float)qt_int(0, 100) / 1000.0f,
                                     0.02f + (float)qt_int(0, 100) / 1000.0f,
                                     0.05f + (float)qt_int(0, 100) / 1000.0f,
                                     qt_int(0, 255),
                                     qt_int(0, 255),
                                     qt_int(0, 255),
                                     0,
                                     255};
    qt_add_case(&q, n, "add, random scales");
  }
  /* Halves everywhere: (a - 3) / 2 + (b - 8) / 2 over 1 is a .5 tie
   * whenever a and b differ in parity from their zero points' sum. */
  const axle_qu8_add_params_t ties = {0.5f, 0.5f, 1.0f, 3, 8, 128, 0, 255};
  qt_add_case(&ties, 67, "add, ties");
  /* Saturation at both ends and a clamp. */
  const axle_qu8_add_params_t sat = {1.0f, 1.0f, 0.25f, 0, 255, 100, 0, 255};
  qt_add_case(&sat, 61, "add, saturating");
  const axle_qu8_add_params_t clamp = {0.1f, 0.1f, 0.1f, 128, 128, 128, 128, 200};
  qt_add_case(&clamp, 64, "add, clamp");
  /* Large enough to be split over threads. */
  qt_add_case(&clamp, 40000 + 13, "add, long");
}

static void test_add_ties_round_to_even(void) {
  const axle_qu8_add_params_t q = {0.5f, 0.5f, 1.0f, 0, 0, 100, 0, 255};
  /* 1/2 + 0 = 0.5 -> 0; 3/2 + 0 = 1.5 -> 2; 5/2 + 0 = 2.5 -> 2. */
  const uint8_t a[3] = {1, 3, 5}, b[3] = {0, 0, 0};
  const uint8_t want[3] = {100, 102, 102};
  uint8_t got[3];
  axle_qu8_add(3, a, b, &q, got, NULL);
  qt_same("add, half-even by hand", got, want, 3);
}

int main(void) {
  static const struct {
    const char* name;
    CU_TestFunc fn;
  } tests[] = {
      {"reference conv, by hand", test_direct_by_hand},
      {"prepared conv = reference, random", test_conv_random},
      {"prepared conv, batch 0, 1-3 threads", test_conv_empty},
      {"prepared conv = reference, zero points 0/128/255", test_conv_zero_points},
      {"prepared conv = reference, extreme operands", test_conv_extremes},
      {"prepared conv = reference, ties and clamps", test_conv_ties_and_clamps},
      {"tie fill produces ties", test_conv_ties_are_exercised},
      {"pack_b avx2 = scalar", test_pack_b_variants},
      {"output stage: the steps it lets the vector variants skip", test_requant_init},
      {"micro-kernel 6x16 avx2 = scalar", test_ukernel_variants},
      {"micro-kernel 12x16c4, by hand", test_ukernel_c4_by_hand},
      {"VNNI micro-kernels 12x16c4 (avx512, avxvnni) = scalar", test_ukernel_c4_variants},
      {"12x16c4 with extra columns (avx512) = scalar on both strips", test_ukernel_c4_extra},
      {"VNNI blocks of panels and strips = scalar block = its tiles", test_ukernel_c4_blocks},
      {"one-column tiles (6x1, 12x1c4) = scalar at nr 1", test_ukernel_column_variants},
      {"im2col avx2 (stride-2 gather) = scalar", test_im2col_avx2},
      {"depthwise 3x3 planes, avx2, avxvnni and avx512 = scalar", test_dwconv_plane_variants},
      {"depthwise 3x3, 16 channels a call (avx2) = scalar", test_dwconv16_variants},
      {"expansion + depthwise pair = reference twice", test_conv_pair},
      {"add, every variant", test_add},
      {"add, half-even", test_add_ties_round_to_even},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("qu8 kernels", NULL, NULL);
  if (!s) return 1;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i)
    if (!CU_add_test(s, tests[i].name, tests[i].fn)) return 1;
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
