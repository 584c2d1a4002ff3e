/*
 * Unary kernels for one dtype (see template_prelude.h). p points at two
 * parameters of the dtype (see AXLE_UNARY_FLOAT_OPS).
 */
#include "template_prelude.h"

#define AXLE_UNARY_KERNEL_(op, EXPR)                                        \
  void AXLE_KNAME(op)(const void* vx, void* vy, size_t n, const void* vp) { \
    const AXLE_T* x = vx;                                                   \
    AXLE_T* y = vy;                                                         \
    const AXLE_T* p = vp;                                                   \
    (void)p;                                                                \
    for (size_t i = 0; i < n; ++i) {                                        \
      const AXLE_T v = x[i];                                                \
      y[i] = (EXPR);                                                        \
    }                                                                       \
  }

/* Clip is min(max(x, lo), hi) as ONNX defines it, so lo > hi yields hi;
 * NaN passes through. */
AXLE_UNARY_KERNEL_(clip, (v < p[0] ? p[0] : v) > p[1] ? p[1] : (v < p[0] ? p[0] : v))
#if AXLE_IS_FLOAT || AXLE_IS_SIGNED
/* v < 0 (not v > 0) keeps NaN, as max(0, NaN) does in numpy. */
AXLE_UNARY_KERNEL_(relu, v < 0 ? (AXLE_T)0 : v)
#endif

#if AXLE_IS_FLOAT
AXLE_UNARY_KERNEL_(neg, -v)
AXLE_UNARY_KERNEL_(abs, AXLE_M(fabs)(v))

static inline AXLE_T AXLE_KNAME(clamp01_)(AXLE_T v) {
  return v < 0 ? (AXLE_T)0 : v > 1 ? (AXLE_T)1 : v;
}

/* exp() of a non-positive argument only: no overflow for large |v|. */
static inline AXLE_T AXLE_KNAME(sigmoid_)(AXLE_T v) {
  if (v >= 0) return 1 / (1 + AXLE_M(exp)(-v));
  const AXLE_T e = AXLE_M(exp)(v);
  return e / (1 + e);
}

AXLE_UNARY_KERNEL_(leaky_relu, v < 0 ? v * p[0] : v)
AXLE_UNARY_KERNEL_(sigmoid, AXLE_KNAME(sigmoid_)(v))
AXLE_UNARY_KERNEL_(tanh, AXLE_M(tanh)(v))
AXLE_UNARY_KERNEL_(hard_sigmoid, AXLE_KNAME(clamp01_)(p[0] * v + p[1]))
AXLE_UNARY_KERNEL_(hard_swish, v * AXLE_KNAME(clamp01_)(v * (AXLE_T)(1.0 / 6.0) + (AXLE_T)0.5))
AXLE_UNARY_KERNEL_(exp, AXLE_M(exp)(v))
AXLE_UNARY_KERNEL_(log, AXLE_M(log)(v))
AXLE_UNARY_KERNEL_(sqrt, AXLE_M(sqrt)(v))
AXLE_UNARY_KERNEL_(reciprocal, 1 / v)
AXLE_UNARY_KERNEL_(floor, AXLE_M(floor)(v))
AXLE_UNARY_KERNEL_(ceil, AXLE_M(ceil)(v))
AXLE_UNARY_KERNEL_(erf, AXLE_M(erf)(v))
/* expm1 keeps precision for small |v| where exp(v) - 1 cancels. */
AXLE_UNARY_KERNEL_(elu, v < 0 ? p[0] * AXLE_M(expm1)(v) : v)
AXLE_UNARY_KERNEL_(selu, v > 0 ? p[1] * v : p[1] * p[0] * AXLE_M(expm1)(v))
/* log(1 + e^v) rewritten so that e^v never overflows. */
AXLE_UNARY_KERNEL_(softplus, (v > 0 ? v : 0) + AXLE_M(log1p)(AXLE_M(exp)(-AXLE_M(fabs)(v))))
#elif AXLE_IS_SIGNED
/* Wrap-around negation: -MIN stays MIN, as on two's complement hardware. */
AXLE_UNARY_KERNEL_(neg, (AXLE_T)((AXLE_U)0 - (AXLE_U)v))
AXLE_UNARY_KERNEL_(abs, v < 0 ? (AXLE_T)((AXLE_U)0 - (AXLE_U)v) : v)
#else
AXLE_UNARY_KERNEL_(abs, v)
#endif
