/* Softmax and log-softmax along the middle axis of [outer, axis, inner].
 * Subtracting the maximum first keeps exp() finite for any input. The
 * strided (inner > 1) case is slow but rare; ONNX opset >= 13 models mostly
 * use the last axis. Safe in place (y == x). */
#include <math.h>

#include "axle_kernels.h"

static float row_max(const float* x, size_t n, size_t stride) {
  float m = -INFINITY;
  for (size_t j = 0; j < n; ++j)
    if (x[j * stride] > m) m = x[j * stride];
  return m;
}

void axle_f32_softmax_scalar(size_t outer, size_t axis, size_t inner, const float* x,
                             float* y) {
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      const float* xr = x + o * axis * inner + i;
      float* yr = y + o * axis * inner + i;
      const float m = row_max(xr, axis, inner);
      float sum = 0.0f;
      for (size_t j = 0; j < axis; ++j) {
        const float e = expf(xr[j * inner] - m);
        yr[j * inner] = e;
        sum += e;
      }
      const float r = 1.0f / sum;
      for (size_t j = 0; j < axis; ++j) yr[j * inner] *= r;
    }
  }
}

void axle_f32_logsoftmax_scalar(size_t outer, size_t axis, size_t inner, const float* x,
                                float* y) {
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      const float* xr = x + o * axis * inner + i;
      float* yr = y + o * axis * inner + i;
      const float m = row_max(xr, axis, inner);
      float sum = 0.0f;
      for (size_t j = 0; j < axis; ++j) sum += expf(xr[j * inner] - m);
      /* (x - m) - log(sum), not x - (m + log(sum)): x - m is exact for the
       * values that matter, so large logits keep their precision. */
      const float ls = logf(sum);
      for (size_t j = 0; j < axis; ++j) yr[j * inner] = (xr[j * inner] - m) - ls;
    }
  }
}
