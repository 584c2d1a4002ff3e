/*
 * Reduction kernels for one dtype (see template_prelude.h):
 * *acc = *acc op reduce(x[0..n)).
 */
#include "template_prelude.h"

/* Floats sum in double: a long row of float32 loses no precision to the
 * running total, matching numpy's pairwise sum closely. Integers sum in the
 * unsigned type of their width, i.e. wrap like Add. */
void AXLE_KNAME(reduce_sum)(const void* vx, size_t n, void* vacc) {
  const AXLE_T* x = vx;
  AXLE_ACC s = 0;
  for (size_t i = 0; i < n; ++i) s += (AXLE_ACC)x[i];
  AXLE_T* acc = vacc;
  *acc = (AXLE_T)((AXLE_ACC)*acc + s);
}

void AXLE_KNAME(reduce_max)(const void* vx, size_t n, void* vacc) {
  const AXLE_T* x = vx;
  AXLE_T m = *(const AXLE_T*)vacc;
  for (size_t i = 0; i < n; ++i) {
#if AXLE_IS_FLOAT
    if (x[i] > m || x[i] != x[i]) m = x[i]; /* NaN propagates */
#else
    if (x[i] > m) m = x[i];
#endif
  }
  *(AXLE_T*)vacc = m;
}
