/*
 * Shape inference (core/src/shape_infer.c), op family by op family.
 *
 * Each test builds a one- or two-node graph directly in the IR (no ONNX
 * file), runs axle_shape_infer_node() and checks the output dtype/shape, or
 * the status and the message naming node, op and tensor. Expected shapes
 * follow the ONNX operator spec (and onnx.shape_inference / the ONNX reference
 * implementation where the spec leaves room).
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "status.h"

static axle_graph_t g;

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((uint32_t)(sizeof(D(__VA_ARGS__)) / sizeof(int64_t)))
#define NAMES(...) ((const char* const[]){__VA_ARGS__, NULL})
#define NO_ATTRS 0, NULL
#define ATTRS(...) \
  (uint32_t)(sizeof((axle_hal_attr_t[]){__VA_ARGS__}) / sizeof(axle_hal_attr_t)), \
      ((const axle_hal_attr_t[]){__VA_ARGS__})

static void setup(int64_t opset) {
  axle_graph_free(&g);
  g.opset = opset;
  axle_status_clear();
}

static int32_t tensor_named(const char* name) {
  int32_t i = axle_graph_find_tensor(&g, name);
  if (i < 0) i = axle_graph_add_tensor(&g, name);
  CU_ASSERT_FATAL(i >= 0);
  return i;
}

/* A runtime input of known shape. */
static int32_t input(const char* name, int32_t dtype, uint32_t rank, const int64_t* dims) {
  int32_t i = tensor_named(name);
  axle_hal_tensor_t* t = &g.tensors[i];
  t->dtype = dtype;
  t->rank = rank;
  memcpy(t->shape, dims, rank * sizeof(int64_t));
  t->flags = AXLE_HAL_TENSOR_GRAPH_INPUT;
  return i;
}
#define IN(name, dtype, ...) input(name, dtype, NDIM(__VA_ARGS__), D(__VA_ARGS__))
#define SCALAR(name, dtype) input(name, dtype, 0, D(0))

/* A constant 1-D tensor (data in the graph arena, like an initializer). */
static int32_t constant(const char* name, int32_t dtype, uint32_t n, const void* values) {
  size_t es = axle_hal_dtype_size(dtype);
  int32_t i = input(name, dtype, 1, (const int64_t[]){n});
  axle_hal_tensor_t* t = &g.tensors[i];
  t->flags = AXLE_HAL_TENSOR_CONSTANT;
  t->data = axle_arena_dup(&g.arena, values, n * es, 64);
  t->size_bytes = n * es;
  return i;
}
#define CONST_I64(name, ...) constant(name, AXLE_DTYPE_I64, NDIM(__VA_ARGS__), D(__VA_ARGS__))

static int32_t scalar_const(const char* name, int32_t dtype, const void* value) {
  int32_t i = constant(name, dtype, 1, value);
  g.tensors[i].rank = 0;
  return i;
}

static axle_hal_attr_t a_int(const char* name, int64_t v) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_INT, .i = v, .tensor = -1};
}
static axle_hal_attr_t a_float(const char* name, float v) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_FLOAT, .f = v, .tensor = -1};
}
static axle_hal_attr_t a_str(const char* name, const char* s) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_STRING, .s = s, .tensor = -1};
}
static axle_hal_attr_t a_ints_(const char* name, uint32_t n, const int64_t* v) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_INTS, .count = n, .ints = v,
                           .tensor = -1};
}
#define a_ints(name, ...) a_ints_(name, NDIM(__VA_ARGS__), D(__VA_ARGS__))
static axle_hal_attr_t a_floats(const char* name, uint32_t n, const float* v) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_FLOATS, .count = n, .floats = v,
                           .tensor = -1};
}
static axle_hal_attr_t a_tensor(const char* name, int32_t tensor) {
  return (axle_hal_attr_t){.name = name, .type = AXLE_HAL_ATTR_TENSOR, .tensor = tensor};
}

/* Adds node (inputs "" = omitted, outputs created on demand) and infers it. */
static axle_status_t infer(const char* op, const char* const* ins, const char* const* outs,
                           uint32_t attr_count, const axle_hal_attr_t* attrs) {
  int32_t in[16], out[16];
  uint32_t ni = 0, no = 0;
  for (; *ins; ++ins) in[ni++] = (*ins)[0] ? tensor_named(*ins) : -1;
  for (; *outs; ++outs) out[no++] = (*outs)[0] ? tensor_named(*outs) : -1;
  axle_hal_node_t n = {.name = "n", .op_type = op, .input_count = ni, .inputs = in,
                       .output_count = no, .outputs = out, .attr_count = attr_count,
                       .attrs = attrs};
  int32_t index = axle_graph_add_node(&g, &n);
  CU_ASSERT_FATAL(index >= 0);
  axle_status_t st = axle_shape_infer_node(&g, (uint32_t)index);
  return st;
}
#define NO_INPUTS ((const char* const[]){NULL})

static void expect_(const char* name, int32_t dtype, uint32_t rank, const int64_t* dims,
                    int line) {
  const axle_hal_tensor_t* t = &g.tensors[tensor_named(name)];
  int ok = t->dtype == dtype && t->rank == rank &&
           memcmp(t->shape, dims, rank * sizeof(int64_t)) == 0;
  uint64_t bytes = axle_hal_dtype_size(dtype);
  for (uint32_t i = 0; i < rank; ++i) bytes *= (uint64_t)dims[i];
  ok = ok && t->size_bytes == bytes;
  if (!ok) {
    fprintf(stderr, "\n  line %d: '%s' is dtype %d rank %u [", line, name, t->dtype, t->rank);
    for (uint32_t i = 0; i < t->rank; ++i) fprintf(stderr, "%s%lld", i ? "," : "",
                                                   (long long)t->shape[i]);
    fprintf(stderr, "] (%llu bytes); status message: %s\n", (unsigned long long)t->size_bytes,
            axle_status_message());
  }
  CU_ASSERT(ok);
}
#define EXPECT(name, dtype, ...) expect_(name, dtype, NDIM(__VA_ARGS__), D(__VA_ARGS__), __LINE__)
#define EXPECT_SCALAR(name, dtype) expect_(name, dtype, 0, D(0), __LINE__)

/* Checks status and that the message holds every given fragment. */
static void fails_(axle_status_t st, axle_status_t code, const char* a, const char* b, int line) {
  const char* msg = axle_status_message();
  int ok = st == code && (!a || strstr(msg, a)) && (!b || strstr(msg, b));
  if (!ok) fprintf(stderr, "\n  line %d: status %d (want %d), message: %s\n", line, st, code, msg);
  CU_ASSERT(ok);
}
#define FAILS(st, code, a, b) fails_(st, code, a, b, __LINE__)
#define OK(st) fails_(st, AXLE_OK, NULL, NULL, __LINE__)

enum { F32 = AXLE_DTYPE_F32, I64 = AXLE_DTYPE_I64, I32 = AXLE_DTYPE_I32, U8 = AXLE_DTYPE_U8,
       I8 = AXLE_DTYPE_I8, BOOL = AXLE_DTYPE_BOOL, I16 = AXLE_DTYPE_I16, F64 = AXLE_DTYPE_F64 };

/* ------------------------------------------------------------------------ */
/* Dispatch and input checks                                                 */
/* ------------------------------------------------------------------------ */

static void test_dispatch(void) {
  setup(13);
  IN("x", F32, 2, 3);
  FAILS(infer("FancyOp", NAMES("x"), NAMES("y"), NO_ATTRS), AXLE_STATUS_UNSUPPORTED,
        "node 'n' (FancyOp): no shape inference for this op", NULL);

  IN("s", F32, -1, 3);
  FAILS(infer("Relu", NAMES("s"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_ARGUMENT,
        "node 'n' (Relu): input 's'", "symbolic");

  tensor_named("untyped");
  FAILS(infer("Relu", NAMES("untyped"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_ARGUMENT,
        "input 'untyped' has no known dtype", NULL);

  FAILS(infer("Add", NAMES("x"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "has 1 inputs", NULL);
  FAILS(infer("Conv", NAMES("", "x"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "required input 0 is missing", NULL);
  FAILS(axle_shape_infer_node(&g, 999), AXLE_STATUS_INVALID_ARGUMENT, "out of range", NULL);

  IN("i", I64, 4);
  FAILS(infer("Sigmoid", NAMES("i"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "node 'n' (Sigmoid): input 'i' has dtype int64", NULL);

  /* ai.onnx is the default domain's other name; anything else is not ours. */
  int32_t in = tensor_named("x"), out = tensor_named("y2");
  axle_hal_node_t n = {.name = "m", .op_type = "Relu", .domain = "com.microsoft",
                       .input_count = 1, .inputs = &in, .output_count = 1, .outputs = &out};
  int32_t idx = axle_graph_add_node(&g, &n);
  FAILS(axle_shape_infer_node(&g, (uint32_t)idx), AXLE_STATUS_UNSUPPORTED, "com.microsoft",
        "node 'm' (Relu)");
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------ */

static void test_broadcasting(void) {
  setup(13);
  IN("a", F32, 2, 3, 4);
  IN("b", F32, 4);
  IN("c", F32, 2, 1, 4);
  IN("d", F32, 3, 1);
  IN("e", F32, 2, 3);
  IN("z", F32, 0, 1);
  IN("one", F32, 1);
  OK(infer("Add", NAMES("a", "b"), NAMES("y1"), NO_ATTRS));
  EXPECT("y1", F32, 2, 3, 4);
  OK(infer("Mul", NAMES("c", "d"), NAMES("y2"), NO_ATTRS));
  EXPECT("y2", F32, 2, 3, 4);
  OK(infer("Sub", NAMES("z", "one"), NAMES("y3"), NO_ATTRS));
  EXPECT("y3", F32, 0, 1);
  OK(infer("Div", NAMES("one", "a"), NAMES("y4"), NO_ATTRS));
  EXPECT("y4", F32, 2, 3, 4);
  FAILS(infer("Add", NAMES("e", "b"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "node 'n' (Add): inputs 'e' [2,3] and 'b' [4] cannot be broadcast", NULL);
  FAILS(infer("Add", NAMES("z", "e"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "cannot be broadcast", NULL);
  IN("i", I64, 4);
  FAILS(infer("Add", NAMES("a", "i"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'i' is int64 but input 'a' is float32", NULL);

  OK(infer("Less", NAMES("a", "b"), NAMES("lt"), NO_ATTRS));
  EXPECT("lt", BOOL, 2, 3, 4);
  OK(infer("Equal", NAMES("i", "i"), NAMES("eq"), NO_ATTRS));
  EXPECT("eq", BOOL, 4);
  IN("cond", BOOL, 3, 1);
  OK(infer("Where", NAMES("cond", "b", "c"), NAMES("w"), NO_ATTRS));
  EXPECT("w", F32, 2, 3, 4);
  FAILS(infer("Where", NAMES("a", "b", "c"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'a' has dtype float32", NULL);

  OK(infer("Sum", NAMES("a", "b", "c", "d"), NAMES("sum"), NO_ATTRS));
  EXPECT("sum", F32, 2, 3, 4);
  FAILS(infer("Max", NAMES("a", "b", "e"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'e' [2,3] cannot be broadcast with [2,3,4]", NULL);
  OK(infer("Pow", NAMES("a", "i"), NAMES("pow"), NO_ATTRS)); /* exponent may differ */
  EXPECT("pow", F32, 2, 3, 4);

  /* Before opset 7 (8 for Sum/Max/...) broadcasting was opt-in and limited. */
  setup(6);
  IN("a", F32, 2, 3, 4);
  IN("b", F32, 3);
  FAILS(infer("Add", NAMES("a", "b"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "same shape (broadcast=0", NULL);
  OK(infer("Add", NAMES("a", "b"), NAMES("y"), ATTRS(a_int("broadcast", 1), a_int("axis", 1))));
  EXPECT("y", F32, 2, 3, 4);
  FAILS(infer("Add", NAMES("a", "b"), NAMES("y"), ATTRS(a_int("broadcast", 1))),
        AXLE_STATUS_INVALID_MODEL, "legacy broadcasting", NULL);
  setup(7);
  IN("a", F32, 2, 3);
  IN("b", F32, 3);
  FAILS(infer("Sum", NAMES("a", "b"), NAMES("y"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "same shape before opset 8", NULL);
}

static void test_unary(void) {
  setup(13);
  IN("x", F32, 2, 5);
  static const char* const kOps[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg",
                                     "Abs", "Reciprocal", "Floor", "Ceil", "Erf", "Elu", "Selu",
                                     "Softplus", "Identity", "LeakyRelu", "HardSigmoid",
                                     "HardSwish"};
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    char out[32];
    snprintf(out, sizeof(out), "y_%s", kOps[i]);
    OK(infer(kOps[i], NAMES("x"), ((const char* const[]){out, NULL}), NO_ATTRS));
    EXPECT(out, F32, 2, 5);
  }
  IN("b", BOOL, 3);
  OK(infer("Not", NAMES("b"), NAMES("nb"), NO_ATTRS));
  EXPECT("nb", BOOL, 3);
  FAILS(infer("Not", NAMES("x"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'x' has dtype float32", NULL);

  OK(infer("Softmax", NAMES("x"), NAMES("sm"), ATTRS(a_int("axis", -1))));
  EXPECT("sm", F32, 2, 5);
  FAILS(infer("LogSoftmax", NAMES("x"), NAMES("bad"), ATTRS(a_int("axis", 2))),
        AXLE_STATUS_INVALID_MODEL, "axis 2 is out of range for input 'x'", NULL);

  /* Dropout: the optional mask is bool from opset 10, the input type before. */
  OK(infer("Dropout", NAMES("x"), NAMES("dy", "mask"), NO_ATTRS));
  EXPECT("dy", F32, 2, 5);
  EXPECT("mask", BOOL, 2, 5);
  OK(infer("Dropout", NAMES("x"), NAMES("dy2"), NO_ATTRS));
  setup(7);
  IN("x", F32, 2, 5);
  OK(infer("Dropout", NAMES("x"), NAMES("dy", "mask"), NO_ATTRS));
  EXPECT("mask", F32, 2, 5);
  /* Softmax before 13 coerces to 2-D at axis (default 1), so axis = rank is fine. */
  OK(infer("Softmax", NAMES("x"), NAMES("sm"), ATTRS(a_int("axis", 2))));
}

static void test_clip(void) {
  setup(6);
  IN("x", F32, 4);
  OK(infer("Clip", NAMES("x"), NAMES("y"), ATTRS(a_float("min", 0), a_float("max", 6))));
  EXPECT("y", F32, 4);
  setup(13);
  IN("x", F32, 4);
  SCALAR("lo", F32);
  IN("hi", F32, 1);
  IN("bad", F32, 2);
  IN("i", I64, 1);
  OK(infer("Clip", NAMES("x", "lo", "hi"), NAMES("y"), NO_ATTRS));
  OK(infer("Clip", NAMES("x", "", "hi"), NAMES("y2"), NO_ATTRS));
  EXPECT("y2", F32, 4);
  FAILS(infer("Clip", NAMES("x", "bad"), NAMES("y3"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "min input 'bad' must be a scalar", NULL);
  FAILS(infer("Clip", NAMES("x", "", "i"), NAMES("y3"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'i' is int64 but input 'x' is float32", NULL);
}

static void test_cast(void) {
  setup(13);
  IN("x", F32, 2, 3);
  OK(infer("Cast", NAMES("x"), NAMES("y"), ATTRS(a_int("to", AXLE_DTYPE_F16))));
  EXPECT("y", AXLE_DTYPE_F16, 2, 3);
  FAILS(infer("Cast", NAMES("x"), NAMES("s"), ATTRS(a_int("to", AXLE_DTYPE_STRING))),
        AXLE_STATUS_UNSUPPORTED, "cannot cast", NULL);
  FAILS(infer("Cast", NAMES("x"), NAMES("s"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "attribute 'to' is required", NULL);
  setup(1); /* Cast-1 names the type */
  IN("x", F32, 2);
  OK(infer("Cast", NAMES("x"), NAMES("y"), ATTRS(a_str("to", "INT64"))));
  EXPECT("y", I64, 2);
}

/* ------------------------------------------------------------------------ */
/* Convolution and pooling                                                   */
/* ------------------------------------------------------------------------ */

static void test_conv(void) {
  setup(13);
  IN("x", F32, 1, 3, 32, 32);
  IN("w", F32, 8, 3, 3, 3);
  IN("b", F32, 8);
  OK(infer("Conv", NAMES("x", "w", "b"), NAMES("y"), ATTRS(a_ints("pads", 1, 1, 1, 1))));
  EXPECT("y", F32, 1, 8, 32, 32);
  OK(infer("Conv", NAMES("x", "w"), NAMES("y2"), ATTRS(a_ints("strides", 2, 2))));
  EXPECT("y2", F32, 1, 8, 15, 15);
  OK(infer("Conv", NAMES("x", "w"), NAMES("y3"), ATTRS(a_ints("dilations", 2, 3))));
  EXPECT("y3", F32, 1, 8, 28, 26);
  OK(infer("Conv", NAMES("x", "w"), NAMES("y4"),
           ATTRS(a_ints("kernel_shape", 3, 3), a_ints("pads", 0, 1, 2, 3),
                 a_ints("strides", 1, 2))));
  EXPECT("y4", F32, 1, 8, 32, 17);

  /* auto_pad: SAME keeps ceil(in / stride), VALID drops the border. */
  IN("x33", F32, 2, 3, 33, 20);
  OK(infer("Conv", NAMES("x33", "w"), NAMES("su"),
           ATTRS(a_str("auto_pad", "SAME_UPPER"), a_ints("strides", 2, 3))));
  EXPECT("su", F32, 2, 8, 17, 7);
  OK(infer("Conv", NAMES("x33", "w"), NAMES("sl"),
           ATTRS(a_str("auto_pad", "SAME_LOWER"), a_ints("pads", 9, 9, 9, 9))));
  EXPECT("sl", F32, 2, 8, 33, 20);
  OK(infer("Conv", NAMES("x33", "w"), NAMES("va"),
           ATTRS(a_str("auto_pad", "VALID"), a_ints("strides", 2, 2))));
  EXPECT("va", F32, 2, 8, 16, 9);
  FAILS(infer("Conv", NAMES("x33", "w"), NAMES("bad"), ATTRS(a_str("auto_pad", "SAME"))),
        AXLE_STATUS_INVALID_MODEL, "auto_pad' has unknown value 'SAME'", NULL);

  /* Groups: depthwise and grouped. */
  IN("dw", F32, 3, 1, 3, 3);
  OK(infer("Conv", NAMES("x", "dw"), NAMES("dwy"), ATTRS(a_int("group", 3))));
  EXPECT("dwy", F32, 1, 3, 30, 30);
  IN("x4", F32, 1, 4, 8, 8);
  IN("wg", F32, 6, 2, 1, 1);
  OK(infer("Conv", NAMES("x4", "wg"), NAMES("gy"), ATTRS(a_int("group", 2))));
  EXPECT("gy", F32, 1, 6, 8, 8);

  /* 1-D and 3-D convolutions. */
  IN("x1", F32, 1, 2, 10);
  IN("w1", F32, 4, 2, 3);
  OK(infer("Conv", NAMES("x1", "w1"), NAMES("c1"), NO_ATTRS));
  EXPECT("c1", F32, 1, 4, 8);
  IN("x3", F32, 1, 1, 5, 6, 7);
  IN("w3", F32, 2, 1, 3, 3, 3);
  OK(infer("Conv", NAMES("x3", "w3"), NAMES("c3"), NO_ATTRS));
  EXPECT("c3", F32, 1, 2, 3, 4, 5);

  IN("w4", F32, 8, 4, 3, 3);
  FAILS(infer("Conv", NAMES("x", "w4"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "node 'n' (Conv): input 'x' has 3 channels but weight 'w4' expects 4", NULL);
  IN("b5", F32, 5);
  FAILS(infer("Conv", NAMES("x", "w", "b5"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "bias 'b5' [5] must have shape [8]", NULL);
  IN("w2d", F32, 8, 3);
  FAILS(infer("Conv", NAMES("x", "w2d"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "weight 'w2d'", NULL);
  FAILS(infer("Conv", NAMES("x", "w"), NAMES("bad"), ATTRS(a_ints("kernel_shape", 5, 5))),
        AXLE_STATUS_INVALID_MODEL, "kernel_shape", NULL);
  FAILS(infer("Conv", NAMES("x", "w"), NAMES("bad"), ATTRS(a_ints("pads", 1, 1))),
        AXLE_STATUS_INVALID_MODEL, "pads needs 2 per dim", NULL);
  FAILS(infer("Conv", NAMES("x", "w"), NAMES("bad"), ATTRS(a_ints("strides", 0, 1))),
        AXLE_STATUS_INVALID_MODEL, "must all be >= 1", NULL);
  IN("tiny", F32, 1, 3, 2, 2);
  FAILS(infer("Conv", NAMES("tiny", "w"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "larger than input 'tiny'", NULL);
  FAILS(infer("Conv", NAMES("x", "w"), NAMES("bad"),
              ATTRS(a_ints("pads", INT64_MAX, 0, INT64_MAX, 0))),
        AXLE_STATUS_INVALID_MODEL, "too large", NULL);
  IN("wg4", F32, 6, 1, 1, 1);
  FAILS(infer("Conv", NAMES("x4", "wg4"), NAMES("bad"), ATTRS(a_int("group", 4))),
        AXLE_STATUS_INVALID_MODEL, "not a multiple of group 4", NULL);
}

static void test_pooling(void) {
  setup(13);
  IN("x", F32, 1, 2, 5, 5);
  OK(infer("MaxPool", NAMES("x"), NAMES("y", "idx"),
           ATTRS(a_ints("kernel_shape", 2, 2), a_ints("strides", 2, 2))));
  EXPECT("y", F32, 1, 2, 2, 2);
  EXPECT("idx", I64, 1, 2, 2, 2);
  OK(infer("MaxPool", NAMES("x"), NAMES("yc"),
           ATTRS(a_ints("kernel_shape", 2, 2), a_ints("strides", 2, 2), a_int("ceil_mode", 1))));
  EXPECT("yc", F32, 1, 2, 3, 3);
  OK(infer("AveragePool", NAMES("x"), NAMES("ap"),
           ATTRS(a_ints("kernel_shape", 3, 3), a_ints("pads", 1, 1, 1, 1),
                 a_int("count_include_pad", 1))));
  EXPECT("ap", F32, 1, 2, 5, 5);
  OK(infer("MaxPool", NAMES("x"), NAMES("dil"),
           ATTRS(a_ints("kernel_shape", 2, 2), a_ints("dilations", 2, 2))));
  EXPECT("dil", F32, 1, 2, 3, 3);
  OK(infer("AveragePool", NAMES("x"), NAMES("same"),
           ATTRS(a_ints("kernel_shape", 3, 3), a_ints("strides", 2, 2),
                 a_str("auto_pad", "SAME_UPPER"))));
  EXPECT("same", F32, 1, 2, 3, 3);

  /* ceil_mode never adds a window that would start in the end padding
   * (onnx backend test maxpool_2d_ceil_output_size_reduce_by_one). */
  IN("x2", F32, 1, 1, 2, 2);
  OK(infer("MaxPool", NAMES("x2"), NAMES("r1"),
           ATTRS(a_ints("kernel_shape", 1, 1), a_ints("strides", 2, 2), a_int("ceil_mode", 1))));
  EXPECT("r1", F32, 1, 1, 1, 1);
  /* ...while a window starting inside the padded input is kept. */
  IN("x4", F32, 1, 1, 4, 4);
  OK(infer("MaxPool", NAMES("x4"), NAMES("c4"),
           ATTRS(a_ints("kernel_shape", 3, 3), a_ints("strides", 2, 2),
                 a_ints("pads", 1, 1, 1, 1), a_int("ceil_mode", 1))));
  EXPECT("c4", F32, 1, 1, 3, 3);

  FAILS(infer("MaxPool", NAMES("x"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "attribute 'kernel_shape' needs 2 values", NULL);
  IN("flat", F32, 4, 4);
  FAILS(infer("AveragePool", NAMES("flat"), NAMES("bad"), ATTRS(a_ints("kernel_shape", 2))),
        AXLE_STATUS_INVALID_MODEL, "input 'flat' [4,4] must have rank >= 3", NULL);

  OK(infer("GlobalAveragePool", NAMES("x"), NAMES("gap"), NO_ATTRS));
  EXPECT("gap", F32, 1, 2, 1, 1);
  IN("x3d", F32, 2, 3, 4, 5, 6);
  OK(infer("GlobalMaxPool", NAMES("x3d"), NAMES("gmp"), NO_ATTRS));
  EXPECT("gmp", F32, 2, 3, 1, 1, 1);
}

static void test_batchnorm(void) {
  setup(15);
  IN("x", F32, 2, 4, 3, 3);
  IN("s", F32, 4);
  IN("b", F32, 4);
  IN("m", F32, 4);
  IN("v", F32, 4);
  IN("v5", F32, 5);
  OK(infer("BatchNormalization", NAMES("x", "s", "b", "m", "v"), NAMES("y"),
           ATTRS(a_float("epsilon", 1e-5f))));
  EXPECT("y", F32, 2, 4, 3, 3);
  FAILS(infer("BatchNormalization", NAMES("x", "s", "b", "m", "v5"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "input 'v5' [5] must have shape [4]", NULL);
}

/* ------------------------------------------------------------------------ */
/* Matrix products                                                           */
/* ------------------------------------------------------------------------ */

static void test_gemm(void) {
  setup(13);
  IN("a", F32, 4, 3);
  IN("at", F32, 3, 4);
  IN("b", F32, 3, 5);
  IN("bt", F32, 5, 3);
  IN("c", F32, 5);
  IN("c2", F32, 4, 1);
  IN("cbad", F32, 4);
  OK(infer("Gemm", NAMES("a", "b", "c"), NAMES("y"), NO_ATTRS));
  EXPECT("y", F32, 4, 5);
  OK(infer("Gemm", NAMES("at", "bt", "c2"), NAMES("yt"),
           ATTRS(a_int("transA", 1), a_int("transB", 1))));
  EXPECT("yt", F32, 4, 5);
  OK(infer("Gemm", NAMES("a", "b"), NAMES("noc"), NO_ATTRS));
  FAILS(infer("Gemm", NAMES("a", "bt"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "different inner dimensions (3 vs 5)", NULL);
  FAILS(infer("Gemm", NAMES("a", "b", "cbad"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "input 'cbad' [4] cannot be broadcast to the output [4,5]",
        NULL);
  setup(9);
  IN("a", F32, 4, 3);
  IN("b", F32, 3, 5);
  FAILS(infer("Gemm", NAMES("a", "b"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input C is required", NULL);
}

static void test_matmul(void) {
  setup(13);
  IN("v3", F32, 3);
  IN("m34", F32, 3, 4);
  IN("b234", F32, 2, 3, 4);
  IN("v4", F32, 4);
  IN("b2134", F32, 2, 1, 3, 4);
  IN("b546", F32, 5, 4, 6);
  OK(infer("MatMul", NAMES("v3", "m34"), NAMES("y1"), NO_ATTRS));
  EXPECT("y1", F32, 4);
  OK(infer("MatMul", NAMES("b234", "v4"), NAMES("y2"), NO_ATTRS));
  EXPECT("y2", F32, 2, 3);
  OK(infer("MatMul", NAMES("b2134", "b546"), NAMES("y3"), NO_ATTRS));
  EXPECT("y3", F32, 2, 5, 3, 6);
  OK(infer("MatMul", NAMES("v3", "v3"), NAMES("dot"), NO_ATTRS));
  EXPECT_SCALAR("dot", F32);
  FAILS(infer("MatMul", NAMES("m34", "m34"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "inputs 'm34' [3,4] and 'm34' [3,4] have different inner dimensions", NULL);
  IN("b334", F32, 3, 3, 4);
  IN("b245", F32, 2, 4, 5);
  FAILS(infer("MatMul", NAMES("b334", "b245"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "batch dimensions", NULL);
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static void test_flatten(void) {
  setup(13);
  IN("x", F32, 2, 3, 4, 5);
  OK(infer("Flatten", NAMES("x"), NAMES("y"), NO_ATTRS));
  EXPECT("y", F32, 2, 60);
  OK(infer("Flatten", NAMES("x"), NAMES("y0"), ATTRS(a_int("axis", 0))));
  EXPECT("y0", F32, 1, 120);
  OK(infer("Flatten", NAMES("x"), NAMES("y4"), ATTRS(a_int("axis", 4))));
  EXPECT("y4", F32, 120, 1);
  OK(infer("Flatten", NAMES("x"), NAMES("yn"), ATTRS(a_int("axis", -1))));
  EXPECT("yn", F32, 24, 5);
  FAILS(infer("Flatten", NAMES("x"), NAMES("bad"), ATTRS(a_int("axis", 5))),
        AXLE_STATUS_INVALID_MODEL, "axis 5 is out of range for input 'x'", NULL);
  setup(9); /* negative axes arrived in opset 11 */
  IN("x", F32, 2, 3);
  FAILS(infer("Flatten", NAMES("x"), NAMES("bad"), ATTRS(a_int("axis", -1))),
        AXLE_STATUS_INVALID_MODEL, "axis -1", NULL);
}

static void test_reshape(void) {
  setup(13);
  IN("x", F32, 2, 3, 4);
  CONST_I64("s1", 0, -1);
  OK(infer("Reshape", NAMES("x", "s1"), NAMES("y1"), NO_ATTRS));
  EXPECT("y1", F32, 2, 12);
  CONST_I64("s2", -1, 0, 2, 2);
  OK(infer("Reshape", NAMES("x", "s2"), NAMES("y2"), NO_ATTRS));
  EXPECT("y2", F32, 2, 3, 2, 2);
  CONST_I64("s3", 24);
  OK(infer("Reshape", NAMES("x", "s3"), NAMES("y3"), NO_ATTRS));
  EXPECT("y3", F32, 24);
  constant("s32", I32, 2, (const int32_t[]){4, 6});
  OK(infer("Reshape", NAMES("x", "s32"), NAMES("y4"), NO_ATTRS));
  EXPECT("y4", F32, 4, 6);
  CONST_I64("bad1", 5, -1);
  FAILS(infer("Reshape", NAMES("x", "bad1"), NAMES("e"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "cannot reshape input 'x' [2,3,4] (24 elements) to [5,-1]", NULL);
  CONST_I64("bad2", -1, -1);
  FAILS(infer("Reshape", NAMES("x", "bad2"), NAMES("e"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "more than one -1", NULL);
  CONST_I64("bad3", 2, 3, 5);
  FAILS(infer("Reshape", NAMES("x", "bad3"), NAMES("e"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "(30 elements)", NULL);
  CONST_I64("bad4", 0, 0, 0, 0);
  FAILS(infer("Reshape", NAMES("x", "bad4"), NAMES("e"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "0 at index 3", NULL);
  IN("dyn", I64, 2);
  FAILS(infer("Reshape", NAMES("x", "dyn"), NAMES("e"), NO_ATTRS), AXLE_STATUS_UNSUPPORTED,
        "node 'n' (Reshape): shape input 'dyn' is not constant; pass it as a constant input",
        NULL);

  /* allowzero (opset 14): 0 means an empty dim, not "copy". */
  setup(14);
  IN("z", F32, 0, 4);
  CONST_I64("s", 0, 4);
  OK(infer("Reshape", NAMES("z", "s"), NAMES("y"), ATTRS(a_int("allowzero", 1))));
  EXPECT("y", F32, 0, 4);
  IN("x", F32, 2, 3);
  CONST_I64("s2", 0, 3);
  FAILS(infer("Reshape", NAMES("x", "s2"), NAMES("e"), ATTRS(a_int("allowzero", 1))),
        AXLE_STATUS_INVALID_MODEL, "cannot reshape", NULL);
  OK(infer("Reshape", NAMES("x", "s2"), NAMES("y2"), NO_ATTRS)); /* 0 copies dim 0 */
  EXPECT("y2", F32, 2, 3);

  setup(4); /* Reshape-1..4: shape is an attribute */
  IN("x", F32, 2, 3);
  OK(infer("Reshape", NAMES("x"), NAMES("y"), ATTRS(a_ints("shape", 3, -1))));
  EXPECT("y", F32, 3, 2);
}

static void test_transpose_concat(void) {
  setup(13);
  IN("x", F32, 2, 3, 4);
  OK(infer("Transpose", NAMES("x"), NAMES("t"), NO_ATTRS));
  EXPECT("t", F32, 4, 3, 2);
  OK(infer("Transpose", NAMES("x"), NAMES("p"), ATTRS(a_ints("perm", 1, 2, 0))));
  EXPECT("p", F32, 3, 4, 2);
  FAILS(infer("Transpose", NAMES("x"), NAMES("bad"), ATTRS(a_ints("perm", 0, 0, 1))),
        AXLE_STATUS_INVALID_MODEL, "not a permutation", NULL);

  IN("y", F32, 2, 5, 4);
  IN("z", F32, 2, 1, 4);
  OK(infer("Concat", NAMES("x", "y", "z"), NAMES("c"), ATTRS(a_int("axis", 1))));
  EXPECT("c", F32, 2, 9, 4);
  OK(infer("Concat", NAMES("x", "x"), NAMES("cn"), ATTRS(a_int("axis", -1))));
  EXPECT("cn", F32, 2, 3, 8);
  FAILS(infer("Concat", NAMES("x", "y"), NAMES("bad"), ATTRS(a_int("axis", 0))),
        AXLE_STATUS_INVALID_MODEL, "input 'y' [2,5,4] does not match input 'x' [2,3,4] outside "
        "axis 0", NULL);
  FAILS(infer("Concat", NAMES("x", "y"), NAMES("bad"), ATTRS(a_int("axis", 3))),
        AXLE_STATUS_INVALID_MODEL, "axis 3 is out of range", NULL);
  FAILS(infer("Concat", NAMES("x", "y"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "attribute 'axis' is required", NULL);
  IN("i", I64, 2, 3, 4);
  FAILS(infer("Concat", NAMES("x", "i"), NAMES("bad"), ATTRS(a_int("axis", 0))),
        AXLE_STATUS_INVALID_MODEL, "must have the same dtype", NULL);
}

static void test_slice(void) {
  setup(13);
  IN("x", F32, 10, 20, 5);
  CONST_I64("st", 1, 0);
  CONST_I64("en", 1000, -1);
  CONST_I64("ax", 0, 2);
  OK(infer("Slice", NAMES("x", "st", "en", "ax"), NAMES("y"), NO_ATTRS));
  EXPECT("y", F32, 9, 20, 4);
  /* Reversal: x[::-1] along axis 0, starts -1, ends INT64_MIN. */
  CONST_I64("rs", -1);
  CONST_I64("re", INT64_MIN);
  CONST_I64("a0", 0);
  CONST_I64("m1", -1);
  OK(infer("Slice", NAMES("x", "rs", "re", "a0", "m1"), NAMES("rev"), NO_ATTRS));
  EXPECT("rev", F32, 10, 20, 5);
  /* x[8:0:-3] -> 8, 5, 2. */
  CONST_I64("s8", 8);
  CONST_I64("e0", 0);
  CONST_I64("m3", -3);
  OK(infer("Slice", NAMES("x", "s8", "e0", "a0", "m3"), NAMES("y3"), NO_ATTRS));
  EXPECT("y3", F32, 3, 20, 5);
  /* Negative axis, steps of 2, start clamped at the end: empty. */
  CONST_I64("s2", 1);
  CONST_I64("e2", 20);
  CONST_I64("an", -2);
  CONST_I64("p2", 2);
  OK(infer("Slice", NAMES("x", "s2", "e2", "an", "p2"), NAMES("y4"), NO_ATTRS));
  EXPECT("y4", F32, 10, 10, 5);
  CONST_I64("big", 100);
  OK(infer("Slice", NAMES("x", "big", "e2", "a0"), NAMES("y5"), NO_ATTRS));
  EXPECT("y5", F32, 0, 20, 5);
  CONST_I64("huge_step", INT64_MIN);
  OK(infer("Slice", NAMES("x", "rs", "re", "a0", "huge_step"), NAMES("y6"), NO_ATTRS));
  EXPECT("y6", F32, 1, 20, 5);

  CONST_I64("zero", 0);
  FAILS(infer("Slice", NAMES("x", "s2", "e2", "a0", "zero"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "steps[0] is 0", NULL);
  CONST_I64("twice", 0, 0);
  CONST_I64("two", 0, 0);
  FAILS(infer("Slice", NAMES("x", "two", "two", "twice"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "axis 0 is sliced twice", NULL);
  FAILS(infer("Slice", NAMES("x", "two", "e2"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "different lengths", NULL);
  IN("dyn", I64, 1);
  FAILS(infer("Slice", NAMES("x", "dyn", "e2"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_UNSUPPORTED,
        "starts input 'dyn' is not constant", NULL);

  setup(9); /* Slice-1: attributes, no steps */
  IN("x", F32, 10, 20);
  OK(infer("Slice", NAMES("x"), NAMES("y"),
           ATTRS(a_ints("starts", 2, -5), a_ints("ends", -2, 1000), a_ints("axes", 0, 1))));
  EXPECT("y", F32, 6, 5);
  OK(infer("Slice", NAMES("x"), NAMES("y2"), ATTRS(a_ints("starts", 3), a_ints("ends", 4))));
  EXPECT("y2", F32, 1, 20);
}

static void test_squeeze_unsqueeze(void) {
  /* Opset 11: axes are attributes (negative allowed). */
  setup(11);
  IN("x", F32, 1, 3, 1, 4);
  OK(infer("Squeeze", NAMES("x"), NAMES("all"), NO_ATTRS));
  EXPECT("all", F32, 3, 4);
  OK(infer("Squeeze", NAMES("x"), NAMES("one"), ATTRS(a_ints("axes", -2))));
  EXPECT("one", F32, 1, 3, 4);
  FAILS(infer("Squeeze", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 1))),
        AXLE_STATUS_INVALID_MODEL, "cannot squeeze axis 1 of input 'x' [1,3,1,4]", NULL);
  OK(infer("Unsqueeze", NAMES("x"), NAMES("u"), ATTRS(a_ints("axes", 0, -1))));
  EXPECT("u", F32, 1, 1, 3, 1, 4, 1);
  FAILS(infer("Unsqueeze", NAMES("x"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "axes are required", NULL);
  FAILS(infer("Unsqueeze", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 1, 1))),
        AXLE_STATUS_INVALID_MODEL, "axis 1 appears twice", NULL);
  FAILS(infer("Unsqueeze", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 6))),
        AXLE_STATUS_INVALID_MODEL, "axis 6 is out of range for the output of rank 5", NULL);

  /* Opset 13: axes are an input; an axes attribute is ignored. */
  setup(13);
  IN("x", F32, 1, 3, 1, 4);
  CONST_I64("a", 2, 0);
  OK(infer("Squeeze", NAMES("x", "a"), NAMES("s"), ATTRS(a_ints("axes", 2))));
  EXPECT("s", F32, 3, 4);
  OK(infer("Squeeze", NAMES("x"), NAMES("all"), NO_ATTRS));
  EXPECT("all", F32, 3, 4);
  CONST_I64("u", 1, 3);
  OK(infer("Unsqueeze", NAMES("x", "u"), NAMES("un"), NO_ATTRS));
  EXPECT("un", F32, 1, 1, 3, 1, 1, 4);
  FAILS(infer("Unsqueeze", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 0))),
        AXLE_STATUS_INVALID_MODEL, "axes are required", NULL);
  IN("dyn", I64, 1);
  FAILS(infer("Unsqueeze", NAMES("x", "dyn"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_UNSUPPORTED,
        "axes input 'dyn' is not constant", NULL);
  SCALAR("s0", F32);
  CONST_I64("z", 0);
  OK(infer("Unsqueeze", NAMES("s0", "z"), NAMES("s1"), NO_ATTRS));
  EXPECT("s1", F32, 1);
}

static void test_pad(void) {
  setup(11);
  IN("x", F32, 1, 3, 4, 4);
  CONST_I64("p", 0, 0, 1, 2, 0, 0, 3, -1);
  OK(infer("Pad", NAMES("x", "p"), NAMES("y"), ATTRS(a_str("mode", "reflect"))));
  EXPECT("y", F32, 1, 3, 8, 5);
  SCALAR("v", F32);
  OK(infer("Pad", NAMES("x", "p", "v"), NAMES("y2"), NO_ATTRS));
  EXPECT("y2", F32, 1, 3, 8, 5);
  CONST_I64("short", 1, 1);
  FAILS(infer("Pad", NAMES("x", "short"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "pads has 2 values; expected 8", NULL);
  CONST_I64("neg", 0, 0, 0, -3, 0, 0, 0, -2);
  FAILS(infer("Pad", NAMES("x", "neg"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "do not fit axis 3", NULL);
  FAILS(infer("Pad", NAMES("x", "p"), NAMES("bad"), ATTRS(a_str("mode", "wrap"))),
        AXLE_STATUS_INVALID_MODEL, "unknown value 'wrap'", NULL);
  setup(2); /* Pad-2: pads attribute */
  IN("x", F32, 2, 2);
  OK(infer("Pad", NAMES("x"), NAMES("y"), ATTRS(a_ints("pads", 1, 0, 1, 3))));
  EXPECT("y", F32, 4, 5);
  setup(18); /* Pad-18: axes input */
  IN("x", F32, 2, 2, 2);
  CONST_I64("p", 1, 2);
  CONST_I64("ax", -1);
  OK(infer("Pad", NAMES("x", "p", "", "ax"), NAMES("y"), ATTRS(a_str("mode", "edge"))));
  EXPECT("y", F32, 2, 2, 5);
}

static void test_gather(void) {
  setup(13);
  IN("x", F32, 3, 4, 5);
  IN("idx", I64, 2, 6);
  OK(infer("Gather", NAMES("x", "idx"), NAMES("y"), ATTRS(a_int("axis", 1))));
  EXPECT("y", F32, 3, 2, 6, 5);
  OK(infer("Gather", NAMES("x", "idx"), NAMES("y0"), NO_ATTRS));
  EXPECT("y0", F32, 2, 6, 4, 5);
  scalar_const("s", I64, (const int64_t[]){-1});
  OK(infer("Gather", NAMES("x", "s"), NAMES("ys"), ATTRS(a_int("axis", -1))));
  EXPECT("ys", F32, 3, 4);
  constant("ok32", I32, 3, (const int32_t[]){-4, 0, 3});
  OK(infer("Gather", NAMES("x", "ok32"), NAMES("y32"), ATTRS(a_int("axis", 1))));
  EXPECT("y32", F32, 3, 3, 5);
  CONST_I64("oob", 0, -5);
  FAILS(infer("Gather", NAMES("x", "oob"), NAMES("bad"), ATTRS(a_int("axis", 1))),
        AXLE_STATUS_INVALID_MODEL, "index -5 in 'oob' is out of range for axis 1", NULL);
  FAILS(infer("Gather", NAMES("x", "idx"), NAMES("bad"), ATTRS(a_int("axis", 3))),
        AXLE_STATUS_INVALID_MODEL, "axis 3 is out of range for input 'x' of rank 3", NULL);
  IN("fidx", F32, 2);
  FAILS(infer("Gather", NAMES("x", "fidx"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'fidx' has dtype float32", NULL);
}

static void test_split(void) {
  setup(13);
  IN("x", F32, 2, 10);
  CONST_I64("sp", 3, 7);
  OK(infer("Split", NAMES("x", "sp"), NAMES("a", "b"), ATTRS(a_int("axis", -1))));
  EXPECT("a", F32, 2, 3);
  EXPECT("b", F32, 2, 7);
  OK(infer("Split", NAMES("x"), NAMES("e1", "e2"), ATTRS(a_int("axis", 1))));
  EXPECT("e2", F32, 2, 5);
  FAILS(infer("Split", NAMES("x"), NAMES("u1", "u2", "u3"), ATTRS(a_int("axis", 1))),
        AXLE_STATUS_INVALID_MODEL, "does not split evenly into 3 outputs", NULL);
  CONST_I64("sp2", 3, 6);
  FAILS(infer("Split", NAMES("x", "sp2"), NAMES("c", "d"), ATTRS(a_int("axis", 1))),
        AXLE_STATUS_INVALID_MODEL, "split sums to 9 but axis 1 of input 'x' has size 10", NULL);
  setup(11); /* split attribute */
  IN("x", F32, 6);
  OK(infer("Split", NAMES("x"), NAMES("a", "b", "c"), ATTRS(a_ints("split", 1, 2, 3))));
  EXPECT("c", F32, 3);
  setup(18); /* num_outputs: ceil-sized chunks, the last smaller */
  IN("x", F32, 7, 2);
  OK(infer("Split", NAMES("x"), NAMES("a", "b", "c"), ATTRS(a_int("num_outputs", 3))));
  EXPECT("a", F32, 3, 2);
  EXPECT("c", F32, 1, 2);
  FAILS(infer("Split", NAMES("x"), NAMES("d", "e"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "num_outputs", NULL);
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */
/* ------------------------------------------------------------------------ */

static void test_constant_and_shape(void) {
  setup(15);
  IN("x", F32, 2, 3, 4);
  OK(infer("Shape", NAMES("x"), NAMES("s"), NO_ATTRS));
  EXPECT("s", I64, 3);
  const axle_hal_tensor_t* s = &g.tensors[tensor_named("s")];
  CU_ASSERT_FATAL(s->data != NULL);
  CU_ASSERT(s->flags & AXLE_HAL_TENSOR_CONSTANT);
  CU_ASSERT_EQUAL(((const int64_t*)s->data)[2], 4);
  OK(infer("Shape", NAMES("x"), NAMES("s2"), ATTRS(a_int("start", -2), a_int("end", 100))));
  EXPECT("s2", I64, 2);
  CU_ASSERT_EQUAL(((const int64_t*)g.tensors[tensor_named("s2")].data)[0], 3);
  OK(infer("Shape", NAMES("x"), NAMES("s3"), ATTRS(a_int("start", 2), a_int("end", 1))));
  EXPECT("s3", I64, 0);
  /* Shape's value feeds shape-dependent ops directly. */
  OK(infer("Reshape", NAMES("x", "s"), NAMES("same"), NO_ATTRS));
  EXPECT("same", F32, 2, 3, 4);

  OK(infer("Constant", NO_INPUTS, NAMES("k"), ATTRS(a_ints("value_ints", 5, 6, 7))));
  EXPECT("k", I64, 3);
  CU_ASSERT_EQUAL(((const int64_t*)g.tensors[tensor_named("k")].data)[2], 7);
  OK(infer("Constant", NO_INPUTS, NAMES("f"), ATTRS(a_float("value_float", 2.5f))));
  EXPECT_SCALAR("f", F32);
  CU_ASSERT_EQUAL(*(const float*)g.tensors[tensor_named("f")].data, 2.5f);
  OK(infer("Constant", NO_INPUTS, NAMES("i"), ATTRS(a_int("value_int", -3))));
  EXPECT_SCALAR("i", I64);
  OK(infer("Constant", NO_INPUTS, NAMES("fs"),
           ATTRS(a_floats("value_floats", 2, (const float[]){1, 2}))));
  EXPECT("fs", F32, 2);
  int32_t vt = CONST_I64("attr_tensor", 9, 8);
  OK(infer("Constant", NO_INPUTS, NAMES("kt"), ATTRS(a_tensor("value", vt))));
  EXPECT("kt", I64, 2);
  CU_ASSERT_PTR_EQUAL(g.tensors[tensor_named("kt")].data, g.tensors[vt].data);
  CU_ASSERT(g.tensors[tensor_named("kt")].flags & AXLE_HAL_TENSOR_CONSTANT);
  FAILS(infer("Constant", NO_INPUTS, NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "no value attribute", NULL);
  FAILS(infer("Constant", NO_INPUTS, NAMES("bad"),
              ATTRS(a_int("value_int", 1), a_float("value_float", 1))),
        AXLE_STATUS_INVALID_MODEL, "exactly one value", NULL);
  FAILS(infer("Constant", NO_INPUTS, NAMES("bad"), ATTRS(a_str("value_string", "hi"))),
        AXLE_STATUS_UNSUPPORTED, "string constants", NULL);
}

static void test_constant_of_shape_range_expand_tile(void) {
  setup(13);
  CONST_I64("shape", 2, 3);
  OK(infer("ConstantOfShape", NAMES("shape"), NAMES("z"), NO_ATTRS));
  EXPECT("z", F32, 2, 3);
  int32_t v = constant("val", I32, 1, (const int32_t[]){7});
  OK(infer("ConstantOfShape", NAMES("shape"), NAMES("zi"), ATTRS(a_tensor("value", v))));
  EXPECT("zi", I32, 2, 3);
  CONST_I64("negs", 2, -3);
  FAILS(infer("ConstantOfShape", NAMES("negs"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "negative value -3", NULL);

  scalar_const("i0", I64, (const int64_t[]){10});
  scalar_const("i1", I64, (const int64_t[]){-3});
  scalar_const("i2", I64, (const int64_t[]){-4});
  OK(infer("Range", NAMES("i0", "i1", "i2"), NAMES("r"), NO_ATTRS));
  EXPECT("r", I64, 4); /* 10, 6, 2, -2 */
  OK(infer("Range", NAMES("i1", "i0", "i2"), NAMES("r0"), NO_ATTRS));
  EXPECT("r0", I64, 0);
  scalar_const("f0", F32, (const float[]){0.0f});
  scalar_const("f1", F32, (const float[]){1.0f});
  scalar_const("f2", F32, (const float[]){0.3f});
  OK(infer("Range", NAMES("f0", "f1", "f2"), NAMES("rf"), NO_ATTRS));
  EXPECT("rf", F32, 4); /* 0, 0.3, 0.6, 0.9 */
  scalar_const("fz", F32, (const float[]){0.0f});
  FAILS(infer("Range", NAMES("f0", "f1", "fz"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "no finite length", NULL);
  SCALAR("dyn", I64);
  FAILS(infer("Range", NAMES("i0", "dyn", "i2"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_UNSUPPORTED, "limit input 'dyn' is not constant", NULL);

  IN("x", F32, 3, 1);
  CONST_I64("to", 2, 1, 4);
  OK(infer("Expand", NAMES("x", "to"), NAMES("ex"), NO_ATTRS));
  EXPECT("ex", F32, 2, 3, 4);
  CONST_I64("to2", 2, 2);
  FAILS(infer("Expand", NAMES("x", "to2"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "input 'x' [3,1] cannot be expanded to", NULL);

  CONST_I64("rep", 2, 3);
  OK(infer("Tile", NAMES("x", "rep"), NAMES("t"), NO_ATTRS));
  EXPECT("t", F32, 6, 3);
  CONST_I64("rep1", 2);
  FAILS(infer("Tile", NAMES("x", "rep1"), NAMES("bad"), NO_ATTRS), AXLE_STATUS_INVALID_MODEL,
        "repeats has 1 values; input 'x' has rank 2", NULL);
}

/* ------------------------------------------------------------------------ */
/* Quantization and reductions                                               */
/* ------------------------------------------------------------------------ */

static void test_quantize(void) {
  setup(13);
  IN("x", F32, 1, 3, 4);
  SCALAR("s", F32);
  SCALAR("zu8", U8);
  SCALAR("zi8", I8);
  IN("sc", F32, 3);
  IN("zc", I8, 3);
  IN("sbad", F32, 4);
  OK(infer("QuantizeLinear", NAMES("x", "s"), NAMES("q"), NO_ATTRS));
  EXPECT("q", U8, 1, 3, 4);
  OK(infer("QuantizeLinear", NAMES("x", "s", "zi8"), NAMES("qi"), NO_ATTRS));
  EXPECT("qi", I8, 1, 3, 4);
  OK(infer("QuantizeLinear", NAMES("x", "sc", "zc"), NAMES("qc"), NO_ATTRS));
  EXPECT("qc", I8, 1, 3, 4);
  FAILS(infer("QuantizeLinear", NAMES("x", "sbad"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "scale 'sbad' has 4 values but axis 1 of input 'x' has size 3",
        NULL);
  FAILS(infer("QuantizeLinear", NAMES("x", "sc", "zi8"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "must have the same shape", NULL);
  OK(infer("DequantizeLinear", NAMES("q", "s", "zu8"), NAMES("dq"), NO_ATTRS));
  EXPECT("dq", F32, 1, 3, 4);
  FAILS(infer("DequantizeLinear", NAMES("q", "s", "zi8"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "input 'zi8' is int8 but input 'q' is uint8", NULL);
  FAILS(infer("DequantizeLinear", NAMES("x", "s"), NAMES("bad"), NO_ATTRS),
        AXLE_STATUS_INVALID_MODEL, "input 'x' has dtype float32", NULL);
  setup(21); /* output_dtype attribute when there is no zero point */
  IN("x", F32, 4);
  SCALAR("s", F32);
  SCALAR("zu8", U8);
  OK(infer("QuantizeLinear", NAMES("x", "s"), NAMES("q16"),
           ATTRS(a_int("output_dtype", AXLE_DTYPE_I16))));
  EXPECT("q16", I16, 4);
  FAILS(infer("QuantizeLinear", NAMES("x", "s", "zu8"), NAMES("bad"),
              ATTRS(a_int("output_dtype", AXLE_DTYPE_I8))),
        AXLE_STATUS_INVALID_MODEL, "differs from zero point 'zu8'", NULL);
}

static void test_reduce(void) {
  setup(13);
  IN("x", F32, 2, 3, 4);
  OK(infer("ReduceMean", NAMES("x"), NAMES("m"), ATTRS(a_ints("axes", 1, -1))));
  EXPECT("m", F32, 2, 1, 1);
  OK(infer("ReduceMax", NAMES("x"), NAMES("m0"),
           ATTRS(a_ints("axes", 1), a_int("keepdims", 0))));
  EXPECT("m0", F32, 2, 4);
  OK(infer("ReduceMean", NAMES("x"), NAMES("all"), ATTRS(a_int("keepdims", 0))));
  EXPECT_SCALAR("all", F32);
  CONST_I64("ax", 0);
  OK(infer("ReduceSum", NAMES("x", "ax"), NAMES("s"), NO_ATTRS)); /* input since 13 */
  EXPECT("s", F32, 1, 3, 4);
  OK(infer("ReduceSum", NAMES("x"), NAMES("sa"), NO_ATTRS));
  EXPECT("sa", F32, 1, 1, 1);
  OK(infer("ReduceSum", NAMES("x"), NAMES("noop"), ATTRS(a_int("noop_with_empty_axes", 1))));
  EXPECT("noop", F32, 2, 3, 4);
  FAILS(infer("ReduceMean", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 3))),
        AXLE_STATUS_INVALID_MODEL, "axis 3 is out of range", NULL);
  FAILS(infer("ReduceMean", NAMES("x"), NAMES("bad"), ATTRS(a_ints("axes", 0, -3))),
        AXLE_STATUS_INVALID_MODEL, "appears twice", NULL);
  setup(18); /* ReduceMean axes became an input in 18 */
  IN("x", F32, 2, 3);
  CONST_I64("ax", 1);
  OK(infer("ReduceMean", NAMES("x", "ax"), NAMES("m"), ATTRS(a_int("keepdims", 0))));
  EXPECT("m", F32, 2);
}

int main(void) {
  axle_graph_init(&g);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("shape_infer", NULL, NULL);
  CU_add_test(s, "dispatch and input checks", test_dispatch);
  CU_add_test(s, "broadcasting binary ops", test_broadcasting);
  CU_add_test(s, "unary ops", test_unary);
  CU_add_test(s, "Clip", test_clip);
  CU_add_test(s, "Cast", test_cast);
  CU_add_test(s, "Conv", test_conv);
  CU_add_test(s, "pooling", test_pooling);
  CU_add_test(s, "BatchNormalization", test_batchnorm);
  CU_add_test(s, "Gemm", test_gemm);
  CU_add_test(s, "MatMul", test_matmul);
  CU_add_test(s, "Flatten", test_flatten);
  CU_add_test(s, "Reshape", test_reshape);
  CU_add_test(s, "Transpose, Concat", test_transpose_concat);
  CU_add_test(s, "Slice", test_slice);
  CU_add_test(s, "Squeeze/Unsqueeze opset 11 vs 13", test_squeeze_unsqueeze);
  CU_add_test(s, "Pad", test_pad);
  CU_add_test(s, "Gather", test_gather);
  CU_add_test(s, "Split", test_split);
  CU_add_test(s, "Constant, Shape", test_constant_and_shape);
  CU_add_test(s, "ConstantOfShape, Range, Expand, Tile", test_constant_of_shape_range_expand_tile);
  CU_add_test(s, "Quantize/DequantizeLinear", test_quantize);
  CU_add_test(s, "reductions", test_reduce);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  axle_graph_free(&g);
  return failures ? 1 : 0;
}
