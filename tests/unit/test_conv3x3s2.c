/*
 * The direct 3x3 stride-2 convolution of few input channels
 * (conv3x3s2_avx512.c) against the scalar direct convolution with the
 * epilogue by hand: 1-4 input channels; output channels from 1 to past one
 * chunk of 64 (full and partial blocks of 8); widths whose last tile is 32,
 * 16 or fewer pixels wide, odd and even; padding 0, 1 and 2; bands of every
 * height through axle_f32_conv_rows and its own entry point, into rows of a
 * wider buffer whose gaps and tail stay untouched, from an input that ends
 * (and starts) at an inaccessible page; the whole convolution
 * (axle_f32_conv) on 1-3 threads with batch 2; bias, clamp and leaky. Plus
 * which plans it takes.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "kernel_test.h"

/* n floats of src in memory that ends where an inaccessible page begins
 * (one before it too): a read past the input faults instead of passing. */
typedef struct guarded_t {
  void* map;
  size_t map_bytes;
  float* data;
} guarded_t;

static void guarded_make(const float* src, size_t n, guarded_t* g) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t data_pages = (n * sizeof(float) + page - 1) / page;
  g->map_bytes = (data_pages + 2) * page;
  g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CU_ASSERT_FATAL(g->map != MAP_FAILED);
  char* base = g->map;
  CU_ASSERT_FATAL(mprotect(base, page, PROT_NONE) == 0);
  CU_ASSERT_FATAL(mprotect(base + (data_pages + 1) * page, page, PROT_NONE) == 0);
  g->data = (float*)(base + (data_pages + 1) * page) - n;
  memcpy(g->data, src, n * sizeof(float));
}

static void guarded_free(guarded_t* g) { munmap(g->map, g->map_bytes); }

typedef struct s2_case_t {
  int64_t batch, cin, cout, h, w, pad;
} s2_case_t;

typedef struct s2_fixture_t {
  axle_f32_conv_params_t p;
  axle_f32_conv_plan_t plan;
  axle_f32_epilogue_t ep;
  float *w, *b, *packed, *x, *want;
  guarded_t x_mem; /* x lives here */
  size_t out_n;
} s2_fixture_t;

enum { EP_RELU6, EP_LEAKY, EP_NONE };

static void params_of(const s2_case_t* t, axle_f32_conv_params_t* p) {
  kt_conv2d(p, t->batch, t->cin, t->cout, t->h, t->w, 3, 2, t->pad);
}

static void fixture_make(const s2_case_t* t, int epi, s2_fixture_t* f) {
  axle_f32_conv_params_t* p = &f->p;
  params_of(t, p);
  axle_f32_conv_plan(p, &f->plan);
  f->w = kt_array((size_t)(t->cout * t->cin * 9));
  f->b = kt_array((size_t)t->cout);
  f->packed = kt_array(axle_f32_conv_packed_size(&f->plan));
  axle_f32_conv_pack(&f->plan, f->w, f->packed);
  const size_t x_n = (size_t)(t->batch * t->cin * t->h * t->w);
  float* x = kt_array(x_n);
  guarded_make(x, x_n, &f->x_mem);
  free(x);
  f->x = f->x_mem.data;
  f->out_n = (size_t)(t->batch * t->cout * p->out[1] * p->out[2]);
  axle_f32_epilogue_init(&f->ep);
  if (epi != EP_NONE) f->ep.bias = f->b;
  if (epi == EP_RELU6) {
    f->ep.min = 0.0f;
    f->ep.max = 6.0f;
  } else if (epi == EP_LEAKY) {
    f->ep.min = -0.5f;
    f->ep.leaky = 1;
    f->ep.leaky_alpha = 0.1f;
  }
  /* The reference: the convolution with its bias, then clamp and leaky. */
  f->want = kt_array(f->out_n);
  axle_f32_conv_direct_scalar(p, f->x, f->w, epi != EP_NONE ? f->b : NULL, f->want);
  for (size_t i = 0; i < f->out_n; ++i) {
    float v = f->want[i];
    v = v < f->ep.min ? f->ep.min : v > f->ep.max ? f->ep.max : v;
    if (f->ep.leaky && v < 0.0f) v *= f->ep.leaky_alpha;
    f->want[i] = v;
  }
}

static void fixture_free(s2_fixture_t* f) {
  free(f->w);
  free(f->b);
  free(f->packed);
  guarded_free(&f->x_mem);
  free(f->want);
}

static void describe(char* what, size_t n, const char* how, const s2_case_t* t, int epi,
                     int64_t band, uint32_t threads) {
  snprintf(what, n, "%s n%lld %lld->%lld %lldx%lld pad %lld epilogue %d band %lld threads %u", how,
           (long long)t->batch, (long long)t->cin, (long long)t->cout, (long long)t->h,
           (long long)t->w, (long long)t->pad, epi, (long long)band, threads);
}

/* Image 0 in bands of `band` rows, each written at the top of a buffer of
 * its own whose channel rows are `gap` floats longer than the band: the
 * band's values match, the gaps and the tail keep their garbage. `direct`:
 * the kernel's entry point, else axle_f32_conv_rows. */
static void run_bands(const s2_case_t* t, int epi, s2_fixture_t* f, int64_t band, int direct) {
  const axle_f32_conv_params_t* p = &f->p;
  const int64_t oh = p->out[1], ow = p->out[2];
  const size_t gap = 5, stride = (size_t)(band * ow) + gap, guard = 32;
  const size_t n = (size_t)t->cout * stride + guard;
  float* y = kt_array(n);
  float* before = kt_array(n);
  void* scratch = kt_scratch(axle_f32_conv_rows_scratch_size(&f->plan, band));
  char what[200];
  describe(what, sizeof what, direct ? "rows kernel" : "conv rows", t, epi, band, 1);
  int ok = 1;
  for (int64_t r0 = 0; r0 < oh && ok; r0 += band) {
    const int64_t r1 = r0 + band < oh ? r0 + band : oh;
    memcpy(before, y, n * sizeof(float));
    if (direct)
      axle_f32_conv3x3s2_rows_8x32__avx512(&f->plan, f->x, f->packed, &f->ep, r0, r1, y, stride);
    else
      axle_f32_conv_rows(&f->plan, f->x, f->packed, &f->ep, r0, r1, y, stride, scratch);
    const size_t rows_n = (size_t)((r1 - r0) * ow);
    for (int64_t c = 0; c < t->cout && ok; ++c) {
      ok = kt_close(what, y + (size_t)c * stride,
                    f->want + (size_t)(c * oh * ow) + (size_t)(r0 * ow), rows_n, 1e-5, 1e-5);
      ok &= memcmp(y + (size_t)c * stride + rows_n, before + (size_t)c * stride + rows_n,
                   (stride - rows_n) * sizeof(float)) == 0;
    }
    ok &= memcmp(y + (size_t)t->cout * stride, before + (size_t)t->cout * stride,
                 guard * sizeof(float)) == 0;
    CU_ASSERT(ok);
  }
  free(y);
  free(before);
  free(scratch);
}

/* The whole convolution on `threads` threads; nothing written past it. */
static void run_conv(const s2_case_t* t, int epi, s2_fixture_t* f, uint32_t threads) {
  const size_t guard = 32;
  float* y = kt_array(f->out_n + guard);
  float* tail = kt_array(guard);
  memcpy(tail, y + f->out_n, guard * sizeof(float));
  void* scratch = kt_scratch(axle_f32_conv_scratch_size(&f->plan, threads));
  uint32_t tstore;
  axle_parallel_t par;
  axle_f32_conv(&f->plan, f->x, f->packed, &f->ep, y, scratch, kt_parallel(&tstore, &par, threads));
  char what[200];
  describe(what, sizeof what, "conv", t, epi, 0, threads);
  kt_close(what, y, f->want, f->out_n, 1e-5, 1e-5);
  CU_ASSERT(memcmp(tail, y + f->out_n, guard * sizeof(float)) == 0);
  free(y);
  free(tail);
  free(scratch);
}

static const s2_case_t k_cases[] = {
    /* MobileNetV2's stem, smaller: 3 -> 32, 112 wide (tiles of 32, 32,
     * 32, 16... at 56 outputs: 32 + 24), padding 1. */
    {1, 3, 32, 36, 112, 1},
    /* Odd sizes: last tiles of 19 and 5 pixels; 70 channels (a chunk of 64
     * and 6 more, a partial block of 8). */
    {2, 3, 70, 21, 101, 1},
    {1, 4, 13, 17, 9, 1},
    /* One input channel, no padding (the last column read is the row's
     * last), and padding 2. */
    {1, 1, 8, 15, 66, 0},
    {2, 2, 17, 12, 63, 2},
    /* Tiles of 16 whose loads end one float before the row's end, with and
     * without padding: the input ends at an inaccessible page. */
    {1, 3, 24, 9, 94, 1},
    {1, 3, 9, 7, 95, 0},
    /* One output row (fewer channels than a block). */
    {1, 3, 5, 3, 40, 0},
};

static void test_matches_reference(void) {
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_AVX512);
  if (best < AXLE_ISA_AVX512) {
    kt_skip("no AVX-512 on this machine: the kernel never runs here");
    return;
  }
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
    const s2_case_t* t = &k_cases[i];
    for (int epi = EP_RELU6; epi <= EP_NONE; ++epi) {
      s2_fixture_t f;
      fixture_make(t, epi, &f);
      CU_ASSERT_FATAL(axle_f32_conv3x3s2_supports(&f.plan, &f.ep));
      const int64_t oh = f.p.out[1];
      for (int64_t band = 1; band <= oh; band = band < 4 ? band + 1 : band * 2) {
        run_bands(t, epi, &f, band, 1);
        run_bands(t, epi, &f, band, 0);
      }
      run_bands(t, epi, &f, oh, 1);
      for (uint32_t threads = 1; threads <= 3; ++threads) run_conv(t, epi, &f, threads);
      fixture_free(&f);
    }
  }
  axle_kernels_set_isa(best);
}

static void test_supports(void) {
  const s2_case_t stem = {1, 3, 32, 224, 224, 1};
  s2_fixture_t f;
  fixture_make(&stem, EP_RELU6, &f);
  CU_ASSERT(axle_f32_conv3x3s2_supports(&f.plan, &f.ep));
  CU_ASSERT(axle_f32_conv3x3s2_supports(&f.plan, NULL));
  /* No residual in its epilogue. */
  axle_f32_epilogue_t ep = f.ep;
  ep.residual = f.x;
  CU_ASSERT(!axle_f32_conv3x3s2_supports(&f.plan, &ep));
  /* Nor a transposed plan, another stride, dilation or kernel, padding
   * past 2, or groups. */
  axle_f32_conv_plan_t bad[5];
  for (int i = 0; i < 5; ++i) bad[i] = f.plan;
  bad[0].transposed = 1;
  bad[1].p.stride[2] = 1;
  bad[2].p.dilation[1] = 2;
  bad[3].p.kernel[2] = 5;
  bad[4].p.pad[2] = 3;
  for (int i = 0; i < 5; ++i) CU_ASSERT(!axle_f32_conv3x3s2_supports(&bad[i], &f.ep));
  fixture_free(&f);
  /* Nor more than 4 input channels (K past one block of its repacking),
   * nor a pointwise plan. */
  const s2_case_t wide = {1, 5, 32, 56, 56, 1};
  fixture_make(&wide, EP_RELU6, &f);
  CU_ASSERT(!axle_f32_conv3x3s2_supports(&f.plan, &f.ep));
  fixture_free(&f);
  axle_f32_conv_params_t p;
  kt_conv2d(&p, 1, 3, 32, 224, 224, 1, 1, 0);
  axle_f32_conv_plan_t point;
  axle_f32_conv_plan(&p, &point);
  CU_ASSERT(!axle_f32_conv3x3s2_supports(&point, NULL));
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  static const kt_entry_t tests[] = {
      {"matches the scalar direct convolution", test_matches_reference},
      {"supported plans", test_supports},
  };
  if (KT_ADD_SUITE("conv3x3s2", tests) != 0) return 1;
  return kt_run_all();
}
