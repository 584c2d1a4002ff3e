/* Private to kernels/f32: the AVX-512 wide GEMM tile the driver runs beside
 * the MR x NR micro-kernel. It reads the same packed layouts, so packed
 * operands do not depend on whether it is used. */
#ifndef AXLE_KERNELS_F32_GEMM_AVX512_H_
#define AXLE_KERNELS_F32_GEMM_AVX512_H_

#include "axle_kernels.h"

/* An MR x 2 NR tile over two adjacent B panels, as the 6x16 micro-kernel
 * applied to columns [0, NR) and [NR, nr): the second panel starts b_next
 * floats after the first (kc * NR when packed, NR when read in place) and
 * has the same ldb. nr is 1..2 NR; a tile of nr <= NR is the 6x16 kernel's.
 * Of the second panel only its first nr - NR columns are read, so a partial
 * one can be read in place; the first must have all NR columns readable. */
typedef void (*axle_f32_gemm_wide_ukernel_fn)(size_t mr, size_t nr, size_t kc, const float* a,
                                              const float* b, size_t ldb, size_t b_next,
                                              float* c, size_t ldc, uint32_t flags,
                                              const axle_f32_epilogue_t* ep, size_t row0,
                                              size_t col0);
void axle_f32_gemm_6x32__avx512(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                                size_t ldb, size_t b_next, float* c, size_t ldc, uint32_t flags,
                                const axle_f32_epilogue_t* ep, size_t row0, size_t col0);

#endif /* AXLE_KERNELS_F32_GEMM_AVX512_H_ */
