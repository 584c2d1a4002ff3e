/* Internal to the kernels: the padded copy of a depthwise plane and the
 * tail-safe store that the AVX2-family depthwise kernels share
 * (dwconv_avx2.c, dwconv_avxvnni.c); axle_qu8_dwconv_tmp_size sizes the
 * scratch for this layout. */
#ifndef AXLE_KERNELS_QU8_DWCONV_AVX2_H_
#define AXLE_KERNELS_QU8_DWCONV_AVX2_H_

#include <stdint.h>

#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

/* Scratch layout: the padded plane (row_len elements per row, sized for
 * int16, which the AVX2 kernel widens to, and read as u8 by the AVX-VNNI
 * one; then a margin for the last group's loads and the rows' 16-wide
 * stores), then for stride 1 the flat u8 result. At stride 2 a row holds
 * just the 2 ow + 1 columns the outputs read: a group's lanes past ow read
 * on into the next row (or the margin), and are never stored. Rounded up
 * to whole groups plus a group, 112-wide rows took 160 elements and the
 * plane (36 KB as int16) no longer fit L1 (alone, Zen 4 at AVX2, 96
 * planes 112x112 -> 56x56: 139-140 -> 119-128 us). */
typedef struct dw_layout_t {
  int64_t row_len, rows, plane_bytes, flat_groups;
} dw_layout_t;

static inline dw_layout_t axle_qu8_dw_layout(const axle_f32_conv_params_t* p) {
  dw_layout_t l;
  const int64_t s = p->stride[2], oh = p->out[1], ow = p->out[2];
  l.rows = (oh - 1) * s + 3;
  l.row_len = s == 1 ? ow + 2 : 2 * ow + 1;
  l.flat_groups = s == 1 ? (oh * l.row_len + 15) / 16 : 0;
  l.plane_bytes = ((l.rows * l.row_len + 64) * 2 + 63) / 64 * 64;
  return l;
}

/* 16 pixels to element `at` of a padded row, widened to int16 or not. */
AXLE_AVX2_INLINE void axle_qu8_dw_store_px(void* d, int64_t at, __m128i v, int wide) {
  if (wide)
    _mm256_storeu_si256((__m256i*)((int16_t*)d + at), _mm256_cvtepu8_epi16(v));
  else
    _mm_storeu_si128((__m128i*)((uint8_t*)d + at), v);
}

/* Padded row: the input's n bytes at element dst0, the zero point around
 * them. Stores may run up to 15 elements past the row (into the next row,
 * written later, or the margin). src_end: the end of the readable input,
 * so a short tail can still be one 16-byte load, blended with the zero
 * point past n. The zero point goes only where the input does not: filled
 * in whole first and then overwritten, 28- and 56-wide rows took 4 and 8
 * stores where 3 and 5 do. */
AXLE_AVX2_INLINE void axle_qu8_dw_pad_row(void* d, int64_t row_len, uint8_t zp, const uint8_t* src,
                                          const uint8_t* src_end, int64_t dst0, int64_t n,
                                          int wide) {
  const __m128i zp8 = _mm_set1_epi8((char)zp);
  int64_t done = 0; /* elements written from the row's start */
  if (src) {
    if (dst0 > 0) axle_qu8_dw_store_px(d, 0, zp8, wide);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      axle_qu8_dw_store_px(d, dst0 + i, _mm_loadu_si128((const __m128i*)(src + i)), wide);
    done = dst0 + n;
    if (i < n && src + i + 16 <= src_end) {
      const __m128i keep =
          _mm_cmpgt_epi8(_mm_set1_epi8((char)(n - i)),
                         _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
      axle_qu8_dw_store_px(d, dst0 + i,
                           _mm_blendv_epi8(zp8, _mm_loadu_si128((const __m128i*)(src + i)), keep),
                           wide);
      done = dst0 + i + 16;
    } else {
      for (; i < n; ++i) {
        if (wide)
          ((int16_t*)d)[dst0 + i] = src[i];
        else
          ((uint8_t*)d)[dst0 + i] = src[i];
      }
    }
  }
  for (; done < row_len; done += 16) axle_qu8_dw_store_px(d, done, zp8, wide);
}

/* Copies the plane into tmp as the layout says, padded with the zero point
 * (widened to int16 if wide), and fills the margin after it. */
AXLE_AVX2_INLINE void axle_qu8_dw_pad_plane(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                            uint8_t zp, const dw_layout_t* l, int wide, void* tmp) {
  const int64_t ih = p->in[1], iw = p->in[2], elem = wide ? 2 : 1;
  const int64_t pl = p->pad[2], dst0 = pl > 0 ? pl : 0, src0 = pl > 0 ? 0 : -pl;
  int64_t n = iw - src0;
  if (n > l->row_len - dst0) n = l->row_len - dst0;
  for (int64_t r = 0; r < l->rows; ++r) {
    const int64_t iy = r - p->pad[1];
    axle_qu8_dw_pad_row((unsigned char*)tmp + r * l->row_len * elem, l->row_len, zp,
                        iy >= 0 && iy < ih && n > 0 ? x_plane + iy * iw + src0 : NULL,
                        x_plane + ih * iw, dst0, n, wide);
  }
  axle_qu8_dw_pad_row((unsigned char*)tmp + l->rows * l->row_len * elem, 48, zp, NULL, NULL, 0, 0,
                      wide);
}

/* The first n (8 or 16) bytes of v at y, or only those before y_end: rows
 * are written in order, so bytes past a row's end land in rows written
 * later, and only the plane's end (another plane's data) must not be
 * crossed. */
AXLE_AVX2_INLINE void axle_qu8_dw_store(int64_t n, __m128i v, uint8_t* y, const uint8_t* y_end) {
  axle_qu8_store16(v, (size_t)(y_end - y < n ? y_end - y : n), y);
}

#endif /* AXLE_KERNELS_QU8_DWCONV_AVX2_H_ */
