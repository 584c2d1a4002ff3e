/*
 * Elementwise, reduction, cast and quantization kernels (scalar reference ISA).
 *
 * Kernels share one signature per family so that an op selects a function
 * pointer once at compile time and run time does no dispatch on dtype:
 *  - binary:  y[i] = a[i*sa] (op) b[i*sb]; the broadcasting drivers only pass
 *             strides 0 or 1, and the kernels have fast paths for those. y may
 *             alias a or b element for element (in-place accumulation).
 *  - unary:   y[i] = op(x[i]; p), p points at two parameters of the kernel's
 *             dtype (alpha/beta, gamma, clip bounds) or is unused.
 *  - reduce:  *acc = *acc (op) reduce(x[0..n)).
 * Names follow axle_<dtype>_<op>_<isa>. Integer arithmetic wraps modulo 2^N
 * (as two's complement hardware does) instead of invoking C's undefined
 * signed overflow; integer division by zero yields 0.
 *
 * Dtype codes are ONNX TensorProto.DataType numbers (the same numbering as
 * Axle's), so the kernels do not depend on the core.
 */
#ifndef AXLE_KERNELS_ELEMENTWISE_H_
#define AXLE_KERNELS_ELEMENTWISE_H_

#include <stddef.h>
#include <stdint.h>

#include "axle_kernels.h"
#include "axle_kernels_copy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*axle_binary_fn)(const void* a, ptrdiff_t sa, const void* b, ptrdiff_t sb,
                               void* y, size_t n);
typedef void (*axle_unary_fn)(const void* x, void* y, size_t n, const void* p);
typedef void (*axle_reduce_fn)(const void* x, size_t n, void* acc);
/* y[i] = start + i * delta */
typedef void (*axle_range_fn)(const void* start, const void* delta, void* y, size_t n);

/* Dtypes with arithmetic kernels: X(name, C type, ONNX dtype code). */
#define AXLE_FLOAT_DTYPES(X) X(f32, float, 1) X(f64, double, 11)
#define AXLE_SINT_DTYPES(X) X(i8, int8_t, 3) X(i16, int16_t, 5) X(i32, int32_t, 6) X(i64, int64_t, 7)
#define AXLE_UINT_DTYPES(X) \
  X(u8, uint8_t, 2) X(u16, uint16_t, 4) X(u32, uint32_t, 12) X(u64, uint64_t, 13)
#define AXLE_ARITH_DTYPES(X) AXLE_FLOAT_DTYPES(X) AXLE_SINT_DTYPES(X) AXLE_UINT_DTYPES(X)
#define AXLE_ARITH_COUNT_(dt, T, code) +1
enum { AXLE_ARITH_DTYPE_COUNT = 0 AXLE_ARITH_DTYPES(AXLE_ARITH_COUNT_) };
/* Position of an ONNX dtype in AXLE_ARITH_DTYPES (the row of per-dtype
 * kernel tables), or -1 when it has no arithmetic kernels. */
int axle_arith_dtype_index(int32_t dtype);

/* Op lists take the element macro X and one extra argument a passed to every
 * X(a, op), so that callers can nest them inside a dtype list. */

/* Binary ops; equal/less/greater write bool (one byte, 0 or 1). max/min
 * propagate NaN like numpy.maximum/minimum. */
#define AXLE_BINARY_OPS(X, a)                                                        \
  X(a, add) X(a, sub) X(a, mul) X(a, div) X(a, pow) X(a, max) X(a, min) X(a, equal)  \
  X(a, less) X(a, greater)

/* Unary ops with float kernels. Parameters p[0], p[1]:
 * leaky_relu, elu: alpha; hard_sigmoid: alpha, beta; selu: alpha, gamma;
 * clip: lower, upper bound. */
#define AXLE_UNARY_FLOAT_OPS(X, a)                                                     \
  X(a, relu) X(a, leaky_relu) X(a, sigmoid) X(a, tanh) X(a, hard_sigmoid)              \
  X(a, hard_swish) X(a, exp) X(a, log) X(a, sqrt) X(a, neg) X(a, abs) X(a, reciprocal) \
  X(a, floor) X(a, ceil) X(a, erf) X(a, elu) X(a, selu) X(a, softplus) X(a, clip)
/* Unary ops with integer kernels (subsets of the float list; abs of an
 * unsigned value is the value). */
#define AXLE_UNARY_SINT_OPS(X, a) X(a, relu) X(a, neg) X(a, abs) X(a, clip)
#define AXLE_UNARY_UINT_OPS(X, a) X(a, abs) X(a, clip)

#define AXLE_REDUCE_OPS(X, a) X(a, sum) X(a, max)

#define AXLE_DECLARE_BINARY_(dt, op)                                                     \
  void axle_##dt##_##op##_scalar(const void* a, ptrdiff_t sa, const void* b, ptrdiff_t sb, \
                                 void* y, size_t n);
#define AXLE_DECLARE_UNARY_(dt, op) \
  void axle_##dt##_##op##_scalar(const void* x, void* y, size_t n, const void* p);
#define AXLE_DECLARE_REDUCE_(dt, op) \
  void axle_##dt##_reduce_##op##_scalar(const void* x, size_t n, void* acc);

#define AXLE_DECLARE_ARITH_(dt, T, code)                                  \
  AXLE_BINARY_OPS(AXLE_DECLARE_BINARY_, dt)                               \
  AXLE_REDUCE_OPS(AXLE_DECLARE_REDUCE_, dt)                               \
  void axle_##dt##_range_scalar(const void* start, const void* delta, void* y, size_t n);
AXLE_ARITH_DTYPES(AXLE_DECLARE_ARITH_)
#define AXLE_DECLARE_FLOAT_(dt, T, code) AXLE_UNARY_FLOAT_OPS(AXLE_DECLARE_UNARY_, dt)
AXLE_FLOAT_DTYPES(AXLE_DECLARE_FLOAT_)
#define AXLE_DECLARE_SINT_(dt, T, code) AXLE_UNARY_SINT_OPS(AXLE_DECLARE_UNARY_, dt)
AXLE_SINT_DTYPES(AXLE_DECLARE_SINT_)
#define AXLE_DECLARE_UINT_(dt, T, code) AXLE_UNARY_UINT_OPS(AXLE_DECLARE_UNARY_, dt)
AXLE_UINT_DTYPES(AXLE_DECLARE_UINT_)

/* ISA variants. f32 ops with an AVX2 (and FMA) variant, axle_f32_<op>__avx2,
 * with the reference's signature and contract: the arithmetic and the
 * piecewise activations give the reference's bits; exp, sigmoid and tanh
 * (libm per element in the reference) are within a few ulp of it. */
#define AXLE_F32_BINARY_AVX2_OPS(X) X(add) X(sub) X(mul) X(div) X(max) X(min)
#define AXLE_F32_UNARY_AVX2_OPS(X)                                                    \
  X(relu) X(leaky_relu) X(clip) X(hard_sigmoid) X(hard_swish) X(neg) X(abs) X(exp) \
  X(sigmoid) X(tanh)
#define AXLE_DECLARE_F32_BINARY_AVX2_(op)                                              \
  void axle_f32_##op##__avx2(const void* a, ptrdiff_t sa, const void* b, ptrdiff_t sb, \
                             void* y, size_t n);
#define AXLE_DECLARE_F32_UNARY_AVX2_(op) \
  void axle_f32_##op##__avx2(const void* x, void* y, size_t n, const void* p);
AXLE_F32_BINARY_AVX2_OPS(AXLE_DECLARE_F32_BINARY_AVX2_)
AXLE_F32_UNARY_AVX2_OPS(AXLE_DECLARE_F32_UNARY_AVX2_)
/* And with AVX-512 (AXLE_ISA_AVX512), axle_f32_<op>__avx512, for the ops
 * whose cost is arithmetic rather than memory. */
#define AXLE_F32_UNARY_AVX512_OPS(X) X(exp) X(sigmoid) X(tanh)
#define AXLE_DECLARE_F32_UNARY_AVX512_(op) \
  void axle_f32_##op##__avx512(const void* x, void* y, size_t n, const void* p);
AXLE_F32_UNARY_AVX512_OPS(AXLE_DECLARE_F32_UNARY_AVX512_)

/* The variant of a reference kernel (any axle_<dtype>_<op>_scalar above)
 * that axle_kernels_isa() runs: its ISA variant where there is one and the
 * CPU has the ISA, else the reference itself. Ops pick their kernel once
 * (at prepare), so runs do not dispatch. Thread-safe. */
axle_binary_fn axle_binary_kernel_for_isa(axle_binary_fn reference);
axle_unary_fn axle_unary_kernel_for_isa(axle_unary_fn reference);

/* Logical not on bool bytes (any non-zero byte is true). */
void axle_bool_not_scalar(const void* x, void* y, size_t n, const void* p);

/* Training-mode dropout (inference Dropout is a copy): see dropout_scalar.c.
 * mask may be NULL. */
typedef void (*axle_dropout_fn)(const void* x, void* y, uint8_t* mask, size_t n, double ratio,
                                uint64_t seed);
void axle_f32_dropout_scalar(const void* x, void* y, uint8_t* mask, size_t n, double ratio,
                             uint64_t seed);
void axle_f64_dropout_scalar(const void* x, void* y, uint8_t* mask, size_t n, double ratio,
                             uint64_t seed);

/* where: y[i] = c[i*sc] ? x[i*sx] : z[i*sz], elements of 1, 2, 4 or 8 bytes
 * (the select does not look at values, so one kernel per width serves every
 * dtype). */
typedef void (*axle_where_fn)(const uint8_t* c, ptrdiff_t sc, const void* x, ptrdiff_t sx,
                              const void* z, ptrdiff_t sz, void* y, size_t n);
#define AXLE_WIDTHS(X) X(x8, uint8_t) X(x16, uint16_t) X(x32, uint32_t) X(x64, uint64_t)
#define AXLE_DECLARE_WHERE_(w, T)                                                          \
  void axle_##w##_where_scalar(const uint8_t* c, ptrdiff_t sc, const void* x, ptrdiff_t sx, \
                               const void* z, ptrdiff_t sz, void* y, size_t n);
AXLE_WIDTHS(AXLE_DECLARE_WHERE_)
/* The where kernel for an element width, or NULL. */
axle_where_fn axle_where_for_width(size_t elem_size);

/* ---- Broadcasting drivers over an axle_nd_t (see axle_kernels_copy.h). --- */

/* Operands: 0 = y (contiguous), 1 = a, 2 = b; sizes are element sizes. */
void axle_nd_binary_scalar(const axle_nd_t* nd, axle_binary_fn fn, void* y, size_t ys,
                           const void* a, size_t as, const void* b, size_t bs);
/* The same walk split over par's threads (NULL, or a tensor too small to
 * pay for the hand-off: serially): equal contiguous shares of y's elements,
 * so each thread writes lines of its own. Results equal the serial walk's
 * bit for bit. Steps that fold (Sum of three inputs) call it per fold. */
void axle_nd_binary_parallel(const axle_nd_t* nd, axle_binary_fn fn, void* y, size_t ys,
                             const void* a, size_t as, const void* b, size_t bs,
                             const axle_parallel_t* par);
/* fn over n contiguous elements of es bytes, split the same way. */
void axle_unary_parallel(axle_unary_fn fn, const void* x, void* y, size_t n, size_t es,
                         const void* p, const axle_parallel_t* par);
/* The elements per task the two above cut `total` into on par (a multiple
 * of 64, the last task taking the rest), or total where the work runs
 * serially: for other elementwise steps to split alike. */
int64_t axle_parallel_share(const axle_parallel_t* par, int64_t total);
/* Operands: 0 = y, 1 = cond (bool), 2 = x, 3 = z; all values elem_size bytes. */
void axle_nd_where_scalar(const axle_nd_t* nd, axle_where_fn fn, size_t elem_size, void* y,
                          const uint8_t* c, const void* x, const void* z);
/* Reduction walk: operand 0 = y (stride 0 on reduced axes), 1 = x. Runs
 * whose innermost axis is reduced go through red, the others accumulate
 * through acc (y = y op x). y must hold the identity beforehand. */
void axle_nd_reduce_scalar(const axle_nd_t* nd, axle_reduce_fn red, axle_binary_fn acc,
                           size_t elem_size, void* y, const void* x);

/* ---- Cast. ---- */

/* IEEE half / bfloat16 from and to float; narrowing rounds to nearest even,
 * NaN stays NaN (quiet, sign kept), overflow gives infinity. */
uint16_t axle_f16_from_f32(float f);
float axle_f32_from_f16(uint16_t h);
uint16_t axle_bf16_from_f32(float f);
float axle_f32_from_bf16(uint16_t h);
/* Same from double, rounded once (no double rounding through float). */
uint16_t axle_f16_from_f64(double d);
uint16_t axle_bf16_from_f64(double d);

/* A cast converts through a carrier (double for floating sources, int64 for
 * signed/bool, uint64 for unsigned) in stack-sized chunks: 13 loads and 39
 * stores instead of 169 pairwise kernels. Rules: float->int truncates toward
 * zero and saturates out-of-range values to the destination range, NaN -> 0;
 * int->int wraps modulo 2^N; ->bool is (x != 0) (NaN -> true); bool -> 0/1;
 * narrowing floats round to nearest even. */
typedef struct axle_cast_t {
  void (*load)(const void* x, void* carrier, size_t n);
  void (*store)(const void* carrier, void* y, size_t n);
  size_t src_size, dst_size; /* element sizes */
  int copy;                  /* same dtype: a plain copy */
} axle_cast_t;
/* Fills plan; returns 0, or -1 when either dtype has no cast (string, ...). */
int axle_cast_plan(int32_t src_dtype, int32_t dst_dtype, axle_cast_t* plan);
void axle_cast_scalar(const axle_cast_t* plan, const void* x, void* y, size_t n);
/* "float32", "int64", ... for messages; "dtype N" style text is the caller's
 * job for unknown codes (returns NULL). */
const char* axle_cast_dtype_name(int32_t dtype);

/* ---- Quantization (ONNX QuantizeLinear / DequantizeLinear). ---- */

/* y = saturate(round_half_even(x / scale) + zp); NaN quantizes to zp. */
typedef void (*axle_quantize_fn)(const float* x, float scale, int32_t zp, void* y, size_t n);
/* y = (x - zp) * scale */
typedef void (*axle_dequantize_fn)(const void* x, float scale, int32_t zp, float* y, size_t n);
#define AXLE_QUANT_TYPES(X) X(u8) X(i8) X(u16) X(i16)
#define AXLE_DECLARE_QDQ_(q)                                                                 \
  void axle_f32_quantize_##q##_scalar(const float* x, float scale, int32_t zp, void* y,      \
                                      size_t n);                                             \
  void axle_##q##_dequantize_f32_scalar(const void* x, float scale, int32_t zp, float* y,    \
                                        size_t n);
AXLE_QUANT_TYPES(AXLE_DECLARE_QDQ_)
/* The 8-bit quantizers with AVX2 (same bits as _scalar), and entry points
 * that dispatch on axle_kernels_isa(). */
void axle_f32_quantize_u8__avx2(const float* x, float scale, int32_t zp, void* y, size_t n);
void axle_f32_quantize_i8__avx2(const float* x, float scale, int32_t zp, void* y, size_t n);
void axle_f32_quantize_u8(const float* x, float scale, int32_t zp, void* y, size_t n);
void axle_f32_quantize_i8(const float* x, float scale, int32_t zp, void* y, size_t n);
/* The same for dequantizing 8 bits (zero points of the same type). */
void axle_u8_dequantize_f32__avx2(const void* x, float scale, int32_t zp, float* y, size_t n);
void axle_i8_dequantize_f32__avx2(const void* x, float scale, int32_t zp, float* y, size_t n);
void axle_u8_dequantize_f32(const void* x, float scale, int32_t zp, float* y, size_t n);
void axle_i8_dequantize_f32(const void* x, float scale, int32_t zp, float* y, size_t n);
/* int32 is dequantize-only (ONNX: accumulator outputs). */
void axle_i32_dequantize_f32_scalar(const void* x, float scale, int32_t zp, float* y, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_KERNELS_ELEMENTWISE_H_ */
