/*
 * Unit tests of the scalar fp32 kernels (kernels/f32) against naive
 * references written here in double precision. Shapes favour edges: 1x1,
 * odd sizes, groups, depthwise, dilation, asymmetric padding, ceil_mode.
 * One CUnit suite per kernel source file.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static uint32_t g_seed = 12345u;

/* Deterministic values in [-1, 1): failures reproduce exactly. */
static float frand(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)((g_seed >> 8) & 0xffffff) / (float)0x800000 - 1.0f;
}

static float* frand_array(size_t n) {
  float* p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = frand();
  return p;
}

static float* fill_array(size_t n, float v) {
  float* p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = v;
  return p;
}

/* Asserts |got - want| <= atol + rtol*|want| everywhere; reports the first
 * offender so a failure says where. */
static void expect_close(const char* what, const float* got, const double* want, size_t n,
                         double rtol, double atol) {
  for (size_t i = 0; i < n; ++i) {
    const double err = fabs((double)got[i] - want[i]);
    if (!(err <= atol + rtol * fabs(want[i]))) {
      fprintf(stderr, "\n%s: element %zu: got %.9g want %.9g\n", what, i, (double)got[i],
              want[i]);
      CU_FAIL(what);
      return;
    }
  }
  CU_PASS(what);
}

/* ------------------------------------------------------------------------ */
/* gemm_scalar.c                                                             */
/* ------------------------------------------------------------------------ */

static void gemm_case(size_t m, size_t n, size_t k, int ta, int tb, float alpha, float beta) {
  float* a = frand_array(m * k);
  float* b = frand_array(k * n);
  float* c = frand_array(m * n);
  double* want = malloc((m * n > 0 ? m * n : 1) * sizeof(double));
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * m + i] : a[i * k + p];
        const double bv = tb ? b[j * k + p] : b[p * n + j];
        acc += av * bv;
      }
      want[i * n + j] = alpha * acc + (beta == 0.0f ? 0.0 : beta * (double)c[i * n + j]);
    }
  }
  if (beta == 0.0f) /* beta == 0 must not read C: poison it */
    for (size_t i = 0; i < m * n; ++i) c[i] = NAN;
  axle_f32_gemm_scalar(m, n, k, alpha, a, ta ? 1 : k, ta ? m : 1, b, tb ? 1 : n, tb ? k : 1,
                       beta, c, n);
  char what[96];
  snprintf(what, sizeof what, "gemm %zux%zux%zu ta=%d tb=%d a=%g b=%g", m, n, k, ta, tb,
           (double)alpha, (double)beta);
  expect_close(what, c, want, m * n, 1e-5, 1e-5);
  free(a);
  free(b);
  free(c);
  free(want);
}

static void test_gemm_shapes(void) {
  static const size_t shapes[][3] = {{1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {7, 5, 3},
                                     {4, 9, 13}, {5, 4, 1}, {17, 33, 65}, {9, 600, 7}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1.0f, 0.0f);
}

static void test_gemm_alpha_beta(void) {
  gemm_case(6, 7, 8, 0, 0, 0.5f, 1.0f);
  gemm_case(6, 7, 8, 1, 1, -2.0f, 0.25f);
  gemm_case(3, 5, 2, 0, 1, 1.0f, 1.0f);
  gemm_case(5, 3, 4, 1, 0, 0.0f, 2.0f); /* alpha 0: only beta * C */
}

static void test_gemm_k_zero(void) {
  /* No inner dimension: the product is empty, C becomes beta * C. */
  float c[6] = {1, 2, 3, 4, 5, 6};
  axle_f32_gemm_scalar(2, 3, 0, 1.0f, NULL, 0, 1, NULL, 3, 1, 0.0f, c, 3);
  for (int i = 0; i < 6; ++i) CU_ASSERT_EQUAL(c[i], 0.0f);
  float d[2] = {1, 2};
  axle_f32_gemm_scalar(1, 2, 0, 1.0f, NULL, 0, 1, NULL, 2, 1, 3.0f, d, 2);
  CU_ASSERT_EQUAL(d[0], 3.0f);
  CU_ASSERT_EQUAL(d[1], 6.0f);
}

static void test_gemm_ldc(void) {
  /* C embedded in a wider matrix: columns beyond n must stay untouched. */
  const size_t m = 5, n = 3, k = 4, ldc = 7;
  float* a = frand_array(m * k);
  float* b = frand_array(k * n);
  float c[5 * 7];
  for (size_t i = 0; i < m * ldc; ++i) c[i] = 42.0f;
  axle_f32_gemm_scalar(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, ldc);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += (double)a[i * k + p] * b[p * n + j];
      CU_ASSERT_DOUBLE_EQUAL(c[i * ldc + j], acc, 1e-5);
    }
    for (size_t j = n; j < ldc; ++j) CU_ASSERT_EQUAL(c[i * ldc + j], 42.0f);
  }
  free(a);
  free(b);
}

/* ------------------------------------------------------------------------ */
/* conv_direct_scalar.c / conv_gemm_scalar.c                                 */
/* ------------------------------------------------------------------------ */

/* Output size of a padded window (floor mode). */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

typedef struct conv_case_t {
  int64_t n, c, m, groups;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
  int bias;
} conv_case_t;

static void conv_fill_params(const conv_case_t* cc, axle_f32_conv_params_t* p) {
  memset(p, 0, sizeof *p);
  p->batch = cc->n;
  p->groups = cc->groups;
  p->in_channels = cc->c;
  p->out_channels = cc->m;
  for (int i = 0; i < 3; ++i) {
    p->in[i] = cc->in[i];
    p->kernel[i] = cc->k[i];
    p->stride[i] = cc->s[i];
    p->dilation[i] = cc->d[i];
    p->pad[i] = cc->pb[i];
    p->out[i] = out_size(cc->in[i], cc->k[i], cc->s[i], cc->d[i], cc->pb[i], cc->pe[i]);
  }
}

static void conv_reference(const axle_f32_conv_params_t* p, const float* x, const float* w,
                           const float* bias, double* y) {
  const int64_t cg = p->in_channels / p->groups, mg = p->out_channels / p->groups;
  for (int64_t n = 0; n < p->batch; ++n)
    for (int64_t oc = 0; oc < p->out_channels; ++oc)
      for (int64_t o0 = 0; o0 < p->out[0]; ++o0)
        for (int64_t o1 = 0; o1 < p->out[1]; ++o1)
          for (int64_t o2 = 0; o2 < p->out[2]; ++o2) {
            double acc = bias ? bias[oc] : 0.0;
            const int64_t g = oc / mg;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t k0 = 0; k0 < p->kernel[0]; ++k0)
                for (int64_t k1 = 0; k1 < p->kernel[1]; ++k1)
                  for (int64_t k2 = 0; k2 < p->kernel[2]; ++k2) {
                    const int64_t i0 = o0 * p->stride[0] - p->pad[0] + k0 * p->dilation[0];
                    const int64_t i1 = o1 * p->stride[1] - p->pad[1] + k1 * p->dilation[1];
                    const int64_t i2 = o2 * p->stride[2] - p->pad[2] + k2 * p->dilation[2];
                    if (i0 < 0 || i0 >= p->in[0] || i1 < 0 || i1 >= p->in[1] || i2 < 0 ||
                        i2 >= p->in[2])
                      continue;
                    const int64_t c = g * cg + ic;
                    const double xv =
                        x[(((n * p->in_channels + c) * p->in[0] + i0) * p->in[1] + i1) *
                              p->in[2] +
                          i2];
                    const double wv =
                        w[(((oc * cg + ic) * p->kernel[0] + k0) * p->kernel[1] + k1) *
                              p->kernel[2] +
                          k2];
                    acc += xv * wv;
                  }
            y[(((n * p->out_channels + oc) * p->out[0] + o0) * p->out[1] + o1) * p->out[2] +
              o2] = acc;
          }
}

static void conv_check_case(const char* name, const conv_case_t* cc) {
  axle_f32_conv_params_t p;
  conv_fill_params(cc, &p);
  const size_t in_vol = (size_t)(p.in[0] * p.in[1] * p.in[2]);
  const size_t out_vol = (size_t)(p.out[0] * p.out[1] * p.out[2]);
  const size_t kvol = (size_t)(p.kernel[0] * p.kernel[1] * p.kernel[2]);
  const size_t ny = (size_t)(p.batch * p.out_channels) * out_vol;
  float* x = frand_array((size_t)(p.batch * p.in_channels) * in_vol);
  float* w = frand_array((size_t)(p.out_channels * (p.in_channels / p.groups)) * kvol);
  float* bias = cc->bias ? frand_array((size_t)p.out_channels) : NULL;
  double* want = malloc(ny * sizeof(double));
  conv_reference(&p, x, w, bias, want);

  float* y = fill_array(ny, NAN);
  axle_f32_conv_direct_scalar(&p, x, w, bias, y);
  char what[128];
  snprintf(what, sizeof what, "%s (direct)", name);
  expect_close(what, y, want, ny, 1e-4, 1e-5);

  for (size_t i = 0; i < ny; ++i) y[i] = NAN;
  const size_t scratch_size = axle_f32_conv_gemm_scratch_size(&p);
  void* scratch = scratch_size ? malloc(scratch_size) : NULL;
  axle_f32_conv_gemm_scalar(&p, x, w, bias, y, scratch);
  snprintf(what, sizeof what, "%s (im2col+gemm)", name);
  expect_close(what, y, want, ny, 1e-4, 1e-5);

  free(scratch);
  free(x);
  free(w);
  free(bias);
  free(want);
  free(y);
}

/* 2-D helper: leading spatial dimension 1. */
static conv_case_t conv2d(int64_t n, int64_t c, int64_t m, int64_t groups, int64_t h,
                          int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                          int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t pb,
                          int64_t pr, int bias) {
  conv_case_t cc = {n, c, m, groups, {1, h, w}, {1, kh, kw}, {1, sh, sw}, {1, dh, dw},
                    {0, pt, pl}, {0, pb, pr}, bias};
  return cc;
}

static void test_conv_pointwise(void) {
  conv_case_t a = conv2d(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
  conv_check_case("1x1 image, 1x1 kernel", &a);
  conv_case_t b = conv2d(2, 5, 7, 1, 3, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1);
  conv_check_case("pointwise 5->7", &b);
  axle_f32_conv_params_t p;
  conv_fill_params(&b, &p);
  CU_ASSERT_EQUAL(axle_f32_conv_gemm_scratch_size(&p), 0); /* no unfold needed */
  conv_case_t c = conv2d(1, 3, 2, 1, 5, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1);
  conv_check_case("1x1 kernel, stride 2", &c);
}

static void test_conv_odd_padding(void) {
  conv_case_t a = conv2d(2, 3, 4, 1, 7, 5, 3, 2, 2, 1, 1, 1, 1, 0, 2, 1, 1);
  conv_check_case("odd sizes, asymmetric pads", &a);
  conv_case_t b = conv2d(1, 2, 3, 1, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0);
  conv_check_case("3x3 same padding, no bias", &b);
  conv_case_t c = conv2d(1, 1, 1, 1, 2, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1);
  conv_check_case("kernel larger than image", &c);
  conv_case_t d = conv2d(1, 2, 2, 1, 9, 11, 3, 3, 3, 2, 1, 1, 0, 1, 0, 0, 1);
  conv_check_case("strides 3x2, windows dropping the tail", &d);
}

static void test_conv_groups(void) {
  conv_case_t a = conv2d(2, 4, 6, 2, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  conv_check_case("groups=2", &a);
  conv_case_t b = conv2d(1, 5, 5, 5, 6, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
  conv_check_case("depthwise", &b);
  conv_case_t c = conv2d(1, 3, 6, 3, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  conv_check_case("depthwise with multiplier 2", &c);
  conv_case_t d = conv2d(1, 6, 3, 3, 4, 5, 2, 2, 1, 1, 1, 1, 0, 0, 1, 0, 0);
  conv_check_case("groups=3, 2 channels per group in, 1 out", &d);
}

static void test_conv_dilation(void) {
  conv_case_t a = conv2d(1, 2, 3, 1, 9, 8, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3, 1);
  conv_check_case("dilation 2x3", &a);
  conv_case_t b = conv2d(1, 4, 4, 4, 7, 7, 3, 3, 2, 2, 2, 2, 1, 1, 0, 2, 1);
  conv_check_case("dilated depthwise, strided", &b);
}

static void test_conv_1d_3d(void) {
  conv_case_t a = {2, 3, 4, 1, {1, 1, 11}, {1, 1, 3}, {1, 1, 2}, {1, 1, 2},
                   {0, 0, 1}, {0, 0, 2}, 1};
  conv_check_case("1-D", &a);
  conv_case_t b = {1, 2, 4, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1},
                   {1, 1, 0}, {0, 1, 1}, 1};
  conv_check_case("3-D grouped", &b);
}

static void test_im2col_layout(void) {
  /* 1 channel 3x3 image, 2x2 kernel, pad 1 (top/left only): row (kh,kw)
   * holds the tap of every output position, 0 where it lands in padding. */
  axle_f32_conv_params_t p;
  conv_case_t cc = conv2d(1, 1, 1, 1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0);
  conv_fill_params(&cc, &p);
  CU_ASSERT_EQUAL(p.out[1], 2);
  CU_ASSERT_EQUAL(p.out[2], 2);
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float col[4 * 4];
  axle_f32_im2col_scalar(&p, x, 1, col);
  static const float want[16] = {0, 0, 0, 5,   /* tap (0,0) */
                                 0, 0, 4, 6,   /* tap (0,1) */
                                 0, 2, 0, 8,   /* tap (1,0) */
                                 1, 3, 7, 9};  /* tap (1,1) */
  for (int i = 0; i < 16; ++i) CU_ASSERT_EQUAL(col[i], want[i]);
}

/* ------------------------------------------------------------------------ */
/* pool_scalar.c                                                             */
/* ------------------------------------------------------------------------ */

typedef struct pool_case_t {
  int64_t channels;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
  int ceil_mode, count_include_pad, storage_order;
} pool_case_t;

/* ONNX / PyTorch output size, including the ceil_mode rule that the last
 * window must start inside the input or its leading padding. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                             int64_t pe, int ceil_mode) {
  const int64_t span = (k - 1) * d + 1;
  const int64_t ext = in + pb + pe - span;
  if (!ceil_mode) return ext / s + 1;
  int64_t out = (ext + s - 1) / s + 1;
  if ((out - 1) * s >= in + pb) --out;
  return out;
}

static void pool_fill_params(const pool_case_t* pc, axle_f32_pool_params_t* p) {
  memset(p, 0, sizeof *p);
  p->channels = pc->channels;
  for (int i = 0; i < 3; ++i) {
    p->in[i] = pc->in[i];
    p->kernel[i] = pc->k[i];
    p->stride[i] = pc->s[i];
    p->dilation[i] = pc->d[i];
    p->pad[i] = pc->pb[i];
    p->pad_end[i] = pc->pe[i];
    p->out[i] = pool_out_size(pc->in[i], pc->k[i], pc->s[i], pc->d[i], pc->pb[i], pc->pe[i],
                              pc->ceil_mode);
  }
  p->count_include_pad = pc->count_include_pad;
  p->storage_order = pc->storage_order;
}

/* Enumerates every tap of every window explicitly. */
static void pool_reference(const axle_f32_pool_params_t* p, const float* x, double* ymax,
                           int64_t* imax, double* yavg) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  int64_t o = 0;
  for (int64_t c = 0; c < p->channels; ++c)
    for (int64_t o0 = 0; o0 < p->out[0]; ++o0)
      for (int64_t o1 = 0; o1 < p->out[1]; ++o1)
        for (int64_t o2 = 0; o2 < p->out[2]; ++o2, ++o) {
          double best = -INFINITY, sum = 0.0;
          int64_t best_idx = -1, valid = 0, padded = 0;
          for (int64_t k0 = 0; k0 < p->kernel[0]; ++k0)
            for (int64_t k1 = 0; k1 < p->kernel[1]; ++k1)
              for (int64_t k2 = 0; k2 < p->kernel[2]; ++k2) {
                const int64_t i[3] = {o0 * p->stride[0] - p->pad[0] + k0 * p->dilation[0],
                                      o1 * p->stride[1] - p->pad[1] + k1 * p->dilation[1],
                                      o2 * p->stride[2] - p->pad[2] + k2 * p->dilation[2]};
                int inside = 1, in_padded = 1;
                for (int dd = 0; dd < 3; ++dd) {
                  inside &= i[dd] >= 0 && i[dd] < p->in[dd];
                  in_padded &= i[dd] < p->in[dd] + p->pad_end[dd];
                }
                padded += in_padded;
                if (!inside) continue;
                const int64_t flat = (i[0] * p->in[1] + i[1]) * p->in[2] + i[2];
                const double v = x[c * in_vol + flat];
                ++valid;
                sum += v;
                if (v > best) {
                  best = v;
                  best_idx = p->storage_order
                                 ? c * in_vol + i[0] + i[1] * p->in[0] + i[2] * p->in[0] * p->in[1]
                                 : c * in_vol + flat;
                }
              }
          ymax[o] = best;
          imax[o] = best_idx;
          const int64_t div = p->count_include_pad ? padded : valid;
          yavg[o] = div ? sum / (double)div : 0.0;
        }
}

static void pool_check_case(const char* name, const pool_case_t* pc) {
  axle_f32_pool_params_t p;
  pool_fill_params(pc, &p);
  const size_t nx = (size_t)(p.channels * p.in[0] * p.in[1] * p.in[2]);
  const size_t ny = (size_t)(p.channels * p.out[0] * p.out[1] * p.out[2]);
  float* x = frand_array(nx);
  double* ymax = malloc(ny * sizeof(double));
  double* yavg = malloc(ny * sizeof(double));
  int64_t* imax = malloc(ny * sizeof(int64_t));
  pool_reference(&p, x, ymax, imax, yavg);

  float* y = fill_array(ny, NAN);
  int64_t* idx = malloc(ny * sizeof(int64_t));
  axle_f32_maxpool_scalar(&p, x, y, idx);
  char what[128];
  snprintf(what, sizeof what, "%s (max)", name);
  expect_close(what, y, ymax, ny, 0.0, 0.0);
  for (size_t i = 0; i < ny; ++i) CU_ASSERT_EQUAL(idx[i], imax[i]);

  for (size_t i = 0; i < ny; ++i) y[i] = NAN;
  axle_f32_maxpool_scalar(&p, x, y, NULL); /* indices are optional */
  expect_close(what, y, ymax, ny, 0.0, 0.0);

  for (size_t i = 0; i < ny; ++i) y[i] = NAN;
  axle_f32_avgpool_scalar(&p, x, y);
  snprintf(what, sizeof what, "%s (average)", name);
  expect_close(what, y, yavg, ny, 1e-5, 1e-6);

  free(x);
  free(ymax);
  free(yavg);
  free(imax);
  free(y);
  free(idx);
}

static pool_case_t pool2d(int64_t ch, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                          int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                          int64_t pb, int64_t pr, int ceil_mode, int cip) {
  pool_case_t pc = {ch, {1, h, w}, {1, kh, kw}, {1, sh, sw}, {1, dh, dw},
                    {0, pt, pl}, {0, pb, pr}, ceil_mode, cip, 0};
  return pc;
}

static void test_pool_basic(void) {
  pool_case_t a = pool2d(1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0);
  pool_check_case("1x1", &a);
  pool_case_t b = pool2d(3, 5, 7, 2, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0);
  pool_check_case("odd sizes, no padding", &b);
  pool_case_t c = pool2d(2, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0);
  pool_check_case("3x3 same padding", &c);
  pool_case_t d = pool2d(2, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1);
  pool_check_case("3x3 same padding, count_include_pad", &d);
  pool_case_t e = pool2d(1, 7, 6, 3, 2, 2, 3, 1, 1, 2, 0, 1, 1, 0, 1);
  pool_check_case("asymmetric pads, count_include_pad", &e);
}

static void test_pool_ceil_mode(void) {
  pool_case_t a = pool2d(2, 5, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0);
  axle_f32_pool_params_t p;
  pool_fill_params(&a, &p);
  CU_ASSERT_EQUAL(p.out[1], 3); /* floor mode would give 2 */
  pool_check_case("ceil_mode 5->3", &a);
  pool_case_t b = pool2d(1, 5, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1);
  pool_check_case("ceil_mode, count_include_pad (overhang not counted)", &b);
  /* Last window would start in the trailing padding: dropped. */
  pool_case_t c = pool2d(1, 4, 4, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
  pool_fill_params(&c, &p);
  CU_ASSERT_EQUAL(p.out[1], 2); /* ceil((4 + 2 - 2) / 3) + 1 = 3, minus one */
  pool_check_case("ceil_mode output reduced by one", &c);
  pool_case_t d = pool2d(2, 8, 7, 3, 2, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1);
  pool_check_case("ceil_mode with dilation and pads", &d);
}

static void test_pool_dilation(void) {
  pool_case_t a = pool2d(2, 9, 9, 3, 3, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0);
  pool_check_case("dilation 2", &a);
  pool_case_t b = pool2d(1, 10, 8, 2, 3, 3, 2, 3, 2, 2, 1, 2, 1, 0, 1);
  pool_check_case("dilation 3x2, strides, pads", &b);
}

static void test_pool_1d_3d(void) {
  pool_case_t a = {3, {1, 1, 9}, {1, 1, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}, 0, 0, 0};
  pool_check_case("1-D", &a);
  pool_case_t b = {2, {4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 1, 0}, {0, 1, 1}, 1, 1, 0};
  pool_check_case("3-D, ceil_mode, count_include_pad", &b);
}

static void test_pool_storage_order(void) {
  pool_case_t a = pool2d(2, 4, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0);
  a.storage_order = 1;
  pool_check_case("column-major indices", &a);
}

static void test_pool_ties(void) {
  /* Equal maxima: the first in scan order wins (ONNX Runtime's rule). */
  const float x[4] = {3, 3, 3, 3};
  axle_f32_pool_params_t p;
  pool_case_t pc = pool2d(1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0);
  pool_fill_params(&pc, &p);
  float y;
  int64_t i;
  axle_f32_maxpool_scalar(&p, x, &y, &i);
  CU_ASSERT_EQUAL(y, 3.0f);
  CU_ASSERT_EQUAL(i, 0);
}

static void test_global_pool(void) {
  static const size_t shapes[][2] = {{1, 1}, {3, 1}, {1, 7}, {5, 49}, {2, 50176}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const size_t ch = shapes[s][0], size = shapes[s][1];
    float* x = frand_array(ch * size);
    double* want_avg = malloc(ch * sizeof(double));
    double* want_max = malloc(ch * sizeof(double));
    for (size_t c = 0; c < ch; ++c) {
      double sum = 0.0, best = -INFINITY;
      for (size_t i = 0; i < size; ++i) {
        sum += x[c * size + i];
        if (x[c * size + i] > best) best = x[c * size + i];
      }
      want_avg[c] = sum / (double)size;
      want_max[c] = best;
    }
    float* y = fill_array(ch, NAN);
    axle_f32_global_avgpool_scalar(ch, size, x, y);
    expect_close("global average pool", y, want_avg, ch, 1e-5, 1e-6);
    axle_f32_global_maxpool_scalar(ch, size, x, y);
    expect_close("global max pool", y, want_max, ch, 0.0, 0.0);
    free(x);
    free(want_avg);
    free(want_max);
    free(y);
  }
}

/* ------------------------------------------------------------------------ */
/* batchnorm_scalar.c                                                        */
/* ------------------------------------------------------------------------ */

static void test_batchnorm(void) {
  const size_t n = 2, c = 3, size = 5;
  const float eps = 1e-3f;
  float* x = frand_array(n * c * size);
  float gamma[3], beta[3], mean[3], var[3], scale[3], shift[3];
  for (size_t i = 0; i < c; ++i) {
    gamma[i] = frand();
    beta[i] = frand();
    mean[i] = frand();
    var[i] = fabsf(frand()) + 0.1f;
  }
  double want[30];
  for (size_t b = 0; b < n; ++b)
    for (size_t ch = 0; ch < c; ++ch)
      for (size_t i = 0; i < size; ++i) {
        const size_t at = (b * c + ch) * size + i;
        want[at] = ((double)x[at] - mean[ch]) / sqrt((double)var[ch] + eps) * gamma[ch] +
                   beta[ch];
      }
  axle_f32_batchnorm_fold_scalar(c, gamma, beta, mean, var, eps, scale, shift);
  float y[30];
  axle_f32_channel_affine_scalar(n, c, size, x, scale, shift, y);
  expect_close("batch norm", y, want, n * c * size, 1e-5, 1e-5);
  /* In place. */
  axle_f32_channel_affine_scalar(n, c, size, x, scale, shift, x);
  expect_close("batch norm in place", x, want, n * c * size, 1e-5, 1e-5);
  free(x);
}

static void test_batchnorm_spatial_1(void) {
  /* [N, C] input (no spatial dims): size 1. */
  const float x[4] = {1, 2, 3, 4};
  const float gamma[2] = {1, 2}, beta[2] = {0, 1}, mean[2] = {1, 1}, var[2] = {1, 4};
  float scale[2], shift[2], y[4];
  axle_f32_batchnorm_fold_scalar(2, gamma, beta, mean, var, 0.0f, scale, shift);
  axle_f32_channel_affine_scalar(2, 2, 1, x, scale, shift, y);
  CU_ASSERT_DOUBLE_EQUAL(y[0], 0.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[1], 2.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[2], 2.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[3], 4.0, 1e-6);
}

/* ------------------------------------------------------------------------ */
/* softmax_scalar.c                                                          */
/* ------------------------------------------------------------------------ */

static void softmax_case(size_t outer, size_t axis, size_t inner, float scale) {
  const size_t total = outer * axis * inner;
  float* x = frand_array(total);
  for (size_t i = 0; i < total; ++i) x[i] *= scale;
  double* want = malloc(total * sizeof(double));
  double* want_log = malloc(total * sizeof(double));
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < inner; ++i) {
      double m = -INFINITY, sum = 0.0;
      for (size_t j = 0; j < axis; ++j) m = fmax(m, x[(o * axis + j) * inner + i]);
      for (size_t j = 0; j < axis; ++j) sum += exp(x[(o * axis + j) * inner + i] - m);
      for (size_t j = 0; j < axis; ++j) {
        const size_t at = (o * axis + j) * inner + i;
        want[at] = exp(x[at] - m) / sum;
        want_log[at] = x[at] - m - log(sum);
      }
    }
  float* y = fill_array(total, NAN);
  char what[96];
  snprintf(what, sizeof what, "softmax [%zu,%zu,%zu] x%g", outer, axis, inner, (double)scale);
  axle_f32_softmax_scalar(outer, axis, inner, x, y);
  expect_close(what, y, want, total, 1e-5, 1e-7);
  snprintf(what, sizeof what, "logsoftmax [%zu,%zu,%zu] x%g", outer, axis, inner,
           (double)scale);
  axle_f32_logsoftmax_scalar(outer, axis, inner, x, y);
  expect_close(what, y, want_log, total, 1e-5, 1e-4);
  /* In place. */
  axle_f32_softmax_scalar(outer, axis, inner, x, x);
  expect_close("softmax in place", x, want, total, 1e-5, 1e-7);
  free(x);
  free(want);
  free(want_log);
  free(y);
}

static void test_softmax_shapes(void) {
  softmax_case(1, 1, 1, 1.0f);   /* single element: 1 and 0 */
  softmax_case(3, 7, 1, 1.0f);   /* contiguous rows */
  softmax_case(2, 5, 3, 1.0f);   /* strided axis */
  softmax_case(1, 1000, 1, 5.0f);
  softmax_case(4, 1, 6, 1.0f);
}

static void test_softmax_large_values(void) {
  /* exp() of 1e4 overflows unless the maximum is subtracted first. */
  softmax_case(2, 9, 1, 10000.0f);
  softmax_case(2, 4, 2, 10000.0f);
  const float x[3] = {10000.0f, 10001.0f, 10002.0f};
  float y[3];
  axle_f32_logsoftmax_scalar(1, 3, 1, x, y);
  CU_ASSERT_DOUBLE_EQUAL(y[2], -0.40760596, 1e-5);
  CU_ASSERT_DOUBLE_EQUAL(y[0], -2.40760596, 1e-5);
}

/* ------------------------------------------------------------------------ */

typedef struct test_entry_t {
  const char* name;
  CU_TestFunc fn;
} test_entry_t;

static int add_suite(const char* name, const test_entry_t* tests, size_t count) {
  CU_pSuite s = CU_add_suite(name, NULL, NULL);
  if (!s) return -1;
  for (size_t i = 0; i < count; ++i)
    if (!CU_add_test(s, tests[i].name, tests[i].fn)) return -1;
  return 0;
}

#define ADD_SUITE(name, arr) add_suite(name, arr, sizeof arr / sizeof arr[0])

int main(void) {
  static const test_entry_t gemm[] = {
      {"shapes and transposes", test_gemm_shapes},
      {"alpha and beta", test_gemm_alpha_beta},
      {"empty inner dimension", test_gemm_k_zero},
      {"row stride of C", test_gemm_ldc},
  };
  static const test_entry_t conv[] = {
      {"pointwise", test_conv_pointwise},
      {"odd sizes and padding", test_conv_odd_padding},
      {"groups and depthwise", test_conv_groups},
      {"dilation", test_conv_dilation},
      {"1-D and 3-D", test_conv_1d_3d},
      {"im2col layout", test_im2col_layout},
  };
  static const test_entry_t pool[] = {
      {"basic", test_pool_basic},
      {"ceil_mode", test_pool_ceil_mode},
      {"dilation", test_pool_dilation},
      {"1-D and 3-D", test_pool_1d_3d},
      {"storage order", test_pool_storage_order},
      {"ties", test_pool_ties},
      {"global pooling", test_global_pool},
  };
  static const test_entry_t bn[] = {
      {"NCHW", test_batchnorm},
      {"NC", test_batchnorm_spatial_1},
  };
  static const test_entry_t softmax[] = {
      {"shapes", test_softmax_shapes},
      {"large values", test_softmax_large_values},
  };

  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (ADD_SUITE("gemm_scalar", gemm) || ADD_SUITE("conv_scalar", conv) ||
      ADD_SUITE("pool_scalar", pool) || ADD_SUITE("batchnorm_scalar", bn) ||
      ADD_SUITE("softmax_scalar", softmax)) {
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
