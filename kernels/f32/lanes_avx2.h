/* Internal to kernels/f32: the lane mask of a vector's first n floats, for
 * the AVX2 kernels' tails (maskload/maskstore read and write nothing in the
 * lanes left out, so a tail never touches memory past its end). */
#ifndef AXLE_KERNELS_F32_LANES_AVX2_H_
#define AXLE_KERNELS_F32_LANES_AVX2_H_

#include <immintrin.h>
#include <stddef.h>

/* Lanes i < n (n = 0..8). */
__attribute__((target("avx2"), always_inline)) static inline __m256i axle_f32_first_lanes__avx2(
    size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#endif /* AXLE_KERNELS_F32_LANES_AVX2_H_ */
