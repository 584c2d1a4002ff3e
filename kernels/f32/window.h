/* Internal to the kernels: sliding-window arithmetic shared by convolution and
 * pooling. Computing the valid tap range once per output position keeps the
 * bounds test out of the innermost loops. */
#ifndef AXLE_KERNELS_F32_WINDOW_H_
#define AXLE_KERNELS_F32_WINDOW_H_

#include <stdint.h>

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

#endif /* AXLE_KERNELS_F32_WINDOW_H_ */
