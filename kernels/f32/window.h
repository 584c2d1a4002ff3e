/* Internal to the kernels: sliding-window arithmetic shared by convolution and
 * pooling. Computing the valid tap range once per output position keeps the
 * bounds test out of the innermost loops. */
#ifndef AXLE_KERNELS_F32_WINDOW_H_
#define AXLE_KERNELS_F32_WINDOW_H_

#include <stdint.h>

#include "axle_kernels.h"

/* Taps t in [*lo, *hi) of a window starting at input coordinate start (may be
 * negative), with dilation d and k taps, land inside [0, in). Empty ranges
 * come back as *lo == *hi. */
static inline void axle_window_taps(int64_t start, int64_t d, int64_t k, int64_t in,
                                    int64_t* lo, int64_t* hi) {
  int64_t l = start >= 0 ? 0 : (-start + d - 1) / d;
  int64_t h = start > in - 1 ? 0 : (in - 1 - start) / d + 1;
  if (h > k) h = k;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* The `count` rows from row iy0 (may be negative) of a channels-last image
 * at x (h rows of w pixels of ch channels), from channel c: rows[r] for the
 * rows [*lo, *hi) inside the image; the others point at x + c and are never
 * read. For the channels-last depthwise kernels' row windows. */
static inline void axle_window_rows_nhwc(const float* x, int64_t h, int64_t w, int64_t ch,
                                         int64_t c, int64_t iy0, int64_t count, const float** rows,
                                         int64_t* lo, int64_t* hi) {
  axle_window_taps(iy0, 1, count, h, lo, hi);
  for (int64_t r = 0; r < count; ++r) rows[r] = x + c;
  for (int64_t r = *lo; r < *hi; ++r) rows[r] = x + (iy0 + r) * w * ch + c;
}

/* Where a strip of a channels-last depthwise row leaves the row, as a
 * constant its code is specialised for: a strip of `ncols` input columns
 * from column ix0 (may be negative) of a row of w. "Same" padding of 1
 * gives every row's first strip one column in the left padding (LEFT1),
 * its last one on the right (RIGHT1), and a row that is one strip both
 * (BOTH1, MobileNetV2's 7x7 rows); any other overhang is EDGES, tested
 * per column. */
enum { AXLE_STRIP_INSIDE, AXLE_STRIP_LEFT1, AXLE_STRIP_RIGHT1, AXLE_STRIP_BOTH1, AXLE_STRIP_EDGES };

static inline int axle_window_strip_edge(int64_t ix0, int64_t ncols, int64_t w) {
  const int left = ix0 < 0;
  const int right = ix0 + ncols > w;
  const int left1 = ix0 == -1, right1 = ix0 + ncols == w + 1;
  if (!left && !right) return AXLE_STRIP_INSIDE;
  if ((!left || left1) && (!right || right1))
    return left && right ? AXLE_STRIP_BOTH1 : left ? AXLE_STRIP_LEFT1 : AXLE_STRIP_RIGHT1;
  return AXLE_STRIP_EDGES;
}

/* Case n of a switch over strip widths: CALL(n, e) with the strip's edge
 * kind `edge` as the constant e, for kernels that inline one strip per
 * width and kind. */
#define AXLE_STRIP_KIND(n, e, CALL) \
  case e:                           \
    CALL(n, e);                     \
    break;
#define AXLE_STRIP_CASE(n, edge, CALL)            \
  case n:                                         \
    switch (edge) {                               \
      AXLE_STRIP_KIND(n, AXLE_STRIP_INSIDE, CALL) \
      AXLE_STRIP_KIND(n, AXLE_STRIP_LEFT1, CALL)  \
      AXLE_STRIP_KIND(n, AXLE_STRIP_RIGHT1, CALL) \
      AXLE_STRIP_KIND(n, AXLE_STRIP_BOTH1, CALL)  \
      default:                                    \
        CALL(n, AXLE_STRIP_EDGES);                \
        break;                                    \
    }                                             \
    break;

/* The strip's columns [*jlo, *jhi) inside the row, for its edge kind
 * (axle_window_strip_edge): constants unless EDGES. */
static inline void axle_window_strip_cols(int edge, int64_t ix0, int64_t ncols, int64_t w,
                                          int64_t* jlo, int64_t* jhi) {
  const int l1 = edge == AXLE_STRIP_LEFT1 || edge == AXLE_STRIP_BOTH1;
  const int r1 = edge == AXLE_STRIP_RIGHT1 || edge == AXLE_STRIP_BOTH1;
  const int any = edge == AXLE_STRIP_EDGES;
  *jlo = l1 ? 1 : any && ix0 < 0 ? -ix0 : 0;
  *jhi = r1 ? ncols - 1 : any && w - ix0 < ncols ? w - ix0 : ncols;
}

/* Taps of a window that fall inside [-pad, in + pad_end): the divisor of
 * count_include_pad averages. Windows always start at or after -pad, so only
 * the trailing bound (crossed by ceil_mode windows) clips. */
static inline int64_t axle_window_taps_padded(int64_t start, int64_t d, int64_t k, int64_t limit) {
  if (start >= limit) return 0;
  const int64_t n = (limit - 1 - start) / d + 1;
  return n < k ? n : k;
}

/* For the reference kernels, which visit every tap: whether tap t (flat
 * over the kernel) of output position o (flat over the output) lands inside
 * the input plane, and if so its flat offset there. */
static inline int axle_window_tap_offset(const axle_f32_conv_params_t* p, int64_t o, int64_t t,
                                         int64_t* offset) {
  const int64_t o0 = o / (p->out[1] * p->out[2]), o1 = o / p->out[2] % p->out[1];
  const int64_t o2 = o % p->out[2];
  const int64_t t0 = t / (p->kernel[1] * p->kernel[2]);
  const int64_t t1 = t / p->kernel[2] % p->kernel[1], t2 = t % p->kernel[2];
  const int64_t i0 = o0 * p->stride[0] - p->pad[0] + t0 * p->dilation[0];
  const int64_t i1 = o1 * p->stride[1] - p->pad[1] + t1 * p->dilation[1];
  const int64_t i2 = o2 * p->stride[2] - p->pad[2] + t2 * p->dilation[2];
  if (i0 < 0 || i0 >= p->in[0] || i1 < 0 || i1 >= p->in[1] || i2 < 0 || i2 >= p->in[2]) return 0;
  *offset = (i0 * p->in[1] + i1) * p->in[2] + i2;
  return 1;
}

#endif /* AXLE_KERNELS_F32_WINDOW_H_ */
