/* Winograd transforms with AVX2/FMA, 8 tiles per vector, in the schedule of
 * conv_winograd.c. F(2x2, 3x3): the input transform copies 4 padded input
 * rows per tile row into a buffer and deinterleaves them; the output
 * transform applies the epilogue. F(4x4, 3x3): as the AVX-512 variant
 * (conv_winograd_avx512.c) with 8 lanes, the plane read in place through
 * masked loads, and the same operations per lane, so both give the same
 * bits. */
#include <immintrin.h>
#include <string.h>

#include "axle_kernels.h"
#include "winograd_internal.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

/* Even / odd floats of the 16 starting at x, in order. */
AXLE_AVX2 static inline __m256 even16(const float* x) {
  const __m256 t = _mm256_shuffle_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
}
AXLE_AVX2 static inline __m256 odd16(const float* x) {
  const __m256 t = _mm256_shuffle_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), 0xDD);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
}

/* V for channel c of the block's tile rows [ty0, ty0 + rows): 16 rows of
 * V (one per element e, v_e apart), 8 tiles per vector. */
AXLE_AVX2 static void input_transform(const wino_run_t* r, const float* xc, size_t ty0,
                                      size_t rows, float* v, float* buf) {
  const axle_f32_conv_params_t* p = r->p;
  const wino_geom_t* g = r->g;
  const int64_t ih = p->in[1], iw = p->in[2], pt = p->pad[1], pl = p->pad[2];
  const size_t e_stride = g->v_e;
  const int64_t cols = (int64_t)g->cols;
  for (size_t rl = 0; rl < rows; ++rl) {
    const int64_t ty = (int64_t)(ty0 + rl);
    /* Buffer row q, column j holds input (2 ty - pt + q, j - pl), or 0. */
    for (int64_t q = 0; q < 4; ++q) {
      float* d = buf + q * cols;
      const int64_t iy = 2 * ty - pt + q;
      memset(d, 0, (size_t)cols * sizeof(float));
      if (iy < 0 || iy >= ih) continue;
      const int64_t c0 = pl, x0 = c0 < 0 ? -c0 : 0;
      int64_t n = iw - x0;
      if (n > cols - (c0 + x0)) n = cols - (c0 + x0);
      if (n > 0) memcpy(d + c0 + x0, xc + iy * iw + x0, (size_t)n * sizeof(float));
    }
    const float* b0 = buf;
    const float* b1 = buf + cols;
    const float* b2 = buf + 2 * cols;
    const float* b3 = buf + 3 * cols;
    for (size_t gi = 0; gi < g->groups; ++gi) {
      const size_t o = gi * 16; /* tile tx starts at buffer column 2 tx */
      __m256 d[4][4];
      const float* rowp[4] = {b0 + o, b1 + o, b2 + o, b3 + o};
      for (int q = 0; q < 4; ++q) {
        d[q][0] = even16(rowp[q]);
        d[q][1] = odd16(rowp[q]);
        d[q][2] = even16(rowp[q] + 2);
        d[q][3] = odd16(rowp[q] + 2);
      }
      /* W = B^T d (over rows), then V = W B (over columns). */
      __m256 w[4][4];
      for (int j = 0; j < 4; ++j) {
        w[0][j] = _mm256_sub_ps(d[0][j], d[2][j]);
        w[1][j] = _mm256_add_ps(d[1][j], d[2][j]);
        w[2][j] = _mm256_sub_ps(d[2][j], d[1][j]);
        w[3][j] = _mm256_sub_ps(d[1][j], d[3][j]);
      }
      float* dst = v + rl * g->tw + gi * 8;
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + (size_t)(4 * i + 0) * e_stride, _mm256_sub_ps(w[i][0], w[i][2]));
        _mm256_storeu_ps(dst + (size_t)(4 * i + 1) * e_stride, _mm256_add_ps(w[i][1], w[i][2]));
        _mm256_storeu_ps(dst + (size_t)(4 * i + 2) * e_stride, _mm256_sub_ps(w[i][2], w[i][1]));
        _mm256_storeu_ps(dst + (size_t)(4 * i + 3) * e_stride, _mm256_sub_ps(w[i][1], w[i][3]));
      }
    }
  }
}

/* Stores 16 consecutive outputs of one row with the epilogue; n < 16 at the
 * right edge goes through a spill so nothing past the row is touched. */
AXLE_AVX2 static void store16(float* yrow, const float* res, __m256 lo, __m256 hi, size_t n,
                              float bias, const axle_f32_epilogue_t* ep) {
  if (n == 16) {
    const __m256 vb = _mm256_set1_ps(bias);
    lo = _mm256_add_ps(lo, vb);
    hi = _mm256_add_ps(hi, vb);
    if (res) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(res));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(res + 8));
    }
    const __m256 vlo = _mm256_set1_ps(ep->min), vhi = _mm256_set1_ps(ep->max);
    lo = _mm256_min_ps(vhi, _mm256_max_ps(vlo, lo));
    hi = _mm256_min_ps(vhi, _mm256_max_ps(vlo, hi));
    if (ep->leaky) {
      const __m256 a = _mm256_set1_ps(ep->leaky_alpha);
      lo = _mm256_blendv_ps(lo, _mm256_mul_ps(lo, a), lo);
      hi = _mm256_blendv_ps(hi, _mm256_mul_ps(hi, a), hi);
    }
    _mm256_storeu_ps(yrow, lo);
    _mm256_storeu_ps(yrow + 8, hi);
    return;
  }
  float t[16] __attribute__((aligned(32)));
  _mm256_store_ps(t, lo);
  _mm256_store_ps(t + 8, hi);
  for (size_t j = 0; j < n; ++j) {
    float v = t[j] + bias;
    if (res) v += res[j];
    if (v < ep->min) v = ep->min;
    if (v > ep->max) v = ep->max;
    if (ep->leaky && v < 0.0f) v *= ep->leaky_alpha;
    yrow[j] = v;
  }
}

/* Y = A^T M A for output channel o of the block, written into y_plane. */
AXLE_AVX2 static void output_transform(const wino_run_t* r, const float* mbuf, size_t o,
                                       size_t ty0, size_t rows, float* y_plane,
                                       const float* res_plane) {
  const wino_geom_t* g = r->g;
  const size_t oh = (size_t)r->p->out[1], ow = (size_t)r->p->out[2];
  const size_t e_stride = g->m_e;
  const float bias = r->ep->bias ? r->ep->bias[o] : 0.0f;
  const float* mo = mbuf + o * g->ld;
  for (size_t rl = 0; rl < rows; ++rl) {
    const size_t oy = 2 * (ty0 + rl);
    for (size_t gi = 0; gi < g->groups; ++gi) {
      const float* src = mo + rl * g->tw + gi * 8;
      __m256 q[2][4];
      for (int j = 0; j < 4; ++j) {
        const __m256 m0 = _mm256_loadu_ps(src + (size_t)(0 + j) * e_stride);
        const __m256 m1 = _mm256_loadu_ps(src + (size_t)(4 + j) * e_stride);
        const __m256 m2 = _mm256_loadu_ps(src + (size_t)(8 + j) * e_stride);
        const __m256 m3 = _mm256_loadu_ps(src + (size_t)(12 + j) * e_stride);
        q[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        q[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
      }
      const size_t x0 = gi * 16, n = ow - x0 < 16 ? ow - x0 : 16;
      for (size_t i = 0; i < 2 && oy + i < oh; ++i) {
        const __m256 even = _mm256_add_ps(_mm256_add_ps(q[i][0], q[i][1]), q[i][2]);
        const __m256 odd = _mm256_sub_ps(_mm256_sub_ps(q[i][1], q[i][2]), q[i][3]);
        /* Tile outputs (2 tx, 2 tx + 1) interleave into one row. */
        const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
        const size_t at = (oy + i) * ow + x0;
        store16(y_plane + at, res_plane ? res_plane + at : NULL,
                _mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31), n,
                bias, r->ep);
      }
    }
  }
}

void axle_f32_conv_winograd__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                      const float* packed, const axle_f32_epilogue_t* ep,
                                      float* y, void* scratch, const axle_parallel_t* par) {
  axle_f32_conv_winograd_run(p, x, packed, ep, y, scratch, par, 2, input_transform,
                             output_transform);
}

/* ---- F(4x4, 3x3) -------------------------------------------------------- */

/* v = B^T d and y = A^T m over 6 vectors: conv_winograd_avx512.c's bt4 and
 * at4, operation for operation. */
AXLE_AVX2 static inline void bt4(const __m256 d[6], __m256 v[6]) {
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
  const __m256 five = _mm256_set1_ps(5.0f);
  v[0] = _mm256_fnmadd_ps(five, d[2], _mm256_fmadd_ps(four, d[0], d[4]));
  v[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
  v[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  const __m256 a = _mm256_sub_ps(d[4], d[2]), b = _mm256_sub_ps(d[3], d[1]);
  v[3] = _mm256_fmadd_ps(two, b, a);
  v[4] = _mm256_fnmadd_ps(two, b, a);
  v[5] = _mm256_fnmadd_ps(five, d[3], _mm256_fmadd_ps(four, d[1], d[5]));
}

AXLE_AVX2 static inline void at4(const __m256 m[6], __m256 y[4]) {
  const __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  const __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  y[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  y[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d34, d12);
  y[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), s34, s12);
  y[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d34, d12), m[5]);
}

AXLE_AVX2 static void input_transform4(const wino_run_t* r, const float* xc, size_t ty0,
                                       size_t rows, float* v, float* buf) {
  (void)buf;
  const axle_f32_conv_params_t* p = r->p;
  const wino_geom_t* g = r->g;
  const int64_t ih = p->in[1], iw = p->in[2], pt = p->pad[1], pl = p->pad[2];
  const size_t e_stride = g->v_e;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  /* Tiles 0, 2, 4, 6, 1, 3, 5, 7 (the 4x4 transposes' order) back in order;
   * lanes 1..7, then lane 0 again (the next tile's first column). */
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
  /* Rows outer: a row's last group spills into the next row's first tiles
   * (below), which must come later. */
  for (size_t rl = 0; rl < rows; ++rl) {
    const int64_t iy0 = 4 * (int64_t)(ty0 + rl) - pt;
    for (size_t t0 = 0; t0 < g->tw; t0 += 8) {
      /* 8 tiles span 34 input columns: 4 vectors and 2 lanes of a fifth. */
      const int64_t x0 = 4 * (int64_t)t0 - pl;
      __m256 w[6][5];
      for (int j = 0; j < 5; ++j) {
        const __m256i col = _mm256_add_epi32(lane, _mm256_set1_epi32((int)(x0 + 8 * j)));
        const __m256i kx = _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)iw), col));
        __m256 d[6], out[6];
        for (int q = 0; q < 6; ++q) {
          const int64_t iy = iy0 + q;
          /* Masked-off lanes may lie before or after the row: not read. */
          d[q] = iy >= 0 && iy < ih ? _mm256_maskload_ps(xc + iy * iw + x0 + 8 * j, kx)
                                    : _mm256_setzero_ps();
        }
        bt4(d, out);
        for (int q = 0; q < 6; ++q) w[q][j] = out[q];
      }
      /* 8 tiles past the row's last spill into the next tile row's slots,
       * which that row then overwrites, or into the padding after the
       * block's last (ld leaves room for 8). */
      float* dst = v + rl * g->tw + t0;
      for (int q = 0; q < 6; ++q) {
        const __m256 lo01 = _mm256_unpacklo_ps(w[q][0], w[q][1]);
        const __m256 hi01 = _mm256_unpackhi_ps(w[q][0], w[q][1]);
        const __m256 lo23 = _mm256_unpacklo_ps(w[q][2], w[q][3]);
        const __m256 hi23 = _mm256_unpackhi_ps(w[q][2], w[q][3]);
        __m256 d[6], out[6];
        d[0] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(lo01, lo23, 0x44), order);
        d[1] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(lo01, lo23, 0xEE), order);
        d[2] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(hi01, hi23, 0x44), order);
        d[3] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(hi01, hi23, 0xEE), order);
        const __m256 tail = w[q][4];
        d[4] = _mm256_blend_ps(_mm256_permutevar8x32_ps(d[0], next),
                               _mm256_permutevar8x32_ps(tail, _mm256_setzero_si256()), 0x80);
        d[5] = _mm256_blend_ps(_mm256_permutevar8x32_ps(d[1], next),
                               _mm256_permutevar8x32_ps(tail, _mm256_set1_epi32(1)), 0x80);
        bt4(d, out);
        for (int k = 0; k < 6; ++k) _mm256_storeu_ps(dst + (size_t)(6 * q + k) * e_stride, out[k]);
      }
    }
  }
}

AXLE_AVX2 static void output_transform4(const wino_run_t* r, const float* mbuf, size_t o,
                                        size_t ty0, size_t rows, float* y_plane,
                                        const float* res_plane) {
  const wino_geom_t* g = r->g;
  const size_t oh = (size_t)r->p->out[1], ow = (size_t)r->p->out[2];
  const size_t e_stride = g->m_e;
  const float bias = r->ep->bias ? r->ep->bias[o] : 0.0f;
  const float* mo = mbuf + o * g->ld;
  for (size_t rl = 0; rl < rows; ++rl) {
    const size_t oy = 4 * (ty0 + rl);
    for (size_t t0 = 0; t0 < g->tw; t0 += 8) {
      /* Lanes past the row's last tile read what follows it (ld leaves
       * room); they are never stored. */
      const float* src = mo + rl * g->tw + t0;
      __m256 q[4][6];
      for (int j = 0; j < 6; ++j) {
        __m256 m[6], y[4];
        for (int i = 0; i < 6; ++i) m[i] = _mm256_loadu_ps(src + (size_t)(6 * i + j) * e_stride);
        at4(m, y);
        for (int i = 0; i < 4; ++i) q[i][j] = y[i];
      }
      const size_t x0 = 4 * t0, n = ow - x0 < 32 ? ow - x0 : 32;
      for (size_t i = 0; i < 4 && oy + i < oh; ++i) {
        __m256 y[4];
        at4(q[i], y);
        /* 4x4 transposes: tile t's 4 outputs together (tiles t and t + 4
         * share a vector), then tiles in order. */
        const __m256 lo01 = _mm256_unpacklo_ps(y[0], y[1]), hi01 = _mm256_unpackhi_ps(y[0], y[1]);
        const __m256 lo23 = _mm256_unpacklo_ps(y[2], y[3]), hi23 = _mm256_unpackhi_ps(y[2], y[3]);
        const __m256 t04 = _mm256_shuffle_ps(lo01, lo23, 0x44);
        const __m256 t15 = _mm256_shuffle_ps(lo01, lo23, 0xEE);
        const __m256 t26 = _mm256_shuffle_ps(hi01, hi23, 0x44);
        const __m256 t37 = _mm256_shuffle_ps(hi01, hi23, 0xEE);
        const size_t at = (oy + i) * ow + x0;
        const float* res = res_plane ? res_plane + at : NULL;
        store16(y_plane + at, res, _mm256_permute2f128_ps(t04, t15, 0x20),
                _mm256_permute2f128_ps(t26, t37, 0x20), n < 16 ? n : 16, bias, r->ep);
        if (n > 16)
          store16(y_plane + at + 16, res ? res + 16 : NULL, _mm256_permute2f128_ps(t04, t15, 0x31),
                  _mm256_permute2f128_ps(t26, t37, 0x31), n - 16, bias, r->ep);
      }
    }
  }
}

void axle_f32_conv_winograd4__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                       const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                       void* scratch, const axle_parallel_t* par) {
  axle_f32_conv_winograd_run(p, x, packed, ep, y, scratch, par, 4, input_transform4,
                             output_transform4);
}
