/* Row lookup for per-dtype kernel tables built from AXLE_ARITH_DTYPES. */
#include "axle_kernels_elementwise.h"

#define AXLE_ARITH_CODE_(dt, T, code) code,
static const int32_t k_codes[] = {AXLE_ARITH_DTYPES(AXLE_ARITH_CODE_)};

int axle_arith_dtype_index(int32_t dtype) {
  for (int i = 0; i < AXLE_ARITH_DTYPE_COUNT; ++i)
    if (k_codes[i] == dtype) return i;
  return -1;
}
