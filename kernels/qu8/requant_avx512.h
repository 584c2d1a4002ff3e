/* Internal to the kernels: the requantisation of requant_avx2.h on zmm
 * registers, for the AVX-512 VNNI variants: the same operations in the
 * same order on 16 lanes, so the same bits (requant_avx2.h says why those
 * are the scalar ones). */
#ifndef AXLE_KERNELS_QU8_REQUANT_AVX512_H_
#define AXLE_KERNELS_QU8_REQUANT_AVX512_H_

#include <immintrin.h>

#include "requant_avx2.h"

#define AXLE_AVX512 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define AXLE_AVX512_INLINE                                                         \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"), \
                 always_inline)) static inline

/* round(acc * scale), capped above (requant_avx2.h) unless skip has
 * AXLE_QU8_SKIP_CAP; acc: bias terms plus sums. skip is a constant at
 * every call (AXLE_QU8_SKIP_SWITCH). */
AXLE_AVX512_INLINE __m512i axle_qu8_round16(__m512i acc, __m512 scale, const unsigned skip) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), scale);
  if (!(skip & AXLE_QU8_SKIP_CAP)) f = _mm512_min_ps(f, _mm512_set1_ps(AXLE_QU8_REQUANT_BOUND));
  return _mm512_cvtps_epi32(f);
}

/* Four rows of 16 rounded values to u8, row k in 128-bit lane k: the
 * AVX2 epilogue's saturating packs, zero point and clamp (requant_avx2.h
 * shows they give the scalar bits) on four rows at once, which costs a
 * third of the shuffles of four vpmovdb. The packs leave lane k holding
 * columns 4k..4k+3 of each row; the vpermd transposes that. The zero point
 * and the clamp are left out where skip (a constant) says so. */
AXLE_AVX512_INLINE __m512i axle_qu8_narrow4x16(__m512i q0, __m512i q1, __m512i q2, __m512i q3,
                                               __m512i zp16, __m512i lo8, __m512i hi8,
                                               const unsigned skip) {
  __m512i a = _mm512_packs_epi32(q0, q1), b = _mm512_packs_epi32(q2, q3);
  if (!(skip & AXLE_QU8_SKIP_ZERO_POINT)) {
    a = _mm512_adds_epi16(a, zp16);
    b = _mm512_adds_epi16(b, zp16);
  }
  const __m512i rows = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
      _mm512_packus_epi16(a, b));
  if (skip & AXLE_QU8_SKIP_CLAMP) return rows;
  return _mm512_min_epu8(_mm512_max_epu8(rows, lo8), hi8);
}

#endif /* AXLE_KERNELS_QU8_REQUANT_AVX512_H_ */
