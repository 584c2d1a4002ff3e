/* Internal to kernels/f32: lane helpers of the 256-bit kernels (AVX2, and
 * AVX-512 code working on halves): the lane mask of a vector's first n
 * floats, for tails (maskload/maskstore read and write nothing in the lanes
 * left out, so a tail never touches memory past its end), and the 8 x 8
 * transpose of the GEMM tiles' stores. */
#ifndef AXLE_KERNELS_F32_LANES_AVX2_H_
#define AXLE_KERNELS_F32_LANES_AVX2_H_

#include <immintrin.h>
#include <stddef.h>

/* Lanes i < n (n = 0..8). */
__attribute__((target("avx2"), always_inline)) static inline __m256i axle_f32_first_lanes__avx2(
    size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* r[j] lane i becomes r[i] lane j. Rows that are zero vectors fold away. */
__attribute__((target("avx"), always_inline)) static inline void axle_f32_transpose8__avx(
    __m256 r[8]) {
  __m256 t[8], u[8];
  for (int q = 0; q < 4; ++q) {
    t[2 * q] = _mm256_unpacklo_ps(r[2 * q], r[2 * q + 1]);
    t[2 * q + 1] = _mm256_unpackhi_ps(r[2 * q], r[2 * q + 1]);
  }
  for (int q = 0; q < 2; ++q) {
    u[4 * q] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
    u[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
    u[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
    u[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
  }
  for (int q = 0; q < 4; ++q) {
    r[q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x20);
    r[4 + q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x31);
  }
}

#endif /* AXLE_KERNELS_F32_LANES_AVX2_H_ */
