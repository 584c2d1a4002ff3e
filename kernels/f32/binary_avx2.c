/* f32 binary arithmetic with AVX2: Add, Sub, Mul, Div, Max, Min, each with
 * the reference's contract (axle_kernels_elementwise.h) and its results bit
 * for bit: these are single IEEE operations, and Max/Min pick the operand
 * the reference picks (NaN in either wins, the first when both are NaN).
 * Eight elements per step; the last 1-7 go through masked loads and stores,
 * so a tail never reads or writes past n. Strides other than the three the
 * broadcasting driver passes (both 1, or one operand a scalar) go to the
 * reference. Compiled with -ffp-contract=off, so no a * b + c is fused. */
#include <immintrin.h>

#include "axle_kernels_elementwise.h"
#include "lanes_avx2.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

AXLE_AVX2_INLINE __m256 op_add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
AXLE_AVX2_INLINE __m256 op_sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
AXLE_AVX2_INLINE __m256 op_mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
AXLE_AVX2_INLINE __m256 op_div(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
/* (a > b || a != a) ? a : b, as the reference. */
AXLE_AVX2_INLINE __m256 op_max(__m256 a, __m256 b) {
  const __m256 take_a =
      _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  return _mm256_blendv_ps(b, a, take_a);
}
/* (a < b || a != a) ? a : b. */
AXLE_AVX2_INLINE __m256 op_min(__m256 a, __m256 b) {
  const __m256 take_a =
      _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  return _mm256_blendv_ps(b, a, take_a);
}

/* One kernel per op: the operand with stride 0 is broadcast once; y may
 * alias a or b element for element (each step loads before it stores). */
#define AXLE_BINARY_AVX2_(op)                                                                      \
  AXLE_AVX2 void axle_f32_##op##__avx2(const void* va, ptrdiff_t sa, const void* vb, ptrdiff_t sb, \
                                       void* vy, size_t n) {                                       \
    const float* a = va;                                                                           \
    const float* b = vb;                                                                           \
    float* y = vy;                                                                                 \
    if (!((sa == 1 && sb == 1) || (sa == 0 && sb == 1) || (sa == 1 && sb == 0))) {                 \
      axle_f32_##op##_scalar(va, sa, vb, sb, vy, n);                                               \
      return;                                                                                      \
    }                                                                                              \
    if (n == 0) return;                                                                            \
    const __m256 as = _mm256_set1_ps(a[0]), bs = _mm256_set1_ps(b[0]);                             \
    size_t i = 0;                                                                                  \
    for (; i + 8 <= n; i += 8) {                                                                   \
      const __m256 x = sa ? _mm256_loadu_ps(a + i) : as;                                           \
      const __m256 z = sb ? _mm256_loadu_ps(b + i) : bs;                                           \
      _mm256_storeu_ps(y + i, op_##op(x, z));                                                      \
    }                                                                                              \
    if (i < n) {                                                                                   \
      const __m256i m = axle_f32_first_lanes__avx2(n - i);                                         \
      const __m256 x = sa ? _mm256_maskload_ps(a + i, m) : as;                                     \
      const __m256 z = sb ? _mm256_maskload_ps(b + i, m) : bs;                                     \
      _mm256_maskstore_ps(y + i, m, op_##op(x, z));                                                \
    }                                                                                              \
  }

AXLE_F32_BINARY_AVX2_OPS(AXLE_BINARY_AVX2_)
