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

/* A K split's second pass on one stored row of C (cols floats at c, row
 * `row` of the epilogue's bias and residual): adds the other parts' sums
 * (nparts rows of cols floats, parts, parts + part_stride, ...) in order,
 * then the epilogue as the micro-kernels apply it, so every variant gives
 * the same bits. One per ISA, the driver dispatches. */
typedef void (*axle_f32_gemm_sum_fn)(size_t cols, float* c, const float* parts,
                                     size_t part_stride, size_t nparts,
                                     const axle_f32_epilogue_t* ep, size_t row);
void axle_f32_gemm_sum__scalar(size_t cols, float* c, const float* parts, size_t part_stride,
                               size_t nparts, const axle_f32_epilogue_t* ep, size_t row);
void axle_f32_gemm_sum__avx2_fma(size_t cols, float* c, const float* parts, size_t part_stride,
                                 size_t nparts, const axle_f32_epilogue_t* ep, size_t row);
void axle_f32_gemm_sum__avx512(size_t cols, float* c, const float* parts, size_t part_stride,
                               size_t nparts, const axle_f32_epilogue_t* ep, size_t row);

/* The AVX2 6 x 16 tile (axle_f32_gemm_6x16__avx2_fma) with A read in
 * place, blocked by 16 along K as axle_f32_gemm_operand_t.blocked lays it
 * out: a at the tile's first row and K step, K step q of a block holding
 * row i at a[16 i + q], blocks a_next floats apart; kc a multiple of 16,
 * the tile NR columns wide. The driver's path for blocked A at the AVX2
 * level, as the 12 x 32 tile's is at AVX-512. */
typedef void (*axle_f32_gemm_blocked_ukernel_fn)(size_t mr, size_t kc, const float* a,
                                                 size_t a_next, const float* b, size_t ldb,
                                                 float* c, size_t ldc, uint32_t flags,
                                                 const axle_f32_epilogue_t* ep, size_t row0,
                                                 size_t col0);
void axle_f32_gemm_6x16_blocked__avx2_fma(size_t mr, size_t kc, const float* a, size_t a_next,
                                          const float* b, size_t ldb, float* c, size_t ldc,
                                          uint32_t flags, const axle_f32_epilogue_t* ep,
                                          size_t row0, size_t col0);

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

/* The lines of `rows` rows of a tile, ld floats apart, nr floats each: the
 * first, the 16th and the last float of a row cover all its lines. Inlined
 * early on purpose: GCC takes a function that only prefetches for one
 * without effects and drops calls to it. */
__attribute__((always_inline)) static inline void axle_f32_gemm_prefetch_rows(
    const float* p, size_t ld, size_t rows, size_t nr) {
  for (size_t i = 0; i < rows; ++i, p += ld) {
    __builtin_prefetch(p, 0, 3);
    if (nr > AXLE_F32_GEMM_NR) __builtin_prefetch(p + AXLE_F32_GEMM_NR, 0, 3);
    __builtin_prefetch(p + nr - 1, 0, 3);
  }
}

/* The lines a row-major tile's epilogue will load (C's when accumulating,
 * the residual's) and, with PREFETCH_C, those it will only store, fetched
 * before its K loop so that the epilogue does not stall on L2/L3 after it. */
__attribute__((always_inline)) static inline void axle_f32_gemm_prefetch_epilogue(
    size_t rows, size_t nr, const float* c, size_t ldc, uint32_t flags,
    const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
  if (flags & (AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_PREFETCH_C))
    axle_f32_gemm_prefetch_rows(c, ldc, rows, nr);
  if ((flags & AXLE_F32_GEMM_FINISH) && ep && ep->residual)
    axle_f32_gemm_prefetch_rows(ep->residual + row0 * ep->ldr + col0, ep->ldr, rows, nr);
}

/* Whether the GEMM at level isa multiplies at twice AVX2's rate: AVX-512
 * on whole-width FMAs (axle_kernels_wide_fma). The choices that trade
 * multiplies for bytes streamed (Winograd's: conv.c, conv_winograd.c)
 * differ from AVX2's only there. */
static inline int axle_f32_gemm_double_rate(axle_isa_t isa) {
  return isa >= AXLE_ISA_AVX512 && axle_kernels_wide_fma();
}

#endif /* AXLE_KERNELS_F32_GEMM_INTERNAL_H_ */
