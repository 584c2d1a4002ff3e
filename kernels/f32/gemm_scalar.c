/* Reference GEMM. Rows of C are produced four at a time so every row of B
 * that is loaded feeds four accumulating rows (a 4x register block in spirit;
 * the compiler vectorises the column loop), and columns are blocked so those
 * C rows stay in L1. Optimised ISA variants replace this; keep it simple. */
#include "axle_kernels.h"

#define GEMM_NC 512 /* columns per block: 4 rows x 2 KiB of C in L1 */

static void scale_row(float* restrict c, size_t n, float beta) {
  if (beta == 0.0f) {
    for (size_t j = 0; j < n; ++j) c[j] = 0.0f;
  } else if (beta != 1.0f) {
    for (size_t j = 0; j < n; ++j) c[j] *= beta;
  }
}

/* Rows [i0, i0+rows) of C, columns [j0, j0+nc), B with unit column stride. */
static void gemm_rows_unit(size_t rows, size_t nc, size_t k, float alpha,
                           const float* a, size_t a_rs, size_t a_cs,
                           const float* b, size_t b_rs, float* c, size_t ldc) {
  if (rows == 4) {
    float* restrict c0 = c;
    float* restrict c1 = c + ldc;
    float* restrict c2 = c + 2 * ldc;
    float* restrict c3 = c + 3 * ldc;
    for (size_t p = 0; p < k; ++p) {
      const float a0 = alpha * a[p * a_cs];
      const float a1 = alpha * a[a_rs + p * a_cs];
      const float a2 = alpha * a[2 * a_rs + p * a_cs];
      const float a3 = alpha * a[3 * a_rs + p * a_cs];
      const float* restrict brow = b + p * b_rs;
      for (size_t j = 0; j < nc; ++j) {
        const float bv = brow[j];
        c0[j] += a0 * bv;
        c1[j] += a1 * bv;
        c2[j] += a2 * bv;
        c3[j] += a3 * bv;
      }
    }
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    float* restrict crow = c + r * ldc;
    for (size_t p = 0; p < k; ++p) {
      const float av = alpha * a[r * a_rs + p * a_cs];
      const float* restrict brow = b + p * b_rs;
      for (size_t j = 0; j < nc; ++j) crow[j] += av * brow[j];
    }
  }
}

void axle_f32_gemm_scalar(size_t m, size_t n, size_t k, float alpha,
                          const float* a, size_t a_rs, size_t a_cs,
                          const float* b, size_t b_rs, size_t b_cs,
                          float beta, float* c, size_t ldc) {
  for (size_t i = 0; i < m; ++i) scale_row(c + i * ldc, n, beta);
  /* BLAS semantics: with alpha == 0 neither A nor B is referenced. */
  if (alpha == 0.0f || k == 0) return;

  if (b_cs != 1) {
    /* B accessed down columns (transposed B): dot products read both
     * operands along k. Four columns at a time share each A load and give
     * the CPU four independent accumulation chains. */
    for (size_t i = 0; i < m; ++i) {
      float* crow = c + i * ldc;
      const float* arow = a + i * a_rs;
      size_t j = 0;
      for (; j + 4 <= n; j += 4) {
        const float* b0 = b + j * b_cs;
        const float* b1 = b0 + b_cs;
        const float* b2 = b1 + b_cs;
        const float* b3 = b2 + b_cs;
        float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
        for (size_t p = 0; p < k; ++p) {
          const float av = arow[p * a_cs];
          acc0 += av * b0[p * b_rs];
          acc1 += av * b1[p * b_rs];
          acc2 += av * b2[p * b_rs];
          acc3 += av * b3[p * b_rs];
        }
        crow[j] += alpha * acc0;
        crow[j + 1] += alpha * acc1;
        crow[j + 2] += alpha * acc2;
        crow[j + 3] += alpha * acc3;
      }
      for (; j < n; ++j) {
        const float* bcol = b + j * b_cs;
        float acc = 0.0f;
        for (size_t p = 0; p < k; ++p) acc += arow[p * a_cs] * bcol[p * b_rs];
        crow[j] += alpha * acc;
      }
    }
    return;
  }

  for (size_t j0 = 0; j0 < n; j0 += GEMM_NC) {
    const size_t nc = n - j0 < GEMM_NC ? n - j0 : GEMM_NC;
    size_t i = 0;
    for (; i + 4 <= m; i += 4)
      gemm_rows_unit(4, nc, k, alpha, a + i * a_rs, a_rs, a_cs, b + j0, b_rs,
                     c + i * ldc + j0, ldc);
    if (i < m)
      gemm_rows_unit(m - i, nc, k, alpha, a + i * a_rs, a_rs, a_cs, b + j0, b_rs,
                     c + i * ldc + j0, ldc);
  }
}
