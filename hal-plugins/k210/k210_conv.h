/*
 * The KPU's convolution stage: 1x1 or 3x3 kernels ("same" size output, 3x3
 * padded with pad_value), normal or depthwise, u8 data and u8 weights, then
 * accumulator assembly, batch normalization and activation per output.
 *
 * Two kernels compute the integer sums: a scalar reference that follows the
 * definition tap by tap, and an AVX2 kernel (chosen at run time when the CPU
 * has it) that packs taps in pairs and multiplies with vpmaddwd. Both produce
 * the same 32-bit sums, which the shared post-processing turns into bytes; the
 * tests check them equal.
 */
#ifndef AXLE_K210_CONV_H_
#define AXLE_K210_CONV_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_arith.h"
#include "k210_layer.h"

typedef struct k210_conv_geom_t {
  uint32_t in_ch, out_ch;  /* equal for depthwise */
  uint32_t width, height;  /* input and (pre-pool) output size */
  uint32_t ksize;          /* 1 or 3 */
  int depthwise;
  uint8_t pad_value;       /* what 3x3 kernels read outside the image */
} k210_conv_geom_t;

/* Everything a layer's convolution needs besides its input; owns scratch
 * memory that grows to the largest layer seen. One plan per thread. */
typedef struct k210_conv_plan_t {
  k210_conv_geom_t g;
  const uint8_t* weights;  /* [oc][ic][k][k], or [c][k][k] depthwise */
  int simd;                /* use the AVX2 kernel */
  uint32_t taps;           /* taps per output: ic*k*k, or k*k depthwise */
  uint32_t pairs;          /* taps rounded up to pairs */
  uint32_t rows;           /* packed weight rows (multiple of 4) */
  int64_t* sum_w;          /* [oc] */
  int32_t* wpack;          /* [rows][pairs] int16 pairs (AVX2) */
  int16_t* xpack;          /* [pairs][tile][2] (AVX2) */
  uint8_t* padded;         /* [ic][h+2][w+2] for 3x3 kernels */
  int32_t* dot;            /* [rows][tile] */
  size_t cap_sum_w, cap_wpack, cap_xpack, cap_padded, cap_dot;
} k210_conv_plan_t;

/* 1 when this CPU runs the AVX2 kernel. */
int k210_conv_have_simd(void);

/* Frees the plan's scratch. */
void k210_conv_plan_free(k210_conv_plan_t* plan);

/* Convolution, accumulator assembly, batch normalization and activation of
 * one layer: input is C x H x W (NCHW) u8, out is OC x H x W u8 (before
 * pooling). simd selects the AVX2 kernel when the CPU has it. Returns 0 when
 * scratch memory cannot be allocated. */
int k210_conv_run(k210_conv_plan_t* plan, const k210_conv_geom_t* g, const uint8_t* weights,
                  const k210_acc_args_t* acc, const k210_bn_t* bn, const k210_act_table_t* act,
                  k210_act_rule_t rule, int simd, const uint8_t* input, uint8_t* out);

#endif /* AXLE_K210_CONV_H_ */
