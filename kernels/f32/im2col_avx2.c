/* im2col blocks with AVX2: 8-lane moves (see im2col_moves.c). Masks
 * become lane vectors for vmaskmovps (masked-off lanes read nothing, like
 * AVX-512's); stride 2 keeps the even floats with a shuffle and a 64-bit
 * permute back into order. */
#include <immintrin.h>

#include "im2col_moves.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

/* Lane i all ones where bit i of m is set. */
AXLE_AVX2 static inline __m256i lane_mask(uint16_t m) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(m), bit), bit);
}

/* The even floats of the 16 in lo:hi, in order. */
AXLE_AVX2 static inline __m256 evens(__m256 lo, __m256 hi) {
  const __m256 e = _mm256_shuffle_ps(lo, hi, 0x88); /* 0 2 8 10 | 4 6 12 14 */
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
}

AXLE_AVX2 static void im2col_replay__avx2(const axle_f32_im2col_move_t* mv,
                                          const axle_f32_im2col_move_t* end, int64_t stride,
                                          const float* xc, float* d) {
  if (stride == 1) {
    for (; mv < end; ++mv) {
      const float* x = axle_f32_masked_at(xc, mv->src);
      float* y = d + mv->dst;
      if (!mv->full)
        _mm256_maskstore_ps(y, lane_mask(mv->st), _mm256_maskload_ps(x, lane_mask(mv->ld0)));
      else
        for (int32_t v = 0; v < mv->full; ++v)
          _mm256_storeu_ps(y + 8 * v, _mm256_loadu_ps(x + 8 * v));
    }
    return;
  }
  for (; mv < end; ++mv) {
    const float* x = axle_f32_masked_at(xc, mv->src);
    float* y = d + mv->dst;
    if (!mv->full) {
      const __m256 v0 = _mm256_maskload_ps(x, lane_mask(mv->ld0));
      const __m256 v1 = _mm256_maskload_ps(axle_f32_masked_at(xc, mv->src + 8), lane_mask(mv->ld1));
      _mm256_maskstore_ps(y, lane_mask(mv->st), evens(v0, v1));
    } else {
      for (int32_t v = 0; v < mv->full; ++v)
        _mm256_storeu_ps(y + 8 * v,
                         evens(_mm256_loadu_ps(x + 16 * v), _mm256_loadu_ps(x + 16 * v + 8)));
    }
  }
}

void axle_f32_im2col_block__avx2(const axle_f32_conv_params_t* p, const float* x_group,
                                 size_t k0, size_t kc, size_t n0, size_t nc, float* dst) {
  axle_f32_im2col_block_moves(p, x_group, k0, kc, n0, nc, dst, 8, im2col_replay__avx2);
}
