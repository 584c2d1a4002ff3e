/* axle_f32_gemv_1x16__avx512: a panel's 16 columns in one zmm, K in four
 * interleaved sums (the FMA latency covered at one vector a cycle, which
 * is more than memory delivers). Four panels at a time where four remain:
 * four sequential streams of B keep more of its lines in flight than the
 * hardware prefetcher does for one. MobileNetV2's classifier (1280 x 1000,
 * 5 MB, read once a run) alone on Zen 5, mean of 290 calls: from L3
 * 70-74 -> 60 us, from memory 97-100 -> 67-80 us, cached in L3 ~49 -> 47;
 * a software prefetch 2-16 KB ahead on the one stream was slower. The
 * rest one panel at a time; opmasks store a partial last panel.
 * Compiled for AVX-512 per function; callers reach it only through
 * dispatch. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "masked_at.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))

enum { NR = AXLE_F32_GEMM_NR, STREAMS = 4 };

/* Panels [0, P) of b (kb * NR floats apart) into y[0, P NR), each as the
 * scalar reference sums it: s[p % 4] over p, then (s0 + s1) + (s2 + s3). */
AXLE_AVX512 static inline __attribute__((always_inline)) void panels(const int P, size_t kb,
                                                                     size_t cols, const float* x,
                                                                     const float* b, float* y,
                                                                     int accumulate) {
  __m512 s[STREAMS][4];
  for (int q = 0; q < P; ++q)
    for (int u = 0; u < 4; ++u) s[q][u] = _mm512_setzero_ps();
  size_t p = 0;
  for (; p + 4 <= kb; p += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const __m512 xu = _mm512_set1_ps(x[p + u]);
#pragma GCC unroll 4
      for (int q = 0; q < P; ++q)
        s[q][u] = _mm512_fmadd_ps(xu, _mm512_loadu_ps(b + q * kb * NR + (p + u) * NR), s[q][u]);
    }
  }
  for (int u = 0; p < kb; ++p, ++u) {
    const __m512 xu = _mm512_set1_ps(x[p]);
    for (int q = 0; q < P; ++q)
      s[q][u] = _mm512_fmadd_ps(xu, _mm512_loadu_ps(b + q * kb * NR + p * NR), s[q][u]);
  }
  for (int q = 0; q < P; ++q) {
    __m512 v = _mm512_add_ps(_mm512_add_ps(s[q][0], s[q][1]), _mm512_add_ps(s[q][2], s[q][3]));
    const __mmask16 m = axle_f32_lanes16_inside((int64_t)q * NR, (int64_t)cols);
    if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + q * NR), v);
    _mm512_mask_storeu_ps(y + q * NR, m, v);
  }
}

AXLE_AVX512 void axle_f32_gemv_1x16__avx512(size_t kb, size_t n, const float* x, const float* b,
                                            float* y, int accumulate) {
  size_t j0 = 0;
  for (; j0 + STREAMS * NR <= n; j0 += STREAMS * NR, b += STREAMS * kb * NR)
    panels(STREAMS, kb, STREAMS * NR, x, b, y + j0, accumulate);
  for (; j0 < n; j0 += NR, b += kb * NR) panels(1, kb, n - j0, x, b, y + j0, accumulate);
}
