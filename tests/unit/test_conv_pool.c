/*
 * Convolution -> max pooling in bands (axle_f32_conv_pool) against the
 * scalar direct convolution, the epilogue by hand and the scalar max
 * pooling: ResNet's stem shape (7x7 stride 2, then 3x3 stride 2 pad 1) and
 * others (5x5, 3x3 stride 2, 2x2 and pointwise convolutions; poolings of
 * 2x2 stride 2, 3x3 stride 1, 3x3 stride 2 without padding and 3x2 with
 * uneven strides), every band height from 1 (the band walk's row reuse and edges)
 * up to the whole image, 1-3 threads (row ranges that split bands), batch
 * 2, at every ISA level the machine has; nothing written past the output.
 * Plus which pairs the kernels take (axle_f32_conv_pool_supports) and the
 * default band.
 */
#include "kernel_test.h"

typedef struct pool_case_t {
  int64_t batch, cin, cout, h, w;
  int64_t k, s, pad;              /* convolution: square kernel, stride, padding */
  int64_t pk1, pk2, ps1, ps2, pp; /* pooling: kernel, strides, padding (both sides) */
} pool_case_t;

typedef struct pool_fixture_t {
  axle_f32_conv_params_t p;
  axle_f32_conv_plan_t plan;
  axle_f32_pool_params_t pool;
  float *w, *b, *packed, *x, *want;
  size_t out_n;
} pool_fixture_t;

static void fixture_make(const pool_case_t* t, pool_fixture_t* f) {
  axle_f32_conv_params_t* p = &f->p;
  kt_conv2d(p, t->batch, t->cin, t->cout, t->h, t->w, t->k, t->s, t->pad);
  axle_f32_conv_plan(p, &f->plan);
  axle_f32_pool_params_t* q = &f->pool;
  memset(q, 0, sizeof *q);
  q->channels = t->cout;
  q->in[0] = q->out[0] = q->kernel[0] = q->stride[0] = 1;
  q->dilation[0] = q->dilation[1] = q->dilation[2] = 1;
  q->in[1] = p->out[1];
  q->in[2] = p->out[2];
  q->kernel[1] = t->pk1;
  q->kernel[2] = t->pk2;
  q->stride[1] = t->ps1;
  q->stride[2] = t->ps2;
  q->pad[1] = q->pad[2] = q->pad_end[1] = q->pad_end[2] = t->pp;
  q->out[1] = (q->in[1] + 2 * t->pp - t->pk1) / t->ps1 + 1;
  q->out[2] = (q->in[2] + 2 * t->pp - t->pk2) / t->ps2 + 1;
  const size_t wn = (size_t)(t->cout * t->cin * t->k * t->k);
  f->w = kt_array(wn);
  f->b = kt_array((size_t)t->cout);
  f->packed = kt_array(axle_f32_conv_packed_size(&f->plan));
  axle_f32_conv_pack(&f->plan, f->w, f->packed);
  const size_t in_n = (size_t)(t->batch * t->cin * t->h * t->w);
  const size_t conv_n = (size_t)(t->batch * t->cout * p->out[1] * p->out[2]);
  f->out_n = (size_t)(t->batch * t->cout * q->out[1] * q->out[2]);
  f->x = kt_array(in_n);
  /* The reference: the convolution, bias and ReLU, then the pooling. */
  float* c = kt_array(conv_n);
  axle_f32_conv_direct_scalar(p, f->x, f->w, f->b, c);
  for (size_t i = 0; i < conv_n; ++i) c[i] = c[i] < 0.0f ? 0.0f : c[i];
  f->want = kt_array(f->out_n);
  axle_f32_pool_params_t all = *q;
  all.channels = t->batch * t->cout;
  axle_f32_maxpool_scalar(&all, c, f->want, NULL);
  free(c);
}

static void fixture_free(pool_fixture_t* f) {
  free(f->w);
  free(f->b);
  free(f->packed);
  free(f->x);
  free(f->want);
}

static void pool_of(pool_fixture_t* f, axle_f32_conv_pool_t* c) {
  memset(c, 0, sizeof *c);
  c->conv = &f->plan;
  c->packed = f->packed;
  axle_f32_epilogue_init(&c->ep);
  c->ep.bias = f->b;
  c->ep.min = 0.0f;
  c->pool = f->pool;
}

/* One run: band rows, threads; output checked, guard floats untouched. */
static void run_case(const pool_case_t* t, pool_fixture_t* f, int64_t band, uint32_t threads) {
  axle_f32_conv_pool_t c;
  pool_of(f, &c);
  axle_f32_conv_pool_init(&c, band);
  const size_t guard = 32;
  float* y = kt_array(f->out_n + guard);
  float* tail = kt_array(guard);
  memcpy(tail, y + f->out_n, guard * sizeof(float));
  void* scratch = kt_scratch(axle_f32_conv_pool_scratch_size(&c, threads));
  uint32_t tstore;
  axle_parallel_t par;
  axle_f32_conv_pool(&c, f->x, y, scratch, kt_parallel(&tstore, &par, threads));
  char what[200];
  snprintf(what, sizeof what,
           "conv+pool n%lld %lld->%lld %lldx%lld k%lld s%lld p%lld, pool %lldx%lld s%lld,%lld "
           "p%lld, band %lld threads %u isa %d",
           (long long)t->batch, (long long)t->cin, (long long)t->cout, (long long)t->h,
           (long long)t->w, (long long)t->k, (long long)t->s, (long long)t->pad, (long long)t->pk1,
           (long long)t->pk2, (long long)t->ps1, (long long)t->ps2, (long long)t->pp,
           (long long)band, threads, (int)axle_kernels_isa());
  kt_close(what, y, f->want, f->out_n, 1e-5, 1e-5);
  CU_ASSERT(memcmp(tail, y + f->out_n, guard * sizeof(float)) == 0);
  free(y);
  free(tail);
  free(scratch);
}

static const pool_case_t k_cases[] = {
    /* ResNet's stem, smaller: 7x7 stride 2 pad 3, pooling 3x3 stride 2 pad 1. */
    {1, 3, 24, 46, 38, 7, 2, 3, 3, 3, 2, 2, 1},
    /* Batch 2, 5x5 stride 1 (3x3 would be Winograd's), pooling 2x2 stride 2
     * (no overlap between bands). */
    {2, 5, 12, 17, 21, 5, 1, 2, 2, 2, 2, 2, 0},
    /* Pointwise convolution (GEMM in place), pooling 3x3 stride 1 pad 1. */
    {1, 8, 24, 13, 11, 1, 1, 0, 3, 3, 1, 1, 1},
    /* Pooling 3x3 stride 2 without padding on an odd map (after a 3x3
     * stride-2 convolution), and 3x2 with strides 3 and 1 (bands sharing
     * no rows) after a 2x2 one. */
    {1, 4, 12, 47, 39, 3, 2, 1, 3, 3, 2, 2, 0},
    {1, 4, 18, 20, 16, 2, 1, 0, 3, 2, 3, 1, 1},
};

static void test_matches_reference(void) {
  static const axle_isa_t isas[] = {AXLE_ISA_SCALAR, AXLE_ISA_AVX2_FMA, AXLE_ISA_AVX512};
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_AVX512);
  for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ++ii) {
    if (isas[ii] > best) continue; /* not on this machine: the lower levels ran */
    axle_kernels_set_isa(isas[ii]);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
      const pool_case_t* t = &k_cases[i];
      pool_fixture_t f;
      fixture_make(t, &f);
      CU_ASSERT_FATAL(axle_f32_conv_rows_supports(&f.plan));
      const int64_t ho = f.pool.out[1];
      for (int64_t band = 1; band <= ho; band = band < 5 ? band + 1 : band * 2)
        for (uint32_t threads = 1; threads <= 3; ++threads) run_case(t, &f, band, threads);
      run_case(t, &f, ho + 7, 2); /* more rows than the image: one band */
      run_case(t, &f, 0, 2);      /* the default band */
      fixture_free(&f);
    }
  }
  axle_kernels_set_isa(best);
}

static void test_supports(void) {
  /* With the 2 MB L2 main() sets: ResNet's stem output (64 x 112 x 112
   * floats, 3.2 MB) pools in bands; a 32-channel 56x56 one (400 KB) does
   * not, nor a pooling over another shape or with dilation. */
  CU_ASSERT_EQUAL(axle_kernels_l2_bytes(), 2097152);
  const pool_case_t stem = {1, 3, 64, 224, 224, 7, 2, 3, 3, 3, 2, 2, 1};
  pool_fixture_t f;
  fixture_make(&stem, &f);
  CU_ASSERT(axle_f32_conv_pool_supports(&f.plan, &f.pool));
  axle_f32_conv_pool_t c;
  pool_of(&f, &c);
  axle_f32_conv_pool_init(&c, 0);
  /* The default band: its convolution rows within a quarter of the L2. */
  CU_ASSERT(c.band >= 1 && c.band <= f.pool.out[1]);
  CU_ASSERT((size_t)(64 * ((c.band - 1) * 2 + 3) * 112) * 4 <= axle_kernels_l2_bytes() / 4);
  CU_ASSERT((size_t)(64 * (c.band * 2 + 3) * 112) * 4 > axle_kernels_l2_bytes() / 4);
  axle_f32_pool_params_t q = f.pool;
  q.dilation[1] = 2;
  CU_ASSERT(!axle_f32_conv_pool_supports(&f.plan, &q));
  q = f.pool;
  q.in[2] = 111;
  CU_ASSERT(!axle_f32_conv_pool_supports(&f.plan, &q));
  q = f.pool;
  q.channels = 32;
  CU_ASSERT(!axle_f32_conv_pool_supports(&f.plan, &q));
  /* Nor a transposed (few-pixel) plan, whose output stays in cache anyway. */
  axle_f32_conv_plan_t bad = f.plan;
  bad.transposed = 1;
  CU_ASSERT(!axle_f32_conv_pool_supports(&bad, &f.pool));
  fixture_free(&f);
  const pool_case_t small = {1, 16, 32, 56, 56, 3, 1, 1, 3, 3, 2, 2, 1};
  fixture_make(&small, &f);
  CU_ASSERT(!axle_f32_conv_pool_supports(&f.plan, &f.pool));
  fixture_free(&f);
  /* Nor an output whose rows are so wide that a quarter of the L2 holds
   * the convolution rows of fewer than 4 pooled rows: 512 channels of 64
   * columns, 128 KB a row, 4 rows (one pooled row) in 512 KB; as ResNet's
   * stem would get on a 512 KB L2. */
  const pool_case_t wide = {1, 8, 512, 64, 64, 1, 1, 0, 3, 3, 2, 2, 1};
  fixture_make(&wide, &f);
  CU_ASSERT(!axle_f32_conv_pool_supports(&f.plan, &f.pool));
  fixture_free(&f);
}

int main(void) {
  /* The rules depend on the L2 size: fix it (before any kernel reads it) so
   * every machine checks the same decisions. */
  setenv("AXLE_KERNELS_L2_BYTES", "2097152", 1);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  static const kt_entry_t tests[] = {
      {"conv + maxpool in bands = reference, every band, 1-3 threads, each ISA",
       test_matches_reference},
      {"which pairs pool in bands, and the band", test_supports},
  };
  if (KT_ADD_SUITE("conv_pool", tests) != 0) return 1;
  return kt_run_all();
}
