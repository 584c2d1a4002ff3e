/* Softmax and log-softmax entry points: the variant for axle_kernels_isa()
 * (AVX-512 machines run the AVX2 one: exp and the sums are a small part of
 * what a softmax layer costs next to the passes over memory). */
#include "axle_kernels.h"

void axle_f32_softmax(size_t outer, size_t axis, size_t inner, const float* x, float* y) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    axle_f32_softmax__avx2(outer, axis, inner, x, y);
  else
    axle_f32_softmax_scalar(outer, axis, inner, x, y);
}

void axle_f32_logsoftmax(size_t outer, size_t axis, size_t inner, const float* x, float* y) {
  if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)
    axle_f32_logsoftmax__avx2(outer, axis, inner, x, y);
  else
    axle_f32_logsoftmax_scalar(outer, axis, inner, x, y);
}
