/*
 * Little-endian access to the K210's in-memory formats (layer words,
 * batch-norm and activation tables, kmodel files). Byte by byte, so the
 * host's endianness and alignment never matter.
 */
#ifndef AXLE_K210_BYTES_H_
#define AXLE_K210_BYTES_H_

#include <stdint.h>
#include <string.h>

static inline uint32_t k210_get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t k210_get_u64(const uint8_t* p) {
  return (uint64_t)k210_get_u32(p) | (uint64_t)k210_get_u32(p + 4) << 32;
}

static inline float k210_get_f32(const uint8_t* p) {
  uint32_t u = k210_get_u32(p);
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline void k210_put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

static inline void k210_put_u64(uint8_t* p, uint64_t v) {
  k210_put_u32(p, (uint32_t)v);
  k210_put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline void k210_put_f32(uint8_t* p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  k210_put_u32(p, u);
}

/* Sign-extends the low `bits` bits of v. */
static inline int64_t k210_sign_extend(uint64_t v, unsigned bits) {
  uint64_t m = 1ull << (bits - 1);
  v &= (bits == 64) ? ~0ull : ((1ull << bits) - 1);
  return (int64_t)((v ^ m) - m);
}

/* offset + size <= limit without overflow. */
static inline int k210_range_ok(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

#endif /* AXLE_K210_BYTES_H_ */
