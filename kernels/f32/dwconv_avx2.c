/* Depthwise 3x3 convolution of one plane with AVX2/FMA, stride 1 or 2.
 *
 * Eight outputs per step, nine FMAs in three short chains (one per kernel
 * row), straight from the input plane: no padded copy, which used to cost
 * a pass over the plane and, on the 7x7 and 14x14 planes of MobileNet, more
 * than the arithmetic itself. Taps that fall into the padding are read with
 * masked loads, whose masked-off lanes read nothing and yield the padding's
 * zero, or skipped when a whole window row is outside. "Same" planes with
 * padding 1 and rows of 14-16 outputs or more take four output rows per
 * pass with the weights in registers (plane_quads); other stride-1 "same"
 * planes walk the plane as one flat array (plane_same_s1); the rest take
 * four output rows per pass in column groups with the weights as FMA
 * memory operands (plane_rows). Both row walks use plain loads inside the
 * row and masked ones at its ends. Stride 2 deinterleaves even and odd
 * columns with in-lane shuffles. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "dwconv_rows.h"
#include "masked_at.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

int axle_f32_dwconv_3x3__avx2_fma_supports(const axle_f32_conv_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->kernel[1] == 3 &&
         p->kernel[2] == 3 && p->dilation[1] == 1 && p->dilation[2] == 1 &&
         p->stride[1] == p->stride[2] && (p->stride[1] == 1 || p->stride[1] == 2) &&
         p->pad[1] >= 0 && p->pad[2] >= 0;
}

/* Lanes i with 0 <= c + i < width. */
AXLE_AVX2 static inline __m256i lanes_inside(int64_t c, int64_t width) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int64_t lo = c < -8 ? -9 : c, hi = width - c > 8 ? 8 : width - c;
  return _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)(-lo - 1))),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), lane));
}

/* The first n (< 8) lanes of v to y: a masked store is microcoded and slow
 * on AMD cores, and every row of a plane whose width is not a multiple of 8
 * ends in one. */
AXLE_AVX2 static inline void store_first(float* y, __m256 v, int64_t n) {
  __m128 h = _mm256_castps256_ps128(v);
  if (n & 4) {
    _mm_storeu_ps(y, h);
    h = _mm256_extractf128_ps(v, 1);
    y += 4;
  }
  if (n & 2) {
    _mm_storel_pi((__m64*)y, h);
    h = _mm_movehl_ps(h, h);
    y += 2;
  }
  if (n & 1) _mm_store_ss(y, h);
}

/* Even / odd floats of the 16 in lo:hi, in the order 0 1 4 5 2 3 6 7 of
 * their positions (two in-lane shuffles; putting them in order would take
 * a lane-crossing permute per tap, which is slow, instead of one per
 * output group: see unpermute). */
AXLE_AVX2 static inline __m256 even_of(__m256 lo, __m256 hi) {
  return _mm256_shuffle_ps(lo, hi, 0x88);
}
AXLE_AVX2 static inline __m256 odd_of(__m256 lo, __m256 hi) {
  return _mm256_shuffle_ps(lo, hi, 0xDD);
}
/* Outputs accumulated in the order of even_of / odd_of, back in order. */
AXLE_AVX2 static inline __m256 unpermute(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

typedef struct dw_plane_t {
  __m256 w[9]; /* the walks but plane_quads, which keeps its own */
  __m256 bias, lo, hi, alpha;
  int leaky;
  int64_t iw, ow, tail; /* tail: outputs in the last column group */
  __m256i tail_mask;
} dw_plane_t;

/* Residual, clamp, leaky and the store of output group gi of row y. */
AXLE_AVX2 static inline void finish(const dw_plane_t* d, __m256 acc, const float* res, float* y,
                                    int64_t gi, int last) {
  if (res)
    acc = _mm256_add_ps(acc, last ? _mm256_maskload_ps(res + gi * 8, d->tail_mask)
                                  : _mm256_loadu_ps(res + gi * 8));
  acc = _mm256_min_ps(d->hi, _mm256_max_ps(d->lo, acc));
  if (d->leaky) acc = _mm256_blendv_ps(acc, _mm256_mul_ps(acc, d->alpha), acc);
  if (last)
    store_first(y + gi * 8, acc, d->tail);
  else
    _mm256_storeu_ps(y + gi * 8, acc);
}

/* The row-blocked walk (planes other than "same" stride 1): four output
 * rows per pass over 8-column groups, each input row loaded once for every
 * output row it feeds (stride 1: 6 rows for 4 outputs instead of 12), as
 * in dwconv_avx512.c. With 16 registers the weights mostly stay FMA memory
 * operands; the 8 accumulators (two chains per output row) and a row's
 * three tap vectors are what must stay in registers. */
#define AXLE_INLINE __attribute__((always_inline)) inline

/* Offsets from a group's leftmost tap column c of its loads, per stride:
 * stride 2 reads 16 columns from c (even / odd) and 16 from c + 2. */
static const int64_t k_load_at[2][4] = {{0, 1, 2, 0}, {0, 8, 2, 10}};

/* The nine weights as named values (see dwconv_avx512.c). */
typedef struct dw_taps_t {
  __m256 w00, w01, w02, w10, w11, w12, w20, w21, w22;
} dw_taps_t;
#define AXLE_KROW(k) w->w##k##0, w->w##k##1, w->w##k##2

/* A row's three tap vectors for 8 outputs, as values. */
typedef struct dw_row_t {
  __m256 left, mid, right;
} dw_row_t;

AXLE_AVX2 static AXLE_INLINE __m256 taps(__m256 acc, __m256 wa, __m256 wb, __m256 wc,
                                         dw_row_t v) {
  acc = _mm256_fmadd_ps(wa, v.left, acc);
  acc = _mm256_fmadd_ps(wb, v.mid, acc);
  return _mm256_fmadd_ps(wc, v.right, acc);
}

/* Eight floats at row + at; m: NULL (inside the row) or the lanes inside. */
AXLE_AVX2 static AXLE_INLINE __m256 load_at(const float* row, int64_t at, const __m256i* m) {
  if (!m) return _mm256_loadu_ps(row + at);
  return _mm256_maskload_ps(axle_f32_masked_at(row, at), *m);
}

/* Row `row`'s tap vectors for the 8 outputs whose leftmost tap is column c;
 * at stride 2 in the order of even_of (unpermuted once per output). m:
 * NULL, or the masks of the loads at k_load_at[s - 1], used by the loads
 * whose bits are set in `masked` (a constant; the others are plain). */
AXLE_AVX2 static AXLE_INLINE dw_row_t row_vectors(int64_t s, const float* row, int64_t c,
                                                  const __m256i* m, const int masked) {
  const int64_t* at = k_load_at[s - 1];
  dw_row_t v;
#define AXLE_LOAD(i) load_at(row, c + at[i], m && (masked >> (i)&1) ? m + (i) : NULL)
  if (s == 1) {
    v.left = AXLE_LOAD(0);
    v.mid = AXLE_LOAD(1);
    v.right = AXLE_LOAD(2);
  } else {
    const __m256 a = AXLE_LOAD(0), b = AXLE_LOAD(1);
    v.left = even_of(a, b);
    v.mid = odd_of(a, b);
    v.right = even_of(AXLE_LOAD(2), AXLE_LOAD(3));
  }
#undef AXLE_LOAD
  return v;
}

/* Output group gi of four output rows from oy (the first `rows` stored):
 * input rows from iy0 = oy * s - pt, columns from c. full: every input row
 * inside (no row tests); m as for row_vectors. Inlined with constant
 * stride and flags. */
AXLE_AVX2 static AXLE_INLINE void block4(const dw_plane_t* d, const dw_taps_t* w, int64_t s,
                                         int full, const float* x, int64_t ih, int64_t iy0,
                                         int64_t c, const __m256i* m, int64_t rows,
                                         int64_t gi, int last, const float* res, float* y) {
  const int64_t iw = d->iw, ow = d->ow;
  __m256 a0 = d->bias, a1 = d->bias, a2 = d->bias, a3 = d->bias;
  __m256 b0 = _mm256_setzero_ps(), b1 = b0, b2 = b0, b3 = b0;
  dw_row_t v;
  /* Rows in the padding add nothing. */
#define AXLE_IN(t)                                 \
  ((full || (iy0 + (t) >= 0 && iy0 + (t) < ih)) && \
   ((v = row_vectors(s, x + (iy0 + (t)) * iw, c, m, 0xF)), 1))
#define AXLE_TAPS(acc, k) acc = taps(acc, AXLE_KROW(k), v)
  AXLE_DW_ROWS4(s, a0, a1, a2, a3, b0, b1, b2, b3);
#undef AXLE_TAPS
#undef AXLE_IN
  /* Stride 2 sums come in the order of even_of. */
#define AXLE_OUT(r, va, vb)                                                           \
  do {                                                                                \
    const __m256 sum = _mm256_add_ps(va, vb);                                         \
    finish(d, s == 1 ? sum : unpermute(sum), res ? res + (r) * ow : NULL, y + (r) * ow, \
           gi, last);                                                                 \
  } while (0)
  AXLE_OUT(0, a0, b0);
  if (full || rows > 1) AXLE_OUT(1, a1, b1);
  if (full || rows > 2) AXLE_OUT(2, a2, b2);
  if (full || rows > 3) AXLE_OUT(3, a3, b3);
#undef AXLE_OUT
}

/* Any plane at stride 1 or 2, four output rows per pass; column groups
 * [g_lo, g_hi) load only columns inside the row. */
AXLE_AVX2 static void plane_rows(const dw_plane_t* d, int64_t s, const axle_f32_conv_params_t* p,
                                 int64_t g_lo, int64_t g_hi, const float* x,
                                 const float* residual, float* y_plane) {
  const int64_t ih = p->in[1], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t groups = (ow + 7) / 8;
  const dw_taps_t w = {d->w[0], d->w[1], d->w[2], d->w[3], d->w[4],
                       d->w[5], d->w[6], d->w[7], d->w[8]};
  for (int64_t oy = 0; oy < oh; oy += 4) {
    const int64_t rows = oh - oy < 4 ? oh - oy : 4, iy0 = oy * s - pt;
    const int full = rows == 4 && iy0 >= 0 && iy0 + 3 * s + 3 <= ih;
    const float* res = residual ? residual + oy * ow : NULL;
    float* y = y_plane + oy * ow;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t c = gi * 8 * s - pl;
      const int last = gi == groups - 1 && d->tail != 8;
      if (gi >= g_lo && gi < g_hi) {
        if (full) {
          if (s == 1)
            block4(d, &w, 1, 1, x, ih, iy0, c, NULL, 4, gi, last, res, y);
          else
            block4(d, &w, 2, 1, x, ih, iy0, c, NULL, 4, gi, last, res, y);
        } else if (s == 1) {
          block4(d, &w, 1, 0, x, ih, iy0, c, NULL, rows, gi, last, res, y);
        } else {
          block4(d, &w, 2, 0, x, ih, iy0, c, NULL, rows, gi, last, res, y);
        }
        continue;
      }
      __m256i m[4];
      for (int i = 0; i < 4; ++i) m[i] = lanes_inside(c + k_load_at[s - 1][i], d->iw);
      if (s == 1)
        block4(d, &w, 1, 0, x, ih, iy0, c, m, rows, gi, last, res, y);
      else
        block4(d, &w, 2, 0, x, ih, iy0, c, m, rows, gi, last, res, y);
    }
  }
}

/* Output group gi (leftmost tap column c) of R (1 or 4) output rows of
 * plane_quads from input rows row[t], t < (R - 1) S + 3 (output row r
 * reads rows r S .. r S + 2), at stride S; in[t]: row t lies inside the
 * plane (full: all do). m, masked: the masks of the group's loads at the
 * row's ends and which loads take them (row_vectors). wt: the nine
 * weights, which the caller holds in locals so that they stay in
 * registers (read from *d they were FMA memory operands again after every
 * store, which may alias them). */
AXLE_AVX2 static AXLE_INLINE void quad_group(const dw_plane_t* d, const __m256 wt[9], const int S,
                                             const int R, const int full, const uintptr_t row[9],
                                             const int in[9], int64_t c, const __m256i* m,
                                             const int masked, int64_t gi, int last,
                                             const float* res, float* y) {
  __m256 acc[4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = d->bias;
#pragma GCC unroll 9
  for (int t = 0; t < (R - 1) * S + 3; ++t) {
    if (!full && !in[t]) continue;
    dw_row_t v = row_vectors(S, (const float*)row[t], c, m, masked);
    /* Loaded once for every output row it feeds, not folded into each
     * FMA. */
    __asm__("" : "+x"(v.left), "+x"(v.mid), "+x"(v.right));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int ky = t - r * S;
      if (ky < 0 || ky > 2) continue;
      /* Each kernel row's three taps as a partial sum of its own, added to
       * the row's sum: a chain of 9 dependent FMAs per output vector left
       * the two pipes waiting on their latency. */
      __m256 part = _mm256_mul_ps(wt[3 * ky], v.left);
      part = _mm256_fmadd_ps(wt[3 * ky + 1], v.mid, part);
      part = _mm256_fmadd_ps(wt[3 * ky + 2], v.right, part);
      acc[r] = _mm256_add_ps(acc[r], part);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    finish(d, S == 1 ? acc[r] : unpermute(acc[r]), res ? res + r * d->ow : NULL, y + r * d->ow, gi,
           last);
}

/* R output rows of plane_quads, group by group (two or more): plain loads
 * inside the row, masked ones at its ends: in the first group only the
 * load from column -1 (rows of 14 or more leave its others inside), in
 * the last every load (`end`). */
AXLE_AVX2 static AXLE_INLINE void quad_rows(const dw_plane_t* d, const __m256 wt[9], const int S,
                                            const int R, const int full, const uintptr_t row[9],
                                            const int in[9], int64_t groups, const __m256i* first,
                                            const __m256i end[4], const float* res, float* y) {
  quad_group(d, wt, S, R, full, row, in, -1, first, 0x1, 0, 0, res, y);
#pragma GCC unroll 2
  for (int64_t gi = 1; gi + 1 < groups; ++gi)
    quad_group(d, wt, S, R, full, row, in, gi * 8 * S - 1, NULL, 0, gi, 0, res, y);
  quad_group(d, wt, S, R, full, row, in, (groups - 1) * 8 * S - 1, end, 0xF, groups - 1,
             d->tail != 8, res, y);
}

/* Four output rows per pass (the rows left over one by one), each input
 * row's loads (and at stride 2 shuffles) made once for every output row
 * it feeds, the weights in registers, each kernel row's taps a partial
 * sum of its own (one chain of nine FMAs per output vector left the pipes
 * waiting on their latency). For the planes `quads` takes. */
AXLE_AVX2 static void plane_quads(const dw_plane_t* d, const float* w, int64_t s,
                                  const axle_f32_conv_params_t* p, const float* x,
                                  const float* residual, float* y_plane) {
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2], pt = p->pad[1];
  const int64_t groups = (ow + 7) / 8;
  /* Broadcast from w, not copied from a dw_plane_t: the nine vectors went
   * through a rep movsq, about a tenth of a 4-row band's call. */
  __m256 wt[9];
  for (int t = 0; t < 9; ++t) wt[t] = _mm256_broadcast_ss(w + t);
  /* The first group masks only its load from column -1 (quad_rows). */
  const __m256i first = lanes_inside(-1 + k_load_at[s - 1][0], iw);
  __m256i end[4];
  for (int i = 0; i < 4; ++i)
    end[i] = lanes_inside((groups - 1) * 8 * s - 1 + k_load_at[s - 1][i], iw);
  for (int64_t oy = 0; oy < oh;) {
    const int64_t rows = oh - oy >= 4 ? 4 : 1;
    uintptr_t row[9];
    int in[9], full = 1;
    for (int64_t t = 0; t < (rows - 1) * s + 3; ++t) {
      const int64_t iy = oy * s - pt + t;
      in[t] = iy >= 0 && iy < ih;
      full &= in[t];
      /* Through uintptr_t: a row in the padding lies outside the plane. */
      row[t] = (uintptr_t)x + (uintptr_t)(iy * iw * (int64_t)sizeof(float));
    }
    const float* res = residual ? residual + oy * ow : NULL;
    float* y = y_plane + oy * ow;
    if (s == 1) {
      if (rows == 1)
        quad_rows(d, wt, 1, 1, 0, row, in, groups, &first, end, res, y);
      else if (full)
        quad_rows(d, wt, 1, 4, 1, row, in, groups, &first, end, res, y);
      else
        quad_rows(d, wt, 1, 4, 0, row, in, groups, &first, end, res, y);
    } else if (rows == 1) {
      quad_rows(d, wt, 2, 1, 0, row, in, groups, &first, end, res, y);
    } else if (full) {
      quad_rows(d, wt, 2, 4, 1, row, in, groups, &first, end, res, y);
    } else {
      quad_rows(d, wt, 2, 4, 0, row, in, groups, &first, end, res, y);
    }
    oy += rows;
  }
}

/* Residual, clamp, leaky and the store of the `left` (1..8 or more) outputs
 * of vector v at flat position o. */
AXLE_AVX2 static inline void finish_flat(const dw_plane_t* d, __m256 v, const float* residual,
                                         float* y, int64_t o, int64_t left) {
  if (residual)
    v = _mm256_add_ps(v, left >= 8 ? _mm256_loadu_ps(residual + o)
                                   : _mm256_maskload_ps(residual + o, lanes_inside(0, left)));
  v = _mm256_min_ps(d->hi, _mm256_max_ps(d->lo, v));
  if (d->leaky) v = _mm256_blendv_ps(v, _mm256_mul_ps(v, d->alpha), v);
  if (left >= 8)
    _mm256_storeu_ps(y + o, v);
  else
    store_first(y + o, v, left);
}

/* Lanes with lo <= v < hi. */
AXLE_AVX2 static inline __m256i in_range(__m256i v, int64_t lo, int64_t hi) {
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)lo), v),
                             _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), v));
}

/* Stride 1 with an output as wide as the input ("same" padding): the
 * window of output o = oy * w + ox starts at input o + (t - pt) * w +
 * (u - pl) for tap (t, u), a fixed shift, so the plane is one flat run of
 * 8-wide vectors that ignores row boundaries: no per-row work, which is
 * what small planes (7x7, 14x14) are made of. Runs of vectors whose taps
 * all lie inside use plain loads; any other vector (plane borders, a vector
 * spanning two rows) has each lane track its (oy, ox) to mask the taps
 * that fall into the padding. */
AXLE_AVX2 static void plane_same_s1(const dw_plane_t* d, const axle_f32_conv_params_t* p,
                                    const float* x, const float* residual, float* y) {
  const int64_t w = p->in[2], h = p->in[1], pt = p->pad[1], pl = p->pad[2];
  const int64_t n = p->out[1] * w;
  /* Vectors starting at ox0 in [pl, last] of rows [pt, h + pt - 2) have
   * all their taps inside the plane. */
  const int64_t last = w + pl - 10;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i vw = _mm256_set1_epi32((int)w);
  int64_t o = 0, ox0 = 0, oy0 = 0; /* (oy0, ox0): output o, lane 0 */
  while (o < n) {
    if (oy0 >= pt && oy0 < h + pt - 2 && ox0 >= pl && ox0 <= last) {
      /* A run of interior vectors, plain loads, no per-vector tests. */
      const int64_t count = (last - ox0) / 8 + 1;
      const float* at = x + o + (0 - pt) * w - pl;
      for (int64_t i = 0; i < count; ++i, at += 8) {
        __m256 acc[3];
        for (int t = 0; t < 3; ++t) {
          acc[t] = t == 0 ? d->bias : _mm256_setzero_ps();
          for (int u = 0; u < 3; ++u)
            acc[t] = _mm256_fmadd_ps(d->w[3 * t + u], _mm256_loadu_ps(at + t * w + u), acc[t]);
        }
        finish_flat(d, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), acc[2]), residual, y,
                    o + 8 * i, 8);
      }
      o += 8 * count;
      ox0 += 8 * count;
    } else {
      /* Lanes past the row end belong to the next row (several rows on when
       * the row is narrower than a vector); taps in the padding are masked. */
      __m256i ox = _mm256_add_epi32(_mm256_set1_epi32((int)ox0), lane);
      __m256i oy = _mm256_set1_epi32((int)oy0);
      for (;;) {
        const __m256i wrap = _mm256_cmpgt_epi32(ox, _mm256_sub_epi32(vw, _mm256_set1_epi32(1)));
        if (_mm256_testz_si256(wrap, wrap)) break;
        ox = _mm256_sub_epi32(ox, _mm256_and_si256(wrap, vw));
        oy = _mm256_sub_epi32(oy, wrap);
      }
      __m256i cm[3], rm[3];
      for (int k = 0; k < 3; ++k) {
        cm[k] = in_range(ox, pl - k, w + pl - k);
        rm[k] = in_range(oy, pt - k, h + pt - k);
      }
      __m256 acc[3];
      for (int t = 0; t < 3; ++t) {
        /* Through uintptr_t: the tap may point before the plane. */
        const uintptr_t at = (uintptr_t)x + (uintptr_t)((o + (t - pt) * w - pl) * 4);
        acc[t] = t == 0 ? d->bias : _mm256_setzero_ps();
        for (int u = 0; u < 3; ++u)
          acc[t] = _mm256_fmadd_ps(
              d->w[3 * t + u],
              _mm256_maskload_ps((const float*)(at + (uintptr_t)u * 4),
                                 _mm256_and_si256(rm[t], cm[u])),
              acc[t]);
      }
      finish_flat(d, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), acc[2]), residual, y, o,
                  n - o);
      o += 8;
      ox0 += 8;
    }
    while (ox0 >= w) {
      ox0 -= w;
      ++oy0;
    }
  }
}

/* Whether plane_quads takes p: left padding 1 and the output of "same"
 * padding (ow = ceil(iw / s)), rows of at least 14 outputs at stride 1
 * and 16 at stride 2 (with fewer, both of a row's one or two column groups
 * are masked ones), and planes of at most 8192 floats. Capped at AVX2 on
 * Zen 4, per call in MobileNetV2 (1 thread, against the walks below): the
 * band chains' depthwise stages 238 -> 200 us (112 -> 56), 230 -> 205
 * (56x56), 114 -> 108 (56 -> 28), the 28x28 layers 94 -> 76 each; but the
 * 112x112 layer, its input beyond the L1 and L2, 144 -> 192 (six input
 * rows streamed at once against the flat walk's three), and the 28 -> 14
 * layer 42 -> 46. */
static int quads(const axle_f32_conv_params_t* p) {
  const int64_t s = p->stride[2], iw = p->in[2], ow = p->out[2];
  /* s is 1 or 2 (axle_f32_dwconv_3x3__avx2_fma_supports): no division. */
  return p->pad[2] == 1 && ow == (s == 1 ? iw : (iw + 1) / 2) && ow >= (s == 1 ? 14 : 16) &&
         p->in[1] * iw <= 8192;
}

/* The constants of p's planes under epilogue ep; the weights and the bias
 * are a plane's own. */
AXLE_AVX2 static void plane_consts(const axle_f32_conv_params_t* p, const axle_f32_epilogue_t* ep,
                                   dw_plane_t* d) {
  const int64_t ow = p->out[2], groups = (ow + 7) / 8;
  d->lo = _mm256_set1_ps(ep->min);
  d->hi = _mm256_set1_ps(ep->max);
  d->alpha = _mm256_set1_ps(ep->leaky_alpha);
  d->leaky = ep->leaky;
  d->iw = p->in[2];
  d->ow = ow;
  d->tail = ow - (groups - 1) * 8;
  d->tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)d->tail),
                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AXLE_AVX2 void axle_f32_dwconv_plane_3x3__avx2_fma(const axle_f32_conv_params_t* p,
                                                   const float* x_plane, const float* w,
                                                   float bias, const float* residual,
                                                   const axle_f32_epilogue_t* ep,
                                                   float* y_plane) {
  const int64_t s = p->stride[2], iw = p->in[2], ow = p->out[2], pl = p->pad[2];
  const int64_t groups = (ow + 7) / 8;
  dw_plane_t d;
  plane_consts(p, ep, &d);
  d.bias = _mm256_set1_ps(bias);
  if (quads(p)) {
    plane_quads(&d, w, s, p, x_plane, residual, y_plane);
    return;
  }
  /* The other walks read the weights from d (plane_quads holds its own). */
  for (int i = 0; i < 9; ++i) d.w[i] = _mm256_set1_ps(w[i]);
  /* Other "same" stride-1 planes keep the flat walk: the row-blocked walk
   * was twice as fast on one plane in L1 (28x28: 11.1 against 20.6 ns per
   * 16 outputs) but slower in MobileNetV2 (its 28x28 layers 102 -> 112-115
   * us, the 112x112 one 212 -> 274 us, capped at AVX2 on Sapphire Rapids). */
  if (s == 1 && ow == iw) {
    plane_same_s1(&d, p, x_plane, residual, y_plane);
    return;
  }
  /* Column groups [g_lo, g_hi) load only columns inside the row: their
   * leftmost column gi * 8s - pl is >= 0 and their rightmost (8 + 1 floats
   * on from it at stride 1, 16 + 1 at stride 2) < iw. */
  const int64_t span = s == 1 ? 9 : 17;
  int64_t g_lo = (pl + 8 * s - 1) / (8 * s);
  int64_t g_hi = iw - 1 + pl - span < 0 ? 0 : (iw - 1 + pl - span) / (8 * s) + 1;
  if (g_hi > groups) g_hi = groups;
  if (g_lo > g_hi) g_lo = g_hi;
  plane_rows(&d, s, p, g_lo, g_hi, x_plane, residual, y_plane);
}

/* A run of planes (axle_f32_dwconv_plane_run): where the four-row walk
 * takes them, its constants are set up once for the run. */
AXLE_AVX2 void axle_f32_dwconv_plane_run_3x3__avx2_fma(
    const axle_f32_conv_params_t* p, size_t planes, const float* x, size_t x_stride, const float* w,
    const float* bias, const axle_f32_epilogue_t* ep, float* y, size_t y_stride) {
  if (!quads(p)) {
    for (size_t i = 0; i < planes; ++i)
      axle_f32_dwconv_plane_3x3__avx2_fma(p, x + i * x_stride, w + 9 * i, bias ? bias[i] : 0.0f,
                                          NULL, ep, y + i * y_stride);
    return;
  }
  dw_plane_t d;
  plane_consts(p, ep, &d);
  for (size_t i = 0; i < planes; ++i) {
    d.bias = _mm256_set1_ps(bias ? bias[i] : 0.0f);
    plane_quads(&d, w + 9 * i, p->stride[2], p, x + i * x_stride, NULL, y + i * y_stride);
  }
}
