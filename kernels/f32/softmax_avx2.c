/* Softmax and log-softmax with AVX2, over the middle axis of [outer, axis,
 * inner] as the scalar references (softmax_scalar.c): the maximum first, so
 * e^(x - max) never overflows, with the vector e^x of exp_avx2.h. A
 * contiguous axis (inner == 1) runs along the axis in vectors of eight;
 * otherwise eight adjacent inner positions advance together down the axis,
 * the last 1-7 under a mask. Sums are taken in another order than the
 * references' and e^x is within a few ulp of expf, so results differ from
 * theirs in the last bits only. Safe in place (y == x), as the references. */
#include <immintrin.h>
#include <math.h>

#include "axle_kernels.h"
#include "exp_avx2.h"
#include "lanes_avx2.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

AXLE_AVX2_INLINE float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

AXLE_AVX2_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* The maximum of a contiguous row; masked-off lanes read -inf. A NaN
 * element may or may not end up in it (the reference skips NaN), which
 * changes nothing: either way the row's sum, so all its outputs, are NaN. */
AXLE_AVX2_INLINE float row_max(const float* x, size_t n) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m = ninf;
  size_t j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  if (j < n) {
    const __m256i k = axle_f32_first_lanes__avx2(n - j);
    m = _mm256_max_ps(m,
                      _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + j, k), _mm256_castsi256_ps(k)));
  }
  return hmax(m);
}

/* y = e^(x - m) along a contiguous row (y may be x); returns the sum. With
 * store 0 only the sum (log-softmax). */
AXLE_AVX2_INLINE float row_exp(const float* x, size_t n, float m, float* y, int store) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 s = _mm256_setzero_ps();
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = axle_f32_exp8__avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
    if (store) _mm256_storeu_ps(y + j, e);
    s = _mm256_add_ps(s, e);
  }
  if (j < n) {
    const __m256i k = axle_f32_first_lanes__avx2(n - j);
    const __m256 e =
        _mm256_and_ps(axle_f32_exp8__avx2(_mm256_sub_ps(_mm256_maskload_ps(x + j, k), vm)),
                      _mm256_castsi256_ps(k));
    if (store) _mm256_maskstore_ps(y + j, k, e);
    s = _mm256_add_ps(s, e);
  }
  return hsum(s);
}

/* The last pass over a contiguous row: softmax scales y (holding e^(x - m))
 * by r = 1 / sum, log-softmax writes (x - m) - r with r = log(sum). */
AXLE_AVX2_INLINE void row_finish(const float* x, size_t n, float m, float r, float* y, int log) {
  const __m256 vm = _mm256_set1_ps(m), vr = _mm256_set1_ps(r);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = log ? _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vr)
                         : _mm256_mul_ps(_mm256_loadu_ps(y + j), vr);
    _mm256_storeu_ps(y + j, v);
  }
  if (j < n) {
    const __m256i k = axle_f32_first_lanes__avx2(n - j);
    const __m256 v = log ? _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, k), vm), vr)
                         : _mm256_mul_ps(_mm256_maskload_ps(y + j, k), vr);
    _mm256_maskstore_ps(y + j, k, v);
  }
}

/* Eight (or, masked, fewer) inner positions of one outer index down the
 * axis: x and y point at the first, elements `inner` apart along the axis. */
AXLE_AVX2_INLINE void columns(const float* x, size_t axis, size_t inner, __m256i k, float* y,
                              int log) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m = ninf;
  for (size_t j = 0; j < axis; ++j)
    m = _mm256_max_ps(
        m, _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + j * inner, k), _mm256_castsi256_ps(k)));
  __m256 s = _mm256_setzero_ps();
  for (size_t j = 0; j < axis; ++j) {
    const __m256 e = axle_f32_exp8__avx2(_mm256_sub_ps(_mm256_maskload_ps(x + j * inner, k), m));
    if (!log) _mm256_maskstore_ps(y + j * inner, k, e);
    s = _mm256_add_ps(s, e);
  }
  if (log) {
    float sums[8], logs[8];
    _mm256_storeu_ps(sums, s);
    for (int l = 0; l < 8; ++l) logs[l] = logf(sums[l]);
    const __m256 ls = _mm256_loadu_ps(logs);
    for (size_t j = 0; j < axis; ++j)
      _mm256_maskstore_ps(
          y + j * inner, k,
          _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j * inner, k), m), ls));
    return;
  }
  const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f), s);
  for (size_t j = 0; j < axis; ++j)
    _mm256_maskstore_ps(y + j * inner, k, _mm256_mul_ps(_mm256_maskload_ps(y + j * inner, k), r));
}

AXLE_AVX2_INLINE void softmax_any(size_t outer, size_t axis, size_t inner, const float* x, float* y,
                                  int log) {
  for (size_t o = 0; o < outer; ++o) {
    const float* xo = x + o * axis * inner;
    float* yo = y + o * axis * inner;
    if (inner == 1) {
      const float m = row_max(xo, axis);
      const float sum = row_exp(xo, axis, m, yo, !log);
      row_finish(xo, axis, m, log ? logf(sum) : 1.0f / sum, yo, log);
      continue;
    }
    for (size_t i = 0; i < inner; i += 8)
      columns(xo + i, axis, inner, axle_f32_first_lanes__avx2(inner - i < 8 ? inner - i : 8),
              yo + i, log);
  }
}

AXLE_AVX2 void axle_f32_softmax__avx2(size_t outer, size_t axis, size_t inner, const float* x,
                                      float* y) {
  softmax_any(outer, axis, inner, x, y, 0);
}

AXLE_AVX2 void axle_f32_logsoftmax__avx2(size_t outer, size_t axis, size_t inner, const float* x,
                                         float* y) {
  softmax_any(outer, axis, inner, x, y, 1);
}
