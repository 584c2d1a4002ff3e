/* Int8 quantization helpers of the DRP-AI backend. */
#include "drpai_quant.h"

#include <math.h>

int drpai_quant_multiplier(double m, int32_t* mult, int32_t* shift) {
  *mult = 0;
  *shift = 0;
  if (!(m > 0.0)) return m == 0.0 ? 0 : -1;
  int e;
  double f = frexp(m, &e); /* m = f * 2^e, f in [0.5, 1) */
  int64_t q = llround(f * 2147483648.0);
  if (q == 2147483648LL) {
    q /= 2;
    ++e;
  }
  int s = 31 - e;
  if (s < 0) return -1;
  if (s > 62) return 0; /* below the smallest step: the product is 0 */
  *mult = (int32_t)q;
  *shift = s;
  return 0;
}

void drpai_quant_rows(const float* w, uint32_t rows, uint32_t cols, int8_t* q, float* scales) {
  for (uint32_t r = 0; r < rows; ++r) {
    const float* row = w + (size_t)r * cols;
    float mx = 0.0f;
    for (uint32_t c = 0; c < cols; ++c) mx = fmaxf(mx, fabsf(row[c]));
    /* An all-zero row gets scale 1: its codes are 0 whatever the scale. */
    float s = mx > 0.0f ? mx / 127.0f : 1.0f;
    scales[r] = s;
    for (uint32_t c = 0; c < cols; ++c) {
      float v = nearbyintf(row[c] / s);
      q[(size_t)r * cols + c] = (int8_t)(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
    }
  }
}

void drpai_quant_lut(float in_scale, int32_t in_zp, float out_scale, int32_t out_zp, drpai_act_fn f,
                     const float* args, int8_t table[256]) {
  for (int q = -128; q < 128; ++q) {
    float x = (float)(q - in_zp) * in_scale;
    float y = f(x, args);
    float v = nearbyintf(y / out_scale) + (float)out_zp;
    table[q + 128] = (int8_t)(v < -128.0f ? -128.0f : v > 127.0f ? 127.0f : v);
  }
}
