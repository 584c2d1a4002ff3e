/* Internal to the kernels: the requantisation of the quantized contract
 * (axle_kernels_qu8.h) on one value, shared by every scalar variant so the
 * reference and the fast paths cannot drift apart, and the scalar operand
 * packing the vector variants share. */
#ifndef AXLE_KERNELS_QU8_REQUANT_H_
#define AXLE_KERNELS_QU8_REQUANT_H_

#include <math.h>
#include <stdint.h>

#include "axle_kernels_qu8.h"

/* Any value this far out clamps to 0 or 255 whatever the zero point, and
 * bounding it first keeps the float -> int conversion defined. */
#define AXLE_QU8_REQUANT_BOUND 1024.0f

/* clamp(nearbyintf(v) + zero_point, lo, hi), v already scaled. */
static inline uint8_t axle_qu8_round_clamp(float v, int32_t zero_point, uint8_t lo, uint8_t hi) {
  float r = nearbyintf(v);
  if (r > AXLE_QU8_REQUANT_BOUND) r = AXLE_QU8_REQUANT_BOUND;
  if (r < -AXLE_QU8_REQUANT_BOUND) r = -AXLE_QU8_REQUANT_BOUND;
  int32_t q = (int32_t)r + zero_point;
  if (q < lo) q = lo;
  if (q > hi) q = hi;
  return (uint8_t)q;
}

/* Runs CALL(k) with k the constant equal to skip (AXLE_QU8_SKIP_* bits),
 * one case per value, so that each road is compiled without the steps it
 * skips. */
/* clang-format off */
#define AXLE_QU8_SKIP_SWITCH(skip, CALL)  \
  switch ((skip) & AXLE_QU8_SKIP_ALL) {   \
    case 0: CALL(0); break;               \
    case 1: CALL(1); break;               \
    case 2: CALL(2); break;               \
    case 3: CALL(3); break;               \
    case 4: CALL(4); break;               \
    case 5: CALL(5); break;               \
    case 6: CALL(6); break;               \
    default: CALL(7); break;              \
  }
/* clang-format on */

static inline uint8_t axle_qu8_requant(int32_t acc, float scale, const axle_qu8_requant_t* rq) {
  return axle_qu8_round_clamp((float)acc * scale, rq->zero_point, rq->min, rq->max);
}

/* A 3x3 depthwise kernel row's taps w[0..2] as the s8 bytes of one int32,
 * the fourth 0: the weight operand of vpdpbusd on a window's byte triple
 * (the AVX-512 and AVX-VNNI depthwise kernels). */
static inline int32_t axle_qu8_dw_row_quad(const int16_t* w) {
  return (int32_t)((uint32_t)(uint8_t)w[0] | (uint32_t)(uint8_t)w[1] << 8 |
                   (uint32_t)(uint8_t)w[2] << 16);
}

/* An int64 sum brought back to int32 modulo 2^32: packed terms may wrap
 * when the bias is near the int32 limits, and the full sum, which the
 * contract bounds, then wraps back. */
static inline int32_t axle_qu8_wrap(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

#endif /* AXLE_KERNELS_QU8_REQUANT_H_ */
