/* Depthwise 3x3 convolution over a channels-last image with AVX-512 (see
 * dwconv_nhwc.c for why channels-last): sixteen channels per vector, their
 * nine weight vectors held in registers while the walk covers the rows,
 * each output row cut into strips of up to 8 pixels whose accumulators
 * (8 independent FMA chains, enough to cover the FMA latency on two pipes)
 * take every tap as one load. Strips that reach into the padding skip the
 * taps outside the row; rows in the padding are skipped whole. Where the
 * strips are 7-8 pixels wide (MobileNetV2's 7, 14, 28, 56) and the strides
 * agree, full vectors take two output rows per strip. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "window.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))
/* The strips must inline: their pixel count and border handling are
 * constants that unroll and fold away there. */
#define AXLE_INLINE __attribute__((always_inline)) static inline

enum { STRIP = 8 };

typedef struct walk_t {
  __m512 wt[9], bias, lo, hi, alpha;
  int leaky;
  __mmask16 m;   /* the channels of this vector */
  int64_t ch;    /* channels (the weights' tap stride) */
  int64_t xp;    /* floats per input pixel (x_pixel) */
  int64_t yp;    /* floats per output pixel (y_pixel) */
  int64_t w, sx; /* input row width, column stride (1 or 2) */
} walk_t;

/* n outputs in each of R output rows (1, or 2 with the row stride S too),
 * column stride S, the first reading input column ix0. rows[r], r < (R -
 * 1) S + 3, are the input rows the window covers, valid for r in [rlo,
 * rhi); input row r feeds output row q with kernel row r - q S. Each input
 * column is loaded once and feeds every output whose window holds it (up
 * to three per row), so two rows per strip issue fewer loads and less
 * address arithmetic per output than one (which takes about 8 cycles per
 * output vector against 4.5 for its FMAs): 14x14 x 576 10 % faster,
 * stride 2 23 %. Columns outside [jlo, jhi) lie in the padding (their taps
 * are skipped); edge says which, as a constant (axle_window_strip_edge).
 * full: all 16 channels are live (no mask on loads and stores; GCC keeps
 * a mask used so often in a stack slot, reloading it per load). The
 * weights are copied to locals: left in *k, GCC read them from memory in
 * every FMA, and the loads bound the two-row strip. Row q's outputs go to
 * yo + q * y_row. */
AXLE_AVX512 AXLE_INLINE void strip(const walk_t* k, const float* const rows[5], int64_t rlo,
                                   int64_t rhi, int64_t ix0, const int n, const int S, const int R,
                                   const int edge, const int full, float* yo, int64_t y_row) {
  const int ncols = (n - 1) * S + 3;
  const int64_t xp = k->xp;
  int64_t jlo, jhi;
  axle_window_strip_cols(edge, ix0, ncols, k->w, &jlo, &jhi);
  const __mmask16 m = k->m;
  __m512 wt[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) wt[t] = k->wt[t];
  /* The sums start from the bias (one add less per output than adding it
   * at the end, as the reference does: measured 10 % faster). */
  __m512 acc[2][STRIP];
#pragma GCC unroll 8
  for (int i = 0; i < n; ++i) acc[0][i] = acc[1][i] = k->bias;
#pragma GCC unroll 5
  for (int r = 0; r < (R - 1) * S + 3; ++r) {
    if (r < rlo || r >= rhi) continue;
    const float* col = rows[r] + ix0 * xp;
#pragma GCC unroll 17
    for (int j = 0; j < ncols; ++j, col += xp) {
      if (j < jlo || j >= jhi) continue;
      __m512 v = full ? _mm512_loadu_ps(col) : _mm512_maskz_loadu_ps(m, col);
      /* One load per column, not one per FMA, which GCC would fold in. */
      __asm__("" : "+v"(v));
#pragma GCC unroll 2
      for (int q = 0; q < R; ++q) {
        const int ky = r - q * S;
        if (ky < 0 || ky > 2) continue;
          /* Column j is tap kx of pixel (j - kx) / S. */
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx)
          if (j >= kx && (j - kx) % S == 0 && (j - kx) / S < n)
            acc[q][(j - kx) / S] = _mm512_fmadd_ps(v, wt[ky * 3 + kx], acc[q][(j - kx) / S]);
      }
    }
  }
  /* Copied before the stores, which may alias *k as far as GCC knows. */
  const __m512 lo = k->lo, hi = k->hi, alpha = k->alpha;
  const int leaky = k->leaky;
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q)
#pragma GCC unroll 8
    for (int i = 0; i < n; ++i) {
      __m512 v = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[q][i]));
      if (leaky)
        v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
      float* out = yo + q * y_row + i * k->yp;
      if (full)
        _mm512_storeu_ps(out, v);
      else
        _mm512_mask_storeu_ps(out, m, v);
    }
}

#define STRIP_AT(n, e) strip(k, rows, rlo, rhi, ix0, n, S, R, e, full, yo, wo * k->yp)
#define STRIP_CASE(n) AXLE_STRIP_CASE(n, edge, STRIP_AT)

/* R output rows (see strip) for column stride S (1 or 2), in strips as
 * equal as 8 wide allows: 14 = 7 + 7, 28 = 4 x 7, 56 = 7 x 8. Two rows are
 * taken only where the strips come out 7 or 8 wide (MobileNetV2's 7, 14,
 * 28, 56), so only those strips are instantiated for them. rows_in: all
 * the input rows lie inside the image, as a constant, so the strips test
 * no row. With it and the strips' edges as constants (they had been one
 * "some column outside" kind, tested per column, which at 14x14 and 7x7
 * is every strip), ns per 16 outputs alone (Zen 5, 1 thread, best of 7):
 * 14x14 x 576 1.97 -> 1.71, x 384 1.73 -> 1.44-1.59, 7x7 x 960 1.95 ->
 * 1.59, stride 2 from 14x14 x 576 3.16 -> 2.70, 28x28 x 192 2.15 ->
 * 1.8-1.9; MobileNetV2 at 1 thread 2.969 -> 2.959 ms (8 rounds). */
AXLE_AVX512 AXLE_INLINE void walk_rows(const walk_t* k, const float* const rows[5], int64_t rlo,
                                       int64_t rhi, int64_t pl, int64_t wo, const int S,
                                       const int R, const int full, const int rows_in,
                                       float* yrow) {
  if (rows_in) {
    rlo = 0;
    rhi = (R - 1) * S + 3;
  }
  const int64_t strips = (wo + STRIP - 1) / STRIP, base = wo / strips, extra = wo % strips;
  int64_t ox = 0;
  for (int64_t s = 0; s < strips; ++s) {
    const int n = (int)(base + (s < extra));
    const int64_t ix0 = ox * S - pl;
    const int edge = axle_window_strip_edge(ix0, (n - 1) * S + 3, k->w);
    float* yo = yrow + ox * k->yp;
    if (R == 2) {
      switch (n) {
        STRIP_CASE(7)
        STRIP_CASE(8)
      }
    } else {
      switch (n) {
        STRIP_CASE(1)
        STRIP_CASE(2)
        STRIP_CASE(3)
        STRIP_CASE(4)
        STRIP_CASE(5)
        STRIP_CASE(6)
        STRIP_CASE(7)
        STRIP_CASE(8)
      }
    }
    ox += n;
  }
}

typedef void (*walk_fn)(const walk_t*, const float* const*, int64_t, int64_t, int64_t, int64_t,
                        float*);
#define WALK_FN(name, S, R, full, rows_in)                                               \
  AXLE_AVX512 static void name(const walk_t* k, const float* const rows[5], int64_t rlo, \
                               int64_t rhi, int64_t pl, int64_t wo, float* yrow) {       \
    walk_rows(k, rows, rlo, rhi, pl, wo, S, R, full, rows_in, yrow);                     \
  }
WALK_FN(row_s1_full, 1, 1, 1, 0)
WALK_FN(row_s1_masked, 1, 1, 0, 0)
WALK_FN(row_s2_full, 2, 1, 1, 0)
WALK_FN(row_s2_masked, 2, 1, 0, 0)
WALK_FN(rows2_s1, 1, 2, 1, 0)
WALK_FN(rows2_s2, 2, 2, 1, 0)
WALK_FN(rows2_s1_in, 1, 2, 1, 1)
WALK_FN(rows2_s2_in, 2, 2, 1, 1)

AXLE_AVX512 void axle_f32_dwconv_nhwc_3x3__avx512(const axle_f32_conv_params_t* p, const float* x,
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
  k.lo = _mm512_set1_ps(ep->min);
  k.hi = _mm512_set1_ps(ep->max);
  k.alpha = _mm512_set1_ps(ep->leaky_alpha);
  k.leaky = ep->leaky;
  const int64_t h = p->in[1], sy = p->stride[1], pt = p->pad[1], wo = p->out[2];
  for (int64_t c = c0; c < c1; c += 16) {
    k.m = c1 - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c1 - c)) - 1);
    for (int t = 0; t < 9; ++t) k.wt[t] = _mm512_maskz_loadu_ps(k.m, w + t * k.ch + c);
    k.bias = ep->bias ? _mm512_maskz_loadu_ps(k.m, ep->bias + c) : _mm512_setzero_ps();
    /* The next group's weights, nine lines 4 * ch bytes apart (and its
     * bias): in a network they come from the L3 or memory, and loaded when
     * the group starts their misses stalled it before its first pixel
     * (`perf`: this function's self time, ~2 % of MobileNetV2, on the
     * instructions after these loads). Zen 5, 1 thread, four alternating
     * rounds in the network: the 14x14 and 7x7 blocks 3-4 % faster (0.194-0.205
     * -> 0.189-0.192 ms, 0.138-0.155 -> 0.135-0.138), MobileNetV2 2.849 ->
     * 2.811 ms (medians, eight rounds); capped at AVX2 (its variant does the
     * same) 5.59-5.71 -> 5.51-5.60. */
    if (c + 16 < c1) {
      for (int t = 0; t < 9; ++t) _mm_prefetch((const char*)(w + t * k.ch + c + 16), _MM_HINT_T0);
      if (ep->bias) _mm_prefetch((const char*)(ep->bias + c + 16), _MM_HINT_T0);
    }
    const int full = c1 - c >= 16;
    const walk_fn row =
        k.sx == 1 ? (full ? row_s1_full : row_s1_masked) : (full ? row_s2_full : row_s2_masked);
    /* Pairs of rows where the strips are 7-8 wide and the strides agree. */
    const int64_t strips = (wo + STRIP - 1) / STRIP;
    const int pairs = full && sy == k.sx && wo / strips >= 7;
    for (int64_t oy = oy0; oy < oy1;) {
      const int two = pairs && oy + 1 < oy1;
      const float* rows[5];
      int64_t rlo, rhi;
      /* Output rows [oy, oy + 1 + two) read (two ? sy : 0) + 3 input rows. */
      axle_window_rows_nhwc(x, h, k.w, k.xp, c, oy * sy - pt, two ? sy + 3 : 3, rows, &rlo, &rhi);
      const int in = rlo == 0 && rhi == sy + 3;
      const walk_fn walk = !two ? row
                           : in ? (sy == 1 ? rows2_s1_in : rows2_s2_in)
                                : (sy == 1 ? rows2_s1 : rows2_s2);
      walk(&k, rows, rlo, rhi, p->pad[2], wo, y + oy * wo * k.yp + c / 16 * y_block + c % 16);
      oy += two ? 2 : 1;
    }
  }
}
