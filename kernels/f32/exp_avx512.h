/* Internal to kernels/f32: e^x on sixteen floats with AVX-512, for the
 * AVX-512 activation and softmax variants. The same reduction and
 * polynomial as exp_avx2.h (vmath_coeffs.h), with 2^n applied by vscalefps,
 * which rounds once and gives +inf past the top and subnormals or 0 at the
 * bottom by itself. The clamp keeps infinite arguments out of the
 * reduction (inf - inf) and passes NaN on. */
#ifndef AXLE_KERNELS_F32_EXP_AVX512_H_
#define AXLE_KERNELS_F32_EXP_AVX512_H_

#include <immintrin.h>

#include "vmath_coeffs.h"

#define AXLE_EXP_AVX512_INLINE \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"), always_inline)) static inline

AXLE_EXP_AVX512_INLINE __m512 axle_f32_exp16__avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(AXLE_EXP_HI), _mm512_max_ps(_mm512_set1_ps(AXLE_EXP_LO), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(AXLE_LOG2E)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AXLE_LN2_HI), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AXLE_LN2_LO), r);
  __m512 p = _mm512_set1_ps(AXLE_EXP_P6);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AXLE_EXP_P5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AXLE_EXP_P4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AXLE_EXP_P3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AXLE_EXP_P2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

#endif /* AXLE_KERNELS_F32_EXP_AVX512_H_ */
