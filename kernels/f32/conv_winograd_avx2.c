/* Winograd F(2x2, 3x3) transforms with AVX2/FMA, 8 tiles per vector, in
 * the schedule of conv_winograd.c: the input transform copies 4 padded
 * input rows per tile row into a buffer and deinterleaves them; the output
 * transform applies the epilogue. */
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
