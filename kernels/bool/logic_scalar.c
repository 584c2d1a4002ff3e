/* Boolean kernels. Bool tensors are bytes; any non-zero byte counts as true
 * and results are canonical 0/1. */
#include "axle_kernels_elementwise.h"

void axle_bool_not_scalar(const void* vx, void* vy, size_t n, const void* p) {
  (void)p;
  const uint8_t* x = vx;
  uint8_t* y = vy;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] == 0;
}
