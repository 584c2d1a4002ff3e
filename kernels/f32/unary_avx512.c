/* Exp, Sigmoid and Tanh with AVX-512: the AVX2 variants' arithmetic
 * (unary_avx2.c, vmath_coeffs.h) on sixteen lanes, with vscalefps for 2^n
 * (exp_avx512.h) and opmasks for the branches and the tail. The cheap ops
 * have no AVX-512 variant: from memory they are bandwidth-bound, and in
 * cache the AVX2 ones already run at several elements per nanosecond. */
#include <immintrin.h>

#include "axle_kernels_elementwise.h"
#include "exp_avx512.h"
#include "vmath_coeffs.h"

#define AXLE_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define AXLE_AVX512_INLINE \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"), always_inline)) static inline

AXLE_AVX512_INLINE __m512 op_exp(__m512 v) { return axle_f32_exp16__avx512(v); }

/* 1 / (1 + e^-|v|), times e^-|v| where v < 0 (see unary_avx2.c). */
AXLE_AVX512_INLINE __m512 op_sigmoid(__m512 v) {
  const __m512 e = axle_f32_exp16__avx512(_mm512_or_ps(v, _mm512_set1_ps(-0.0f)));
  const __m512 s = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  return _mm512_mask_mul_ps(s, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), e, s);
}

/* As unary_avx2.c's op_tanh. */
AXLE_AVX512_INLINE __m512 op_tanh(__m512 v) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 t = _mm512_andnot_ps(sign, v);
  const __m512 u = _mm512_mul_ps(t, t);
  __m512 q = _mm512_set1_ps(AXLE_TANH_Q5);
  q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(AXLE_TANH_Q4));
  q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(AXLE_TANH_Q3));
  q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(AXLE_TANH_Q2));
  q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(AXLE_TANH_Q1));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(t, u), q, t);
  const __m512 e = axle_f32_exp16__avx512(_mm512_add_ps(t, t));
  const __m512 large =
      _mm512_sub_ps(_mm512_set1_ps(1.0f),
                    _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  /* NaN compares false and keeps the polynomial's NaN. */
  const __m512 r = _mm512_mask_mov_ps(
      small, _mm512_cmp_ps_mask(t, _mm512_set1_ps(AXLE_TANH_SPLIT), _CMP_GE_OQ), large);
  return _mm512_or_ps(r, _mm512_and_ps(v, sign));
}

#define AXLE_UNARY_AVX512_(op)                                                                   \
  AXLE_AVX512 void axle_f32_##op##__avx512(const void* vx, void* vy, size_t n, const void* vp) { \
    (void)vp;                                                                                    \
    const float* x = vx;                                                                         \
    float* y = vy;                                                                               \
    size_t i = 0;                                                                                \
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, op_##op(_mm512_loadu_ps(x + i)));       \
    if (i < n) {                                                                                 \
      const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);                                     \
      _mm512_mask_storeu_ps(y + i, m, op_##op(_mm512_maskz_loadu_ps(m, x + i)));                 \
    }                                                                                            \
  }

AXLE_F32_UNARY_AVX512_OPS(AXLE_UNARY_AVX512_)
