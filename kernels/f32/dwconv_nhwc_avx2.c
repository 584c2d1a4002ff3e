/* Depthwise 3x3 convolution over a channels-last image with AVX2 + FMA:
 * the walk of dwconv_nhwc_avx512.c on eight channels per vector, one output
 * row at a time, in strips of up to 7 pixels: seven accumulators, the
 * column being applied and the weights, eight of which stay in registers
 * (one is an FMA memory operand). Seven chains rather than six: 14x14 x
 * 384 channels 2.75 -> 2.48 ns per 8 outputs alone, stride 2 4.27 -> 3.77;
 * more (8, 10) gained nothing more.
 *
 * As there, each input column is loaded once and feeds every output whose
 * window holds it, and full vectors take plain loads and stores: the first
 * version loaded every tap with vmaskmovps and stored with its masked
 * form, which on AMD cores is microcoded (MobileNetV2's channels-last
 * depthwise stages, capped at AVX2 on Zen 4: 3.2-3.8x the AVX-512 kernel's
 * time for the same FMA throughput). Channel tails keep the masks. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "window.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
/* The strips must inline: their pixel count, stride and border handling
 * are constants that unroll and fold away there. */
#define AXLE_INLINE __attribute__((always_inline)) static inline

enum { STRIP = 7 };

typedef struct walk_t {
  __m256 wt[9], bias, lo, hi, alpha;
  int leaky;
  __m256i m;     /* the channels of this vector */
  int64_t xp;    /* floats per input pixel (x_pixel) */
  int64_t yp;    /* floats per output pixel (y_pixel) */
  int64_t w;     /* input row width */
  int64_t strips, base, extra; /* a row's strips: the first `extra` base + 1 wide */
} walk_t;

/* n outputs of one row at column stride S, the first reading input column
 * ix0, from input rows rows[ky], ky in [ky0, ky1). Columns outside [jlo,
 * jhi) lie in the padding; edge says which, as a constant
 * (axle_window_strip_edge; EDGES tested per column: at 14x14 two strips
 * of three were such, 2.97 -> 2.75 ns per 8 outputs with the constants
 * and the strip layout worked out once per call);
 * full: all eight channels are live. The weights are copied to locals so
 * that GCC keeps them in registers instead of reading them in every FMA. */
AXLE_AVX2 AXLE_INLINE void strip(const walk_t* k, const float* const rows[3], int64_t ky0,
                                 int64_t ky1, int64_t ix0, const int n, const int S, const int edge,
                                 const int full, float* yo) {
  const int ncols = (n - 1) * S + 3;
  const int64_t xp = k->xp;
  int64_t jlo, jhi;
  axle_window_strip_cols(edge, ix0, ncols, k->w, &jlo, &jhi);
  __m256 wt[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) wt[t] = k->wt[t];
  __m256 acc[STRIP];
#pragma GCC unroll 7
  for (int i = 0; i < n; ++i) acc[i] = k->bias;
#pragma GCC unroll 3
  for (int ky = 0; ky < 3; ++ky) {
    if (ky < ky0 || ky >= ky1) continue;
    const float* col = rows[ky] + ix0 * xp;
#pragma GCC unroll 15
    for (int j = 0; j < ncols; ++j, col += xp) {
      if (j < jlo || j >= jhi) continue;
      __m256 v = full ? _mm256_loadu_ps(col) : _mm256_maskload_ps(col, k->m);
      /* One load per column, not one per FMA, which GCC would fold in. */
      __asm__("" : "+x"(v));
      /* Column j is tap kx of pixel (j - kx) / S. */
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx)
        if (j >= kx && (j - kx) % S == 0 && (j - kx) / S < n)
          acc[(j - kx) / S] = _mm256_fmadd_ps(v, wt[ky * 3 + kx], acc[(j - kx) / S]);
    }
  }
  /* Copied before the stores, which may alias *k as far as GCC knows. */
  const __m256 lo = k->lo, hi = k->hi, alpha = k->alpha;
  const int leaky = k->leaky;
#pragma GCC unroll 7
  for (int i = 0; i < n; ++i) {
    __m256 v = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[i]));
    if (leaky)
      v = _mm256_blendv_ps(v, _mm256_mul_ps(v, alpha),
                           _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    float* out = yo + i * k->yp;
    if (full)
      _mm256_storeu_ps(out, v);
    else
      _mm256_maskstore_ps(out, k->m, v);
  }
}

#define STRIP_AT(n, e) strip(k, rows, ky0, ky1, ix0, n, S, e, full, yo)
#define STRIP_CASE(n) AXLE_STRIP_CASE(n, edge, STRIP_AT)

/* One output row, in strips as equal as 7 wide allows (MobileNetV2's 7,
 * 14, 28 and 56 in strips of 7); the layout is the call's (k->strips,
 * base, extra), worked out once rather than divided out per row. */
AXLE_AVX2 AXLE_INLINE void walk_row(const walk_t* k, const float* const rows[3], int64_t ky0,
                                    int64_t ky1, int64_t pl, const int S, const int full,
                                    float* yrow) {
  int64_t ox = 0;
  for (int64_t s = 0; s < k->strips; ++s) {
    const int n = (int)(k->base + (s < k->extra));
    const int64_t ix0 = ox * S - pl;
    const int edge = axle_window_strip_edge(ix0, (n - 1) * S + 3, k->w);
    float* yo = yrow + ox * k->yp;
    switch (n) {
      STRIP_CASE(1)
      STRIP_CASE(2)
      STRIP_CASE(3)
      STRIP_CASE(4)
      STRIP_CASE(5)
      STRIP_CASE(6)
      STRIP_CASE(7)
    }
    ox += n;
  }
}

typedef void (*walk_fn)(const walk_t*, const float* const*, int64_t, int64_t, int64_t, float*);
#define WALK_FN(name, S, full)                                                         \
  AXLE_AVX2 static void name(const walk_t* k, const float* const rows[3], int64_t ky0, \
                             int64_t ky1, int64_t pl, float* yrow) {                   \
    walk_row(k, rows, ky0, ky1, pl, S, full, yrow);                                    \
  }
WALK_FN(row_s1_full, 1, 1)
WALK_FN(row_s1_masked, 1, 0)
WALK_FN(row_s2_full, 2, 1)
WALK_FN(row_s2_masked, 2, 0)

AXLE_AVX2 void axle_f32_dwconv_nhwc_3x3__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                                  int64_t x_pixel, const float* w,
                                                  const axle_f32_epilogue_t* ep, int64_t oy0,
                                                  int64_t oy1, int64_t c0, int64_t c1,
                                                  int64_t y_pixel, int64_t y_block, float* y) {
  walk_t k;
  k.xp = x_pixel;
  k.yp = y_pixel;
  k.w = p->in[2];
  k.lo = _mm256_set1_ps(ep->min);
  k.hi = _mm256_set1_ps(ep->max);
  k.alpha = _mm256_set1_ps(ep->leaky_alpha);
  k.leaky = ep->leaky;
  const int64_t h = p->in[1], sy = p->stride[1], pt = p->pad[1], wo = p->out[2];
  k.strips = (wo + STRIP - 1) / STRIP;
  k.base = wo / k.strips;
  k.extra = wo % k.strips;
  const int64_t ch = p->in_channels;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t c = c0; c < c1; c += 8) {
    const int left = c1 - c >= 8 ? 8 : (int)(c1 - c);
    k.m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
    for (int t = 0; t < 9; ++t) k.wt[t] = _mm256_maskload_ps(w + t * ch + c, k.m);
    k.bias = ep->bias ? _mm256_maskload_ps(ep->bias + c, k.m) : _mm256_setzero_ps();
    if (c + 8 < c1) { /* the next group's weights: see dwconv_nhwc_avx512.c */
      for (int t = 0; t < 9; ++t) _mm_prefetch((const char*)(w + t * ch + c + 8), _MM_HINT_T0);
      if (ep->bias) _mm_prefetch((const char*)(ep->bias + c + 8), _MM_HINT_T0);
    }
    const int full = left == 8;
    const walk_fn row = p->stride[2] == 1 ? (full ? row_s1_full : row_s1_masked)
                                          : (full ? row_s2_full : row_s2_masked);
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      const float* rows[3];
      int64_t ky0, ky1;
      axle_window_rows_nhwc(x, h, k.w, k.xp, c, oy * sy - pt, 3, rows, &ky0, &ky1);
      row(&k, rows, ky0, ky1, p->pad[2], y + oy * wo * k.yp + c / 16 * y_block + c % 16);
    }
  }
}
