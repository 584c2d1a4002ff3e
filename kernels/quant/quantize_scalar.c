/*
 * ONNX QuantizeLinear / DequantizeLinear, one (scale, zero point) pair per
 * call: per-axis callers loop over channels.
 */
#include <math.h>

#include "axle_kernels_elementwise.h"

/* nearbyint rounds half to even in the default rounding mode, as ONNX
 * requires. Clamping happens in float before the integer conversion, so
 * huge values and infinities saturate without undefined behaviour. */
#define AXLE_QUANTIZE_KERNEL_(name, T, LO, HI)                                    \
  void axle_f32_quantize_##name##_scalar(const float* x, float scale, int32_t zp, \
                                         void* vy, size_t n) {                    \
    T* y = vy;                                                                    \
    const float z = (float)zp;                                                    \
    for (size_t i = 0; i < n; ++i) {                                              \
      float v = nearbyintf(x[i] / scale) + z;                                     \
      if (v != v) v = z;                                                          \
      v = v < (float)(LO) ? (float)(LO) : v > (float)(HI) ? (float)(HI) : v;      \
      y[i] = (T)v;                                                                \
    }                                                                             \
  }
AXLE_QUANTIZE_KERNEL_(u8, uint8_t, 0, 255)
AXLE_QUANTIZE_KERNEL_(i8, int8_t, -128, 127)
AXLE_QUANTIZE_KERNEL_(u16, uint16_t, 0, 65535)
AXLE_QUANTIZE_KERNEL_(i16, int16_t, -32768, 32767)

/* The subtraction happens in int64: int32 inputs minus a zero point cannot
 * overflow there. */
#define AXLE_DEQUANTIZE_KERNEL_(name, T)                                              \
  void axle_##name##_dequantize_f32_scalar(const void* vx, float scale, int32_t zp,   \
                                           float* y, size_t n) {                      \
    const T* x = vx;                                                                  \
    for (size_t i = 0; i < n; ++i) y[i] = (float)((int64_t)x[i] - zp) * scale;        \
  }
AXLE_DEQUANTIZE_KERNEL_(u8, uint8_t)
AXLE_DEQUANTIZE_KERNEL_(i8, int8_t)
AXLE_DEQUANTIZE_KERNEL_(u16, uint16_t)
AXLE_DEQUANTIZE_KERNEL_(i16, int16_t)
AXLE_DEQUANTIZE_KERNEL_(i32, int32_t)
