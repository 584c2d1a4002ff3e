/* Depthwise 3x3 quantized convolution of one plane with AVX-VNNI
 * (AXLE_ISA_AVX2_VNNI), stride 1 or 2: the AVX-512 kernel's byte triples
 * and column walk (dwconv_avx512.c) on 8 outputs per ymm, over the AVX2
 * kernel's padded copy (dwconv_avx2.h), since AVX2 has no masked byte loads
 * to pad with.
 *
 * The plane is copied as u8 for both strides, padded with x_zero_point
 * (the packed term cancels it). For 8 outputs and one input row, each
 * 128-bit lane loads the 16 bytes where its 4 outputs' windows start,
 * vpshufb puts each window's three bytes in an int32 lane (fourth byte 0),
 * and vpdpbusd adds the three products against a kernel row's weights (w0,
 * w1, w2, 0) without saturation. A column of 8 outputs is walked down two
 * output rows at a time, so each input row's triples serve every output
 * row that reads it: per 16 outputs two gathers (stride 1) and six
 * vpdpbusd, against 12 vpmaddwd and 12 vpaddd for the AVX2 kernel. (One
 * 32-byte load and vpermd per gather, as the AVX-512 kernel does it, ran as
 * fast.) The copy and the requantisation cost about as much as the
 * products, so planes run 15-35 % faster than with the AVX2 kernel. */
#include <string.h>

#include "dwconv_avx2.h"

#define AXLE_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#define AXLE_AVXVNNI_INLINE __attribute__((target("avx2,fma,avxvnni"), always_inline)) static inline

/* Where the triples come from: the second 128-bit lane's first window,
 * 4 outputs on (bytes), and the windows' bytes within a lane. */
typedef struct dw_gather_t {
  int64_t lane1;
  __m256i bytes;
} dw_gather_t;

/* The triples of 8 outputs' windows in one padded input row, the first
 * window at x. */
AXLE_AVXVNNI_INLINE __m256i row_triples(const uint8_t* x, const dw_gather_t* g) {
  return _mm256_shuffle_epi8(_mm256_loadu2_m128i((const __m128i*)(x + g->lane1), (const __m128i*)x),
                             g->bytes);
}

/* Columns of 8 outputs, each walked down two output rows at a time, which
 * share their input rows' triples (t[k]: input row s oy + k; the next pair
 * starts 2 s rows down and keeps the rows it shares) and one narrowing. The
 * columns go right to left: a short last column's 8-byte row stores run
 * into the next row's first bytes, which a later column (or, for a plane 8
 * or fewer wide, the next row's own store) writes again; only the plane's
 * end is never crossed. An odd last row reads no row past the copy. s is a
 * constant here, so t stays in registers. */
AXLE_AVXVNNI_INLINE void columns(const int64_t s, const uint8_t* plane, int64_t row_len, int64_t oh,
                                 int64_t ow, const __m256i wq[3], __m256i vt, __m256 vs,
                                 const dw_gather_t* g, const axle_qu8_rq_regs_t* regs,
                                 uint8_t* y_plane) {
  const uint8_t* y_end = y_plane + oh * ow;
  for (int64_t ox = (ow - 1) / 8 * 8; ox >= 0; ox -= 8) {
    const uint8_t* col = plane + ox * s;
    __m256i t[5];
    for (int64_t k = 0; k < 3 - s; ++k) t[k] = row_triples(col + k * row_len, g);
    for (int64_t oy = 0; oy < oh; oy += 2) {
      const int pair = oy + 1 < oh;
      for (int64_t k = 3 - s; k < (pair ? s + 3 : 3); ++k)
        t[k] = row_triples(col + (s * oy + k) * row_len, g);
      __m256i a = vt, b = vt;
      for (int ky = 0; ky < 3; ++ky) {
        a = _mm256_dpbusd_avx_epi32(a, t[ky], wq[ky]);
        if (pair) b = _mm256_dpbusd_avx_epi32(b, t[s + ky], wq[ky]);
      }
      const __m128i v =
          axle_qu8_narrow16_ordered(axle_qu8_scale8(a, vs, 0), axle_qu8_scale8(b, vs, 0), regs, 0);
      uint8_t* y = y_plane + oy * ow + ox;
      axle_qu8_dw_store(8, v, y, y_end);
      if (pair) axle_qu8_dw_store(8, _mm_unpackhi_epi64(v, v), y + ow, y_end);
      for (int64_t k = 0; k < 3 - s; ++k) t[k] = t[k + 2 * s];
    }
  }
}

AXLE_AVXVNNI void axle_qu8_dwconv_plane_3x3__avxvnni(const axle_f32_conv_params_t* p,
                                                     const uint8_t* x_plane, int32_t x_zero_point,
                                                     const int16_t* w, int32_t term, float scale,
                                                     const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                                     void* tmp) {
  const int64_t s = p->stride[2], oh = p->out[1], ow = p->out[2];
  const dw_layout_t l = axle_qu8_dw_layout(p);
  axle_qu8_dw_pad_plane(p, x_plane, (uint8_t)x_zero_point, &l, 0, tmp);
  const dw_gather_t g = {4 * s, _mm256_broadcastsi128_si256(axle_qu8_dw_triple_lanes(s))};
  __m256i wq[3];
  for (int ky = 0; ky < 3; ++ky) wq[ky] = _mm256_set1_epi32(axle_qu8_dw_row_quad(w + 3 * ky));
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256i vt = _mm256_set1_epi32(term);
  if (s == 1)
    columns(1, tmp, l.row_len, oh, ow, wq, vt, vs, &g, &regs, y_plane);
  else
    columns(2, tmp, l.row_len, oh, ow, wq, vt, vs, &g, &regs, y_plane);
}
