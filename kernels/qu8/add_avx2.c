/* Quantized addition with AVX2: 16 elements per step, each operation of the
 * scalar variant done as the same single-rounded vector operation (mul,
 * mul, add, div; this directory is compiled with -ffp-contract=off so the
 * compiler cannot fuse them), so the bits match; the tail goes to the
 * scalar variant. */
#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

/* Eight u8 at p, minus zero_point, as float (exact: |v| <= 255). */
AXLE_AVX2_INLINE __m256 centred8(const uint8_t* p, __m256i zero_point) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(v, zero_point));
}

AXLE_AVX2 void axle_qu8_add__avx2(size_t n, const uint8_t* a, const uint8_t* b,
                                  const axle_qu8_add_params_t* q, uint8_t* y) {
  const __m256i za = _mm256_set1_epi32(q->a_zero_point), zb = _mm256_set1_epi32(q->b_zero_point);
  const __m256 sa = _mm256_set1_ps(q->a_scale), sb = _mm256_set1_ps(q->b_scale);
  const __m256 sy = _mm256_set1_ps(q->y_scale);
  const axle_qu8_requant_t rq = {NULL, q->y_zero_point, q->min, q->max, 0};
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(&rq);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 v0 = _mm256_add_ps(_mm256_mul_ps(centred8(a + i, za), sa),
                              _mm256_mul_ps(centred8(b + i, zb), sb));
    __m256 v1 = _mm256_add_ps(_mm256_mul_ps(centred8(a + i + 8, za), sa),
                              _mm256_mul_ps(centred8(b + i + 8, zb), sb));
    const __m256i q0 = axle_qu8_round8(_mm256_div_ps(v0, sy));
    const __m256i q1 = axle_qu8_round8(_mm256_div_ps(v1, sy));
    _mm_storeu_si128((__m128i*)(y + i), axle_qu8_narrow16_ordered(q0, q1, &regs, 0));
  }
  axle_qu8_add__scalar(n - i, a + i, b + i, q, y + i);
}
