/* Depthwise quantized convolution, one output plane at a time: the portable
 * variant for any window (1-D to 3-D, dilation, stride, padding). Padded
 * taps read x_zero_point, which the packed term cancels. */
#include "axle_kernels_qu8.h"
#include "requant.h"

void axle_qu8_dwconv_plane__scalar(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                   int32_t x_zero_point, const int16_t* w, int32_t term,
                                   float scale, const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                   void* tmp) {
  (void)tmp;
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (int64_t o = 0; o < out_vol; ++o) {
    const int64_t o0 = o / (p->out[1] * p->out[2]), o1 = o / p->out[2] % p->out[1];
    const int64_t o2 = o % p->out[2];
    int64_t acc = term;
    for (int64_t t = 0; t < kvol; ++t) {
      const int64_t t0 = t / (p->kernel[1] * p->kernel[2]);
      const int64_t t1 = t / p->kernel[2] % p->kernel[1], t2 = t % p->kernel[2];
      const int64_t i0 = o0 * p->stride[0] - p->pad[0] + t0 * p->dilation[0];
      const int64_t i1 = o1 * p->stride[1] - p->pad[1] + t1 * p->dilation[1];
      const int64_t i2 = o2 * p->stride[2] - p->pad[2] + t2 * p->dilation[2];
      const int inside =
          i0 >= 0 && i0 < p->in[0] && i1 >= 0 && i1 < p->in[1] && i2 >= 0 && i2 < p->in[2];
      acc +=
          (int64_t)(inside ? x_plane[(i0 * p->in[1] + i1) * p->in[2] + i2] : x_zero_point) * w[t];
    }
    y_plane[o] = axle_qu8_requant(axle_qu8_wrap(acc), scale, rq);
  }
}
