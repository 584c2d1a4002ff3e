/* Internal to the kernels: the one-column tiles' operand gather, shared by
 * the AVX2 and AVX-512 quantized kernels. */
#ifndef AXLE_KERNELS_QU8_LANES_AVX2_H_
#define AXLE_KERNELS_QU8_LANES_AVX2_H_

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The 32-bit groups at g, g + stride, g + 2 stride and g + 3 stride bytes
 * in one register. Inserted one by one: four 4-byte stores read back as one
 * 16-byte load would miss store forwarding on every K step. */
__attribute__((target("avx2"), always_inline)) static inline __m128i axle_qu8_gather4_i32(
    const void* g, size_t stride) {
  int32_t v[4];
  for (size_t q = 0; q < 4; ++q) memcpy(&v[q], (const unsigned char*)g + q * stride, sizeof v[q]);
  __m128i x = _mm_cvtsi32_si128(v[0]);
  x = _mm_insert_epi32(x, v[1], 1);
  x = _mm_insert_epi32(x, v[2], 2);
  return _mm_insert_epi32(x, v[3], 3);
}

#endif /* AXLE_KERNELS_QU8_LANES_AVX2_H_ */
