/* Softmax and log-softmax with AVX-512: softmax_avx2.c's passes (see there)
 * on sixteen lanes, with exp_avx512.h's e^x and opmasks for the tails. */
#include <immintrin.h>
#include <math.h>

#include "axle_kernels.h"
#include "exp_avx512.h"

#define AXLE_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define AXLE_AVX512_INLINE \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"), always_inline)) static inline

AXLE_AVX512_INLINE __mmask16 first_lanes(size_t n) {
  return n >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << n) - 1u);
}

/* The maximum of a contiguous row (NaN: see softmax_avx2.c). */
AXLE_AVX512_INLINE float row_max(const float* x, size_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + j));
  if (j < n)
    m = _mm512_mask_max_ps(m, first_lanes(n - j), m,
                           _mm512_maskz_loadu_ps(first_lanes(n - j), x + j));
  return _mm512_reduce_max_ps(m);
}

/* y = e^(x - m) along a contiguous row when store, and the sum. */
AXLE_AVX512_INLINE float row_exp(const float* x, size_t n, float m, float* y, int store) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 s = _mm512_setzero_ps();
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = axle_f32_exp16__avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm));
    if (store) _mm512_storeu_ps(y + j, e);
    s = _mm512_add_ps(s, e);
  }
  if (j < n) {
    const __mmask16 k = first_lanes(n - j);
    const __m512 e = axle_f32_exp16__avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm));
    if (store) _mm512_mask_storeu_ps(y + j, k, e);
    s = _mm512_mask_add_ps(s, k, s, e);
  }
  return _mm512_reduce_add_ps(s);
}

/* Softmax scales y by r = 1 / sum; log-softmax writes (x - m) - r with
 * r = log(sum). */
AXLE_AVX512_INLINE void row_finish(const float* x, size_t n, float m, float r, float* y, int log) {
  const __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(r);
  for (size_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    const __m512 v = log ? _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm), vr)
                         : _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j), vr);
    _mm512_mask_storeu_ps(y + j, k, v);
  }
}

/* Sixteen (under mask k, fewer) inner positions of one outer index down the
 * axis, elements `inner` apart. */
AXLE_AVX512_INLINE void columns(const float* x, size_t axis, size_t inner, __mmask16 k, float* y,
                                int log) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  for (size_t j = 0; j < axis; ++j)
    m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, x + j * inner));
  __m512 s = _mm512_setzero_ps();
  for (size_t j = 0; j < axis; ++j) {
    const __m512 e =
        axle_f32_exp16__avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j * inner), m));
    if (!log) _mm512_mask_storeu_ps(y + j * inner, k, e);
    s = _mm512_add_ps(s, e);
  }
  if (log) {
    float sums[16], logs[16];
    _mm512_storeu_ps(sums, s);
    for (int l = 0; l < 16; ++l) logs[l] = logf(sums[l]);
    const __m512 ls = _mm512_loadu_ps(logs);
    for (size_t j = 0; j < axis; ++j)
      _mm512_mask_storeu_ps(
          y + j * inner, k,
          _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j * inner), m), ls));
    return;
  }
  const __m512 r = _mm512_div_ps(_mm512_set1_ps(1.0f), s);
  for (size_t j = 0; j < axis; ++j)
    _mm512_mask_storeu_ps(y + j * inner, k,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j * inner), r));
}

AXLE_AVX512_INLINE void softmax_any(size_t outer, size_t axis, size_t inner, const float* x,
                                    float* y, int log) {
  for (size_t o = 0; o < outer; ++o) {
    const float* xo = x + o * axis * inner;
    float* yo = y + o * axis * inner;
    if (inner == 1) {
      const float m = row_max(xo, axis);
      const float sum = row_exp(xo, axis, m, yo, !log);
      row_finish(xo, axis, m, log ? logf(sum) : 1.0f / sum, yo, log);
      continue;
    }
    for (size_t i = 0; i < inner; i += 16)
      columns(xo + i, axis, inner, first_lanes(inner - i), yo + i, log);
  }
}

AXLE_AVX512 void axle_f32_softmax__avx512(size_t outer, size_t axis, size_t inner, const float* x,
                                          float* y) {
  softmax_any(outer, axis, inner, x, y, 0);
}

AXLE_AVX512 void axle_f32_logsoftmax__avx512(size_t outer, size_t axis, size_t inner,
                                             const float* x, float* y) {
  softmax_any(outer, axis, inner, x, y, 1);
}
