/* im2col blocks with AVX-512: 16-lane moves (see im2col_moves.c). Masks
 * are opmasks; stride 2 keeps the even floats with one two-source
 * permute. */
#include <immintrin.h>

#include "im2col_moves.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))

AXLE_AVX512 static void im2col_replay__avx512(const axle_f32_im2col_move_t* mv,
                                              const axle_f32_im2col_move_t* end, int64_t stride,
                                              const float* xc, float* d) {
  if (stride == 1) {
    for (; mv < end; ++mv) {
      const float* x = axle_f32_masked_at(xc, mv->src);
      float* y = d + mv->dst;
      if (!mv->full)
        _mm512_mask_storeu_ps(y, mv->st, _mm512_maskz_loadu_ps(mv->ld0, x));
      else
        for (int32_t v = 0; v < mv->full; ++v)
          _mm512_storeu_ps(y + 16 * v, _mm512_loadu_ps(x + 16 * v));
    }
    return;
  }
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (; mv < end; ++mv) {
    const float* x = axle_f32_masked_at(xc, mv->src);
    float* y = d + mv->dst;
    if (!mv->full) {
      const __m512 v0 = _mm512_maskz_loadu_ps(mv->ld0, x);
      const __m512 v1 = _mm512_maskz_loadu_ps(mv->ld1, axle_f32_masked_at(xc, mv->src + 16));
      _mm512_mask_storeu_ps(y, mv->st, _mm512_permutex2var_ps(v0, even, v1));
    } else {
      for (int32_t v = 0; v < mv->full; ++v) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * v), v1 = _mm512_loadu_ps(x + 32 * v + 16);
        _mm512_storeu_ps(y + 16 * v, _mm512_permutex2var_ps(v0, even, v1));
      }
    }
  }
}

void axle_f32_im2col_block__avx512(const axle_f32_conv_params_t* p, const float* x_group,
                                   size_t k0, size_t kc, size_t n0, size_t nc, float* dst) {
  axle_f32_im2col_block_moves(p, x_group, k0, kc, n0, nc, dst, 16, im2col_replay__avx512);
}
