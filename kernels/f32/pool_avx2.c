/* 2-D max and average pooling of one plane, and global pooling, with AVX2.
 *
 * Max pooling: the scheme of pool_avx512.c on eight lanes (the window's
 * vertical max into a row buffer with -inf on both sides, then the
 * horizontal max per output; no copy of the plane, no bounds tests). Stride
 * 2 splits a pair of taps out of 16 columns with two in-lane shuffles; the
 * cross-lane permute that puts the outputs in order commutes with max, so
 * it runs once per eight outputs, not once per tap. max(x, best) keeps best
 * when x is NaN, so NaN taps are skipped, the reference's rule; best starts
 * at -inf, never at a tap, for the same reason.
 *
 * Average pooling: the same two passes with sums (0 on both sides of the
 * row buffer; the permute commutes with the lane-wise add too), then the
 * division by the window's count (the reference's divisor: the taps inside
 * the input, or inside the padded extent with count_include_pad). The sums
 * add the taps in another order than the reference's, so results differ
 * from it in the last bits. */
#include <immintrin.h>
#include <math.h>

#include "axle_kernels.h"
#include "lanes_avx2.h"
#include "window.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_INLINE AXLE_AVX2 static inline __attribute__((always_inline))

int axle_f32_maxpool2d__avx2_supports(const axle_f32_pool_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->dilation[1] == 1 &&
         p->dilation[2] == 1 && (p->stride[2] == 1 || p->stride[2] == 2);
}

/* Columns of the row buffer the horizontal pass reads (buffer column b
 * holds input column b - pad[2]): the last output group's taps, whole
 * 16-column pairs at stride 2. */
static int64_t row_width(const axle_f32_pool_params_t* p) {
  const int64_t kw = p->kernel[2], groups = (p->out[2] + 7) / 8;
  return p->stride[2] == 1 ? groups * 8 + kw : groups * 16 + ((kw - 1) & ~(int64_t)1);
}

size_t axle_f32_maxpool2d__avx2_tmp_size(const axle_f32_pool_params_t* p) {
  if (!axle_f32_maxpool2d__avx2_supports(p)) return 0;
  const int64_t width = row_width(p), written = p->pad[2] + p->in[2];
  return (size_t)(width > written ? width : written);
}

/* The row buffer, then one tap count per output column (whole groups). */
size_t axle_f32_avgpool2d__avx2_tmp_size(const axle_f32_pool_params_t* p) {
  if (!axle_f32_maxpool2d__avx2_supports(p)) return 0;
  return axle_f32_maxpool2d__avx2_tmp_size(p) + (size_t)((p->out[2] + 7) / 8 * 8);
}

/* Max (counts NULL) or average of buffer row v's taps for each output of
 * the row, into y (ow floats); an average divides by rows x counts[j], the
 * window's vertical and horizontal tap counts. Inlined with constant s and
 * kw for the common windows, so that the tap loops unroll. */
AXLE_INLINE __m256 tap_op(__m256 acc, __m256 x, int sum) {
  return sum ? _mm256_add_ps(acc, x) : _mm256_max_ps(x, acc);
}

AXLE_INLINE void h_row(const float* v, int64_t s, int64_t kw, int64_t ow, const float* counts,
                       float rows, float* y) {
  const int sum = counts != NULL;
  for (int64_t j = 0; j < ow; j += 8) {
    const float* at = v + j * s;
    __m256 best = sum ? _mm256_setzero_ps() : _mm256_set1_ps(-INFINITY);
    if (s == 1) {
      for (int64_t kx = 0; kx < kw; ++kx) best = tap_op(best, _mm256_loadu_ps(at + kx), sum);
    } else {
      /* Lanes in the order 0 1 4 5 2 3 6 7 until the permute. */
      for (int64_t kx = 0; kx < kw; kx += 2) {
        const __m256 lo = _mm256_loadu_ps(at + kx), hi = _mm256_loadu_ps(at + kx + 8);
        best = tap_op(best, _mm256_shuffle_ps(lo, hi, 0x88), sum);
        if (kx + 1 < kw) best = tap_op(best, _mm256_shuffle_ps(lo, hi, 0xDD), sum);
      }
      best = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), 0xD8));
    }
    if (sum) {
      /* A window with no counted tap averages to 0, as in the reference. */
      const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(counts + j), _mm256_set1_ps(rows));
      best = _mm256_andnot_ps(_mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ),
                              _mm256_div_ps(best, d));
    }
    if (ow - j >= 8)
      _mm256_storeu_ps(y + j, best);
    else
      _mm256_maskstore_ps(y + j, axle_f32_first_lanes__avx2((size_t)(ow - j)), best);
  }
}

/* One plane, max (average 0) or average (1). */
AXLE_INLINE void pool_plane(const axle_f32_pool_params_t* p, const float* x_plane, float* y_plane,
                            float* tmp, int average) {
  const int64_t s = p->stride[2], sv = p->stride[1], kh = p->kernel[1], kw = p->kernel[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t width = row_width(p), written = pl + iw;
  const float edge = average ? 0.0f : -INFINITY;
  const __m256 init = _mm256_set1_ps(edge);
  /* The padding columns, once per plane: the vertical pass writes only the
   * input's columns, under a mask in the last group. */
  for (int64_t b = 0; b < pl; ++b) tmp[b] = edge;
  for (int64_t b = written; b < width; ++b) tmp[b] = edge;
  float* v = tmp + pl;
  /* Averages: the columns' tap counts, then per row the divisor. */
  float* counts = average ? tmp + axle_f32_maxpool2d__avx2_tmp_size(p) : NULL;
  for (int64_t ox = 0; average && ox < (ow + 7) / 8 * 8; ++ox) {
    const int64_t start = ox * s - pl;
    int64_t lo, hi;
    axle_window_taps(start, 1, kw, iw, &lo, &hi);
    counts[ox] = ox >= ow ? 1.0f /* lanes never stored */
                 : p->count_include_pad
                     ? (float)axle_window_taps_padded(start, 1, kw, iw + p->pad_end[2])
                     : (float)(hi - lo);
  }
  const int64_t full = iw / 8 * 8;
  const __m256i last = axle_f32_first_lanes__avx2((size_t)(iw - full));
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t start = oy * sv - pt;
    int64_t lo, hi;
    axle_window_taps(start, 1, kh, ih, &lo, &hi);
    lo += start;
    hi += start;
    for (int64_t c = 0; c < full; c += 8) {
      __m256 best = init;
      for (int64_t iy = lo; iy < hi; ++iy)
        best = tap_op(best, _mm256_loadu_ps(x_plane + iy * iw + c), average);
      _mm256_storeu_ps(v + c, best);
    }
    if (full < iw) {
      __m256 best = init;
      for (int64_t iy = lo; iy < hi; ++iy)
        best = tap_op(best, _mm256_maskload_ps(x_plane + iy * iw + full, last), average);
      _mm256_maskstore_ps(v + full, last, best);
    }
    /* Averages divide by the row's vertical count times each column's. */
    const float rows = !average
                           ? 0.0f
                           : (float)(p->count_include_pad
                                         ? axle_window_taps_padded(start, 1, kh, ih + p->pad_end[1])
                                         : hi - lo);
    float* y = y_plane + oy * ow;
    if (s == 2 && kw == 3)
      h_row(tmp, 2, 3, ow, counts, rows, y);
    else if (s == 1 && kw == 3)
      h_row(tmp, 1, 3, ow, counts, rows, y);
    else if (kw == 2)
      h_row(tmp, s, 2, ow, counts, rows, y);
    else
      h_row(tmp, s, kw, ow, counts, rows, y);
  }
}

AXLE_AVX2 void axle_f32_maxpool2d_plane__avx2(const axle_f32_pool_params_t* p, const float* x_plane,
                                              float* y_plane, float* tmp) {
  pool_plane(p, x_plane, y_plane, tmp, 0);
}

AXLE_AVX2 void axle_f32_avgpool2d_plane__avx2(const axle_f32_pool_params_t* p, const float* x_plane,
                                              float* y_plane, float* tmp) {
  pool_plane(p, x_plane, y_plane, tmp, 1);
}

/* Sums of v[0..3]: lane k holds the sum of v[k]'s four lanes. */
AXLE_AVX2 static inline __m256d sum4(const __m256d* v) {
  const __m256d a = _mm256_hadd_pd(v[0], v[1]), b = _mm256_hadd_pd(v[2], v[3]);
  return _mm256_add_pd(_mm256_permute2f128_pd(a, b, 0x20), _mm256_permute2f128_pd(a, b, 0x31));
}

/* The averages of rows x[0..n) (n <= 4; constant 4 in the main loop), one
 * accumulator per row: the rows' adds are independent of each other, and
 * they are reduced and divided together. */
AXLE_INLINE void avg4(size_t n, size_t size, const float* x, float* y) {
  __m256d acc[4];
  for (size_t k = 0; k < 4; ++k) acc[k] = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 4 <= size; i += 4)
    for (size_t k = 0; k < n; ++k)
      acc[k] = _mm256_add_pd(acc[k], _mm256_cvtps_pd(_mm_loadu_ps(x + k * size + i)));
  if (i < size) {
    /* Masked-off lanes read nothing (they may lie past the tensor) and
     * give 0. */
    const __m128i m = _mm_cmpgt_epi32(_mm_set1_epi32((int)(size - i)), _mm_setr_epi32(0, 1, 2, 3));
    for (size_t k = 0; k < n; ++k)
      acc[k] = _mm256_add_pd(acc[k], _mm256_cvtps_pd(_mm_maskload_ps(x + k * size + i, m)));
  }
  /* Division, not a multiply by 1 / size: the scalar variant's rounding
   * given the same sum. */
  const __m128 f = _mm256_cvtpd_ps(_mm256_div_pd(sum4(acc), _mm256_set1_pd((double)size)));
  if (n == 4) {
    _mm_storeu_ps(y, f);
  } else {
    float t[4];
    _mm_storeu_ps(t, f);
    for (size_t k = 0; k < n; ++k) y[k] = t[k];
  }
}

/* Global average: each row summed in double, as the scalar variant (which
 * says why), four rows at a time. The float-to-double conversions bound
 * this loop, and 512-bit vectors do not help there (they and the adds get
 * two ports instead of three): an AVX-512 variant measured 10-20 % slower
 * on 2048 x 49, so AVX-512 machines run this one too. */
AXLE_AVX2 void axle_f32_global_avgpool__avx2(size_t channels, size_t size, const float* x,
                                             float* y) {
  if (size == 0) {
    for (size_t c = 0; c < channels; ++c) y[c] = 0.0f;
    return;
  }
  size_t c = 0;
  for (; c + 4 <= channels; c += 4) avg4(4, size, x + c * size, y + c);
  if (c < channels) avg4(channels - c, size, x + c * size, y + c);
}

/* No AVX-512 variant either: one measured slower (7.1 us against 5.9 on
 * 2048 x 49; rows of 49 floats make most 64-byte loads split a cache
 * line). */
AXLE_AVX2 void axle_f32_global_maxpool__avx2(size_t channels, size_t size, const float* x,
                                             float* y) {
  for (size_t c = 0; c < channels; ++c) {
    const float* xc = x + c * size;
    __m256 b0 = _mm256_set1_ps(-INFINITY), b1 = b0;
    size_t i = 0;
    for (; i + 16 <= size; i += 16) {
      b0 = _mm256_max_ps(_mm256_loadu_ps(xc + i), b0);
      b1 = _mm256_max_ps(_mm256_loadu_ps(xc + i + 8), b1);
    }
    for (; i + 8 <= size; i += 8) b0 = _mm256_max_ps(_mm256_loadu_ps(xc + i), b0);
    b0 = _mm256_max_ps(b0, b1);
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(b0), _mm256_extractf128_ps(b0, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    float best = _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
    /* Strict '>' skips NaN, as the vector max does. */
    for (; i < size; ++i)
      if (xc[i] > best) best = xc[i];
    y[c] = best;
  }
}
