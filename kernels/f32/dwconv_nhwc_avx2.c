/* Depthwise 3x3 convolution over a channels-last image with AVX2 + FMA:
 * the walk of dwconv_nhwc_avx512.c on eight channels per vector, in strips
 * of up to 4 pixels (nine weight vectors and four accumulators fill the
 * sixteen registers). Channel tails are masked loads and stores. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "window.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
/* The strips must inline: their pixel count and border handling are
 * constants that unroll and fold away there. */
#define AXLE_INLINE __attribute__((always_inline)) static inline

enum { STRIP = 4 };

typedef struct walk_t {
  __m256 wt[9], bias, lo, hi, alpha;
  int leaky;
  __m256i m;     /* the channels of this vector */
  int64_t ch;    /* channels (the weights' tap stride) */
  int64_t xp;    /* floats per input pixel (x_pixel) */
  int64_t yp;    /* floats per output pixel (y_pixel) */
  int64_t w, sx; /* input row width, column stride */
} walk_t;

/* As in dwconv_nhwc_avx512.c. */
AXLE_AVX2 AXLE_INLINE void strip(const walk_t* k, const float* const rows[3], int64_t ky0,
                                 int64_t ky1, int64_t ix0, const int n, const int edge, float* yo) {
  __m256 acc[STRIP];
  for (int i = 0; i < n; ++i) acc[i] = _mm256_setzero_ps();
  for (int ky = 0; ky < 3; ++ky) {
    if (ky < ky0 || ky >= ky1) continue;
    for (int kx = 0; kx < 3; ++kx)
      for (int i = 0; i < n; ++i) {
        const int64_t ix = ix0 + i * k->sx + kx;
        if (edge && (ix < 0 || ix >= k->w)) continue;
        const __m256 v = _mm256_maskload_ps(rows[ky] + ix * k->xp, k->m);
        acc[i] = _mm256_fmadd_ps(v, k->wt[ky * 3 + kx], acc[i]);
      }
  }
  for (int i = 0; i < n; ++i) {
    __m256 v = _mm256_add_ps(acc[i], k->bias);
    v = _mm256_min_ps(k->hi, _mm256_max_ps(k->lo, v));
    if (k->leaky)
      v = _mm256_blendv_ps(v, _mm256_mul_ps(v, k->alpha),
                           _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    _mm256_maskstore_ps(yo + i * k->yp, k->m, v);
  }
}

#define STRIP_CASE(n)                          \
  case n:                                      \
    if (edge)                                  \
      strip(k, rows, ky0, ky1, ix0, n, 1, yo); \
    else                                       \
      strip(k, rows, ky0, ky1, ix0, n, 0, yo); \
    break;

AXLE_AVX2 static void row(const walk_t* k, const float* const rows[3], int64_t ky0, int64_t ky1,
                          int64_t pl, int64_t wo, float* yrow) {
  const int64_t strips = (wo + STRIP - 1) / STRIP, base = wo / strips, extra = wo % strips;
  int64_t ox = 0;
  for (int64_t s = 0; s < strips; ++s) {
    const int n = (int)(base + (s < extra));
    const int64_t ix0 = ox * k->sx - pl;
    const int edge = ix0 < 0 || ix0 + (n - 1) * k->sx + 2 >= k->w;
    float* yo = yrow + ox * k->yp;
    switch (n) {
      STRIP_CASE(1)
      STRIP_CASE(2)
      STRIP_CASE(3)
      STRIP_CASE(4)
    }
    ox += n;
  }
}

AXLE_AVX2 void axle_f32_dwconv_nhwc_3x3__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                                  int64_t x_pixel, const float* w,
                                                  const axle_f32_epilogue_t* ep, int64_t oy0,
                                                  int64_t oy1, int64_t c0, int64_t c1,
                                                  int64_t y_pixel, int64_t y_block, float* y) {
  walk_t k;
  k.ch = p->in_channels;
  k.xp = x_pixel;
  k.yp = y_pixel;
  k.w = p->in[2];
  k.sx = p->stride[2];
  k.lo = _mm256_set1_ps(ep->min);
  k.hi = _mm256_set1_ps(ep->max);
  k.alpha = _mm256_set1_ps(ep->leaky_alpha);
  k.leaky = ep->leaky;
  const int64_t h = p->in[1], sy = p->stride[1], pt = p->pad[1], wo = p->out[2];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t c = c0; c < c1; c += 8) {
    const int left = c1 - c >= 8 ? 8 : (int)(c1 - c);
    k.m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
    for (int t = 0; t < 9; ++t) k.wt[t] = _mm256_maskload_ps(w + t * k.ch + c, k.m);
    k.bias = ep->bias ? _mm256_maskload_ps(ep->bias + c, k.m) : _mm256_setzero_ps();
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      const float* rows[3];
      int64_t ky0, ky1;
      axle_window_rows_nhwc(x, h, k.w, k.xp, c, oy * sy - pt, 3, rows, &ky0, &ky1);
      row(&k, rows, ky0, ky1, p->pad[2], wo, y + oy * wo * k.yp + c / 16 * y_block + c % 16);
    }
  }
}
