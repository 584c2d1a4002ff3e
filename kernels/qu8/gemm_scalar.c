/* The portable GEMM pieces of the quantized convolution: B packing and the
 * micro-kernels on the int16-pair and byte-quad layouts of
 * axle_kernels_qu8.h, the references the AVX2 and AVX-512 variants must
 * match bit for bit (and what runs a plan's layout below its ISA). */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant.h"

enum { MR = AXLE_QU8_GEMM_MR, NR = AXLE_QU8_GEMM_NR, C4_MR = AXLE_QU8_GEMM_C4_MR };

void axle_qu8_gemm_pack_b_16__scalar(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                     int16_t* packed) {
  const size_t kp = (kc + 1) / 2;
  memset(packed, 0, kp * NR * 2 * sizeof(int16_t));
  for (size_t k = 0; k < kc; ++k) {
    int16_t* d = packed + k / 2 * NR * 2 + k % 2;
    for (size_t j = 0; j < cols; ++j) d[2 * j] = x[k * rs + j];
  }
}

void axle_qu8_gemm_pack_b_1__scalar(size_t kc, const uint8_t* x, size_t rs, int16_t* packed) {
  for (size_t k = 0; k < kc; ++k) packed[k] = x[k * rs];
  if (kc % 2) packed[kc] = 0;
}

void axle_qu8_gemm_6x16__scalar(size_t m, size_t n, size_t kp, const int16_t* a, const int16_t* b,
                                const int32_t* terms, const float* scale,
                                const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      int64_t acc = terms[i];
      for (size_t p = 0; p < kp; ++p) {
        const int16_t* ap = a + ((i / MR * kp + p) * MR + i % MR) * 2;
        const int16_t* bp = b + ((j / NR * kp + p) * NR + j % NR) * 2;
        acc += (int32_t)ap[0] * bp[0] + (int32_t)ap[1] * bp[1];
      }
      y[i * ldy + j] = axle_qu8_requant(axle_qu8_wrap(acc), scale[i], rq);
    }
  }
}

void axle_qu8_gemm_pack_b_16c4__scalar(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                       uint8_t* packed) {
  memset(packed, 0, (kc + 3) / 4 * NR * 4);
  for (size_t k = 0; k < kc; ++k) {
    uint8_t* d = packed + k / 4 * NR * 4 + k % 4;
    for (size_t j = 0; j < cols; ++j) d[4 * j] = x[k * rs + j];
  }
}

void axle_qu8_gemm_pack_b_1c4__scalar(size_t kc, const uint8_t* x, size_t rs, uint8_t* packed) {
  for (size_t k = 0; k < kc; ++k) packed[k] = x[k * rs];
  for (size_t k = kc; k % 4; ++k) packed[k] = 0;
}

void axle_qu8_gemm_12x16c4__scalar(size_t m, size_t n, size_t kq, const int8_t* a, const uint8_t* b,
                                   const int32_t* terms, const float* scale,
                                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy) {
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      int64_t acc = terms[i];
      for (size_t p = 0; p < kq; ++p) {
        const int8_t* ap = a + ((i / C4_MR * kq + p) * C4_MR + i % C4_MR) * 4;
        const uint8_t* bp = b + ((j / NR * kq + p) * NR + j % NR) * 4;
        for (int t = 0; t < 4; ++t) acc += (int32_t)ap[t] * bp[t];
      }
      y[i * ldy + j] = axle_qu8_requant(axle_qu8_wrap(acc), scale[i], rq);
    }
  }
}
