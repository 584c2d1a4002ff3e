/*
 * CPU plugin elementwise family: the kernels it uses (binary, unary, cast,
 * quantize) and the ops of cpu_ops_elementwise.c driven through check/
 * prepare/run. Expected values are computed by hand (see the comments), not
 * by the code under test. One suite per source file.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axle_kernels.h"
#include "axle_kernels_elementwise.h"
#include "cpu_op_harness.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define F32 AXLE_HAL_DTYPE_F32
#define F64 AXLE_HAL_DTYPE_F64
#define F16 AXLE_HAL_DTYPE_F16
#define I8 AXLE_HAL_DTYPE_I8
#define U8 AXLE_HAL_DTYPE_U8
#define I32 AXLE_HAL_DTYPE_I32
#define I64 AXLE_HAL_DTYPE_I64
#define BOOL AXLE_HAL_DTYPE_BOOL

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ------------------------------------------------------------------------ */
/* kernels/<dtype>/binary_scalar.c                                           */
/* ------------------------------------------------------------------------ */

static void test_int_div_truncates(void) {
  const int32_t a[] = {7, -7, 7, -7, 5, INT32_MIN, 0};
  const int32_t b[] = {2, 2, -2, -2, 0, -1, 3};
  int32_t y[7];
  axle_i32_div_scalar(a, 1, b, 1, y, 7);
  /* toward zero, x / 0 = 0, MIN / -1 wraps to MIN */
  const int32_t e[] = {3, -3, -3, 3, 0, INT32_MIN, 0};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
}

static void test_int_wraps(void) {
  const int64_t a[] = {INT64_MAX, INT64_MIN};
  const int64_t one = 1;
  int64_t y[2];
  axle_i64_add_scalar(a, 1, &one, 0, y, 2);
  CU_ASSERT_EQUAL(y[0], INT64_MIN);
  axle_i64_sub_scalar(a, 1, &one, 0, y, 2);
  CU_ASSERT_EQUAL(y[1], INT64_MAX);
  const int32_t m[] = {65536};
  int32_t z;
  axle_i32_mul_scalar(m, 1, m, 1, &z, 1); /* 2^32 mod 2^32 */
  CU_ASSERT_EQUAL(z, 0);
}

static void test_int_pow(void) {
  const int32_t a[] = {3, 2, -1, 1, 2, -2, 0};
  const int32_t e[] = {4, -1, -3, -5, 31, 3, 0};
  int32_t y[7];
  axle_i32_pow_scalar(a, 1, e, 1, y, 7);
  const int32_t want[] = {81, 0, -1, 1, INT32_MIN, -8, 1};
  CU_ASSERT_EQUAL(memcmp(y, want, sizeof want), 0);
}

/* 8/16-bit math runs in unsigned int: no promotion-to-int overflow. */
static void test_narrow_and_unsigned(void) {
  uint16_t m = 65535, my;
  axle_u16_mul_scalar(&m, 1, &m, 1, &my, 1); /* 0xfffe0001 mod 2^16 */
  CU_ASSERT_EQUAL(my, 1);
  const uint8_t a[] = {250, 3}, b[] = {10, 5};
  uint8_t y[2];
  axle_u8_add_scalar(a, 1, b, 1, y, 2);
  CU_ASSERT(y[0] == 4 && y[1] == 8);
  axle_u8_sub_scalar(b, 1, a, 1, y, 2);
  CU_ASSERT(y[0] == 16 && y[1] == 2);
  const int8_t n[] = {-128, -7, 100}, d[] = {-1, 2, 0};
  int8_t q[3];
  axle_i8_div_scalar(n, 1, d, 1, q, 3);
  CU_ASSERT(q[0] == -128 && q[1] == -3 && q[2] == 0);
  const uint64_t z = 0, one = 1;
  uint64_t w;
  axle_u64_sub_scalar(&z, 0, &one, 0, &w, 1);
  CU_ASSERT_EQUAL(w, UINT64_MAX);
  uint32_t pw;
  axle_u32_pow_scalar((const uint32_t[]){3}, 0, (const uint32_t[]){5}, 0, &pw, 1);
  CU_ASSERT_EQUAL(pw, 243);
  int16_t acc = 5;
  axle_i16_reduce_sum_scalar((const int16_t[]){32767, 1}, 2, &acc); /* 32773 wraps */
  CU_ASSERT_EQUAL(acc, -32763);
}

static void test_max_min_nan(void) {
  const float a[] = {NAN, 1.0f, 2.0f};
  const float b[] = {1.0f, NAN, 3.0f};
  float y[3];
  axle_f32_max_scalar(a, 1, b, 1, y, 3);
  CU_ASSERT(isnan(y[0]) && isnan(y[1]));
  CU_ASSERT_EQUAL(y[2], 3.0f);
  axle_f32_min_scalar(a, 1, b, 1, y, 3);
  CU_ASSERT(isnan(y[0]) && isnan(y[1]));
  CU_ASSERT_EQUAL(y[2], 2.0f);
}

static void test_stride_modes(void) {
  const double a[] = {1, 2, 3}, s = 10;
  double y[3];
  axle_f64_sub_scalar(&s, 0, a, 1, y, 3); /* scalar - vector */
  CU_ASSERT(y[0] == 9 && y[1] == 8 && y[2] == 7);
  axle_f64_sub_scalar(a, 1, &s, 0, y, 3); /* vector - scalar */
  CU_ASSERT(y[0] == -9 && y[1] == -8 && y[2] == -7);
  uint8_t c[3];
  axle_f64_less_scalar(a, 1, (const double[]){2}, 0, c, 3);
  CU_ASSERT(c[0] == 1 && c[1] == 0 && c[2] == 0);
  double r[4];
  axle_f64_range_scalar(&(double){0.5}, &(double){-0.25}, r, 4);
  CU_ASSERT(r[0] == 0.5 && r[1] == 0.25 && r[2] == 0 && r[3] == -0.25);
}

static const hx_case_t binary_cases[] = {
    {"int div truncates toward zero", test_int_div_truncates},
    {"int add/sub/mul wrap", test_int_wraps},
    {"int pow", test_int_pow},
    {"8/16-bit and unsigned integers", test_narrow_and_unsigned},
    {"max/min propagate NaN", test_max_min_nan},
    {"scalar operand fast paths, range", test_stride_modes},
    {NULL, NULL}};

/* ------------------------------------------------------------------------ */
/* kernels/<dtype>/unary_scalar.c                                            */
/* ------------------------------------------------------------------------ */

static void test_unary_float(void) {
  const float x[] = {-100.0f, 0.0f, 100.0f};
  float y[3];
  axle_f32_sigmoid_scalar(x, y, 3, NULL);
  CU_ASSERT(y[0] > 0.0f && y[0] < 1e-40f); /* e^-100 ~ 3.7e-44, no NaN */
  CU_ASSERT_EQUAL(y[1], 0.5f);
  CU_ASSERT_EQUAL(y[2], 1.0f);
  axle_f32_softplus_scalar(x, y, 3, NULL);
  CU_ASSERT(y[0] > 0.0f && y[0] < 1e-40f); /* log1p(e^-100) */
  CU_ASSERT_DOUBLE_EQUAL(y[1], 0.69314718, 1e-6);
  CU_ASSERT_EQUAL(y[2], 100.0f); /* no overflow of e^100 */
  const float hs[] = {3.0f, -3.0f, 1.0f};
  axle_f32_hard_swish_scalar(hs, y, 3, NULL);
  CU_ASSERT_EQUAL(y[0], 3.0f);
  CU_ASSERT_EQUAL(y[1], 0.0f);
  CU_ASSERT_DOUBLE_EQUAL(y[2], 2.0 / 3.0, 1e-6);
  const float elu_p[2] = {2.0f, 0.0f};
  axle_f32_elu_scalar((const float[]){-1.0f}, y, 1, elu_p);
  CU_ASSERT_DOUBLE_EQUAL(y[0], 2.0 * (exp(-1.0) - 1.0), 1e-6);
  const float selu_p[2] = {1.67326319217681884765625f, 1.05070102214813232421875f};
  axle_f32_selu_scalar((const float[]){-1.0f, 2.0f}, y, 2, selu_p);
  CU_ASSERT_DOUBLE_EQUAL(y[0], -1.1113307, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[1], 2.1014020, 1e-6);
  axle_f32_relu_scalar((const float[]){NAN, -1.0f}, y, 2, NULL);
  CU_ASSERT(isnan(y[0]) && y[1] == 0.0f);
}

static void test_clip_order(void) {
  const float bounds[2] = {5.0f, 1.0f}; /* lo > hi: ONNX gives min(max(x, lo), hi) = hi */
  float y;
  axle_f32_clip_scalar((const float[]){3.0f}, &y, 1, bounds);
  CU_ASSERT_EQUAL(y, 1.0f);
  const int32_t ib[2] = {-2, 2};
  int32_t iy[3];
  axle_i32_clip_scalar((const int32_t[]){-9, 1, 9}, iy, 3, ib);
  CU_ASSERT(iy[0] == -2 && iy[1] == 1 && iy[2] == 2);
}

static void test_unary_int(void) {
  int32_t y[3];
  axle_i32_abs_scalar((const int32_t[]){INT32_MIN, -3, 4}, y, 3, NULL);
  CU_ASSERT(y[0] == INT32_MIN && y[1] == 3 && y[2] == 4);
  axle_i32_neg_scalar((const int32_t[]){INT32_MIN, -3, 4}, y, 3, NULL);
  CU_ASSERT(y[0] == INT32_MIN && y[1] == 3 && y[2] == -4);
  int64_t z[2];
  axle_i64_relu_scalar((const int64_t[]){-5, 5}, z, 2, NULL);
  CU_ASSERT(z[0] == 0 && z[1] == 5);
}

static const hx_case_t unary_cases[] = {{"float activations at the extremes", test_unary_float},
                                        {"clip bound order", test_clip_order},
                                        {"integer abs/neg/relu", test_unary_int},
                                        {NULL, NULL}};

/* ------------------------------------------------------------------------ */
/* kernels/cast/half_scalar.c, kernels/cast/cast_scalar.c                    */
/* ------------------------------------------------------------------------ */

static void test_f16_rounding(void) {
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.0f), 0x3c00);
  /* 1 + 2^-11 is halfway between 0x3c00 and 0x3c01: ties go to even. */
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.0f + 0x1p-11f), 0x3c00);
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.0f + 3 * 0x1p-11f), 0x3c02);
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  CU_ASSERT_EQUAL(axle_f16_from_f32(-(1.0f + 0x1p-11f)), 0xbc00);
  CU_ASSERT_EQUAL(axle_f16_from_f32(65504.0f), 0x7bff);
  CU_ASSERT_EQUAL(axle_f16_from_f32(65519.0f), 0x7bff);
  CU_ASSERT_EQUAL(axle_f16_from_f32(65520.0f), 0x7c00); /* tie with the next binade */
  CU_ASSERT_EQUAL(axle_f16_from_f32(-70000.0f), 0xfc00);
  CU_ASSERT_EQUAL(axle_f16_from_f32(INFINITY), 0x7c00);
  CU_ASSERT_EQUAL(axle_f16_from_f32(-0.0f), 0x8000);
  /* Subnormals: unit 2^-24. */
  CU_ASSERT_EQUAL(axle_f16_from_f32(0x1p-14f), 0x0400);
  CU_ASSERT_EQUAL(axle_f16_from_f32(0x1p-24f), 0x0001);
  CU_ASSERT_EQUAL(axle_f16_from_f32(0x1p-25f), 0x0000);        /* tie to even 0 */
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.5f * 0x1p-25f), 0x0001); /* above the tie */
  CU_ASSERT_EQUAL(axle_f16_from_f32(1.5f * 0x1p-24f), 0x0002); /* tie 1|2 -> 2 */
  CU_ASSERT_EQUAL(axle_f16_from_f32(2.5f * 0x1p-24f), 0x0002); /* tie 2|3 -> 2 */
  CU_ASSERT_EQUAL(axle_f16_from_f32(0x3ffp-24f + 0x1p-25f), 0x0400); /* carry to normal */
  const uint16_t nan = axle_f16_from_f32(NAN);
  CU_ASSERT((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
  CU_ASSERT(isnan(axle_f32_from_f16(0x7e00)));
  CU_ASSERT_EQUAL(axle_f32_from_f16(0x3555), 0.333251953125f);
  CU_ASSERT_EQUAL(axle_f32_from_f16(0x0001), 0x1p-24f);
  CU_ASSERT_EQUAL(axle_f32_from_f16(0xfbff), -65504.0f);
}

static void test_f16_roundtrip_all(void) {
  unsigned bad = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = axle_f32_from_f16((uint16_t)h);
    const uint16_t back = axle_f16_from_f32(f);
    const int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (is_nan ? !isnan(f) || (back & 0x7fff) <= 0x7c00 : back != h) ++bad;
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void test_bf16_rounding(void) {
  CU_ASSERT_EQUAL(axle_bf16_from_f32(1.0f), 0x3f80);
  CU_ASSERT_EQUAL(axle_bf16_from_f32(bits_f32(0x3f808000u)), 0x3f80); /* tie -> even */
  CU_ASSERT_EQUAL(axle_bf16_from_f32(bits_f32(0x3f818000u)), 0x3f82); /* tie -> even */
  CU_ASSERT_EQUAL(axle_bf16_from_f32(bits_f32(0x3f808001u)), 0x3f81);
  CU_ASSERT_EQUAL(axle_bf16_from_f32(FLT_MAX), 0x7f80);
  CU_ASSERT_EQUAL(axle_bf16_from_f32(bits_f32(0x7fc00000u)), 0x7fc0);
  CU_ASSERT(isnan(axle_f32_from_bf16(axle_bf16_from_f32(bits_f32(0x7f800001u)))));
  CU_ASSERT_EQUAL(axle_f32_from_bf16(0xc040), -3.0f);
}

/* Rounding a double through float first would round twice: 1 + 2^-11 +
 * 2^-40 becomes the float 1 + 2^-11, a tie that goes down; rounded once it
 * goes up. */
static void test_f64_single_rounding(void) {
  const double d = 1.0 + 0x1p-11 + 0x1p-40;
  CU_ASSERT_EQUAL(axle_f16_from_f64(d), 0x3c01);
  CU_ASSERT_EQUAL(axle_f16_from_f64(-d), 0xbc01);
  CU_ASSERT_EQUAL(axle_bf16_from_f64(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  CU_ASSERT_EQUAL(axle_f16_from_f64(1e300), 0x7c00);
  CU_ASSERT_EQUAL(axle_f16_from_f64(1e-300), 0x0000);
  CU_ASSERT_EQUAL(axle_f16_from_f64(1.0 + 0x1p-11), 0x3c00); /* exact tie stays a tie */
}

static void cast(int32_t from, const void* x, int32_t to, void* y, size_t n) {
  axle_cast_t plan;
  CU_ASSERT_FATAL(axle_cast_plan(from, to, &plan) == 0);
  axle_cast_scalar(&plan, x, y, n);
}

static void test_cast_float_to_int(void) {
  const float x[] = {2.7f, -2.7f, 1e10f, -1e10f, NAN, 0.99f};
  int32_t y[6];
  cast(F32, x, I32, y, 6);
  const int32_t e[] = {2, -2, INT32_MAX, INT32_MIN, 0, 0};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  uint8_t u[4];
  cast(F32, (const float[]){300.0f, -1.0f, 255.9f, 3.5f}, U8, u, 4);
  CU_ASSERT(u[0] == 255 && u[1] == 0 && u[2] == 255 && u[3] == 3);
  int64_t l[2];
  cast(F64, (const double[]){9.3e18, -9.3e18}, I64, l, 2);
  CU_ASSERT(l[0] == INT64_MAX && l[1] == INT64_MIN);
  int32_t h;
  cast(F16, (const uint16_t[]){0xc0a0}, I32, &h, 1); /* -2.5 */
  CU_ASSERT_EQUAL(h, -2);
}

static void test_cast_int_and_bool(void) {
  int8_t y[3];
  cast(I64, (const int64_t[]){300, -129, 127}, I8, y, 3); /* modulo 2^8 */
  CU_ASSERT(y[0] == 44 && y[1] == 127 && y[2] == 127);
  uint8_t b[4];
  cast(F32, (const float[]){0.0f, -0.0f, 0.5f, NAN}, BOOL, b, 4);
  CU_ASSERT(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 1);
  float f[3];
  cast(BOOL, (const uint8_t[]){0, 1, 2}, F32, f, 3);
  CU_ASSERT(f[0] == 0.0f && f[1] == 1.0f && f[2] == 1.0f);
  cast(I64, (const int64_t[]){16777217, 16777219}, F32, f, 2); /* ties to even */
  CU_ASSERT(f[0] == 16777216.0f && f[1] == 16777220.0f);
  double d;
  cast(AXLE_HAL_DTYPE_U64, (const uint64_t[]){UINT64_MAX}, F64, &d, 1);
  CU_ASSERT_EQUAL(d, 18446744073709551616.0);
  uint16_t h[2];
  cast(F32, (const float[]){1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f}, F16, h, 2);
  CU_ASSERT(h[0] == 0x3c00 && h[1] == 0x3c02);
  /* Long enough to cross the kernel's chunk boundary. */
  int32_t big[1000];
  int64_t wide[1000];
  for (int i = 0; i < 1000; ++i) big[i] = i - 500;
  cast(I32, big, I64, wide, 1000);
  int ok = 1;
  for (int i = 0; i < 1000; ++i) ok &= wide[i] == i - 500;
  CU_ASSERT(ok);
  axle_cast_t plan;
  CU_ASSERT_EQUAL(axle_cast_plan(AXLE_HAL_DTYPE_STRING, F32, &plan), -1);
}

static const hx_case_t cast_cases[] = {
    {"float16 rounding, subnormals, NaN", test_f16_rounding},
    {"float16 round trip of all 65536 values", test_f16_roundtrip_all},
    {"bfloat16 rounding", test_bf16_rounding},
    {"float64 narrows with one rounding", test_f64_single_rounding},
    {"float to int: truncation, saturation, NaN", test_cast_float_to_int},
    {"int wrap, bool, int to float", test_cast_int_and_bool},
    {NULL, NULL}};

/* ------------------------------------------------------------------------ */
/* kernels/quant/quantize_scalar.c                                           */
/* ------------------------------------------------------------------------ */

static void test_quantize_ties_and_saturation(void) {
  const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, 3.49f, 254.5f, 255.5f, 1000.0f, -3.0f, NAN};
  uint8_t y[10];
  axle_f32_quantize_u8_scalar(x, 1.0f, 0, y, 10);
  const uint8_t e[] = {0, 2, 2, 0, 3, 254, 255, 255, 0, 0};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  const float xi[] = {-0.5f, -1.5f, -2.5f, 127.5f, -128.5f, 200.0f, -200.0f, INFINITY};
  int8_t yi[8];
  axle_f32_quantize_i8_scalar(xi, 1.0f, 0, yi, 8);
  const int8_t ei[] = {0, -2, -2, 127, -128, 127, -128, 127};
  CU_ASSERT_EQUAL(memcmp(yi, ei, sizeof ei), 0);
  /* zero point 128, scale 0.5: x / s = {0, 0.5, 1.5, -128, 127.5} */
  const float xz[] = {0.0f, 0.25f, 0.75f, -64.0f, 63.75f, NAN};
  axle_f32_quantize_u8_scalar(xz, 0.5f, 128, y, 6);
  const uint8_t ez[] = {128, 128, 130, 0, 255, 128};
  CU_ASSERT_EQUAL(memcmp(y, ez, sizeof ez), 0);
}

static void test_quantize_16bit(void) {
  int16_t y[3];
  axle_f32_quantize_i16_scalar((const float[]){40000.0f, -2.5f, 3.5f}, 1.0f, 0, y, 3);
  CU_ASSERT(y[0] == 32767 && y[1] == -2 && y[2] == 4);
  uint16_t u[2];
  axle_f32_quantize_u16_scalar((const float[]){-1.0f, 70000.0f}, 1.0f, 0, u, 2);
  CU_ASSERT(u[0] == 0 && u[1] == 65535);
  float f[1];
  axle_u16_dequantize_f32_scalar((const uint16_t[]){65535}, 1.0f, 32768, f, 1);
  CU_ASSERT_EQUAL(f[0], 32767.0f);
}

static void test_dequantize(void) {
  float y[3];
  axle_u8_dequantize_f32_scalar((const uint8_t[]){0, 128, 255}, 0.5f, 128, y, 3);
  CU_ASSERT(y[0] == -64.0f && y[1] == 0.0f && y[2] == 63.5f);
  axle_i8_dequantize_f32_scalar((const int8_t[]){-128, 127}, 2.0f, -1, y, 2);
  CU_ASSERT(y[0] == -254.0f && y[1] == 256.0f);
  axle_i32_dequantize_f32_scalar((const int32_t[]){INT32_MIN, 100}, 1.0f, 5, y, 2);
  CU_ASSERT(y[0] == -2147483653.0f && y[1] == 95.0f);
}

/* One input of the vector-vs-scalar comparison: random values over and
 * past the 8-bit range, exact ties k + 0.5 of both parities (multiples of a
 * power-of-two scale are exact), huge, tiny and subnormal values, -0, NaN
 * and infinities. */
static float qx_value(unsigned* seed, float scale) {
  *seed = *seed * 1664525u + 1013904223u;
  const unsigned r = *seed >> 8;
  const int k = (int)(r % 601) - 300;
  switch (r % 11) {
    case 0: return ((float)k + 0.5f) * scale;
    case 1: return (float)k * scale;
    case 2: return r & 1 ? 1e30f : -1e30f;
    case 3: return r & 1 ? 1e-30f : -FLT_TRUE_MIN;
    case 4: return r & 1 ? -0.0f : NAN;
    case 5: return r & 1 ? INFINITY : -INFINITY;
    default: return (float)((int)(r % 200001) - 100000) / 100000.0f * 300.0f * scale;
  }
}

/* The AVX2 quantizers and the dispatching ones give the scalar bytes for
 * every length 0..70 (every tail) and stop at n (a canary follows). */
static void test_quantize_avx2_matches_scalar(void) {
  static const float scales[] = {1.0f, 0.5f, 0.0078125f, 0.0171f, 3.0f, 1e-20f};
  static const int32_t zps[][2] = {{0, 0}, {128, -128}, {255, 127}, {37, -5}};
  const int avx2 = axle_kernels_isa() >= AXLE_ISA_AVX2_FMA;
  unsigned seed = 20261125u;
  int ok = 1;
  for (size_t si = 0; si < sizeof scales / sizeof scales[0]; ++si)
    for (size_t zi = 0; zi < sizeof zps / sizeof zps[0]; ++zi)
      for (size_t n = 0; n <= 70; ++n) {
        float x[70];
        for (size_t i = 0; i < n; ++i) x[i] = qx_value(&seed, scales[si]);
        for (int sign = 0; sign < 2; ++sign) {
          const int32_t zp = zps[zi][sign];
          void (*const scalar)(const float*, float, int32_t, void*, size_t) =
              sign ? axle_f32_quantize_i8_scalar : axle_f32_quantize_u8_scalar;
          void (*const fast[2])(const float*, float, int32_t, void*, size_t) = {
              sign ? axle_f32_quantize_i8__avx2 : axle_f32_quantize_u8__avx2,
              sign ? axle_f32_quantize_i8 : axle_f32_quantize_u8};
          uint8_t want[80], got[80];
          memset(want, 0x5A, sizeof want);
          scalar(x, scales[si], zp, want, n);
          for (int f = avx2 ? 0 : 1; f < 2; ++f) {
            memset(got, 0x5A, sizeof got);
            fast[f](x, scales[si], zp, got, n);
            if (memcmp(got, want, sizeof want) != 0) {
              fprintf(stderr, "\nquantize %s (%s): scale %g zp %d n %zu differs\n",
                      sign ? "i8" : "u8", f ? "dispatch" : "avx2", scales[si], zp, n);
              ok = 0;
            }
          }
        }
      }
  CU_ASSERT(ok);
}

/* The AVX2 dequantizers and the dispatching ones give the scalar floats,
 * bit for bit, for every length 0..70 and byte value, and stop at n. */
static void test_dequantize_avx2_matches_scalar(void) {
  static const float scales[] = {1.0f, 0.5f, 0.0078125f, 0.0171f, 3.0f, 1e-20f};
  static const int32_t zps[][2] = {{0, 0}, {128, -128}, {255, 127}, {37, -5}};
  const int avx2 = axle_kernels_isa() >= AXLE_ISA_AVX2_FMA;
  int ok = 1;
  uint8_t x[70];
  for (size_t i = 0; i < sizeof x; ++i) x[i] = (uint8_t)(i * 73u + 11u); /* every residue */
  for (size_t si = 0; si < sizeof scales / sizeof scales[0]; ++si)
    for (size_t zi = 0; zi < sizeof zps / sizeof zps[0]; ++zi)
      for (size_t n = 0; n <= sizeof x; ++n)
        for (int sign = 0; sign < 2; ++sign) {
          const int32_t zp = zps[zi][sign];
          axle_dequantize_fn scalar =
              sign ? axle_i8_dequantize_f32_scalar : axle_u8_dequantize_f32_scalar;
          const axle_dequantize_fn fast[2] = {
              sign ? axle_i8_dequantize_f32__avx2 : axle_u8_dequantize_f32__avx2,
              sign ? axle_i8_dequantize_f32 : axle_u8_dequantize_f32};
          float want[80], got[80];
          memset(want, 0x5A, sizeof want);
          scalar(x, scales[si], zp, want, n);
          for (int f = avx2 ? 0 : 1; f < 2; ++f) {
            memset(got, 0x5A, sizeof got);
            fast[f](x, scales[si], zp, got, n);
            if (memcmp(got, want, sizeof want) != 0) {
              fprintf(stderr, "\ndequantize %s (%s): scale %g zp %d n %zu differs\n",
                      sign ? "i8" : "u8", f ? "dispatch" : "avx2", scales[si], zp, n);
              ok = 0;
            }
          }
        }
  CU_ASSERT(ok);
}

static const hx_case_t quant_cases[] = {
    {"quantize: ties to even, saturation, NaN", test_quantize_ties_and_saturation},
    {"quantize: avx2 and dispatch = scalar, every tail", test_quantize_avx2_matches_scalar},
    {"dequantize: avx2 and dispatch = scalar, every tail", test_dequantize_avx2_matches_scalar},
    {"16-bit quantize/dequantize", test_quantize_16bit},
    {"dequantize", test_dequantize},
    {NULL, NULL}};

/* ------------------------------------------------------------------------ */
/* hal-plugins/cpu/cpu_ops_elementwise.c                                     */
/* ------------------------------------------------------------------------ */

static void test_op_add_broadcast(void) {
  /* [2,3,1] + [1,4] -> [2,3,4]: out[i,j,k] = a[i,j] + b[k] */
  float a[6], b[4], y[24];
  for (int i = 0; i < 6; ++i) a[i] = (float)(10 * (i / 3) + i % 3);
  for (int k = 0; k < 4; ++k) b[k] = (float)(100 * k);
  hx_t h;
  hx_init(&h, "Add", 17);
  hx_in(&h, F32, 3, SHAPE(2, 3, 1), a);
  hx_in(&h, F32, 2, SHAPE(1, 4), b);
  hx_out(&h, F32, 3, SHAPE(2, 3, 4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  int ok = 1;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) ok &= y[(i * 3 + j) * 4 + k] == (float)(10 * i + j + 100 * k);
  CU_ASSERT(ok);
}

static void test_op_scalar_and_bidirectional(void) {
  float x[6] = {1, 2, 3, 4, 5, 6}, s = 10, y[6];
  hx_t h;
  hx_init(&h, "Sub", 17);
  hx_in(&h, F32, 0, NULL, &s); /* rank-0 left operand */
  hx_in(&h, F32, 2, SHAPE(2, 3), x);
  hx_out(&h, F32, 2, SHAPE(2, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 9 && y[5] == 4);
  /* [3,1] * [1,3] -> outer product, int64 */
  int64_t c[3] = {1, 2, 3}, r[3] = {10, 20, 30}, o[9];
  hx_init(&h, "Mul", 17);
  hx_in(&h, I64, 2, SHAPE(3, 1), c);
  hx_in(&h, I64, 2, SHAPE(1, 3), r);
  hx_out(&h, I64, 2, SHAPE(3, 3), o);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int64_t e[] = {10, 20, 30, 20, 40, 60, 30, 60, 90};
  CU_ASSERT_EQUAL(memcmp(o, e, sizeof e), 0);
  /* int Div broadcast [2,1] / [3] truncating, x / 0 = 0 */
  int32_t n[2] = {7, -7}, d[3] = {2, -3, 0}, q[6];
  hx_init(&h, "Div", 17);
  hx_in(&h, I32, 2, SHAPE(2, 1), n);
  hx_in(&h, I32, 1, SHAPE(3), d);
  hx_out(&h, I32, 2, SHAPE(2, 3), q);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int32_t eq[] = {3, -2, 0, -3, 2, 0};
  CU_ASSERT_EQUAL(memcmp(q, eq, sizeof eq), 0);
}

static void test_op_broadcast_errors_and_empty(void) {
  float a[3] = {1, 2, 3}, b[2] = {1, 2}, y[6];
  hx_t h;
  hx_init(&h, "Add", 17);
  hx_in(&h, F32, 1, SHAPE(3), a);
  hx_in(&h, F32, 1, SHAPE(2), b);
  hx_out(&h, F32, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_INVALID_MODEL);
  CU_ASSERT(strstr(hx_message, "node 'n' (Add)") != NULL);
  /* [0,3] + [3]: nothing to write */
  float sentinel = 42;
  hx_init(&h, "Add", 17);
  hx_in(&h, F32, 2, SHAPE(0, 3), a);
  hx_in(&h, F32, 1, SHAPE(3), a);
  hx_out(&h, F32, 2, SHAPE(0, 3), &sentinel);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(sentinel, 42);
}

static void test_op_compare_where(void) {
  float a[4] = {1, 2, 3, 4}, b = 2.5f;
  uint8_t c[4];
  hx_t h;
  hx_init(&h, "Greater", 17);
  hx_in(&h, F32, 1, SHAPE(4), a);
  hx_in(&h, F32, 0, NULL, &b);
  hx_out(&h, BOOL, 1, SHAPE(4), c);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(c[0] == 0 && c[1] == 0 && c[2] == 1 && c[3] == 1);
  int32_t ia[2] = {5, 6}, ib[2] = {5, 7};
  hx_init(&h, "Equal", 17);
  hx_in(&h, I32, 1, SHAPE(2), ia);
  hx_in(&h, I32, 1, SHAPE(2), ib);
  hx_out(&h, BOOL, 1, SHAPE(2), c);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(c[0] == 1 && c[1] == 0);
  /* Where(cond [2,1], x [1,3], y scalar) -> [2,3] */
  uint8_t cond[2] = {1, 0};
  int64_t x[3] = {1, 2, 3}, z = -1, o[6];
  hx_init(&h, "Where", 17);
  hx_in(&h, BOOL, 2, SHAPE(2, 1), cond);
  hx_in(&h, I64, 2, SHAPE(1, 3), x);
  hx_in(&h, I64, 0, NULL, &z);
  hx_out(&h, I64, 2, SHAPE(2, 3), o);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int64_t e[] = {1, 2, 3, -1, -1, -1};
  CU_ASSERT_EQUAL(memcmp(o, e, sizeof e), 0);
  /* Equal compares bools; Less on bool is declined with a reason. */
  uint8_t other[2] = {1, 1};
  hx_init(&h, "Equal", 17);
  hx_in(&h, BOOL, 1, SHAPE(2), cond);
  hx_in(&h, BOOL, 1, SHAPE(2), other);
  hx_out(&h, BOOL, 1, SHAPE(2), c);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(c[0] == 1 && c[1] == 0);
  hx_init(&h, "Less", 17);
  hx_in(&h, BOOL, 1, SHAPE(2), cond);
  hx_in(&h, BOOL, 1, SHAPE(2), cond);
  hx_out(&h, BOOL, 1, SHAPE(2), c);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT(strstr(h.reason, "bool") != NULL);
}

static void test_op_variadic(void) {
  /* Mean([2], [2,2], scalar) */
  float a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, c = 6, y[4];
  hx_t h;
  hx_init(&h, "Mean", 17);
  hx_in(&h, F32, 1, SHAPE(2), a);
  hx_in(&h, F32, 2, SHAPE(2, 2), b);
  hx_in(&h, F32, 0, NULL, &c);
  hx_out(&h, F32, 2, SHAPE(2, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run_n(&h, 2), AXLE_HAL_OK); /* reruns give the same */
  CU_ASSERT_DOUBLE_EQUAL(y[0], 10.0 / 3, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[1], 4.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[2], 4.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(y[3], 14.0 / 3, 1e-6);
  /* Max of three int32 with broadcasting */
  int32_t p[3] = {1, 9, 3}, q = 4, r[3] = {0, 0, 7}, m[3];
  hx_init(&h, "Max", 17);
  hx_in(&h, I32, 1, SHAPE(3), p);
  hx_in(&h, I32, 0, NULL, &q);
  hx_in(&h, I32, 1, SHAPE(3), r);
  hx_out(&h, I32, 1, SHAPE(3), m);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(m[0] == 4 && m[1] == 9 && m[2] == 7);
  /* Sum of one input is a copy. */
  hx_init(&h, "Sum", 17);
  hx_in(&h, F32, 1, SHAPE(2), a);
  hx_out(&h, F32, 1, SHAPE(2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 1 && y[1] == 2);
}

static void test_op_pow_mixed(void) {
  float x[3] = {2, 3, -2}, y[3];
  int64_t e = 3;
  hx_t h;
  hx_init(&h, "Pow", 15);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_const(&h, I64, 0, NULL, &e);
  hx_out(&h, F32, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 8 && y[1] == 27 && y[2] == -8);
  /* runtime exponents of another dtype are cast into scratch each run */
  int32_t ev[3] = {2, 0, -1};
  hx_init(&h, "Pow", 15);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_in(&h, I32, 1, SHAPE(3), ev);
  hx_out(&h, F32, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run_n(&h, 2), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 4 && y[1] == 1 && y[2] == -0.5f);
  /* an integer base would truncate a float exponent: declined */
  float fe = 0.5f;
  hx_init(&h, "Pow", 15);
  hx_in(&h, I32, 1, SHAPE(3), ev);
  hx_const(&h, F32, 0, NULL, &fe);
  hx_out(&h, I32, 1, SHAPE(3), ev);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT(strstr(h.reason, "float base") != NULL);
}

static void test_op_clip(void) {
  float x[4] = {-5, 0, 5, 10}, lo = 0, hi = 6, y[4];
  hx_t h;
  hx_init(&h, "Clip", 13);
  hx_in(&h, F32, 1, SHAPE(4), x);
  hx_in(&h, F32, 0, NULL, &lo);    /* known only at run time */
  hx_const(&h, F32, 0, NULL, &hi); /* constant */
  hx_out(&h, F32, 1, SHAPE(4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 0 && y[1] == 0 && y[2] == 5 && y[3] == 6);
  float one = 1;
  hx_init(&h, "Clip", 13);
  hx_in(&h, F32, 1, SHAPE(4), x);
  hx_omit(&h); /* no min */
  hx_const(&h, F32, 0, NULL, &one);
  hx_out(&h, F32, 1, SHAPE(4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == -5 && y[1] == 0 && y[2] == 1 && y[3] == 1);
  hx_init(&h, "Clip", 6); /* attributes before opset 11 */
  hx_float(&h, "min", -1.0f);
  hx_float(&h, "max", 1.0f);
  hx_in(&h, F32, 1, SHAPE(4), x);
  hx_out(&h, F32, 1, SHAPE(4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == -1 && y[1] == 0 && y[2] == 1 && y[3] == 1);
  int32_t ix[2] = {INT32_MIN, INT32_MAX}, iy[2];
  hx_init(&h, "Clip", 13); /* unbounded int: identity */
  hx_in(&h, I32, 1, SHAPE(2), ix);
  hx_out(&h, I32, 1, SHAPE(2), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == INT32_MIN && iy[1] == INT32_MAX);
}

static void test_op_unary_attrs(void) {
  float x[2] = {-100, 2}, y[2];
  hx_t h;
  hx_init(&h, "LeakyRelu", 16); /* default alpha 0.01 */
  hx_in(&h, F32, 1, SHAPE(2), x);
  hx_out(&h, F32, 1, SHAPE(2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_DOUBLE_EQUAL(y[0], -1.0, 1e-6);
  CU_ASSERT_EQUAL(y[1], 2);
  double dx = 1, dy;
  hx_init(&h, "HardSigmoid", 6);
  hx_float(&h, "alpha", 0.5f);
  hx_float(&h, "beta", 0.125f);
  hx_in(&h, F64, 1, SHAPE(1), &dx);
  hx_out(&h, F64, 1, SHAPE(1), &dy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(dy, 0.625);
  uint8_t b[3] = {0, 1, 7}, nb[3];
  hx_init(&h, "Not", 1);
  hx_in(&h, BOOL, 1, SHAPE(3), b);
  hx_out(&h, BOOL, 1, SHAPE(3), nb);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(nb[0] == 1 && nb[1] == 0 && nb[2] == 0);
  uint16_t hx16[2] = {0x3c00, 0x4000}, hy[2];
  hx_init(&h, "Relu", 14);
  hx_in(&h, F16, 1, SHAPE(2), hx16);
  hx_out(&h, F16, 1, SHAPE(2), hy);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT(strstr(h.reason, "float16") != NULL);
}

static void test_op_cast(void) {
  float x[3] = {1.0f + 0x1p-11f, -2.5f, NAN};
  uint16_t y[3];
  hx_t h;
  hx_init(&h, "Cast", 19);
  hx_int(&h, "to", F16);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_out(&h, F16, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 0x3c00 && y[1] == 0xc100 && (y[2] & 0x7c00) == 0x7c00 && (y[2] & 0x3ff));
  hx_init(&h, "Cast", 19);
  hx_int(&h, "to", AXLE_HAL_DTYPE_STRING);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_out(&h, AXLE_HAL_DTYPE_STRING, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT(strstr(h.reason, "string") != NULL);
}

static void test_op_quantize(void) {
  /* per tensor, int8 zero point -1, scale 0.5: x / s = {2.5, -2.5, 200, -200} */
  float x[4] = {1.25f, -1.25f, 100, -100}, s = 0.5f;
  int8_t zp = -1, y[4];
  hx_t h;
  hx_init(&h, "QuantizeLinear", 13);
  hx_in(&h, F32, 1, SHAPE(4), x);
  hx_const(&h, F32, 0, NULL, &s);
  hx_const(&h, I8, 0, NULL, &zp);
  hx_out(&h, I8, 1, SHAPE(4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 1 && y[1] == -3 && y[2] == 127 && y[3] == -128);
  /* per axis 1 of [2,3], uint8 zero points known only at run time */
  float px[6] = {1, 2, 4, -1, 3, 6}, ps[3] = {1, 2, 4};
  uint8_t pz[3] = {0, 10, 20}, py[6];
  hx_init(&h, "QuantizeLinear", 13);
  hx_int(&h, "axis", 1);
  hx_in(&h, F32, 2, SHAPE(2, 3), px);
  hx_const(&h, F32, 1, SHAPE(3), ps);
  hx_in(&h, U8, 1, SHAPE(3), pz);
  hx_out(&h, U8, 2, SHAPE(2, 3), py);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const uint8_t e[] = {1, 11, 21, 0, 12, 22}; /* 3/2 and 6/4 tie to 2 */
  CU_ASSERT_EQUAL(memcmp(py, e, sizeof e), 0);
  /* no zero point: uint8 */
  float ux[2] = {-1, 1.5f}, one = 1;
  uint8_t uy[2];
  hx_init(&h, "QuantizeLinear", 10);
  hx_in(&h, F32, 1, SHAPE(2), ux);
  hx_const(&h, F32, 0, NULL, &one);
  hx_out(&h, U8, 1, SHAPE(2), uy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(uy[0] == 0 && uy[1] == 2);
  /* blocked quantization is declined */
  hx_init(&h, "QuantizeLinear", 21);
  hx_int(&h, "block_size", 2);
  hx_in(&h, F32, 1, SHAPE(2), ux);
  hx_const(&h, F32, 0, NULL, &one);
  hx_out(&h, U8, 1, SHAPE(2), uy);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT(strstr(h.reason, "block_size") != NULL);
}

/* Large enough to be split over threads, per axis with the shares
 * starting inside a channel's run: 2 and 3 threads give the one-thread
 * bits, both ways. */
static void test_op_qdq_threads(void) {
  enum { C = 3, N = 2 * 3 * 20011 };
  float* x = malloc(N * sizeof(float));
  uint8_t* q[3];
  float* d[3];
  const float s[C] = {0.5f, 0.25f, 2.0f};
  const uint8_t z[C] = {3, 128, 250};
  for (size_t i = 0; i < N; ++i) x[i] = (float)((int)(i * 7919 % 1021) - 510) * 0.37f;
  for (uint32_t t = 1; t <= 3; ++t) {
    q[t - 1] = malloc(N);
    d[t - 1] = malloc(N * sizeof(float));
    hx_t h;
    hx_init(&h, "QuantizeLinear", 13);
    h.threads = t;
    hx_int(&h, "axis", 1);
    hx_in(&h, F32, 3, SHAPE(2, C, N / (2 * C)), x);
    hx_const(&h, F32, 1, SHAPE(C), s);
    hx_const(&h, U8, 1, SHAPE(C), z);
    hx_out(&h, U8, 3, SHAPE(2, C, N / (2 * C)), q[t - 1]);
    CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
    hx_init(&h, "DequantizeLinear", 13);
    h.threads = t;
    hx_int(&h, "axis", 1);
    hx_in(&h, U8, 3, SHAPE(2, C, N / (2 * C)), q[t - 1]);
    hx_const(&h, F32, 1, SHAPE(C), s);
    hx_const(&h, U8, 1, SHAPE(C), z);
    hx_out(&h, F32, 3, SHAPE(2, C, N / (2 * C)), d[t - 1]);
    CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  }
  /* Against a per-element reference too: x / s + z, rounded half to even. */
  int ok = 1;
  for (size_t i = 0; i < N && ok; ++i) {
    const size_t c = i / (N / (2 * C)) % C;
    float v = nearbyintf(x[i] / s[c]) + (float)z[c];
    v = v < 0 ? 0 : v > 255 ? 255 : v;
    ok = q[0][i] == (uint8_t)v && d[0][i] == ((float)q[0][i] - (float)z[c]) * s[c];
  }
  CU_ASSERT(ok);
  for (int t = 1; t < 3; ++t) {
    CU_ASSERT_EQUAL(memcmp(q[t], q[0], N), 0);
    CU_ASSERT_EQUAL(memcmp(d[t], d[0], N * sizeof(float)), 0);
  }
  for (int t = 0; t < 3; ++t) {
    free(q[t]);
    free(d[t]);
  }
  free(x);
}

static void test_op_dequantize_per_axis(void) {
  /* [2,3,2] int8, axis -2 (= 1): scales {1, .5, 2}, zero points {0, 1, -1} */
  int8_t x[12] = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  float s[3] = {1, 0.5f, 2}, y[12];
  int8_t z[3] = {0, 1, -1};
  hx_t h;
  hx_init(&h, "DequantizeLinear", 13);
  hx_int(&h, "axis", -2);
  hx_in(&h, I8, 3, SHAPE(2, 3, 2), x);
  hx_const(&h, F32, 1, SHAPE(3), s);
  hx_const(&h, I8, 1, SHAPE(3), z);
  hx_out(&h, F32, 3, SHAPE(2, 3, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const float e[] = {1, 2, 1, 1.5f, 12, 14, -1, -2, -2, -2.5f, -8, -10};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  int32_t ix[2] = {-5, 7};
  float q = 0.25f, iy[2];
  hx_init(&h, "DequantizeLinear", 13);
  hx_in(&h, I32, 1, SHAPE(2), ix);
  hx_const(&h, F32, 0, NULL, &q);
  hx_out(&h, F32, 1, SHAPE(2), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == -1.25f && iy[1] == 1.75f);
  /* scale length must match the axis extent */
  hx_init(&h, "DequantizeLinear", 13);
  hx_int(&h, "axis", 2);
  hx_in(&h, I8, 3, SHAPE(2, 3, 2), x);
  hx_const(&h, F32, 1, SHAPE(3), s);
  hx_out(&h, F32, 3, SHAPE(2, 3, 2), y);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_INVALID_MODEL);
}

static void test_op_identity_dropout(void) {
  float x[3] = {1, 2, 3}, y[3];
  uint8_t mask[3] = {0, 0, 0};
  hx_t h;
  hx_init(&h, "Dropout", 13);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_out(&h, F32, 1, SHAPE(3), y);
  hx_out(&h, BOOL, 1, SHAPE(3), mask);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(memcmp(x, y, sizeof x) == 0 && mask[0] == 1 && mask[1] == 1 && mask[2] == 1);
  /* training mode: kept elements scale by 1 / (1 - ratio), the mask says
   * which; ratio 0 (known only at run time here) is the identity */
  const uint8_t training = 1;
  const float ratio = 0.75f;
  float big[64], out[64];
  uint8_t m[64];
  for (int i = 0; i < 64; ++i) big[i] = (float)(i + 1);
  hx_init(&h, "Dropout", 13);
  hx_in(&h, F32, 1, SHAPE(64), big);
  hx_const(&h, F32, 0, NULL, &ratio);
  hx_in(&h, BOOL, 0, NULL, &training);
  hx_out(&h, F32, 1, SHAPE(64), out);
  hx_out(&h, BOOL, 1, SHAPE(64), m);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  int ok = 1, kept = 0;
  for (int i = 0; i < 64; ++i) {
    ok &= m[i] ? out[i] == big[i] * 4.0f : out[i] == 0.0f;
    kept += m[i];
  }
  CU_ASSERT(ok);
  CU_ASSERT(kept > 4 && kept < 32); /* about 16 of 64 */
  const float zero = 0.0f;
  hx_init(&h, "Dropout", 13);
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_in(&h, F32, 0, NULL, &zero);
  hx_const(&h, BOOL, 0, NULL, &training);
  hx_out(&h, F32, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(memcmp(x, y, sizeof x), 0);
  int32_t ix[3] = {1, 2, 3}, iy[3];
  hx_init(&h, "Dropout", 13);
  hx_in(&h, I32, 1, SHAPE(3), ix);
  hx_const(&h, F32, 0, NULL, &ratio);
  hx_in(&h, BOOL, 0, NULL, &training);
  hx_out(&h, I32, 1, SHAPE(3), iy);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  hx_init(&h, "Identity", 13); /* in place */
  hx_in(&h, F32, 1, SHAPE(3), x);
  hx_out(&h, F32, 1, SHAPE(3), x);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(x[0] == 1 && x[2] == 3);
}

static const hx_case_t op_cases[] = {
    {"Add broadcast [2,3,1]+[1,4]", test_op_add_broadcast},
    {"scalar operand, bidirectional, int Div", test_op_scalar_and_bidirectional},
    {"incompatible shapes, empty tensors", test_op_broadcast_errors_and_empty},
    {"comparisons and Where", test_op_compare_where},
    {"variadic Mean/Max/Sum", test_op_variadic},
    {"Pow with a constant exponent of another dtype", test_op_pow_mixed},
    {"Clip bounds: runtime, constant, attributes", test_op_clip},
    {"unary attributes, Not, declined dtypes", test_op_unary_attrs},
    {"Cast op", test_op_cast},
    {"QuantizeLinear per tensor and per axis", test_op_quantize},
    {"DequantizeLinear per axis", test_op_dequantize_per_axis},
    {"QuantizeLinear / DequantizeLinear on 1-3 threads", test_op_qdq_threads},
    {"Identity and Dropout", test_op_identity_dropout},
    {NULL, NULL}};

int main(void) {
  const hx_suite_t suites[] = {
      {"kernels/<dtype>/binary_scalar.c", binary_cases},
      {"kernels/<dtype>/unary_scalar.c", unary_cases},
      {"kernels/cast", cast_cases},
      {"kernels/quant/quantize_scalar.c", quant_cases},
      {"hal-plugins/cpu/cpu_ops_elementwise.c", op_cases},
  };
  return hx_main(suites, sizeof suites / sizeof suites[0]);
}
