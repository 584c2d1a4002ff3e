/* Depthwise 3x3 quantized convolution of 16 channels at once with AVX2,
 * for small planes (14x14, 7x7 and the like).
 *
 * Why: the per-plane kernel (dwconv_avx2.c) pads, walks and compacts one
 * plane per call, and on a 7x7 plane that bookkeeping costs several times
 * the plane's 441 multiply-adds (4-7 GMAC/s on MobileNetV2's 7x7 and
 * 14x14 stride-2 layers, against 15-23 on its large maps). Here 16
 * channels' planes are transposed into one channels-last buffer of int16,
 * padded with the zero point (a pixel is one ymm: 16 channels), so every
 * output pixel of all 16 channels is one pass over its nine taps: two
 * taps' vectors unpacked into per-channel pairs (unpacklo: channels 0..3
 * and 8..11, unpackhi: 4..7 and 12..15) meet the channels' weight pairs in
 * vpmaddwd. The outputs, 16 bytes per pixel, are transposed back into the
 * 16 output planes. u8 x s8 pairs cannot saturate vpmaddwd and the int32
 * sums are exact, so the results are the reference's bit for bit. */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

/* The channels-last buffer's geometry: every input pixel a tap can reach,
 * with the padding. */
typedef struct dw16_geom_t {
  int64_t rows, cols, out_px;
} dw16_geom_t;

static dw16_geom_t dw16_geom(const axle_f32_conv_params_t* p) {
  const int64_t s = p->stride[2];
  const dw16_geom_t g = {(p->out[1] - 1) * s + 3, (p->out[2] - 1) * s + 3, p->out[1] * p->out[2]};
  return g;
}

int axle_qu8_dwconv16_3x3__avx2_supports(const axle_f32_conv_params_t* p) {
  const int64_t out_px = p->out[1] * p->out[2];
  return axle_qu8_dwconv_3x3__avx2_supports(p) && p->pad[1] >= 0 && p->pad[2] >= 0 &&
         out_px >= 16 && out_px <= AXLE_QU8_DWCONV16_MAX_PIXELS && p->in[1] * p->in[2] >= 16;
}

size_t axle_qu8_dwconv16_tmp_size(const axle_f32_conv_params_t* p) {
  if (!axle_qu8_dwconv16_3x3__avx2_supports(p)) return 0;
  const dw16_geom_t g = dw16_geom(p);
  return (size_t)(g.rows * g.cols * 32 + g.out_px * 16);
}

/* out[j] byte i = in[i] byte j: a 16 x 16 byte transpose in four rounds of
 * unpacks (bytes, words, dwords, qwords). */
AXLE_AVX2_INLINE void transpose16x16(const __m128i in[16], __m128i out[16]) {
  __m128i a[16], b[16], c[16];
  /* a[h * 8 + i]: rows 2i, 2i + 1 interleaved, columns 8h .. 8h + 7. */
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm_unpacklo_epi8(in[2 * i], in[2 * i + 1]);
    a[8 + i] = _mm_unpackhi_epi8(in[2 * i], in[2 * i + 1]);
  }
  /* b[g * 4 + i]: rows 4i .. 4i + 3, columns 4g .. 4g + 3. */
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      b[h * 8 + i] = _mm_unpacklo_epi16(a[h * 8 + 2 * i], a[h * 8 + 2 * i + 1]);
      b[h * 8 + 4 + i] = _mm_unpackhi_epi16(a[h * 8 + 2 * i], a[h * 8 + 2 * i + 1]);
    }
  /* c[g * 4 + i], i < 2: rows 8i .. 8i + 7 of columns 4g, 4g + 1; c[g * 4 +
   * 2 + i]: of columns 4g + 2, 4g + 3. */
  for (int g = 0; g < 4; ++g)
    for (int i = 0; i < 2; ++i) {
      c[g * 4 + i] = _mm_unpacklo_epi32(b[g * 4 + 2 * i], b[g * 4 + 2 * i + 1]);
      c[g * 4 + 2 + i] = _mm_unpackhi_epi32(b[g * 4 + 2 * i], b[g * 4 + 2 * i + 1]);
    }
  for (int g = 0; g < 4; ++g) {
    out[4 * g] = _mm_unpacklo_epi64(c[g * 4], c[g * 4 + 1]);
    out[4 * g + 1] = _mm_unpackhi_epi64(c[g * 4], c[g * 4 + 1]);
    out[4 * g + 2] = _mm_unpacklo_epi64(c[g * 4 + 2], c[g * 4 + 3]);
    out[4 * g + 3] = _mm_unpackhi_epi64(c[g * 4 + 2], c[g * 4 + 3]);
  }
}

/* Every output pixel of the 16 channels, channels-last into o (16 bytes a
 * pixel), from the padded channels-last input t (row bytes a row), without
 * the steps skip (a constant at each call) leaves out (alone, Zen 4 at
 * AVX2: 384 @14 32.7 -> 28.6 us, 960 @7 24.0 -> 21.6, 576 @14 stride 2
 * 21.0 -> 19.4). */
AXLE_AVX2_INLINE void pixels(const unsigned skip, const unsigned char* t, int64_t row, int64_t oh,
                             int64_t ow, int64_t s, const __m256i wlo[5], const __m256i whi[5],
                             __m256i tlo, __m256i thi, __m256 slo, __m256 shi,
                             const axle_qu8_rq_regs_t* regs, uint8_t* o) {
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox) {
      const unsigned char* b = t + oy * s * row + ox * s * 32;
      __m256i lo = tlo, hi = thi;
      for (int i = 0; i < 5; ++i) {
        const int ta = 2 * i, tb = 2 * i + 1;
        const __m256i va = _mm256_loadu_si256((const __m256i*)(b + ta / 3 * row + ta % 3 * 32));
        const __m256i vb =
            tb < 9 ? _mm256_loadu_si256((const __m256i*)(b + tb / 3 * row + tb % 3 * 32))
                   : _mm256_setzero_si256();
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(va, vb), wlo[i]));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(va, vb), whi[i]));
      }
      _mm_storeu_si128((__m128i*)(o + 16 * (oy * ow + ox)),
                       axle_qu8_narrow16(axle_qu8_scale8(lo, slo, skip),
                                         axle_qu8_scale8(hi, shi, skip), regs, skip));
    }
}

/* The weight pairs (out[0..4]) and terms (*t) of channels base..base + 3
 * (low lanes) and base + 8..base + 11 (high lanes) of 16: base 0 for the
 * unpacklo half of the taps, 4 for the unpackhi half. Channel c's pair i
 * is the int32 word i at w + c * w_stride. Per channel two 16-byte loads
 * (words 0..3 and 1..4, so nothing past the five is read) and a 4x4
 * transpose in each 128-bit lane, in place of twelve eight-lane gathers a
 * call (alone, Zen 4 at AVX2: 960 @7 21.4 -> 20.0 us, 384 @14 28.6 ->
 * 27.9, 576 @14 stride 2 19.3 -> 18.5; a timing test with no weight loads
 * at all had put the gathers at ~3 % of int8 MobileNetV2 there). */
AXLE_AVX2_INLINE void channel_lanes(const int16_t* w, size_t w_stride, const int32_t* terms,
                                    size_t term_stride, size_t base, __m256i out[5], __m256i* t) {
  __m256i v[4], u[4];
  for (size_t j = 0; j < 4; ++j) {
    const int16_t* lo = w + (base + j) * w_stride;
    const int16_t* hi = w + (base + 8 + j) * w_stride;
    v[j] = _mm256_loadu2_m128i((const __m128i*)hi, (const __m128i*)lo);
    u[j] = _mm256_loadu2_m128i((const __m128i*)(hi + 2), (const __m128i*)(lo + 2));
  }
  const __m256i a01 = _mm256_unpacklo_epi32(v[0], v[1]), b01 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i a23 = _mm256_unpacklo_epi32(v[2], v[3]), b23 = _mm256_unpackhi_epi32(v[2], v[3]);
  out[0] = _mm256_unpacklo_epi64(a01, a23);
  out[1] = _mm256_unpackhi_epi64(a01, a23);
  out[2] = _mm256_unpacklo_epi64(b01, b23);
  out[3] = _mm256_unpackhi_epi64(b01, b23);
  /* Word 4 is the last of words 1..4. */
  out[4] =
      _mm256_unpackhi_epi64(_mm256_unpackhi_epi32(u[0], u[1]), _mm256_unpackhi_epi32(u[2], u[3]));
  const int32_t* tc = terms + base * term_stride;
  *t = _mm256_setr_epi32(tc[0], tc[term_stride], tc[2 * term_stride], tc[3 * term_stride],
                         tc[8 * term_stride], tc[9 * term_stride], tc[10 * term_stride],
                         tc[11 * term_stride]);
}

AXLE_AVX2 void axle_qu8_dwconv16_3x3__avx2(const axle_f32_conv_params_t* p, const uint8_t* x,
                                           size_t channels, int32_t x_zero_point, const int16_t* w,
                                           size_t w_stride, const int32_t* terms,
                                           size_t term_stride, const float* scales,
                                           const axle_qu8_requant_t* rq, uint8_t* y, void* tmp) {
  const dw16_geom_t g = dw16_geom(p);
  const int64_t iw = p->in[2], ow = p->out[2], s = p->stride[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const size_t in_px = (size_t)(p->in[1] * iw), out_px = (size_t)g.out_px;
  unsigned char* t = tmp;
  uint8_t* o = (uint8_t*)tmp + g.rows * g.cols * 32;

  /* The padded channels-last input: the zero point, then the pixels. */
  const __m256i zp16 = _mm256_set1_epi16((short)x_zero_point);
  for (int64_t i = 0; i < g.rows * g.cols; ++i) _mm256_storeu_si256((__m256i*)(t + 32 * i), zp16);
  const __m128i zp8 = _mm_set1_epi8((char)x_zero_point);
  /* Blocks of 16 pixels of every channel; the last block ends at the
   * plane's end, overlapping the one before (its pixels are written
   * twice, with the same values), so no load leaves the plane. */
  for (size_t done = 0; done < in_px; done += 16) {
    const size_t px0 = done + 16 <= in_px ? done : in_px - 16;
    __m128i rows[16], cols[16];
    for (size_t ch = 0; ch < 16; ++ch)
      rows[ch] = ch < channels ? _mm_loadu_si128((const __m128i*)(x + ch * in_px + px0)) : zp8;
    transpose16x16(rows, cols);
    int64_t iy = (int64_t)px0 / iw, ix = (int64_t)px0 % iw;
    for (size_t j = 0; j < 16; ++j) {
      const int64_t r = iy + pt, c = ix + pl;
      if (r < g.rows && c < g.cols)
        _mm256_storeu_si256((__m256i*)(t + 32 * (r * g.cols + c)), _mm256_cvtepu8_epi16(cols[j]));
      if (++ix == iw) {
        ix = 0;
        ++iy;
      }
    }
  }

  /* Per tap pair (2i, 2i + 1; the ninth pairs with the packing's zero
   * tap) the channels' weights in the lanes of the unpacked taps, and the
   * terms in those of the sums (channel_lanes). */
  __m256i wlo[5], whi[5], tlo, thi;
  /* A last group of fewer than 16 channels: its taps and terms copied
   * into 16 channels' worth, the rest zero (computed, never stored), so
   * channel_lanes reads nothing past the layer's. */
  int16_t w16[16 * 10];
  int32_t t16[16];
  if (channels < 16) {
    memset(w16, 0, sizeof w16);
    memset(t16, 0, sizeof t16);
    for (size_t c = 0; c < channels; ++c) {
      memcpy(w16 + c * 10, w + c * w_stride, 10 * sizeof *w);
      t16[c] = terms[c * term_stride];
    }
    w = w16, w_stride = 10, terms = t16, term_stride = 1;
  }
  channel_lanes(w, w_stride, terms, term_stride, 0, wlo, &tlo);
  channel_lanes(w, w_stride, terms, term_stride, 4, whi, &thi);
  const __m256i count = _mm256_set1_epi32((int)channels);
  const __m256 s0 = _mm256_maskload_ps(
      scales, _mm256_cmpgt_epi32(count, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  const __m256 s1 = _mm256_maskload_ps(
      scales + 8, _mm256_cmpgt_epi32(count, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15)));
  const __m256 slo = _mm256_permute2f128_ps(s0, s1, 0x20),
               shi = _mm256_permute2f128_ps(s0, s1, 0x31);

  const axle_qu8_rq_regs_t regs = axle_qu8_rq_regs(rq);
#define AXLE_PIXELS(skip) \
  pixels(skip, t, 32 * g.cols, p->out[1], ow, s, wlo, whi, tlo, thi, slo, shi, &regs, o)
  AXLE_QU8_SKIP_SWITCH(rq->skip, AXLE_PIXELS)
#undef AXLE_PIXELS

  /* Back to the output planes, 16 pixels of every channel at a time (the
   * last block again overlapping the one before). */
  for (size_t done = 0; done < out_px; done += 16) {
    const size_t px0 = done + 16 <= out_px ? done : out_px - 16;
    __m128i pix[16], chans[16];
    for (size_t j = 0; j < 16; ++j) pix[j] = _mm_loadu_si128((const __m128i*)(o + 16 * (px0 + j)));
    transpose16x16(pix, chans);
    for (size_t ch = 0; ch < channels; ++ch)
      _mm_storeu_si128((__m128i*)(y + ch * out_px + px0), chans[ch]);
  }
}
