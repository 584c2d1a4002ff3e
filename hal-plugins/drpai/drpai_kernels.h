/*
 * The arithmetic of the emulated DRP-AI: int8 AI-MAC layers and the DRP's
 * image and tensor operations, on host pointers the engine has already
 * bounds-checked. The rounding rules here are the device's definition
 * (docs/drpai.md, "Arithmetic"); the compiler chooses parameters for them.
 */
#ifndef AXLE_DRPAI_KERNELS_H_
#define AXLE_DRPAI_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_format.h"

/* One aimac_cmd.bin record (DRPAI_C_* indices). */
typedef struct drpai_cmd_t {
  int32_t c[DRPAI_AIMAC_CMD_WORDS];
} drpai_cmd_t;

/* round(v * mult / 2^shift), halves away from zero; shift in 0..62. */
static inline int64_t drpai_requant(int64_t acc, int32_t mult, int32_t shift) {
  int64_t p = acc * (int64_t)mult;
  if (shift == 0) return p;
  int64_t half = (int64_t)1 << (shift - 1);
  return p >= 0 ? (p + half) >> shift : -((-p + half) >> shift);
}

static inline int8_t drpai_sat8(int64_t v, int32_t lo, int32_t hi) {
  return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* Convolution, NCHW int8, weights [cout][cin/group][kh][kw], int32 bias and
 * {mult, shift} per output channel. Padded taps read the input zero point,
 * i.e. contribute nothing. */
void drpai_k_conv(const drpai_cmd_t* c, const int8_t* x, const int8_t* w, const int32_t* bias,
                  const int32_t* requant, int8_t* y);
/* y[n][j] = requant_j(sum_k (x[n][k] - zp) * w[j][k] + bias[j]); rows n,
 * depth cin, cout columns, weights [cout][cin]. */
void drpai_k_gemm(const drpai_cmd_t* c, const int8_t* x, const int8_t* w, const int32_t* bias,
                  const int32_t* requant, int8_t* y);
/* Max / average pooling with the command's window, rescaled by MULT/SHIFT. */
void drpai_k_maxpool(const drpai_cmd_t* c, const int8_t* x, int8_t* y);
void drpai_k_avgpool(const drpai_cmd_t* c, const int8_t* x, int8_t* y);
/* ADD (mul = 0) or MUL (mul = 1) of a and b into y, with the command's
 * shape, broadcast flag and requantization (drpai_format.h). */
void drpai_k_eltwise(const drpai_cmd_t* c, const int8_t* a, const int8_t* b, int mul, int8_t* y);
/* One CONCAT layer: x into its channel range of y. */
void drpai_k_concat(const drpai_cmd_t* c, const int8_t* x, int8_t* y);
/* y[i] = table[x[i] + 128]. */
void drpai_k_lut(const int8_t* x, size_t n, const int8_t* table, int8_t* y);

/* DRP operations. Sizes are pixels; elem = bytes per pixel for crop. */
void drpai_k_crop(const uint8_t* in, uint32_t iw, uint32_t elem, uint32_t x, uint32_t y, uint32_t w,
                  uint32_t h, uint8_t* out);
/* YUY2 (Y0 U Y1 V per pixel pair) -> RGB (fmt 0), BGR (1) or GRAY (2), HWC u8. */
void drpai_k_yuv2rgb(const uint8_t* in, uint32_t w, uint32_t h, uint32_t fmt, uint8_t* out);
/* HWC u8 resize; alg 0 nearest (floor of dst * in / out), 1 bilinear with
 * half-pixel centres. */
void drpai_k_resize(const uint8_t* in, uint32_t iw, uint32_t ih, uint32_t ch, uint8_t* out,
                    uint32_t ow, uint32_t oh, uint32_t alg);
/* out[p][c] = (in[p][c] + add[c]) * mul[c] as float32; in is u8 or f32. */
void drpai_k_scaler(const uint8_t* in, int in_f32, uint32_t pixels, uint32_t ch, const float* add,
                    const float* mul, float* out);
/* HWC <-> CHW of elem-byte elements. */
void drpai_k_transpose(const uint8_t* in, uint32_t w, uint32_t h, uint32_t ch, uint32_t elem,
                       int to_hwc, uint8_t* out);
/* q = clamp(round_half_even(x / scale) + zp, -128, 127), and back. */
void drpai_k_quantize(const float* x, size_t n, float scale, int32_t zp, int8_t* q);
void drpai_k_dequantize(const int8_t* q, size_t n, float scale, int32_t zp, float* x);
void drpai_k_softmax(const float* x, uint32_t outer, uint32_t axis, uint32_t inner, float* y);

#endif /* AXLE_DRPAI_KERNELS_H_ */
