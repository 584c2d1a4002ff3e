/* The AVX-512 VNNI micro-kernel of the quantized convolution.
 *
 * vpdpbusd does four u8 x s8 multiply-adds per int32 lane with no
 * saturation (axle_kernels_qu8.h): twice vpmaddwd's work per instruction on
 * a lane, on operands half as wide, so neither needs widening (the strip is
 * u8 as the input is, the weights s8 as they come). The 12 x 16 tile keeps
 * one zmm accumulator per channel: per K quad one strip load feeds 12
 * vpdpbusd whose weight quads are broadcast from memory, 768 multiply-adds
 * against the AVX2 kernel's 192 per K pair; 12 chains also cover the
 * instruction's latency on two ports. The epilogue is the AVX2 one's
 * operations on whole zmm registers (requant_avx512.h), so the requantised
 * bits cannot differ. */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant_avx512.h"

enum { MR = AXLE_QU8_GEMM_C4_MR, NR = AXLE_QU8_GEMM_NR };

/* Row k of axle_qu8_narrow4x16's result (its 128-bit lane k) to y + k *
 * ldy, for k < rows (four at most), whole: four plain stores. A
 * byte-masked zmm store (vmovdqu8 with a mask) takes ~3 cycles on Zen 4
 * against ~1.4 for an extract and a plain xmm store (four stores in a
 * loop: 3.5 against 1.5 ns): 16 -> 96 at 112x112 196 -> 169 us, 24 -> 144
 * at 56x56 87 -> 74, the stem 125 -> 116. (The depthwise planes keep
 * their masked stores: their loops are bound by shuffles, which the
 * extracts add to.) */
AXLE_AVX512_INLINE void store_rows4(__m512i v, size_t rows, uint8_t* y, size_t ldy) {
  _mm_storeu_si128((__m128i*)y, _mm512_castsi512_si128(v));
  if (rows > 1) _mm_storeu_si128((__m128i*)(y + ldy), _mm512_extracti32x4_epi32(v, 1));
  if (rows > 2) _mm_storeu_si128((__m128i*)(y + 2 * ldy), _mm512_extracti32x4_epi32(v, 2));
  if (rows > 3) _mm_storeu_si128((__m128i*)(y + 3 * ldy), _mm512_extracti32x4_epi32(v, 3));
}

/* Rows i..i+3 of the tile, requantised and stored. Four rows at a time,
 * each in a 128-bit lane of one zmm; lane r goes to its row with a
 * full-width store placed 16 r bytes early, masked to that lane
 * (masked-off bytes are not accessed); full rows take plain stores
 * (store_rows4). The AVX2 epilogue on the
 * accumulators' halves had taken ~13 instructions a row against ~6: at
 * K = 16 (16 -> 96 at 112x112) more than the vpdpbusd. */
AXLE_AVX512_INLINE void store4(const unsigned skip, const __m512i acc[4], size_t i, size_t mr,
                               size_t nr, const float* scale, const axle_qu8_requant_t* rq,
                               uint8_t* y, size_t ldy) {
  const __m512i zp16 = _mm512_set1_epi16((short)rq->zero_point);
  const __m512i lo8 = _mm512_set1_epi8((char)rq->min), hi8 = _mm512_set1_epi8((char)rq->max);
  const __mmask64 cols = (__mmask64)((1u << nr) - 1);
  __m512i q[4];
#pragma GCC unroll 4
  for (size_t r = 0; r < 4; ++r)
    q[r] = axle_qu8_round16(acc[r], _mm512_set1_ps(i + r < mr ? scale[i + r] : 0.0f), skip);
  const __m512i v = axle_qu8_narrow4x16(q[0], q[1], q[2], q[3], zp16, lo8, hi8, skip);
  if (nr == NR) {
    store_rows4(v, mr - i, y + i * ldy, ldy);
    return;
  }
  const uintptr_t row = (uintptr_t)(y + i * ldy);
#pragma GCC unroll 4
  for (size_t r = 0; r < 4; ++r)
    if (i + r < mr)
      _mm512_mask_storeu_epi8((void*)(row + (uintptr_t)(r * ldy - 16 * r)), cols << (16 * r), v);
}

/* The tile's first mr rows (of R, a constant), four at a time. */
AXLE_AVX512_INLINE void store_rows(const unsigned skip, const size_t R, const __m512i acc[MR],
                                   size_t mr, size_t nr, const float* scale,
                                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
#pragma GCC unroll 3
  for (size_t i = 0; i < R; i += 4) {
    if (i >= mr) break;
    store4(skip, acc + i, i, mr, nr, scale, rq, y, ldy);
  }
}

/* Columns 16..16 + e of the tile's first mr rows: x[t] holds column t's
 * sums with row i in lane i (the terms not yet added), requantised as
 * four rows of axle_qu8_narrow4x16 (the same steps, so the same bits) and
 * stored a byte at a time. */
AXLE_AVX512_INLINE void store_extra(const unsigned skip, const __m512i x[4], size_t e, size_t mr,
                                    const int32_t* terms, const float* scale,
                                    const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  const __mmask16 rows = (__mmask16)((1u << mr) - 1);
  const __m512i vt = _mm512_maskz_loadu_epi32(rows, terms);
  const __m512 vs = _mm512_maskz_loadu_ps(rows, scale);
  __m512i q[4];
#pragma GCC unroll 4
  for (size_t t = 0; t < 4; ++t) q[t] = axle_qu8_round16(_mm512_add_epi32(x[t], vt), vs, skip);
  uint8_t bytes[64];
  _mm512_storeu_si512(
      bytes,
      axle_qu8_narrow4x16(q[0], q[1], q[2], q[3], _mm512_set1_epi16((short)rq->zero_point),
                          _mm512_set1_epi8((char)rq->min), _mm512_set1_epi8((char)rq->max), skip));
  for (size_t i = 0; i < mr; ++i)
    for (size_t t = 0; t < e; ++t) y[i * ldy + NR + t] = bytes[16 * t + i];
}

/* The tile's first R rows (R = 4, 8 or 12, at least mr): a panel's last
 * rows of a layer with 16, 32 or 64 channels (12 + 4, 24 + 8, 60 + 4) had
 * computed all 12 rows, a third of 16 -> 32's work on padding. Rows past
 * mr compute on the panel's zero padding and are never stored; terms and
 * scale are not read for them. The loops over rows are unrolled so the
 * accumulators stay in registers. With E (0, 1 or 4) the tile also takes
 * the first e <= E columns of a second strip b2 (nr is then 16): per K
 * quad the panel's 12 weight quads are one vector operand against each
 * extra column's quad, broadcast (lane i: row i), so a map whose last
 * strip is that narrow (7x7: 49 = 3 x 16 + 1, 14x14: 196 = 12 x 16 + 4)
 * streams its weights once for both strips instead of again for a tile
 * or a column of its own. */
AXLE_AVX512_INLINE void tile_c4(const size_t R, const size_t E, size_t mr, size_t nr, size_t e,
                                size_t kq, const int8_t* a, const uint8_t* b, const uint8_t* b2,
                                const int32_t* terms, const float* scale,
                                const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  __m512i acc[MR], x[4];
#pragma GCC unroll 12
  for (size_t i = 0; i < R; ++i) acc[i] = _mm512_set1_epi32(i < mr ? terms[i] : 0);
#pragma GCC unroll 4
  for (size_t t = 0; t < 4; ++t) x[t] = _mm512_setzero_si512();
  for (size_t p = 0; p < kq; ++p, a += MR * 4, b += NR * 4, b2 += NR * 4) {
    const __m512i bv = _mm512_loadu_si512(b);
#pragma GCC unroll 12
    for (size_t i = 0; i < R; ++i) {
      int32_t w;
      memcpy(&w, a + 4 * i, sizeof w);
      acc[i] = _mm512_dpbusd_epi32(acc[i], bv, _mm512_set1_epi32(w));
    }
    if (E) {
      const __m512i wv = _mm512_maskz_loadu_epi32(0x0fff, a);
#pragma GCC unroll 4
      for (size_t t = 0; t < E; ++t) {
        int32_t q;
        memcpy(&q, b2 + 4 * t, sizeof q);
        x[t] = _mm512_dpbusd_epi32(x[t], _mm512_set1_epi32(q), wv);
      }
    }
  }
  /* One switch a tile, the rows' loop inside each road. */
#define AXLE_STORE_ROWS(skip)                                     \
  do {                                                            \
    store_rows(skip, R, acc, mr, nr, scale, rq, y, ldy);          \
    if (E) store_extra(skip, x, e, mr, terms, scale, rq, y, ldy); \
  } while (0)
  AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_STORE_ROWS)
#undef AXLE_STORE_ROWS
}

/* Each row count a function of its own: inlined into one, the 12-row
 * tile's K loop ran 11 % slower (320 -> 1280 at 7x7: 87 -> 97 us). */
#define AXLE_TILE_C4(NAME, R, E)                                                                 \
  AXLE_AVX512 __attribute__((noinline)) static void NAME(                                        \
      size_t mr, size_t nr, size_t e, size_t kq, const int8_t* a, const uint8_t* b,              \
      const uint8_t* b2, const int32_t* terms, const float* scale, const axle_qu8_requant_t* rq, \
      uint8_t* y, size_t ldy) {                                                                  \
    tile_c4(R, E, mr, nr, e, kq, a, b, b2, terms, scale, rq, y, ldy);                            \
  }
AXLE_TILE_C4(tile_c4_4, 4, 0)
AXLE_TILE_C4(tile_c4_8, 8, 0)
AXLE_TILE_C4(tile_c4_12, MR, 0)
AXLE_TILE_C4(tile_c4_12e1, MR, 1)
AXLE_TILE_C4(tile_c4_12e4, MR, 4)
#undef AXLE_TILE_C4

/* count full panels (12 rows) over one strip, back to back: the block's
 * common case in one loop, where a call per tile through the driver cost
 * ~1 % of int8 MobileNetV2 (alone, Zen 4: 16 -> 96 at 56x56 41 -> 39 us,
 * 32 -> 192 at 28x28 28.9 -> 27.9). */
AXLE_AVX512 __attribute__((noinline)) static void panels_c4_12(
    size_t count, size_t nr, size_t kq, const int8_t* a, const uint8_t* b, const int32_t* terms,
    const float* scale, const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  for (size_t c = 0; c < count; ++c)
    tile_c4(MR, 0, MR, nr, 0, kq, a + c * kq * MR * 4, b, b, terms + c * MR, scale + c * MR, rq,
            y + c * MR * ldy, ldy);
}

AXLE_AVX512 void axle_qu8_gemm_12x16c4__avx512(size_t m, size_t n, size_t kq, const int8_t* a,
                                               const uint8_t* b, const int32_t* terms,
                                               const float* scale, const axle_qu8_requant_t* rq,
                                               uint8_t* y, size_t ldy) {
  const size_t full = m / MR, i0 = full * MR, mr = m - i0;
  const int8_t* ap = a + i0 * kq * 4;
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kq * NR * 4) {
    const size_t nr = n - j0 < NR ? n - j0 : NR;
    if (full) panels_c4_12(full, nr, kq, a, b, terms, scale, rq, y + j0, ldy);
    uint8_t* yt = y + i0 * ldy + j0;
    if (mr > 8)
      tile_c4_12(mr, nr, 0, kq, ap, b, b, terms + i0, scale + i0, rq, yt, ldy);
    else if (mr > 4)
      tile_c4_8(mr, nr, 0, kq, ap, b, b, terms + i0, scale + i0, rq, yt, ldy);
    else if (mr > 0)
      tile_c4_4(mr, nr, 0, kq, ap, b, b, terms + i0, scale + i0, rq, yt, ldy);
  }
}

AXLE_AVX512 void axle_qu8_gemm_12x16e4c4__avx512(size_t mr, size_t e, size_t kq, const int8_t* a,
                                                 const uint8_t* b, const uint8_t* b2,
                                                 const int32_t* terms, const float* scale,
                                                 const axle_qu8_requant_t* rq, uint8_t* y,
                                                 size_t ldy) {
  if (e > 1)
    tile_c4_12e4(mr, NR, e, kq, a, b, b2, terms, scale, rq, y, ldy);
  else
    tile_c4_12e1(mr, NR, e, kq, a, b, b2, terms, scale, rq, y, ldy);
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
    const __m512i xv = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(b + p * 4)));
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
        sum[i] += (uint32_t)(a[(p * MR + i) * 4 + t] * (int32_t)b[p * 4 + t]);
  for (size_t i = 0; i < mr; ++i) y[i * ldy] = axle_qu8_requant((int32_t)sum[i], scale[i], rq);
}
