/*
 * The KPU's per-output arithmetic after the convolution sums: accumulator
 * assembly, batch normalization, the 16-segment activation and the ten pool
 * types. Semantics are those of the public simulators (nncase's k210
 * kernels); DESIGN.md section 6 states them. All 64-bit steps wrap (two's
 * complement), which keeps out-of-range programs defined; programs within the
 * fields' documented ranges never wrap.
 */
#ifndef AXLE_K210_ARITH_H_
#define AXLE_K210_ARITH_H_

#include <stdint.h>

#include "k210_layer.h"

/* The two published activation rules. Real-chip bit truth is unpublished;
 * Axle defaults to V02. */
typedef enum k210_act_rule_t {
  /* nncase v0.2: highest segment i with v > x_start[i]; the product is
   * shifted with nncase's round-half-to-even (which, as implemented, steps
   * negative results one further toward -inf). */
  K210_ACT_RULE_V02 = 0,
  /* nncase v0.1 and the vendor SDK: highest segment with x_start[i] <= v;
   * carry shift (add half, then floor). */
  K210_ACT_RULE_V01 = 1
} k210_act_rule_t;

static inline int64_t k210_wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t k210_wrap_sub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
static inline int64_t k210_wrap_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* nncase v0.2's "banker" shift, reproduced with its sign handling.
 * Shifts above 63 act as 63 (the simulator leaves them undefined). */
static inline int64_t k210_shift_round_even(int64_t value, unsigned shift) {
  if (shift == 0) return value;
  if (shift > 63) shift = 63;
  int64_t integral = value >> shift;
  uint64_t fractional = (uint64_t)value & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  /* The published code rounds up from the floor by adding the value's sign
   * rather than 1, so a negative value that should round up lands one below
   * the floor instead. Reproduced on purpose: it is what the simulator
   * computes (DESIGN.md: "rounds negative ties toward -inf"). */
  int64_t step = value < 0 ? -1 : 1;
  /* Written without branches: the emulator runs this once per output. */
  int64_t up = (fractional > half) | ((fractional == half) & (int64_t)(integral & 1));
  return k210_wrap_add(integral, up * step);
}

/* Carry shift: (value + 2^(shift-1)) >> shift, floor. */
static inline int64_t k210_shift_carry(int64_t value, unsigned shift) {
  if (shift == 0) return value;
  if (shift > 63) shift = 63;
  return k210_wrap_add(value, (int64_t)(1ull << (shift - 1))) >> shift;
}

/* acc = dot + ((arg_x * sum_x) >> shr_x) + ((arg_w * sum_w) >> shr_w) + arg_add * g_ic */
typedef struct k210_acc_args_t {
  int64_t arg_x, arg_w, arg_add;
  unsigned shr_x, shr_w;
  int64_t g_ic;            /* 1 for depthwise layers, else the input channel count */
} k210_acc_args_t;

static inline int64_t k210_accumulate(const k210_acc_args_t* a, int64_t dot, int64_t sum_x,
                                      int64_t sum_w) {
  int64_t v = k210_wrap_add(dot, k210_wrap_mul(a->arg_x, sum_x) >> a->shr_x);
  v = k210_wrap_add(v, k210_wrap_mul(a->arg_w, sum_w) >> a->shr_w);
  return k210_wrap_add(v, k210_wrap_mul(a->arg_add, a->g_ic));
}

/* v = ((acc * mul) >> shift) + add */
static inline int64_t k210_batchnorm(const k210_bn_t* bn, int64_t acc) {
  return k210_wrap_add(k210_wrap_mul(acc, bn->mul) >> bn->shift, bn->add);
}

/* Index of the segment the rule picks for v; 0 when none qualifies (the
 * simulators leave that case undefined). */
int k210_act_select(const k210_act_table_t* t, int64_t v, k210_act_rule_t rule);
/* Tables whose x_start never decreases (every table a compiler writes) let
 * a branch-free count pick the same segment as k210_act_select. */
int k210_act_ascending(const k210_act_table_t* t);
static inline int k210_act_select_ascending(const k210_act_table_t* t, int64_t v, k210_act_rule_t rule) {
  /* The qualifying segments form a prefix of an ascending table: count
   * them, without branches. */
  int count = 0;
  if (rule == K210_ACT_RULE_V02) {
#pragma GCC unroll 16
    for (int i = 0; i < K210_ACT_SEGMENTS; ++i) count += v > t->seg[i].x_start;
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < K210_ACT_SEGMENTS; ++i) count += t->seg[i].x_start <= v;
  }
  return count ? count - 1 : 0;
}

/* clamp(shift((v - x_start) * y_mul) + bias, 0, 255) on segment i. */
static inline uint8_t k210_act_output(const k210_act_table_t* t, int i, int64_t v, k210_act_rule_t rule) {
  const k210_act_segment_t* s = &t->seg[i];
  int64_t prod = k210_wrap_mul(k210_wrap_sub(v, s->x_start), s->y_mul);
  int64_t y = rule == K210_ACT_RULE_V02 ? k210_shift_round_even(prod, s->shift)
                                        : k210_shift_carry(prod, s->shift);
  y = k210_wrap_add(y, t->bias[i]);
  return (uint8_t)(y < 0 ? 0 : y > 255 ? 255 : y);
}
/* k210_act_output of the selected segment. */
static inline uint8_t k210_activate(const k210_act_table_t* t, int64_t v, k210_act_rule_t rule) {
  return k210_act_output(t, k210_act_select(t, v, rule), v, rule);
}

/* Pool geometry: window size and stride; output = input / stride. */
uint32_t k210_pool_window(int pool_type);
uint32_t k210_pool_stride(int pool_type);
/* Pools c planes of h x w (NCHW) into c planes of (h / s) x (w / s).
 * Max pools take 0 for taps outside the plane, mean pools repeat the edge and
 * divide with truncation, the pick pools take 0 outside. */
void k210_pool(const uint8_t* in, uint32_t w, uint32_t h, uint32_t c, int pool_type, uint8_t* out);

#endif /* AXLE_K210_ARITH_H_ */
