/* Internal to kernels/f32: e^x on eight floats with AVX2 and FMA, for the
 * elementwise and softmax variants. Hand-written because libm has no vector
 * expf the build can rely on (glibc's libmvec is neither everywhere nor
 * callable from the target-attribute functions these kernels are).
 *
 * e^x = 2^n e^r, reduced and approximated as vmath_coeffs.h describes:
 * within about 1 ulp of expf.
 * 2^n is applied as 2^(n/2) * 2^(n - n/2), both normal floats for every n
 * the clamp allows, so results that overflow become +inf and those below
 * FLT_MIN become subnormal or 0 as expf's do, without special cases. The
 * clamp keeps NaN (max/min return their second operand on NaN). */
#ifndef AXLE_KERNELS_F32_EXP_AVX2_H_
#define AXLE_KERNELS_F32_EXP_AVX2_H_

#include <immintrin.h>

#include "vmath_coeffs.h"

#define AXLE_EXP_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

AXLE_EXP_AVX2_INLINE __m256 axle_f32_exp8__avx2(__m256 x) {
  /* n stays within [-151, 129]. */
  x = _mm256_min_ps(_mm256_set1_ps(AXLE_EXP_HI), _mm256_max_ps(_mm256_set1_ps(AXLE_EXP_LO), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(AXLE_LOG2E)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AXLE_LN2_HI), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AXLE_LN2_LO), r);
  __m256 p = _mm256_set1_ps(AXLE_EXP_P6);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AXLE_EXP_P5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AXLE_EXP_P4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AXLE_EXP_P3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AXLE_EXP_P2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif /* AXLE_KERNELS_F32_EXP_AVX2_H_ */
