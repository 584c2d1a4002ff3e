/*
 * CPU plugin layout family: the N-D strided copy kernel every data-movement
 * op shares, and the ops of cpu_ops_layout.c driven through check/prepare/
 * run. Expected values are written out by hand (numpy's results for the
 * same calls, worked out in the comments). One suite per source file.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "axle_kernels_copy.h"
#include "cpu_op_harness.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define F32 AXLE_HAL_DTYPE_F32
#define I8 AXLE_HAL_DTYPE_I8
#define U16 AXLE_HAL_DTYPE_U16
#define I32 AXLE_HAL_DTYPE_I32
#define I64 AXLE_HAL_DTYPE_I64
#define BOOL AXLE_HAL_DTYPE_BOOL

static void iota_f32(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = (float)i;
}

/* ------------------------------------------------------------------------ */
/* kernels/copy/strided_copy_scalar.c                                        */
/* ------------------------------------------------------------------------ */

static axle_nd_t plan2(uint32_t rank, const int64_t* shape, const int64_t* dst,
                       const int64_t* src) {
  axle_nd_t nd;
  memset(&nd, 0, sizeof nd);
  nd.rank = rank;
  nd.ops = 2;
  for (uint32_t d = 0; d < rank; ++d) {
    nd.shape[d] = shape[d];
    nd.stride[0][d] = dst[d];
    nd.stride[1][d] = src[d];
  }
  axle_nd_simplify(&nd);
  return nd;
}

static void test_simplify(void) {
  axle_nd_t nd = plan2(3, SHAPE(2, 3, 4), SHAPE(12, 4, 1), SHAPE(12, 4, 1));
  CU_ASSERT(nd.rank == 1 && nd.shape[0] == 24); /* contiguous: one run */
  nd = plan2(4, SHAPE(1, 2, 1, 3), SHAPE(6, 3, 3, 1), SHAPE(0, 0, 0, 1));
  CU_ASSERT(nd.rank == 2 && nd.shape[0] == 2 && nd.shape[1] == 3); /* row broadcast stays */
  CU_ASSERT(nd.stride[1][0] == 0 && nd.stride[1][1] == 1);
  nd = plan2(2, SHAPE(2, 3), SHAPE(3, 1), SHAPE(0, 0));
  CU_ASSERT(nd.rank == 1 && nd.shape[0] == 6 && nd.stride[1][0] == 0); /* pure fill */
  nd = plan2(2, SHAPE(0, 3), SHAPE(3, 1), SHAPE(3, 1));
  CU_ASSERT(axle_nd_count(&nd) == 0);
}

static void test_copy_patterns(void) {
  /* 2x3 -> its 3x2 transpose */
  const int32_t x[6] = {1, 2, 3, 4, 5, 6};
  int32_t y[6];
  axle_nd_t nd = plan2(2, SHAPE(3, 2), SHAPE(2, 1), SHAPE(1, 3));
  axle_strided_copy_scalar(&nd, 4, y, x);
  const int32_t t[6] = {1, 4, 2, 5, 3, 6};
  CU_ASSERT_EQUAL(memcmp(y, t, sizeof t), 0);
  /* reverse through a negative stride */
  nd = plan2(1, SHAPE(6), SHAPE(1), SHAPE(-1));
  axle_strided_copy_scalar(&nd, 4, y, x + 5);
  CU_ASSERT(y[0] == 6 && y[5] == 1);
  /* fill from one element */
  const double v = 2.5;
  double f[5];
  nd = plan2(1, SHAPE(5), SHAPE(1), SHAPE(0));
  axle_strided_copy_scalar(&nd, 8, f, &v);
  CU_ASSERT(f[0] == 2.5 && f[4] == 2.5);
  /* odd element size (3 bytes) uses the generic path */
  const uint8_t b[6] = {1, 2, 3, 4, 5, 6};
  uint8_t o[6];
  nd = plan2(1, SHAPE(2), SHAPE(1), SHAPE(-1));
  axle_strided_copy_scalar(&nd, 3, o, b + 3);
  const uint8_t e[6] = {4, 5, 6, 1, 2, 3};
  CU_ASSERT_EQUAL(memcmp(o, e, 6), 0);
  /* in place contiguous copy is a no-op, not an overlapping memcpy */
  int32_t same[3] = {7, 8, 9};
  nd = plan2(1, SHAPE(3), SHAPE(1), SHAPE(1));
  axle_strided_copy_scalar(&nd, 4, same, same);
  CU_ASSERT(same[0] == 7 && same[2] == 9);
}

static void test_broadcast_strides(void) {
  int64_t s[4];
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(2, SHAPE(2, 3), 1, SHAPE(3), s), 0);
  CU_ASSERT(s[0] == 0 && s[1] == 1);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(3, SHAPE(2, 3, 4), 3, SHAPE(2, 1, 4), s), 0);
  CU_ASSERT(s[0] == 4 && s[1] == 0 && s[2] == 1);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(1, SHAPE(3), 1, SHAPE(2), s), -1);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(1, SHAPE(3), 2, SHAPE(1, 3), s), -1);
  CU_ASSERT_EQUAL(axle_nd_broadcast_strides(1, SHAPE(0), 1, SHAPE(1), s), 0);
}

static const hx_case_t copy_cases[] = {{"simplify merges and drops axes", test_simplify},
                                       {"transpose, reverse, fill, odd size", test_copy_patterns},
                                       {"numpy broadcast strides", test_broadcast_strides},
                                       {NULL, NULL}};

/* ------------------------------------------------------------------------ */
/* hal-plugins/cpu/cpu_ops_layout.c                                          */
/* ------------------------------------------------------------------------ */

static void test_transpose(void) {
  float x[24], y[24];
  iota_f32(x, 24);
  hx_t h;
  hx_init(&h, "Transpose", 13);
  const int64_t perm[3] = {2, 0, 1};
  hx_ints(&h, "perm", 3, perm);
  hx_in(&h, F32, 3, SHAPE(2, 3, 4), x);
  hx_out(&h, F32, 3, SHAPE(4, 2, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  int ok = 1; /* y[k,i,j] = x[i,j,k] */
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) ok &= y[(k * 2 + i) * 3 + j] == x[(i * 3 + j) * 4 + k];
  CU_ASSERT(ok);
  /* default perm reverses; 2-byte dtype */
  uint16_t a[6] = {1, 2, 3, 4, 5, 6}, b[6];
  hx_init(&h, "Transpose", 13);
  hx_in(&h, U16, 2, SHAPE(2, 3), a);
  hx_out(&h, U16, 2, SHAPE(3, 2), b);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const uint16_t e[6] = {1, 4, 2, 5, 3, 6};
  CU_ASSERT_EQUAL(memcmp(b, e, sizeof e), 0);
  const int64_t bad[2] = {0, 0};
  hx_init(&h, "Transpose", 13);
  hx_ints(&h, "perm", 2, bad);
  hx_in(&h, U16, 2, SHAPE(2, 3), a);
  hx_out(&h, U16, 2, SHAPE(2, 2), b);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_INVALID_MODEL);
}

static int32_t slice1(const float* x, int64_t n, int64_t start, int64_t end, int64_t step,
                      int64_t out_n, float* y) {
  hx_t h;
  hx_init(&h, "Slice", 13);
  hx_in(&h, F32, 1, &n, x);
  hx_const(&h, I64, 1, SHAPE(1), &start);
  hx_const(&h, I64, 1, SHAPE(1), &end);
  hx_omit(&h);
  hx_const(&h, I64, 1, SHAPE(1), &step);
  hx_out(&h, F32, 1, &out_n, y);
  return hx_run(&h);
}

static void test_slice(void) {
  float x[12], y[12];
  iota_f32(x, 12);
  /* x[-1::-1] over 10 elements: the whole array reversed */
  CU_ASSERT_EQUAL_FATAL(slice1(x, 10, -1, INT64_MIN, -1, 10, y), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 9 && y[9] == 0);
  /* x[8:0:-2] = 8, 6, 4, 2 */
  CU_ASSERT_EQUAL_FATAL(slice1(x, 10, 8, 0, -2, 4, y), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 8 && y[1] == 6 && y[2] == 4 && y[3] == 2);
  /* x[-100:100:3] clamps to x[0:10:3] = 0, 3, 6, 9 */
  CU_ASSERT_EQUAL_FATAL(slice1(x, 10, -100, 100, 3, 4, y), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 0 && y[3] == 9);
  /* x[5:2] is empty */
  float sentinel = 42;
  CU_ASSERT_EQUAL(slice1(x, 10, 5, 2, 1, 0, &sentinel), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(sentinel, 42);
  CU_ASSERT_EQUAL(slice1(x, 10, 0, 5, 0, 5, y), AXLE_HAL_INVALID_MODEL); /* step 0 */
  /* 2-D [3,4]: rows 0:3:2, cols 3:0:-2 -> {x[0,3], x[0,1], x[2,3], x[2,1]} */
  const int64_t starts[2] = {0, 3}, ends[2] = {3, 0}, axes[2] = {0, -1}, steps[2] = {2, -2};
  hx_t h;
  hx_init(&h, "Slice", 13);
  hx_in(&h, F32, 2, SHAPE(3, 4), x);
  hx_const(&h, I64, 1, SHAPE(2), starts);
  hx_const(&h, I64, 1, SHAPE(2), ends);
  hx_const(&h, I64, 1, SHAPE(2), axes);
  hx_const(&h, I64, 1, SHAPE(2), steps);
  hx_out(&h, F32, 2, SHAPE(2, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 3 && y[1] == 1 && y[2] == 11 && y[3] == 9);
  /* opset 1: attributes */
  const int64_t s1[1] = {1}, e1[1] = {1000}, a1[1] = {1};
  hx_init(&h, "Slice", 1);
  hx_ints(&h, "starts", 1, s1);
  hx_ints(&h, "ends", 1, e1);
  hx_ints(&h, "axes", 1, a1);
  hx_in(&h, F32, 2, SHAPE(3, 4), x);
  hx_out(&h, F32, 2, SHAPE(3, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 1 && y[2] == 3 && y[3] == 5 && y[8] == 11);
}

static void test_concat_split(void) {
  int64_t a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, y[6];
  hx_t h;
  hx_init(&h, "Concat", 13);
  hx_int(&h, "axis", -1);
  hx_in(&h, I64, 2, SHAPE(2, 1), a);
  hx_in(&h, I64, 2, SHAPE(2, 2), b);
  hx_in(&h, I64, 2, SHAPE(2, 0), a); /* empty input */
  hx_out(&h, I64, 2, SHAPE(2, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int64_t e[6] = {1, 3, 4, 2, 5, 6};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  int64_t p[2], q[4];
  hx_init(&h, "Split", 13);
  hx_int(&h, "axis", 1);
  hx_in(&h, I64, 2, SHAPE(2, 3), e);
  hx_out(&h, I64, 2, SHAPE(2, 1), p);
  hx_out(&h, I64, 2, SHAPE(2, 2), q);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(p[0] == 1 && p[1] == 2 && q[0] == 3 && q[1] == 4 && q[2] == 5 && q[3] == 6);
}

static int32_t pad(const char* mode, uint32_t rank, const int64_t* in_shape, const float* x,
                   const int64_t* pads, const int64_t* out_shape, float* y) {
  hx_t h;
  hx_init(&h, "Pad", 13);
  hx_string(&h, "mode", mode);
  hx_in(&h, F32, rank, in_shape, x);
  hx_const(&h, I64, 1, SHAPE(2 * (int64_t)rank), pads);
  hx_out(&h, F32, rank, out_shape, y);
  return hx_run(&h);
}

static void test_pad(void) {
  float y[32];
  /* np.pad([1,2,3,4], (2,3), 'reflect') */
  const float x1[4] = {1, 2, 3, 4};
  CU_ASSERT_EQUAL_FATAL(pad("reflect", 1, SHAPE(4), x1, SHAPE(2, 3), SHAPE(9), y), AXLE_HAL_OK);
  const float r1[9] = {3, 2, 1, 2, 3, 4, 3, 2, 1};
  CU_ASSERT_EQUAL(memcmp(y, r1, sizeof r1), 0);
  /* np.pad([[1,2,3],[4,5,6]], 1, 'reflect') */
  const float x2[6] = {1, 2, 3, 4, 5, 6};
  CU_ASSERT_EQUAL_FATAL(pad("reflect", 2, SHAPE(2, 3), x2, SHAPE(1, 1, 1, 1), SHAPE(4, 5), y),
                        AXLE_HAL_OK);
  const float r2[20] = {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2};
  CU_ASSERT_EQUAL(memcmp(y, r2, sizeof r2), 0);
  /* np.pad(x2, ((1,0),(2,1)), 'edge'); ONNX pads = [b0, b1, e0, e1] */
  CU_ASSERT_EQUAL_FATAL(pad("edge", 2, SHAPE(2, 3), x2, SHAPE(1, 2, 0, 1), SHAPE(3, 6), y),
                        AXLE_HAL_OK);
  const float r3[18] = {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6};
  CU_ASSERT_EQUAL(memcmp(y, r3, sizeof r3), 0);
  /* np.pad([1,2,3], (2,1), 'wrap') */
  CU_ASSERT_EQUAL_FATAL(pad("wrap", 1, SHAPE(3), x1, SHAPE(2, 1), SHAPE(6), y), AXLE_HAL_OK);
  const float r4[6] = {2, 3, 1, 2, 3, 1};
  CU_ASSERT_EQUAL(memcmp(y, r4, sizeof r4), 0);
  /* negative pads crop: [1,2,3,4] pads (-1, 2) -> [2,3,4,0,0] */
  CU_ASSERT_EQUAL_FATAL(pad("constant", 1, SHAPE(4), x1, SHAPE(-1, 2), SHAPE(5), y), AXLE_HAL_OK);
  const float r5[5] = {2, 3, 4, 0, 0};
  CU_ASSERT_EQUAL(memcmp(y, r5, sizeof r5), 0);
  /* reflect needs pads < extent */
  CU_ASSERT_EQUAL(pad("reflect", 1, SHAPE(4), x1, SHAPE(4, 0), SHAPE(8), y), AXLE_HAL_UNSUPPORTED);
}

static void test_pad_constant_value(void) {
  /* [[1,2],[3,4]] pads [0,1,1,0], constant 9 known only at run time */
  const int32_t x[4] = {1, 2, 3, 4}, v = 9;
  const int64_t pads[4] = {0, 1, 1, 0};
  int32_t y[9];
  hx_t h;
  hx_init(&h, "Pad", 13);
  hx_in(&h, I32, 2, SHAPE(2, 2), x);
  hx_const(&h, I64, 1, SHAPE(4), pads);
  hx_in(&h, I32, 0, NULL, &v);
  hx_out(&h, I32, 2, SHAPE(3, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int32_t e[9] = {9, 1, 2, 9, 3, 4, 9, 9, 9};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  /* opset 2: pads and value attributes */
  const float fx[2] = {1, 2};
  const int64_t p2[2] = {1, 0};
  float fy[3];
  hx_init(&h, "Pad", 2);
  hx_ints(&h, "pads", 2, p2);
  hx_float(&h, "value", 7.5f);
  hx_in(&h, F32, 1, SHAPE(2), fx);
  hx_out(&h, F32, 1, SHAPE(3), fy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(fy[0] == 7.5f && fy[1] == 1 && fy[2] == 2);
}

static void test_expand_tile(void) {
  float x[3] = {1, 2, 3}, y[24];
  const int64_t shape[3] = {2, 3, 4};
  hx_t h;
  hx_init(&h, "Expand", 13);
  hx_in(&h, F32, 2, SHAPE(3, 1), x);
  hx_const(&h, I64, 1, SHAPE(3), shape);
  hx_out(&h, F32, 3, SHAPE(2, 3, 4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  int ok = 1;
  for (int i = 0; i < 24; ++i) ok &= y[i] == x[(i / 4) % 3];
  CU_ASSERT(ok);
  const int8_t a[4] = {1, 2, 3, 4};
  const int64_t reps[2] = {2, 2};
  int8_t t[16];
  hx_init(&h, "Tile", 13);
  hx_in(&h, I8, 2, SHAPE(2, 2), a);
  hx_const(&h, I64, 1, SHAPE(2), reps);
  hx_out(&h, I8, 2, SHAPE(4, 4), t);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const int8_t e[16] = {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4};
  CU_ASSERT_EQUAL(memcmp(t, e, sizeof e), 0);
}

static void test_gather(void) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t idx[2] = {-1, 0};
  float y[6];
  hx_t h;
  hx_init(&h, "Gather", 13);
  hx_int(&h, "axis", 1);
  hx_in(&h, F32, 2, SHAPE(2, 3), x);
  hx_const(&h, I64, 1, SHAPE(2), idx);
  hx_out(&h, F32, 2, SHAPE(2, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 3 && y[1] == 1 && y[2] == 6 && y[3] == 4);
  /* runtime indices out of range write zeros, never outside the buffers */
  const int32_t bad[3] = {1, 5, -4};
  for (int i = 0; i < 6; ++i) y[i] = 99;
  hx_init(&h, "Gather", 13);
  hx_int(&h, "axis", 1);
  hx_in(&h, F32, 2, SHAPE(2, 3), x);
  hx_in(&h, I32, 1, SHAPE(3), bad);
  hx_out(&h, F32, 2, SHAPE(2, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  const float e[6] = {2, 0, 0, 5, 0, 0};
  CU_ASSERT_EQUAL(memcmp(y, e, sizeof e), 0);
  /* constant indices out of range are a compile-time error */
  const int64_t oob[1] = {3};
  hx_init(&h, "Gather", 13);
  hx_int(&h, "axis", 1);
  hx_in(&h, F32, 2, SHAPE(2, 3), x);
  hx_const(&h, I64, 1, SHAPE(1), oob);
  hx_out(&h, F32, 2, SHAPE(2, 1), y);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_INVALID_MODEL);
  /* axis 0, 2-D indices: [3,2] data, [[2,0]] -> [1,2,2] */
  const int32_t rows[2] = {2, 0};
  hx_init(&h, "Gather", 13);
  hx_in(&h, F32, 2, SHAPE(3, 2), x);
  hx_in(&h, I32, 2, SHAPE(1, 2), rows);
  hx_out(&h, F32, 3, SHAPE(1, 2, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 5 && y[1] == 6 && y[2] == 1 && y[3] == 2);
}

static void test_constants(void) {
  const float value[2] = {1.5f, 2.5f};
  float y[6];
  hx_t h;
  hx_init(&h, "Constant", 13);
  hx_tensor_attr(&h, "value", F32, 1, SHAPE(2), value);
  hx_out(&h, F32, 1, SHAPE(2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 1.5f && y[1] == 2.5f);
  const int64_t ints[3] = {4, 5, 6};
  int64_t iy[4];
  hx_init(&h, "Constant", 13);
  hx_ints(&h, "value_ints", 3, ints);
  hx_out(&h, I64, 1, SHAPE(3), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == 4 && iy[2] == 6);
  hx_init(&h, "Constant", 13);
  hx_string(&h, "value_string", "text");
  hx_out(&h, AXLE_HAL_DTYPE_STRING, 0, NULL, iy);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
  /* Shape with start/end */
  const float big[1] = {0};
  hx_init(&h, "Shape", 15);
  hx_int(&h, "start", 1);
  hx_int(&h, "end", -1);
  hx_in(&h, F32, 4, SHAPE(2, 3, 4, 5), big);
  hx_out(&h, I64, 1, SHAPE(2), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == 3 && iy[1] == 4);
  /* ConstantOfShape: int32 7, and the float 0 default */
  const int64_t dims[2] = {2, 3};
  const int32_t seven = 7;
  int32_t c[6];
  hx_init(&h, "ConstantOfShape", 9);
  hx_tensor_attr(&h, "value", I32, 1, SHAPE(1), &seven);
  hx_const(&h, I64, 1, SHAPE(2), dims);
  hx_out(&h, I32, 2, SHAPE(2, 3), c);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(c[0] == 7 && c[5] == 7);
  for (int i = 0; i < 6; ++i) y[i] = 1;
  hx_init(&h, "ConstantOfShape", 9);
  hx_const(&h, I64, 1, SHAPE(2), dims);
  hx_out(&h, F32, 2, SHAPE(2, 3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 0 && y[5] == 0);
}

static void test_range(void) {
  const float start = 1, limit = 2, delta = 0.25f;
  float y[4];
  hx_t h;
  hx_init(&h, "Range", 11);
  hx_const(&h, F32, 0, NULL, &start);
  hx_const(&h, F32, 0, NULL, &limit);
  hx_const(&h, F32, 0, NULL, &delta);
  hx_out(&h, F32, 1, SHAPE(4), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 1 && y[1] == 1.25f && y[2] == 1.5f && y[3] == 1.75f);
  const int64_t s = 10, l = 0, d = -3;
  int64_t iy[4];
  hx_init(&h, "Range", 11);
  hx_in(&h, I64, 0, NULL, &s);
  hx_in(&h, I64, 0, NULL, &l);
  hx_in(&h, I64, 0, NULL, &d);
  hx_out(&h, I64, 1, SHAPE(4), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == 10 && iy[1] == 7 && iy[2] == 4 && iy[3] == 1);
}

static void test_reduce(void) {
  float x[12], y[4];
  iota_f32(x, 12);
  const int64_t ax1[1] = {1};
  hx_t h;
  /* mean over axis 1 of [2,3,2], keepdims */
  hx_init(&h, "ReduceMean", 13);
  hx_ints(&h, "axes", 1, ax1);
  hx_in(&h, F32, 3, SHAPE(2, 3, 2), x);
  hx_out(&h, F32, 3, SHAPE(2, 1, 2), y);
  CU_ASSERT_EQUAL_FATAL(hx_run_n(&h, 2), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 2 && y[1] == 3 && y[2] == 8 && y[3] == 9);
  /* opset 13 ReduceSum: axes input {0, 2}, keepdims 0 */
  const int64_t ax02[2] = {0, -1};
  hx_init(&h, "ReduceSum", 13);
  hx_int(&h, "keepdims", 0);
  hx_in(&h, F32, 3, SHAPE(2, 3, 2), x);
  hx_const(&h, I64, 1, SHAPE(2), ax02);
  hx_out(&h, F32, 1, SHAPE(3), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(y[0] == 14 && y[1] == 22 && y[2] == 30);
  /* all axes */
  hx_init(&h, "ReduceSum", 13);
  hx_in(&h, F32, 3, SHAPE(2, 3, 2), x);
  hx_out(&h, F32, 3, SHAPE(1, 1, 1), y);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(y[0], 66);
  /* noop_with_empty_axes: identity */
  float z[12];
  hx_init(&h, "ReduceSum", 13);
  hx_int(&h, "noop_with_empty_axes", 1);
  hx_in(&h, F32, 3, SHAPE(2, 3, 2), x);
  hx_out(&h, F32, 3, SHAPE(2, 3, 2), z);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(memcmp(x, z, sizeof z), 0);
}

static void test_reduce_max_and_ints(void) {
  const int64_t ax0[1] = {0};
  const int32_t ix[4] = {1, 9, 5, -3};
  int32_t iy[2];
  hx_t h;
  hx_init(&h, "ReduceMax", 13);
  hx_ints(&h, "axes", 1, ax0);
  hx_int(&h, "keepdims", 0);
  hx_in(&h, I32, 2, SHAPE(2, 2), ix);
  hx_out(&h, I32, 1, SHAPE(2), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == 5 && iy[1] == 9);
  /* empty reduction: the lowest value */
  hx_init(&h, "ReduceMax", 13);
  hx_ints(&h, "axes", 1, ax0);
  hx_int(&h, "keepdims", 0);
  hx_in(&h, I32, 2, SHAPE(0, 2), ix);
  hx_out(&h, I32, 1, SHAPE(2), iy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(iy[0] == INT32_MIN && iy[1] == INT32_MIN);
  /* NaN propagates through ReduceMax */
  const float fx[3] = {1, NAN, 2};
  float fy;
  hx_init(&h, "ReduceMax", 13);
  hx_in(&h, F32, 1, SHAPE(3), fx);
  hx_out(&h, F32, 1, SHAPE(1), &fy);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(isnan(fy));
  /* bool ReduceMax is "any" */
  const uint8_t bx[4] = {0, 1, 0, 0};
  uint8_t by[2];
  hx_init(&h, "ReduceMax", 18);
  hx_int(&h, "keepdims", 0);
  hx_in(&h, BOOL, 2, SHAPE(2, 2), bx);
  hx_const(&h, I64, 1, SHAPE(1), (const int64_t[]){1});
  hx_out(&h, BOOL, 1, SHAPE(2), by);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(by[0] == 1 && by[1] == 0);
  /* integer mean truncates: (1 + 2) / 2 = 1 */
  const int64_t lx[2] = {1, 2};
  int64_t ly;
  hx_init(&h, "ReduceMean", 13);
  hx_in(&h, I64, 1, SHAPE(2), lx);
  hx_out(&h, I64, 1, SHAPE(1), &ly);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(ly, 1);
}

static void test_reshape_family(void) {
  uint8_t b[6] = {1, 0, 1, 1, 0, 0}, c[6];
  const int64_t shape[2] = {3, 2};
  hx_t h;
  hx_init(&h, "Reshape", 13);
  hx_in(&h, BOOL, 2, SHAPE(2, 3), b);
  hx_const(&h, I64, 1, SHAPE(2), shape);
  hx_out(&h, BOOL, 2, SHAPE(3, 2), c);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(memcmp(b, c, 6), 0);
  hx_init(&h, "Unsqueeze", 13); /* in place: in == out */
  hx_in(&h, BOOL, 2, SHAPE(2, 3), b);
  hx_out(&h, BOOL, 3, SHAPE(2, 1, 3), b);
  CU_ASSERT_EQUAL_FATAL(hx_run(&h), AXLE_HAL_OK);
  CU_ASSERT(b[0] == 1 && b[5] == 0);
  hx_init(&h, "Flatten", 13);
  hx_in(&h, BOOL, 2, SHAPE(2, 3), b);
  hx_out(&h, BOOL, 2, SHAPE(1, 5), c);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_INVALID_MODEL);
  hx_init(&h, "Squeeze", 13);
  hx_in(&h, AXLE_HAL_DTYPE_STRING, 1, SHAPE(1), b);
  hx_out(&h, AXLE_HAL_DTYPE_STRING, 0, NULL, c);
  CU_ASSERT_EQUAL(hx_run(&h), AXLE_HAL_UNSUPPORTED);
}

static const hx_case_t op_cases[] = {
    {"Transpose perms", test_transpose},
    {"Slice negative steps, clamping, attributes", test_slice},
    {"Concat and Split", test_concat_split},
    {"Pad reflect/edge/wrap/negative", test_pad},
    {"Pad constant value: runtime input, attribute", test_pad_constant_value},
    {"Expand and Tile", test_expand_tile},
    {"Gather: negative, out of range, 2-D indices", test_gather},
    {"Constant, Shape, ConstantOfShape", test_constants},
    {"Range", test_range},
    {"ReduceMean/ReduceSum axes", test_reduce},
    {"ReduceMax, empty, NaN, integer mean", test_reduce_max_and_ints},
    {"Reshape family", test_reshape_family},
    {NULL, NULL}};

int main(void) {
  const hx_suite_t suites[] = {
      {"kernels/copy/strided_copy_scalar.c", copy_cases},
      {"hal-plugins/cpu/cpu_ops_layout.c", op_cases},
  };
  return hx_main(suites, sizeof suites / sizeof suites[0]);
}
