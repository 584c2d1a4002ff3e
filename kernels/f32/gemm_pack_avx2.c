/* AVX2 packing. A row-major A (unit column stride): six rows are read 8
 * floats at a time and transposed in registers into eight MR groups, where
 * the scalar loop would gather one float per row per step; a column-major
 * A moves its MR contiguous floats per K step as vectors. B with unit row
 * stride: see axle_f32_gemm_pack_b__avx2. */
#include <immintrin.h>

#include "axle_kernels.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

enum { MR = AXLE_F32_GEMM_MR };

AXLE_AVX2 static void pack_panel_6x8(const float* a, size_t a_rs, __m256 va, float* dst) {
  const __m256 z = _mm256_setzero_ps();
  const __m256 r0 = _mm256_mul_ps(va, _mm256_loadu_ps(a));
  const __m256 r1 = _mm256_mul_ps(va, _mm256_loadu_ps(a + a_rs));
  const __m256 r2 = _mm256_mul_ps(va, _mm256_loadu_ps(a + 2 * a_rs));
  const __m256 r3 = _mm256_mul_ps(va, _mm256_loadu_ps(a + 3 * a_rs));
  const __m256 r4 = _mm256_mul_ps(va, _mm256_loadu_ps(a + 4 * a_rs));
  const __m256 r5 = _mm256_mul_ps(va, _mm256_loadu_ps(a + 5 * a_rs));
  /* 8x8 transpose with two zero rows; column j = {r0[j] .. r5[j], 0, 0}. */
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, z, 0x44), u5 = _mm256_shuffle_ps(t4, z, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, z, 0x44), u7 = _mm256_shuffle_ps(t5, z, 0xEE);
  const __m256 col[8] = {
      _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
      _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
      _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
      _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
  /* Ascending 8-float stores: each overwrites the previous one's two zero
   * lanes; the last is written as 4 + 2 so nothing lands past the group. */
  for (int j = 0; j < 7; ++j) _mm256_storeu_ps(dst + j * MR, col[j]);
  _mm_storeu_ps(dst + 7 * MR, _mm256_castps256_ps128(col[7]));
  _mm_storel_pi((__m64*)(dst + 7 * MR + 4), _mm256_extractf128_ps(col[7], 1));
}

/* A with unit row stride (the input pixels of a transposed convolution,
 * A = X^T): each K step of a panel is MR consecutive floats, moved as 4 + 2
 * instead of one at a time. */
AXLE_AVX2 static void pack_a_rows_contiguous(size_t m, size_t k, float alpha, const float* a,
                                             size_t a_cs, float* packed) {
  const __m128 va = _mm_set1_ps(alpha);
  const size_t full_rows = m / MR * MR;
  for (size_t i0 = 0; i0 < full_rows; i0 += MR) {
    const float* src = a + i0;
    float* dst = packed + i0 * k;
    for (size_t p = 0; p < k; ++p, src += a_cs, dst += MR) {
      _mm_storeu_ps(dst, _mm_mul_ps(va, _mm_loadu_ps(src)));
      _mm_storel_pi((__m64*)(dst + 4),
                    _mm_mul_ps(va, _mm_loadl_pi(_mm_setzero_ps(), (const __m64*)(src + 4))));
    }
  }
  if (full_rows < m)
    axle_f32_gemm_pack_a__scalar(m - full_rows, k, alpha, a + full_rows, 1, a_cs,
                                 packed + full_rows * k);
}

AXLE_AVX2 void axle_f32_gemm_pack_a__avx2(size_t m, size_t k, float alpha, const float* a,
                                          size_t a_rs, size_t a_cs, float* packed) {
  if (a_rs == 1 && a_cs != 1) {
    pack_a_rows_contiguous(m, k, alpha, a, a_cs, packed);
    return;
  }
  if (a_cs != 1) {
    axle_f32_gemm_pack_a__scalar(m, k, alpha, a, a_rs, a_cs, packed);
    return;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  const size_t full_rows = m / MR * MR;
  for (size_t i0 = 0; i0 < full_rows; i0 += MR) {
    const float* src = a + i0 * a_rs;
    float* dst = packed + i0 * k;
    size_t p = 0;
    for (; p + 8 <= k; p += 8) pack_panel_6x8(src + p, a_rs, va, dst + p * MR);
    for (; p < k; ++p)
      for (size_t r = 0; r < MR; ++r) dst[p * MR + r] = alpha * src[r * a_rs + p];
  }
  if (full_rows < m)
    axle_f32_gemm_pack_a__scalar(m - full_rows, k, alpha, a + full_rows * a_rs, a_rs, a_cs,
                                 packed + full_rows * k);
}

enum { NR = AXLE_F32_GEMM_NR };

/* 8x8 transpose of rows r[0..7] in place. */
AXLE_AVX2 static void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Lanes [0, count) of 8 (count may be <= 0 or >= 8). */
AXLE_AVX2 static inline __m256i first_lanes(ptrdiff_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* B with unit column stride (a pointwise convolution's input, Winograd's
 * V): a panel row is 16 contiguous floats, two vector moves, where the
 * scalar packer's 64-byte memcpy compiles to four SSE moves; eight source
 * rows at a time, for the reason the scalar packer gives. A partial last
 * panel is loaded under a mask, whose zeroed lanes are the padding. */
AXLE_AVX2 static void pack_b_rows(size_t k, size_t n, const float* b, size_t b_rs,
                                  float* packed) {
  const size_t full = n / NR, tail = n % NR;
  const __m256i m0 = first_lanes((ptrdiff_t)tail), m1 = first_lanes((ptrdiff_t)tail - 8);
  for (size_t p0 = 0; p0 < k; p0 += 8) {
    const size_t rows = k - p0 < 8 ? k - p0 : 8;
    for (size_t q = 0; q < full; ++q) {
      float* dst = packed + q * k * NR + p0 * NR;
      const float* src = b + p0 * b_rs + q * NR;
      for (size_t r = 0; r < rows; ++r) {
        _mm256_storeu_ps(dst + r * NR, _mm256_loadu_ps(src + r * b_rs));
        _mm256_storeu_ps(dst + r * NR + 8, _mm256_loadu_ps(src + r * b_rs + 8));
      }
    }
    if (tail) {
      float* dst = packed + full * k * NR + p0 * NR;
      const float* src = b + p0 * b_rs + full * NR;
      for (size_t r = 0; r < rows; ++r) {
        _mm256_storeu_ps(dst + r * NR, _mm256_maskload_ps(src + r * b_rs, m0));
        _mm256_storeu_ps(dst + r * NR + 8, _mm256_maskload_ps(src + r * b_rs + 8, m1));
      }
    }
  }
}

/* B with unit row stride (a transposed operand, e.g. A^T when the driver
 * computes C^T): each panel's 16 columns are contiguous along K, so they
 * are read 8 floats at a time and transposed in registers instead of
 * gathered one float per column and row. */
AXLE_AVX2 void axle_f32_gemm_pack_b__avx2(size_t k, size_t n, const float* b, size_t b_rs,
                                          size_t b_cs, float* packed) {
  if (b_cs == 1) {
    pack_b_rows(k, n, b, b_rs, packed);
    return;
  }
  if (b_rs != 1) {
    axle_f32_gemm_pack_b__scalar(k, n, b, b_rs, b_cs, packed);
    return;
  }
  const size_t full = n / NR * NR;
  for (size_t j0 = 0; j0 < full; j0 += NR) {
    float* dst = packed + j0 * k;
    size_t p = 0;
    for (; p + 8 <= k; p += 8) {
      for (size_t h = 0; h < 2; ++h) {
        __m256 r[8];
        for (size_t c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(b + (j0 + h * 8 + c) * b_cs + p);
        transpose8(r);
        for (size_t q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * NR + h * 8, r[q]);
      }
    }
    for (; p < k; ++p)
      for (size_t c = 0; c < NR; ++c) dst[p * NR + c] = b[(j0 + c) * b_cs + p];
  }
  if (full < n)
    axle_f32_gemm_pack_b__scalar(k, n - full, b + full * b_cs, b_rs, b_cs, packed + full * k);
}
