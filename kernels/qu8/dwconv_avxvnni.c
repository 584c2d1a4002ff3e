/* Depthwise 3x3 quantized convolution of one plane with AVX-VNNI
 * (AXLE_ISA_AVX2_VNNI), stride 1 or 2: the AVX-512 kernel's byte triples
 * (dwconv_avx512.c) on 8 outputs per ymm, over the AVX2 kernel's padded
 * copy (dwconv_avx2.h), since AVX2 has no masked byte loads to pad with.
 *
 * The plane is copied as u8 for both strides, padded with x_zero_point
 * (the packed term cancels it). For 8 outputs and one kernel row, each
 * 128-bit lane loads the 16 bytes where its 4 outputs' windows start,
 * vpshufb puts each window's three bytes in an int32 lane (fourth byte 0),
 * and vpdpbusd adds the three products against the row's weights (w0, w1,
 * w2, 0) without saturation: per 8 outputs three such gathers and three
 * vpdpbusd, against 12 vpmaddwd and 12 vpaddd per 16 for the AVX2 kernel.
 * (One 32-byte load and vpermd, as the AVX-512 kernel does it, ran as
 * fast.) The copy, the requantisation and the flat result's compaction
 * cost as much as the products, so planes run only 8-28 % faster than
 * with the AVX2 kernel (28x28 401 -> 334 ns, 56x56 1.40 -> 1.09 us, 7x7
 * 62 -> 58 ns, stride 2 at 14x14 106 -> 90 ns).
 * Stride 1 walks the padded plane as one long row, as the AVX2 kernel
 * does (groups run across row ends; the flat result is compacted after);
 * stride 2 walks each output row in groups of 16. */
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

/* The sums of 8 outputs whose first window starts at x (padded plane,
 * rows row_bytes apart), from term. */
AXLE_AVXVNNI_INLINE __m256i group8(const uint8_t* x, int64_t row_bytes, const __m256i wq[3],
                                   __m256i vt, const dw_gather_t* g) {
  __m256i acc = vt;
  for (int ky = 0; ky < 3; ++ky) {
    const uint8_t* r = x + ky * row_bytes;
    const __m256i row = _mm256_loadu2_m128i((const __m128i*)(r + g->lane1), (const __m128i*)r);
    const __m256i t = _mm256_shuffle_epi8(row, g->bytes);
    acc = _mm256_dpbusd_avx_epi32(acc, t, wq[ky]);
  }
  return acc;
}

/* 16 outputs, the second 8 starting `next` bytes after the first, as u8. */
AXLE_AVXVNNI_INLINE __m128i group16(const uint8_t* x, int64_t next, int64_t row_bytes,
                                    const __m256i wq[3], __m256i vt, __m256 vs,
                                    const dw_gather_t* g, const axle_qu8_rq_regs_t* regs) {
  return axle_qu8_narrow16_ordered(axle_qu8_scale8(group8(x, row_bytes, wq, vt, g), vs),
                                   axle_qu8_scale8(group8(x + next, row_bytes, wq, vt, g), vs),
                                   regs);
}

AXLE_AVXVNNI void axle_qu8_dwconv_plane_3x3__avxvnni(const axle_f32_conv_params_t* p,
                                                     const uint8_t* x_plane, int32_t x_zero_point,
                                                     const int16_t* w, int32_t term, float scale,
                                                     const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                                     void* tmp) {
  const int64_t s = p->stride[2], oh = p->out[1], ow = p->out[2];
  const dw_layout_t l = axle_qu8_dw_layout(p);
  axle_qu8_dw_pad_plane(p, x_plane, (uint8_t)x_zero_point, &l, 0, tmp);
  const __m128i lane =
      s == 1 ? _mm_setr_epi8(0, 1, 2, -128, 1, 2, 3, -128, 2, 3, 4, -128, 3, 4, 5, -128)
             : _mm_setr_epi8(0, 1, 2, -128, 2, 3, 4, -128, 4, 5, 6, -128, 6, 7, 8, -128);
  const dw_gather_t g = {4 * s, _mm256_broadcastsi128_si256(lane)};
  __m256i wq[3];
  for (int ky = 0; ky < 3; ++ky)
    wq[ky] = _mm256_set1_epi32((int32_t)((uint32_t)(uint8_t)w[3 * ky] |
                                         (uint32_t)(uint8_t)w[3 * ky + 1] << 8 |
                                         (uint32_t)(uint8_t)w[3 * ky + 2] << 16));
  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256i vt = _mm256_set1_epi32(term);
  const uint8_t* plane = tmp;
  if (s == 2) {
    const uint8_t* y_end = y_plane + oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t j = 0; j < ow; j += 16)
        axle_qu8_dw_store16(
            group16(plane + oy * 2 * l.row_len + 2 * j, 16, l.row_len, wq, vt, vs, &g, &regs),
            y_plane + oy * ow + j, y_end);
    return;
  }
  uint8_t* flat = (uint8_t*)tmp + l.plane_bytes;
  for (int64_t k = 0; k < l.flat_groups; ++k)
    _mm_storeu_si128((__m128i*)(flat + k * 16),
                     group16(plane + k * 16, 8, l.row_len, wq, vt, vs, &g, &regs));
  axle_qu8_dw_unflatten(flat, &l, oh, ow, y_plane);
}
