/* Internal to the kernels: the requantisation of axle_kernels_qu8.h on
 * vectors, for the AVX2 variants. Gives the bits of axle_qu8_requant():
 * int -> float and the multiply round to nearest like the C conversions;
 * vcvtps2dq rounds half to even in the default MXCSR mode, as nearbyintf
 * does in the default rounding mode. Out-of-range values take a different
 * road to the same clamp: capping at +1024 (an integer, so it commutes with
 * rounding) keeps vcvtps2dq from overflowing to INT_MIN on the positive
 * side, negative overflow already gives INT_MIN, and from there the
 * saturating int16 pack, saturating zero-point add and unsigned pack are
 * monotone, so anything beyond the u8 range still lands on 0 or 255. With
 * every scale below 1 (AXLE_QU8_SKIP_CAP) no product reaches 2^31, and
 * with zero point 0 or clamp [0, 255] those steps are no-ops: the kernels
 * that dispatch on rq->skip (AXLE_QU8_SKIP_SWITCH) leave them out. Int8 MobileNetV2 at 1 thread,
 * Zen 4 AVX-512 VNNI, each side's fastest of 300 runs over 6 alternating pairs: 2.46-2.51
 * -> 2.31-2.36 ms (the cap alone: 2.62 -> 2.53 on average over 8 pairs, a noisier hour); capped at
 * AVX2, medians 5.72-5.80 -> 5.56-5.66. */
#ifndef AXLE_KERNELS_QU8_REQUANT_AVX2_H_
#define AXLE_KERNELS_QU8_REQUANT_AVX2_H_

#include <immintrin.h>
#include <string.h>

#include "requant.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* Zero point and clamp bounds in registers. */
typedef struct axle_qu8_rq_regs_t {
  __m256i zero_point; /* int16 lanes */
  __m256i lo, hi;     /* u8 lanes */
} axle_qu8_rq_regs_t;

AXLE_AVX2_INLINE axle_qu8_rq_regs_t axle_qu8_rq_regs(const axle_qu8_requant_t* rq) {
  axle_qu8_rq_regs_t r;
  r.zero_point = _mm256_set1_epi16((short)rq->zero_point);
  r.lo = _mm256_set1_epi8((char)rq->min);
  r.hi = _mm256_set1_epi8((char)rq->max);
  return r;
}

/* round(f), capped above (see the top of the file). */
AXLE_AVX2_INLINE __m256i axle_qu8_round8(__m256 f) {
  return _mm256_cvtps_epi32(_mm256_min_ps(f, _mm256_set1_ps(AXLE_QU8_REQUANT_BOUND)));
}

/* round(acc * scale), capped above unless skip has AXLE_QU8_SKIP_CAP.
 * skip is a constant at every call (AXLE_QU8_SKIP_SWITCH). */
AXLE_AVX2_INLINE __m256i axle_qu8_scale8(__m256i acc, __m256 scale, const unsigned skip) {
  const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), scale);
  return skip & AXLE_QU8_SKIP_CAP ? _mm256_cvtps_epi32(f) : axle_qu8_round8(f);
}

/* 16 rounded values plus the zero point, clamped, as u8, without the
 * steps skip (a constant) leaves out. packs_epi32 interleaves its operands
 * per 128-bit lane: given lo = values {0..3, 8..11} and hi = {4..7,
 * 12..15} (what unpacklo/unpackhi produce) it yields 0..15 in order. */
AXLE_AVX2_INLINE __m128i axle_qu8_narrow16(__m256i lo, __m256i hi, const axle_qu8_rq_regs_t* r,
                                           const unsigned skip) {
  __m256i s16 = _mm256_packs_epi32(lo, hi);
  if (!(skip & AXLE_QU8_SKIP_ZERO_POINT)) s16 = _mm256_adds_epi16(s16, r->zero_point);
  const __m256i u8 = _mm256_permute4x64_epi64(_mm256_packus_epi16(s16, s16), 0x08);
  const __m128i v = _mm256_castsi256_si128(u8);
  if (skip & AXLE_QU8_SKIP_CLAMP) return v;
  return _mm_min_epu8(_mm_max_epu8(v, _mm256_castsi256_si128(r->lo)),
                      _mm256_castsi256_si128(r->hi));
}

/* The same for values 0..7 in v0 and 8..15 in v1. */
AXLE_AVX2_INLINE __m128i axle_qu8_narrow16_ordered(__m256i v0, __m256i v1,
                                                   const axle_qu8_rq_regs_t* r,
                                                   const unsigned skip) {
  /* Regroup into {0..3, 8..11} and {4..7, 12..15}. */
  const __m256i lo = _mm256_permute2x128_si256(v0, v1, 0x20);
  const __m256i hi = _mm256_permute2x128_si256(v0, v1, 0x31);
  return axle_qu8_narrow16(lo, hi, r, skip);
}

/* Two rows of 16: a0 (columns 0..7), a1 (8..15) of the first, b0, b1 of the
 * second; the first row in the low 128 bits of the result. The zero point
 * and the clamp are left out where skip (a constant) says so. */
AXLE_AVX2_INLINE __m256i axle_qu8_narrow2x16(__m256i a0, __m256i a1, __m256i b0, __m256i b1,
                                             const axle_qu8_rq_regs_t* r, const unsigned skip) {
  __m256i sa = _mm256_packs_epi32(a0, a1), sb = _mm256_packs_epi32(b0, b1);
  if (!(skip & AXLE_QU8_SKIP_ZERO_POINT)) {
    sa = _mm256_adds_epi16(sa, r->zero_point);
    sb = _mm256_adds_epi16(sb, r->zero_point);
  }
  /* Dwords now hold a 0-3, a 8-11, b 0-3, b 8-11 | a 4-7, a 12-15, b 4-7,
   * b 12-15. */
  const __m256i u8 = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(sa, sb),
                                                 _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  if (skip & AXLE_QU8_SKIP_CLAMP) return u8;
  return _mm256_min_epu8(_mm256_max_epu8(u8, r->lo), r->hi);
}

/* The vpshufb control that puts the window byte triples (taps kx = 0..2)
 * of 4 consecutive outputs at stride s, from a 16-byte row load starting
 * at the first one's window, into one int32 lane each, the fourth byte 0:
 * vpdpbusd's input operand against axle_qu8_dw_row_quad (the AVX-512 and
 * AVX-VNNI depthwise kernels). */
AXLE_AVX2_INLINE __m128i axle_qu8_dw_triple_lanes(int64_t s) {
  return s == 1 ? _mm_setr_epi8(0, 1, 2, -128, 1, 2, 3, -128, 2, 3, 4, -128, 3, 4, 5, -128)
                : _mm_setr_epi8(0, 1, 2, -128, 2, 3, 4, -128, 4, 5, 6, -128, 6, 7, 8, -128);
}

/* The first nr (<= 16) bytes of v to y. */
AXLE_AVX2_INLINE void axle_qu8_store16(__m128i v, size_t nr, uint8_t* y) {
  if (nr == 16) {
    _mm_storeu_si128((__m128i*)y, v);
  } else if (nr == 8) {
    _mm_storel_epi64((__m128i*)y, v);
  } else {
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i*)tmp, v);
    memcpy(y, tmp, nr);
  }
}

#endif /* AXLE_KERNELS_QU8_REQUANT_AVX2_H_ */
