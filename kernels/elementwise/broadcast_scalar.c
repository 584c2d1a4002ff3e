/*
 * Drivers that walk an axle_nd_t plan and hand each inner run to a 1-D
 * kernel. The plan is built and simplified at compile time, so the inner runs
 * are as long as the broadcast pattern allows and the per-run overhead is one
 * iterator step.
 */
#include "axle_kernels_elementwise.h"

void axle_nd_binary_scalar(const axle_nd_t* nd, axle_binary_fn fn, void* y, size_t ys,
                           const void* a, size_t as, const void* b, size_t bs) {
  const uint32_t last = nd->rank - 1;
  const int64_t n = nd->shape[last];
  if (n == 0) return;
  const int64_t outer = axle_nd_outer_count(nd);
  axle_nd_iter_t it;
  axle_nd_iter_init(&it);
  for (int64_t o = 0; o < outer; ++o, axle_nd_iter_next(nd, &it)) {
    fn((const char*)a + it.off[1] * (ptrdiff_t)as, (ptrdiff_t)nd->stride[1][last],
       (const char*)b + it.off[2] * (ptrdiff_t)bs, (ptrdiff_t)nd->stride[2][last],
       (char*)y + it.off[0] * (ptrdiff_t)ys, (size_t)n);
  }
}

void axle_nd_where_scalar(const axle_nd_t* nd, axle_where_fn fn, size_t es, void* y,
                          const uint8_t* c, const void* x, const void* z) {
  const uint32_t last = nd->rank - 1;
  const int64_t n = nd->shape[last];
  if (n == 0) return;
  const int64_t outer = axle_nd_outer_count(nd);
  axle_nd_iter_t it;
  axle_nd_iter_init(&it);
  for (int64_t o = 0; o < outer; ++o, axle_nd_iter_next(nd, &it)) {
    fn(c + it.off[1], (ptrdiff_t)nd->stride[1][last],
       (const char*)x + it.off[2] * (ptrdiff_t)es, (ptrdiff_t)nd->stride[2][last],
       (const char*)z + it.off[3] * (ptrdiff_t)es, (ptrdiff_t)nd->stride[3][last],
       (char*)y + it.off[0] * (ptrdiff_t)es, (size_t)n);
  }
}

void axle_nd_reduce_scalar(const axle_nd_t* nd, axle_reduce_fn red, axle_binary_fn acc,
                           size_t es, void* y, const void* x) {
  const uint32_t last = nd->rank - 1;
  const int64_t n = nd->shape[last];
  if (n == 0) return;
  const int reduced_inner = nd->stride[0][last] == 0;
  const int64_t outer = axle_nd_outer_count(nd);
  axle_nd_iter_t it;
  axle_nd_iter_init(&it);
  for (int64_t o = 0; o < outer; ++o, axle_nd_iter_next(nd, &it)) {
    char* yp = (char*)y + it.off[0] * (ptrdiff_t)es;
    const char* xp = (const char*)x + it.off[1] * (ptrdiff_t)es;
    if (reduced_inner)
      red(xp, (size_t)n, yp);
    else
      acc(yp, 1, xp, (ptrdiff_t)nd->stride[1][last], yp, (size_t)n);
  }
}
