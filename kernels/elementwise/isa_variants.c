/* Reference kernel -> the variant axle_kernels_isa() runs, for the
 * elementwise families whose kernels are chosen by function pointer (the
 * CPU plugin's op tables hold the references, generated per dtype from the
 * templates, and ask here once per op at prepare). */
#include "axle_kernels.h"
#include "axle_kernels_elementwise.h"

#define AXLE_PAIR_(op) {axle_f32_##op##_scalar, axle_f32_##op##__avx2},

static const struct {
  axle_binary_fn reference, avx2;
} k_binary_avx2[] = {AXLE_F32_BINARY_AVX2_OPS(AXLE_PAIR_)};

static const struct {
  axle_unary_fn reference, avx2;
} k_unary_avx2[] = {AXLE_F32_UNARY_AVX2_OPS(AXLE_PAIR_)};

#define AXLE_PAIR_AVX512_(op) {axle_f32_##op##_scalar, axle_f32_##op##__avx512},

static const struct {
  axle_unary_fn reference, avx512;
} k_unary_avx512[] = {AXLE_F32_UNARY_AVX512_OPS(AXLE_PAIR_AVX512_)};

axle_binary_fn axle_binary_kernel_for_isa(axle_binary_fn reference) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    for (size_t i = 0; i < sizeof k_binary_avx2 / sizeof k_binary_avx2[0]; ++i)
      if (k_binary_avx2[i].reference == reference) return k_binary_avx2[i].avx2;
  return reference;
}

axle_unary_fn axle_unary_kernel_for_isa(axle_unary_fn reference) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX512)
    for (size_t i = 0; i < sizeof k_unary_avx512 / sizeof k_unary_avx512[0]; ++i)
      if (k_unary_avx512[i].reference == reference) return k_unary_avx512[i].avx512;
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    for (size_t i = 0; i < sizeof k_unary_avx2 / sizeof k_unary_avx2[0]; ++i)
      if (k_unary_avx2[i].reference == reference) return k_unary_avx2[i].avx2;
  return reference;
}
