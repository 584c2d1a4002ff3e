/* The portable GEMM micro-kernel and the tile store every variant uses for
 * edge tiles. Same tile and packed layouts as the SIMD kernels, so packed
 * weights do not depend on the ISA chosen at run time. */
#include <math.h>

#include "gemm_internal.h"

void axle_f32_epilogue_init(axle_f32_epilogue_t* ep) {
  ep->bias = NULL;
  ep->residual = NULL;
  ep->ldr = 0;
  ep->min = -INFINITY;
  ep->max = INFINITY;
  ep->leaky_alpha = 0.0f;
  ep->leaky = 0;
}

void axle_f32_gemm_tile_store(size_t mr, size_t nr, const float* acc, float* c, size_t ldc,
                              uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                              size_t col0) {
  const int finish = (flags & AXLE_F32_GEMM_FINISH) != 0;
  const int accumulate = (flags & AXLE_F32_GEMM_ACCUMULATE) != 0;
  if (flags & AXLE_F32_GEMM_STORE_T) {
    /* Tile column j is a run of mr contiguous floats in stored row col0 + j. */
    for (size_t j = 0; j < nr; ++j) {
      float* crow = c + j * ldc;
      const float b = finish && ep->bias ? ep->bias[col0 + j] : 0.0f;
      const float* res =
          finish && ep->residual ? ep->residual + (col0 + j) * ep->ldr + row0 : NULL;
      for (size_t i = 0; i < mr; ++i) {
        float v = acc[i * AXLE_F32_GEMM_NR + j];
        if (accumulate) v += crow[i];
        if (finish) {
          v += b;
          if (res) v += res[i];
          v = axle_f32_activate(v, ep);
        }
        crow[i] = v;
      }
    }
    return;
  }
  for (size_t i = 0; i < mr; ++i) {
    const float* arow = acc + i * AXLE_F32_GEMM_NR;
    float* crow = c + i * ldc;
    const float b = finish && ep->bias ? ep->bias[row0 + i] : 0.0f;
    const float* res = finish && ep->residual ? ep->residual + (row0 + i) * ep->ldr + col0 : NULL;
    for (size_t j = 0; j < nr; ++j) {
      float v = arow[j];
      if (accumulate) v += crow[j];
      if (finish) {
        v += b;
        if (res) v += res[j];
        v = axle_f32_activate(v, ep);
      }
      crow[j] = v;
    }
  }
}

void axle_f32_gemm_6x16__scalar(size_t mr, size_t nr, size_t kc, const float* a,
                                const float* b, size_t ldb, float* c, size_t ldc,
                                uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                size_t col0) {
  enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };
  float acc[MR * NR] = {0};
  for (size_t p = 0; p < kc; ++p, a += MR, b += ldb)
    for (size_t i = 0; i < MR; ++i)
      for (size_t j = 0; j < NR; ++j) acc[i * NR + j] += a[i] * b[j];
  axle_f32_gemm_tile_store(mr, nr, acc, c, ldc, flags, ep, row0, col0);
}

void axle_f32_gemm_sum__scalar(size_t cols, float* c, const float* parts, size_t part_stride,
                               size_t nparts, const axle_f32_epilogue_t* ep, size_t row) {
  const float* res = ep->residual ? ep->residual + row * ep->ldr : NULL;
  for (size_t q = 0; q < cols; ++q) {
    float v = c[q];
    for (size_t p = 0; p < nparts; ++p) v += parts[p * part_stride + q];
    if (ep->bias) v += ep->bias[row];
    if (res) v += res[q];
    c[q] = axle_f32_activate(v, ep);
  }
}
