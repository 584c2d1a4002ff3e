/* The reference row-vector product (axle_f32_gemv_1x16__scalar): the
 * order of operations every variant reproduces, lane by lane. fmaf, not
 * a * b + c, so that the result does not depend on whether the compiler
 * contracts. */
#include <math.h>

#include "axle_kernels.h"

enum { NR = AXLE_F32_GEMM_NR };

void axle_f32_gemv_1x16__scalar(size_t kb, size_t n, const float* x, const float* b, float* y,
                                int accumulate) {
  for (size_t j0 = 0; j0 < n; j0 += NR, b += kb * NR) {
    const size_t cols = n - j0 < NR ? n - j0 : NR;
    for (size_t j = 0; j < cols; ++j) {
      float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (size_t p = 0; p < kb; ++p) s[p % 4] = fmaf(x[p], b[p * NR + j], s[p % 4]);
      const float v = (s[0] + s[1]) + (s[2] + s[3]);
      y[j0 + j] = accumulate ? y[j0 + j] + v : v;
    }
  }
}
