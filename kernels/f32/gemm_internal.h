/* Internal to the kernels: pieces the GEMM micro-kernels of every ISA share. */
#ifndef AXLE_KERNELS_F32_GEMM_INTERNAL_H_
#define AXLE_KERNELS_F32_GEMM_INTERNAL_H_

#include "axle_kernels.h"

/* Writes the valid mr x nr corner of a full MR x NR accumulator tile into C,
 * honouring the ACCUMULATE/FINISH flags. Edge tiles of every variant end
 * here, so partial tiles share one epilogue implementation. */
void axle_f32_gemm_tile_store(size_t mr, size_t nr, const float* acc, float* c, size_t ldc,
                              uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                              size_t col0);

/* One K block (kb rows of K, however long) in the layout of
 * axle_f32_gemm_pack_a / _pack_b, which cut K into axle_f32_gemm_kc blocks
 * of these: for the driver, whose blocks may be longer. */
void axle_f32_gemm_pack_a_block(size_t m, size_t kb, float alpha, const float* a, size_t a_rs,
                                size_t a_cs, float* packed);
void axle_f32_gemm_pack_b_block(size_t kb, size_t n, const float* b, size_t b_rs, size_t b_cs,
                                float* packed);

/* Where element (row, col) of an m x k matrix lands in its
 * axle_f32_gemm_pack_a layout (for packers that transform as they go). */
size_t axle_f32_gemm_packed_a_index(size_t m, size_t k, size_t row, size_t col);

/* The activation part of an epilogue on one value. Comparisons are written
 * so that NaN passes through, as it does through ONNX Relu/Clip. */
static inline float axle_f32_activate(float v, const axle_f32_epilogue_t* ep) {
  if (v < ep->min) v = ep->min;
  if (v > ep->max) v = ep->max;
  if (ep->leaky && v < 0.0f) v *= ep->leaky_alpha;
  return v;
}

#endif /* AXLE_KERNELS_F32_GEMM_INTERNAL_H_ */
