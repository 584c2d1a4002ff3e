/*
 * N-D plans (axle_nd_t) and the one strided copy kernel every data-movement
 * op goes through.
 */
#include <string.h>

#include "axle_kernels_copy.h"

void axle_nd_contiguous_strides(uint32_t rank, const int64_t* shape, int64_t* strides) {
  int64_t s = 1;
  for (uint32_t d = rank; d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
}

int axle_nd_broadcast_strides(uint32_t out_rank, const int64_t* out_shape, uint32_t rank,
                              const int64_t* shape, int64_t* strides) {
  if (rank > out_rank) return -1;
  const uint32_t lead = out_rank - rank;
  int64_t s = 1;
  for (uint32_t d = out_rank; d-- > 0;) {
    if (d < lead) {
      strides[d] = 0;
      continue;
    }
    const int64_t e = shape[d - lead];
    if (e == out_shape[d]) {
      strides[d] = e == 1 ? 0 : s;
    } else if (e == 1) {
      strides[d] = 0;
    } else {
      return -1;
    }
    s *= e;
  }
  return 0;
}

int64_t axle_nd_count(const axle_nd_t* nd) {
  int64_t n = 1;
  for (uint32_t d = 0; d < nd->rank; ++d) n *= nd->shape[d];
  return n;
}

int64_t axle_nd_simplify(axle_nd_t* nd) {
  const int64_t count = axle_nd_count(nd);
  if (count == 0) {
    nd->rank = 1;
    nd->shape[0] = 0;
    for (uint32_t k = 0; k < nd->ops; ++k) nd->stride[k][0] = 0;
    return 0;
  }
  /* Extent-1 axes never move a pointer, so they only cost loop overhead. */
  uint32_t r = 0;
  for (uint32_t d = 0; d < nd->rank; ++d) {
    if (nd->shape[d] == 1) continue;
    nd->shape[r] = nd->shape[d];
    for (uint32_t k = 0; k < nd->ops; ++k) nd->stride[k][r] = nd->stride[k][d];
    ++r;
  }
  if (r == 0) {
    nd->rank = 1;
    nd->shape[0] = 1;
    for (uint32_t k = 0; k < nd->ops; ++k) nd->stride[k][0] = 1;
    return 1;
  }
  /* Axis d folds into its inner neighbour when every operand steps over the
   * whole inner axis with its outer stride (this includes pure broadcasts:
   * 0 == 0 * n), leaving longer inner runs for the kernels. */
  uint32_t w = r - 1; /* the innermost kept axis is written from the back */
  for (uint32_t d = r - 1; d-- > 0;) {
    int merge = 1;
    for (uint32_t k = 0; k < nd->ops && merge; ++k)
      merge = nd->stride[k][d] == nd->stride[k][w] * nd->shape[w];
    if (merge) {
      nd->shape[w] *= nd->shape[d];
    } else {
      --w;
      nd->shape[w] = nd->shape[d];
      for (uint32_t k = 0; k < nd->ops; ++k) nd->stride[k][w] = nd->stride[k][d];
    }
  }
  /* Compact the kept axes [w, r) to the front. */
  nd->rank = r - w;
  for (uint32_t d = 0; d < nd->rank; ++d) {
    nd->shape[d] = nd->shape[w + d];
    for (uint32_t k = 0; k < nd->ops; ++k) nd->stride[k][d] = nd->stride[k][w + d];
  }
  return count;
}

/* Inner loops with a compile-time element size, so memcpy becomes one load and
 * one store and stays free of alignment assumptions (initializer bytes from a
 * protobuf need not be aligned). */
#define AXLE_COPY_RUN_(ES)                                                              \
  static void copy_run_##ES(char* d, ptrdiff_t ds, const char* s, ptrdiff_t ss, int64_t n) { \
    if (ss == 0) {                                                                      \
      char v[ES];                                                                       \
      memcpy(v, s, ES);                                                                 \
      for (int64_t i = 0; i < n; ++i) memcpy(d + i * ds * ES, v, ES);                   \
    } else {                                                                            \
      for (int64_t i = 0; i < n; ++i) memcpy(d + i * ds * ES, s + i * ss * ES, ES);     \
    }                                                                                   \
  }
AXLE_COPY_RUN_(1)
AXLE_COPY_RUN_(2)
AXLE_COPY_RUN_(4)
AXLE_COPY_RUN_(8)

static void copy_run_any(size_t es, char* d, ptrdiff_t ds, const char* s, ptrdiff_t ss,
                         int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    memmove(d + i * ds * (ptrdiff_t)es, s + i * ss * (ptrdiff_t)es, es);
}

void axle_strided_copy_scalar(const axle_nd_t* nd, size_t es, void* dst, const void* src) {
  const uint32_t last = nd->rank - 1;
  const int64_t n = nd->shape[last];
  if (n == 0 || axle_nd_count(nd) == 0) return;
  const ptrdiff_t ds = (ptrdiff_t)nd->stride[0][last];
  const ptrdiff_t ss = (ptrdiff_t)nd->stride[1][last];
  char* d = dst;
  const char* s = src;
  if (nd->rank == 1 && ds == 1 && ss == 1) {
    if (d != s) memcpy(d, s, (size_t)n * es);
    return;
  }
  const int contiguous = ds == 1 && ss == 1;
  const int64_t outer = axle_nd_outer_count(nd);
  axle_nd_iter_t it;
  axle_nd_iter_init(&it);
  for (int64_t o = 0; o < outer; ++o, axle_nd_iter_next(nd, &it)) {
    char* dp = d + it.off[0] * (ptrdiff_t)es;
    const char* sp = s + it.off[1] * (ptrdiff_t)es;
    if (contiguous) {
      memcpy(dp, sp, (size_t)n * es);
      continue;
    }
    switch (es) {
      case 1: copy_run_1(dp, ds, sp, ss, n); break;
      case 2: copy_run_2(dp, ds, sp, ss, n); break;
      case 4: copy_run_4(dp, ds, sp, ss, n); break;
      case 8: copy_run_8(dp, ds, sp, ss, n); break;
      default: copy_run_any(es, dp, ds, sp, ss, n); break;
    }
  }
}

void axle_copy_bytes_scalar(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes) memcpy(dst, src, bytes);
}
