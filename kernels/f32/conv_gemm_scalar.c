/* Convolution lowered to GEMM: per image and group, unfold the input into a
 * [channels * kernel volume, output volume] matrix (im2col) and multiply the
 * group's filters [out channels, channels * kernel volume] by it. Pointwise
 * convolutions skip the unfold because the input already has that layout. */
#include <string.h>

#include "axle_kernels.h"
#include "window.h"

static int conv_is_pointwise(const axle_f32_conv_params_t* p) {
  for (int d = 0; d < AXLE_KERNEL_MAX_SPATIAL; ++d)
    if (p->kernel[d] != 1 || p->stride[d] != 1 || p->pad[d] != 0 || p->in[d] != p->out[d])
      return 0;
  return 1;
}

void axle_f32_im2col_scalar(const axle_f32_conv_params_t* p, const float* x_image,
                            int64_t channels, float* col) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  float* row = col;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x_image + c * in_vol;
    for (int64_t k0 = 0; k0 < p->kernel[0]; ++k0) {
      for (int64_t k1 = 0; k1 < p->kernel[1]; ++k1) {
        for (int64_t k2 = 0; k2 < p->kernel[2]; ++k2, row += out_vol) {
          float* dst = row;
          for (int64_t o0 = 0; o0 < p->out[0]; ++o0) {
            const int64_t i0 = o0 * p->stride[0] - p->pad[0] + k0 * p->dilation[0];
            if (i0 < 0 || i0 >= p->in[0]) {
              memset(dst, 0, (size_t)(p->out[1] * p->out[2]) * sizeof(float));
              dst += p->out[1] * p->out[2];
              continue;
            }
            for (int64_t o1 = 0; o1 < p->out[1]; ++o1, dst += p->out[2]) {
              const int64_t i1 = o1 * p->stride[1] - p->pad[1] + k1 * p->dilation[1];
              if (i1 < 0 || i1 >= p->in[1]) {
                memset(dst, 0, (size_t)p->out[2] * sizeof(float));
                continue;
              }
              const float* xrow = xc + (i0 * p->in[1] + i1) * p->in[2];
              /* Output columns whose tap lands inside the row: o2 in [lo, hi). */
              const int64_t start = k2 * p->dilation[2] - p->pad[2];
              int64_t lo = 0, hi = p->out[2];
              while (lo < hi && start + lo * p->stride[2] < 0) ++lo;
              while (hi > lo && start + (hi - 1) * p->stride[2] >= p->in[2]) --hi;
              for (int64_t o2 = 0; o2 < lo; ++o2) dst[o2] = 0.0f;
              if (p->stride[2] == 1) {
                if (hi > lo)
                  memcpy(dst + lo, xrow + start + lo, (size_t)(hi - lo) * sizeof(float));
              } else {
                for (int64_t o2 = lo; o2 < hi; ++o2) dst[o2] = xrow[start + o2 * p->stride[2]];
              }
              for (int64_t o2 = hi; o2 < p->out[2]; ++o2) dst[o2] = 0.0f;
            }
          }
        }
      }
    }
  }
}

size_t axle_f32_conv_gemm_scratch_size(const axle_f32_conv_params_t* p) {
  if (conv_is_pointwise(p)) return 0;
  const int64_t cg = p->in_channels / p->groups;
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  return (size_t)(cg * kvol * out_vol) * sizeof(float);
}

void axle_f32_conv_gemm_scalar(const axle_f32_conv_params_t* p, const float* x,
                               const float* w, const float* bias, float* y,
                               void* scratch) {
  const int64_t cg = p->in_channels / p->groups;
  const int64_t mg = p->out_channels / p->groups;
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  const int64_t kdim = cg * p->kernel[0] * p->kernel[1] * p->kernel[2];
  const int pointwise = conv_is_pointwise(p);

  for (int64_t n = 0; n < p->batch; ++n) {
    for (int64_t g = 0; g < p->groups; ++g) {
      const float* xg = x + (n * p->in_channels + g * cg) * in_vol;
      const float* col = xg;
      if (!pointwise) {
        axle_f32_im2col_scalar(p, xg, cg, (float*)scratch);
        col = (const float*)scratch;
      }
      float* yg = y + (n * p->out_channels + g * mg) * out_vol;
      float beta = 0.0f;
      if (bias) {
        for (int64_t m = 0; m < mg; ++m) {
          const float b = bias[g * mg + m];
          float* yrow = yg + m * out_vol;
          for (int64_t i = 0; i < out_vol; ++i) yrow[i] = b;
        }
        beta = 1.0f;
      }
      axle_f32_gemm_scalar((size_t)mg, (size_t)out_vol, (size_t)kdim, 1.0f,
                           w + g * mg * kdim, (size_t)kdim, 1, col, (size_t)out_vol, 1,
                           beta, yg, (size_t)out_vol);
    }
  }
}
