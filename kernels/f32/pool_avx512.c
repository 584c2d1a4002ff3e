/* Max pooling of one plane with AVX-512.
 *
 * A max window is separable, so each output row is made in two passes over
 * one row buffer instead of kernel-height x kernel-width maxes per output:
 * first the vertical max of the window's input rows, column by column (only
 * rows inside the plane: top and bottom padding cost nothing), then the
 * horizontal max of that row for each output. For the 3x3 stride-2 stem
 * that is 2 + 3 maxes per output instead of 9, and the shuffles that stride
 * 2 needs (two two-source permutes per pair of taps) run on one row per
 * output row, where reducing rows horizontally first would shuffle each of
 * the twice as many input rows. The buffer carries -inf on both sides of
 * the row, so left and right padding and ceil-mode windows past the end
 * need no bounds tests; the plane is never copied (a padded copy would be a
 * whole extra pass over it): only each row's last partial 16 columns are a
 * masked load, and each output row's last partial group a masked store.
 *
 * max(x, best) keeps best when x is NaN, so NaN taps are skipped, the
 * reference's rule; best starts at -inf, never at a tap, for the same
 * reason. */
#include <immintrin.h>
#include <math.h>

#include "axle_kernels.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))
#define AXLE_INLINE AXLE_AVX512 static inline __attribute__((always_inline))

int axle_f32_maxpool2d__avx512_supports(const axle_f32_pool_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->dilation[1] == 1 &&
         p->dilation[2] == 1 && (p->stride[2] == 1 || p->stride[2] == 2);
}

/* Columns of the row buffer the horizontal pass reads (buffer column b
 * holds input column b - pad[2]): the last output group's taps, whole
 * 32-column pairs at stride 2. */
static int64_t row_width(const axle_f32_pool_params_t* p) {
  const int64_t kw = p->kernel[2], groups = (p->out[2] + 15) / 16;
  return p->stride[2] == 1 ? groups * 16 + kw : groups * 32 + ((kw - 1) & ~(int64_t)1);
}

/* Floats of one row buffer, a multiple of 16. */
static int64_t buffer_floats(const axle_f32_pool_params_t* p) {
  const int64_t width = row_width(p), written = p->pad[2] + p->in[2];
  return ((width > written ? width : written) + 15) / 16 * 16;
}

size_t axle_f32_maxpool2d__avx512_tmp_size(const axle_f32_pool_params_t* p) {
  if (!axle_f32_maxpool2d__avx512_supports(p)) return 0;
  return 2 * (size_t)buffer_floats(p);
}

/* Horizontal max of buffer row v for each output of the row, into y (ow
 * floats). Inlined with constant s and kw for the common windows, so that
 * the tap loops unroll. */
AXLE_INLINE void hmax_row(const float* v, int64_t s, int64_t kw, int64_t ow, float* y) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t j = 0; j < ow; j += 16) {
    const float* at = v + j * s;
    __m512 best = _mm512_set1_ps(-INFINITY);
    if (s == 1) {
      for (int64_t kx = 0; kx < kw; ++kx) best = _mm512_max_ps(_mm512_loadu_ps(at + kx), best);
    } else {
      for (int64_t kx = 0; kx < kw; kx += 2) {
        const __m512 lo = _mm512_loadu_ps(at + kx), hi = _mm512_loadu_ps(at + kx + 16);
        best = _mm512_max_ps(_mm512_permutex2var_ps(lo, even, hi), best);
        if (kx + 1 < kw) best = _mm512_max_ps(_mm512_permutex2var_ps(lo, odd, hi), best);
      }
    }
    const __mmask16 m = ow - j >= 16 ? 0xFFFF : (__mmask16)((1u << (ow - j)) - 1);
    _mm512_mask_storeu_ps(y + j, m, best);
  }
}

/* The vertical max of input rows [lo, hi) into buffer row v. */
AXLE_INLINE void vmax_row(const float* x_plane, int64_t iw, int64_t lo, int64_t hi, float* v) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  const int64_t full = iw / 16 * 16;
  const __mmask16 last = (__mmask16)((1u << (iw - full)) - 1);
  for (int64_t c = 0; c < full; c += 16) {
    __m512 best = ninf;
    for (int64_t iy = lo; iy < hi; ++iy)
      best = _mm512_max_ps(_mm512_loadu_ps(x_plane + iy * iw + c), best);
    _mm512_storeu_ps(v + c, best);
  }
  if (last) {
    __m512 best = ninf;
    for (int64_t iy = lo; iy < hi; ++iy)
      best = _mm512_max_ps(_mm512_maskz_loadu_ps(last, x_plane + iy * iw + full), best);
    _mm512_mask_storeu_ps(v + full, last, best);
  }
}

AXLE_INLINE void hmax_any(const float* v, int64_t s, int64_t kw, int64_t ow, float* y) {
  if (s == 2 && kw == 3)
    hmax_row(v, 2, 3, ow, y);
  else if (s == 1 && kw == 3)
    hmax_row(v, 1, 3, ow, y);
  else if (kw == 2)
    hmax_row(v, s, 2, ow, y);
  else
    hmax_row(v, s, kw, ow, y);
}

/* Two row buffers in turn: the horizontal pass of one output row runs after
 * the vertical pass of the next, by which time the stores it reads have
 * left the store buffer; straight after them, its loads (one column off the
 * stores, for the padding) waited on failed store forwarding. ResNet's
 * stem pooling, 112x112 planes in the L2: 1.23-1.30 -> 1.08-1.15 us each
 * (from memory, 2.1 us either way). */
AXLE_AVX512 void axle_f32_maxpool2d_plane__avx512(const axle_f32_pool_params_t* p,
                                                  const float* x_plane, float* y_plane,
                                                  float* tmp) {
  const int64_t s = p->stride[2], sv = p->stride[1], kh = p->kernel[1], kw = p->kernel[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t width = row_width(p), stride = buffer_floats(p);
  /* The padding columns, once per plane: the vertical pass writes only the
   * input's columns, under a mask in the last group. */
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t b = 0; b < pl; ++b) tmp[r * stride + b] = -INFINITY;
    for (int64_t b = pl + iw; b < width; ++b) tmp[r * stride + b] = -INFINITY;
  }
  for (int64_t oy = 0; oy <= oh; ++oy) {
    if (oy < oh) {
      int64_t lo = oy * sv - pt, hi = lo + kh;
      if (lo < 0) lo = 0;
      if (hi > ih) hi = ih;
      vmax_row(x_plane, iw, lo, hi, tmp + (oy & 1) * stride + pl);
    }
    if (oy > 0) hmax_any(tmp + ((oy - 1) & 1) * stride, s, kw, ow, y_plane + (oy - 1) * ow);
  }
}
