/* Where: a select by element width, shared by every dtype of that width. */
#include "axle_kernels_elementwise.h"

#define AXLE_WHERE_KERNEL_(w, T)                                                         \
  void axle_##w##_where_scalar(const uint8_t* c, ptrdiff_t sc, const void* vx, ptrdiff_t sx, \
                               const void* vz, ptrdiff_t sz, void* vy, size_t n) {      \
    const T* x = vx;                                                                     \
    const T* z = vz;                                                                     \
    T* y = vy;                                                                           \
    for (size_t i = 0; i < n; ++i) {                                                     \
      const ptrdiff_t k = (ptrdiff_t)i;                                                  \
      y[i] = c[k * sc] ? x[k * sx] : z[k * sz];                                          \
    }                                                                                    \
  }
AXLE_WIDTHS(AXLE_WHERE_KERNEL_)

axle_where_fn axle_where_for_width(size_t elem_size) {
  switch (elem_size) {
    case 1: return axle_x8_where_scalar;
    case 2: return axle_x16_where_scalar;
    case 4: return axle_x32_where_scalar;
    case 8: return axle_x64_where_scalar;
    default: return NULL;
  }
}
