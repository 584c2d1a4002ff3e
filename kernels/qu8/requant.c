/* The quantized output stage's set-up (axle_kernels_qu8.h). */
#include "axle_kernels_qu8.h"

void axle_qu8_requant_init(axle_qu8_requant_t* rq, const float* scale, size_t channels,
                           int32_t zero_point, uint8_t min, uint8_t max) {
  rq->scale = scale;
  rq->zero_point = zero_point;
  rq->min = min;
  rq->max = max;
  /* A scale below 1 is at most 1 - 2^-24, and (float)acc at most 2^31 in
   * magnitude, so the product rounds to at most 2^31 - 128: inside int32.
   * NaN compares false and keeps the cap. */
  int below_one = 1;
  for (size_t c = 0; c < channels; ++c)
    if (!(scale[c] < 1.0f)) below_one = 0;
  rq->skip = (uint8_t)((below_one ? AXLE_QU8_SKIP_CAP : 0) |
                       (zero_point == 0 ? AXLE_QU8_SKIP_ZERO_POINT : 0) |
                       (min == 0 && max == 255 ? AXLE_QU8_SKIP_CLAMP : 0));
}
