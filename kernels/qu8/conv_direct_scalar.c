/* The reference quantized convolution: the contract of axle_kernels_qu8.h as
 * plain loops, every tap (padded ones included) visited explicitly, so it
 * shares nothing with the packed fast paths it checks. */
#include "axle_kernels_qu8.h"
#include "requant.h"
#include "../f32/window.h"

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
        int64_t acc = bias ? bias[oc] : 0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t t = 0; t < kvol; ++t) {
            int64_t at;
            const int32_t xv =
                axle_window_tap_offset(p, o, t, &at) ? xg[c * in_vol + at] : x_zero_point;
            acc += (int64_t)(xv - x_zero_point) * wo[c * kvol + t];
          }
        }
        yo[o] = axle_qu8_requant(axle_qu8_wrap(acc), rq->scale[oc], rq);
      }
    }
  }
}
