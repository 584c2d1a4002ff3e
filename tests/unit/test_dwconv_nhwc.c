/*
 * Depthwise convolution over channels-last images (axle_f32_dwconv_nhwc_*):
 * the scalar reference against the NCHW direct convolution on the same
 * data transposed (any 2-D window: 5x5, dilation, stride 3, uneven
 * padding); the AVX2 and AVX-512 3x3 variants against the reference on
 * every width 1..20 and a few wider rows, channel counts around the vector
 * widths, stride 1 and 2, paddings even, uneven and different for rows and
 * columns, every epilogue, sub-ranges of rows and channels (the rest of the
 * output untouched), inputs fenced with NaN so that a tap read outside the
 * image shows, and one NaN inside that must reach exactly the outputs whose
 * window holds it; and which variant the dispatch picks.
 */

#include "kernel_test.h"

/* act: 0 none, 1 relu, 2 clamp [0, 0.25], 3 leaky 0.1; bias or none. */
static void nhwc_ep(int bias_on, int act, const float* bias, axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_init(ep);
  ep->bias = bias_on ? bias : NULL;
  if (act == 1) ep->min = 0.0f;
  if (act == 2) {
    ep->min = 0.0f;
    ep->max = 0.25f; /* tight, so that both bounds bite */
  }
  if (act == 3) {
    ep->leaky = 1;
    ep->leaky_alpha = 0.1f;
  }
}

/* 2-D depthwise parameters: channels c, input h x w, kernel kh x kw,
 * stride s, dilation d, padding (top, left, bottom, right). */
static void nhwc_params(int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t s,
                        int64_t d, const int64_t pad[4], axle_f32_conv_params_t* p) {
  memset(p, 0, sizeof *p);
  p->batch = 1;
  p->groups = p->in_channels = p->out_channels = c;
  p->in[0] = p->out[0] = p->kernel[0] = p->stride[0] = p->dilation[0] = 1;
  p->in[1] = h;
  p->in[2] = w;
  p->kernel[1] = kh;
  p->kernel[2] = kw;
  p->stride[1] = p->stride[2] = s;
  p->dilation[1] = p->dilation[2] = d;
  p->pad[1] = pad[0];
  p->pad[2] = pad[1];
  p->out[1] = (h + pad[0] + pad[2] - d * (kh - 1) - 1) / s + 1;
  p->out[2] = (w + pad[1] + pad[3] - d * (kw - 1) - 1) / s + 1;
}

static void test_reference_matches_direct(void) {
  /* The reference against axle_f32_conv_direct_scalar on NCHW copies; the
   * epilogue applied by hand to the direct result. */
  static const struct {
    int64_t c, h, w, kh, kw, s, d, pad[4];
  } cases[] = {
      {3, 7, 9, 3, 3, 1, 1, {1, 1, 1, 1}},   {5, 8, 6, 3, 3, 2, 1, {0, 1, 1, 0}},
      {4, 9, 11, 5, 5, 1, 1, {2, 2, 2, 2}},  {2, 10, 7, 3, 3, 1, 2, {2, 0, 1, 2}},
      {6, 11, 12, 3, 5, 3, 1, {1, 2, 0, 1}}, {1, 1, 1, 3, 3, 1, 1, {1, 1, 1, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    axle_f32_conv_params_t p;
    nhwc_params(cases[i].c, cases[i].h, cases[i].w, cases[i].kh, cases[i].kw, cases[i].s,
                cases[i].d, cases[i].pad, &p);
    const int64_t c = p.in_channels, taps = p.kernel[1] * p.kernel[2];
    const size_t in_px = (size_t)(p.in[1] * p.in[2]), out_px = (size_t)(p.out[1] * p.out[2]);
    float* x = kt_array(in_px * (size_t)c);
    float* w = kt_array((size_t)(taps * c)); /* tap-major */
    float* bias = kt_array((size_t)c);
    float* x_nchw = kt_array(in_px * (size_t)c);
    float* w_nchw = kt_array((size_t)(taps * c));
    float* want = kt_array(out_px * (size_t)c);
    float* got = kt_array(out_px * (size_t)c);
    for (int64_t ch = 0; ch < c; ++ch) {
      for (size_t q = 0; q < in_px; ++q) x_nchw[(size_t)ch * in_px + q] = x[q * (size_t)c + ch];
      for (int64_t t = 0; t < taps; ++t) w_nchw[ch * taps + t] = w[t * c + ch];
    }
    axle_f32_conv_direct_scalar(&p, x_nchw, w_nchw, bias, want);
    axle_f32_epilogue_t ep;
    nhwc_ep(1, 2, bias, &ep);
    /* want is NCHW; clamp it and compare element by element. */
    axle_f32_dwconv_nhwc__scalar(&p, x, c, w, &ep, 0, p.out[1], 0, c, c, 16, got);
    /* The same in blocks of 16 channels (y_pixel 16), blocks apart by more
     * than their pixels: every value where the layout puts it. */
    const int64_t y_block = 16 * (int64_t)out_px + 32;
    float* blocked = kt_array((size_t)((c + 15) / 16 * y_block));
    axle_f32_dwconv_nhwc__scalar(&p, x, c, w, &ep, 0, p.out[1], 0, c, 16, y_block, blocked);
    int ok = 1;
    for (int64_t ch = 0; ch < c && ok; ++ch)
      for (size_t q = 0; q < out_px && ok; ++q)
        ok = blocked[ch / 16 * y_block + (int64_t)q * 16 + ch % 16] ==
             got[q * (size_t)c + (size_t)ch];
    CU_ASSERT(ok);
    free(blocked);
    for (int64_t ch = 0; ch < c && ok; ++ch)
      for (size_t q = 0; q < out_px && ok; ++q) {
        float v = want[(size_t)ch * out_px + q];
        v = v < 0.0f ? 0.0f : v > 0.25f ? 0.25f : v;
        const float g = got[q * (size_t)c + (size_t)ch];
        if (fabsf(g - v) > 1e-6f) {
          fprintf(stderr, "\ncase %zu channel %lld pixel %zu: got %.9g want %.9g\n", i,
                  (long long)ch, q, (double)g, (double)v);
          ok = 0;
        }
      }
    CU_ASSERT(ok);
    free(x);
    free(w);
    free(bias);
    free(x_nchw);
    free(w_nchw);
    free(want);
    free(got);
  }
}

/* Floats of NaN fence on each side of the input: more than a row of the
 * widest case, the furthest a tap outside the image could reach. */
#define FENCE 4096

/* One variant on p, rows [oy0, oy1) and channels [c0, c1), against the
 * reference; every epilogue; nan: one input is NaN. Returns 1 when all
 * agree and nothing outside the range was written. */
/* blocked: y in blocks of 16 channels (y_pixel 16, y_block past the
 * block's pixels), else laid out like x; and the variant reads channels
 * [c0, c1) from a buffer of their own (x_pixel c1 - c0), as the
 * channels-last chain's parts do. */
static int variant_case(axle_f32_dwconv_nhwc_fn fn, const char* name,
                        const axle_f32_conv_params_t* p, int64_t oy0, int64_t oy1, int64_t c0,
                        int64_t c1, int nan, int blocked) {
  const int64_t c = p->in_channels, out_px = p->out[1] * p->out[2];
  const int64_t y_pixel = blocked ? 16 : c, y_block = blocked ? 16 * out_px + 48 : 16;
  const size_t in_n = (size_t)(p->in[1] * p->in[2] * c);
  const size_t out_n = (size_t)(blocked ? (c + 15) / 16 * y_block : out_px * c);
  float* fenced = kt_array(in_n + 2 * FENCE);
  for (size_t i = 0; i < FENCE; ++i) fenced[i] = fenced[FENCE + in_n + i] = NAN;
  float* x = fenced + FENCE;
  if (nan) x[in_n / 2] = NAN;
  const int64_t in_px = p->in[1] * p->in[2], width = c1 - c0;
  float* part = kt_array((size_t)(in_px * width));
  for (int64_t q = 0; q < in_px; ++q)
    for (int64_t ch = 0; ch < width; ++ch) part[q * width + ch] = x[q * c + c0 + ch];
  float* w = kt_array((size_t)(9 * c));
  float* bias = kt_array((size_t)c);
  /* + 16: a masked store one vector too long shows past the end. */
  float* want = kt_array(out_n + 16);
  float* got = kt_array(out_n + 16);
  int ok = 1;
  for (int e = 0; e < 5 && ok; ++e) {
    memcpy(got, want, (out_n + 16) * sizeof(float));
    axle_f32_epilogue_t ep;
    nhwc_ep(e != 0, e == 4 ? 3 : e, bias, &ep);
    axle_f32_dwconv_nhwc__scalar(p, x, c, w, &ep, oy0, oy1, c0, c1, y_pixel, y_block, want);
    if (blocked)
      fn(p, part - c0, width, w, &ep, oy0, oy1, c0, c1, y_pixel, y_block, got);
    else
      fn(p, x, c, w, &ep, oy0, oy1, c0, c1, y_pixel, y_block, got);
    ok = kt_close(name, got, want, out_n + 16, 1e-5, 1e-6);
    if (!ok)
      fprintf(stderr,
              "%lldx%lld x %lld channels, stride %lld, pad %lld,%lld, rows [%lld,%lld) "
              "channels [%lld,%lld), epilogue %d, nan %d, blocked %d\n",
              (long long)p->in[1], (long long)p->in[2], (long long)c, (long long)p->stride[1],
              (long long)p->pad[1], (long long)p->pad[2], (long long)oy0, (long long)oy1,
              (long long)c0, (long long)c1, e, nan, blocked);
  }
  free(fenced);
  free(part);
  free(w);
  free(bias);
  free(want);
  free(got);
  return ok;
}

typedef struct nhwc_variant_t {
  axle_isa_t isa;
  axle_f32_dwconv_nhwc_fn fn;
  const char* name;
} nhwc_variant_t;

static const nhwc_variant_t k_variants[] = {
    {AXLE_ISA_AVX2_FMA, axle_f32_dwconv_nhwc_3x3__avx2_fma, "dwconv nhwc 3x3 avx2 vs scalar"},
    {AXLE_ISA_AVX512, axle_f32_dwconv_nhwc_3x3__avx512, "dwconv nhwc 3x3 avx512 vs scalar"},
};

static void test_variants(void) {
  const axle_isa_t best = axle_kernels_isa();
  static const int64_t widths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                   13, 14, 15, 16, 17, 18, 19, 20, 28, 31, 33, 56};
  static const int64_t channels[] = {1, 5, 8, 15, 16, 17, 40};
  static const int64_t pads[][4] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 1, 2, 1},
                                    {2, 2, 0, 0}, {1, 0, 1, 2}, {2, 2, 2, 2}};
  for (size_t v = 0; v < sizeof k_variants / sizeof k_variants[0]; ++v) {
    if (k_variants[v].isa > best) {
      kt_skip(k_variants[v].name);
      continue;
    }
    size_t ran = 0;
    int ok = 1;
    for (int64_t s = 1; s <= 2 && ok; ++s)
      for (size_t pi = 0; pi < sizeof pads / sizeof pads[0] && ok; ++pi)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0] && ok; ++wi)
          for (size_t ci = 0; ci < sizeof channels / sizeof channels[0] && ok; ++ci) {
            const int64_t w = widths[wi], h = 1 + (w * 7 + (int64_t)pi) % 9;
            if (h + pads[pi][0] + pads[pi][2] < 3 || w + pads[pi][1] + pads[pi][3] < 3) continue;
            axle_f32_conv_params_t p;
            nhwc_params(channels[ci], h, w, 3, 3, s, 1, pads[pi], &p);
            const int64_t c = p.in_channels, ho = p.out[1];
            ok = variant_case(k_variants[v].fn, k_variants[v].name, &p, 0, ho, 0, c, (int)(wi & 1),
                              0);
            if (ok)
              ok = variant_case(k_variants[v].fn, k_variants[v].name, &p, 0, ho, 0, c,
                                (int)(wi & 1), 1);
            /* A band of rows and channels inside, as a thread takes (from a
             * block's first channel when blocked). */
            if (ok && ho > 2 && c > 4)
              ok =
                  variant_case(k_variants[v].fn, k_variants[v].name, &p, 1, ho - 1, 3, c - 1, 0, 0);
            if (ok && ho > 2 && c > 16)
              ok = variant_case(k_variants[v].fn, k_variants[v].name, &p, 1, ho - 1, 16, c - 1, 0,
                                1);
            ++ran;
          }
    /* MobileNetV2's maps, several vectors of channels. */
    static const int64_t mobilenet[][3] = {{14, 384, 1}, {7, 960, 1}, {14, 576, 2}, {28, 192, 2}};
    for (size_t i = 0; i < sizeof mobilenet / sizeof mobilenet[0] && ok; ++i) {
      axle_f32_conv_params_t p;
      static const int64_t one[4] = {1, 1, 1, 1};
      nhwc_params(mobilenet[i][1], mobilenet[i][0], mobilenet[i][0], 3, 3, mobilenet[i][2], 1, one,
                  &p);
      for (int blocked = 0; blocked < 2 && ok; ++blocked)
        ok = variant_case(k_variants[v].fn, k_variants[v].name, &p, 0, p.out[1], 0, p.in_channels,
                          1, blocked);
    }
    /* The shape loops were not cut short by the padding rule. */
    if (ok) CU_ASSERT(ran > 1800);
  }
}

static void test_dispatch(void) {
  static const int64_t one[4] = {1, 1, 1, 1};
  axle_f32_conv_params_t p;
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  nhwc_params(16, 14, 14, 3, 3, 1, 1, one, &p);
  CU_ASSERT(axle_f32_dwconv_nhwc_supports(&p));
  CU_ASSERT(axle_f32_dwconv_nhwc_kernel(&p) == axle_f32_dwconv_nhwc__scalar);
  for (size_t v = 0; v < sizeof k_variants / sizeof k_variants[0]; ++v) {
    if (k_variants[v].isa > best) continue;
    axle_kernels_set_isa(k_variants[v].isa);
    for (int64_t s = 1; s <= 2; ++s) {
      nhwc_params(16, 14, 14, 3, 3, s, 1, one, &p);
      CU_ASSERT(axle_f32_dwconv_nhwc_kernel(&p) == k_variants[v].fn);
    }
    /* Stride 3, a 5x5 window, dilation 2: the reference. */
    nhwc_params(16, 14, 14, 3, 3, 3, 1, one, &p);
    CU_ASSERT(axle_f32_dwconv_nhwc_kernel(&p) == axle_f32_dwconv_nhwc__scalar);
    nhwc_params(16, 14, 14, 5, 5, 1, 1, one, &p);
    CU_ASSERT(axle_f32_dwconv_nhwc_kernel(&p) == axle_f32_dwconv_nhwc__scalar);
    nhwc_params(16, 14, 14, 3, 3, 1, 2, one, &p);
    CU_ASSERT(axle_f32_dwconv_nhwc_kernel(&p) == axle_f32_dwconv_nhwc__scalar);
  }
  axle_kernels_set_isa(best);
  /* Not depthwise with multiplier 1, or 3-D: refused. */
  nhwc_params(16, 14, 14, 3, 3, 1, 1, one, &p);
  p.out_channels = 32;
  CU_ASSERT(!axle_f32_dwconv_nhwc_supports(&p));
  nhwc_params(16, 14, 14, 3, 3, 1, 1, one, &p);
  p.in[0] = p.out[0] = 2;
  CU_ASSERT(!axle_f32_dwconv_nhwc_supports(&p));
}

int main(void) {
  static const kt_entry_t tests[] = {
      {"nhwc reference = NCHW direct convolution", test_reference_matches_direct},
      {"nhwc 3x3 avx2 / avx512 = reference, edges and ranges", test_variants},
      {"nhwc dispatch", test_dispatch},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("f32 depthwise channels-last", tests)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
