/* The AVX2 GEMM pieces of the quantized convolution.
 *
 * Exactness without VNNI: vpmaddwd multiplies int16 pairs into int32 sums,
 * and with one factor a zero-extended u8 (0..255) and the other a
 * sign-extended s8 (-128..127) a pair sums to at most 65280 in magnitude,
 * far from the one case where it saturates (-32768 * -32768 twice). Both
 * operands are therefore widened to int16 pairs: the weights once at pack
 * time, the input strip once per strip (amortised over every weight panel).
 *
 * The 6 x 16 tile lives in 12 ymm accumulators of 8 int32; per K pair two
 * strip loads and six 32-bit weight broadcasts feed 12 vpmaddwd (192
 * multiply-adds, twice the fp32 kernel's 12 FMAs); with the weight and a
 * product temporary that is all 16 registers, which GCC manages only with
 * named accumulators (an array gets spilled). Strips narrower than 9
 * pixels (the tail of a 7x7 map) run half the tile, panels of 4 rows or
 * fewer (the last of 16 or 32 channels) a shorter loop. */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

enum { MR = AXLE_QU8_GEMM_MR, NR = AXLE_QU8_GEMM_NR };

AXLE_AVX2 void axle_qu8_gemm_pack_b_16__avx2(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                             int16_t* packed) {
  if (cols < NR) {
    axle_qu8_gemm_pack_b_16__scalar(kc, cols, x, rs, packed);
    return;
  }
  for (size_t k = 0; k < kc; k += 2) {
    const __m128i r0 = _mm_loadu_si128((const __m128i*)(x + k * rs));
    const __m128i r1 =
        k + 1 < kc ? _mm_loadu_si128((const __m128i*)(x + (k + 1) * rs)) : _mm_setzero_si128();
    __m256i* d = (__m256i*)(packed + k / 2 * NR * 2);
    _mm256_storeu_si256(d, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)));
    _mm256_storeu_si256(d + 1, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)));
  }
}

/* The quad layout for the VNNI micro-kernel: only byte shuffles, so AVX2
 * (SSE2, in fact) is enough. */
AXLE_AVX2 void axle_qu8_gemm_pack_b_16c4__avx2(size_t kc, size_t cols, const uint8_t* x,
                                               size_t rs, uint8_t* packed) {
  if (cols < NR) {
    axle_qu8_gemm_pack_b_16c4__scalar(kc, cols, x, rs, packed);
    return;
  }
  for (size_t k = 0; k < kc; k += 4, packed += NR * 4) {
    __m128i r[4];
    for (size_t t = 0; t < 4; ++t)
      r[t] = k + t < kc ? _mm_loadu_si128((const __m128i*)(x + (k + t) * rs))
                        : _mm_setzero_si128();
    const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
    const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
    __m128i* d = (__m128i*)packed;
    _mm_storeu_si128(d, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
}

/* The pair (a[2 * i], a[2 * i + 1]) in every 32-bit lane. */
AXLE_AVX2_INLINE __m256i pair(const int16_t* a, size_t i) {
  int32_t v;
  memcpy(&v, a + 2 * i, sizeof v);
  return _mm256_set1_epi32(v);
}

/* Two rows of 16 (a0, a1: the first's columns 0..7 and 8..15; b0, b1: the
 * second's) requantised with scales sa and sb, without the steps skip (a
 * constant at each call) leaves out; the first row in the low 128 bits. */
AXLE_AVX2_INLINE __m256i requant_rows2(const unsigned skip, __m256i a0, __m256i a1, __m256i b0,
                                       __m256i b1, __m256 sa, __m256 sb,
                                       const axle_qu8_rq_regs_t* regs) {
  return axle_qu8_narrow2x16(axle_qu8_scale8(a0, sa, skip), axle_qu8_scale8(a1, sa, skip),
                             axle_qu8_scale8(b0, sb, skip), axle_qu8_scale8(b1, sb, skip), regs,
                             skip);
}

/* The tile's first mr rows and nr columns, requantised and stored. */
AXLE_AVX2_INLINE void store6x16(const unsigned skip, __m256i acc[MR][2], size_t mr, size_t nr,
                                const float* scale, const axle_qu8_requant_t* rq, uint8_t* y,
                                size_t ldy) {
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
  for (size_t i = 0; i < mr; i += 2) {
    const __m256i v = requant_rows2(skip, acc[i][0], acc[i][1], acc[i + 1][0], acc[i + 1][1],
                                    _mm256_set1_ps(scale[i]),
                                    _mm256_set1_ps(i + 1 < mr ? scale[i + 1] : 0.0f), &regs);
    axle_qu8_store16(_mm256_castsi256_si128(v), nr, y + i * ldy);
    if (i + 1 < mr) axle_qu8_store16(_mm256_extracti128_si256(v, 1), nr, y + (i + 1) * ldy);
  }
}

/* Two full rows (as requant_rows2, scales scale[0] and scale[1]) stored. */
AXLE_AVX2_INLINE void store_rows2(const unsigned skip, __m256i a0, __m256i a1, __m256i b0,
                                  __m256i b1, const float* scale, const axle_qu8_rq_regs_t* regs,
                                  uint8_t* y, size_t ldy) {
  const __m256i v = requant_rows2(skip, a0, a1, b0, b1, _mm256_broadcast_ss(scale),
                                  _mm256_broadcast_ss(scale + 1), regs);
  _mm_storeu_si128((__m128i*)y, _mm256_castsi256_si128(v));
  _mm_storeu_si128((__m128i*)(y + ldy), _mm256_extracti128_si256(v, 1));
}

/* A tile of mr <= R rows (R = 2 or 4, a constant at each call) and more
 * than 8 columns: the last panel of 16 or 32 channels (4 and 2 rows),
 * whose six-row loop spent a third or two thirds of its vpmaddwd on the
 * panel's zero padding (alone, Zen 4 at AVX2: the stem, 3 -> 32 at
 * 224x224 stride 2, 220 -> 206 us; 32 -> 16 at 112x112 110 -> 105;
 * 144 -> 32 at 28x28 48.2 -> 43.9). */
AXLE_AVX2_INLINE void tile_short(const unsigned skip, const size_t R, size_t mr, size_t nr,
                                 size_t kp, const int16_t* a, const int16_t* b,
                                 const int32_t* terms, const float* scale,
                                 const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  __m256i acc[MR][2];
  for (size_t i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_set1_epi32(i < mr ? terms[i] : 0);
  for (size_t p = 0; p < kp; ++p, a += MR * 2, b += NR * 2) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i*)b);
    const __m256i b1 = _mm256_loadu_si256((const __m256i*)(b + NR));
    for (size_t i = 0; i < R; ++i) {
      const __m256i ai = pair(a, i);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(b0, ai));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(b1, ai));
    }
  }
  store6x16(skip, acc, mr, nr, scale, rq, y, ldy);
}

/* The tile on named accumulators (see the top of the file): mr > 4 rows,
 * nr > 8 columns. Rows past mr compute on the panel's zero padding and are
 * never stored; terms and scale are not read for them (they may end at row
 * mr). A full tile (the common case) is requantised straight from the
 * accumulators: through the acc array, which GCC keeps on the stack, the
 * epilogue and the call around it took ~43 cycles a tile against the K
 * loop's ~7.7 per pair (K = 16: 41 % of the layer; 16 -> 96 at 112x112
 * 376 -> 344 us, 24 -> 144 at 56x56 175 -> 165, 64 -> 96 at 28x28 61.7 ->
 * 59.7, Zen 4 at AVX2). */
AXLE_AVX2_INLINE void tile_named(const unsigned skip, size_t mr, size_t nr, size_t kp,
                                 const int16_t* a, const int16_t* b, const int32_t* terms,
                                 const float* scale, const axle_qu8_requant_t* rq, uint8_t* y,
                                 size_t ldy) {
  /* Row R's two accumulators, named (an array gets spilled), and its step. */
#define AXLE_ROW_INIT(R) \
  __m256i c##R##0 = _mm256_set1_epi32(mr > R ? terms[R] : 0), c##R##1 = c##R##0
#define AXLE_ROW_STEP(R)                                          \
  ai = pair(a, R);                                                \
  c##R##0 = _mm256_add_epi32(c##R##0, _mm256_madd_epi16(b0, ai)); \
  c##R##1 = _mm256_add_epi32(c##R##1, _mm256_madd_epi16(b1, ai))
  AXLE_ROW_INIT(0);
  AXLE_ROW_INIT(1);
  AXLE_ROW_INIT(2);
  AXLE_ROW_INIT(3);
  AXLE_ROW_INIT(4);
  AXLE_ROW_INIT(5);
  for (size_t p = 0; p < kp; ++p, a += MR * 2, b += NR * 2) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i*)b);
    const __m256i b1 = _mm256_loadu_si256((const __m256i*)(b + NR));
    __m256i ai;
    AXLE_ROW_STEP(0);
    AXLE_ROW_STEP(1);
    AXLE_ROW_STEP(2);
    AXLE_ROW_STEP(3);
    AXLE_ROW_STEP(4);
    AXLE_ROW_STEP(5);
  }
#undef AXLE_ROW_STEP
#undef AXLE_ROW_INIT
  if (mr == MR && nr == NR) {
    const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
    store_rows2(skip, c00, c01, c10, c11, scale, &regs, y, ldy);
    store_rows2(skip, c20, c21, c30, c31, scale + 2, &regs, y + 2 * ldy, ldy);
    store_rows2(skip, c40, c41, c50, c51, scale + 4, &regs, y + 4 * ldy, ldy);
    return;
  }
  __m256i acc[MR][2];
  acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;
  acc[2][0] = c20, acc[2][1] = c21, acc[3][0] = c30, acc[3][1] = c31;
  acc[4][0] = c40, acc[4][1] = c41, acc[5][0] = c50, acc[5][1] = c51;
  store6x16(skip, acc, mr, nr, scale, rq, y, ldy);
}

/* A tile short of rows or columns (mr <= MR, nr <= NR), for one value of
 * skip (a constant at each call). Rows past mr compute on the panel's zero
 * padding and are never stored. */
AXLE_AVX2_INLINE void tile_partial(const unsigned skip, size_t mr, size_t nr, size_t kp,
                                   const int16_t* a, const int16_t* b, const int32_t* terms,
                                   const float* scale, const axle_qu8_requant_t* rq, uint8_t* y,
                                   size_t ldy) {
  if (nr > NR / 2) {
    if (mr <= 2)
      tile_short(skip, 2, mr, nr, kp, a, b, terms, scale, rq, y, ldy);
    else if (mr <= 4)
      tile_short(skip, 4, mr, nr, kp, a, b, terms, scale, rq, y, ldy);
    else
      tile_named(skip, mr, nr, kp, a, b, terms, scale, rq, y, ldy);
    return;
  }
  __m256i acc[MR][2];
  for (size_t i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_set1_epi32(i < mr ? terms[i] : 0);
  for (size_t p = 0; p < kp; ++p, a += MR * 2, b += NR * 2) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i*)b);
    for (size_t i = 0; i < MR; ++i)
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(b0, pair(a, i)));
  }
  store6x16(skip, acc, mr, nr, scale, rq, y, ldy);
}

/* Out of line: inlined into the block loop below, the partial tiles'
 * arrays and branches cost the full tiles' loop its registers. */
__attribute__((noinline)) AXLE_AVX2 static void tile_any(size_t mr, size_t nr, size_t kp,
                                                         const int16_t* a, const int16_t* b,
                                                         const int32_t* terms, const float* scale,
                                                         const axle_qu8_requant_t* rq, uint8_t* y,
                                                         size_t ldy){
#define AXLE_TILE(S) tile_partial(S, mr, nr, kp, a, b, terms, scale, rq, y, ldy)
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_TILE)
#undef AXLE_TILE
}

/* The block for one value of skip (a constant at each call): strip by
 * strip, the full tiles inline, the others out of line (tile_any). */
AXLE_AVX2_INLINE
    void block6x16(const unsigned skip, size_t m, size_t n, size_t kp, const int16_t* a,
                   const int16_t* b, const int32_t* terms, const float* scale,
                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kp * NR * 2) {
    const size_t nr = n - j0 < NR ? n - j0 : NR;
    size_t i0 = 0;
    if (nr == NR)
      for (; i0 + MR <= m; i0 += MR)
        tile_named(skip, MR, NR, kp, a + i0 * kp * 2, b, terms + i0, scale + i0, rq,
                   y + i0 * ldy + j0, ldy);
    for (; i0 < m; i0 += MR)
      tile_any(m - i0 < MR ? m - i0 : MR, nr, kp, a + i0 * kp * 2, b, terms + i0, scale + i0, rq,
               y + i0 * ldy + j0, ldy);
  }
}

/* Looping over the tiles here rather than calling once per tile saves the
 * call's prologue, the skip dispatch and the driver's per-tile arithmetic:
 * ~10 cycles a tile (Zen 4 at AVX2, alone: 2 -> 96 at 56x56 34 -> 24.5 us,
 * 16 -> 96 at 56x56 82 -> 72, 24 -> 144 at 56x56 160 -> 146, 32 -> 192 at
 * 28x28 66 -> 61). GCC's tree PRE (12.2, -O2), given the loops, carries
 * values across the tiles and spills the accumulators from the K loop
 * (576 -> 96 at 14x14 128 -> 200 us); it is off for this function. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-pre")))
#endif
AXLE_AVX2 void
axle_qu8_gemm_6x16__avx2(size_t m, size_t n, size_t kp, const int16_t* a, const int16_t* b,
                         const int32_t* terms, const float* scale, const axle_qu8_requant_t* rq,
                         uint8_t* y, size_t ldy){
#define AXLE_BLOCK(S) block6x16(S, m, n, kp, a, b, terms, scale, rq, y, ldy)
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_BLOCK)
#undef AXLE_BLOCK
}

/* One output column: a pointwise layer on one pixel per image (a fully
 * connected layer at batch 1), where the 6 x 16 tile would spend six
 * vpmaddwd per K pair on one useful lane each. Here the weights are the
 * vector operand: a panel holds, per K pair, the six rows' pairs back to
 * back, so four pairs are 24 int32 = 3 ymm, and the column's pairs x0..x3
 * (one load of the dense column) are spread to match: [x0 x0 x0 x0 x0 x0 x1 x1],
 * [x1 x1 x1 x1 x2 x2 x2 x2], [x2 x2 x3 x3 x3 x3 x3 x3]. Element e of the 24
 * belongs to row e % 6; the rows are summed out of the lanes once, after
 * the K loop. Sums wrap modulo 2^32 as vpaddd does, so the order of the
 * additions cannot change a result. nr must be 1. */
AXLE_AVX2 void axle_qu8_gemm_6x1__avx2(size_t mr, size_t nr, size_t kp, const int16_t* a,
                                       const int16_t* b, const int32_t* terms, const float* scale,
                                       const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  (void)nr;
  const __m256i spread0 = _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 1, 1);
  const __m256i spread1 = _mm256_setr_epi32(1, 1, 1, 1, 2, 2, 2, 2);
  const __m256i spread2 = _mm256_setr_epi32(2, 2, 3, 3, 3, 3, 3, 3);
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0;
  size_t p = 0;
  for (; p + 4 <= kp; p += 4) {
    const __m256i xv = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(b + p * 2)));
    const __m256i* w = (const __m256i*)(a + p * MR * 2);
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_loadu_si256(w),
                                                    _mm256_permutevar8x32_epi32(xv, spread0)));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_loadu_si256(w + 1),
                                                    _mm256_permutevar8x32_epi32(xv, spread1)));
    acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_loadu_si256(w + 2),
                                                    _mm256_permutevar8x32_epi32(xv, spread2)));
  }
  uint32_t lanes[24], sum[MR];
  _mm256_storeu_si256((__m256i*)lanes, acc0);
  _mm256_storeu_si256((__m256i*)(lanes + 8), acc1);
  _mm256_storeu_si256((__m256i*)(lanes + 16), acc2);
  for (size_t i = 0; i < MR; ++i) sum[i] = i < mr ? (uint32_t)terms[i] : 0u;
  for (size_t e = 0; e < 24; ++e) sum[e % MR] += lanes[e];
  /* The last K pairs, fewer than four. */
  for (; p < kp; ++p) {
    const int32_t x0 = b[p * 2], x1 = b[p * 2 + 1];
    for (size_t i = 0; i < MR; ++i)
      sum[i] += (uint32_t)(a[(p * MR + i) * 2] * x0 + a[(p * MR + i) * 2 + 1] * x1);
  }
  for (size_t i = 0; i < mr; ++i) y[i * ldy] = axle_qu8_requant((int32_t)sum[i], scale[i], rq);
}

/* One output column on the VNNI quad layout, which the plan picks for one
 * pixel per image at every ISA level: s8 weights stream half the bytes of
 * pre-widened pairs, and a fully connected layer's weights are read once
 * per run, from memory. They are widened as they load (vpmovsxbw), and the
 * column's quad (x0..x3, zero-extended, four times over) multiplies them in
 * vpmaddwd, which keeps a row's (k0, k1) and (k2, k3) sums in adjacent
 * lanes: lane l of accumulator v belongs to row 4 v + l / 2. u8 x s8 pairs
 * cannot saturate (see the top of the file). nr must be 1. */
AXLE_AVX2 void axle_qu8_gemm_12x1c4__avx2(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                          const uint8_t* b, const int32_t* terms,
                                          const float* scale, const axle_qu8_requant_t* rq,
                                          uint8_t* y, size_t ldy) {
  enum { C4_MR = AXLE_QU8_GEMM_C4_MR };
  (void)nr;
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0;
  for (size_t p = 0; p < kq; ++p, a += C4_MR * 4, b += 4) {
    int32_t q;
    memcpy(&q, b, sizeof q);
    const __m256i x = _mm256_cvtepu8_epi16(_mm_set1_epi32(q));
    acc0 = _mm256_add_epi32(
        acc0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)a)), x));
    acc1 = _mm256_add_epi32(
        acc1,
        _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(a + 16))), x));
    acc2 = _mm256_add_epi32(
        acc2,
        _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(a + 32))), x));
  }
  uint32_t lanes[24];
  _mm256_storeu_si256((__m256i*)lanes, acc0);
  _mm256_storeu_si256((__m256i*)(lanes + 8), acc1);
  _mm256_storeu_si256((__m256i*)(lanes + 16), acc2);
  for (size_t i = 0; i < mr; ++i)
    y[i * ldy] = axle_qu8_requant((int32_t)((uint32_t)terms[i] + lanes[2 * i] + lanes[2 * i + 1]),
                                  scale[i], rq);
}
