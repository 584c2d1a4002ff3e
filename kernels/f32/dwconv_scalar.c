/* Depthwise convolution, one output plane at a time, with the fused
 * epilogue: the portable variant for any window (1-D to 3-D, dilation,
 * stride, padding). */
#include "axle_kernels.h"
#include "gemm_internal.h"
#include "window.h"

void axle_f32_dwconv_plane__scalar(const axle_f32_conv_params_t* p, const float* x_plane,
                                   const float* w, float bias, const float* residual,
                                   const axle_f32_epilogue_t* ep, float* y_plane) {
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
        for (int64_t t0 = lo0; t0 < hi0; ++t0) {
          const int64_t i0 = s0 + t0 * p->dilation[0];
          for (int64_t t1 = lo1; t1 < hi1; ++t1) {
            const int64_t i1 = s1 + t1 * p->dilation[1];
            const float* xrow = x_plane + (i0 * p->in[1] + i1) * p->in[2];
            const float* wrow = w + (t0 * p->kernel[1] + t1) * p->kernel[2];
            for (int64_t t2 = lo2; t2 < hi2; ++t2)
              acc += xrow[s2 + t2 * p->dilation[2]] * wrow[t2];
          }
        }
        const int64_t o = (o0 * p->out[1] + o1) * p->out[2] + o2;
        float v = acc + bias;
        if (residual) v += residual[o];
        y_plane[o] = axle_f32_activate(v, ep);
      }
    }
  }
}
