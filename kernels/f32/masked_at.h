/* Internal to kernels/f32: the address and the lanes of a masked vector
 * access. A masked load or store touches nothing in the lanes left out, so
 * its address may lie before or past the row, even outside the plane,
 * where pointer arithmetic would be undefined: it goes through uintptr_t. */
#ifndef AXLE_KERNELS_F32_MASKED_AT_H_
#define AXLE_KERNELS_F32_MASKED_AT_H_

#include <stdint.h>

/* base + i floats. */
static inline const float* axle_f32_masked_at(const float* base, int64_t i) {
  return (const float*)((uintptr_t)base + (uintptr_t)(i * (int64_t)sizeof(float)));
}

/* Of 16 lanes from column c, those with 0 <= c + lane < width (an AVX-512
 * opmask). */
static inline uint16_t axle_f32_lanes16_inside(int64_t c, int64_t width) {
  const int64_t lo = c < 0 ? -c : 0, hi = width - c;
  if (lo >= 16 || hi <= lo) return 0;
  const uint32_t below_hi = hi >= 16 ? 0xFFFFu : (1u << hi) - 1;
  return (uint16_t)(below_hi & ~((1u << lo) - 1));
}

#endif /* AXLE_KERNELS_F32_MASKED_AT_H_ */
