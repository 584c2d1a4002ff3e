/* Winograd transforms with AVX-512, F(2x2, 3x3) and F(4x4, 3x3); the
 * schedule, the weights and the GEMMs are conv_winograd.c's.
 *
 * F(2x2): 16 tiles per vector instead of the AVX2 path's 8. The input
 * transform reads the plane in place: masked loads zero the left and right
 * padding (and columns past the row), rows outside the plane are zero
 * vectors, so the AVX2 path's padded copy of 4 rows per tile row (a memset
 * and a memcpy each) is gone. Each group of 16 tiles walks down its tile
 * rows, where consecutive tile rows share 2 input rows: those stay
 * deinterleaved in registers, so every input row is loaded and shuffled once
 * (the AVX2 path does it twice). The output transform and epilogue store 32
 * outputs per row with masks at the right edge. Additions run in the AVX2
 * path's order, so the results are the same bits.
 *
 * F(4x4): also 16 tiles per vector, from the plane in place. B^T runs first
 * over the 6 input rows of a tile row on whole row vectors (no shuffles),
 * then each of the 6 results is deinterleaved by 4 (tile t takes columns
 * 4 t .. 4 t + 5) and transformed over columns. The output transform runs
 * A^T over rows, then over columns, and interleaves the 4 columns of 16
 * tiles back into 64 consecutive outputs. Both use fused multiply-adds for
 * the 2, 4, 5 and 8 factors; there is no AVX2 F(4x4) to match bit for bit.
 */
#include <immintrin.h>
#include <stdint.h>

#include "axle_kernels.h"
#include "winograd_internal.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))
#define AXLE_INLINE AXLE_AVX512 static inline __attribute__((always_inline))

/* The first n lanes (all 16 from n = 16 up). */
static __mmask16 first_lanes(size_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* Lanes j of a 16-lane load at column s with 0 <= s + j < n. */
static __mmask16 span_mask(int64_t s, int64_t n) {
  const int64_t lo = s < 0 ? -s : 0, hi = n - s > 16 ? 16 : n - s;
  if (lo >= hi) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* The 4 tile columns of 16 tiles from one input row: columns x0 + 2 t + k
 * for k = 0..3 (even and odd, then both one column on); a NULL row is
 * padding. */
AXLE_INLINE void load_row(const float* row, int64_t x0, __mmask16 k0, __mmask16 k1,
                          __mmask16 k2, __m512 d[4]) {
  if (!row) {
    d[0] = d[1] = d[2] = d[3] = _mm512_setzero_ps();
    return;
  }
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  /* Lanes 1..15 of the first operand, then lane 0 or 1 of the second. */
  const __m512i next0 = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
  const __m512i next1 = _mm512_set_epi32(17, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
  /* Masked-off lanes may lie before or after the row: they are not read. */
  const float* at = row + x0;
  const __m512 a = _mm512_maskz_loadu_ps(k0, at);
  const __m512 b = _mm512_maskz_loadu_ps(k1, at + 16);
  const __m512 c = _mm512_maskz_loadu_ps(k2, at + 32);
  d[0] = _mm512_permutex2var_ps(a, even, b);
  d[1] = _mm512_permutex2var_ps(a, odd, b);
  d[2] = _mm512_permutex2var_ps(d[0], next0, c);
  d[3] = _mm512_permutex2var_ps(d[1], next1, c);
}

AXLE_AVX512 static void input_transform(const wino_run_t* r, const float* xc, size_t ty0,
                                        size_t rows, float* v, float* buf) {
  (void)buf;
  const axle_f32_conv_params_t* p = r->p;
  const wino_geom_t* g = r->g;
  const int64_t ih = p->in[1], iw = p->in[2], pt = p->pad[1], pl = p->pad[2];
  const size_t e_stride = g->v_e;
  for (size_t t0 = 0; t0 < g->tw; t0 += 16) {
    const int64_t x0 = 2 * (int64_t)t0 - pl;
    const __mmask16 k0 = span_mask(x0, iw), k1 = span_mask(x0 + 16, iw);
    const __mmask16 k2 = span_mask(x0 + 32, iw) & 3;
    const __mmask16 kt = first_lanes(g->tw - t0);
    __m512 d[4][4];
    for (size_t rl = 0; rl < rows; ++rl) {
      const int64_t iy0 = 2 * (int64_t)(ty0 + rl) - pt;
      for (int q = 0; q < 4; ++q) {
        if (rl > 0 && q < 2) {
          for (int j = 0; j < 4; ++j) d[q][j] = d[q + 2][j];
          continue;
        }
        const int64_t iy = iy0 + q;
        load_row(iy >= 0 && iy < ih ? xc + iy * iw : NULL, x0, k0, k1, k2, d[q]);
      }
      /* W = B^T d (over rows), then V = W B (over columns). */
      __m512 w[4][4];
      for (int j = 0; j < 4; ++j) {
        w[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
        w[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
        w[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
        w[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
      }
      float* dst = v + rl * g->tw + t0;
      for (int i = 0; i < 4; ++i) {
        _mm512_mask_storeu_ps(dst + (size_t)(4 * i + 0) * e_stride, kt,
                              _mm512_sub_ps(w[i][0], w[i][2]));
        _mm512_mask_storeu_ps(dst + (size_t)(4 * i + 1) * e_stride, kt,
                              _mm512_add_ps(w[i][1], w[i][2]));
        _mm512_mask_storeu_ps(dst + (size_t)(4 * i + 2) * e_stride, kt,
                              _mm512_sub_ps(w[i][2], w[i][1]));
        _mm512_mask_storeu_ps(dst + (size_t)(4 * i + 3) * e_stride, kt,
                              _mm512_sub_ps(w[i][1], w[i][3]));
      }
    }
  }
}

/* 16 outputs of one row with the epilogue, lanes k only. */
AXLE_INLINE void store16(float* yrow, const float* res, __m512 v, __mmask16 k, __m512 bias,
                         const axle_f32_epilogue_t* ep) {
  v = _mm512_add_ps(v, bias);
  if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res));
  v = _mm512_min_ps(_mm512_set1_ps(ep->max), _mm512_max_ps(_mm512_set1_ps(ep->min), v));
  if (ep->leaky) {
    /* The sign bit, as the AVX2 blend takes it (-0 too). */
    const __mmask16 neg = _mm512_cmplt_epi32_mask(_mm512_castps_si512(v), _mm512_setzero_si512());
    v = _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(ep->leaky_alpha));
  }
  _mm512_mask_storeu_ps(yrow, k, v);
}

/* Lanes 2 t + c of two vectors' tiles t (c = 0: the first) for t < 8 and
 * t >= 8: F(2x2)'s two outputs per tile row, and F(4x4)'s pairs of them. */
static const int32_t k_pairs[2][16] = {
    {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23},
    {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31}};

AXLE_AVX512 static void output_transform(const wino_run_t* r, const float* mbuf, size_t o,
                                         size_t ty0, size_t rows, float* y_plane,
                                         const float* res_plane) {
  const wino_geom_t* g = r->g;
  const size_t oh = (size_t)r->p->out[1], ow = (size_t)r->p->out[2];
  const size_t e_stride = g->m_e;
  const __m512 bias = _mm512_set1_ps(r->ep->bias ? r->ep->bias[o] : 0.0f);
  /* Tile outputs (2 t, 2 t + 1) interleave into one row. */
  const __m512i lo_idx = _mm512_loadu_si512(k_pairs[0]), hi_idx = _mm512_loadu_si512(k_pairs[1]);
  const float* mo = mbuf + o * g->ld;
  for (size_t rl = 0; rl < rows; ++rl) {
    const size_t oy = 2 * (ty0 + rl);
    for (size_t t0 = 0; t0 < g->tw; t0 += 16) {
      const __mmask16 kt = first_lanes(g->tw - t0);
      const float* src = mo + rl * g->tw + t0;
      __m512 q[2][4];
      for (int j = 0; j < 4; ++j) {
        const __m512 m0 = _mm512_maskz_loadu_ps(kt, src + (size_t)(0 + j) * e_stride);
        const __m512 m1 = _mm512_maskz_loadu_ps(kt, src + (size_t)(4 + j) * e_stride);
        const __m512 m2 = _mm512_maskz_loadu_ps(kt, src + (size_t)(8 + j) * e_stride);
        const __m512 m3 = _mm512_maskz_loadu_ps(kt, src + (size_t)(12 + j) * e_stride);
        q[0][j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        q[1][j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      const size_t x0 = 2 * t0, n = ow - x0 < 32 ? ow - x0 : 32;
      const __mmask16 klo = first_lanes(n), khi = n > 16 ? first_lanes(n - 16) : 0;
      for (size_t i = 0; i < 2 && oy + i < oh; ++i) {
        const __m512 even = _mm512_add_ps(_mm512_add_ps(q[i][0], q[i][1]), q[i][2]);
        const __m512 odd = _mm512_sub_ps(_mm512_sub_ps(q[i][1], q[i][2]), q[i][3]);
        const size_t at = (oy + i) * ow + x0;
        const float* res = res_plane ? res_plane + at : NULL;
        store16(y_plane + at, res, _mm512_permutex2var_ps(even, lo_idx, odd), klo, bias, r->ep);
        if (khi)
          store16(y_plane + at + 16, res ? res + 16 : NULL,
                  _mm512_permutex2var_ps(even, hi_idx, odd), khi, bias, r->ep);
      }
    }
  }
}

void axle_f32_conv_winograd__avx512(const axle_f32_conv_params_t* p, const float* x,
                                    const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                    void* scratch, const axle_parallel_t* par) {
  axle_f32_conv_winograd_run(p, x, packed, ep, y, scratch, par, 2, input_transform,
                             output_transform);
}

/* ---- F(4x4, 3x3) -------------------------------------------------------- */

/* v = B^T d over 6 vectors (rows or columns of a tile), B^T =
 * [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
 *  0 2 -1 -2 1 0; 0 4 0 -5 0 1]. */
AXLE_INLINE void bt4(const __m512 d[6], __m512 v[6]) {
  const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
  const __m512 five = _mm512_set1_ps(5.0f);
  v[0] = _mm512_fnmadd_ps(five, d[2], _mm512_fmadd_ps(four, d[0], d[4]));
  v[1] = _mm512_fnmadd_ps(four, _mm512_add_ps(d[1], d[2]), _mm512_add_ps(d[3], d[4]));
  v[2] = _mm512_fmadd_ps(four, _mm512_sub_ps(d[1], d[2]), _mm512_sub_ps(d[4], d[3]));
  const __m512 a = _mm512_sub_ps(d[4], d[2]), b = _mm512_sub_ps(d[3], d[1]);
  v[3] = _mm512_fmadd_ps(two, b, a);
  v[4] = _mm512_fnmadd_ps(two, b, a);
  v[5] = _mm512_fnmadd_ps(five, d[3], _mm512_fmadd_ps(four, d[1], d[5]));
}

/* y = A^T m over 6 vectors, A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0;
 * 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
AXLE_INLINE void at4(const __m512 m[6], __m512 y[4]) {
  const __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
  y[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
  y[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d34, d12);
  y[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), s34, s12);
  y[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), d34, d12), m[5]);
}

/* Columns 4 t + k (k < 4) of tiles t = 0..7 from two vectors of 16. */
static const int32_t k_by4[4][16] = {{0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28},
                                     {1, 5, 9, 13, 17, 21, 25, 29, 1, 5, 9, 13, 17, 21, 25, 29},
                                     {2, 6, 10, 14, 18, 22, 26, 30, 2, 6, 10, 14, 18, 22, 26, 30},
                                     {3, 7, 11, 15, 19, 23, 27, 31, 3, 7, 11, 15, 19, 23, 27, 31}};
/* Lanes 1..15 of the first operand, then lane 0 or 1 of the second. */
static const int32_t k_next[2][16] = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                                      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17}};

AXLE_AVX512 static void input_transform4(const wino_run_t* r, const float* xc, size_t ty0,
                                         size_t rows, float* v, float* buf) {
  (void)buf;
  const axle_f32_conv_params_t* p = r->p;
  const wino_geom_t* g = r->g;
  const int64_t ih = p->in[1], iw = p->in[2], pt = p->pad[1], pl = p->pad[2];
  const size_t e_stride = g->v_e;
  __m512i by4[4], next[2];
  for (int k = 0; k < 4; ++k) by4[k] = _mm512_loadu_si512(k_by4[k]);
  for (int k = 0; k < 2; ++k) next[k] = _mm512_loadu_si512(k_next[k]);
  for (size_t t0 = 0; t0 < g->tw; t0 += 16) {
    /* 16 tiles span 66 input columns: 4 full vectors and 2 lanes. */
    const int64_t x0 = 4 * (int64_t)t0 - pl;
    __mmask16 kx[5];
    for (int j = 0; j < 5; ++j) kx[j] = span_mask(x0 + 16 * j, iw);
    kx[4] &= 3;
    const __mmask16 kt = first_lanes(g->tw - t0);
    for (size_t rl = 0; rl < rows; ++rl) {
      const int64_t iy0 = 4 * (int64_t)(ty0 + rl) - pt;
      /* W = B^T d over the rows, on the rows as loaded. */
      __m512 w[6][5];
      for (int j = 0; j < 5; ++j) {
        __m512 d[6], col[6];
        for (int q = 0; q < 6; ++q) {
          const int64_t iy = iy0 + q;
          /* Masked-off lanes may lie before or after the row: not read. */
          d[q] = iy >= 0 && iy < ih ? _mm512_maskz_loadu_ps(kx[j], xc + iy * iw + x0 + 16 * j)
                                    : _mm512_setzero_ps();
        }
        bt4(d, col);
        for (int q = 0; q < 6; ++q) w[q][j] = col[q];
      }
      /* V = W B over the columns of each tile. */
      float* dst = v + rl * g->tw + t0;
      for (int q = 0; q < 6; ++q) {
        __m512 d[6], out[6];
        for (int k = 0; k < 4; ++k) {
          const __m512 lo = _mm512_permutex2var_ps(w[q][0], by4[k], w[q][1]);
          const __m512 hi = _mm512_permutex2var_ps(w[q][2], by4[k], w[q][3]);
          d[k] = _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
        }
        d[4] = _mm512_permutex2var_ps(d[0], next[0], w[q][4]);
        d[5] = _mm512_permutex2var_ps(d[1], next[1], w[q][4]);
        bt4(d, out);
        for (int k = 0; k < 6; ++k)
          _mm512_mask_storeu_ps(dst + (size_t)(6 * q + k) * e_stride, kt, out[k]);
      }
    }
  }
}

/* After k_pairs, on pairs of floats: lanes 4 t + c of tiles t = 0..3 and 4..7. */
static const int64_t k_quads[2][8] = {{0, 8, 1, 9, 2, 10, 3, 11}, {4, 12, 5, 13, 6, 14, 7, 15}};

AXLE_AVX512 static void output_transform4(const wino_run_t* r, const float* mbuf, size_t o,
                                          size_t ty0, size_t rows, float* y_plane,
                                          const float* res_plane) {
  const wino_geom_t* g = r->g;
  const size_t oh = (size_t)r->p->out[1], ow = (size_t)r->p->out[2];
  const size_t e_stride = g->m_e;
  const __m512 bias = _mm512_set1_ps(r->ep->bias ? r->ep->bias[o] : 0.0f);
  const __m512i pairs[2] = {_mm512_loadu_si512(k_pairs[0]), _mm512_loadu_si512(k_pairs[1])};
  const __m512i quads[2] = {_mm512_loadu_si512(k_quads[0]), _mm512_loadu_si512(k_quads[1])};
  const float* mo = mbuf + o * g->ld;
  for (size_t rl = 0; rl < rows; ++rl) {
    const size_t oy = 4 * (ty0 + rl);
    for (size_t t0 = 0; t0 < g->tw; t0 += 16) {
      const __mmask16 kt = first_lanes(g->tw - t0);
      const float* src = mo + rl * g->tw + t0;
      /* Q = A^T M over the rows of the tile: q[i][j] for output row i. */
      __m512 q[4][6];
      for (int j = 0; j < 6; ++j) {
        __m512 m[6], y[4];
        for (int i = 0; i < 6; ++i)
          m[i] = _mm512_maskz_loadu_ps(kt, src + (size_t)(6 * i + j) * e_stride);
        at4(m, y);
        for (int i = 0; i < 4; ++i) q[i][j] = y[i];
      }
      const size_t x0 = 4 * t0, n = ow - x0 < 64 ? ow - x0 : 64;
      __mmask16 kn[4];
      for (size_t s = 0; s < 4; ++s) kn[s] = n > 16 * s ? first_lanes(n - 16 * s) : 0;
      for (size_t i = 0; i < 4 && oy + i < oh; ++i) {
        __m512 y[4];
        at4(q[i], y);
        __m512d p01[2], p23[2];
        for (int h = 0; h < 2; ++h) {
          p01[h] = _mm512_castps_pd(_mm512_permutex2var_ps(y[0], pairs[h], y[1]));
          p23[h] = _mm512_castps_pd(_mm512_permutex2var_ps(y[2], pairs[h], y[3]));
        }
        const size_t at = (oy + i) * ow + x0;
        const float* res = res_plane ? res_plane + at : NULL;
        for (size_t s = 0; s < 4 && kn[s]; ++s)
          store16(y_plane + at + 16 * s, res ? res + 16 * s : NULL,
                  _mm512_castpd_ps(_mm512_permutex2var_pd(p01[s / 2], quads[s % 2], p23[s / 2])),
                  kn[s], bias, r->ep);
      }
    }
  }
}

void axle_f32_conv_winograd4__avx512(const axle_f32_conv_params_t* p, const float* x,
                                     const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                     void* scratch, const axle_parallel_t* par) {
  axle_f32_conv_winograd_run(p, x, packed, ep, y, scratch, par, 4, input_transform4,
                             output_transform4);
}
