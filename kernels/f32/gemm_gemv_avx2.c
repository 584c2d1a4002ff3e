/* axle_f32_gemv_1x16__avx2_fma: a panel's 16 columns in two ymm halves,
 * K in four interleaved sums each (8 independent FMA chains: an FMA waits
 * 4 cycles on its chain, two issue per cycle). One sequential stream of B,
 * left to the hardware prefetcher: the AVX-512 variant's four streams
 * (four panels at a time) would need 32 accumulators here, with the sums
 * kept in the reference's order, against 16 ymm registers.
 * Compiled for AVX2 per function; callers reach it only through dispatch. */
#include <immintrin.h>

#include "axle_kernels.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

enum { NR = AXLE_F32_GEMM_NR };

AXLE_AVX2 void axle_f32_gemv_1x16__avx2_fma(size_t kb, size_t n, const float* x, const float* b,
                                            float* y, int accumulate) {
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kb * NR) {
    __m256 lo[4], hi[4];
    for (int s = 0; s < 4; ++s) lo[s] = hi[s] = _mm256_setzero_ps();
    size_t p = 0;
    for (; p + 4 <= kb; p += 4) {
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        const __m256 xs = _mm256_broadcast_ss(x + p + s);
        lo[s] = _mm256_fmadd_ps(xs, _mm256_loadu_ps(b + (p + s) * NR), lo[s]);
        hi[s] = _mm256_fmadd_ps(xs, _mm256_loadu_ps(b + (p + s) * NR + 8), hi[s]);
      }
    }
    for (int s = 0; p < kb; ++p, ++s) {
      const __m256 xs = _mm256_broadcast_ss(x + p);
      lo[s] = _mm256_fmadd_ps(xs, _mm256_loadu_ps(b + p * NR), lo[s]);
      hi[s] = _mm256_fmadd_ps(xs, _mm256_loadu_ps(b + p * NR + 8), hi[s]);
    }
    float v[NR];
    _mm256_storeu_ps(v, _mm256_add_ps(_mm256_add_ps(lo[0], lo[1]), _mm256_add_ps(lo[2], lo[3])));
    _mm256_storeu_ps(v + 8,
                     _mm256_add_ps(_mm256_add_ps(hi[0], hi[1]), _mm256_add_ps(hi[2], hi[3])));
    const size_t cols = n - j0 < NR ? n - j0 : NR;
    for (size_t j = 0; j < cols; ++j) y[j0 + j] = accumulate ? y[j0 + j] + v[j] : v[j];
  }
}
