/* Direct convolution: the reference for every convolution variant and the
 * fast path for depthwise layers, where im2col would only copy data. */
#include "axle_kernels.h"
#include "window.h"

void axle_f32_conv_direct_scalar(const axle_f32_conv_params_t* p, const float* x,
                                 const float* w, const float* bias, float* y) {
  const int64_t cg = p->in_channels / p->groups;
  const int64_t mg = p->out_channels / p->groups;
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];

  for (int64_t n = 0; n < p->batch; ++n) {
    for (int64_t oc = 0; oc < p->out_channels; ++oc) {
      const int64_t g = oc / mg;
      const float* xg = x + (n * p->in_channels + g * cg) * in_vol;
      const float* wo = w + oc * cg * kvol;
      float* yo = y + (n * p->out_channels + oc) * out_vol;
      const float b = bias ? bias[oc] : 0.0f;
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
            float acc = 0.0f;
            for (int64_t c = 0; c < cg; ++c) {
              const float* xc = xg + c * in_vol;
              const float* wc = wo + c * kvol;
              for (int64_t t0 = lo0; t0 < hi0; ++t0) {
                const int64_t i0 = s0 + t0 * p->dilation[0];
                for (int64_t t1 = lo1; t1 < hi1; ++t1) {
                  const int64_t i1 = s1 + t1 * p->dilation[1];
                  const float* xrow = xc + (i0 * p->in[1] + i1) * p->in[2];
                  const float* wrow = wc + (t0 * p->kernel[1] + t1) * p->kernel[2];
                  for (int64_t t2 = lo2; t2 < hi2; ++t2)
                    acc += xrow[s2 + t2 * p->dilation[2]] * wrow[t2];
                }
              }
            }
            yo[(o0 * p->out[1] + o1) * p->out[2] + o2] = acc + b;
          }
        }
      }
    }
  }
}
