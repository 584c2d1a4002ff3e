/* Internal to the kernels: the row buffer of a band walk (conv_chain.c,
 * conv_pool.c), which holds rows [held0, held1) of a map, `w` floats each,
 * per channel `stride` floats apart. */
#ifndef AXLE_KERNELS_F32_BAND_ROWS_H_
#define AXLE_KERNELS_F32_BAND_ROWS_H_

#include <stdint.h>
#include <string.h>

/* The next band needs rows from r0 on: the held rows among them move to the
 * buffer's top, so they are not computed again. Returns how many are
 * held (they then stand for rows [r0, r0 + kept)). */
static inline int64_t axle_band_keep_rows(float* buf, size_t stride, int64_t channels, int64_t w,
                                          int64_t held0, int64_t held1, int64_t r0) {
  const int64_t keep = held1 > r0 && r0 >= held0 ? held1 - r0 : 0;
  if (keep && r0 > held0)
    for (int64_t ch = 0; ch < channels; ++ch)
      memmove(buf + (size_t)ch * stride, buf + (size_t)ch * stride + (size_t)((r0 - held0) * w),
              (size_t)(keep * w) * sizeof(float));
  return keep;
}

#endif /* AXLE_KERNELS_F32_BAND_ROWS_H_ */
