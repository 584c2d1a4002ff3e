/* Internal to kernels/f32: e^x on eight floats with AVX2 and FMA, for the
 * elementwise and softmax variants. Hand-written because libm has no vector
 * expf the build can rely on (glibc's libmvec is neither everywhere nor
 * callable from the target-attribute functions these kernels are).
 *
 * e^x = 2^n * e^r with n = round(x * log2(e)) and r = x - n * ln(2) in
 * [-ln(2)/2, ln(2)/2], ln(2) split in a part with few significant bits (so
 * n * ln2_hi is exact) and the rest. e^r is 1 + r + r^2 P(r), P of degree 4
 * with coefficients fitted here to e^r on that interval (relative error
 * 3.6e-9, a sixteenth of a float's last bit; the Taylor polynomial needs
 * degree 7 for as much), so the result is within about 1 ulp of expf's.
 * 2^n is applied as 2^(n/2) * 2^(n - n/2), both normal floats for every n
 * the clamp allows, so results that overflow become +inf and those below
 * FLT_MIN become subnormal or 0 as expf's do, without special cases. The
 * clamp keeps NaN (max/min return their second operand on NaN). */
#ifndef AXLE_KERNELS_F32_EXP_AVX2_H_
#define AXLE_KERNELS_F32_EXP_AVX2_H_

#include <immintrin.h>

#define AXLE_EXP_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

AXLE_EXP_AVX2_INLINE __m256 axle_f32_exp8__avx2(__m256 x) {
  /* Past these e^x is +inf (88.73 > ln(FLT_MAX)) or 0 (-104 < ln of half
   * the smallest subnormal); n stays within [-151, 129]. */
  x = _mm256_min_ps(_mm256_set1_ps(88.8f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-6f), r);
  __m256 p = _mm256_set1_ps(1.375169089e-03f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.368915511e-03f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166952808e-02f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666651847e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999998862e-01f));
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
