/* Depthwise convolution over channels-last images: the portable reference
 * (any 2-D window) and the dispatch to the 3x3 vector variants
 * (dwconv_nhwc_avx2.c, dwconv_nhwc_avx512.c).
 *
 * Why channels-last: with a channel plane per row (NCHW), the vector
 * kernels make each tap's shifted input by loads straddling cache lines or
 * by shuffles, and on planes of 14x14 or 7x7 pixels the borders and row
 * ends dominate (7.7-11 ns per 16 outputs measured in MobileNetV2, against
 * 4.5 FMA cycles of arithmetic). With the channels along the vector lanes
 * every tap is one aligned load of 16 neighbouring channels, the same
 * weights serve every pixel, and the borders only drop taps. */
#include "axle_kernels.h"
#include "gemm_internal.h"
#include "window.h"

int axle_f32_dwconv_nhwc_supports(const axle_f32_conv_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->groups == p->in_channels &&
         p->out_channels == p->in_channels && p->pad[1] >= 0 && p->pad[2] >= 0;
}

void axle_f32_dwconv_nhwc__scalar(const axle_f32_conv_params_t* p, const float* x, int64_t x_pixel,
                                  const float* w, const axle_f32_epilogue_t* ep, int64_t oy0,
                                  int64_t oy1, int64_t c0, int64_t c1, int64_t y_pixel,
                                  int64_t y_block, float* y) {
  const int64_t ch = p->in_channels;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const int64_t sy = oy * p->stride[1] - p->pad[1];
    int64_t ky0, ky1;
    axle_window_taps(sy, p->dilation[1], p->kernel[1], p->in[1], &ky0, &ky1);
    for (int64_t ox = 0; ox < p->out[2]; ++ox) {
      const int64_t sx = ox * p->stride[2] - p->pad[2];
      int64_t kx0, kx1;
      axle_window_taps(sx, p->dilation[2], p->kernel[2], p->in[2], &kx0, &kx1);
      float* yo = y + (oy * p->out[2] + ox) * y_pixel;
      for (int64_t c = c0; c < c1; ++c) {
        float acc = 0.0f;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const int64_t iy = sy + ky * p->dilation[1];
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            const int64_t ix = sx + kx * p->dilation[2];
            acc += x[(iy * p->in[2] + ix) * x_pixel + c] * w[(ky * p->kernel[2] + kx) * ch + c];
          }
        }
        yo[c / 16 * y_block + c % 16] =
            axle_f32_activate(acc + (ep->bias ? ep->bias[c] : 0.0f), ep);
      }
    }
  }
}

axle_f32_dwconv_nhwc_fn axle_f32_dwconv_nhwc_kernel(const axle_f32_conv_params_t* p) {
  const int k3 = p->kernel[1] == 3 && p->kernel[2] == 3 && p->dilation[1] == 1 &&
                 p->dilation[2] == 1 && (p->stride[2] == 1 || p->stride[2] == 2);
  const axle_isa_t isa = axle_kernels_isa();
  if (k3 && isa >= AXLE_ISA_AVX512) return axle_f32_dwconv_nhwc_3x3__avx512;
  if (k3 && isa >= AXLE_ISA_AVX2_FMA) return axle_f32_dwconv_nhwc_3x3__avx2_fma;
  return axle_f32_dwconv_nhwc__scalar;
}
