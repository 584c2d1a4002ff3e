#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "status.h"

/* Output dtype/shape rules of the ONNX operators the core understands, per
 * the operator spec of the graph's default-domain opset. Inputs are concrete
 * (sessions resolve symbolic dims first), so every rule computes exact sizes. */

typedef struct axle_shape_t {
  uint32_t rank;
  int64_t dim[AXLE_MAX_RANK];
} axle_shape_t;

typedef struct axle_infer_op_t axle_infer_op_t;

typedef struct axle_infer_t {
  axle_graph_t* g;
  const axle_hal_node_t* n;
  int64_t opset;
  const axle_infer_op_t* op;
} axle_infer_t;

typedef axle_status_t (*axle_infer_fn)(const axle_infer_t* c);

struct axle_infer_op_t {
  const char* name;
  uint32_t min_in, max_in, min_out, max_out;
  uint32_t types; /* dtypes input 0 accepts (bit per AXLE_DTYPE_*) */
  axle_infer_fn fn;
};

#define DT(x) (1u << AXLE_DTYPE_##x)
#define T_FLOAT (DT(F32) | DT(F64) | DT(F16) | DT(BF16))
#define T_SINT (DT(I8) | DT(I16) | DT(I32) | DT(I64))
#define T_UINT (DT(U8) | DT(U16) | DT(U32) | DT(U64))
#define T_NUM (T_FLOAT | T_SINT | T_UINT)
#define T_ANY (T_NUM | DT(BOOL))
#define T_GEMM (T_FLOAT | DT(I32) | DT(I64) | DT(U32) | DT(U64))
#define MANY UINT32_MAX

#define TRY(expr)                          \
  do {                                     \
    axle_status_t try_st_ = (expr);        \
    if (try_st_ != AXLE_OK) return try_st_; \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static axle_status_t infer_fail(const axle_infer_t* c,
                                                                      axle_status_t code,
                                                                      const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return axle_status_make(code, "node '%s' (%s): %s", c->n->name, c->n->op_type, msg);
}

static const axle_hal_tensor_t* infer_in(const axle_infer_t* c, uint32_t i) {
  if (i >= c->n->input_count || c->n->inputs[i] < 0) return NULL;
  return &c->g->tensors[c->n->inputs[i]];
}

static axle_hal_tensor_t* infer_out(const axle_infer_t* c, uint32_t i) {
  if (i >= c->n->output_count || c->n->outputs[i] < 0) return NULL;
  return &c->g->tensors[c->n->outputs[i]];
}

static axle_shape_t shape_of(const axle_hal_tensor_t* t) {
  axle_shape_t s = {.rank = t->rank};
  memcpy(s.dim, t->shape, t->rank * sizeof(int64_t));
  return s;
}

/* "[2,3,4]" into buf (192 bytes hold any rank-8 shape). */
static const char* shape_str(const axle_shape_t* s, char* buf, size_t size) {
  size_t at = (size_t)snprintf(buf, size, "[");
  for (uint32_t i = 0; i < s->rank && at < size; ++i)
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)s->dim[i]);
  if (at < size) snprintf(buf + at, size - at, "]");
  return buf;
}

static const char* tensor_shape_str(const axle_hal_tensor_t* t, char* buf, size_t size) {
  axle_shape_t s = shape_of(t);
  return shape_str(&s, buf, size);
}

static int shape_elems(const axle_shape_t* s, uint32_t from, uint32_t to, int64_t* n) {
  int64_t p = 1;
  for (uint32_t i = from; i < to; ++i)
    if (__builtin_mul_overflow(p, s->dim[i], &p)) return 0;
  *n = p;
  return 1;
}

static int shapes_equal(const axle_shape_t* a, const axle_shape_t* b) {
  return a->rank == b->rank && memcmp(a->dim, b->dim, a->rank * sizeof(int64_t)) == 0;
}

static axle_status_t set_out(const axle_infer_t* c, uint32_t i, int32_t dtype,
                             const axle_shape_t* s) {
  axle_hal_tensor_t* t = infer_out(c, i);
  if (!t) return AXLE_OK;
  uint64_t bytes = axle_hal_dtype_size(dtype);
  for (uint32_t d = 0; d < s->rank; ++d)
    if (s->dim[d] < 0 || __builtin_mul_overflow(bytes, (uint64_t)s->dim[d], &bytes)) {
      char buf[192];
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "output '%s' would have shape %s, which "
                        "is too large", t->name, shape_str(s, buf, sizeof(buf)));
    }
  t->dtype = dtype;
  t->rank = s->rank;
  memset(t->shape, 0, sizeof(t->shape));
  memcpy(t->shape, s->dim, s->rank * sizeof(int64_t));
  t->size_bytes = bytes;
  return AXLE_OK;
}

/* Marks output i as holding data (graph arena memory or a constant's bytes). */
static void set_out_value(const axle_infer_t* c, uint32_t i, const void* data) {
  axle_hal_tensor_t* t = infer_out(c, i);
  t->data = data;
  t->flags |= AXLE_HAL_TENSOR_CONSTANT;
}

static axle_status_t want_type(const axle_infer_t* c, uint32_t i, uint32_t mask) {
  const axle_hal_tensor_t* t = infer_in(c, i);
  if (!t || (t->dtype > 0 && t->dtype < 32 && ((mask >> t->dtype) & 1))) return AXLE_OK;
  return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' has dtype %s, which %s does not "
                    "accept", t->name, axle_dtype_name(t->dtype), c->n->op_type);
}

static axle_status_t same_type(const axle_infer_t* c, uint32_t i, uint32_t j) {
  const axle_hal_tensor_t *a = infer_in(c, i), *b = infer_in(c, j);
  if (!a || !b || a->dtype == b->dtype) return AXLE_OK;
  return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is %s but input '%s' is %s; they "
                    "must have the same dtype", a->name, axle_dtype_name(a->dtype), b->name,
                    axle_dtype_name(b->dtype));
}

/* Normalises a possibly negative axis into [0, rank); t names the tensor the
 * axis refers to (NULL: the node's output). */
static axle_status_t norm_axis(const axle_infer_t* c, int64_t axis, int64_t rank,
                               const axle_hal_tensor_t* t, int64_t* out) {
  if (axis < -rank || axis >= rank) {
    if (t)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld is out of range for input "
                        "'%s' of rank %lld", (long long)axis, t->name, (long long)rank);
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld is out of range for the output "
                      "of rank %lld", (long long)axis, (long long)rank);
  }
  *out = axis < 0 ? axis + rank : axis;
  return AXLE_OK;
}

/* INTS attribute; *count = -1 when absent. */
static axle_status_t attr_list(const axle_infer_t* c, const char* name, const int64_t** vals,
                               int64_t* count) {
  const axle_hal_attr_t* a = axle_hal_node_attr(c->n, name);
  *vals = NULL;
  *count = -1;
  if (!a) return AXLE_OK;
  if (a->type != AXLE_HAL_ATTR_INTS)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute '%s' must be a list of ints",
                      name);
  *vals = a->ints;
  *count = a->count;
  return AXLE_OK;
}

/* Element k of an int16/int32/int64 tensor (index and shape values). */
static int64_t tensor_int(const axle_hal_tensor_t* t, int64_t k) {
  const uint8_t* p = (const uint8_t*)t->data + (size_t)k * axle_hal_dtype_size(t->dtype);
  int64_t v64;
  int32_t v32;
  int16_t v16;
  switch (t->dtype) {
    case AXLE_DTYPE_I64: memcpy(&v64, p, 8); return v64;
    case AXLE_DTYPE_I32: memcpy(&v32, p, 4); return v32;
    default: memcpy(&v16, p, 2); return v16;
  }
}

/* First element of a floating-point tensor. */
static double tensor_f64(const axle_hal_tensor_t* t) {
  uint16_t h;
  switch (t->dtype) {
    case AXLE_DTYPE_F64: {
      double v;
      memcpy(&v, t->data, 8);
      return v;
    }
    case AXLE_DTYPE_F16: {
      memcpy(&h, t->data, 2);
      int e = (h >> 10) & 0x1f;
      double m = h & 0x3ff;
      double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
      return h & 0x8000 ? -v : v;
    }
    case AXLE_DTYPE_BF16: {
      memcpy(&h, t->data, 2);
      uint32_t bits = (uint32_t)h << 16;
      float v;
      memcpy(&v, &bits, 4);
      return v;
    }
    default: {
      float v;
      memcpy(&v, t->data, 4);
      return v;
    }
  }
}

/* Input i as a constant whose values the output shape depends on. */
static axle_status_t const_input(const axle_infer_t* c, uint32_t i, const char* what,
                                 const axle_hal_tensor_t** out) {
  const axle_hal_tensor_t* t = infer_in(c, i);
  *out = t;
  if (!t) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input is missing", what);
  if (!t->data)
    return infer_fail(c, AXLE_STATUS_UNSUPPORTED, "%s input '%s' is not constant; pass it as a "
                      "constant input", what, t->name);
  axle_shape_t s = shape_of(t);
  int64_t n;
  uint64_t need;
  if (!shape_elems(&s, 0, s.rank, &n) ||
      __builtin_mul_overflow((uint64_t)n, axle_hal_dtype_size(t->dtype), &need) ||
      t->size_bytes < need)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' holds fewer bytes than its "
                      "shape needs", what, t->name);
  return AXLE_OK;
}

/* Constant 1-D int32/int64 input i, at most cap values. */
static axle_status_t const_ints(const axle_infer_t* c, uint32_t i, const char* what,
                                int64_t* vals, size_t cap, int64_t* count) {
  const axle_hal_tensor_t* t;
  TRY(const_input(c, i, what, &t));
  if (t->dtype != AXLE_DTYPE_I64 && t->dtype != AXLE_DTYPE_I32)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' must be int64, not %s", what,
                      t->name, axle_dtype_name(t->dtype));
  if (t->rank > 1)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' must be 1-D, not rank %u",
                      what, t->name, t->rank);
  int64_t n = t->rank ? t->shape[0] : 1;
  if ((uint64_t)n > cap)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' has %lld values, more than "
                      "%zu", what, t->name, (long long)n, cap);
  for (int64_t k = 0; k < n; ++k) vals[k] = tensor_int(t, k);
  *count = n;
  return AXLE_OK;
}

/* An int list that moved from attribute to input at opset `since`: read from
 * where this graph's opset keeps it. *count = -1 when absent. */
static axle_status_t int_list(const axle_infer_t* c, int64_t since, const char* name,
                              uint32_t input, int64_t* vals, size_t cap, int64_t* count) {
  *count = -1;
  if (c->opset >= since) return infer_in(c, input) ? const_ints(c, input, name, vals, cap, count)
                                                   : AXLE_OK;
  const int64_t* v;
  TRY(attr_list(c, name, &v, count));
  if (*count > (int64_t)cap)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute '%s' has %lld values, more than "
                      "%zu", name, (long long)*count, cap);
  if (*count > 0) memcpy(vals, v, (size_t)*count * sizeof(int64_t));
  return AXLE_OK;
}

/* numpy (multidirectional) broadcasting; 0 when a and b do not broadcast. */
static int broadcast_shapes(const axle_shape_t* a, const axle_shape_t* b, axle_shape_t* out) {
  axle_shape_t r = {.rank = a->rank > b->rank ? a->rank : b->rank};
  for (uint32_t i = 0; i < r.rank; ++i) {
    int64_t da = i + a->rank < r.rank ? 1 : a->dim[i + a->rank - r.rank];
    int64_t db = i + b->rank < r.rank ? 1 : b->dim[i + b->rank - r.rank];
    if (da == db || db == 1)
      r.dim[i] = da;
    else if (da == 1)
      r.dim[i] = db;
    else
      return 0;
  }
  *out = r;
  return 1;
}

/* Broadcast shape of inputs [first, first+count). */
static axle_status_t broadcast_inputs(const axle_infer_t* c, uint32_t first, uint32_t count,
                                      axle_shape_t* out) {
  *out = shape_of(infer_in(c, first));
  for (uint32_t k = first + 1; k < first + count; ++k) {
    const axle_hal_tensor_t* t = infer_in(c, k);
    axle_shape_t s = shape_of(t);
    if (broadcast_shapes(out, &s, out)) continue;
    char a[192], b[192];
    if (k == first + 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "inputs '%s' %s and '%s' %s cannot be "
                        "broadcast together", infer_in(c, first)->name,
                        tensor_shape_str(infer_in(c, first), a, sizeof(a)), t->name,
                        shape_str(&s, b, sizeof(b)));
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s cannot be broadcast with %s, "
                      "the broadcast shape of the inputs before it", t->name,
                      shape_str(&s, b, sizeof(b)), shape_str(out, a, sizeof(a)));
  }
  return AXLE_OK;
}

/* Before opset 7, binary ops broadcast only when broadcast=1, and then B must
 * match a contiguous run of A's dims starting at `axis` (suffix by default). */
static axle_status_t legacy_broadcast(const axle_infer_t* c, axle_shape_t* out) {
  const axle_hal_tensor_t *a = infer_in(c, 0), *b = infer_in(c, 1);
  char sa[192], sb[192];
  *out = shape_of(a);
  axle_shape_t s = shape_of(b);
  if (!axle_node_attr_int(c->n, "broadcast", 0)) {
    if (shapes_equal(out, &s)) return AXLE_OK;
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "inputs '%s' %s and '%s' %s must have the "
                      "same shape (broadcast=0, opset %lld)", a->name,
                      shape_str(out, sa, sizeof(sa)), b->name, shape_str(&s, sb, sizeof(sb)),
                      (long long)c->opset);
  }
  int64_t axis = axle_node_attr_int(c->n, "axis", (int64_t)a->rank - (int64_t)b->rank);
  int ok = b->rank <= a->rank && axis >= 0 && axis <= (int64_t)(a->rank - b->rank);
  for (uint32_t i = 0; ok && i < b->rank; ++i)
    ok = b->shape[i] == 1 || b->shape[i] == a->shape[axis + i];
  if (ok) return AXLE_OK;
  return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s does not match input '%s' %s "
                    "at axis %lld (legacy broadcasting, opset %lld)", b->name,
                    shape_str(&s, sb, sizeof(sb)), a->name, shape_str(out, sa, sizeof(sa)),
                    (long long)axis, (long long)c->opset);
}

static axle_status_t binary_shape(const axle_infer_t* c, axle_shape_t* out) {
  return c->opset < 7 ? legacy_broadcast(c, out) : broadcast_inputs(c, 0, 2, out);
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------ */

static axle_status_t infer_unary(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  axle_shape_t s = shape_of(x);
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_softmax(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t r = x->rank;
  int64_t axis = axle_node_attr_int(c->n, "axis", c->opset >= 13 ? -1 : 1);
  /* Before opset 13 the input is coerced to 2-D at axis, which may equal rank. */
  int64_t hi = c->opset >= 13 ? r - 1 : r;
  if (axis < -r || axis > hi)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld is out of range for input '%s' "
                      "of rank %lld", (long long)axis, x->name, (long long)r);
  return infer_unary(c);
}

static axle_status_t infer_clip(const axle_infer_t* c) {
  for (uint32_t i = 1; i < 3; ++i) {
    const axle_hal_tensor_t* t = infer_in(c, i);
    if (!t) continue;
    TRY(same_type(c, i, 0));
    axle_shape_t s = shape_of(t);
    int64_t n;
    if (!shape_elems(&s, 0, s.rank, &n) || n != 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' must be a scalar",
                        i == 1 ? "min" : "max", t->name);
  }
  return infer_unary(c);
}

static axle_status_t infer_dropout(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  axle_shape_t s = shape_of(x);
  TRY(set_out(c, 0, x->dtype, &s));
  /* The mask became bool in opset 10. */
  return set_out(c, 1, c->opset >= 10 ? AXLE_DTYPE_BOOL : x->dtype, &s);
}

static axle_status_t infer_arith(const axle_infer_t* c) {
  TRY(same_type(c, 1, 0));
  axle_shape_t s;
  TRY(binary_shape(c, &s));
  return set_out(c, 0, infer_in(c, 0)->dtype, &s);
}

static axle_status_t infer_compare(const axle_infer_t* c) {
  TRY(same_type(c, 1, 0));
  axle_shape_t s;
  TRY(binary_shape(c, &s));
  return set_out(c, 0, AXLE_DTYPE_BOOL, &s);
}

static axle_status_t infer_pow(const axle_infer_t* c) {
  TRY(want_type(c, 1, T_NUM));
  axle_shape_t s;
  TRY(binary_shape(c, &s));
  return set_out(c, 0, infer_in(c, 0)->dtype, &s);
}

/* Sum, Mean, Max, Min: any number of inputs; equal shapes before opset 8. */
static axle_status_t infer_variadic(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  for (uint32_t i = 1; i < c->n->input_count; ++i) {
    const axle_hal_tensor_t* t = infer_in(c, i);
    if (!t) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input %u is empty", i);
    TRY(same_type(c, i, 0));
    if (c->opset < 8 && (t->rank != x->rank ||
                         memcmp(t->shape, x->shape, x->rank * sizeof(int64_t)) != 0)) {
      char a[192], b[192];
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "inputs '%s' %s and '%s' %s must have the "
                        "same shape before opset 8", x->name, tensor_shape_str(x, a, sizeof(a)),
                        t->name, tensor_shape_str(t, b, sizeof(b)));
    }
  }
  axle_shape_t s;
  TRY(broadcast_inputs(c, 0, c->n->input_count, &s));
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_where(const axle_infer_t* c) {
  TRY(same_type(c, 2, 1));
  axle_shape_t s;
  TRY(broadcast_inputs(c, 0, 3, &s));
  return set_out(c, 0, infer_in(c, 1)->dtype, &s);
}

static axle_status_t infer_cast(const axle_infer_t* c) {
  static const char* const kNames[] = {
      [AXLE_DTYPE_F32] = "FLOAT", [AXLE_DTYPE_U8] = "UINT8", [AXLE_DTYPE_I8] = "INT8",
      [AXLE_DTYPE_U16] = "UINT16", [AXLE_DTYPE_I16] = "INT16", [AXLE_DTYPE_I32] = "INT32",
      [AXLE_DTYPE_I64] = "INT64", [AXLE_DTYPE_BOOL] = "BOOL", [AXLE_DTYPE_F16] = "FLOAT16",
      [AXLE_DTYPE_F64] = "DOUBLE", [AXLE_DTYPE_U32] = "UINT32", [AXLE_DTYPE_U64] = "UINT64",
      [AXLE_DTYPE_BF16] = "BFLOAT16"};
  const axle_hal_attr_t* to = axle_hal_node_attr(c->n, "to");
  if (!to) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'to' is required");
  int64_t dtype = -1;
  if (to->type == AXLE_HAL_ATTR_INT) {
    dtype = to->i;
  } else if (to->type == AXLE_HAL_ATTR_STRING) {
    /* Cast-1 names the type as a string. */
    for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i)
      if (kNames[i] && to->s && strcmp(kNames[i], to->s) == 0) dtype = (int64_t)i;
  }
  if (dtype < 0 || dtype >= 32 || axle_hal_dtype_size((int32_t)dtype) == 0)
    return to->type == AXLE_HAL_ATTR_STRING
               ? infer_fail(c, AXLE_STATUS_UNSUPPORTED, "cannot cast to data type '%s'",
                            to->s ? to->s : "")
               : infer_fail(c, AXLE_STATUS_UNSUPPORTED, "cannot cast to ONNX data type %lld",
                            (long long)to->i);
  axle_shape_t s = shape_of(infer_in(c, 0));
  return set_out(c, 0, (int32_t)dtype, &s);
}

/* ------------------------------------------------------------------------ */
/* Convolution, pooling, normalisation, matrix products                      */
/* ------------------------------------------------------------------------ */

/* Output sizes of a sliding window over x's k spatial dims, per the ONNX
 * formulas for auto_pad, pads, strides, dilations and ceil_mode. */
static axle_status_t window_dims(const axle_infer_t* c, const axle_hal_tensor_t* x, uint32_t k,
                                 const int64_t* kernel, int ceil_mode, int64_t* out) {
  const int64_t *strides, *dilations, *pads;
  int64_t ns, nd, np;
  TRY(attr_list(c, "strides", &strides, &ns));
  TRY(attr_list(c, "dilations", &dilations, &nd));
  TRY(attr_list(c, "pads", &pads, &np));
  if ((ns >= 0 && ns != k) || (nd >= 0 && nd != k) || (np >= 0 && np != 2 * (int64_t)k))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attributes strides/dilations/pads have "
                      "%lld/%lld/%lld values; input '%s' has %u spatial dims (pads needs 2 per "
                      "dim)", (long long)ns, (long long)nd, (long long)np, x->name, k);
  const char* auto_pad = axle_node_attr_string(c->n, "auto_pad", "NOTSET");
  int same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
  int valid = strcmp(auto_pad, "VALID") == 0;
  if (!same && !valid && strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0])
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'auto_pad' has unknown value "
                      "'%s'", auto_pad);
  for (uint32_t i = 0; i < k; ++i) {
    int64_t s = ns > 0 ? strides[i] : 1, d = nd > 0 ? dilations[i] : 1;
    int64_t in = x->shape[2 + i], window;
    if (s < 1 || d < 1 || kernel[i] < 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "spatial axis %u: kernel %lld, stride %lld "
                        "and dilation %lld must all be >= 1", i, (long long)kernel[i],
                        (long long)s, (long long)d);
    if (__builtin_mul_overflow(kernel[i] - 1, d, &window) || window == INT64_MAX)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "spatial axis %u: dilated kernel is too "
                        "large", i);
    window += 1;
    if (same) {
      out[i] = in / s + (in % s != 0);
      continue;
    }
    int64_t begin = valid || np <= 0 ? 0 : pads[i], end = valid || np <= 0 ? 0 : pads[i + k];
    int64_t total;
    if (begin < 0 || end < 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'pads' has a negative value");
    if (__builtin_add_overflow(in, begin, &total) || __builtin_add_overflow(total, end, &total))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'pads' is too large");
    if (total < window)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "spatial axis %u: the window (%lld) is "
                        "larger than input '%s' with padding (%lld)", i, (long long)window,
                        x->name, (long long)total);
    total -= window;
    out[i] = total / s + 1;
    /* ceil_mode adds a partial window, but never one that starts in the end
     * padding (PyTorch's rule, adopted by the ONNX reference). */
    if (ceil_mode && total % s) {
      out[i] += 1;
      if ((out[i] - 1) * s >= in + begin) out[i] -= 1;
    }
  }
  return AXLE_OK;
}

static axle_status_t infer_conv(const axle_infer_t* c) {
  const axle_hal_tensor_t *x = infer_in(c, 0), *w = infer_in(c, 1), *b = infer_in(c, 2);
  TRY(same_type(c, 1, 0));
  TRY(same_type(c, 2, 0));
  char sa[192], sb[192];
  if (x->rank < 3)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must have rank >= 3 (N, C, "
                      "spatial dims)", x->name, tensor_shape_str(x, sa, sizeof(sa)));
  if (w->rank != x->rank)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "weight '%s' %s must have the rank of input "
                      "'%s' %s", w->name, tensor_shape_str(w, sb, sizeof(sb)), x->name,
                      tensor_shape_str(x, sa, sizeof(sa)));
  int64_t group = axle_node_attr_int(c->n, "group", 1), expect;
  if (group < 1)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'group' is %lld; it must be >= 1",
                      (long long)group);
  if (__builtin_mul_overflow(w->shape[1], group, &expect) || x->shape[1] != expect)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' has %lld channels but weight "
                      "'%s' expects %lld (%lld per group x group %lld)", x->name,
                      (long long)x->shape[1], w->name, (long long)expect,
                      (long long)w->shape[1], (long long)group);
  int64_t m = w->shape[0];
  if (m % group)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "weight '%s' has %lld output channels, not a "
                      "multiple of group %lld", w->name, (long long)m, (long long)group);
  if (b && (b->rank != 1 || b->shape[0] != m))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "bias '%s' %s must have shape [%lld] (the "
                      "output channels of weight '%s')", b->name,
                      tensor_shape_str(b, sa, sizeof(sa)), (long long)m, w->name);
  uint32_t k = x->rank - 2;
  const int64_t* ks;
  int64_t nk;
  TRY(attr_list(c, "kernel_shape", &ks, &nk));
  if (nk >= 0 && (nk != k || memcmp(ks, w->shape + 2, k * sizeof(int64_t)) != 0))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'kernel_shape' does not match "
                      "the spatial dims of weight '%s' %s", w->name,
                      tensor_shape_str(w, sb, sizeof(sb)));
  axle_shape_t s = {.rank = x->rank, .dim = {x->shape[0], m}};
  TRY(window_dims(c, x, k, w->shape + 2, 0, s.dim + 2));
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_pool(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  char sa[192];
  if (x->rank < 3)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must have rank >= 3 (N, C, "
                      "spatial dims)", x->name, tensor_shape_str(x, sa, sizeof(sa)));
  uint32_t k = x->rank - 2;
  const int64_t* kernel;
  int64_t nk;
  TRY(attr_list(c, "kernel_shape", &kernel, &nk));
  if (nk != k)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'kernel_shape' needs %u values "
                      "(the spatial dims of input '%s'), has %lld", k, x->name,
                      (long long)(nk < 0 ? 0 : nk));
  axle_shape_t s = shape_of(x);
  TRY(window_dims(c, x, k, kernel, (int)axle_node_attr_int(c->n, "ceil_mode", 0), s.dim + 2));
  TRY(set_out(c, 0, x->dtype, &s));
  return set_out(c, 1, AXLE_DTYPE_I64, &s); /* MaxPool's optional Indices */
}

static axle_status_t infer_global_pool(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  char sa[192];
  if (x->rank < 3)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must have rank >= 3 (N, C, "
                      "spatial dims)", x->name, tensor_shape_str(x, sa, sizeof(sa)));
  axle_shape_t s = shape_of(x);
  for (uint32_t i = 2; i < s.rank; ++i) s.dim[i] = 1;
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_batchnorm(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  char sa[192];
  if (x->rank < 2)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must have rank >= 2 (N, C, "
                      "...)", x->name, tensor_shape_str(x, sa, sizeof(sa)));
  int64_t ch = x->shape[1];
  /* spatial=0 (before opset 9) gives per-element statistics of shape C x D... */
  int spatial = c->opset >= 9 || axle_node_attr_int(c->n, "spatial", 1) != 0;
  for (uint32_t i = 1; i < 5; ++i) {
    const axle_hal_tensor_t* t = infer_in(c, i);
    TRY(want_type(c, i, T_FLOAT));
    if (spatial && (t->rank != 1 || t->shape[0] != ch))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must have shape [%lld] (the "
                        "channels of input '%s')", t->name, tensor_shape_str(t, sa, sizeof(sa)),
                        (long long)ch, x->name);
  }
  axle_shape_t s = shape_of(x);
  TRY(set_out(c, 0, x->dtype, &s));
  /* Training-mode statistics outputs. */
  axle_shape_t stats = shape_of(infer_in(c, 3));
  for (uint32_t i = 1; i < 5; ++i) TRY(set_out(c, i, infer_in(c, 3)->dtype, &stats));
  return AXLE_OK;
}

static axle_status_t infer_gemm(const axle_infer_t* c) {
  const axle_hal_tensor_t *a = infer_in(c, 0), *b = infer_in(c, 1), *cc = infer_in(c, 2);
  char sa[192], sb[192];
  if (!cc && c->opset < 11)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input C is required before opset 11");
  TRY(same_type(c, 1, 0));
  TRY(same_type(c, 2, 0));
  for (uint32_t i = 0; i < 2; ++i) {
    const axle_hal_tensor_t* t = infer_in(c, i);
    if (t->rank != 2)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s must be 2-D", t->name,
                        tensor_shape_str(t, sa, sizeof(sa)));
  }
  int ta = axle_node_attr_int(c->n, "transA", 0) != 0;
  int tb = axle_node_attr_int(c->n, "transB", 0) != 0;
  int64_t m = a->shape[ta], ka = a->shape[!ta], kb = b->shape[tb], n = b->shape[!tb];
  if (ka != kb)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s (transA=%d) and input '%s' "
                      "%s (transB=%d) have different inner dimensions (%lld vs %lld)", a->name,
                      tensor_shape_str(a, sa, sizeof(sa)), ta, b->name,
                      tensor_shape_str(b, sb, sizeof(sb)), tb, (long long)ka, (long long)kb);
  axle_shape_t s = {.rank = 2, .dim = {m, n}};
  if (cc) {
    /* C broadcasts one way into [M, N]; before opset 7 only with broadcast=1. */
    axle_shape_t cs = shape_of(cc), r;
    int ok = cc->rank <= 2 && broadcast_shapes(&s, &cs, &r) && shapes_equal(&r, &s);
    if (c->opset < 7 && !axle_node_attr_int(c->n, "broadcast", 0)) ok = shapes_equal(&cs, &s);
    if (!ok)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s cannot be broadcast to the "
                        "output %s", cc->name, shape_str(&cs, sa, sizeof(sa)),
                        shape_str(&s, sb, sizeof(sb)));
  }
  return set_out(c, 0, a->dtype, &s);
}

static axle_status_t infer_matmul(const axle_infer_t* c) {
  const axle_hal_tensor_t *a = infer_in(c, 0), *b = infer_in(c, 1);
  char sa[192], sb[192];
  TRY(same_type(c, 1, 0));
  if (a->rank == 0 || b->rank == 0)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is a scalar; MatMul needs rank "
                      ">= 1", (a->rank == 0 ? a : b)->name);
  /* 1-D operands are promoted to matrices and the added dim dropped again. */
  int64_t ka = a->shape[a->rank - 1], kb = b->shape[b->rank == 1 ? 0 : b->rank - 2];
  if (ka != kb)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "inputs '%s' %s and '%s' %s have different "
                      "inner dimensions (%lld vs %lld)", a->name,
                      tensor_shape_str(a, sa, sizeof(sa)), b->name,
                      tensor_shape_str(b, sb, sizeof(sb)), (long long)ka, (long long)kb);
  axle_shape_t ba = {.rank = a->rank >= 2 ? a->rank - 2 : 0};
  axle_shape_t bb = {.rank = b->rank >= 2 ? b->rank - 2 : 0};
  memcpy(ba.dim, a->shape, ba.rank * sizeof(int64_t));
  memcpy(bb.dim, b->shape, bb.rank * sizeof(int64_t));
  axle_shape_t s;
  if (!broadcast_shapes(&ba, &bb, &s))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "batch dimensions of inputs '%s' %s and "
                      "'%s' %s cannot be broadcast together", a->name,
                      tensor_shape_str(a, sa, sizeof(sa)), b->name,
                      tensor_shape_str(b, sb, sizeof(sb)));
  if (a->rank >= 2) s.dim[s.rank++] = a->shape[a->rank - 2];
  if (b->rank >= 2) s.dim[s.rank++] = b->shape[b->rank - 1];
  return set_out(c, 0, a->dtype, &s);
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static axle_status_t infer_flatten(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t r = x->rank, axis = axle_node_attr_int(c->n, "axis", 1);
  /* Negative axes arrived in opset 11. */
  if (axis < (c->opset >= 11 ? -r : 0) || axis > r)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld is out of range for input '%s' "
                      "of rank %lld", (long long)axis, x->name, (long long)r);
  if (axis < 0) axis += r;
  axle_shape_t in = shape_of(x), s = {.rank = 2};
  if (!shape_elems(&in, 0, (uint32_t)axis, &s.dim[0]) ||
      !shape_elems(&in, (uint32_t)axis, in.rank, &s.dim[1]))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is too large", x->name);
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_reshape(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t vals[AXLE_MAX_RANK], n;
  TRY(int_list(c, 5, "shape", 1, vals, AXLE_MAX_RANK, &n));
  if (n < 0) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the target shape is missing");
  int allowzero = c->opset >= 14 && axle_node_attr_int(c->n, "allowzero", 0) != 0;
  axle_shape_t in = shape_of(x), s = {.rank = (uint32_t)n};
  int64_t total, known = 1, infer_at = -1;
  char sa[192], sb[192];
  if (!shape_elems(&in, 0, in.rank, &total))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is too large", x->name);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = vals[i];
    if (v == -1) {
      if (infer_at >= 0)
        return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the target shape has more than one -1");
      infer_at = i;
      s.dim[i] = -1;
      continue;
    }
    if (v == 0 && !allowzero) {
      /* 0 copies the input's dim at the same index. */
      if (i >= (int64_t)x->rank)
        return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the target shape has 0 at index %lld, "
                          "but input '%s' has rank %u", (long long)i, x->name, x->rank);
      v = x->shape[i];
    } else if (v < 0) {
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the target shape has invalid value %lld",
                        (long long)v);
    }
    s.dim[i] = v;
    if (__builtin_mul_overflow(known, v, &known))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the target shape is too large");
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "cannot reshape input '%s' %s (%lld "
                        "elements) to %s", x->name, shape_str(&in, sa, sizeof(sa)),
                        (long long)total, shape_str(&s, sb, sizeof(sb)));
    s.dim[infer_at] = total / known;
  } else if (known != total) {
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "cannot reshape input '%s' %s (%lld elements) "
                      "to %s (%lld elements)", x->name, shape_str(&in, sa, sizeof(sa)),
                      (long long)total, shape_str(&s, sb, sizeof(sb)), (long long)known);
  }
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_transpose(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  const int64_t* perm;
  int64_t np;
  TRY(attr_list(c, "perm", &perm, &np));
  if (np >= 0 && np != x->rank)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'perm' has %lld values; input "
                      "'%s' has rank %u", (long long)np, x->name, x->rank);
  axle_shape_t s = {.rank = x->rank};
  uint32_t seen = 0;
  for (uint32_t i = 0; i < x->rank; ++i) {
    int64_t p = np >= 0 ? perm[i] : (int64_t)(x->rank - 1 - i);
    if (p < 0 || p >= x->rank || (seen >> p) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'perm' is not a permutation of "
                        "0..%u", x->rank - 1);
    seen |= 1u << p;
    s.dim[i] = x->shape[p];
  }
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_concat(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  const axle_hal_attr_t* a = axle_hal_node_attr(c->n, "axis");
  if (!a && c->opset >= 4)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'axis' is required");
  if (x->rank == 0)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is a scalar; Concat needs rank "
                      ">= 1", x->name);
  int64_t axis = 0;
  TRY(norm_axis(c, axle_node_attr_int(c->n, "axis", 1), x->rank, x, &axis));
  axle_shape_t s = shape_of(x);
  for (uint32_t i = 1; i < c->n->input_count; ++i) {
    const axle_hal_tensor_t* t = infer_in(c, i);
    if (!t) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input %u is empty", i);
    TRY(same_type(c, i, 0));
    int ok = t->rank == x->rank;
    for (uint32_t d = 0; ok && d < x->rank; ++d) ok = d == axis || t->shape[d] == x->shape[d];
    if (!ok) {
      char sa[192], sb[192];
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s does not match input '%s' "
                        "%s outside axis %lld", t->name, tensor_shape_str(t, sb, sizeof(sb)),
                        x->name, tensor_shape_str(x, sa, sizeof(sa)), (long long)axis);
    }
    if (__builtin_add_overflow(s.dim[axis], t->shape[axis], &s.dim[axis]))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the output is too large");
  }
  return set_out(c, 0, x->dtype, &s);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static axle_status_t infer_slice(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t starts[AXLE_MAX_RANK], ends[AXLE_MAX_RANK], axes[AXLE_MAX_RANK], steps[AXLE_MAX_RANK];
  int64_t ns, ne, na, nst = -1;
  /* starts/ends/axes moved from attributes to inputs in opset 10, which added steps. */
  TRY(int_list(c, 10, "starts", 1, starts, AXLE_MAX_RANK, &ns));
  TRY(int_list(c, 10, "ends", 2, ends, AXLE_MAX_RANK, &ne));
  TRY(int_list(c, 10, "axes", 3, axes, AXLE_MAX_RANK, &na));
  if (c->opset >= 10 && infer_in(c, 4))
    TRY(const_ints(c, 4, "steps", steps, AXLE_MAX_RANK, &nst));
  if (ns < 0 || ne < 0)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "starts and ends are required");
  if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "starts, ends, axes and steps have "
                      "different lengths (%lld, %lld, %lld, %lld)", (long long)ns,
                      (long long)ne, (long long)na, (long long)nst);
  axle_shape_t s = shape_of(x);
  uint32_t seen = 0;
  for (int64_t i = 0; i < ns; ++i) {
    int64_t axis = 0, step = nst >= 0 ? steps[i] : 1;
    TRY(norm_axis(c, na >= 0 ? axes[i] : i, x->rank, x, &axis));
    if ((seen >> axis) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld is sliced twice",
                        (long long)axis);
    seen |= 1u << axis;
    if (step == 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "steps[%lld] is 0", (long long)i);
    int64_t dim = x->shape[axis], start = starts[i], end = ends[i], len = 0;
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = clamp64(start, 0, dim);
      end = clamp64(end, 0, dim);
      if (end > start) len = (end - start - 1) / step + 1;
    } else if (dim > 0) {
      /* Any step below -dim takes one element; this also avoids -INT64_MIN. */
      if (step < -dim) step = -dim - 1;
      start = clamp64(start, 0, dim - 1);
      end = clamp64(end, -1, dim - 1);
      if (start > end) len = (start - end - 1) / -step + 1;
    }
    s.dim[axis] = len;
  }
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_squeeze(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t axes[AXLE_MAX_RANK], n;
  TRY(int_list(c, 13, "axes", 1, axes, AXLE_MAX_RANK, &n));
  uint32_t drop = 0;
  if (n <= 0) {
    for (uint32_t i = 0; i < x->rank; ++i)
      if (x->shape[i] == 1) drop |= 1u << i;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t axis = 0;
    TRY(norm_axis(c, axes[i], x->rank, x, &axis));
    if ((drop >> axis) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld appears twice", (long long)axis);
    if (x->shape[axis] != 1) {
      char sa[192];
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "cannot squeeze axis %lld of input '%s' "
                        "%s: its size is %lld, not 1", (long long)axis, x->name,
                        tensor_shape_str(x, sa, sizeof(sa)), (long long)x->shape[axis]);
    }
    drop |= 1u << axis;
  }
  axle_shape_t s = {0};
  for (uint32_t i = 0; i < x->rank; ++i)
    if (!((drop >> i) & 1)) s.dim[s.rank++] = x->shape[i];
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_unsqueeze(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t axes[AXLE_MAX_RANK], n;
  TRY(int_list(c, 13, "axes", 1, axes, AXLE_MAX_RANK, &n));
  if (n < 0) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axes are required");
  int64_t r = x->rank + n;
  if (r > AXLE_MAX_RANK)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the output would have rank %lld, more than "
                      "%d", (long long)r, AXLE_MAX_RANK);
  uint32_t added = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t axis = 0;
    TRY(norm_axis(c, axes[i], r, NULL, &axis));
    if ((added >> axis) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld appears twice", (long long)axis);
    added |= 1u << axis;
  }
  axle_shape_t s = {.rank = (uint32_t)r};
  for (uint32_t i = 0, j = 0; i < s.rank; ++i) s.dim[i] = (added >> i) & 1 ? 1 : x->shape[j++];
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_pad(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  const char* mode = axle_node_attr_string(c->n, "mode", "constant");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
      (c->opset < 19 || strcmp(mode, "wrap")))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'mode' has unknown value '%s'",
                      mode);
  int64_t pads[2 * AXLE_MAX_RANK], np, axes[AXLE_MAX_RANK], na = -1;
  /* Pad-1 called the attribute "paddings"; opset 11 made pads an input. */
  TRY(int_list(c, 11, c->opset < 2 ? "paddings" : "pads", 1, pads, 2 * AXLE_MAX_RANK, &np));
  if (np < 0) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "pads are required");
  if (c->opset >= 11) TRY(same_type(c, 2, 0));
  if (c->opset >= 18 && infer_in(c, 3)) TRY(const_ints(c, 3, "axes", axes, AXLE_MAX_RANK, &na));
  int64_t count = na >= 0 ? na : x->rank;
  if (np != 2 * count)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "pads has %lld values; expected %lld (begin "
                      "and end for each of %lld axes of input '%s')", (long long)np,
                      (long long)(2 * count), (long long)count, x->name);
  axle_shape_t s = shape_of(x);
  uint32_t seen = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t axis = i, d;
    if (na >= 0) TRY(norm_axis(c, axes[i], x->rank, x, &axis));
    if ((seen >> axis) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld appears twice", (long long)axis);
    seen |= 1u << axis;
    if (__builtin_add_overflow(x->shape[axis], pads[i], &d) ||
        __builtin_add_overflow(d, pads[i + count], &d) || d < 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "pads %lld and %lld do not fit axis %lld "
                        "of input '%s' (size %lld)", (long long)pads[i],
                        (long long)pads[i + count], (long long)axis, x->name,
                        (long long)x->shape[axis]);
    s.dim[axis] = d;
  }
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_gather(const axle_infer_t* c) {
  const axle_hal_tensor_t *x = infer_in(c, 0), *idx = infer_in(c, 1);
  TRY(want_type(c, 1, DT(I32) | DT(I64)));
  if (x->rank == 0)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is a scalar; Gather needs rank "
                      ">= 1", x->name);
  int64_t axis = 0;
  TRY(norm_axis(c, axle_node_attr_int(c->n, "axis", 0), x->rank, x, &axis));
  uint32_t r = x->rank + idx->rank - 1;
  if (r > AXLE_MAX_RANK)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "the output would have rank %u, more than %d",
                      r, AXLE_MAX_RANK);
  /* Constant indices are checked now; run-time ones by the kernel. */
  if (idx->data) {
    const axle_hal_tensor_t* t;
    TRY(const_input(c, 1, "indices", &t));
    axle_shape_t is = shape_of(idx);
    int64_t n = 0, dim = x->shape[axis];
    shape_elems(&is, 0, is.rank, &n);
    for (int64_t k = 0; k < n; ++k) {
      int64_t v = tensor_int(idx, k);
      if (v < -dim || v >= dim)
        return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "index %lld in '%s' is out of range for "
                          "axis %lld of input '%s' (size %lld)", (long long)v, idx->name,
                          (long long)axis, x->name, (long long)dim);
    }
  }
  axle_shape_t s = {.rank = r};
  uint32_t o = 0;
  for (uint32_t i = 0; i < axis; ++i) s.dim[o++] = x->shape[i];
  for (uint32_t i = 0; i < idx->rank; ++i) s.dim[o++] = idx->shape[i];
  for (uint32_t i = (uint32_t)axis + 1; i < x->rank; ++i) s.dim[o++] = x->shape[i];
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_split(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  if (x->rank == 0)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' is a scalar; Split needs rank "
                      ">= 1", x->name);
  int64_t axis = 0;
  TRY(norm_axis(c, axle_node_attr_int(c->n, "axis", 0), x->rank, x, &axis));
  uint32_t outs = c->n->output_count;
  int64_t dim = x->shape[axis], n, sum = 0;
  int64_t* sizes = malloc(outs * sizeof(int64_t));
  if (!sizes) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  axle_status_t st = int_list(c, 13, "split", 1, sizes, outs, &n);
  if (st != AXLE_OK) goto done;
  if (n >= 0) {
    if (n != outs) {
      st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "split has %lld values but the node has %u "
                      "outputs", (long long)n, outs);
      goto done;
    }
    for (uint32_t i = 0; i < outs && st == AXLE_OK; ++i)
      if (sizes[i] < 0 || __builtin_add_overflow(sum, sizes[i], &sum))
        st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "split has invalid value %lld",
                        (long long)sizes[i]);
    if (st == AXLE_OK && sum != dim)
      st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "split sums to %lld but axis %lld of input "
                      "'%s' has size %lld", (long long)sum, (long long)axis, x->name,
                      (long long)dim);
    if (st != AXLE_OK) goto done;
  } else if (c->opset >= 18) {
    /* num_outputs: chunks of ceil(dim / n), the last one smaller. */
    int64_t num = axle_node_attr_int(c->n, "num_outputs", 0);
    if (num != outs) {
      st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'num_outputs' is %lld but the "
                      "node has %u outputs (or give input 'split')", (long long)num, outs);
      goto done;
    }
    int64_t chunk = dim / num + (dim % num != 0), last = dim - chunk * (num - 1);
    if (last < 0) {
      st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld of input '%s' (size %lld) is too "
                      "small for %lld outputs", (long long)axis, x->name, (long long)dim,
                      (long long)num);
      goto done;
    }
    for (uint32_t i = 0; i < outs; ++i) sizes[i] = i + 1 < outs ? chunk : last;
  } else {
    if (dim % outs) {
      st = infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld of input '%s' (size %lld) does not "
                      "split evenly into %u outputs", (long long)axis, x->name, (long long)dim,
                      outs);
      goto done;
    }
    for (uint32_t i = 0; i < outs; ++i) sizes[i] = dim / outs;
  }
  for (uint32_t i = 0; i < outs && st == AXLE_OK; ++i) {
    axle_shape_t s = shape_of(x);
    s.dim[axis] = sizes[i];
    st = set_out(c, i, x->dtype, &s);
  }
done:
  free(sizes);
  return st;
}

static axle_status_t infer_expand(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  axle_shape_t to = {0}, in = shape_of(x), s;
  int64_t n;
  TRY(const_ints(c, 1, "shape", to.dim, AXLE_MAX_RANK, &n));
  to.rank = (uint32_t)n;
  char sa[192], sb[192];
  for (uint32_t i = 0; i < to.rank; ++i)
    if (to.dim[i] < 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "shape input '%s' %s has a negative value",
                        infer_in(c, 1)->name, shape_str(&to, sb, sizeof(sb)));
  if (!broadcast_shapes(&in, &to, &s))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "input '%s' %s cannot be expanded to %s",
                      x->name, shape_str(&in, sa, sizeof(sa)), shape_str(&to, sb, sizeof(sb)));
  return set_out(c, 0, x->dtype, &s);
}

static axle_status_t infer_tile(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  axle_shape_t s = shape_of(x);
  int64_t reps[AXLE_MAX_RANK], n;
  if (c->opset < 6) {
    /* Tile-1: scalar inputs `tiles` and `axis` repeat along one axis. */
    int64_t tiles, axis;
    TRY(const_ints(c, 1, "tiles", &tiles, 1, &n));
    TRY(const_ints(c, 2, "axis", &axis, 1, &n));
    TRY(norm_axis(c, axis, x->rank, x, &axis));
    for (uint32_t i = 0; i < x->rank; ++i) reps[i] = i == axis ? tiles : 1;
  } else {
    TRY(const_ints(c, 1, "repeats", reps, AXLE_MAX_RANK, &n));
    if (n != x->rank)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "repeats has %lld values; input '%s' has "
                        "rank %u", (long long)n, x->name, x->rank);
  }
  for (uint32_t i = 0; i < x->rank; ++i)
    if (reps[i] < 0 || __builtin_mul_overflow(s.dim[i], reps[i], &s.dim[i]))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "repeat %lld for axis %u is invalid",
                        (long long)reps[i], i);
  return set_out(c, 0, x->dtype, &s);
}

/* ------------------------------------------------------------------------ */
/* Values: Constant, Shape, ConstantOfShape, Range                           */
/* ------------------------------------------------------------------------ */

static axle_status_t infer_constant(const axle_infer_t* c) {
  static const char* const kValues[] = {"value",       "value_float", "value_floats",
                                        "value_int",   "value_ints",  "value_string",
                                        "value_strings", "sparse_value"};
  const axle_hal_attr_t* a = NULL;
  for (size_t i = 0; i < sizeof(kValues) / sizeof(kValues[0]); ++i) {
    const axle_hal_attr_t* v = axle_hal_node_attr(c->n, kValues[i]);
    if (v && a)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "has both attributes '%s' and '%s'; "
                        "exactly one value is allowed", a->name, v->name);
    if (v) a = v;
  }
  if (!a) return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "has no value attribute");
  if (!infer_out(c, 0)) return AXLE_OK;
  axle_shape_t s = {0};
  int32_t dtype;
  const void* data;
  axle_arena_t* arena = &c->g->arena;
  if (strcmp(a->name, "value") == 0 && a->type == AXLE_HAL_ATTR_TENSOR && a->tensor >= 0 &&
      (uint32_t)a->tensor < c->g->tensor_count) {
    const axle_hal_tensor_t* t = &c->g->tensors[a->tensor];
    s = shape_of(t);
    dtype = t->dtype;
    data = t->data;
  } else if (strcmp(a->name, "value_float") == 0 && a->type == AXLE_HAL_ATTR_FLOAT) {
    dtype = AXLE_DTYPE_F32;
    data = axle_arena_dup(arena, &a->f, sizeof(float), 64);
  } else if (strcmp(a->name, "value_int") == 0 && a->type == AXLE_HAL_ATTR_INT) {
    dtype = AXLE_DTYPE_I64;
    data = axle_arena_dup(arena, &a->i, sizeof(int64_t), 64);
  } else if (strcmp(a->name, "value_floats") == 0 && a->type == AXLE_HAL_ATTR_FLOATS) {
    dtype = AXLE_DTYPE_F32;
    s = (axle_shape_t){.rank = 1, .dim = {a->count}};
    data = axle_arena_dup(arena, a->floats, a->count * sizeof(float), 64);
  } else if (strcmp(a->name, "value_ints") == 0 && a->type == AXLE_HAL_ATTR_INTS) {
    dtype = AXLE_DTYPE_I64;
    s = (axle_shape_t){.rank = 1, .dim = {a->count}};
    data = axle_arena_dup(arena, a->ints, a->count * sizeof(int64_t), 64);
  } else if (strncmp(a->name, "value_string", 12) == 0) {
    return infer_fail(c, AXLE_STATUS_UNSUPPORTED, "string constants are not supported");
  } else {
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute '%s' has the wrong type",
                      a->name);
  }
  if (!data) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  TRY(set_out(c, 0, dtype, &s));
  set_out_value(c, 0, data);
  return AXLE_OK;
}

static axle_status_t infer_shape(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  int64_t r = x->rank;
  /* start/end (opset 15) select a range of dims, clamped like Python slices. */
  int64_t start = axle_node_attr_int(c->n, "start", 0), end = axle_node_attr_int(c->n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = clamp64(start, 0, r);
  end = clamp64(end, 0, r);
  int64_t len = end > start ? end - start : 0;
  if (!infer_out(c, 0)) return AXLE_OK;
  int64_t* dims = axle_arena_alloc(&c->g->arena, (size_t)(len ? len : 1) * sizeof(int64_t), 64);
  if (!dims) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  if (len) memcpy(dims, x->shape + start, (size_t)len * sizeof(int64_t));
  axle_shape_t s = {.rank = 1, .dim = {len}};
  TRY(set_out(c, 0, AXLE_DTYPE_I64, &s));
  set_out_value(c, 0, dims);
  return AXLE_OK;
}

static axle_status_t infer_constant_of_shape(const axle_infer_t* c) {
  axle_shape_t s = {0};
  int64_t n;
  TRY(const_ints(c, 0, "shape", s.dim, AXLE_MAX_RANK, &n));
  s.rank = (uint32_t)n;
  for (uint32_t i = 0; i < s.rank; ++i)
    if (s.dim[i] < 0)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "shape input '%s' has negative value %lld",
                        infer_in(c, 0)->name, (long long)s.dim[i]);
  int32_t dtype = AXLE_DTYPE_F32;
  const axle_hal_attr_t* v = axle_hal_node_attr(c->n, "value");
  if (v) {
    const axle_hal_tensor_t* t = v->type == AXLE_HAL_ATTR_TENSOR && v->tensor >= 0 &&
                                         (uint32_t)v->tensor < c->g->tensor_count
                                     ? &c->g->tensors[v->tensor]
                                     : NULL;
    axle_shape_t ts;
    int64_t count = 0;
    if (t) ts = shape_of(t);
    if (!t || !shape_elems(&ts, 0, ts.rank, &count) || count != 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'value' must be a one-element "
                        "tensor");
    dtype = t->dtype;
  }
  return set_out(c, 0, dtype, &s);
}

static axle_status_t infer_range(const axle_infer_t* c) {
  static const char* const kWhat[] = {"start", "limit", "delta"};
  const axle_hal_tensor_t* t[3];
  for (uint32_t i = 0; i < 3; ++i) {
    TRY(const_input(c, i, kWhat[i], &t[i]));
    TRY(same_type(c, i, 0));
    axle_shape_t s = shape_of(t[i]);
    int64_t n;
    if (!shape_elems(&s, 0, s.rank, &n) || n != 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "%s input '%s' must be a scalar", kWhat[i],
                        t[i]->name);
  }
  int64_t n;
  if ((T_FLOAT >> t[0]->dtype) & 1) {
    double start = tensor_f64(t[0]), limit = tensor_f64(t[1]), delta = tensor_f64(t[2]);
    double count = ceil((limit - start) / delta);
    if (delta == 0 || !(count < 9.0e15))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "start %g, limit %g and delta %g give no "
                        "finite length", start, limit, delta);
    n = count > 0 ? (int64_t)count : 0;
  } else {
    int64_t start = tensor_int(t[0], 0), limit = tensor_int(t[1], 0), delta = tensor_int(t[2], 0);
    int64_t diff;
    if (delta == 0 || __builtin_sub_overflow(limit, start, &diff))
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "start %lld, limit %lld and delta %lld give "
                        "no valid length", (long long)start, (long long)limit, (long long)delta);
    /* ceil(diff / delta), counting only steps in the direction of delta. */
    if ((diff > 0) != (delta > 0) || diff == 0)
      n = 0;
    else
      n = diff / delta + (diff % delta != 0);
  }
  axle_shape_t s = {.rank = 1, .dim = {n}};
  return set_out(c, 0, t[0]->dtype, &s);
}

/* ------------------------------------------------------------------------ */
/* Quantization and reductions                                               */
/* ------------------------------------------------------------------------ */

/* Scale and zero point of (De)QuantizeLinear: per tensor, per axis (1-D along
 * `axis`), or blocked (opset 21: same rank as x). */
static axle_status_t quant_params(const axle_infer_t* c) {
  const axle_hal_tensor_t *x = infer_in(c, 0), *sc = infer_in(c, 1), *zp = infer_in(c, 2);
  char sa[192], sb[192];
  TRY(want_type(c, 1, T_FLOAT));
  /* A per-tensor pair may mix a scalar and a 1-element vector (ONNX
   * Runtime's quantizer writes such bias zero points). */
  const int one = zp && axle_hal_tensor_elements(zp) == 1 && axle_hal_tensor_elements(sc) == 1;
  if (zp && !one && (zp->rank != sc->rank ||
                     memcmp(zp->shape, sc->shape, sc->rank * sizeof(int64_t)) != 0))
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "zero point '%s' %s and scale '%s' %s must "
                      "have the same shape", zp->name, tensor_shape_str(zp, sa, sizeof(sa)),
                      sc->name, tensor_shape_str(sc, sb, sizeof(sb)));
  if (sc->rank == 0 || (sc->rank == 1 && sc->shape[0] == 1)) return AXLE_OK;
  if (sc->rank == 1) {
    int64_t axis = 0;
    TRY(norm_axis(c, axle_node_attr_int(c->n, "axis", 1), x->rank, x, &axis));
    if (sc->shape[0] != x->shape[axis])
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "scale '%s' has %lld values but axis %lld "
                        "of input '%s' has size %lld", sc->name, (long long)sc->shape[0],
                        (long long)axis, x->name, (long long)x->shape[axis]);
    return AXLE_OK;
  }
  if (sc->rank == x->rank && axle_node_attr_int(c->n, "block_size", 0) > 0) return AXLE_OK;
  return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "scale '%s' %s must be a scalar or 1-D",
                    sc->name, tensor_shape_str(sc, sa, sizeof(sa)));
}

static axle_status_t infer_quantize(const axle_infer_t* c) {
  TRY(quant_params(c));
  const axle_hal_tensor_t* zp = infer_in(c, 2);
  /* The zero point decides the output type; without one, output_dtype
   * (opset 21), else uint8. */
  int64_t attr = axle_node_attr_int(c->n, "output_dtype", 0);
  int64_t dtype = zp ? zp->dtype : attr ? attr : AXLE_DTYPE_U8;
  if (zp && attr && attr != zp->dtype)
    return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "attribute 'output_dtype' (%lld) differs "
                      "from zero point '%s' (%s)", (long long)attr, zp->name,
                      axle_dtype_name(zp->dtype));
  if (dtype != AXLE_DTYPE_U8 && dtype != AXLE_DTYPE_I8 && dtype != AXLE_DTYPE_U16 &&
      dtype != AXLE_DTYPE_I16)
    return infer_fail(c, AXLE_STATUS_UNSUPPORTED, "cannot quantize to %s; uint8, int8, uint16 "
                      "and int16 are supported", axle_dtype_name((int32_t)dtype));
  axle_shape_t s = shape_of(infer_in(c, 0));
  return set_out(c, 0, (int32_t)dtype, &s);
}

static axle_status_t infer_dequantize(const axle_infer_t* c) {
  TRY(quant_params(c));
  TRY(same_type(c, 2, 0));
  axle_shape_t s = shape_of(infer_in(c, 0));
  return set_out(c, 0, infer_in(c, 1)->dtype, &s);
}

static axle_status_t infer_reduce(const axle_infer_t* c) {
  const axle_hal_tensor_t* x = infer_in(c, 0);
  /* axes became an input in opset 13 for ReduceSum, 18 for the others. */
  int64_t since = strcmp(c->n->op_type, "ReduceSum") == 0 ? 13 : 18;
  int64_t axes[AXLE_MAX_RANK], n;
  TRY(int_list(c, since, "axes", 1, axes, AXLE_MAX_RANK, &n));
  int keep = axle_node_attr_int(c->n, "keepdims", 1) != 0;
  uint32_t mask = 0;
  if (n <= 0) {
    if (c->opset >= since && axle_node_attr_int(c->n, "noop_with_empty_axes", 0))
      return infer_unary(c);
    mask = (1u << x->rank) - 1;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t axis = 0;
    TRY(norm_axis(c, axes[i], x->rank, x, &axis));
    if ((mask >> axis) & 1)
      return infer_fail(c, AXLE_STATUS_INVALID_MODEL, "axis %lld appears twice", (long long)axis);
    mask |= 1u << axis;
  }
  axle_shape_t s = {0};
  for (uint32_t i = 0; i < x->rank; ++i) {
    if (!((mask >> i) & 1))
      s.dim[s.rank++] = x->shape[i];
    else if (keep)
      s.dim[s.rank++] = 1;
  }
  return set_out(c, 0, x->dtype, &s);
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */
/* ------------------------------------------------------------------------ */

static const axle_infer_op_t kOps[] = {
    {"Abs", 1, 1, 1, 1, T_NUM, infer_unary},
    {"Add", 2, 2, 1, 1, T_NUM, infer_arith},
    {"AveragePool", 1, 1, 1, 1, T_FLOAT, infer_pool},
    {"BatchNormalization", 5, 5, 1, 5, T_FLOAT, infer_batchnorm},
    {"Cast", 1, 1, 1, 1, T_ANY, infer_cast},
    {"Ceil", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Clip", 1, 3, 1, 1, T_NUM, infer_clip},
    {"Concat", 1, MANY, 1, 1, T_ANY, infer_concat},
    {"Constant", 0, 0, 1, 1, 0, infer_constant},
    {"ConstantOfShape", 1, 1, 1, 1, DT(I64), infer_constant_of_shape},
    {"Conv", 2, 3, 1, 1, T_FLOAT, infer_conv},
    {"DequantizeLinear", 2, 3, 1, 1, T_SINT | T_UINT, infer_dequantize},
    {"Div", 2, 2, 1, 1, T_NUM, infer_arith},
    {"Dropout", 1, 3, 1, 2, T_FLOAT, infer_dropout},
    {"Elu", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Equal", 2, 2, 1, 1, T_ANY, infer_compare},
    {"Erf", 1, 1, 1, 1, T_NUM, infer_unary},
    {"Exp", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Expand", 2, 2, 1, 1, T_ANY, infer_expand},
    {"Flatten", 1, 1, 1, 1, T_ANY, infer_flatten},
    {"Floor", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Gather", 2, 2, 1, 1, T_ANY, infer_gather},
    {"Gemm", 2, 3, 1, 1, T_GEMM, infer_gemm},
    {"GlobalAveragePool", 1, 1, 1, 1, T_FLOAT, infer_global_pool},
    {"GlobalMaxPool", 1, 1, 1, 1, T_FLOAT, infer_global_pool},
    {"Greater", 2, 2, 1, 1, T_NUM, infer_compare},
    {"HardSigmoid", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"HardSwish", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Identity", 1, 1, 1, 1, T_ANY, infer_unary},
    {"LeakyRelu", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Less", 2, 2, 1, 1, T_NUM, infer_compare},
    {"Log", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"LogSoftmax", 1, 1, 1, 1, T_FLOAT, infer_softmax},
    {"LRN", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"MatMul", 2, 2, 1, 1, T_GEMM, infer_matmul},
    {"Max", 1, MANY, 1, 1, T_NUM, infer_variadic},
    {"MaxPool", 1, 1, 1, 2, T_FLOAT | DT(I8) | DT(U8), infer_pool},
    {"Mean", 1, MANY, 1, 1, T_FLOAT, infer_variadic},
    {"Min", 1, MANY, 1, 1, T_NUM, infer_variadic},
    {"Mul", 2, 2, 1, 1, T_NUM, infer_arith},
    {"Neg", 1, 1, 1, 1, T_FLOAT | T_SINT, infer_unary},
    {"Not", 1, 1, 1, 1, DT(BOOL), infer_unary},
    {"Pad", 1, 4, 1, 1, T_ANY, infer_pad},
    {"Pow", 2, 2, 1, 1, T_NUM, infer_pow},
    {"QuantizeLinear", 2, 3, 1, 1, T_FLOAT | DT(I32), infer_quantize},
    {"Range", 3, 3, 1, 1, T_FLOAT | DT(I16) | DT(I32) | DT(I64), infer_range},
    {"Reciprocal", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"ReduceMax", 1, 2, 1, 1, T_NUM | DT(BOOL), infer_reduce},
    {"ReduceMean", 1, 2, 1, 1, T_NUM, infer_reduce},
    {"ReduceSum", 1, 2, 1, 1, T_NUM, infer_reduce},
    {"Relu", 1, 1, 1, 1, T_FLOAT | T_SINT, infer_unary},
    {"Reshape", 1, 2, 1, 1, T_ANY, infer_reshape},
    {"Selu", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Shape", 1, 1, 1, 1, T_ANY, infer_shape},
    {"Sigmoid", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Slice", 1, 5, 1, 1, T_ANY, infer_slice},
    {"Softmax", 1, 1, 1, 1, T_FLOAT, infer_softmax},
    {"Softplus", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Split", 1, 2, 1, MANY, T_ANY, infer_split},
    {"Sqrt", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Squeeze", 1, 2, 1, 1, T_ANY, infer_squeeze},
    {"Sub", 2, 2, 1, 1, T_NUM, infer_arith},
    {"Sum", 1, MANY, 1, 1, T_FLOAT, infer_variadic},
    {"Tanh", 1, 1, 1, 1, T_FLOAT, infer_unary},
    {"Tile", 2, 3, 1, 1, T_ANY, infer_tile},
    {"Transpose", 1, 1, 1, 1, T_ANY, infer_transpose},
    {"Unsqueeze", 1, 2, 1, 1, T_ANY, infer_unsqueeze},
    {"Where", 3, 3, 1, 1, DT(BOOL), infer_where},
};

axle_status_t axle_shape_infer_node(axle_graph_t* g, uint32_t node) {
  if (node >= g->node_count)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: node index %u is out of range "
                            "(%u nodes)", g->source ? g->source : "<memory>", node,
                            g->node_count);
  const axle_hal_node_t* n = &g->nodes[node];
  axle_infer_t c = {.g = g, .n = n, .opset = g->opset};
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return infer_fail(&c, AXLE_STATUS_UNSUPPORTED, "no shape inference for domain '%s'",
                      n->domain);
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]) && !c.op; ++i)
    if (strcmp(kOps[i].name, n->op_type) == 0) c.op = &kOps[i];
  if (!c.op) return infer_fail(&c, AXLE_STATUS_UNSUPPORTED, "no shape inference for this op");

  if (n->input_count < c.op->min_in || n->input_count > c.op->max_in ||
      n->output_count < c.op->min_out || n->output_count > c.op->max_out)
    return infer_fail(&c, AXLE_STATUS_INVALID_MODEL, "has %u inputs and %u outputs; %s takes "
                      "%u..%u inputs and %u..%u outputs", n->input_count, n->output_count,
                      n->op_type, c.op->min_in, c.op->max_in, c.op->min_out, c.op->max_out);
  for (uint32_t i = 0; i < n->output_count; ++i)
    if (n->outputs[i] < -1 || n->outputs[i] >= (int32_t)g->tensor_count)
      return infer_fail(&c, AXLE_STATUS_INVALID_MODEL, "output %u refers to tensor %d of %u", i,
                        n->outputs[i], g->tensor_count);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    int32_t index = n->inputs[i];
    if (index < -1 || index >= (int32_t)g->tensor_count)
      return infer_fail(&c, AXLE_STATUS_INVALID_MODEL, "input %u refers to tensor %d of %u", i,
                        index, g->tensor_count);
    if (index < 0) {
      if (i < c.op->min_in)
        return infer_fail(&c, AXLE_STATUS_INVALID_MODEL, "required input %u is missing", i);
      continue;
    }
    const axle_hal_tensor_t* t = &g->tensors[index];
    if (axle_hal_dtype_size(t->dtype) == 0)
      return infer_fail(&c, AXLE_STATUS_INVALID_ARGUMENT, "input '%s' has no known dtype (infer "
                        "its producer first)", t->name);
    if (t->rank > AXLE_MAX_RANK)
      return infer_fail(&c, AXLE_STATUS_INVALID_MODEL, "input '%s' has rank %u, more than %d",
                        t->name, t->rank, AXLE_MAX_RANK);
    for (uint32_t d = 0; d < t->rank; ++d)
      if (t->shape[d] < 0)
        return infer_fail(&c, AXLE_STATUS_INVALID_ARGUMENT, "input '%s' has a symbolic dimension "
                          "at axis %u; resolve input shapes before shape inference", t->name, d);
  }
  if (c.op->types) TRY(want_type(&c, 0, c.op->types));
  return c.op->fn(&c);
}
