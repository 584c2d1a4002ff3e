/* The reference quantized convolution: the contract of axle_kernels_qu8.h as
 * plain loops, every tap (padded ones included) visited explicitly, so it
 * shares nothing with the packed fast paths it checks. */
#include "axle_kernels_qu8.h"
#include "requant.h"

void axle_qu8_conv_direct__scalar(const axle_f32_conv_params_t* p, const uint8_t* x,
                                  int32_t x_zero_point, const int8_t* w, const int32_t* bias,
                                  const axle_qu8_requant_t* rq, uint8_t* y) {
  const int64_t cg = p->in_channels / p->groups;
  const int64_t mg = p->out_channels / p->groups;
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (int64_t n = 0; n < p->batch; ++n) {
    for (int64_t oc = 0; oc < p->out_channels; ++oc) {
      const uint8_t* xg = x + (n * p->in_channels + oc / mg * cg) * in_vol;
      const int8_t* wo = w + oc * cg * kvol;
      uint8_t* yo = y + (n * p->out_channels + oc) * out_vol;
      for (int64_t o = 0; o < out_vol; ++o) {
        const int64_t o0 = o / (p->out[1] * p->out[2]), o1 = o / p->out[2] % p->out[1];
        const int64_t o2 = o % p->out[2];
        int64_t acc = bias ? bias[oc] : 0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t t = 0; t < kvol; ++t) {
            const int64_t t0 = t / (p->kernel[1] * p->kernel[2]);
            const int64_t t1 = t / p->kernel[2] % p->kernel[1], t2 = t % p->kernel[2];
            const int64_t i0 = o0 * p->stride[0] - p->pad[0] + t0 * p->dilation[0];
            const int64_t i1 = o1 * p->stride[1] - p->pad[1] + t1 * p->dilation[1];
            const int64_t i2 = o2 * p->stride[2] - p->pad[2] + t2 * p->dilation[2];
            const int inside =
                i0 >= 0 && i0 < p->in[0] && i1 >= 0 && i1 < p->in[1] && i2 >= 0 && i2 < p->in[2];
            const int32_t xv =
                inside ? xg[c * in_vol + (i0 * p->in[1] + i1) * p->in[2] + i2] : x_zero_point;
            acc += (int64_t)(xv - x_zero_point) * wo[c * kvol + t];
          }
        }
        yo[o] = axle_qu8_requant(axle_qu8_wrap(acc), rq->scale[oc], rq);
      }
    }
  }
}
