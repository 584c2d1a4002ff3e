/*
 * Tests of the multi-plane AVX-512 depthwise kernel
 * (axle_f32_dwconv_planes_3x3__avx512) against the scalar plane kernel:
 * every plane from 1x1 to 20x20 (and a few wider ones) the kernel takes,
 * stride 1 and 2, even and uneven padding, every epilogue, several planes
 * per call; inputs fenced with NaN so that a tap read outside its plane
 * shows; the prepared convolution's depthwise dispatch (runs of planes
 * split at image boundaries, on real threads); and runs of strided planes
 * (axle_f32_dwconv_plane_run, the band chains' call) against the plane
 * kernel they stand for.
 */

#include "kernel_test.h"

typedef struct dw_ep_t {
  int bias, residual, act; /* act: 0 none, 1 relu, 2 clamp [0, 0.25], 3 leaky */
} dw_ep_t;

static const dw_ep_t k_dw_eps[] = {{0, 0, 0}, {1, 0, 1}, {1, 1, 0}, {0, 1, 2}, {1, 1, 3}};

static void dw_make_ep(const dw_ep_t* e, const float* bias, const float* res,
                       axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_init(ep);
  ep->bias = e->bias ? bias : NULL;
  ep->residual = e->residual ? res : NULL;
  if (e->act == 1) ep->min = 0.0f;
  if (e->act == 2) {
    ep->min = 0.0f;
    ep->max = 0.25f; /* tight, so that both bounds bite */
  }
  if (e->act == 3) {
    ep->leaky = 1;
    ep->leaky_alpha = 0.1f;
  }
}

static int have_avx512(void) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX512) return 1;
  fprintf(stderr, "\n  skipped: no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)\n");
  CU_PASS("skipped: no AVX-512");
  return 0;
}

/* Rows padded unlike the columns (dw_params pads both alike). */
static void dw_pad_rows(axle_f32_conv_params_t* p, int64_t pad_begin, int64_t pad_end) {
  p->pad[1] = pad_begin;
  p->out[1] = (p->in[1] + pad_begin + pad_end - 3) / p->stride[1] + 1;
}

static void dw_params(int64_t channels, int64_t batch, int64_t h, int64_t w, int64_t s,
                      int64_t pad_begin, int64_t pad_end, axle_f32_conv_params_t* p) {
  memset(p, 0, sizeof *p);
  p->batch = batch;
  p->groups = p->in_channels = p->out_channels = channels;
  p->in[0] = p->out[0] = p->kernel[0] = p->stride[0] = 1;
  p->in[1] = h;
  p->in[2] = w;
  p->out[1] = (h + pad_begin + pad_end - 3) / s + 1;
  p->out[2] = (w + pad_begin + pad_end - 3) / s + 1;
  p->kernel[1] = p->kernel[2] = 3;
  p->stride[1] = p->stride[2] = s;
  p->dilation[0] = p->dilation[1] = p->dilation[2] = 1;
  p->pad[1] = p->pad[2] = pad_begin;
}

/* Floats of NaN fence on each side of the input planes: more than a row
 * and a vector, the furthest any tap of these planes reaches. */
#define FENCE 128

/* `planes` planes of p through the AVX-512 kernel against the scalar plane
 * kernel, every epilogue; nan: one input is NaN, which must reach exactly
 * the outputs whose window holds it. */
static void planes_check(const axle_f32_conv_params_t* p, size_t planes, int nan) {
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  const size_t in_n = planes * in_vol, out_n = planes * out_vol;
  for (size_t e = 0; e < sizeof k_dw_eps / sizeof k_dw_eps[0]; ++e) {
    float* fenced = kt_array(in_n + 2 * FENCE);
    for (size_t i = 0; i < FENCE; ++i) fenced[i] = fenced[FENCE + in_n + i] = NAN;
    float* x = fenced + FENCE;
    if (nan) x[in_n * 2 / 3] = NAN;
    float* w = kt_array(9 * planes);
    float* bias = kt_array(planes);
    float* res = kt_array(out_n);
    /* + 16: the last vector's masked store must not write past the planes. */
    float* want = kt_array(out_n + 16);
    float* got = kt_array(out_n + 16);
    memcpy(got, want, (out_n + 16) * sizeof(float));
    axle_f32_epilogue_t ep;
    dw_make_ep(&k_dw_eps[e], bias, res, &ep);
    for (size_t i = 0; i < planes; ++i)
      axle_f32_dwconv_plane__scalar(p, x + i * in_vol, w + 9 * i, ep.bias ? bias[i] : 0.0f,
                                    ep.residual ? res + i * out_vol : NULL, &ep,
                                    want + i * out_vol);
    axle_f32_dwconv_planes_3x3__avx512(p, planes, x, w, ep.bias, ep.residual, &ep, got);
    if (!kt_close("dwconv planes 3x3 avx512 vs scalar", got, want, out_n + 16, 1e-6, 1e-6))
      fprintf(stderr,
              "plane %lldx%lld stride %lld pad %lld out %lldx%lld planes %zu ep %zu nan %d\n",
              (long long)p->in[1], (long long)p->in[2], (long long)p->stride[2],
              (long long)p->pad[2], (long long)p->out[1], (long long)p->out[2], planes, e, nan);
    free(fenced);
    free(w);
    free(bias);
    free(res);
    free(want);
    free(got);
  }
}

static void test_supports(void) {
  /* The MobileNetV2 planes this kernel is for, and some it must refuse. */
  static const int64_t taken[][3] = {{7, 7, 1},  {14, 14, 1}, {28, 28, 1},
                                     {56, 56, 1}, {14, 14, 2}, {28, 28, 2}, {56, 56, 2}};
  for (size_t i = 0; i < sizeof taken / sizeof taken[0]; ++i) {
    axle_f32_conv_params_t p;
    dw_params(1, 1, taken[i][0], taken[i][1], taken[i][2], 1, 1, &p);
    CU_ASSERT(axle_f32_dwconv_planes_3x3__avx512_supports(&p));
  }
  axle_f32_conv_params_t p;
  dw_params(1, 1, 112, 112, 1, 1, 1, &p); /* more outputs than the mask table holds */
  CU_ASSERT(!axle_f32_dwconv_planes_3x3__avx512_supports(&p));
  dw_params(1, 1, 20, 20, 1, 0, 0, &p); /* stride 1 narrower than the input */
  CU_ASSERT(!axle_f32_dwconv_planes_3x3__avx512_supports(&p));
  dw_params(1, 1, 20, 20, 2, 0, 1, &p); /* stride 2, 10 wide, left padding 0 */
  CU_ASSERT(!axle_f32_dwconv_planes_3x3__avx512_supports(&p));
  dw_params(1, 1, 8, 8, 1, 1, 1, &p);
  p.dilation[2] = 2;
  CU_ASSERT(!axle_f32_dwconv_planes_3x3__avx512_supports(&p));
}

static void test_planes(void) {
  /* Every plane 1..20 and the widths around two and four vectors' worth of
   * stride-2 input, stride 1 and 2, paddings even, uneven, wider than the
   * kernel and different for rows and columns, one plane and five per
   * call, with and without a NaN. */
  if (!have_avx512()) return;
  static const int64_t widths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                                   15, 16, 17, 18, 19, 20, 31, 32, 33, 63, 64, 65};
  static const int64_t pads[][2] = {{1, 1}, {2, 0}, {0, 2}, {1, 0}, {2, 2}, {1, 2}, {2, 1}};
  static const int64_t row_pads[][2] = {{-1, -1}, {0, 2}, {2, 1}}; /* -1: as the columns */
  size_t checked = 0;
  for (int64_t s = 1; s <= 2; ++s)
    for (size_t pi = 0; pi < sizeof pads / sizeof pads[0]; ++pi)
      for (size_t ri = 0; ri < sizeof row_pads / sizeof row_pads[0]; ++ri)
        for (int64_t h = 1; h <= 20; ++h)
          for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
            const int64_t pb = pads[pi][0], pe = pads[pi][1], w = widths[wi];
            const int64_t rb = ri ? row_pads[ri][0] : pb, re = ri ? row_pads[ri][1] : pe;
            if (h + rb + re < 3 || w + pb + pe < 3) continue;
            axle_f32_conv_params_t p;
            dw_params(1, 1, h, w, s, pb, pe, &p);
            dw_pad_rows(&p, rb, re);
            if (!axle_f32_dwconv_planes_3x3__avx512_supports(&p)) continue;
            for (int nan = 0; nan <= 1; ++nan) planes_check(&p, 1 + 4 * (size_t)nan, nan);
            ++checked;
          }
  /* Both strides and both stride-2 schemes (rows up to 8 wide, and the
   * split into quarters) were reached. */
  CU_ASSERT(checked > 3000);
}

static void test_mobilenet_planes(void) {
  /* The MobileNetV2 planes themselves, several per call. */
  if (!have_avx512()) return;
  static const int64_t shapes[][2] = {{7, 1}, {14, 1}, {28, 1}, {56, 1},
                                      {14, 2}, {28, 2}, {56, 2}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
    axle_f32_conv_params_t p;
    dw_params(1, 1, shapes[i][0], shapes[i][0], shapes[i][1], 1, 1, &p);
    planes_check(&p, 3, 0);
  }
}

/* A run of planes `x_gap` floats apart in x and `y_gap` in y
 * (axle_f32_dwconv_plane_run) against the plane kernel of p called plane
 * by plane (the same bits) and the scalar plane kernel; the gaps hold NaN
 * in x (a tap reading outside its plane shows) and a pattern in y that
 * must stay. Every epilogue without a residual, with and without bias. */
static void plane_run_check(const axle_f32_conv_params_t* p, size_t planes, size_t x_gap,
                            size_t y_gap) {
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  const size_t x_stride = in_vol + x_gap, y_stride = out_vol + y_gap;
  const size_t x_n = planes * x_stride + FENCE, y_n = planes * y_stride + 16;
  static const dw_ep_t eps[] = {{0, 0, 0}, {1, 0, 1}, {1, 0, 2}, {0, 0, 3}};
  const axle_f32_dwconv_plane_fn plane = axle_f32_dwconv_plane_kernel(p);
  for (size_t e = 0; e < sizeof eps / sizeof eps[0]; ++e) {
    float* fenced = kt_array(x_n + FENCE);
    float* x = fenced + FENCE;
    for (size_t i = 0; i < FENCE; ++i) fenced[i] = x[planes * x_stride + i] = NAN;
    for (size_t i = 0; i < planes; ++i)
      for (size_t j = in_vol; j < x_stride; ++j) x[i * x_stride + j] = NAN;
    float* w = kt_array(9 * planes);
    float* bias = kt_array(planes);
    float* want = kt_array(y_n);
    float* ref = kt_array(y_n);
    float* got = kt_array(y_n);
    memcpy(ref, want, y_n * sizeof(float));
    memcpy(got, want, y_n * sizeof(float));
    axle_f32_epilogue_t ep;
    dw_make_ep(&eps[e], bias, NULL, &ep);
    for (size_t i = 0; i < planes; ++i) {
      const float b = ep.bias ? bias[i] : 0.0f;
      plane(p, x + i * x_stride, w + 9 * i, b, NULL, &ep, want + i * y_stride);
      axle_f32_dwconv_plane__scalar(p, x + i * x_stride, w + 9 * i, b, NULL, &ep,
                                    ref + i * y_stride);
    }
    axle_f32_dwconv_plane_run(p, planes, x, x_stride, w, ep.bias, &ep, got, y_stride);
    const int same = kt_close("dwconv plane run vs its plane kernel", got, want, y_n, 0.0, 0.0);
    const int close = kt_close("dwconv plane run vs scalar", got, ref, y_n, 1e-6, 1e-6);
    if (!same || !close)
      fprintf(stderr,
              "plane %lldx%lld stride %lld pad %lld/%lld out %lldx%lld planes %zu ep %zu isa %d\n",
              (long long)p->in[1], (long long)p->in[2], (long long)p->stride[2],
              (long long)p->pad[1], (long long)p->pad[2], (long long)p->out[1],
              (long long)p->out[2], planes, e, (int)axle_kernels_isa());
    free(fenced);
    free(w);
    free(bias);
    free(want);
    free(ref);
    free(got);
  }
}

static void test_plane_run(void) {
  /* At every level this machine has (the AVX-512 and AVX2 run kernels,
   * and at the scalar level the plane kernel plane by plane). The band
   * chains' planes: rows of 56, 112 and
   * 28, a few of them, padded at the top (the image's first band), at the
   * bottom (its last) or not at all; then planes the slides do not take. */
  static const struct {
    int64_t h, w, s, pad_top, pad_bottom;
  } shapes[] = {{10, 56, 1, 0, 0}, {9, 56, 1, 1, 0},   {9, 56, 1, 0, 1},   {18, 112, 1, 0, 0},
                {4, 56, 1, 1, 1},  {17, 112, 2, 0, 0}, {16, 112, 2, 1, 0}, {17, 56, 2, 0, 0},
                {9, 28, 2, 0, 0},  {4, 28, 2, 1, 1},   {7, 7, 1, 1, 1},    {14, 14, 2, 1, 1},
                {5, 9, 1, 1, 1},   {12, 12, 2, 0, 1}};
  static const axle_isa_t isas[] = {AXLE_ISA_SCALAR, AXLE_ISA_AVX2_FMA, AXLE_ISA_AVX512};
  const axle_isa_t best = axle_kernels_set_isa(AXLE_ISA_AVX512);
  for (size_t l = 0; l < sizeof isas / sizeof isas[0]; ++l) {
    if (isas[l] > best) continue; /* not on this machine: the lower levels ran */
    axle_kernels_set_isa(isas[l]);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
      axle_f32_conv_params_t p;
      dw_params(1, 1, shapes[i].h, shapes[i].w, shapes[i].s, 1, 1, &p);
      dw_pad_rows(&p, shapes[i].pad_top, shapes[i].pad_bottom);
      plane_run_check(&p, 1, 0, 0);
      plane_run_check(&p, 5, 16, 3);
    }
  }
  axle_kernels_set_isa(best);
}

/* The prepared convolution on a depthwise layer: batch 3 of 5 channels,
 * so that a thread's run of planes crosses images, against the scalar
 * plane kernel per plane. */
static void dispatch_case(int64_t h, int64_t s, uint32_t threads) {
  axle_f32_conv_params_t p;
  dw_params(5, 3, h, h, s, 1, 1, &p);
  const size_t planes = 15, in_vol = (size_t)(h * h), out_vol = (size_t)(p.out[1] * p.out[2]);
  axle_f32_conv_plan_t plan;
  axle_f32_conv_plan(&p, &plan);
  CU_ASSERT_EQUAL(plan.algo, AXLE_F32_CONV_DEPTHWISE);
  float* x = kt_array(planes * in_vol);
  float* w = kt_array(5 * 9);
  float* bias = kt_array(5);
  float* res = kt_array(planes * out_vol);
  float* packed = kt_array(axle_f32_conv_packed_size(&plan));
  axle_f32_conv_pack(&plan, w, packed);
  float* want = kt_array(planes * out_vol);
  float* got = kt_array(planes * out_vol);
  axle_f32_epilogue_t ep;
  dw_make_ep(&k_dw_eps[4], bias, res, &ep);
  for (size_t i = 0; i < planes; ++i)
    axle_f32_dwconv_plane__scalar(&p, x + i * in_vol, w + 9 * (i % 5), bias[i % 5],
                                  res + i * out_vol, &ep, want + i * out_vol);
  uint32_t storage;
  axle_parallel_t par;
  axle_f32_conv(&plan, x, packed, &ep, got, NULL, kt_parallel(&storage, &par, threads));
  if (!kt_close("depthwise conv dispatch vs scalar planes", got, want, planes * out_vol, 1e-6,
                1e-6))
    fprintf(stderr, "plane %lldx%lld stride %lld threads %u\n", (long long)h, (long long)h,
            (long long)s, threads);
  free(x);
  free(w);
  free(bias);
  free(res);
  free(packed);
  free(want);
  free(got);
}

static void test_dispatch(void) {
  /* Runs on any machine: without AVX-512 the per-plane kernels take it. */
  static const int64_t shapes[][2] = {{7, 1}, {14, 1}, {14, 2}, {28, 2}, {9, 2}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
    for (uint32_t threads = 1; threads <= 3; ++threads)
      dispatch_case(shapes[i][0], shapes[i][1], threads);
}

int main(void) {
  static const kt_entry_t tests[] = {
      {"planes 3x3 avx512: the planes it takes", test_supports},
      {"planes 3x3 avx512 = scalar, planes 1..20 x 1..65", test_planes},
      {"planes 3x3 avx512 = scalar, MobileNetV2 planes", test_mobilenet_planes},
      {"depthwise conv dispatch = scalar planes, threads", test_dispatch},
      {"plane run = its plane kernel plane by plane", test_plane_run},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("f32 depthwise", tests)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
