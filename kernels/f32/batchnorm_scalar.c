/* Inference batch normalisation as a per-channel affine map. Folding the
 * statistics once (at compile time when they are constants) turns the run
 * into one multiply-add per element. */
#include <math.h>

#include "axle_kernels.h"

void axle_f32_batchnorm_fold_scalar(size_t channels, const float* gamma, const float* beta,
                                    const float* mean, const float* var, float epsilon,
                                    float* scale, float* shift) {
  for (size_t c = 0; c < channels; ++c) {
    /* Double keeps the fold itself from adding error on top of the
     * reassociation (x - mean) * s -> x * s - mean * s. */
    const double s = (double)gamma[c] / sqrt((double)var[c] + (double)epsilon);
    scale[c] = (float)s;
    shift[c] = (float)((double)beta[c] - (double)mean[c] * s);
  }
}

void axle_f32_channel_affine_scalar(size_t batch, size_t channels, size_t size,
                                    const float* x, const float* scale,
                                    const float* shift, float* y) {
  for (size_t n = 0; n < batch; ++n) {
    for (size_t c = 0; c < channels; ++c) {
      const float s = scale[c], b = shift[c];
      const float* xc = x + (n * channels + c) * size;
      float* yc = y + (n * channels + c) * size;
      for (size_t i = 0; i < size; ++i) yc[i] = xc[i] * s + b;
    }
  }
}
