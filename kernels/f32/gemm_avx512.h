/* Private to kernels/f32: the AVX-512 wide GEMM tiles the driver runs beside
 * the MR x NR micro-kernel. It reads the same packed layouts, so packed
 * operands do not depend on whether it is used. */
#ifndef AXLE_KERNELS_F32_GEMM_AVX512_H_
#define AXLE_KERNELS_F32_GEMM_AVX512_H_

#include "axle_kernels.h"

/* Up to 2 MR x 2 NR: two adjacent A panels (the second a_next floats after
 * the first: kc * MR when packed) by two adjacent B panels (the second
 * b_next floats after the first: kc * NR when packed, NR when read in
 * place), both with the same ldb. mr is 1..2 MR and nr 1..2 NR; the result
 * is that of the MR x NR micro-kernel on each of the (up to) four quarters.
 * Of the second B panel only its first nr - NR columns are read, so a
 * partial one can be read in place; the first must have all NR columns
 * readable.
 *
 * With AXLE_F32_GEMM_A_BLOCKED in flags, A is read in place from a layout
 * blocked by 16 along K instead of packed: K step q (0..15) of a block
 * holds row i at a[16 i + q], and the next block starts a_next floats on;
 * kc must then be a multiple of 16 and nr more than NR. */
#define AXLE_F32_GEMM_A_BLOCKED 64u
typedef void (*axle_f32_gemm_wide_ukernel_fn)(size_t mr, size_t nr, size_t kc, const float* a,
                                              size_t a_next, const float* b, size_t ldb,
                                              size_t b_next, float* c, size_t ldc,
                                              uint32_t flags, const axle_f32_epilogue_t* ep,
                                              size_t row0, size_t col0);
void axle_f32_gemm_12x32__avx512(size_t mr, size_t nr, size_t kc, const float* a, size_t a_next,
                                 const float* b, size_t ldb, size_t b_next, float* c, size_t ldc,
                                 uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                 size_t col0);

/* `count` full 12 x 32 tiles along a row of C, each as
 * axle_f32_gemm_12x32__avx512 would run it with `flags` (no A blocked):
 * tile t reads B from b + t * b_step and stores C at c + t * c_step,
 * columns col0 + 32 t. For the driver's rows-outer walk, whose tiles past
 * a row's first share their flags: one call for them instead of the
 * driver's tile bookkeeping and the dispatch per tile. */
typedef void (*axle_f32_gemm_wide_run_fn)(size_t count, size_t kc, const float* a, size_t a_next,
                                          const float* b, size_t ldb, size_t b_next, size_t b_step,
                                          float* c, size_t ldc, size_t c_step, uint32_t flags,
                                          const axle_f32_epilogue_t* ep, size_t row0, size_t col0);
void axle_f32_gemm_12x32_run__avx512(size_t count, size_t kc, const float* a, size_t a_next,
                                     const float* b, size_t ldb, size_t b_next, size_t b_step,
                                     float* c, size_t ldc, size_t c_step, uint32_t flags,
                                     const axle_f32_epilogue_t* ep, size_t row0, size_t col0);

#endif /* AXLE_KERNELS_F32_GEMM_AVX512_H_ */
