/* Windowed max and average pooling over up to three spatial dimensions. */
#include <math.h>

#include "axle_kernels.h"
#include "window.h"

void axle_f32_maxpool_scalar(const axle_f32_pool_params_t* p, const float* x, float* y,
                             int64_t* indices) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  /* Index multipliers per dimension for the requested storage order. The
   * leading padded dimensions have size 1, so column-major over the padded
   * dimensions equals column-major over the real ones. */
  int64_t mul[AXLE_KERNEL_MAX_SPATIAL];
  if (p->storage_order) {
    mul[0] = 1;
    mul[1] = p->in[0];
    mul[2] = p->in[0] * p->in[1];
  } else {
    mul[0] = p->in[1] * p->in[2];
    mul[1] = p->in[2];
    mul[2] = 1;
  }
  for (int64_t c = 0; c < p->channels; ++c) {
    const float* xc = x + c * in_vol;
    float* yc = y + c * out_vol;
    int64_t* ic = indices ? indices + c * out_vol : NULL;
    for (int64_t o0 = 0; o0 < p->out[0]; ++o0) {
      const int64_t s0 = o0 * p->stride[0] - p->pad[0];
      int64_t lo0, hi0;
      axle_window_taps(s0, p->dilation[0], p->kernel[0], p->in[0], &lo0, &hi0);
      for (int64_t o1 = 0; o1 < p->out[1]; ++o1) {
        const int64_t s1 = o1 * p->stride[1] - p->pad[1];
        int64_t lo1, hi1;
        axle_window_taps(s1, p->dilation[1], p->kernel[1], p->in[1], &lo1, &hi1);
        for (int64_t o2 = 0; o2 < p->out[2]; ++o2) {
          const int64_t s2 = o2 * p->stride[2] - p->pad[2];
          int64_t lo2, hi2;
          axle_window_taps(s2, p->dilation[2], p->kernel[2], p->in[2], &lo2, &hi2);
          /* Strict '>' keeps the first maximum (ONNX Runtime's tie rule) and
           * skips NaN inputs, as the ONNX reference does. */
          float best = -INFINITY;
          int64_t best_i0 = -1, best_i1 = 0, best_i2 = 0;
          for (int64_t t0 = lo0; t0 < hi0; ++t0) {
            const int64_t i0 = s0 + t0 * p->dilation[0];
            for (int64_t t1 = lo1; t1 < hi1; ++t1) {
              const int64_t i1 = s1 + t1 * p->dilation[1];
              const float* xrow = xc + (i0 * p->in[1] + i1) * p->in[2];
              for (int64_t t2 = lo2; t2 < hi2; ++t2) {
                const int64_t i2 = s2 + t2 * p->dilation[2];
                const float v = xrow[i2];
                if (v > best) {
                  best = v;
                  best_i0 = i0;
                  best_i1 = i1;
                  best_i2 = i2;
                } else if (best_i0 < 0) {
                  /* All -inf / NaN so far: still report a tap in the window. */
                  best_i0 = i0;
                  best_i1 = i1;
                  best_i2 = i2;
                }
              }
            }
          }
          const int64_t o = (o0 * p->out[1] + o1) * p->out[2] + o2;
          yc[o] = best;
          if (ic)
            ic[o] = best_i0 < 0 ? -1
                                : c * in_vol + best_i0 * mul[0] + best_i1 * mul[1] +
                                      best_i2 * mul[2];
        }
      }
    }
  }
}

void axle_f32_avgpool_scalar(const axle_f32_pool_params_t* p, const float* x, float* y) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  for (int64_t c = 0; c < p->channels; ++c) {
    const float* xc = x + c * in_vol;
    float* yc = y + c * out_vol;
    for (int64_t o0 = 0; o0 < p->out[0]; ++o0) {
      const int64_t s0 = o0 * p->stride[0] - p->pad[0];
      int64_t lo0, hi0;
      axle_window_taps(s0, p->dilation[0], p->kernel[0], p->in[0], &lo0, &hi0);
      const int64_t n0 =
          p->count_include_pad
              ? axle_window_taps_padded(s0, p->dilation[0], p->kernel[0], p->in[0] + p->pad_end[0])
              : hi0 - lo0;
      for (int64_t o1 = 0; o1 < p->out[1]; ++o1) {
        const int64_t s1 = o1 * p->stride[1] - p->pad[1];
        int64_t lo1, hi1;
        axle_window_taps(s1, p->dilation[1], p->kernel[1], p->in[1], &lo1, &hi1);
        const int64_t n1 = p->count_include_pad
                               ? axle_window_taps_padded(s1, p->dilation[1], p->kernel[1],
                                                         p->in[1] + p->pad_end[1])
                               : hi1 - lo1;
        for (int64_t o2 = 0; o2 < p->out[2]; ++o2) {
          const int64_t s2 = o2 * p->stride[2] - p->pad[2];
          int64_t lo2, hi2;
          axle_window_taps(s2, p->dilation[2], p->kernel[2], p->in[2], &lo2, &hi2);
          const int64_t n2 = p->count_include_pad
                                 ? axle_window_taps_padded(s2, p->dilation[2], p->kernel[2],
                                                           p->in[2] + p->pad_end[2])
                                 : hi2 - lo2;
          float sum = 0.0f;
          for (int64_t t0 = lo0; t0 < hi0; ++t0) {
            const int64_t i0 = s0 + t0 * p->dilation[0];
            for (int64_t t1 = lo1; t1 < hi1; ++t1) {
              const int64_t i1 = s1 + t1 * p->dilation[1];
              const float* xrow = xc + (i0 * p->in[1] + i1) * p->in[2];
              for (int64_t t2 = lo2; t2 < hi2; ++t2) sum += xrow[s2 + t2 * p->dilation[2]];
            }
          }
          const int64_t count = n0 * n1 * n2;
          /* A window entirely outside the counted extent has no defined
           * average; 0 is what the padded-sum view gives. */
          yc[(o0 * p->out[1] + o1) * p->out[2] + o2] = count > 0 ? sum / (float)count : 0.0f;
        }
      }
    }
  }
}

void axle_f32_global_avgpool_scalar(size_t channels, size_t size, const float* x, float* y) {
  for (size_t c = 0; c < channels; ++c) {
    const float* xc = x + c * size;
    /* Whole feature maps can hold 10^5 elements; a float running sum would
     * drift well past ONNX Runtime's (pairwise) error, so accumulate in
     * double. */
    double sum = 0.0;
    for (size_t i = 0; i < size; ++i) sum += xc[i];
    y[c] = size ? (float)(sum / (double)size) : 0.0f;
  }
}

void axle_f32_global_maxpool_scalar(size_t channels, size_t size, const float* x, float* y) {
  for (size_t c = 0; c < channels; ++c) {
    const float* xc = x + c * size;
    float best = -INFINITY;
    for (size_t i = 0; i < size; ++i)
      if (xc[i] > best) best = xc[i];
    y[c] = best;
  }
}
