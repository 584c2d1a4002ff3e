/* Depthwise 3x3 quantized convolution with AVX-512 VNNI, one output plane
 * at a time, 16 outputs of a row per zmm (one int32 lane each).
 *
 * vpdpbusd multiplies four u8 by four s8 and adds them to an int32 lane
 * without saturation, so one instruction does a kernel row of an output
 * when the lane holds that output's three input bytes (a fourth one meets
 * a zero weight): no widening to int16 and a third of the AVX2 variant's
 * multiply-adds. Those byte triples overlap (stride 1: bytes x..x+2 for
 * output x), so they are gathered from one load of the row with vpermd
 * (each 128-bit lane gets the 16 bytes starting at its first output's
 * window) and vpshufb (the triples inside the lane); vpermb would do it in
 * one step but needs VBMI, which AXLE_ISA_AVX512 does not promise.
 *
 * Padding costs no copy of the plane: a row is read with a masked load
 * whose masked-off bytes (before the row, after it) take x_zero_point, and
 * a row above or below the input is the zero point throughout, as the
 * contract's padded taps are. Masked-off bytes are not accessed, so loads
 * may start before the plane or run past its end. The gathered triples of
 * an input row serve every output row that reads it, so a column of groups
 * is walked top to bottom keeping the last rows' triples in registers:
 * per 16 outputs one load, two shuffles and three vpdpbusd at stride 1.
 * Planes 8 or fewer outputs wide put two output rows in one zmm.
 *
 * The requantisation is the AVX2 one (requant_avx2.h says why it gives the
 * scalar bits), on four rows' zmm at once; the two-row form adds the zero
 * point and clamps in int32, where nothing saturates, and narrows the
 * clamped lanes by truncation. */
#include <stdint.h>

#include "axle_kernels_qu8.h"
#include "requant_avx512.h"

/* Input bytes a group of 16 outputs reads from a row: 15 * stride + 3. */
static int64_t window_bytes(int64_t stride) { return 15 * stride + 3; }

/* The byte triples of 16 outputs in int32 lanes (fourth byte 0) from the
 * row bytes in v, the first output's window starting at byte 0. */
AXLE_AVX512_INLINE __m512i triples(__m512i v, __m512i dwords, __m512i bytes) {
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dwords, v), bytes);
}

/* Where a column group reads its rows: the plane, the group's first
 * window column ix0 and the mask of its bytes inside a row, and what the
 * byte triples are gathered with. */
typedef struct dw_rows_t {
  const uint8_t* x_plane;
  int64_t ih, iw, ix0;
  __mmask64 mask;
  __m512i zp, zp_triples, dwords, bytes;
} dw_rows_t;

/* The triples of input row iy. */
AXLE_AVX512_INLINE __m512i row_triples(const dw_rows_t* r, int64_t iy) {
  if (iy < 0 || iy >= r->ih) return r->zp_triples;
  /* Integer arithmetic: the address may lie before the plane, where only
   * masked-off bytes are. */
  const void* at = (const void*)((uintptr_t)r->x_plane + (uintptr_t)(iy * r->iw + r->ix0));
  return triples(_mm512_mask_loadu_epi8(r->zp, r->mask, at), r->dwords, r->bytes);
}

/* Bits [lo, hi) of a 64-bit mask, empty when hi <= lo (0 <= lo, hi < 64). */
static __mmask64 bit_range(int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  return (((uint64_t)1 << hi) - 1) & ~(((uint64_t)1 << lo) - 1);
}

/* Points r at the column group whose first window starts at column ix0;
 * span: the bytes a group reads from a row. */
static void set_group(dw_rows_t* r, int64_t ix0, int64_t span) {
  r->ix0 = ix0;
  r->mask = bit_range(ix0 < 0 ? -ix0 : 0, r->iw - ix0 < span ? r->iw - ix0 : span);
}

/* Narrow planes (7x7) would fill at most half the lanes: two output rows
 * share a zmm, the first in lanes 0-7 (the triples' low 256 bits), the
 * second in lanes 8-15. t[k] holds the triples of input row iy + k; the
 * pair's kernel row ky reads t[ky] and t[ky + s]. s is a constant here, so
 * t stays in registers. */
AXLE_AVX512_INLINE void narrow_plane(const dw_rows_t* rows, const int64_t s, int64_t y0, int64_t oh,
                                     int64_t ow, const __m512i wq[3], __m512i vt, __m512 vs,
                                     const axle_qu8_requant_t* rq, uint8_t* y_plane) {
  const __m512i zp = _mm512_set1_epi32(rq->zero_point);
  const __m512i lo = _mm512_set1_epi32(rq->min), hi = _mm512_set1_epi32(rq->max);
  const __mmask16 first = (__mmask16)((1u << ow) - 1), second = (__mmask16)(first << 8);
  __m512i t[5];
  for (int64_t k = 0; k < 3 - s; ++k) t[k] = row_triples(rows, y0 + k);
  for (int64_t oy = 0; oy < oh; oy += 2) {
    const int64_t iy = y0 + oy * s;
    for (int64_t k = 3 - s; k < 3 + s; ++k) t[k] = row_triples(rows, iy + k);
    __m512i acc = vt;
    for (int ky = 0; ky < 3; ++ky)
      acc = _mm512_dpbusd_epi32(acc, _mm512_shuffle_i64x2(t[ky], t[ky + s], 0x44), wq[ky]);
    const __m512i q = _mm512_add_epi32(axle_qu8_round16(acc, vs, 0), zp);
    const __m128i v = _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi));
    uint8_t* y = y_plane + oy * ow;
    _mm_mask_storeu_epi8(y, first, v);
    /* Lanes 8.. land at y + ow: the store starts 8 - ow bytes before it,
     * inside the first row or (masked off) before it. */
    if (oy + 1 < oh) _mm_mask_storeu_epi8((void*)((uintptr_t)y + (uintptr_t)(ow - 8)), second, v);
    /* The next pair starts 2 * s rows down: keep the rows it shares. */
    for (int64_t k = 0; k < 3 - s; ++k) t[k] = t[k + 2 * s];
  }
}

/* Planes wider than 8: columns of 16-output groups, each walked top to
 * bottom in blocks of four output rows, which share their input rows'
 * triples (t[k]: input row iy + k) and one narrowing. A last block's rows
 * past the plane compute on whatever rows they read (the zero point past
 * the input) and are not stored. s and skip (AXLE_QU8_SKIP_SWITCH) are
 * constants here, so t stays in registers and the skipped steps are
 * compiled out. */
AXLE_AVX512_INLINE void wide_plane(dw_rows_t* rows, const int64_t s, const unsigned skip,
                                   int64_t pad_left, int64_t span, int64_t y0, int64_t oh,
                                   int64_t ow, const __m512i wq[3], __m512i vt, __m512 vs,
                                   const axle_qu8_requant_t* rq, uint8_t* y_plane) {
  const __m512i zp16 = _mm512_set1_epi16((short)rq->zero_point);
  const __m512i lo8 = _mm512_set1_epi8((char)rq->min), hi8 = _mm512_set1_epi8((char)rq->max);
  for (int64_t ox = 0; ox < ow; ox += 16) {
    set_group(rows, ox * s - pad_left, span);
    const __mmask16 out_mask = (__mmask16)(ow - ox < 16 ? ((1u << (ow - ox)) - 1) : 0xffffu);
    /* t[0], t[1]: the first rows of the next block's first window (t[1]
     * only for stride 1, whose windows overlap by two rows). */
    __m512i t[9];
    t[0] = row_triples(rows, y0);
    if (s == 1) t[1] = row_triples(rows, y0 + 1);
    for (int64_t oy = 0; oy < oh; oy += 4) {
      const int64_t iy = y0 + oy * s;
      for (int64_t k = 3 - s; k < 3 + 3 * s; ++k) t[k] = row_triples(rows, iy + k);
      __m512i q[4];
      for (int r = 0; r < 4; ++r) {
        __m512i acc = _mm512_dpbusd_epi32(vt, t[r * s], wq[0]);
        acc = _mm512_dpbusd_epi32(acc, t[r * s + 1], wq[1]);
        q[r] = axle_qu8_round16(_mm512_dpbusd_epi32(acc, t[r * s + 2], wq[2]), vs, skip);
      }
      const __m512i v = axle_qu8_narrow4x16(q[0], q[1], q[2], q[3], zp16, lo8, hi8, skip);
      /* Lane r to row oy + r: a full-width masked store placed 16 * r
       * bytes early (masked-off bytes are not accessed). */
      const uintptr_t y = (uintptr_t)(y_plane + oy * ow + ox);
      for (int r = 0; r < 4 && oy + r < oh; ++r)
        _mm512_mask_storeu_epi8((void*)(y + (uintptr_t)(r * ow - 16 * r)),
                                (__mmask64)out_mask << (16 * r), v);
      for (int64_t k = 0; k < 3 - s; ++k) t[k] = t[k + 4 * s];
    }
  }
}

AXLE_AVX512 void axle_qu8_dwconv_plane_3x3__avx512(const axle_f32_conv_params_t* p,
                                                   const uint8_t* x_plane, int32_t x_zero_point,
                                                   const int16_t* w, int32_t term, float scale,
                                                   const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                                   void* tmp) {
  (void)tmp;
  const int64_t s = p->stride[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const __m512i dwords = s == 1 ? _mm512_setr_epi32(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6)
                                : _mm512_setr_epi32(0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9);
  const __m512i bytes = _mm512_broadcast_i32x4(axle_qu8_dw_triple_lanes(s));
  const __m512i zp = _mm512_set1_epi8((char)x_zero_point);
  dw_rows_t rows = {x_plane, ih, iw, 0, 0, zp, triples(zp, dwords, bytes), dwords, bytes};
  __m512i wq[3];
  for (int ky = 0; ky < 3; ++ky) wq[ky] = _mm512_set1_epi32(axle_qu8_dw_row_quad(w + 3 * ky));
  const __m512i vt = _mm512_set1_epi32(term);
  const __m512 vs = _mm512_set1_ps(scale);
  const int64_t span = window_bytes(s), y0 = -p->pad[1];
  if (ow <= 8) {
    set_group(&rows, -p->pad[2], span);
    if (s == 1)
      narrow_plane(&rows, 1, y0, oh, ow, wq, vt, vs, rq, y_plane);
    else
      narrow_plane(&rows, 2, y0, oh, ow, wq, vt, vs, rq, y_plane);
    return;
  }
  /* The narrow planes above take every step: 7x7 maps, too few outputs to
   * pay for more copies of their loops. */
  const int64_t pad_left = p->pad[2];
#define AXLE_WIDE(stride, skip) \
  wide_plane(&rows, stride, skip, pad_left, span, y0, oh, ow, wq, vt, vs, rq, y_plane)
#define AXLE_WIDE1(skip) AXLE_WIDE(1, skip)
#define AXLE_WIDE2(skip) AXLE_WIDE(2, skip)
  if (s == 1) {
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_WIDE1)
  } else {
    AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_WIDE2)
  }
#undef AXLE_WIDE2
#undef AXLE_WIDE1
#undef AXLE_WIDE
}
