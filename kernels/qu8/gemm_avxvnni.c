/* The AVX-VNNI micro-kernel of the quantized convolution (AXLE_ISA_AVX2_VNNI:
 * CPUs with AVX2 and the VEX form of vpdpbusd but no AVX-512, e.g. Alder
 * Lake and Sierra Forest).
 *
 * It reads the layouts of the AVX-512 VNNI tile (axle_qu8_gemm_12x16c4__avx512):
 * per K quad a 12-row weight panel of s8 quads and a 16-column strip of u8
 * quads, so packing and pre-packed weights are shared. On ymm a K quad of
 * the strip is two registers (columns 0..7, 8..15), and all 12 rows' 24
 * accumulators would not fit the 16 registers: the panel runs as two
 * 6-row halves, each 12 accumulators, 2 strip loads and 6 weight
 * broadcasts per K quad feeding 12 vpdpbusd (384 multiply-adds, against the
 * AVX2 kernel's 192 from 12 vpmaddwd and 12 vpaddd per K pair). The second
 * half reads the strip again, from L1. vpdpbusd adds four u8 x s8 products
 * to an int32 lane without saturation, so the sums are exact; the epilogue
 * is the AVX2 one (requant_avx2.h), so the bits are those of every other
 * variant. */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

#define AXLE_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#define AXLE_AVXVNNI_INLINE __attribute__((target("avx2,fma,avxvnni"), always_inline)) static inline

enum { MR = AXLE_QU8_GEMM_C4_MR, HALF = AXLE_QU8_GEMM_C4_MR / 2, NR = AXLE_QU8_GEMM_NR };

/* Rows h0 .. h0 + HALF - 1 of the panel (their first mr stored; rows past
 * mr compute on the panel's zero padding, and terms and scale are not read
 * for them). */
AXLE_AVXVNNI_INLINE void half_tile(size_t h0, size_t mr, size_t nr, size_t kq, const int8_t* a,
                                   const uint8_t* b, const int32_t* terms, const float* scale,
                                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  __m256i lo[HALF], hi[HALF];
#pragma GCC unroll 6
  for (size_t i = 0; i < HALF; ++i)
    lo[i] = hi[i] = _mm256_set1_epi32(h0 + i < mr ? terms[h0 + i] : 0);
  a += 4 * h0;
  for (size_t p = 0; p < kq; ++p, a += MR * 4, b += NR * 4) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i*)b);
    const __m256i b1 = _mm256_loadu_si256((const __m256i*)(b + NR * 2));
#pragma GCC unroll 6
    for (size_t i = 0; i < HALF; ++i) {
      int32_t w;
      memcpy(&w, a + 4 * i, sizeof w);
      const __m256i wv = _mm256_set1_epi32(w);
      lo[i] = _mm256_dpbusd_avx_epi32(lo[i], b0, wv);
      hi[i] = _mm256_dpbusd_avx_epi32(hi[i], b1, wv);
    }
  }
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
#pragma GCC unroll 3
  for (size_t i = 0; i < HALF; i += 2) {
    if (h0 + i >= mr) break;
    const __m256 s0 = _mm256_set1_ps(scale[h0 + i]);
    const __m256 s1 = _mm256_set1_ps(h0 + i + 1 < mr ? scale[h0 + i + 1] : 0.0f);
    const __m256i v = axle_qu8_narrow2x16(
        axle_qu8_scale8(lo[i], s0, 0), axle_qu8_scale8(hi[i], s0, 0),
        axle_qu8_scale8(lo[i + 1], s1, 0), axle_qu8_scale8(hi[i + 1], s1, 0), &regs, 0);
    axle_qu8_store16(_mm256_castsi256_si128(v), nr, y + (h0 + i) * ldy);
    if (h0 + i + 1 < mr)
      axle_qu8_store16(_mm256_extracti128_si256(v, 1), nr, y + (h0 + i + 1) * ldy);
  }
}

AXLE_AVXVNNI void axle_qu8_gemm_12x16c4__avxvnni(size_t m, size_t n, size_t kq, const int8_t* a,
                                                 const uint8_t* b, const int32_t* terms,
                                                 const float* scale, const axle_qu8_requant_t* rq,
                                                 uint8_t* y, size_t ldy) {
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kq * NR * 4) {
    const size_t nr = n - j0 < NR ? n - j0 : NR;
    for (size_t i0 = 0; i0 < m; i0 += MR) {
      const size_t mr = m - i0 < MR ? m - i0 : MR;
      const int8_t* ap = a + i0 * kq * 4;
      uint8_t* yt = y + i0 * ldy + j0;
      half_tile(0, mr, nr, kq, ap, b, terms + i0, scale + i0, rq, yt, ldy);
      if (mr > HALF) half_tile(HALF, mr, nr, kq, ap, b, terms + i0, scale + i0, rq, yt, ldy);
    }
  }
}
