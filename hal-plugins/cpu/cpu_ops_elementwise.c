/*
 * Elementwise op family of the CPU plugin: arithmetic with numpy
 * broadcasting, comparisons, Where, activations, Cast and Q/DQ.
 *
 * prepare() turns shapes into axle_nd_t plans (kernels/include/
 * axle_kernels_copy.h) and picks one kernel function pointer per op, so run()
 * is a table-free walk. Ops that share a shape (all unary ops, all binary
 * ops) share check/prepare/run and find their differences in small
 * descriptor tables keyed by op_type.
 *
 * Dtypes: arithmetic, comparisons and Clip on float32/float64 and every
 * 8- to 64-bit integer (integers wrap; x / 0 = 0); float math on
 * float32/float64; Where/Identity on any fixed-size dtype; Cast among all 13
 * fixed-size dtypes. Declined (check() says why): float16/bfloat16
 * arithmetic, Less/Greater on bool, Pow of an integer base with an exponent
 * of another dtype, Cast from/to string, Q/DQ with block_size or
 * non-float32 scales, float8/int4 types, training-mode Dropout on
 * non-float types.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels_elementwise.h"
#include "cpu_op.h"
#include "cpu_threadpool.h"

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */
/* ------------------------------------------------------------------------ */

static size_t elements(const axle_hal_tensor_t* t) {
  return (size_t)axle_hal_tensor_elements(t);
}

/* Converts count values of src_dtype into dst (dst_dtype) with Cast's rules;
 * used to bring attribute floats and constant operands into an op's dtype at
 * compile time. */
static int convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst,
                   size_t count) {
  axle_cast_t plan;
  if (axle_cast_plan(src_dtype, dst_dtype, &plan) != 0) return -1;
  axle_cast_scalar(&plan, src, dst, count);
  return 0;
}

/* A broadcasting plan: operand 0 is out (contiguous), operand 1 + i reads
 * ins[i] broadcast to out's shape. */
static int plan_broadcast(axle_nd_t* nd, const axle_hal_tensor_t* out,
                          const axle_hal_tensor_t* const* ins, uint32_t n_in) {
  memset(nd, 0, sizeof *nd);
  nd->rank = out->rank;
  nd->ops = 1 + n_in;
  memcpy(nd->shape, out->shape, out->rank * sizeof(int64_t));
  axle_nd_contiguous_strides(out->rank, out->shape, nd->stride[0]);
  for (uint32_t i = 0; i < n_in; ++i)
    if (axle_nd_broadcast_strides(out->rank, out->shape, ins[i]->rank, ins[i]->shape,
                                  nd->stride[1 + i]) != 0)
      return -1;
  axle_nd_simplify(nd);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Binary and variadic arithmetic, comparisons                               */
/* ------------------------------------------------------------------------ */

#define BIN_ENUM_(a, op) BIN_##op,
enum { AXLE_BINARY_OPS(BIN_ENUM_, _) BIN_COUNT };

#define BIN_FN_(dt, op) axle_##dt##_##op##_scalar,
#define BIN_ROW_(dt, T, code) {AXLE_BINARY_OPS(BIN_FN_, dt)},
static const axle_binary_fn k_binary[AXLE_ARITH_DTYPE_COUNT][BIN_COUNT] = {
    AXLE_ARITH_DTYPES(BIN_ROW_)};

typedef struct binary_desc_t {
  const char* op_type;
  int kernel;    /* BIN_* */
  int variadic;  /* Sum/Mean/Max/Min: 1..N inputs folded left to right */
  int mean;      /* divide by the input count at the end */
  int bool_out;  /* comparisons */
} binary_desc_t;

static const binary_desc_t k_binary_ops[] = {
    {"Add", BIN_add, 0, 0, 0},      {"Sub", BIN_sub, 0, 0, 0},
    {"Mul", BIN_mul, 0, 0, 0},      {"Div", BIN_div, 0, 0, 0},
    {"Pow", BIN_pow, 0, 0, 0},      {"Max", BIN_max, 1, 0, 0},
    {"Min", BIN_min, 1, 0, 0},      {"Sum", BIN_add, 1, 0, 0},
    {"Mean", BIN_add, 1, 1, 0},     {"Equal", BIN_equal, 0, 0, 1},
    {"Less", BIN_less, 0, 0, 1},    {"Greater", BIN_greater, 0, 0, 1},
};

static const binary_desc_t* binary_desc(const char* op_type) {
  for (size_t i = 0; i < sizeof k_binary_ops / sizeof k_binary_ops[0]; ++i)
    if (strcmp(k_binary_ops[i].op_type, op_type) == 0) return &k_binary_ops[i];
  return NULL;
}

typedef struct binary_params_t {
  axle_binary_fn fn;
  axle_binary_fn div;       /* Mean only */
  size_t in_size, out_size; /* element sizes */
  size_t out_count;
  const void* konst;        /* Pow: constant exponent pre-cast to the base dtype */
  axle_cast_t exp_cast;     /* Pow: runtime exponent cast into scratch per run */
  size_t exp_count;         /* elements to cast; 0 = no runtime cast */
  _Alignas(8) unsigned char divisor[8]; /* Mean: input count in the dtype */
  axle_nd_t div_nd;                     /* Mean: out = out / divisor over the output */
  uint32_t steps;           /* folds; 0 = single-input copy */
  axle_nd_t nd[];           /* steps plans */
} binary_params_t;

/* Kernel table row for an op's input dtype. Equal also compares bool
 * tensors, whose bytes are canonical 0/1, through the uint8 kernel. */
static int binary_row(const binary_desc_t* d, int32_t dtype) {
  if (dtype == AXLE_HAL_DTYPE_BOOL && d->kernel == BIN_equal) dtype = AXLE_HAL_DTYPE_U8;
  return axle_arith_dtype_index(dtype);
}

static int32_t check_binary(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                            size_t rs) {
  const binary_desc_t* d = binary_desc(n->op_type);
  if (!d) return cpu_unsupported(reason, rs, "%s is not an elementwise binary op", n->op_type);
  if (d->variadic ? n->input_count < 1 : n->input_count != 2)
    return cpu_unsupported(reason, rs, "%s: %u inputs", n->op_type, n->input_count);
  const axle_hal_tensor_t* a = cpu_node_input(g, n, 0);
  if (!a) return cpu_unsupported(reason, rs, "%s: missing input 0", n->op_type);
  if (binary_row(d, a->dtype) < 0)
    return cpu_unsupported(reason, rs,
                           "%s: dtype %s not supported (float32/64, 8- to 64-bit integers)",
                           n->op_type, cpu_dtype_name(a->dtype));
  for (uint32_t i = 1; i < n->input_count; ++i) {
    const axle_hal_tensor_t* b = cpu_node_input(g, n, i);
    if (!b) return cpu_unsupported(reason, rs, "%s: missing input %u", n->op_type, i);
    if (b->dtype == a->dtype) continue;
    /* Pow's exponent may have another dtype (opset 12+). A float base
     * converts it to its own dtype (at compile time when constant, else
     * into scratch per run). An integer base would truncate a fractional
     * exponent that way, so it needs an exponent of its own dtype. */
    axle_cast_t plan;
    const int float_base = a->dtype == AXLE_HAL_DTYPE_F32 || a->dtype == AXLE_HAL_DTYPE_F64;
    if (d->kernel == BIN_pow && float_base && axle_cast_plan(b->dtype, a->dtype, &plan) == 0)
      continue;
    return cpu_unsupported(reason, rs, "%s: input %u is %s but input 0 is %s%s", n->op_type, i,
                           cpu_dtype_name(b->dtype), cpu_dtype_name(a->dtype),
                           d->kernel == BIN_pow ? " (only a float base takes another exponent dtype)"
                                                : "");
  }
  return AXLE_HAL_OK;
}

static int32_t prepare_binary(const axle_hal_host_t* host, cpu_step_t* step) {
  const binary_desc_t* d = binary_desc(step->node->op_type);
  const axle_hal_tensor_t* a = step->in[0];
  const axle_hal_tensor_t* out = step->out[0];
  const int di = d && a ? binary_row(d, a->dtype) : -1;
  if (di < 0) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype");
  if (out->dtype != (d->bool_out ? AXLE_HAL_DTYPE_BOOL : a->dtype))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output dtype does not match the op");
  const uint32_t steps = step->input_count - 1;
  const axle_hal_tensor_t* b = steps ? step->in[1] : NULL;
  const int precast = d->kernel == BIN_pow && b && b->dtype != a->dtype;
  const size_t es = axle_hal_dtype_size(a->dtype);
  const size_t konst_bytes = precast ? elements(b) * es : 0;
  const size_t head = sizeof(binary_params_t) + steps * sizeof(axle_nd_t);
  binary_params_t* p = cpu_step_params(host, step, head + (precast && b->data ? konst_bytes : 0));
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->fn = axle_binary_kernel_for_isa(k_binary[di][d->kernel]);
  p->in_size = es;
  p->out_size = axle_hal_dtype_size(out->dtype);
  p->out_count = elements(out);
  p->steps = steps;
  for (uint32_t k = 0; k < steps; ++k) {
    /* Fold k combines the running result (input 0 broadcast for the first
     * fold, then the output itself) with input k + 1. */
    const axle_hal_tensor_t* ops[2] = {k == 0 ? a : out, step->in[k + 1]};
    if (!ops[1]) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "missing input");
    if (plan_broadcast(&p->nd[k], out, ops, 2) != 0)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL,
                  "input shapes do not broadcast to the output shape");
  }
  if (precast) {
    if (axle_cast_plan(b->dtype, a->dtype, &p->exp_cast) != 0)
      return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "exponent dtype cannot be converted");
    if (b->data) {
      void* konst = (char*)p + head;
      axle_cast_scalar(&p->exp_cast, b->data, konst, elements(b));
      p->konst = konst;
    } else {
      p->exp_count = elements(b);
      step->scratch_bytes = konst_bytes;
    }
  }
  if (d->mean && steps) {
    const int64_t count = (int64_t)step->input_count;
    p->div = axle_binary_kernel_for_isa(k_binary[di][BIN_div]);
    convert(AXLE_HAL_DTYPE_I64, &count, a->dtype, p->divisor, 1);
    p->div_nd.rank = 1;
    p->div_nd.ops = 3;
    p->div_nd.shape[0] = (int64_t)p->out_count;
    p->div_nd.stride[0][0] = p->div_nd.stride[1][0] = 1; /* the divisor's stays 0 */
  }
  return AXLE_HAL_OK;
}

static void run_binary(const cpu_step_t* step, const void* const* in, void* const* out,
                       void* scratch) {
  const binary_params_t* p = step->params;
  const void* konst = p->konst;
  if (p->exp_count) {
    axle_cast_scalar(&p->exp_cast, cpu_step_input_data(step, in, 1), scratch, p->exp_count);
    konst = scratch;
  }
  if (p->steps == 0) {
    axle_copy_bytes_scalar(out[0], in[0], p->out_count * p->out_size);
    return;
  }
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  for (uint32_t k = 0; k < p->steps; ++k) {
    const void* a = k == 0 ? cpu_step_input_data(step, in, 0) : out[0];
    const void* b = k == 0 && konst ? konst : cpu_step_input_data(step, in, k + 1);
    axle_nd_binary_parallel(&p->nd[k], p->fn, out[0], p->out_size, a,
                            k == 0 ? p->in_size : p->out_size, b, p->in_size, &par);
  }
  if (p->div)
    axle_nd_binary_parallel(&p->div_nd, p->div, out[0], p->out_size, out[0], p->out_size,
                            p->divisor, p->in_size, &par);
}

/* ------------------------------------------------------------------------ */
/* Where                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct where_params_t {
  axle_where_fn fn;
  size_t es;
  axle_nd_t nd;
} where_params_t;

static int32_t check_where(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                           size_t rs) {
  const axle_hal_tensor_t* c = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 1);
  const axle_hal_tensor_t* y = cpu_node_input(g, n, 2);
  if (!c || !x || !y) return cpu_unsupported(reason, rs, "Where: needs 3 inputs");
  if (c->dtype != AXLE_HAL_DTYPE_BOOL)
    return cpu_unsupported(reason, rs, "Where: condition is %s, not bool", cpu_dtype_name(c->dtype));
  if (x->dtype != y->dtype || !axle_where_for_width(axle_hal_dtype_size(x->dtype)))
    return cpu_unsupported(reason, rs, "Where: values are %s and %s", cpu_dtype_name(x->dtype),
                           cpu_dtype_name(y->dtype));
  return AXLE_HAL_OK;
}

static int32_t prepare_where(const axle_hal_host_t* host, cpu_step_t* step) {
  where_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->es = axle_hal_dtype_size(step->out[0]->dtype);
  p->fn = axle_where_for_width(p->es);
  if (step->input_count != 3 || !step->in[0] || !step->in[1] || !step->in[2] || !p->fn)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "needs condition, x and y");
  if (plan_broadcast(&p->nd, step->out[0], step->in, 3) != 0)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL,
                "input shapes do not broadcast to the output shape");
  return AXLE_HAL_OK;
}

static void run_where(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  (void)scratch;
  const where_params_t* p = step->params;
  axle_nd_where_scalar(&p->nd, p->fn, p->es, out[0], cpu_step_input_data(step, in, 0),
                       cpu_step_input_data(step, in, 1), cpu_step_input_data(step, in, 2));
}

/* ------------------------------------------------------------------------ */
/* Unary ops (activations, math, Clip, Not)                                  */
/* ------------------------------------------------------------------------ */

#define UN_ENUM_(a, op) UN_##op,
enum { AXLE_UNARY_FLOAT_OPS(UN_ENUM_, _) UN_not, UN_COUNT };

#define UN_FN_(dt, op) [UN_##op] = axle_##dt##_##op##_scalar,
#define UN_FLOAT_ROW_(dt, T, code) {AXLE_UNARY_FLOAT_OPS(UN_FN_, dt)},
#define UN_SINT_ROW_(dt, T, code) {AXLE_UNARY_SINT_OPS(UN_FN_, dt)},
#define UN_UINT_ROW_(dt, T, code) {AXLE_UNARY_UINT_OPS(UN_FN_, dt)},
/* Rows in AXLE_ARITH_DTYPES order; NULL entries: no kernel for that dtype
 * (e.g. Sigmoid on int32). */
static const axle_unary_fn k_unary[AXLE_ARITH_DTYPE_COUNT][UN_COUNT] = {
    AXLE_FLOAT_DTYPES(UN_FLOAT_ROW_) AXLE_SINT_DTYPES(UN_SINT_ROW_)
        AXLE_UINT_DTYPES(UN_UINT_ROW_)};

typedef struct unary_desc_t {
  const char* op_type;
  int kernel;            /* UN_* */
  const char* attr[2];   /* names of parameters p[0], p[1] */
  float dflt[2];
} unary_desc_t;

static const unary_desc_t k_unary_ops[] = {
    {"Relu", UN_relu, {0}, {0}},
    {"LeakyRelu", UN_leaky_relu, {"alpha", 0}, {0.01f, 0}},
    {"Sigmoid", UN_sigmoid, {0}, {0}},
    {"Tanh", UN_tanh, {0}, {0}},
    {"HardSigmoid", UN_hard_sigmoid, {"alpha", "beta"}, {0.2f, 0.5f}},
    {"HardSwish", UN_hard_swish, {0}, {0}},
    {"Exp", UN_exp, {0}, {0}},
    {"Log", UN_log, {0}, {0}},
    {"Sqrt", UN_sqrt, {0}, {0}},
    {"Neg", UN_neg, {0}, {0}},
    {"Abs", UN_abs, {0}, {0}},
    {"Reciprocal", UN_reciprocal, {0}, {0}},
    {"Floor", UN_floor, {0}, {0}},
    {"Ceil", UN_ceil, {0}, {0}},
    {"Erf", UN_erf, {0}, {0}},
    {"Elu", UN_elu, {"alpha", 0}, {1.0f, 0}},
    {"Selu", UN_selu, {"alpha", "gamma"}, {1.67326319217681884765625f, 1.05070102214813232421875f}},
    {"Softplus", UN_softplus, {0}, {0}},
    {"Clip", UN_clip, {0}, {0}},
    {"Not", UN_not, {0}, {0}},
};

static const unary_desc_t* unary_desc(const char* op_type) {
  for (size_t i = 0; i < sizeof k_unary_ops / sizeof k_unary_ops[0]; ++i)
    if (strcmp(k_unary_ops[i].op_type, op_type) == 0) return &k_unary_ops[i];
  return NULL;
}

static axle_unary_fn unary_kernel(const unary_desc_t* d, int32_t dtype) {
  if (d->kernel == UN_not) return dtype == AXLE_HAL_DTYPE_BOOL ? axle_bool_not_scalar : NULL;
  const int di = axle_arith_dtype_index(dtype);
  return di < 0 ? NULL : k_unary[di][d->kernel];
}

typedef struct unary_params_t {
  axle_unary_fn fn;
  size_t n, es;
  _Alignas(8) unsigned char prm[16]; /* p[0], p[1] in the op's dtype */
  uint8_t runtime[2];                /* Clip: bound i comes from input 1 + i at run time */
} unary_params_t;

static int32_t check_unary(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                           size_t rs) {
  const unary_desc_t* d = unary_desc(n->op_type);
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (!d || !x) return cpu_unsupported(reason, rs, "%s: missing input", n->op_type);
  if (!unary_kernel(d, x->dtype))
    return cpu_unsupported(reason, rs, "%s: dtype %s not supported", n->op_type, cpu_dtype_name(x->dtype));
  for (uint32_t i = 1; d->kernel == UN_clip && i < n->input_count && i < 3; ++i) {
    const axle_hal_tensor_t* b = cpu_node_input(g, n, i);
    if (b && b->dtype != x->dtype)
      return cpu_unsupported(reason, rs, "Clip: bound %u is %s, input is %s", i,
                             cpu_dtype_name(b->dtype), cpu_dtype_name(x->dtype));
  }
  return AXLE_HAL_OK;
}

static int32_t prepare_unary(const axle_hal_host_t* host, cpu_step_t* step) {
  const unary_desc_t* d = unary_desc(step->node->op_type);
  const axle_hal_tensor_t* x = step->in[0];
  axle_unary_fn fn = d && x ? axle_unary_kernel_for_isa(unary_kernel(d, x->dtype)) : NULL;
  if (!fn) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype");
  unary_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->fn = fn;
  p->n = elements(x);
  p->es = axle_hal_dtype_size(x->dtype);
  float f[2] = {d->dflt[0], d->dflt[1]};
  for (int i = 0; i < 2; ++i)
    if (d->attr[i]) f[i] = cpu_attr_float(step->node, d->attr[i], f[i]);
  if (d->kernel == UN_clip) {
    /* Unbounded by default: +-inf casts to +-inf for floats and saturates
     * to the dtype's lowest/highest for integers. */
    double bound[2] = {-INFINITY, INFINITY};
    if (step->graph && step->graph->opset < 11) {
      bound[0] = cpu_attr_float(step->node, "min", -INFINITY);
      bound[1] = cpu_attr_float(step->node, "max", INFINITY);
    }
    for (int i = 0; i < 2; ++i) convert(AXLE_HAL_DTYPE_F64, &bound[i], x->dtype, p->prm + i * p->es, 1);
    for (uint32_t i = 0; i < 2 && 1 + i < step->input_count; ++i) {
      const axle_hal_tensor_t* b = step->in[1 + i];
      if (!b) continue;
      if (b->dtype != x->dtype || elements(b) != 1)
        return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "min/max must be scalars of the input dtype");
      if (b->data)
        memcpy(p->prm + i * p->es, b->data, p->es);
      else
        p->runtime[i] = 1;
    }
  } else if (d->attr[0]) {
    convert(AXLE_HAL_DTYPE_F32, f, x->dtype, p->prm, 2);
  }
  return AXLE_HAL_OK;
}

static void run_unary(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  (void)scratch;
  const unary_params_t* p = step->params;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  if (!p->runtime[0] && !p->runtime[1]) {
    axle_unary_parallel(p->fn, in[0], out[0], p->n, p->es, p->prm, &par);
    return;
  }
  _Alignas(8) unsigned char prm[16];
  memcpy(prm, p->prm, sizeof prm);
  for (uint32_t i = 0; i < 2; ++i) {
    const void* b = p->runtime[i] ? cpu_step_input_data(step, in, 1 + i) : NULL;
    if (b) memcpy(prm + i * p->es, b, p->es);
  }
  axle_unary_parallel(p->fn, in[0], out[0], p->n, p->es, prm, &par);
}

/* ------------------------------------------------------------------------ */
/* Identity, Dropout (inference)                                             */
/* ------------------------------------------------------------------------ */

typedef struct copy_params_t {
  size_t bytes, n;
  size_t mask_bytes;          /* Dropout's optional mask output */
  /* Dropout with a training_mode input (opset 12+): training runs the
   * random kernel; the flag and the ratio may be known only at run time. */
  axle_dropout_fn dropout;
  uint8_t training;           /* constant true */
  uint8_t training_runtime;   /* decided by in[2] per run */
  uint8_t ratio_runtime;      /* ratio read from in[1] per run */
  axle_cast_t ratio_cast;     /* ratio dtype -> double */
  double ratio;
  uint64_t seed;
} copy_params_t;

static int32_t check_passthrough(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                 char* reason, size_t rs) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (!x || !axle_hal_dtype_size(x->dtype))
    return cpu_unsupported(reason, rs, "%s: dtype %s not supported", n->op_type,
                           x ? cpu_dtype_name(x->dtype) : "none");
  const axle_hal_tensor_t* t = strcmp(n->op_type, "Dropout") ? NULL : cpu_node_input(g, n, 2);
  const int inference = !t || (t->data && !*(const uint8_t*)t->data);
  if (!inference && x->dtype != AXLE_HAL_DTYPE_F32 && x->dtype != AXLE_HAL_DTYPE_F64)
    return cpu_unsupported(reason, rs, "Dropout: training mode needs float32 or float64, not %s",
                           cpu_dtype_name(x->dtype));
  return AXLE_HAL_OK;
}

static int32_t prepare_passthrough(const axle_hal_host_t* host, cpu_step_t* step) {
  copy_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  const axle_hal_tensor_t* x = step->in[0];
  p->n = elements(x);
  p->bytes = p->n * axle_hal_dtype_size(x->dtype);
  if (step->output_count > 1 && step->out[1]) p->mask_bytes = elements(step->out[1]);
  const axle_hal_tensor_t* t = step->input_count > 2 ? step->in[2] : NULL;
  if (strcmp(step->node->op_type, "Dropout") || !t || (t->data && !*(const uint8_t*)t->data))
    return AXLE_HAL_OK; /* inference: a copy */
  p->dropout = x->dtype == AXLE_HAL_DTYPE_F64 ? axle_f64_dropout_scalar : axle_f32_dropout_scalar;
  p->training = t->data != NULL;
  p->training_runtime = t->data == NULL;
  p->seed = (uint64_t)cpu_attr_int(step->node, "seed", 0);
  p->ratio = 0.5; /* ONNX default */
  const axle_hal_tensor_t* r = step->in[1];
  if (r) {
    if (elements(r) != 1 || axle_cast_plan(r->dtype, AXLE_HAL_DTYPE_F64, &p->ratio_cast) != 0)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "ratio must be a float scalar");
    if (r->data)
      axle_cast_scalar(&p->ratio_cast, r->data, &p->ratio, 1);
    else
      p->ratio_runtime = 1;
  }
  return AXLE_HAL_OK;
}

static void run_passthrough(const cpu_step_t* step, const void* const* in, void* const* out,
                            void* scratch) {
  (void)scratch;
  const copy_params_t* p = step->params;
  const uint8_t* t = p->training_runtime ? cpu_step_input_data(step, in, 2) : NULL;
  double ratio = p->ratio;
  if (p->ratio_runtime) axle_cast_scalar(&p->ratio_cast, cpu_step_input_data(step, in, 1), &ratio, 1);
  if ((p->training || (t && *t)) && ratio > 0.0) {
    p->dropout(in[0], out[0], p->mask_bytes ? out[1] : NULL, p->n, ratio, p->seed);
    return;
  }
  axle_copy_bytes_scalar(out[0], in[0], p->bytes);
  if (p->mask_bytes && out[1]) memset(out[1], 1, p->mask_bytes);
}

/* ------------------------------------------------------------------------ */
/* Cast                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct cast_params_t {
  axle_cast_t plan;
  size_t n;
} cast_params_t;

static int32_t check_cast(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                          size_t rs) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  const int32_t to = (int32_t)cpu_attr_int(n, "to", 0);
  axle_cast_t plan;
  if (!x) return cpu_unsupported(reason, rs, "Cast: missing input");
  if (axle_cast_plan(x->dtype, to, &plan) != 0)
    return cpu_unsupported(reason, rs, "Cast: %s to %s not supported", cpu_dtype_name(x->dtype),
                           axle_cast_dtype_name(to) ? axle_cast_dtype_name(to) : "this dtype");
  return AXLE_HAL_OK;
}

static int32_t prepare_cast(const axle_hal_host_t* host, cpu_step_t* step) {
  cast_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  if (axle_cast_plan(step->in[0]->dtype, step->out[0]->dtype, &p->plan) != 0)
    return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype pair");
  p->n = elements(step->in[0]);
  return AXLE_HAL_OK;
}

static void run_cast(const cpu_step_t* step, const void* const* in, void* const* out,
                     void* scratch) {
  (void)scratch;
  const cast_params_t* p = step->params;
  axle_cast_scalar(&p->plan, in[0], out[0], p->n);
}

/* ------------------------------------------------------------------------ */
/* QuantizeLinear / DequantizeLinear                                         */
/* ------------------------------------------------------------------------ */

/* Tensor viewed as [outer, channels, inner]; per-tensor is channels == 1. */
typedef struct qdq_params_t {
  axle_quantize_fn quantize;     /* one of the two is set */
  axle_dequantize_fn dequantize;
  size_t outer, channels, inner;
  size_t in_size, out_size;
  int32_t zp_dtype;              /* 0 = no zero point */
  /* DequantizeLinear of constants (the core never folds it, so QDQ
   * patterns keep their integer weights): the output, computed at prepare
   * in the tail of this block; a run only copies it. */
  const void* konst;
  size_t konst_bytes;
} qdq_params_t;

/* Quantized dtypes with their kernels; int32 only dequantizes. */
typedef struct qdq_type_t {
  int32_t dtype;
  axle_quantize_fn quantize;
  axle_dequantize_fn dequantize;
} qdq_type_t;

static const qdq_type_t k_qdq_types[] = {
    {AXLE_HAL_DTYPE_U8, axle_f32_quantize_u8, axle_u8_dequantize_f32},
    {AXLE_HAL_DTYPE_I8, axle_f32_quantize_i8, axle_i8_dequantize_f32},
    {AXLE_HAL_DTYPE_U16, axle_f32_quantize_u16_scalar, axle_u16_dequantize_f32_scalar},
    {AXLE_HAL_DTYPE_I16, axle_f32_quantize_i16_scalar, axle_i16_dequantize_f32_scalar},
    {AXLE_HAL_DTYPE_I32, NULL, axle_i32_dequantize_f32_scalar},
};

static const qdq_type_t* qdq_type(int32_t dtype, int dequantize) {
  for (size_t i = 0; i < sizeof k_qdq_types / sizeof k_qdq_types[0]; ++i)
    if (k_qdq_types[i].dtype == dtype && (dequantize || k_qdq_types[i].quantize))
      return &k_qdq_types[i];
  return NULL;
}

static int32_t zero_point(const void* zp, int32_t dtype, size_t c) {
  switch (dtype) {
    case AXLE_HAL_DTYPE_U8: return ((const uint8_t*)zp)[c];
    case AXLE_HAL_DTYPE_I8: return ((const int8_t*)zp)[c];
    case AXLE_HAL_DTYPE_U16: return ((const uint16_t*)zp)[c];
    case AXLE_HAL_DTYPE_I16: return ((const int16_t*)zp)[c];
    case AXLE_HAL_DTYPE_I32: return ((const int32_t*)zp)[c];
    default: return 0;
  }
}

static int32_t check_qdq(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                         size_t rs) {
  const int dq = strcmp(n->op_type, "DequantizeLinear") == 0;
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* s = cpu_node_input(g, n, 1);
  const axle_hal_tensor_t* z = cpu_node_input(g, n, 2);
  if (!x || !s) return cpu_unsupported(reason, rs, "%s: needs x and scale", n->op_type);
  if (cpu_attr_int(n, "block_size", 0) != 0)
    return cpu_unsupported(reason, rs, "%s: blocked quantization (block_size) not supported",
                           n->op_type);
  if (s->dtype != AXLE_HAL_DTYPE_F32)
    return cpu_unsupported(reason, rs, "%s: scale dtype %s not supported (float32 only)",
                           n->op_type, cpu_dtype_name(s->dtype));
  if (dq) {
    if (!qdq_type(x->dtype, 1))
      return cpu_unsupported(reason, rs, "DequantizeLinear: input dtype %s not supported "
                             "(uint8, int8, uint16, int16, int32)", cpu_dtype_name(x->dtype));
    if (z && z->dtype != x->dtype)
      return cpu_unsupported(reason, rs, "DequantizeLinear: zero point is %s, input is %s",
                             cpu_dtype_name(z->dtype), cpu_dtype_name(x->dtype));
    return AXLE_HAL_OK;
  }
  if (x->dtype != AXLE_HAL_DTYPE_F32)
    return cpu_unsupported(reason, rs, "QuantizeLinear: input dtype %s not supported (float32)",
                           cpu_dtype_name(x->dtype));
  int32_t to = z ? z->dtype : (int32_t)cpu_attr_int(n, "output_dtype", 0);
  if (to == 0) to = AXLE_HAL_DTYPE_U8;
  if (!qdq_type(to, 0))
    return cpu_unsupported(reason, rs, "QuantizeLinear: output dtype %s not supported "
                           "(uint8, int8, uint16, int16)", cpu_dtype_name(to));
  return AXLE_HAL_OK;
}

/* One QuantizeLinear / DequantizeLinear over par's threads. */
typedef struct qdq_job_t {
  const qdq_params_t* p;
  const char* x;
  const float* scale;
  const void* zp;
  char* y;
  size_t total, share;
} qdq_job_t;

/* Elements [task * share, ...) of the flat tensor: every element's value
 * depends on its channel only, so a share may start and end anywhere in a
 * channel's run. The input's QuantizeLinear of an int8 model (150 K values,
 * ~40 us) had run on one thread. */
static void qdq_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const qdq_job_t* j = arg;
  const qdq_params_t* p = j->p;
  size_t at = task * j->share;
  const size_t end = at + j->share < j->total ? at + j->share : j->total;
  while (at < end) {
    const size_t row = at / p->inner, n = p->inner - at % p->inner;
    const size_t len = n < end - at ? n : end - at, c = row % p->channels;
    const int32_t z = j->zp ? zero_point(j->zp, p->zp_dtype, c) : 0;
    if (p->quantize)
      p->quantize((const float*)(const void*)(j->x + at * p->in_size), j->scale[c], z,
                  j->y + at * p->out_size, len);
    else
      p->dequantize(j->x + at * p->in_size, j->scale[c], z,
                    (float*)(void*)(j->y + at * p->out_size), len);
    at += len;
  }
}

/* y = Q(x) or DQ(x) over the [outer, channels, inner] view; par may be
 * NULL (serial). */
static void qdq_apply(const qdq_params_t* p, const char* x, const float* scale, const void* zp,
                      char* y, const axle_parallel_t* par) {
  qdq_job_t j = {p, x, scale, zp, y, p->outer * p->channels * p->inner, 0};
  j.share = (size_t)axle_parallel_share(par, (int64_t)j.total);
  if (j.share == 0) return;
  axle_parallel_run(par, (j.total + j.share - 1) / j.share, qdq_task, &j);
}

static int qdq_constant(const axle_hal_tensor_t* t) {
  return !t || ((t->flags & AXLE_HAL_TENSOR_CONSTANT) && (t->data || !t->size_bytes));
}

static int32_t prepare_qdq(const axle_hal_host_t* host, cpu_step_t* step) {
  const int dq = strcmp(step->node->op_type, "DequantizeLinear") == 0;
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* s = step->input_count > 1 ? step->in[1] : NULL;
  const axle_hal_tensor_t* z = step->input_count > 2 ? step->in[2] : NULL;
  const axle_hal_tensor_t* y = step->out[0];
  if (!x || !s) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "needs x and scale");
  const int konst = dq && qdq_constant(x) && qdq_constant(s) && qdq_constant(z);
  const size_t head = (sizeof(qdq_params_t) + 63) & ~(size_t)63;
  qdq_params_t* p = cpu_step_params(host, step, head + (konst ? y->size_bytes : 0));
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  const size_t count = elements(s);
  p->outer = 1;
  p->channels = 1;
  p->inner = elements(x);
  if (s->rank > 1) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "scale of rank > 1 (blocked)");
  if (s->rank == 1 && count != 1) {
    /* Per-axis: one (scale, zero point) per index of `axis`. */
    int64_t axis = cpu_attr_int(step->node, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= (int64_t)x->rank || x->shape[axis] != (int64_t)count) {
      char what[256];
      snprintf(what, sizeof what, "scale '%s' has %zu values, input '%s' has no axis %lld "
               "that long", s->name, count, x->name,
               (long long)cpu_attr_int(step->node, "axis", 1));
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, what);
    }
    p->outer = 1;
    for (int64_t d = 0; d < axis; ++d) p->outer *= (size_t)x->shape[d];
    p->channels = count;
    p->inner = p->channels ? elements(x) / p->outer / p->channels : 0;
    if (p->outer == 0) p->inner = 0;
  }
  if (z) {
    if (elements(z) != count)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "zero point and scale differ in length");
    p->zp_dtype = z->dtype;
  }
  p->in_size = axle_hal_dtype_size(x->dtype);
  p->out_size = axle_hal_dtype_size(y->dtype);
  const qdq_type_t* t = qdq_type(dq ? x->dtype : y->dtype, dq);
  if (!t || (dq ? y : x)->dtype != AXLE_HAL_DTYPE_F32 || (z && z->dtype != t->dtype))
    return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype");
  if (dq)
    p->dequantize = t->dequantize;
  else
    p->quantize = t->quantize;
  if (konst) {
    char* tail = (char*)p + head;
    qdq_apply(p, x->data, s->data, z ? z->data : NULL, tail, NULL);
    p->konst = tail;
    p->konst_bytes = y->size_bytes;
  }
  return AXLE_HAL_OK;
}

static void run_qdq(const cpu_step_t* step, const void* const* in, void* const* out,
                    void* scratch) {
  (void)scratch;
  const qdq_params_t* p = step->params;
  if (p->konst) {
    memcpy(out[0], p->konst, p->konst_bytes);
    return;
  }
  const float* scale = cpu_step_input_data(step, in, 1);
  const void* zp = p->zp_dtype ? cpu_step_input_data(step, in, 2) : NULL;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  qdq_apply(p, in[0], scale, zp, out[0], &par);
}

/* ------------------------------------------------------------------------ */
/* Op table                                                                  */
/* ------------------------------------------------------------------------ */

#define BINARY_OP(name) {name, check_binary, prepare_binary, run_binary}
#define UNARY_OP(name) {name, check_unary, prepare_unary, run_unary}

const cpu_op_t cpu_ops_elementwise[] = {
    BINARY_OP("Add"),       BINARY_OP("Sub"),        BINARY_OP("Mul"),
    BINARY_OP("Div"),       BINARY_OP("Pow"),        BINARY_OP("Max"),
    BINARY_OP("Min"),       BINARY_OP("Sum"),        BINARY_OP("Mean"),
    BINARY_OP("Equal"),     BINARY_OP("Less"),       BINARY_OP("Greater"),
    UNARY_OP("Relu"),       UNARY_OP("LeakyRelu"),   UNARY_OP("Sigmoid"),
    UNARY_OP("Tanh"),       UNARY_OP("HardSigmoid"), UNARY_OP("HardSwish"),
    UNARY_OP("Exp"),        UNARY_OP("Log"),         UNARY_OP("Sqrt"),
    UNARY_OP("Neg"),        UNARY_OP("Abs"),         UNARY_OP("Reciprocal"),
    UNARY_OP("Floor"),      UNARY_OP("Ceil"),        UNARY_OP("Erf"),
    UNARY_OP("Elu"),        UNARY_OP("Selu"),        UNARY_OP("Softplus"),
    UNARY_OP("Clip"),       UNARY_OP("Not"),
    {"Where", check_where, prepare_where, run_where},
    {"Identity", check_passthrough, prepare_passthrough, run_passthrough},
    {"Dropout", check_passthrough, prepare_passthrough, run_passthrough},
    {"Cast", check_cast, prepare_cast, run_cast},
    {"QuantizeLinear", check_qdq, prepare_qdq, run_qdq},
    {"DequantizeLinear", check_qdq, prepare_qdq, run_qdq},
    {NULL, NULL, NULL, NULL},
};
