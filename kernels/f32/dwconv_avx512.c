/* Depthwise 3x3 convolution of one plane with AVX-512, stride 1 or 2: the
 * scheme of dwconv_avx2.c (in place, three FMA chains, the flat stride-1
 * walk for "same" planes) on 16 lanes. Opmasks replace what AVX2 builds
 * from compares and blends: taps in the padding are masked loads (masked-off
 * lanes read nothing, so they may lie outside the plane, and give 0), a
 * row's last group is a masked store, and stride 2 deinterleaves with one
 * two-source permute per tap instead of shuffles plus a permute back. */
#include <immintrin.h>

#include "axle_kernels.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))

/* Lanes i with 0 <= c + i < width. */
static inline __mmask16 lanes_inside(int64_t c, int64_t width) {
  const int64_t lo = c < 0 ? -c : 0, hi = width - c;
  if (lo >= 16 || hi <= lo) return 0;
  const uint32_t below_hi = hi >= 16 ? 0xFFFFu : (1u << hi) - 1;
  return (__mmask16)(below_hi & ~((1u << lo) - 1));
}

/* Sixteen floats at row + c; m: NULL, or the lanes of the load inside the
 * row (the others read as 0). */
AXLE_AVX512 static inline __m512 load16(const float* row, int64_t c, const __mmask16* m) {
  if (!m) return _mm512_loadu_ps(row + c);
  /* Through uintptr_t: row + c may lie before the row. */
  const float* at = (const float*)((uintptr_t)row + (uintptr_t)(c * (int64_t)sizeof(float)));
  return _mm512_maskz_loadu_ps(*m, at);
}

/* Even / odd floats of the 32 in lo:hi, in order. */
AXLE_AVX512 static inline __m512 even_of(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(lo, idx, hi);
}
AXLE_AVX512 static inline __m512 odd_of(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_ps(lo, idx, hi);
}

/* Offsets from the group's leftmost tap column of its loads, per stride. */
static const int64_t k_load_at[2][4] = {{0, 1, 2, 0}, {0, 16, 2, 18}};

/* acc + one kernel row (weights w0..w2) over input row `row` for the 16
 * outputs whose leftmost tap is input column c, at stride s; m: NULL, or
 * the masks of the loads at k_load_at[s - 1]. */
AXLE_AVX512 static inline __m512 row_taps(__m512 acc, int64_t s, const float* row, int64_t c,
                                          const __mmask16* m, const __m512* w) {
  const int64_t* at = k_load_at[s - 1];
#define AXLE_LOAD(k) load16(row, c + at[k], m ? m + (k) : NULL)
  if (s == 1) {
    acc = _mm512_fmadd_ps(w[0], AXLE_LOAD(0), acc);
    acc = _mm512_fmadd_ps(w[1], AXLE_LOAD(1), acc);
    return _mm512_fmadd_ps(w[2], AXLE_LOAD(2), acc);
  }
  const __m512 a = AXLE_LOAD(0), b = AXLE_LOAD(1), a2 = AXLE_LOAD(2), b2 = AXLE_LOAD(3);
#undef AXLE_LOAD
  acc = _mm512_fmadd_ps(w[0], even_of(a, b), acc);
  acc = _mm512_fmadd_ps(w[1], odd_of(a, b), acc);
  return _mm512_fmadd_ps(w[2], even_of(a2, b2), acc);
}

typedef struct dw_plane_t {
  __m512 w[9];
  __m512 bias, lo, hi, alpha;
  int leaky;
  int64_t iw;
  __mmask16 tail; /* lanes of a row's last column group */
} dw_plane_t;

/* Clamp and leaky. */
AXLE_AVX512 static inline __m512 activate(const dw_plane_t* d, __m512 v) {
  /* max/min return their second operand for a NaN: NaN passes the clamp. */
  v = _mm512_min_ps(d->hi, _mm512_max_ps(d->lo, v));
  if (d->leaky)
    v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, d->alpha);
  return v;
}

/* Residual, clamp, leaky and the store of the lanes m of v at y. */
AXLE_AVX512 static inline void finish(const dw_plane_t* d, __m512 v, const float* res, float* y,
                                      __mmask16 m) {
  const int full = m == 0xFFFF;
  if (res) v = _mm512_add_ps(v, full ? _mm512_loadu_ps(res) : _mm512_maskz_loadu_ps(m, res));
  v = activate(d, v);
  if (full)
    _mm512_storeu_ps(y, v);
  else
    _mm512_mask_storeu_ps(y, m, v);
}

/* Output column group gi of one row: rows[t] is input row t of the window,
 * NULL in the padding; masked: the group reaches outside the row. */
AXLE_AVX512 static inline void out_group(const dw_plane_t* d, int64_t s, int64_t pl,
                                         const float* const rows[3], int64_t gi, int masked,
                                         int64_t groups, const float* res, float* y) {
  const int64_t c = gi * 16 * s - pl;
  /* The masks once per group, not per load: on the small planes most
   * groups are masked. */
  __mmask16 m[4];
  for (int k = 0; k < 4; ++k) m[k] = lanes_inside(c + k_load_at[s - 1][k], d->iw);
  /* One sum per kernel row: three short FMA chains instead of one of nine. */
  __m512 acc[3];
  for (int t = 0; t < 3; ++t) {
    acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
    if (rows[t]) acc[t] = row_taps(acc[t], s, rows[t], c, masked ? m : NULL, d->w + 3 * t);
  }
  finish(d, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]), res ? res + gi * 16 : NULL,
         y + gi * 16, gi == groups - 1 ? d->tail : (__mmask16)0xFFFF);
}

/* One output row: plain loads on the interior groups [g_lo, g_hi). Inlined
 * with a constant stride, so each loop compiles without the tests. */
AXLE_AVX512 static inline void out_row(const dw_plane_t* d, int64_t s, int64_t pl,
                                       const float* const rows[3], int64_t g_lo, int64_t g_hi,
                                       int64_t groups, const float* res, float* y) {
  for (int64_t gi = 0; gi < g_lo; ++gi) out_group(d, s, pl, rows, gi, 1, groups, res, y);
  for (int64_t gi = g_lo; gi < g_hi; ++gi) out_group(d, s, pl, rows, gi, 0, groups, res, y);
  for (int64_t gi = g_hi; gi < groups; ++gi) out_group(d, s, pl, rows, gi, 1, groups, res, y);
}

/* Lanes with lo <= v < hi. */
AXLE_AVX512 static inline __mmask16 in_range(__m512i v, int64_t lo, int64_t hi) {
  return _mm512_cmpge_epi32_mask(v, _mm512_set1_epi32((int)lo)) &
         _mm512_cmplt_epi32_mask(v, _mm512_set1_epi32((int)hi));
}

/* Stride 1 with an output as wide as the input ("same" padding): the
 * window of output o = oy * w + ox starts at input o + (t - pt) * w +
 * (u - pl) for tap (t, u), so the plane is one flat run of vectors that
 * ignores row boundaries (see dwconv_avx2.c). Runs of vectors whose taps
 * all lie inside use plain loads; any other vector has each lane track its
 * (oy, ox) to mask the taps that fall into the padding. */
AXLE_AVX512 static void plane_same_s1(const dw_plane_t* d, const axle_f32_conv_params_t* p,
                                      const float* x, const float* residual, float* y) {
  const int64_t w = p->in[2], h = p->in[1], pt = p->pad[1], pl = p->pad[2];
  const int64_t n = p->out[1] * w;
  /* Vectors starting at ox0 in [pl, last] of rows [pt, h + pt - 2) have
   * all their taps inside the plane. */
  const int64_t last = w + pl - 18;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i vw = _mm512_set1_epi32((int)w), one = _mm512_set1_epi32(1);
  int64_t o = 0, ox0 = 0, oy0 = 0; /* (oy0, ox0): output o, lane 0 */
  while (o < n) {
    if (oy0 >= pt && oy0 < h + pt - 2 && ox0 >= pl && ox0 <= last) {
      const int64_t count = (last - ox0) / 16 + 1;
      const float* at = x + o + (0 - pt) * w - pl;
      for (int64_t i = 0; i < count; ++i, at += 16) {
        __m512 acc[3];
        for (int t = 0; t < 3; ++t) {
          acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
          for (int u = 0; u < 3; ++u)
            acc[t] = _mm512_fmadd_ps(d->w[3 * t + u], _mm512_loadu_ps(at + t * w + u), acc[t]);
        }
        const int64_t oi = o + 16 * i;
        finish(d, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]),
               residual ? residual + oi : NULL, y + oi, 0xFFFF);
      }
      o += 16 * count;
      ox0 += 16 * count;
    } else {
      /* Lanes past the row end belong to the next row (several rows on when
       * the row is narrower than a vector). */
      __m512i ox = _mm512_add_epi32(_mm512_set1_epi32((int)ox0), lane);
      __m512i oy = _mm512_set1_epi32((int)oy0);
      for (;;) {
        const __mmask16 wrap = _mm512_cmpge_epi32_mask(ox, vw);
        if (!wrap) break;
        ox = _mm512_mask_sub_epi32(ox, wrap, ox, vw);
        oy = _mm512_mask_add_epi32(oy, wrap, oy, one);
      }
      __mmask16 cm[3], rm[3];
      for (int k = 0; k < 3; ++k) {
        cm[k] = in_range(ox, pl - k, w + pl - k);
        rm[k] = in_range(oy, pt - k, h + pt - k);
      }
      __m512 acc[3];
      for (int t = 0; t < 3; ++t) {
        /* Through uintptr_t: the tap may point before the plane. */
        const uintptr_t at = (uintptr_t)x + (uintptr_t)((o + (t - pt) * w - pl) * 4);
        acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
        for (int u = 0; u < 3; ++u)
          acc[t] = _mm512_fmadd_ps(
              d->w[3 * t + u],
              _mm512_maskz_loadu_ps(rm[t] & cm[u], (const float*)(at + (uintptr_t)u * 4)), acc[t]);
      }
      const __mmask16 m = lanes_inside(0, n - o);
      finish(d, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]),
             residual ? residual + o : NULL, y + o, m);
      o += 16;
      ox0 += 16;
    }
    while (ox0 >= w) {
      ox0 -= w;
      ++oy0;
    }
  }
}

/* Stride 2 with output rows of at most 8 (the 14x14 -> 7x7 planes): two
 * output rows per vector, row oy in lanes 0-7 and oy + 1 in lanes 8-15.
 * even_of / odd_of of loads at the same columns of the two windows' rows
 * (2 input rows apart) give both halves with the permutes of one row, so
 * these planes take half the vectors of the row-by-row walk, which would
 * fill 7 of 16 lanes. */
AXLE_AVX512 static void plane_s2_narrow(const dw_plane_t* d, const axle_f32_conv_params_t* p,
                                        const float* x, const float* residual, float* y) {
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], c = -p->pad[2];
  /* 16 columns from c and 16 from c + 2 hold the taps of up to 8 outputs. */
  const __mmask16 m[2] = {lanes_inside(c, iw), lanes_inside(c + 2, iw)};
  const __mmask16 first = lanes_inside(0, ow), second = (__mmask16)(first << 8);
  for (int64_t oy = 0; oy < oh; oy += 2) {
    const int two = oy + 1 < oh;
    __m512 acc[3];
    for (int t = 0; t < 3; ++t) {
      __m512 v[2][2]; /* [load at c, c + 2][output row oy, oy + 1] */
      for (int r = 0; r < 2; ++r) {
        const int64_t iy = (oy + r) * 2 - pt + t;
        const int inside = iy >= 0 && iy < ih && (r == 0 || two);
        for (int k = 0; k < 2; ++k)
          v[k][r] = inside ? load16(x + iy * iw, c + 2 * k, &m[k]) : _mm512_setzero_ps();
      }
      acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
      acc[t] = _mm512_fmadd_ps(d->w[3 * t], even_of(v[0][0], v[0][1]), acc[t]);
      acc[t] = _mm512_fmadd_ps(d->w[3 * t + 1], odd_of(v[0][0], v[0][1]), acc[t]);
      acc[t] = _mm512_fmadd_ps(d->w[3 * t + 2], even_of(v[1][0], v[1][1]), acc[t]);
    }
    __m512 out = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]);
    /* Row oy + 1 starts ow floats after row oy, in lane 8: its lanes are
     * addressed from 8 floats before it, through uintptr_t as that may lie
     * before the plane. */
    const int64_t o = oy * ow;
    const uintptr_t back = (uintptr_t)((o + ow - 8) * (int64_t)sizeof(float));
    if (residual) {
      __m512 r = _mm512_maskz_loadu_ps(first, residual + o);
      if (two) r = _mm512_mask_loadu_ps(r, second, (const float*)((uintptr_t)residual + back));
      out = _mm512_add_ps(out, r);
    }
    out = activate(d, out);
    _mm512_mask_storeu_ps(y + o, first, out);
    if (two) _mm512_mask_storeu_ps((float*)((uintptr_t)y + back), second, out);
  }
}

AXLE_AVX512 void axle_f32_dwconv_plane_3x3__avx512(const axle_f32_conv_params_t* p,
                                                   const float* x_plane, const float* w, float bias,
                                                   const float* residual,
                                                   const axle_f32_epilogue_t* ep, float* y_plane) {
  const int64_t s = p->stride[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t groups = (ow + 15) / 16;
  dw_plane_t d;
  for (int i = 0; i < 9; ++i) d.w[i] = _mm512_set1_ps(w[i]);
  d.bias = _mm512_set1_ps(bias);
  d.lo = _mm512_set1_ps(ep->min);
  d.hi = _mm512_set1_ps(ep->max);
  d.alpha = _mm512_set1_ps(ep->leaky_alpha);
  d.leaky = ep->leaky;
  d.iw = iw;
  d.tail = lanes_inside(0, ow - (groups - 1) * 16);
  if (s == 1 && ow == iw) {
    plane_same_s1(&d, p, x_plane, residual, y_plane);
    return;
  }
  if (s == 2 && ow <= 8) {
    plane_s2_narrow(&d, p, x_plane, residual, y_plane);
    return;
  }
  /* Column groups [g_lo, g_hi) load only columns inside the row: their
   * leftmost column gi * 16s - pl is >= 0 and their rightmost (16 + 1
   * floats on from it at stride 1, 32 + 1 at stride 2) < iw. */
  const int64_t span = s == 1 ? 17 : 33;
  int64_t g_lo = (pl + 16 * s - 1) / (16 * s);
  int64_t g_hi = iw - 1 + pl - span < 0 ? 0 : (iw - 1 + pl - span) / (16 * s) + 1;
  if (g_hi > groups) g_hi = groups;
  if (g_lo > g_hi) g_lo = g_hi;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t iy = oy * s - pt;
    const float* rows[3];
    for (int64_t t = 0; t < 3; ++t)
      rows[t] = iy + t >= 0 && iy + t < ih ? x_plane + (iy + t) * iw : NULL;
    const float* res = residual ? residual + oy * ow : NULL;
    float* y = y_plane + oy * ow;
    if (s == 1)
      out_row(&d, 1, pl, rows, g_lo, g_hi, groups, res, y);
    else
      out_row(&d, 2, pl, rows, g_lo, g_hi, groups, res, y);
  }
}
