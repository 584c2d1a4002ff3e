/* Packing of GEMM operands into micro-kernel panels (layouts in
 * axle_kernels.h). Packing runs at run time for activations, one K block at
 * a time, and once at compile time for constant weights, over all blocks;
 * the row-contiguous B case (pointwise convolution inputs) is the hot one
 * and reads B row by row, sequentially. */
#include <string.h>

#include "axle_kernels.h"
#include "gemm_internal.h"

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

size_t axle_f32_gemm_packed_a_size(size_t m, size_t k) { return (m + MR - 1) / MR * MR * k; }

size_t axle_f32_gemm_packed_b_size(size_t k, size_t n) { return (n + NR - 1) / NR * NR * k; }

void axle_f32_gemm_pack_a_block(size_t m, size_t kb, float alpha, const float* a, size_t a_rs,
                                size_t a_cs, float* packed) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    axle_f32_gemm_pack_a__avx2(m, kb, alpha, a, a_rs, a_cs, packed);
  else
    axle_f32_gemm_pack_a__scalar(m, kb, alpha, a, a_rs, a_cs, packed);
}

void axle_f32_gemm_pack_a(size_t m, size_t k, float alpha, const float* a, size_t a_rs,
                          size_t a_cs, float* packed) {
  const size_t kc = axle_f32_gemm_kc(k), m_pad = (m + MR - 1) / MR * MR;
  for (size_t p0 = 0; p0 < k; p0 += kc) {
    const size_t kb = k - p0 < kc ? k - p0 : kc;
    axle_f32_gemm_pack_a_block(m, kb, alpha, a + p0 * a_cs, a_rs, a_cs, packed + p0 * m_pad);
  }
}

void axle_f32_gemm_pack_a__scalar(size_t m, size_t k, float alpha, const float* a, size_t a_rs,
                                  size_t a_cs, float* packed) {
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    const size_t rows = m - i0 < MR ? m - i0 : MR;
    float* dst = packed + i0 * k;
    for (size_t p = 0; p < k; ++p, dst += MR) {
      size_t r = 0;
      for (; r < rows; ++r) dst[r] = alpha * a[(i0 + r) * a_rs + p * a_cs];
      for (; r < MR; ++r) dst[r] = 0.0f;
    }
  }
}

void axle_f32_gemm_pack_b__scalar(size_t k, size_t n, const float* b, size_t b_rs, size_t b_cs,
                                  float* packed) {
  const size_t panels = (n + NR - 1) / NR;
  if (b_cs == 1) {
    /* Eight source rows at a time: every panel then receives 8 consecutive
     * NR-float groups (512 contiguous bytes), while the reads stay eight
     * sequential streams. Row-at-a-time would scatter single 64-byte stores
     * kc * 64 bytes apart, all landing in one L1 set. */
    const size_t full = n / NR, tail = n % NR;
    for (size_t p0 = 0; p0 < k; p0 += 8) {
      const size_t rows = k - p0 < 8 ? k - p0 : 8;
      for (size_t q = 0; q < full; ++q) {
        float* dst = packed + q * k * NR + p0 * NR;
        const float* src = b + p0 * b_rs + q * NR;
        for (size_t r = 0; r < rows; ++r) memcpy(dst + r * NR, src + r * b_rs, NR * sizeof(float));
      }
      if (tail) {
        float* dst = packed + full * k * NR + p0 * NR;
        const float* src = b + p0 * b_rs + full * NR;
        for (size_t r = 0; r < rows; ++r) {
          memcpy(dst + r * NR, src + r * b_rs, tail * sizeof(float));
          memset(dst + r * NR + tail, 0, (NR - tail) * sizeof(float));
        }
      }
    }
    return;
  }
  for (size_t q = 0; q < panels; ++q) {
    const size_t j0 = q * NR;
    const size_t cols = n - j0 < NR ? n - j0 : NR;
    float* dst = packed + q * k * NR;
    for (size_t p = 0; p < k; ++p, dst += NR) {
      size_t j = 0;
      for (; j < cols; ++j) dst[j] = b[p * b_rs + (j0 + j) * b_cs];
      for (; j < NR; ++j) dst[j] = 0.0f;
    }
  }
}

void axle_f32_gemm_pack_b_block(size_t kb, size_t n, const float* b, size_t b_rs, size_t b_cs,
                                float* packed) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    axle_f32_gemm_pack_b__avx2(kb, n, b, b_rs, b_cs, packed);
  else
    axle_f32_gemm_pack_b__scalar(kb, n, b, b_rs, b_cs, packed);
}

void axle_f32_gemm_pack_b_kc(size_t k, size_t n, size_t kc, const float* b, size_t b_rs,
                             size_t b_cs, float* packed) {
  const size_t n_pad = (n + NR - 1) / NR * NR;
  for (size_t p0 = 0; p0 < k; p0 += kc) {
    const size_t kb = k - p0 < kc ? k - p0 : kc;
    axle_f32_gemm_pack_b_block(kb, n, b + p0 * b_rs, b_rs, b_cs, packed + p0 * n_pad);
  }
}

void axle_f32_gemm_pack_b(size_t k, size_t n, const float* b, size_t b_rs, size_t b_cs,
                          float* packed) {
  axle_f32_gemm_pack_b_kc(k, n, axle_f32_gemm_kc(k), b, b_rs, b_cs, packed);
}

size_t axle_f32_gemm_packed_a_index(size_t m, size_t k, size_t row, size_t col) {
  const size_t kc = axle_f32_gemm_kc(k), m_pad = (m + MR - 1) / MR * MR;
  const size_t p0 = col / kc * kc, kb = k - p0 < kc ? k - p0 : kc;
  return p0 * m_pad + row / MR * kb * MR + (col - p0) * MR + row % MR;
}
