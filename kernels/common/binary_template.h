/*
 * Binary kernels and Range for one dtype (see template_prelude.h). Every
 * kernel gets the same four loops: both operands streaming, either one a
 * broadcast scalar (stride 0), or the general strided case; the compiler
 * vectorises the first three.
 */
#include "template_prelude.h"

#if AXLE_IS_FLOAT
#define AXLE_ADD_(a, b) ((a) + (b))
#define AXLE_SUB_(a, b) ((a) - (b))
#define AXLE_MUL_(a, b) ((a) * (b))
#define AXLE_DIV_(a, b) ((a) / (b))
#define AXLE_POW_(a, b) AXLE_M(pow)(a, b)
/* NaN in either operand wins, as numpy.maximum/minimum. */
#define AXLE_MAX_(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define AXLE_MIN_(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#else
/* Signed overflow is undefined in C; unsigned arithmetic wraps, and the
 * conversion back is two's complement on every target Axle supports. */
#define AXLE_ADD_(a, b) ((AXLE_T)((AXLE_U)(a) + (AXLE_U)(b)))
#define AXLE_SUB_(a, b) ((AXLE_T)((AXLE_U)(a) - (AXLE_U)(b)))
#define AXLE_MUL_(a, b) ((AXLE_T)((AXLE_U)(a) * (AXLE_U)(b)))
#define AXLE_DIV_(a, b) AXLE_KNAME(idiv_)(a, b)
#define AXLE_POW_(a, b) AXLE_KNAME(ipow_)(a, b)
#define AXLE_MAX_(a, b) ((a) > (b) ? (a) : (b))
#define AXLE_MIN_(a, b) ((a) < (b) ? (a) : (b))

/* C division truncates toward zero, which is what ONNX/numpy's C-typed Div
 * does; the two undefined cases get defined answers: x / 0 = 0 and
 * MIN / -1 = MIN (wrap-around). */
static inline AXLE_T AXLE_KNAME(idiv_)(AXLE_T a, AXLE_T b) {
  if (b == 0) return 0;
#if AXLE_IS_SIGNED
  if (b == -1) return (AXLE_T)((AXLE_U)0 - (AXLE_U)a);
#endif
  return (AXLE_T)(a / b);
}

/* Exponentiation by squaring, wrapping like Mul. A negative exponent gives
 * the truncated reciprocal: 1 for base 1, +-1 for base -1, else 0. */
static inline AXLE_T AXLE_KNAME(ipow_)(AXLE_T a, AXLE_T e) {
#if AXLE_IS_SIGNED
  if (e < 0) {
    if (a == 1) return 1;
    if (a == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
#endif
  AXLE_U r = 1, b = (AXLE_U)a;
  for (AXLE_U k = (AXLE_U)e; k; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return (AXLE_T)r;
}
#endif

#define AXLE_EQ_(a, b) ((a) == (b))
#define AXLE_LT_(a, b) ((a) < (b))
#define AXLE_GT_(a, b) ((a) > (b))

#define AXLE_BINARY_KERNEL_(op, OUT_T, F)                                             \
  void AXLE_KNAME(op)(const void* va, ptrdiff_t sa, const void* vb, ptrdiff_t sb,     \
                      void* vy, size_t n) {                                           \
    const AXLE_T* a = va;                                                             \
    const AXLE_T* b = vb;                                                             \
    OUT_T* y = vy;                                                                    \
    if (sa == 1 && sb == 1) {                                                         \
      for (size_t i = 0; i < n; ++i) y[i] = (OUT_T)F(a[i], b[i]);                     \
    } else if (sa == 0 && sb == 1) {                                                  \
      const AXLE_T s = a[0];                                                          \
      for (size_t i = 0; i < n; ++i) y[i] = (OUT_T)F(s, b[i]);                        \
    } else if (sa == 1 && sb == 0) {                                                  \
      const AXLE_T s = b[0];                                                          \
      for (size_t i = 0; i < n; ++i) y[i] = (OUT_T)F(a[i], s);                        \
    } else {                                                                          \
      for (size_t i = 0; i < n; ++i)                                                  \
        y[i] = (OUT_T)F(a[(ptrdiff_t)i * sa], b[(ptrdiff_t)i * sb]);                  \
    }                                                                                 \
  }

AXLE_BINARY_KERNEL_(add, AXLE_T, AXLE_ADD_)
AXLE_BINARY_KERNEL_(sub, AXLE_T, AXLE_SUB_)
AXLE_BINARY_KERNEL_(mul, AXLE_T, AXLE_MUL_)
AXLE_BINARY_KERNEL_(div, AXLE_T, AXLE_DIV_)
AXLE_BINARY_KERNEL_(pow, AXLE_T, AXLE_POW_)
AXLE_BINARY_KERNEL_(max, AXLE_T, AXLE_MAX_)
AXLE_BINARY_KERNEL_(min, AXLE_T, AXLE_MIN_)
AXLE_BINARY_KERNEL_(equal, uint8_t, AXLE_EQ_)
AXLE_BINARY_KERNEL_(less, uint8_t, AXLE_LT_)
AXLE_BINARY_KERNEL_(greater, uint8_t, AXLE_GT_)

/* ONNX Range: y[i] = start + i * delta, computed per element (not by
 * repeated addition) so float error does not accumulate. */
void AXLE_KNAME(range)(const void* vstart, const void* vdelta, void* vy, size_t n) {
  const AXLE_T start = *(const AXLE_T*)vstart, delta = *(const AXLE_T*)vdelta;
  AXLE_T* y = vy;
  for (size_t i = 0; i < n; ++i) y[i] = AXLE_ADD_(start, AXLE_MUL_((AXLE_T)i, delta));
}
