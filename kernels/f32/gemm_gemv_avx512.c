/* axle_f32_gemv_1x16__avx512: a panel's 16 columns in one zmm, K in four
 * interleaved sums (the FMA latency covered at one vector a cycle, which
 * is more than memory delivers). One sequential stream of B, left to the
 * hardware prefetcher; opmasks store a partial last panel.
 * Compiled for AVX-512 per function; callers reach it only through
 * dispatch. */
#include <immintrin.h>

#include "axle_kernels.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))

enum { NR = AXLE_F32_GEMM_NR };

AXLE_AVX512 void axle_f32_gemv_1x16__avx512(size_t kb, size_t n, const float* x, const float* b,
                                            float* y, int accumulate) {
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kb * NR) {
    __m512 s[4];
    for (int q = 0; q < 4; ++q) s[q] = _mm512_setzero_ps();
    size_t p = 0;
    for (; p + 4 <= kb; p += 4) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
        s[q] = _mm512_fmadd_ps(_mm512_set1_ps(x[p + q]), _mm512_loadu_ps(b + (p + q) * NR), s[q]);
    }
    for (int q = 0; p < kb; ++p, ++q)
      s[q] = _mm512_fmadd_ps(_mm512_set1_ps(x[p]), _mm512_loadu_ps(b + p * NR), s[q]);
    __m512 v = _mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3]));
    const __mmask16 m = n - j0 < NR ? (__mmask16)((1u << (n - j0)) - 1u) : (__mmask16)0xFFFFu;
    if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + j0), v);
    _mm512_mask_storeu_ps(y + j0, m, v);
  }
}
