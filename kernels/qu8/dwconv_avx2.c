/* Depthwise 3x3 quantized convolution of one plane with AVX2, stride 1 or 2.
 *
 * The plane is first copied into per-worker scratch padded with
 * x_zero_point (the packed term cancels it), so every tap load is a plain
 * unaligned load with no edge cases; u8 x s8 pairs cannot saturate
 * vpmaddwd.
 *
 * Stride 1 widens the copy to int16, which lets vpmaddwd take its (x, x')
 * pairs straight from memory: read as int32 lanes, 16 int16 starting at
 * column c are the pairs (c + 2i, c + 2i + 1), i.e. taps kx = 0 and 1 of
 * the outputs whose windows start at those even offsets, against the
 * broadcast weights (w0, w1); the load at c + 2 gives tap kx = 2 against
 * (w2, 0), and loads at c + 1 and c + 3 do the same for the odd offsets.
 * The even and odd results are interleaved when narrowing. Rows at least
 * 16 wide go 16 outputs a group, the last group of a row ending at its end
 * (overlapping the one before), stored straight into the output plane.
 * Narrower planes, rows ow + 2 wide padded, are walked as one long row:
 * output (oy, ox) at flat position oy * (ow + 2) + ox reads its taps at
 * that position plus ky * (ow + 2) + kx, so groups of 16 run across row
 * ends and only the two padding columns per row are wasted (a 7x7 map
 * fills 49 of 63 lanes instead of 7 of 16 per row); the flat result is
 * then compacted. That walk had served every width, but compacting cost
 * more than the overlapping groups waste (alone, Zen 4 at AVX2: 144
 * planes 56x56 141 -> 132 us, 192 @28 55.9 -> 50.7, 32 @112 117 -> 103).
 *
 * Stride 2 widens the copy too: a load at column 2 c holds the pairs
 * (2 c + 2 i, 2 c + 2 i + 1), taps kx = 0 and 1 of outputs c + i, and the
 * load at 2 c + 2 their tap kx = 2, so 16 outputs take the same 12
 * vpmaddwd as at stride 1 and come out in order. Kept u8, the copy had to
 * be split into even and odd bytes per 16 outputs (two loads, three masks
 * or shifts per kernel row, ten unpacks): alone, Zen 4 at AVX2, 96
 * planes 112x112 -> 56x56 183 -> 135 us, 56x56 -> 28x28 52.2 -> 36.7,
 * 144 planes 56x56 -> 28x28 78.3 -> 56.1 (the smaller maps take
 * dwconv16_avx2.c). */
#include "dwconv_avx2.h"

int axle_qu8_dwconv_3x3__avx2_supports(const axle_f32_conv_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->kernel[1] == 3 &&
         p->kernel[2] == 3 && p->dilation[1] == 1 && p->dilation[2] == 1 &&
         p->stride[1] == p->stride[2] && (p->stride[1] == 1 || p->stride[1] == 2);
}

size_t axle_qu8_dwconv_tmp_size(const axle_f32_conv_params_t* p) {
  if (!axle_qu8_dwconv_3x3__avx2_supports(p)) return 0;
  const dw_layout_t l = axle_qu8_dw_layout(p);
  return (size_t)(l.plane_bytes + l.flat_groups * 16 + 16);
}

/* Stride 1's flat result (output rows row_len apart, after the plane) to
 * the output plane's rows. */
AXLE_AVX2_INLINE void unflatten(const uint8_t* flat, const dw_layout_t* l, int64_t oh, int64_t ow,
                                uint8_t* y_plane) {
  const uint8_t* y_end = y_plane + oh * ow;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const uint8_t* src = flat + oy * l->row_len;
    for (int64_t j = 0; j < ow; j += 16)
      axle_qu8_dw_store(16, _mm_loadu_si128((const __m128i*)(src + j)), y_plane + oy * ow + j,
                        y_end);
  }
}

AXLE_AVX2_INLINE __m256i load16(const int16_t* p) { return _mm256_loadu_si256((const __m256i*)p); }

/* Weights as pairs: wa[ky] = (w[ky][0], w[ky][1]), wb[ky] = (w[ky][2], 0). */
typedef struct dw_weights_t {
  __m256i wa[3], wb[3];
} dw_weights_t;

/* The 8 outputs whose windows start at offsets 0, 2, ..., 14 from x
 * (int16 plane): at stride 1 the even ones of a group, at stride 2 eight
 * consecutive ones. */
AXLE_AVX2_INLINE __m256i even8(const int16_t* x, int64_t row_len, const dw_weights_t* w,
                               __m256i acc) {
  for (int ky = 0; ky < 3; ++ky) {
    const int16_t* r = x + ky * row_len;
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(load16(r), w->wa[ky]));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(load16(r + 2), w->wb[ky]));
  }
  return acc;
}

/* Stride 1: the 16 outputs whose windows start at offsets 0..15 from x
 * (int16 plane), requantised without the steps skip (a constant at each
 * call) leaves out. */
AXLE_AVX2_INLINE __m128i outputs16_s1(const unsigned skip, const int16_t* x, int64_t row_len,
                                      const dw_weights_t* dw, __m256i vt, __m256 vs,
                                      const axle_qu8_rq_regs_t* regs) {
  /* Even outputs in e, odd in o; after packs_epi32 each 128-bit lane holds
   * 4 even then 4 odd int16, which this shuffle interleaves. (The rest is
   * axle_qu8_narrow16's; feeding it would take two unpacks of e and o in
   * place of the one shuffle.) */
  const __m256i interleave = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                              0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  const __m256i e = axle_qu8_scale8(even8(x, row_len, dw, vt), vs, skip);
  const __m256i o = axle_qu8_scale8(even8(x + 1, row_len, dw, vt), vs, skip);
  __m256i s16 = _mm256_shuffle_epi8(_mm256_packs_epi32(e, o), interleave);
  if (!(skip & AXLE_QU8_SKIP_ZERO_POINT)) s16 = _mm256_adds_epi16(s16, regs->zero_point);
  const __m256i u8 = _mm256_permute4x64_epi64(_mm256_packus_epi16(s16, s16), 0x08);
  const __m128i v = _mm256_castsi256_si128(u8);
  if (skip & AXLE_QU8_SKIP_CLAMP) return v;
  return _mm_min_epu8(_mm_max_epu8(v, _mm256_castsi256_si128(regs->lo)),
                      _mm256_castsi256_si128(regs->hi));
}

/* Stride 1, rows at least 16 wide: each output row, 16 outputs a group,
 * the last group ending at the row's end (overlapping the one before),
 * stored straight into the output plane. */
AXLE_AVX2_INLINE void rows_s1(const unsigned skip, const int16_t* plane, const dw_layout_t* l,
                              int64_t oh, int64_t ow, const dw_weights_t* dw, __m256i vt, __m256 vs,
                              const axle_qu8_rq_regs_t* regs, uint8_t* y_plane) {
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int16_t* row = plane + oy * l->row_len;
    uint8_t* y = y_plane + oy * ow;
    for (int64_t j = 0;; j += 16) {
      if (j > ow - 16) j = ow - 16;
      _mm_storeu_si128((__m128i*)(y + j),
                       outputs16_s1(skip, row + j, l->row_len, dw, vt, vs, regs));
      if (j == ow - 16) break;
    }
  }
}

/* Stride 1, narrower rows: the plane walked as one long row (see the top
 * of the file), 16 outputs a group, into flat. */
AXLE_AVX2_INLINE void flat_groups(const unsigned skip, const int16_t* plane, const dw_layout_t* l,
                                  const dw_weights_t* dw, __m256i vt, __m256 vs,
                                  const axle_qu8_rq_regs_t* regs, uint8_t* flat) {
  for (int64_t g = 0; g < l->flat_groups; ++g)
    _mm_storeu_si128((__m128i*)(flat + g * 16),
                     outputs16_s1(skip, plane + g * 16, l->row_len, dw, vt, vs, regs));
}

/* Stride 2: each output row's outputs, 16 a group from the padded int16
 * plane, without the steps skip (a constant at each call) leaves out. A
 * group's stores may run past its row (into the next, written later) but
 * not past the plane. */
AXLE_AVX2_INLINE void rows_s2(const unsigned skip, const int16_t* plane, const dw_layout_t* l,
                              int64_t oh, int64_t ow, const dw_weights_t* dw, __m256i vt, __m256 vs,
                              const axle_qu8_rq_regs_t* regs, uint8_t* y_plane) {
  const uint8_t* y_end = y_plane + oh * ow;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int16_t* row = plane + 2 * oy * l->row_len;
    for (int64_t j = 0; j < ow; j += 16) {
      const __m256i e0 = axle_qu8_scale8(even8(row + 2 * j, l->row_len, dw, vt), vs, skip);
      const __m256i e1 = axle_qu8_scale8(even8(row + 2 * j + 16, l->row_len, dw, vt), vs, skip);
      /* Narrowed as a pair of rows whose second is a copy of the first:
       * axle_qu8_narrow16_ordered's two cross-lane permutes made the plane
       * 4-6 % slower (96 @56 36.7 -> 38.0-39.1 us). */
      const __m256i v = axle_qu8_narrow2x16(e0, e1, e0, e1, regs, skip);
      axle_qu8_dw_store(16, _mm256_castsi256_si128(v), y_plane + oy * ow + j, y_end);
    }
  }
}

AXLE_AVX2 void axle_qu8_dwconv_plane_3x3__avx2(const axle_f32_conv_params_t* p,
                                               const uint8_t* x_plane, int32_t x_zero_point,
                                               const int16_t* w, int32_t term, float scale,
                                               const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                               void* tmp) {
  const int64_t s = p->stride[2];
  const int64_t oh = p->out[1], ow = p->out[2];
  const dw_layout_t l = axle_qu8_dw_layout(p);
  axle_qu8_dw_pad_plane(p, x_plane, (uint8_t)x_zero_point, &l, 1, tmp);
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256i vt = _mm256_set1_epi32(term);
  dw_weights_t dw;
  for (int ky = 0; ky < 3; ++ky) {
    dw.wa[ky] = _mm256_set1_epi32(
        (int32_t)(((uint32_t)(uint16_t)w[3 * ky + 1] << 16) | (uint16_t)w[3 * ky]));
    dw.wb[ky] = _mm256_set1_epi32((int32_t)(uint16_t)w[3 * ky + 2]);
  }
  if (s == 2) {
#define AXLE_ROWS_S2(skip) rows_s2(skip, tmp, &l, oh, ow, &dw, vt, vs, &regs, y_plane)
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_ROWS_S2)
#undef AXLE_ROWS_S2
    return;
  }
  if (ow >= 16) {
#define AXLE_ROWS_S1(skip) rows_s1(skip, tmp, &l, oh, ow, &dw, vt, vs, &regs, y_plane)
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_ROWS_S1)
#undef AXLE_ROWS_S1
    return;
  }
  uint8_t* flat = (uint8_t*)tmp + l.plane_bytes;
#define AXLE_FLAT(skip) flat_groups(skip, tmp, &l, &dw, vt, vs, &regs, flat)
  AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_FLAT)
#undef AXLE_FLAT
  unflatten(flat, &l, oh, ow, y_plane);
}
