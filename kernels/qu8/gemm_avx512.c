/* The AVX-512 VNNI micro-kernel of the quantized convolution.
 *
 * vpdpbusd does four u8 x s8 multiply-adds per int32 lane with no
 * saturation (axle_kernels_qu8.h): twice vpmaddwd's work per instruction on
 * a lane, on operands half as wide, so neither needs widening (the strip is
 * u8 as the input is, the weights s8 as they come). The 12 x 16 tile keeps
 * one zmm accumulator per channel: per K quad one strip load feeds 12
 * vpdpbusd whose weight quads are broadcast from memory, 768 multiply-adds
 * against the AVX2 kernel's 192 per K pair; 12 chains also cover the
 * instruction's latency on two ports. The epilogue is the AVX2 one on the
 * accumulators' halves, so the requantised bits cannot differ. */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "lanes_avx2.h"
#include "requant_avx2.h"

#define AXLE_AVX512 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR };

AXLE_AVX512 void axle_qu8_gemm_12x16c4__avx512(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                               const uint8_t* b, const int32_t* terms,
                                               const float* scale, const axle_qu8_requant_t* rq,
                                               uint8_t* y, size_t ldy) {
  /* Rows past mr compute on the panel's zero padding and are never stored;
   * terms and scale are not read for them. The loops over rows are
   * unrolled so the accumulators stay in registers. */
  __m512i acc[MR];
#pragma GCC unroll 12
  for (size_t i = 0; i < MR; ++i) acc[i] = _mm512_set1_epi32(i < mr ? terms[i] : 0);
  for (size_t p = 0; p < kq; ++p, a += MR * 4, b += NR * 4) {
    const __m512i bv = _mm512_loadu_si512(b);
#pragma GCC unroll 12
    for (size_t i = 0; i < MR; ++i) {
      int32_t w;
      memcpy(&w, a + 4 * i, sizeof w);
      acc[i] = _mm512_dpbusd_epi32(acc[i], bv, _mm512_set1_epi32(w));
    }
  }
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
  const __mmask16 cols = (__mmask16)((1u << nr) - 1);
#pragma GCC unroll 6
  for (size_t i = 0; i < MR; i += 2) {
    if (i >= mr) break;
    const __m256 s0 = _mm256_set1_ps(scale[i]);
    const __m256 s1 = _mm256_set1_ps(i + 1 < mr ? scale[i + 1] : 0.0f);
    const __m256i v = axle_qu8_narrow2x16(
        axle_qu8_scale8(_mm512_castsi512_si256(acc[i]), s0),
        axle_qu8_scale8(_mm512_extracti64x4_epi64(acc[i], 1), s0),
        axle_qu8_scale8(_mm512_castsi512_si256(acc[i + 1]), s1),
        axle_qu8_scale8(_mm512_extracti64x4_epi64(acc[i + 1], 1), s1), &regs);
    _mm_mask_storeu_epi8(y + i * ldy, cols, _mm256_castsi256_si128(v));
    if (i + 1 < mr) _mm_mask_storeu_epi8(y + (i + 1) * ldy, cols, _mm256_extracti128_si256(v, 1));
  }
}

/* One output column (a fully connected layer at batch 1), as
 * axle_qu8_gemm_6x1__avx2 does it on pairs: per K quad the panel holds the
 * 12 rows' weight quads back to back, so four quads are 48 int32 = 3 zmm,
 * against the column's quads q0..q3 spread as [q0 x12, q1 x4], [q1 x8,
 * q2 x8], [q2 x4, q3 x12]; element e of the 48 belongs to row e % 12. nr
 * must be 1. */
AXLE_AVX512 void axle_qu8_gemm_12x1c4__avx512(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                              const uint8_t* b, const int32_t* terms,
                                              const float* scale, const axle_qu8_requant_t* rq,
                                              uint8_t* y, size_t ldy) {
  (void)nr;
  const __m512i spread0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i spread1 = _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2);
  const __m512i spread2 = _mm512_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3);
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0;
  size_t p = 0;
  for (; p + 4 <= kq; p += 4) {
    const __m512i xv = _mm512_castsi128_si512(axle_qu8_gather4_i32(b + p * NR * 4, NR * 4));
    const int8_t* w = a + p * MR * 4;
    acc0 = _mm512_dpbusd_epi32(acc0, _mm512_permutexvar_epi32(spread0, xv),
                               _mm512_loadu_si512(w));
    acc1 = _mm512_dpbusd_epi32(acc1, _mm512_permutexvar_epi32(spread1, xv),
                               _mm512_loadu_si512(w + 64));
    acc2 = _mm512_dpbusd_epi32(acc2, _mm512_permutexvar_epi32(spread2, xv),
                               _mm512_loadu_si512(w + 128));
  }
  uint32_t lanes[48], sum[MR];
  _mm512_storeu_si512(lanes, acc0);
  _mm512_storeu_si512(lanes + 16, acc1);
  _mm512_storeu_si512(lanes + 32, acc2);
  for (size_t i = 0; i < MR; ++i) sum[i] = i < mr ? (uint32_t)terms[i] : 0u;
  for (size_t e = 0; e < 48; ++e) sum[e % MR] += lanes[e];
  /* The last K quads, fewer than four. */
  for (; p < kq; ++p)
    for (size_t i = 0; i < MR; ++i)
      for (size_t t = 0; t < 4; ++t)
        sum[i] += (uint32_t)(a[(p * MR + i) * 4 + t] * (int32_t)b[p * NR * 4 + t]);
  for (size_t i = 0; i < mr; ++i) y[i * ldy] = axle_qu8_requant((int32_t)sum[i], scale[i], rq);
}
