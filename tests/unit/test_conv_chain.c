/*
 * The inverted-residual chain (axle_f32_conv_chain) against the scalar
 * direct convolution run stage by stage with the epilogues applied by hand:
 * stride 1 and 2, uneven paddings, maps not a multiple of the vector width,
 * residual or none, every band height from 1 (the band walk's row reuse and
 * edges) up to the whole image, 1-3 threads (row ranges that split bands),
 * batch 2, pointwise plans plain and transposed (few pixels), expansions
 * that are 3x3 convolutions (MobileNetV2's stem: im2col, stride 2, and
 * transposed), at every ISA level the machine has; the cases with a
 * pointwise expansion also channels-last (1-3 threads). Plus which plans
 * chain (axle_f32_conv_chain_supports, axle_f32_conv_chain_mode), the
 * band rule, and a thread's rows in one band on several threads.
 */
#include "kernel_test.h"

typedef struct chain_case_t {
  int64_t batch, cin, ce, co, h, w, stride;
  int64_t pt, pl, pb, pr; /* depthwise padding: top, left, bottom, right */
  int residual;
  int64_t ek, es; /* expansion kernel side (1: pointwise) and stride, padding ek / 2 */
} chain_case_t;

static void stage_params(axle_f32_conv_params_t* p, int64_t batch, int64_t cin, int64_t cout,
                         int64_t groups, int64_t h, int64_t w, int64_t k, int64_t s,
                         const int64_t pad[4]) {
  memset(p, 0, sizeof *p);
  p->batch = batch;
  p->groups = groups;
  p->in_channels = cin;
  p->out_channels = cout;
  p->in[0] = p->out[0] = p->kernel[0] = p->stride[0] = 1;
  p->in[1] = h;
  p->in[2] = w;
  p->kernel[1] = p->kernel[2] = k;
  p->stride[1] = p->stride[2] = s;
  p->dilation[0] = p->dilation[1] = p->dilation[2] = 1;
  p->pad[1] = pad[0];
  p->pad[2] = pad[1];
  p->out[1] = (h + pad[0] + pad[2] - k) / s + 1;
  p->out[2] = (w + pad[1] + pad[3] - k) / s + 1;
}

/* y = clamp(y, lo, hi) (+ r first when given), elementwise. */
static void finish(float* y, const float* r, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; ++i) {
    float v = y[i] + (r ? r[i] : 0.0f);
    y[i] = v < lo ? lo : v > hi ? hi : v;
  }
}

typedef struct chain_fixture_t {
  axle_f32_conv_params_t p[3];
  axle_f32_conv_plan_t plan[3];
  float *w[3], *b[3], *packed[3];
  float *x, *res, *want;
  size_t out_n;
} chain_fixture_t;

static void fixture_make(const chain_case_t* t, chain_fixture_t* f) {
  static const int64_t no_pad[4] = {0, 0, 0, 0};
  const int64_t pad[4] = {t->pt, t->pl, t->pb, t->pr};
  const int64_t ek = t->ek, es = t->es;
  const int64_t e_pad[4] = {ek / 2, ek / 2, ek / 2, ek / 2};
  /* An input the expansion maps onto h x w. */
  const int64_t hin = t->h * es, win = t->w * es;
  stage_params(&f->p[0], t->batch, t->cin, t->ce, 1, hin, win, ek, es, e_pad);
  CU_ASSERT_FATAL(f->p[0].out[1] == t->h && f->p[0].out[2] == t->w);
  stage_params(&f->p[1], t->batch, t->ce, t->ce, t->ce, t->h, t->w, 3, t->stride, pad);
  stage_params(&f->p[2], t->batch, t->ce, t->co, 1, f->p[1].out[1], f->p[1].out[2], 1, 1, no_pad);
  const int64_t ksize[3] = {t->cin * ek * ek, 9, t->ce};
  for (int i = 0; i < 3; ++i) {
    axle_f32_conv_plan(&f->p[i], &f->plan[i]);
    if (i == 0) CU_ASSERT_FATAL(axle_f32_conv_rows_supports(&f->plan[0]));
    f->w[i] = kt_array((size_t)(f->p[i].out_channels * ksize[i]));
    f->b[i] = kt_array((size_t)f->p[i].out_channels);
    f->packed[i] = kt_array(axle_f32_conv_packed_size(&f->plan[i]));
    axle_f32_conv_pack(&f->plan[i], f->w[i], f->packed[i]);
  }
  const size_t in_n = (size_t)(t->batch * t->cin * hin * win);
  const size_t mid_n = (size_t)(t->batch * t->ce * t->h * t->w);
  const size_t dw_n = (size_t)(t->batch * t->ce * f->p[1].out[1] * f->p[1].out[2]);
  f->out_n = (size_t)(t->batch * t->co * f->p[1].out[1] * f->p[1].out[2]);
  f->x = kt_array(in_n);
  f->res = t->residual ? kt_array(f->out_n) : NULL;
  /* The reference: each stage on its own, ReLU6 after the first two. */
  float* e = kt_array(mid_n);
  float* d = kt_array(dw_n);
  f->want = kt_array(f->out_n);
  axle_f32_conv_direct_scalar(&f->p[0], f->x, f->w[0], f->b[0], e);
  finish(e, NULL, mid_n, 0.0f, 6.0f);
  axle_f32_conv_direct_scalar(&f->p[1], e, f->w[1], f->b[1], d);
  finish(d, NULL, dw_n, 0.0f, 6.0f);
  axle_f32_conv_direct_scalar(&f->p[2], d, f->w[2], f->b[2], f->want);
  finish(f->want, f->res, f->out_n, -INFINITY, INFINITY);
  free(e);
  free(d);
}

static void fixture_free(chain_fixture_t* f) {
  for (int i = 0; i < 3; ++i) {
    free(f->w[i]);
    free(f->b[i]);
    free(f->packed[i]);
  }
  free(f->x);
  free(f->res);
  free(f->want);
}

static void chain_of(chain_fixture_t* f, axle_f32_conv_chain_t* c) {
  memset(c, 0, sizeof *c);
  c->expand = &f->plan[0];
  c->dw = &f->plan[1];
  c->project = &f->plan[2];
  for (int i = 0; i < 3; ++i) {
    c->packed[i] = f->packed[i];
    axle_f32_epilogue_init(&c->ep[i]);
    c->ep[i].bias = f->b[i];
  }
  c->ep[0].min = c->ep[1].min = 0.0f;
  c->ep[0].max = c->ep[1].max = 6.0f;
  c->ep[2].residual = f->res;
}

/* Runs chain c (initialised) on f's input with `threads`: output checked
 * against the reference, guard floats after it untouched. how: the run's
 * band or mode, for the failure message. */
static void run_checked(const chain_case_t* t, const chain_fixture_t* f,
                        const axle_f32_conv_chain_t* c, uint32_t threads, const char* how) {
  const size_t guard = 32;
  float* y = kt_array(f->out_n + guard);
  float* tail = kt_array(guard);
  memcpy(tail, y + f->out_n, guard * sizeof(float));
  void* scratch = kt_scratch(axle_f32_conv_chain_scratch_size(c, threads));
  uint32_t tstore;
  axle_parallel_t par;
  axle_f32_conv_chain(c, f->x, y, scratch, kt_parallel(&tstore, &par, threads));
  char what[240];
  snprintf(what, sizeof what,
           "chain n%lld %lld->%lld->%lld %lldx%lld s%lld pad %lld,%lld,%lld,%lld res %d %s "
           "threads %u isa %d",
           (long long)t->batch, (long long)t->cin, (long long)t->ce, (long long)t->co,
           (long long)t->h, (long long)t->w, (long long)t->stride, (long long)t->pt,
           (long long)t->pl, (long long)t->pb, (long long)t->pr, t->residual, how, threads,
           (int)axle_kernels_isa());
  kt_close(what, y, f->want, f->out_n, 1e-5, 1e-5);
  CU_ASSERT(memcmp(tail, y + f->out_n, guard * sizeof(float)) == 0);
  free(y);
  free(tail);
  free(scratch);
}

/* One run in bands of `band` rows. */
static void run_case(const chain_case_t* t, chain_fixture_t* f, int64_t band, uint32_t threads) {
  axle_f32_conv_chain_t c;
  chain_of(f, &c);
  axle_f32_conv_chain_init(&c, band);
  char how[40];
  snprintf(how, sizeof how, "band %lld", (long long)band);
  run_checked(t, f, &c, threads, how);
}

/* The same case run channels-last (plans readied for it and the weights
 * packed again). */
static void run_channels_last(const chain_case_t* t, chain_fixture_t* f, uint32_t threads) {
  chain_fixture_t cl = *f;
  for (int i = 0; i < 3; ++i) {
    axle_f32_conv_plan_channels_last(&cl.plan[i]);
    cl.packed[i] = kt_array(axle_f32_conv_packed_size(&cl.plan[i]));
    axle_f32_conv_pack(&cl.plan[i], f->w[i], cl.packed[i]);
  }
  CU_ASSERT(cl.plan[0].transposed && cl.plan[1].transposed && cl.plan[2].transposed);
  axle_f32_conv_chain_t c;
  chain_of(&cl, &c);
  c.channels_last = 1;
  axle_f32_conv_chain_init(&c, 0);
  run_checked(t, &cl, &c, threads, "channels-last");
  for (int i = 0; i < 3; ++i) free(cl.packed[i]);
}

static const chain_case_t k_cases[] = {
    /* MobileNetV2's 7x7 and 14x14 blocks as they run channels-last (fewer
     * pixels than expanded channels): 7x7 with residual, 14x14 stride 2,
     * 40 channels (a partial vector). */
    {1, 16, 96, 16, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 8, 40, 12, 14, 14, 2, 1, 1, 1, 1, 0, 1, 1},
    /* Projections the AVX-512 tiles read in place from the depthwise
     * stage's blocks of 16 channels (output channels a multiple of 32, K of
     * 16): with a residual, at stride 2 (25 pixels: a short last tile),
     * batch 2; beside one whose K (40) keeps the rows. */
    {1, 32, 96, 32, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 16, 144, 64, 10, 10, 2, 1, 1, 1, 1, 0, 1, 1},
    {2, 16, 160, 96, 9, 9, 1, 1, 1, 1, 1, 0, 1, 1},
    {1, 8, 40, 32, 6, 6, 1, 1, 1, 1, 1, 0, 1, 1},
    /* K past one default K block (288: 2 x 144), in one block of the
     * weights packed for the in-place read. */
    {1, 24, 288, 32, 7, 7, 1, 1, 1, 1, 1, 0, 1, 1},
    /* 13 blocks of 16 channels: on 2 and 3 threads the projection's K
     * parts, which run the channel parts first (k_part_first), must start
     * where those do, not at 208 t / parts. */
    {1, 16, 208, 32, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1},
    /* MobileNetV2-like: stride 1 with residual (also with rows of 40, which
     * the AVX-512 depthwise kernel slides along), stride 2 without. */
    {1, 8, 48, 8, 21, 19, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 8, 32, 8, 13, 40, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 8, 48, 12, 22, 35, 2, 1, 1, 1, 1, 0, 1, 1},
    /* Odd stride-2 input, no left/top padding (the even load form). */
    {1, 6, 32, 10, 17, 33, 2, 0, 0, 1, 1, 0, 1, 1},
    /* Uneven padding, batch 2, a map narrower than a vector. */
    {2, 5, 24, 5, 13, 9, 1, 2, 0, 0, 2, 1, 1, 1},
    {2, 4, 20, 7, 15, 12, 2, 1, 2, 2, 0, 0, 1, 1},
    /* Few pixels: pointwise plans computed transposed. */
    {1, 8, 40, 16, 9, 9, 2, 1, 1, 1, 1, 0, 1, 1},
    {1, 8, 40, 8, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1},
    /* 3x3 stride-2 expansions (im2col; at stride 1 Winograd plans, which
     * do not chain): the stem (3 channels in), batch 2 with both strides
     * and a residual, few pixels (computed transposed). */
    {1, 3, 32, 16, 20, 24, 1, 1, 1, 1, 1, 0, 3, 2},
    {2, 4, 24, 6, 11, 13, 2, 1, 1, 1, 1, 1, 3, 2},
    {1, 6, 48, 6, 7, 7, 1, 1, 1, 1, 1, 1, 3, 2},
};

static void test_chain_matches_reference(void) {
  static const axle_isa_t isas[] = {AXLE_ISA_SCALAR, AXLE_ISA_AVX2_FMA, AXLE_ISA_AVX512};
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_AVX512);
  int transposed = 0; /* bit e + 2p: expansion e, projection p transposed */
  int im2col = 0;     /* bit e: a 3x3 expansion, transposed e */
  for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ++ii) {
    if (isas[ii] > best) continue; /* not on this machine: the lower levels ran */
    axle_kernels_set_isa(isas[ii]);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
      const chain_case_t* t = &k_cases[i];
      chain_fixture_t f;
      fixture_make(t, &f);
      transposed |= 1 << (f.plan[0].transposed + 2 * f.plan[2].transposed);
      if (f.plan[0].algo == AXLE_F32_CONV_IM2COL) im2col |= 1 << f.plan[0].transposed;
      const int64_t ho = f.p[1].out[1];
      for (int64_t band = 1; band <= ho; band = band < 5 ? band + 1 : band * 2)
        for (uint32_t threads = 1; threads <= 3; ++threads) run_case(t, &f, band, threads);
      run_case(t, &f, ho + 7, 2); /* more rows than the image: one band */
      if (t->ek == 1)
        for (uint32_t threads = 1; threads <= 3; ++threads) run_channels_last(t, &f, threads);
      fixture_free(&f);
    }
  }
  axle_kernels_set_isa(best);
  /* The cases cover pointwise plans in both orientations. */
  CU_ASSERT(transposed & 1);
  CU_ASSERT(transposed & 4);
  CU_ASSERT_EQUAL(im2col, 3);
}

static void test_chain_supports(void) {
  chain_fixture_t f;
  /* With the 2 MB L2 main() sets: 96 x 56 x 56 floats expanded (1.2 MB)
   * chain, in bands of 16 rows (19 fit); a 14x14 block (75 KB) does not. */
  CU_ASSERT_EQUAL(axle_kernels_l2_bytes(), 2097152);
  const chain_case_t big = {1, 16, 96, 24, 56, 56, 2, 1, 1, 1, 1, 0, 1, 1};
  fixture_make(&big, &f);
  axle_f32_conv_chain_t c;
  chain_of(&f, &c);
  axle_f32_conv_chain_init(&c, 0);
  const int64_t band = c.band;
  CU_ASSERT_EQUAL(band, 16);
  CU_ASSERT(axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &f.plan[2]));
  axle_f32_conv_plan_t bad;
  /* Stride 3, a 5x5 kernel, a channel multiplier of 2: not chained. */
  axle_f32_conv_params_t q = f.p[1];
  q.stride[1] = q.stride[2] = 3;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &bad, &f.plan[2]));
  q = f.p[1];
  q.kernel[1] = q.kernel[2] = 5;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &bad, &f.plan[2]));
  q = f.p[1];
  q.groups = 48;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &bad, &f.plan[2]));
  /* A projection that does not read the depthwise output's shape. */
  q = f.p[2];
  q.in_channels = 48;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &bad));
  /* A grouped projection is no GEMM over all channels. */
  q = f.p[2];
  q.groups = 2;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &bad));
  /* The band: both buffers within half the L2, a multiple of 4 from 4. */
  const size_t half = axle_kernels_l2_bytes() / 2;
  CU_ASSERT(band >= 1 && band <= f.p[1].out[1]);
  if (band >= 4) CU_ASSERT(band % 4 == 0);
  if (band > 1) CU_ASSERT((size_t)(96 * ((band - 1) * 2 + 3) * 56 + 96 * band * 28) * 4 <= half);
  fixture_free(&f);
  const chain_case_t small = {1, 16, 96, 24, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1};
  fixture_make(&small, &f);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &f.plan[2]));
  fixture_free(&f);
  /* MobileNetV2's stem (3 -> 32, 3x3 stride 2, to 112x112: 1.6 MB) chains
   * with AVX2 and above, not on the scalar kernels; with the expansion
   * grouped it does not (no GEMM over all channels). */
  const chain_case_t stem = {1, 3, 32, 16, 112, 112, 1, 1, 1, 1, 1, 0, 3, 2};
  fixture_make(&stem, &f);
  CU_ASSERT_EQUAL(f.plan[0].algo, AXLE_F32_CONV_IM2COL);
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  CU_ASSERT(!axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &f.plan[2]));
  if (best >= AXLE_ISA_AVX2_FMA) {
    axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
    CU_ASSERT(axle_f32_conv_chain_supports(&f.plan[0], &f.plan[1], &f.plan[2]));
  }
  axle_kernels_set_isa(best);
  q = f.p[0];
  q.in_channels = 32;
  q.groups = 2;
  axle_f32_conv_plan(&q, &bad);
  CU_ASSERT(!axle_f32_conv_chain_supports(&bad, &f.plan[1], &f.plan[2]));
  fixture_free(&f);
}

/* The mode axle_f32_conv_chain_mode picks for f's plans on `threads`. */
static int mode_of(const chain_fixture_t* f, uint32_t threads) {
  return axle_f32_conv_chain_mode(&f->plan[0], &f->plan[1], &f->plan[2], threads);
}

static void test_chain_mode(void) {
  /* Bands where they pay, from a smaller expanded tensor on several
   * threads; channels-last on one thread, with AVX2 or above, for a block
   * with fewer pixels than expanded channels or an expanded map within the
   * L2; else none. */
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  const chain_case_t big = {1, 16, 96, 24, 56, 56, 2, 1, 1, 1, 1, 0, 1, 1};
  const chain_case_t small = {1, 16, 96, 24, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1};
  const chain_case_t wide = {1, 16, 96, 24, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1}; /* 196 > 96 */
  const chain_case_t stem = {1, 6, 48, 6, 7, 7, 1, 1, 1, 1, 1, 1, 3, 2};
  chain_fixture_t f;
  fixture_make(&big, &f);
  CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_BANDS);
  fixture_free(&f);
  /* 28x28 x 192 (600 KB): bands on several threads only (with an L2 that
   * leaves them 4 rows or more). */
  const chain_case_t mid = {1, 32, 192, 32, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1};
  fixture_make(&mid, &f);
  CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_NONE);
  if (axle_kernels_l2_bytes() >= ((size_t)1 << 20))
    CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_BANDS);
  fixture_free(&f);
  fixture_make(&small, &f);
  CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_NONE); /* scalar dispatch */
  if (best >= AXLE_ISA_AVX2_FMA) {
    axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
    CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_CHANNELS_LAST);
    CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_NONE);
    fixture_free(&f);
    /* More pixels than channels: channels-last while the expanded map
     * fits in the L2, at each level. */
    fixture_make(&wide, &f);
    CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_CHANNELS_LAST);
    if (best >= AXLE_ISA_AVX512) {
      axle_kernels_set_isa(AXLE_ISA_AVX512);
      CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_CHANNELS_LAST);
      axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
    }
    fixture_free(&f);
    /* 6.5 MB expanded, too many channels for bands of 4 rows in half an
     * L2 of up to 2.6 MB: none. */
    const chain_case_t past_l2 = {1, 16, 1024, 24, 40, 40, 1, 1, 1, 1, 1, 1, 1, 1};
    fixture_make(&past_l2, &f);
    if (axle_kernels_l2_bytes() < (size_t)1024 * 40 * 40 * sizeof(float)) {
      CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_NONE);
      if (best >= AXLE_ISA_AVX512) {
        axle_kernels_set_isa(AXLE_ISA_AVX512);
        CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_NONE);
        axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
      }
    }
    fixture_free(&f);
    /* 28x28 x 192 on one thread: channels-last where the L2 holds it. */
    fixture_make(&mid, &f);
    CU_ASSERT_EQUAL(mode_of(&f, 1), axle_kernels_l2_bytes() >= (size_t)192 * 28 * 28 * sizeof(float)
                                        ? AXLE_F32_CHAIN_CHANNELS_LAST
                                        : AXLE_F32_CHAIN_NONE);
    fixture_free(&f);
    /* Several threads take channel parts where the projection reads the
     * depthwise output in place: output channels in whole tiles, 16 wide
     * with AVX2 (32 here; `small`'s 24 above are not), 32 with AVX-512
     * (48 are not). */
    const chain_case_t parts = {1, 32, 96, 32, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1};
    fixture_make(&parts, &f);
    CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_CHANNELS_LAST);
    fixture_free(&f);
    const chain_case_t odd = {1, 32, 96, 48, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1};
    fixture_make(&odd, &f);
    CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_CHANNELS_LAST);
    if (best >= AXLE_ISA_AVX512) {
      axle_kernels_set_isa(AXLE_ISA_AVX512);
      CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_NONE);
      fixture_free(&f);
      fixture_make(&parts, &f);
      CU_ASSERT_EQUAL(mode_of(&f, 2), AXLE_F32_CHAIN_CHANNELS_LAST);
      axle_kernels_set_isa(AXLE_ISA_AVX2_FMA);
    }
    fixture_free(&f);
    fixture_make(&stem, &f); /* an im2col expansion: bands only */
    CU_ASSERT_EQUAL(mode_of(&f, 1), AXLE_F32_CHAIN_NONE);
  }
  fixture_free(&f);
  axle_kernels_set_isa(best);
}

/* On several threads each thread's rows in one band where they fit in 90 %
 * of the L2 (range_band), with the scratch to hold it; on one, the default
 * band. 192 x 56 expanded, 28 rows (2 MB L2): bands of 8 (half the L2), a
 * thread's 14 in 1.3 MB. */
static void test_chain_range_band(void) {
  const chain_case_t t = {1, 16, 192, 16, 28, 56, 1, 1, 1, 1, 1, 1, 1, 1};
  chain_fixture_t f;
  fixture_make(&t, &f);
  axle_f32_conv_chain_t c;
  chain_of(&f, &c);
  axle_f32_conv_chain_init(&c, 0);
  CU_ASSERT_EQUAL(c.band, 8);
  CU_ASSERT_EQUAL(c.range_band, 14);
  /* A thread's 14 rows: 16 expanded rows and 14 depthwise ones of 56. */
  const size_t one_band = (size_t)192 * (16 * 56 + 14 * 56) * sizeof(float);
  CU_ASSERT(axle_f32_conv_chain_scratch_size(&c, 2) >= 2 * one_band);
  CU_ASSERT(axle_f32_conv_chain_scratch_size(&c, 1) < one_band);
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_AVX512);
  static const axle_isa_t isas[] = {AXLE_ISA_SCALAR, AXLE_ISA_AVX2_FMA, AXLE_ISA_AVX512};
  for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ++ii) {
    if (isas[ii] > best) continue;
    axle_kernels_set_isa(isas[ii]);
    for (uint32_t threads = 1; threads <= 3; ++threads)
      run_checked(&t, &f, &c, threads, "default band");
  }
  axle_kernels_set_isa(best);
  /* An explicit band stays as asked on any number of threads. */
  axle_f32_conv_chain_init(&c, 4);
  CU_ASSERT_EQUAL(c.range_band, 4);
  run_checked(&t, &f, &c, 2, "band 4");
  fixture_free(&f);
}

int main(void) {
  /* The chain rules depend on the L2 size: fix it (before any kernel reads
   * it) so every machine checks the same decisions. */
  setenv("AXLE_KERNELS_L2_BYTES", "2097152", 1);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  static const kt_entry_t tests[] = {
      {"chain = stage-by-stage reference, every band, 1-3 threads, each ISA",
       test_chain_matches_reference},
      {"which plans chain, and the band", test_chain_supports},
      {"how plans chain: bands, channels-last or not", test_chain_mode},
      {"a thread's rows in one band where they fit", test_chain_range_band},
  };
  if (KT_ADD_SUITE("conv_chain", tests) != 0) return 1;
  return kt_run_all();
}
