/*
 * float16 / bfloat16 conversions, bit-exact and independent of compiler
 * support for _Float16. Narrowing rounds to nearest, ties to even (IEEE
 * default and ONNX Cast's rule).
 */
#include <math.h>
#include <string.h>

#include "axle_kernels_elementwise.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t axle_f16_from_f32(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) { /* Inf, or NaN kept quiet with its top payload bits */
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  /* 65520 is the tie between the largest half (65504) and the next binade,
   * whose even neighbour is infinity. */
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) { /* below 2^-14: half subnormal (unit 2^-24) or zero */
    if (ax < 0x33000000u) return sign; /* < 2^-25 rounds to zero; 2^-25 ties to 0 */
    const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e; /* 14..24 */
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
  }
  /* Normal: rebias the exponent (127 - 15) and keep 10 mantissa bits; a
   * rounding carry ripples into the exponent, which is the correct result. */
  uint32_t h = (ax >> 13) - (112u << 10);
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

float axle_f32_from_f16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
    return sign ? -v : v;
  }
  if (e == 31) return f32_from_bits(sign | 0x7f800000u | (m << 13));
  return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t axle_bf16_from_f32(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  /* Adding 0x7fff plus the lowest kept bit rounds ties to even; overflow
   * carries into the exponent and ends at infinity as it should. */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float axle_f32_from_bf16(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* double -> float rounded to odd: truncate, then set the lowest bit when
 * inexact. With at least two spare bits over the final format, a second
 * round-to-nearest-even from this float equals rounding the double once. */
static float f32_round_to_odd(double d) {
  float f = (float)d;
  if ((double)f == d || d != d) return f;
  uint32_t u = f32_bits(f);
  if (fabs((double)f) > fabs(d)) --u; /* rounded away from zero: step back */
  return f32_from_bits(u | 1u);
}

uint16_t axle_f16_from_f64(double d) { return axle_f16_from_f32(f32_round_to_odd(d)); }
uint16_t axle_bf16_from_f64(double d) { return axle_bf16_from_f32(f32_round_to_odd(d)); }
