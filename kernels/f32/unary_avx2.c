/* f32 activations and elementwise math with AVX2, with the references'
 * contract (axle_kernels_elementwise.h): Relu, LeakyRelu, Clip, HardSigmoid,
 * HardSwish, Neg and Abs give the reference's bits (same operations, same
 * order, NaN passed through the same way; -ffp-contract=off keeps
 * HardSigmoid's a * x + b unfused); Exp, Sigmoid and Tanh, which the
 * references take from libm one element at a time, use the vector e^x of
 * exp_avx2.h and stay within a few ulp of libm (tests/unit/
 * test_elementwise_kernels.c holds them to that). Eight elements per step,
 * the last 1-7 through masked loads and stores. */
#include <immintrin.h>

#include "axle_kernels_elementwise.h"
#include "exp_avx2.h"
#include "lanes_avx2.h"
#include "vmath_coeffs.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* The parameters p[0], p[1] broadcast, or zeros for ops without them. */
typedef struct params_t {
  __m256 p0, p1;
} params_t;

/* min/max below take their second operand when either is NaN, which is
 * where the value goes, so NaN passes as in the references. */

/* v < 0 ? 0 : v */
AXLE_AVX2_INLINE __m256 op_relu(__m256 v, const params_t* p) {
  (void)p;
  return _mm256_max_ps(_mm256_setzero_ps(), v);
}
/* v < 0 ? v * alpha : v */
AXLE_AVX2_INLINE __m256 op_leaky_relu(__m256 v, const params_t* p) {
  return _mm256_blendv_ps(v, _mm256_mul_ps(v, p->p0),
                          _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
}
/* min(max(v, lo), hi) */
AXLE_AVX2_INLINE __m256 op_clip(__m256 v, const params_t* p) {
  return _mm256_min_ps(p->p1, _mm256_max_ps(p->p0, v));
}
AXLE_AVX2_INLINE __m256 clamp01(__m256 v) {
  return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
}
AXLE_AVX2_INLINE __m256 op_hard_sigmoid(__m256 v, const params_t* p) {
  return clamp01(_mm256_add_ps(_mm256_mul_ps(p->p0, v), p->p1));
}
AXLE_AVX2_INLINE __m256 op_hard_swish(__m256 v, const params_t* p) {
  (void)p;
  return _mm256_mul_ps(v,
                       clamp01(_mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps((float)(1.0 / 6.0))),
                                             _mm256_set1_ps(0.5f))));
}
AXLE_AVX2_INLINE __m256 op_neg(__m256 v, const params_t* p) {
  (void)p;
  return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f));
}
AXLE_AVX2_INLINE __m256 op_abs(__m256 v, const params_t* p) {
  (void)p;
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}
AXLE_AVX2_INLINE __m256 op_exp(__m256 v, const params_t* p) {
  (void)p;
  return axle_f32_exp8__avx2(v);
}
/* As the reference: 1 / (1 + e^-v) for v >= 0, e^v / (1 + e^v) below, so
 * e^x is only taken of -|v| and never overflows. */
AXLE_AVX2_INLINE __m256 op_sigmoid(__m256 v, const params_t* p) {
  (void)p;
  const __m256 e = axle_f32_exp8__avx2(_mm256_or_ps(v, _mm256_set1_ps(-0.0f)));
  const __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(s, _mm256_mul_ps(e, s),
                          _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
}
/* tanh(|v|) with v's sign (vmath_coeffs.h): an odd polynomial below the
 * split, 1 - 2 / (e^2|v| + 1) from it on, whose subtraction loses under one
 * bit there and nothing as it tends to 1 (e^2|v| = +inf gives exactly 1).
 * The polynomial alone converges too slowly further out; the exp form near
 * 0 would cancel to a few correct bits. */
AXLE_AVX2_INLINE __m256 op_tanh(__m256 v, const params_t* p) {
  (void)p;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_andnot_ps(sign, v);
  const __m256 u = _mm256_mul_ps(t, t);
  __m256 q = _mm256_set1_ps(AXLE_TANH_Q5);
  q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(AXLE_TANH_Q4));
  q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(AXLE_TANH_Q3));
  q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(AXLE_TANH_Q2));
  q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(AXLE_TANH_Q1));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(t, u), q, t);
  const __m256 e = axle_f32_exp8__avx2(_mm256_add_ps(t, t));
  const __m256 large =
      _mm256_sub_ps(_mm256_set1_ps(1.0f),
                    _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  /* NaN compares false and takes the polynomial, which keeps it. */
  const __m256 r =
      _mm256_blendv_ps(small, large, _mm256_cmp_ps(t, _mm256_set1_ps(AXLE_TANH_SPLIT), _CMP_GE_OQ));
  return _mm256_or_ps(r, _mm256_and_ps(v, sign));
}

#define AXLE_UNARY_AVX2_(op)                                                                 \
  AXLE_AVX2 void axle_f32_##op##__avx2(const void* vx, void* vy, size_t n, const void* vp) { \
    const float* x = vx;                                                                     \
    float* y = vy;                                                                           \
    const float* prm = vp;                                                                   \
    params_t p = {_mm256_setzero_ps(), _mm256_setzero_ps()};                                 \
    if (prm) p = (params_t){_mm256_set1_ps(prm[0]), _mm256_set1_ps(prm[1])};                 \
    size_t i = 0;                                                                            \
    _Pragma("GCC unroll 2") for (; i + 8 <= n; i += 8)                                       \
        _mm256_storeu_ps(y + i, op_##op(_mm256_loadu_ps(x + i), &p));                        \
    if (i < n) {                                                                             \
      const __m256i m = axle_f32_first_lanes__avx2(n - i);                                   \
      _mm256_maskstore_ps(y + i, m, op_##op(_mm256_maskload_ps(x + i, m), &p));              \
    }                                                                                        \
  }

AXLE_F32_UNARY_AVX2_OPS(AXLE_UNARY_AVX2_)
