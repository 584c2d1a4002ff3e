/*
 * Int8 quantization as the DRP-AI backend uses it. Activations: the core's
 * per-tensor calibration is asymmetric uint8 (scale s, zero point z in
 * 0..255); the AI-MAC computes in int8, so a value q8 = q_u8 - 128 with zero
 * point z - 128 represents exactly the same real numbers. Weights: symmetric
 * int8 per output channel, chosen here. Rescaling uses a 31-bit multiplier
 * and a right shift (drpai_requant()).
 */
#ifndef AXLE_DRPAI_QUANT_H_
#define AXLE_DRPAI_QUANT_H_

#include <stddef.h>
#include <stdint.h>

/* m >= 0 as mult / 2^shift with mult < 2^31 and shift in 0..62; returns -1
 * when m is too large to represent (>= 2^31). */
int drpai_quant_multiplier(double m, int32_t* mult, int32_t* shift);

/* Quantizes rows x cols floats row by row (one scale per row, symmetric,
 * -127..127): q and scales are outputs. */
void drpai_quant_rows(const float* w, uint32_t rows, uint32_t cols, int8_t* q, float* scales);

/* An activation applied through a 256-entry table from the input's to the
 * output's quantization. */
typedef float (*drpai_act_fn)(float x, const float* args);
void drpai_quant_lut(float in_scale, int32_t in_zp, float out_scale, int32_t out_zp, drpai_act_fn f,
                     const float* args, int8_t table[256]);

#endif /* AXLE_DRPAI_QUANT_H_ */
