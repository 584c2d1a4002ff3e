/* Depthwise quantized convolution, one output plane at a time: the portable
 * variant for any window (1-D to 3-D, dilation, stride, padding). Padded
 * taps read x_zero_point, which the packed term cancels. */
#include "axle_kernels_qu8.h"
#include "requant.h"
#include "../f32/window.h"

void axle_qu8_dwconv_plane__scalar(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                   int32_t x_zero_point, const int16_t* w, int32_t term,
                                   float scale, const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                   void* tmp) {
  (void)tmp;
  const int64_t out_vol = p->out[0] * p->out[1] * p->out[2];
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (int64_t o = 0; o < out_vol; ++o) {
    int64_t acc = term;
    for (int64_t t = 0; t < kvol; ++t) {
      int64_t at;
      acc += (int64_t)(axle_window_tap_offset(p, o, t, &at) ? x_plane[at] : x_zero_point) * w[t];
    }
    y_plane[o] = axle_qu8_requant(axle_qu8_wrap(acc), scale, rq);
  }
}
