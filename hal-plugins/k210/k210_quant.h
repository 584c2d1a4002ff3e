/*
 * The compiler's numbers: per-layer u8 weight quantization, the batch-norm
 * stage that carries every channel's scale and bias, and the fit of a
 * monotonic activation (with the output's quantization) to the KPU's 16
 * linear segments.
 *
 * With u8 data x = sx (qx - zx) and weights w = sw (qw - zw), the KPU's
 * arg_x = -zw, arg_w = -zx, arg_add = k*k*zx*zw and pad_value = zx make the
 * accumulator exactly sum((qx - zx)(qw - zw)), so a layer's pre-activation
 * value is y = m[oc] * acc + b[oc] with m = bn_scale * sx * sw. The batch-norm
 * stage turns that into v = y / s_v on an integer grid; the activation table
 * maps v to the output's u8.
 */
#ifndef AXLE_K210_QUANT_H_
#define AXLE_K210_QUANT_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_layer.h"

/* Activations the table can carry: non-decreasing functions. */
typedef enum k210_act_kind_t {
  K210_ACT_IDENTITY,
  K210_ACT_RELU,
  K210_ACT_CLIP,         /* p0 = min, p1 = max */
  K210_ACT_LEAKY_RELU,   /* p0 = alpha >= 0 */
  K210_ACT_SIGMOID,
  K210_ACT_TANH,
  K210_ACT_HARD_SIGMOID, /* p0 = alpha >= 0, p1 = beta */
  K210_ACT_SOFTPLUS,
  K210_ACT_ELU,          /* p0 = alpha >= 0 */
  K210_ACT_SELU,         /* p0 = alpha >= 0, p1 = gamma > 0 */
  K210_ACT_SOFTSIGN
} k210_act_kind_t;

typedef struct k210_act_fn_t {
  k210_act_kind_t kind;
  double p0, p1;
} k210_act_fn_t;

double k210_act_eval(const k210_act_fn_t* f, double y);

/* Asymmetric u8 over [min(w, 0), max(w, 0)]: w ~ scale * (q - zero_point). */
void k210_quantize_weights(const float* w, size_t n, uint8_t* q, double* scale, int32_t* zero_point);

/* Per channel v = ((acc * mul) >> 15) + add ~ (m[oc] * acc + b[oc]) / s_v, with
 * s_v as fine as mul's 24 bits, add's 32 bits and the activation's 36-bit
 * x_start (for |y| <= y_abs_max) allow. */
void k210_fit_batchnorm(const double* m, const double* b, uint32_t channels, double y_abs_max,
                        k210_bn_t* bn, double* s_v);

/* The table mapping v (y = v * s_v) to clamp(f(y) / out_scale + out_zero_point)
 * for y calibrated in [y_lo, y_hi]. Returns the largest deviation of the
 * table's line from the exact function over that range, in output LSBs
 * (before the KPU's final rounding). */
double k210_fit_activation(const k210_act_fn_t* f, double s_v, double y_lo, double y_hi,
                           double out_scale, int32_t out_zero_point, k210_act_table_t* table);

#endif /* AXLE_K210_QUANT_H_ */
