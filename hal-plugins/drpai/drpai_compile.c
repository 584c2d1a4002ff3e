/* The DRP-AI compiler (see drpai_compile.h and docs/drpai.md). */
#include "drpai_compile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drpai_kernels.h"
#include "drpai_quant.h"

#define DEV "drpai"

/* ---- ops ---------------------------------------------------------------------- */

typedef enum op_t {
  OP_NONE,
  OP_CONV,
  OP_GEMM,
  OP_MATMUL,
  OP_MAXPOOL,
  OP_AVGPOOL,
  OP_GMAXPOOL,
  OP_GAVGPOOL,
  OP_ACT,
  OP_RESHAPE,
  OP_SOFTMAX,
  OP_ADD,
  OP_MUL,
  OP_CONCAT
} op_t;

static const struct {
  const char* name;
  op_t op;
} kOps[] = {{"Conv", OP_CONV},
            {"Gemm", OP_GEMM},
            {"MatMul", OP_MATMUL},
            {"MaxPool", OP_MAXPOOL},
            {"AveragePool", OP_AVGPOOL},
            {"GlobalMaxPool", OP_GMAXPOOL},
            {"GlobalAveragePool", OP_GAVGPOOL},
            {"Relu", OP_ACT},
            {"LeakyRelu", OP_ACT},
            {"Clip", OP_ACT},
            {"Sigmoid", OP_ACT},
            {"Tanh", OP_ACT},
            {"HardSigmoid", OP_ACT},
            {"HardSwish", OP_ACT},
            {"Elu", OP_ACT},
            {"Flatten", OP_RESHAPE},
            {"Reshape", OP_RESHAPE},
            {"Squeeze", OP_RESHAPE},
            {"Unsqueeze", OP_RESHAPE},
            {"Identity", OP_RESHAPE},
            {"Softmax", OP_SOFTMAX},
            {"Add", OP_ADD},
            {"Mul", OP_MUL},
            {"Concat", OP_CONCAT}};

static op_t op_of(const axle_hal_node_t* n) {
  if (n->domain && n->domain[0]) return OP_NONE;
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i)
    if (strcmp(kOps[i].name, n->op_type) == 0) return kOps[i].op;
  return OP_NONE;
}

static int64_t attr_int(const axle_hal_node_t* n, const char* name, int64_t def) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_INT ? a->i : def;
}

static float attr_float(const axle_hal_node_t* n, const char* name, float def) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_FLOAT ? a->f : def;
}

/* ints attribute of exactly count entries, or the default d for each. */
static int attr_ints(const axle_hal_node_t* n, const char* name, uint32_t count, int64_t d, int64_t* out) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  for (uint32_t i = 0; i < count; ++i) out[i] = d;
  if (!a) return 0;
  if (a->type != AXLE_HAL_ATTR_INTS || a->count != count) return -1;
  for (uint32_t i = 0; i < count; ++i) out[i] = a->ints[i];
  return 0;
}

static const char* attr_str(const axle_hal_node_t* n, const char* name, const char* def) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_STRING && a->s ? a->s : def;
}

static const axle_hal_tensor_t* tin(const axle_hal_graph_t* g, const axle_hal_node_t* n, uint32_t i) {
  if (i >= n->input_count || n->inputs[i] < 0 || (uint32_t)n->inputs[i] >= g->tensor_count) return NULL;
  return &g->tensors[n->inputs[i]];
}

static const axle_hal_tensor_t* tout(const axle_hal_graph_t* g, const axle_hal_node_t* n, uint32_t i) {
  if (i >= n->output_count || n->outputs[i] < 0 || (uint32_t)n->outputs[i] >= g->tensor_count) return NULL;
  return &g->tensors[n->outputs[i]];
}

static int is_const(const axle_hal_tensor_t* t) {
  return t && (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data;
}

/* The core's per-tensor uint8 calibration as an int8 (scale, zero point). */
static int tensor_q(const axle_hal_tensor_t* t, float* scale, int32_t* zp8) {
  if (t->quant.count != 1 || !t->quant.scales || !t->quant.zero_points) return -1;
  float s = t->quant.scales[0];
  int32_t z = t->quant.zero_points[0];
  if (!(s > 0.0f) || !isfinite(s) || z < 0 || z > 255) return -2;
  *scale = s;
  *zp8 = z - 128;
  return 0;
}

/* ---- geometry ------------------------------------------------------------------ */

typedef struct window_t {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
} window_t;

/* Kernel window of Conv/pools with auto_pad resolved; -1 when malformed. */
static int window_of(const axle_hal_node_t* n, const axle_hal_tensor_t* x, int64_t kh, int64_t kw,
                     window_t* w) {
  int64_t s[2], d[2], p[4];
  if (attr_ints(n, "strides", 2, 1, s) || attr_ints(n, "dilations", 2, 1, d) || attr_ints(n, "pads", 4, 0, p))
    return -1;
  w->kh = kh;
  w->kw = kw;
  w->sh = s[0];
  w->sw = s[1];
  w->dh = d[0];
  w->dw = d[1];
  w->pt = p[0];
  w->pl = p[1];
  w->pb = p[2];
  w->pr = p[3];
  if (kh < 1 || kw < 1 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1) return -1;
  for (int i = 0; i < 4; ++i)
    if (p[i] < 0 || p[i] > DRPAI_MAX_DIM) return -1;
  const char* ap = attr_str(n, "auto_pad", "NOTSET");
  if (strcmp(ap, "VALID") == 0) {
    w->pt = w->pl = w->pb = w->pr = 0;
  } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
    int64_t in[2] = {x->shape[2], x->shape[3]}, k[2] = {kh, kw}, st[2] = {s[0], s[1]}, dl[2] = {d[0], d[1]};
    int64_t before[2], after[2];
    for (int i = 0; i < 2; ++i) {
      int64_t out = (in[i] + st[i] - 1) / st[i];
      int64_t total = (out - 1) * st[i] + (k[i] - 1) * dl[i] + 1 - in[i];
      if (total < 0) total = 0;
      before[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
      after[i] = total - before[i];
    }
    w->pt = before[0];
    w->pl = before[1];
    w->pb = after[0];
    w->pr = after[1];
  } else if (strcmp(ap, "NOTSET") != 0) {
    return -1;
  }
  return 0;
}

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
}

/* ---- capability ------------------------------------------------------------------ */

typedef struct why_t {
  char* buf;
  size_t size;
  const axle_hal_node_t* n;
} why_t;

static int32_t decline(why_t* w, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int32_t decline(why_t* w, const char* fmt, ...) {
  int at = snprintf(w->buf, w->size, DEV ": node '%s' (%s): ", w->n->name, w->n->op_type);
  if (at >= 0 && (size_t)at < w->size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->buf + at, w->size - (size_t)at, fmt, ap);
    va_end(ap);
  }
  return AXLE_HAL_UNSUPPORTED;
}

/* Every activation the AI-MAC touches is float32 with calibration. */
static int32_t check_activation(why_t* w, const axle_hal_tensor_t* t, int need_quant) {
  if (!t) return decline(w, "a required input or output is missing");
  if (t->dtype != AXLE_HAL_DTYPE_F32)
    return decline(w, "tensor '%s' has dtype %d; the DRP-AI takes float32 tensors (computed in int8)",
                   t->name, (int)t->dtype);
  if (t->rank == 0 || t->rank > 4) return decline(w, "tensor '%s' has rank %u; 1 to 4 is supported", t->name, t->rank);
  for (uint32_t d = 0; d < t->rank; ++d)
    if (t->shape[d] < 1 || t->shape[d] > DRPAI_MAX_DIM)
      return decline(w, "tensor '%s' has a dimension outside 1..%d", t->name, DRPAI_MAX_DIM);
  if (axle_hal_tensor_elements(t) > (1 << 28))
    return decline(w, "tensor '%s' has more than 2^28 elements", t->name);
  float s;
  int32_t z;
  int q = tensor_q(t, &s, &z);
  if (need_quant && q == -1)
    return decline(w, "tensor '%s' has no calibration data (the DRP-AI computes in int8: create the "
                   "session with calibration inputs)", t->name);
  if (need_quant && q == -2)
    return decline(w, "tensor '%s' has unusable calibration data (scale %g, zero point %d)", t->name,
                   (double)t->quant.scales[0], (int)t->quant.zero_points[0]);
  return AXLE_HAL_OK;
}

static int32_t check_const(why_t* w, const axle_hal_tensor_t* t, const char* what, uint32_t rank) {
  if (!is_const(t)) return decline(w, "%s must be a constant (an initializer)", what);
  if (t->dtype != AXLE_HAL_DTYPE_F32) return decline(w, "%s must be float32", what);
  if (rank && t->rank != rank) return decline(w, "%s must have rank %u", what, rank);
  if ((uint64_t)axle_hal_tensor_elements(t) * 4 != t->size_bytes) return decline(w, "%s has inconsistent size", what);
  return AXLE_HAL_OK;
}

static uint32_t consumers(const axle_hal_graph_t* g, int32_t t) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->node_count; ++i)
    for (uint32_t k = 0; k < g->nodes[i].input_count; ++k) n += g->nodes[i].inputs[k] == t;
  return n;
}

static int32_t check_conv(why_t* w, const axle_hal_graph_t* g, const axle_hal_node_t* n) {
  const axle_hal_tensor_t *x = tin(g, n, 0), *wt = tin(g, n, 1), *b = tin(g, n, 2), *y = tout(g, n, 0);
  int32_t st;
  if ((st = check_const(w, wt, "the weight", 4)) != AXLE_HAL_OK) return st;
  if (b && (st = check_const(w, b, "the bias", 1)) != AXLE_HAL_OK) return st;
  if (x->rank != 4 || y->rank != 4) return decline(w, "only 2-D convolution (rank-4 tensors) is supported");
  int64_t group = attr_int(n, "group", 1);
  if (group < 1 || x->shape[1] % group || wt->shape[0] % group || wt->shape[1] * group != x->shape[1])
    return decline(w, "group %lld does not fit %lld input and %lld output channels", (long long)group,
                   (long long)x->shape[1], (long long)wt->shape[0]);
  if (b && b->shape[0] != wt->shape[0]) return decline(w, "bias has %lld entries for %lld channels",
                                                       (long long)b->shape[0], (long long)wt->shape[0]);
  window_t win;
  if (window_of(n, x, wt->shape[2], wt->shape[3], &win) != 0)
    return decline(w, "unsupported strides, dilations, pads or auto_pad");
  int64_t ho = conv_out(x->shape[2], win.kh, win.sh, win.dh, win.pt, win.pb);
  int64_t wo = conv_out(x->shape[3], win.kw, win.sw, win.dw, win.pl, win.pr);
  if (y->shape[0] != x->shape[0] || y->shape[1] != wt->shape[0] || y->shape[2] != ho || y->shape[3] != wo)
    return decline(w, "output shape does not match the convolution's geometry");
  return AXLE_HAL_OK;
}

static int32_t check_gemm(why_t* w, const axle_hal_graph_t* g, const axle_hal_node_t* n, int matmul) {
  const axle_hal_tensor_t *a = tin(g, n, 0), *b = tin(g, n, 1), *c = matmul ? NULL : tin(g, n, 2);
  const axle_hal_tensor_t* y = tout(g, n, 0);
  int32_t st;
  if ((st = check_const(w, b, "B", 2)) != AXLE_HAL_OK) return st;
  if (a->rank != 2) return decline(w, "A must have rank 2");
  if (!matmul && attr_int(n, "transA", 0)) return decline(w, "transA is not supported");
  int trans_b = !matmul && attr_int(n, "transB", 0);
  int64_t k = trans_b ? b->shape[1] : b->shape[0], nn = trans_b ? b->shape[0] : b->shape[1];
  if (k != a->shape[1] || y->rank != 2 || y->shape[0] != a->shape[0] || y->shape[1] != nn)
    return decline(w, "shapes of A, B and the output do not agree");
  if (c) {
    if ((st = check_const(w, c, "C", 0)) != AXLE_HAL_OK) return st;
    int64_t ce = axle_hal_tensor_elements(c);
    if (ce != 1 && !(ce == nn && c->shape[c->rank - 1] == nn))
      return decline(w, "C must be a scalar or one value per output column");
  }
  if (!matmul && attr_float(n, "alpha", 1.0f) == 0.0f) return decline(w, "alpha 0 is not supported");
  return AXLE_HAL_OK;
}

static int32_t check_pool(why_t* w, const axle_hal_graph_t* g, const axle_hal_node_t* n, op_t op) {
  const axle_hal_tensor_t *x = tin(g, n, 0), *y = tout(g, n, 0);
  if (x->rank != 4 || y->rank != 4 || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1])
    return decline(w, "only 2-D pooling of NCHW tensors is supported");
  if (n->output_count != 1) return decline(w, "the Indices output is not supported");
  if (op == OP_GMAXPOOL || op == OP_GAVGPOOL) {
    if (y->shape[2] != 1 || y->shape[3] != 1) return decline(w, "global pooling must produce 1x1");
    return AXLE_HAL_OK;
  }
  int64_t k[2];
  if (attr_ints(n, "kernel_shape", 2, 0, k) != 0 || k[0] < 1 || k[1] < 1)
    return decline(w, "kernel_shape must give two sizes");
  if (attr_int(n, "storage_order", 0) != 0) return decline(w, "storage_order 1 is not supported");
  window_t win;
  if (window_of(n, x, k[0], k[1], &win) != 0) return decline(w, "unsupported strides, dilations, pads or auto_pad");
  if (op == OP_AVGPOOL && (win.dh != 1 || win.dw != 1)) return decline(w, "dilated average pooling is not supported");
  return AXLE_HAL_OK;
}

/* The shape as N, C, H, W (leading 1s for a lower rank). */
static void nchw(const axle_hal_tensor_t* t, int64_t d[4]) {
  for (uint32_t k = 0; k < 4; ++k) d[k] = k + t->rank >= 4 ? t->shape[k + t->rank - 4] : 1;
}

/* Which input of an Add/Mul is broadcast per channel: -1 neither (same
 * shapes), 0 or 1, or -2 for a broadcast the AI-MAC cannot do. */
static int per_channel_operand(const axle_hal_tensor_t* a, const axle_hal_tensor_t* b, const axle_hal_tensor_t* y) {
  int64_t ea = axle_hal_tensor_elements(a), eb = axle_hal_tensor_elements(b), ey = axle_hal_tensor_elements(y);
  if (ea == ey && eb == ey) {
    for (uint32_t k = 0; k < y->rank && a->rank == y->rank && b->rank == y->rank; ++k)
      if (a->shape[k] != y->shape[k] || b->shape[k] != y->shape[k]) return -2;
    return a->rank == y->rank && b->rank == y->rank ? -1 : -2;
  }
  if (y->rank != 4) return -2;
  const axle_hal_tensor_t* small = ea == ey ? b : a;
  const axle_hal_tensor_t* full = ea == ey ? a : b;
  if (axle_hal_tensor_elements(full) != ey || full->rank != 4) return -2;
  for (uint32_t k = 0; k < 4; ++k)
    if (full->shape[k] != y->shape[k]) return -2;
  int64_t d[4];
  if (small->rank > 4) return -2;
  nchw(small, d);
  if (d[0] != 1 || d[1] != y->shape[1] || d[2] != 1 || d[3] != 1) return -2;
  return ea == ey ? 1 : 0;
}

static int32_t check_binary(why_t* w, const axle_hal_graph_t* g, const axle_hal_node_t* n) {
  if (n->input_count != 2) return decline(w, "needs two inputs");
  const axle_hal_tensor_t *a = tin(g, n, 0), *b = tin(g, n, 1), *y = tout(g, n, 0);
  if (is_const(b))
    return decline(w, "a constant operand is not supported (the AI-MAC adds and multiplies two int8 activations)");
  int32_t st = check_activation(w, b, 1);
  if (st != AXLE_HAL_OK) return st;
  if (per_channel_operand(a, b, y) == -2)
    return decline(w, "operands must have the output's shape, or one of them [1, C, 1, 1] of an NCHW output");
  return AXLE_HAL_OK;
}

/* Concat's axis, outer and inner extents; -1 when the AI-MAC cannot do it. */
static int concat_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n, uint32_t* axis, int64_t* outer,
                           int64_t* inner) {
  const axle_hal_tensor_t* y = tout(g, n, 0);
  int64_t ax = attr_int(n, "axis", 1);
  if (ax < 0) ax += y->rank;
  if (ax < 0 || ax >= (int64_t)y->rank) return -1;
  *axis = (uint32_t)ax;
  *outer = *inner = 1;
  for (uint32_t d = 0; d < y->rank; ++d) {
    if (d < ax) *outer *= y->shape[d];
    if (d > ax) *inner *= y->shape[d];
  }
  int64_t last = ax + 1 < (int64_t)y->rank ? y->shape[y->rank - 1] : 1;
  if (*outer > DRPAI_MAX_DIM || *inner / last > DRPAI_MAX_DIM) return -1;
  int64_t total = 0;
  for (uint32_t i = 0; i < n->input_count; ++i) {
    const axle_hal_tensor_t* x = tin(g, n, i);
    if (!x || x->rank != y->rank) return -1;
    for (uint32_t d = 0; d < y->rank; ++d)
      if (d != ax && x->shape[d] != y->shape[d]) return -1;
    total += x->shape[ax];
  }
  return total == y->shape[ax] ? 0 : -1;
}

static int32_t check_concat(why_t* w, const axle_hal_graph_t* g, const axle_hal_node_t* n) {
  for (uint32_t i = 1; i < n->input_count; ++i) {
    const axle_hal_tensor_t* x = tin(g, n, i);
    if (is_const(x)) return decline(w, "a constant input is not supported");
    int32_t st = check_activation(w, x, 1);
    if (st != AXLE_HAL_OK) return st;
  }
  uint32_t axis;
  int64_t outer, inner;
  if (concat_geometry(g, n, &axis, &outer, &inner) != 0)
    return decline(w, "inputs must match the output except along the axis, within the AI-MAC's extents");
  return AXLE_HAL_OK;
}

int32_t drpai_check_node(const axle_hal_graph_t* g, uint32_t index, char* reason, size_t size) {
  char dummy[1];
  if (!reason || size == 0) {
    reason = dummy;
    size = sizeof(dummy);
  }
  reason[0] = '\0';
  if (!g || index >= g->node_count) {
    snprintf(reason, size, DEV ": node index %u is out of range", index);
    return AXLE_HAL_INVALID_ARGUMENT;
  }
  const axle_hal_node_t* n = &g->nodes[index];
  why_t w = {reason, size, n};
  op_t op = op_of(n);
  if (n->domain && n->domain[0]) return decline(&w, "domain '%s' is not supported", n->domain);
  if (op == OP_NONE)
    return decline(&w, "op not supported (the DRP-AI runs int8 Conv, Gemm, MatMul, pooling, "
                   "activations, Add, Mul, Concat and reshapes, and Softmax as post-processing)");
  if (n->input_count < 1 || n->output_count < 1) return decline(&w, "missing input or output");
  const axle_hal_tensor_t *x = tin(g, n, 0), *y = tout(g, n, 0);
  if (!x || !y) return decline(&w, "missing input or output");
  if (is_const(x)) return decline(&w, "a constant data input is folded by the core, not run");
  int32_t st = check_activation(&w, x, 1);
  if (st == AXLE_HAL_OK) st = check_activation(&w, y, op != OP_SOFTMAX);
  if (st != AXLE_HAL_OK) return st;
  switch (op) {
    case OP_CONV: return check_conv(&w, g, n);
    case OP_GEMM: return check_gemm(&w, g, n, 0);
    case OP_MATMUL: return check_gemm(&w, g, n, 1);
    case OP_MAXPOOL:
    case OP_AVGPOOL:
    case OP_GMAXPOOL:
    case OP_GAVGPOOL: return check_pool(&w, g, n, op);
    case OP_ACT:
      for (uint32_t i = 1; i < n->input_count; ++i) {
        const axle_hal_tensor_t* t = tin(g, n, i);
        if (t && !(is_const(t) && t->dtype == AXLE_HAL_DTYPE_F32 && axle_hal_tensor_elements(t) == 1))
          return decline(&w, "min/max must be float32 scalar constants");
      }
      if (axle_hal_tensor_elements(x) != axle_hal_tensor_elements(y)) return decline(&w, "shape changes");
      return AXLE_HAL_OK;
    case OP_RESHAPE:
      if (axle_hal_tensor_elements(x) != axle_hal_tensor_elements(y))
        return decline(&w, "input and output element counts differ");
      return AXLE_HAL_OK;
    case OP_ADD:
    case OP_MUL: return check_binary(&w, g, n);
    case OP_CONCAT: return check_concat(&w, g, n);
    case OP_SOFTMAX:
      /* The DRP runs it in float on the AI-MAC's dequantized result, so
       * nothing int8 can follow it. */
      if (consumers(g, n->outputs[0]))
        return decline(&w, "Softmax runs as DRP post-processing; its output must be a model output");
      return AXLE_HAL_OK;
    default:
      return decline(&w, "op not supported");
  }
}

/* ---- compilation -------------------------------------------------------------------- */

typedef struct ref_t {
  int region;
  uint32_t offset;
} ref_t;

typedef struct value_t {
  int valid;
  ref_t at;
  uint32_t bytes;
  int f32;
  float scale;
  int32_t zp;
} value_t;

typedef struct dstage_t {
  uint32_t lib;
  ref_t src, dst;
  uint16_t iw, ih, ow, oh, ich, flags;
  uint32_t icap, ocap;
  uint8_t args[DRPAI_PARAM_BLOCK - DRPAI_P_ARGS];
  char node[DRPAI_MAX_NODE_NAME];
} dstage_t;

typedef struct layer_t {
  uint32_t op;
  ref_t in, out;
  int has_in2;
  ref_t in2;                     /* second operand of ADD / MUL */
  uint32_t in_bytes, out_bytes;
  drpai_cmd_t cmd;
  int has_param;
  uint32_t w_off, w_bytes, b_off, r_off, channels; /* offsets into weight.dat */
} layer_t;

typedef struct seq_t {
  uint32_t kind, a, b;
} seq_t;

typedef struct io_t {
  int output;
  char name[DRPAI_MAX_NODE_NAME];
  int32_t dtype;
  uint32_t rank;
  int64_t shape[DRPAI_INFO_MAX_RANK];
  ref_t at;
  uint32_t size;
} io_t;

typedef struct cc_t {
  const axle_hal_graph_t* g;
  char* err;
  size_t es;
  value_t* values;
  dstage_t* d;
  uint32_t nd, capd;
  layer_t* l;
  uint32_t nl, capl;
  seq_t* s;
  uint32_t ns, caps;
  uint8_t* w;
  uint32_t nw, capw;
  uint32_t size[DRPAI_REGION_COUNT]; /* data_in, data_out, work cursors */
  io_t io[DRPAI_INFO_MAX_IO];
  uint32_t nio;
} cc_t;

static int32_t cfail(cc_t* c, int32_t status, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int32_t cfail(cc_t* c, int32_t status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, c->es, fmt, ap);
  va_end(ap);
  return status;
}

#define OOM(c) cfail(c, AXLE_HAL_OUT_OF_MEMORY, DEV ": compile: out of memory")

static int grow(void** p, uint32_t* cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint32_t n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void* q = realloc(*p, (size_t)n * elem);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* Reserves bytes in a data region, 64-byte aligned. */
static int alloc_in(cc_t* c, int region, uint64_t bytes, ref_t* out) {
  uint64_t at = ((uint64_t)c->size[region] + DRPAI_ALIGN - 1) & ~(uint64_t)(DRPAI_ALIGN - 1);
  if (at + bytes > 0xC0000000ull) return -1;
  out->region = region;
  out->offset = (uint32_t)at;
  c->size[region] = (uint32_t)(at + bytes);
  return 0;
}

/* Appends bytes to weight.dat at an alignment; returns the offset. */
static int weight_add(cc_t* c, const void* data, uint32_t bytes, uint32_t align, uint32_t* off) {
  uint32_t at = (c->nw + align - 1) & ~(align - 1);
  if (grow((void**)&c->w, &c->capw, at + bytes, 1) != 0) return -1;
  memset(c->w + c->nw, 0, at - c->nw);
  memcpy(c->w + at, data, bytes);
  c->nw = at + bytes;
  *off = at;
  return 0;
}

static dstage_t* add_dstage(cc_t* c, uint32_t lib, ref_t src, ref_t dst) {
  if (grow((void**)&c->d, &c->capd, c->nd + 1, sizeof(dstage_t)) != 0 ||
      grow((void**)&c->s, &c->caps, c->ns + 1, sizeof(seq_t)) != 0)
    return NULL;
  dstage_t* d = &c->d[c->nd];
  memset(d, 0, sizeof(*d));
  d->lib = lib;
  d->src = src;
  d->dst = dst;
  c->s[c->ns].kind = DRPAI_STAGE_DRP;
  c->s[c->ns].a = c->nd;
  c->s[c->ns].b = 0;
  ++c->ns;
  ++c->nd;
  return d;
}

static layer_t* add_layer(cc_t* c, uint32_t op, ref_t in, uint32_t in_bytes, ref_t out, uint32_t out_bytes) {
  if (grow((void**)&c->l, &c->capl, c->nl + 1, sizeof(layer_t)) != 0 ||
      grow((void**)&c->s, &c->caps, c->ns + 1, sizeof(seq_t)) != 0)
    return NULL;
  /* Consecutive layers form one AI-MAC stage of drp_desc.bin. */
  if (c->ns && c->s[c->ns - 1].kind == DRPAI_STAGE_AIMAC) {
    ++c->s[c->ns - 1].b;
  } else {
    c->s[c->ns].kind = DRPAI_STAGE_AIMAC;
    c->s[c->ns].a = c->nl;
    c->s[c->ns].b = 1;
    ++c->ns;
  }
  layer_t* l = &c->l[c->nl++];
  memset(l, 0, sizeof(*l));
  l->op = op;
  l->in = in;
  l->out = out;
  l->in_bytes = in_bytes;
  l->out_bytes = out_bytes;
  l->cmd.c[DRPAI_C_ACT_MIN] = -128;
  l->cmd.c[DRPAI_C_ACT_MAX] = 127;
  return l;
}

/* An int8 value for tensor t in the work region. */
static int new_value(cc_t* c, int32_t t, value_t** out) {
  const axle_hal_tensor_t* tt = &c->g->tensors[t];
  value_t* v = &c->values[t];
  uint64_t bytes = (uint64_t)axle_hal_tensor_elements(tt);
  if (tensor_q(tt, &v->scale, &v->zp) != 0 || alloc_in(c, DRPAI_REGION_WORK, bytes, &v->at) != 0)
    return -1;
  v->bytes = (uint32_t)bytes;
  v->f32 = 0;
  v->valid = 1;
  *out = v;
  return 0;
}

/* A library field of a stage, at its drp_param.bin block offset. */
#define ARG(d, off) ((d)->args + ((off) - DRPAI_P_ARGS))

static void put_quant_args(dstage_t* d, uint32_t count, float scale, int32_t zp) {
  drpai_put32(ARG(d, DRPAI_P_Q_COUNT), count);
  drpai_putf32(ARG(d, DRPAI_P_Q_SCALE), scale);
  drpai_put32(ARG(d, DRPAI_P_Q_ZERO), (uint32_t)zp);
}

static int32_t emit_quantize(cc_t* c, ref_t src, int32_t t, const char* node) {
  value_t* v;
  if (new_value(c, t, &v) != 0) return OOM(c);
  dstage_t* d = add_dstage(c, DRPAI_LIB_QUANTIZE, src, v->at);
  if (!d) return OOM(c);
  d->icap = v->bytes * 4;
  d->ocap = v->bytes;
  put_quant_args(d, v->bytes, v->scale, v->zp);
  if (node) snprintf(d->node, sizeof(d->node), "%s", node);
  return AXLE_HAL_OK;
}

static int32_t emit_dequantize(cc_t* c, const value_t* v, ref_t dst) {
  dstage_t* d = add_dstage(c, DRPAI_LIB_DEQUANTIZE, v->at, dst);
  if (!d) return OOM(c);
  d->icap = v->bytes;
  d->ocap = v->bytes * 4;
  put_quant_args(d, v->bytes, v->scale, v->zp);
  return AXLE_HAL_OK;
}

static int32_t emit_softmax(cc_t* c, ref_t src, ref_t dst, uint32_t outer, uint32_t axis, uint32_t inner) {
  dstage_t* d = add_dstage(c, DRPAI_LIB_SOFTMAX, src, dst);
  if (!d) return OOM(c);
  d->icap = d->ocap = outer * axis * inner * 4;
  drpai_put32(ARG(d, DRPAI_P_SM_OUTER), outer);
  drpai_put32(ARG(d, DRPAI_P_SM_AXIS), axis);
  drpai_put32(ARG(d, DRPAI_P_SM_INNER), inner);
  return AXLE_HAL_OK;
}

/* Per-channel parameters of a conv/GEMM layer: int8 weights, int32 bias,
 * {mult, shift} requantization, stored together so one load brings them. */
static int32_t emit_params(cc_t* c, layer_t* l, const int8_t* q, uint32_t wbytes, const float* wscale,
                           const float* bias, uint32_t channels, float sx, float sy) {
  int32_t* b = (int32_t*)calloc(channels, 4);
  int32_t* r = (int32_t*)calloc(channels, 8);
  if (!b || !r) {
    free(b);
    free(r);
    return OOM(c);
  }
  int32_t st = AXLE_HAL_OK;
  for (uint32_t k = 0; k < channels && st == AXLE_HAL_OK; ++k) {
    double acc_scale = (double)sx * wscale[k];
    double bq = bias ? nearbyint((double)bias[k] / acc_scale) : 0.0;
    b[k] = (int32_t)(bq > INT32_MAX ? INT32_MAX : bq < INT32_MIN ? INT32_MIN : bq);
    if (drpai_quant_multiplier(acc_scale / sy, &r[2 * k], &r[2 * k + 1]) != 0)
      st = cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": layer %u: rescale factor %g cannot be represented",
                 c->nl - 1, acc_scale / sy);
  }
  if (st == AXLE_HAL_OK &&
      (weight_add(c, q, wbytes, DRPAI_ALIGN, &l->w_off) != 0 || weight_add(c, b, channels * 4, 4, &l->b_off) != 0 ||
       weight_add(c, r, channels * 8, 4, &l->r_off) != 0))
    st = OOM(c);
  l->has_param = 1;
  l->w_bytes = wbytes;
  l->channels = channels;
  free(b);
  free(r);
  return st;
}

/* Clip's bounds: attributes before opset 11, constant inputs since. */
static void clip_bounds(const axle_hal_graph_t* g, const axle_hal_node_t* n, float* lo, float* hi) {
  *lo = attr_float(n, "min", -INFINITY);
  *hi = attr_float(n, "max", INFINITY);
  const axle_hal_tensor_t* t = tin(g, n, 1);
  if (t) *lo = *(const float*)t->data;
  t = tin(g, n, 2);
  if (t) *hi = *(const float*)t->data;
}

/* A Relu or Clip right after a Conv/Gemm/MatMul becomes the layer's output
 * clamp when nothing else can see the tensor between them: one layer fewer,
 * and the result is quantized with the activation's (tighter) range. */
static int fusable(const axle_hal_graph_t* g, const axle_hal_node_t* n, const axle_hal_node_t* next,
                   const int32_t* out_slot) {
  op_t op = op_of(n);
  int32_t t = n->outputs[0];
  return (op == OP_CONV || op == OP_GEMM || op == OP_MATMUL) &&
         (strcmp(next->op_type, "Relu") == 0 || strcmp(next->op_type, "Clip") == 0) && op_of(next) == OP_ACT &&
         next->inputs[0] == t && consumers(g, t) == 1 && !(g->tensors[t].flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT) &&
         out_slot[t] < 0;
}

/* The fused activation's clamp in the output's codes. */
static void fuse_clamp(const axle_hal_graph_t* g, const axle_hal_node_t* act, const value_t* vy, int32_t* cmd) {
  if (!act) return;
  float lo = 0.0f, hi = INFINITY;
  if (strcmp(act->op_type, "Clip") == 0) clip_bounds(g, act, &lo, &hi);
  double qlo = nearbyint((double)lo / vy->scale) + vy->zp, qhi = nearbyint((double)hi / vy->scale) + vy->zp;
  cmd[DRPAI_C_ACT_MIN] = qlo > 127 ? 127 : qlo < -128 ? -128 : (int32_t)qlo;
  cmd[DRPAI_C_ACT_MAX] = qhi > 127 ? 127 : qhi < -128 ? -128 : (int32_t)qhi;
}

static int32_t compile_conv(cc_t* c, const axle_hal_node_t* n, const axle_hal_node_t* act) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t *x = tin(g, n, 0), *wt = tin(g, n, 1), *bt = tin(g, n, 2), *y = tout(g, n, 0);
  const value_t* vx = &c->values[n->inputs[0]];
  value_t* vy;
  if (new_value(c, act ? act->outputs[0] : n->outputs[0], &vy) != 0) return OOM(c);
  window_t win;
  window_of(n, x, wt->shape[2], wt->shape[3], &win);
  uint32_t co = (uint32_t)wt->shape[0], per = (uint32_t)(wt->shape[1] * win.kh * win.kw);
  layer_t* l = add_layer(c, DRPAI_AIMAC_CONV, vx->at, vx->bytes, vy->at, vy->bytes);
  int8_t* q = (int8_t*)malloc((size_t)co * per);
  float* ws = (float*)malloc(co * sizeof(float));
  if (!l || !q || !ws) {
    free(q);
    free(ws);
    return OOM(c);
  }
  int32_t* cmd = l->cmd.c;
  cmd[DRPAI_C_N] = (int32_t)x->shape[0];
  cmd[DRPAI_C_CIN] = (int32_t)x->shape[1];
  cmd[DRPAI_C_HIN] = (int32_t)x->shape[2];
  cmd[DRPAI_C_WIN] = (int32_t)x->shape[3];
  cmd[DRPAI_C_COUT] = (int32_t)co;
  cmd[DRPAI_C_HOUT] = (int32_t)y->shape[2];
  cmd[DRPAI_C_WOUT] = (int32_t)y->shape[3];
  cmd[DRPAI_C_KH] = (int32_t)win.kh;
  cmd[DRPAI_C_KW] = (int32_t)win.kw;
  cmd[DRPAI_C_SH] = (int32_t)win.sh;
  cmd[DRPAI_C_SW] = (int32_t)win.sw;
  cmd[DRPAI_C_PT] = (int32_t)win.pt;
  cmd[DRPAI_C_PL] = (int32_t)win.pl;
  cmd[DRPAI_C_DH] = (int32_t)win.dh;
  cmd[DRPAI_C_DW] = (int32_t)win.dw;
  cmd[DRPAI_C_GROUP] = (int32_t)attr_int(n, "group", 1);
  cmd[DRPAI_C_IN_ZP] = vx->zp;
  cmd[DRPAI_C_OUT_ZP] = vy->zp;
  fuse_clamp(g, act, vy, cmd);
  drpai_quant_rows((const float*)wt->data, co, per, q, ws);
  int32_t st = emit_params(c, l, q, co * per, ws, bt ? (const float*)bt->data : NULL, co, vx->scale, vy->scale);
  free(q);
  free(ws);
  return st;
}

static int32_t compile_gemm(cc_t* c, const axle_hal_node_t* n, int matmul, const axle_hal_node_t* act) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t *a = tin(g, n, 0), *bt = tin(g, n, 1), *ct = matmul ? NULL : tin(g, n, 2);
  const value_t* va = &c->values[n->inputs[0]];
  value_t* vy;
  if (new_value(c, act ? act->outputs[0] : n->outputs[0], &vy) != 0) return OOM(c);
  int trans_b = !matmul && attr_int(n, "transB", 0);
  float alpha = matmul ? 1.0f : attr_float(n, "alpha", 1.0f), beta = matmul ? 1.0f : attr_float(n, "beta", 1.0f);
  uint32_t k = (uint32_t)a->shape[1], nn = (uint32_t)(trans_b ? bt->shape[0] : bt->shape[1]);
  /* Weights are stored one output column per row ([N][K]), alpha folded in. */
  float* w = (float*)malloc((size_t)nn * k * sizeof(float));
  float* bias = (float*)calloc(nn, sizeof(float));
  int8_t* q = (int8_t*)malloc((size_t)nn * k);
  float* ws = (float*)malloc(nn * sizeof(float));
  layer_t* l = add_layer(c, DRPAI_AIMAC_GEMM, va->at, va->bytes, vy->at, vy->bytes);
  int32_t st = AXLE_HAL_OK;
  if (!w || !bias || !q || !ws || !l) {
    st = OOM(c);
  } else {
    const float* b = (const float*)bt->data;
    for (uint32_t j = 0; j < nn; ++j)
      for (uint32_t i = 0; i < k; ++i)
        w[(size_t)j * k + i] = alpha * (trans_b ? b[(size_t)j * k + i] : b[(size_t)i * nn + j]);
    if (ct) {
      const float* cv = (const float*)ct->data;
      int64_t ce = axle_hal_tensor_elements(ct);
      for (uint32_t j = 0; j < nn; ++j) bias[j] = beta * cv[ce == 1 ? 0 : j];
    }
    int32_t* cmd = l->cmd.c;
    cmd[DRPAI_C_N] = (int32_t)a->shape[0];
    cmd[DRPAI_C_CIN] = (int32_t)k;
    cmd[DRPAI_C_COUT] = (int32_t)nn;
    cmd[DRPAI_C_IN_ZP] = va->zp;
    cmd[DRPAI_C_OUT_ZP] = vy->zp;
    fuse_clamp(g, act, vy, cmd);
    drpai_quant_rows(w, nn, k, q, ws);
    st = emit_params(c, l, q, nn * k, ws, ct ? bias : NULL, nn, va->scale, vy->scale);
  }
  free(w);
  free(bias);
  free(q);
  free(ws);
  return st;
}

static int32_t compile_pool(cc_t* c, const axle_hal_node_t* n, op_t op) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t *x = tin(g, n, 0), *y = tout(g, n, 0);
  const value_t* vx = &c->values[n->inputs[0]];
  value_t* vy;
  if (new_value(c, n->outputs[0], &vy) != 0) return OOM(c);
  window_t win = {x->shape[2], x->shape[3], 1, 1, 1, 1, 0, 0, 0, 0};
  if (op == OP_MAXPOOL || op == OP_AVGPOOL) {
    int64_t k[2];
    attr_ints(n, "kernel_shape", 2, 0, k);
    window_of(n, x, k[0], k[1], &win);
  }
  int is_max = op == OP_MAXPOOL || op == OP_GMAXPOOL;
  layer_t* l = add_layer(c, is_max ? DRPAI_AIMAC_MAXPOOL : DRPAI_AIMAC_AVGPOOL, vx->at, vx->bytes, vy->at, vy->bytes);
  if (!l) return OOM(c);
  int32_t* cmd = l->cmd.c;
  cmd[DRPAI_C_N] = (int32_t)x->shape[0];
  cmd[DRPAI_C_CIN] = cmd[DRPAI_C_COUT] = (int32_t)x->shape[1];
  cmd[DRPAI_C_HIN] = (int32_t)x->shape[2];
  cmd[DRPAI_C_WIN] = (int32_t)x->shape[3];
  cmd[DRPAI_C_HOUT] = (int32_t)y->shape[2];
  cmd[DRPAI_C_WOUT] = (int32_t)y->shape[3];
  cmd[DRPAI_C_KH] = (int32_t)win.kh;
  cmd[DRPAI_C_KW] = (int32_t)win.kw;
  cmd[DRPAI_C_SH] = (int32_t)win.sh;
  cmd[DRPAI_C_SW] = (int32_t)win.sw;
  cmd[DRPAI_C_PT] = (int32_t)win.pt;
  cmd[DRPAI_C_PL] = (int32_t)win.pl;
  cmd[DRPAI_C_DH] = (int32_t)win.dh;
  cmd[DRPAI_C_DW] = (int32_t)win.dw;
  cmd[DRPAI_C_IN_ZP] = vx->zp;
  cmd[DRPAI_C_OUT_ZP] = vy->zp;
  cmd[DRPAI_C_FLAGS] = op == OP_AVGPOOL && attr_int(n, "count_include_pad", 0) ? DRPAI_CF_COUNT_PAD : 0;
  if (drpai_quant_multiplier((double)vx->scale / vy->scale, &cmd[DRPAI_C_MULT], &cmd[DRPAI_C_SHIFT]) != 0)
    return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s': rescale factor cannot be represented", n->name);
  return AXLE_HAL_OK;
}

/* Activations, evaluated in float to fill the table. args[0..1]: alpha/beta
 * or min/max. */
static float act_identity(float x, const float* a) { (void)a; return x; }
static float act_relu(float x, const float* a) { (void)a; return x > 0.0f ? x : 0.0f; }
static float act_leaky(float x, const float* a) { return x >= 0.0f ? x : a[0] * x; }
static float act_clip(float x, const float* a) { return x < a[0] ? a[0] : x > a[1] ? a[1] : x; }
static float act_sigmoid(float x, const float* a) { (void)a; return 1.0f / (1.0f + expf(-x)); }
static float act_tanh(float x, const float* a) { (void)a; return tanhf(x); }
static float act_hsig(float x, const float* a) { return fmaxf(0.0f, fminf(1.0f, a[0] * x + a[1])); }
static float act_hswish(float x, const float* a) { (void)a; return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f)); }
static float act_elu(float x, const float* a) { return x >= 0.0f ? x : a[0] * (expf(x) - 1.0f); }

static drpai_act_fn act_of(const axle_hal_graph_t* g, const axle_hal_node_t* n, float* args) {
  const char* t = n->op_type;
  if (strcmp(t, "Relu") == 0) return act_relu;
  if (strcmp(t, "LeakyRelu") == 0) {
    args[0] = attr_float(n, "alpha", 0.01f);
    return act_leaky;
  }
  if (strcmp(t, "Clip") == 0) {
    clip_bounds(g, n, &args[0], &args[1]);
    return act_clip;
  }
  if (strcmp(t, "Sigmoid") == 0) return act_sigmoid;
  if (strcmp(t, "Tanh") == 0) return act_tanh;
  if (strcmp(t, "HardSigmoid") == 0) {
    args[0] = attr_float(n, "alpha", 0.2f);
    args[1] = attr_float(n, "beta", 0.5f);
    return act_hsig;
  }
  if (strcmp(t, "HardSwish") == 0) return act_hswish;
  if (strcmp(t, "Elu") == 0) {
    args[0] = attr_float(n, "alpha", 1.0f);
    return act_elu;
  }
  return act_identity;
}

static int32_t compile_lut(cc_t* c, const axle_hal_node_t* n, drpai_act_fn f, const float* args) {
  const value_t* vx = &c->values[n->inputs[0]];
  value_t* vy;
  if (new_value(c, n->outputs[0], &vy) != 0) return OOM(c);
  layer_t* l = add_layer(c, DRPAI_AIMAC_LUT, vx->at, vx->bytes, vy->at, vy->bytes);
  if (!l) return OOM(c);
  int8_t table[256];
  drpai_quant_lut(vx->scale, vx->zp, vy->scale, vy->zp, f, args, table);
  if (weight_add(c, table, sizeof(table), DRPAI_ALIGN, &l->w_off) != 0) return OOM(c);
  l->has_param = 1;
  l->w_bytes = sizeof(table);
  return AXLE_HAL_OK;
}

static int32_t compile_binary(cc_t* c, const axle_hal_node_t* n, int mul) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t* y = tout(g, n, 0);
  /* The full-size operand is a, the per-channel one (if any) b: both ops
   * commute. */
  int small = per_channel_operand(tin(g, n, 0), tin(g, n, 1), y);
  int ia = small == 0 ? 1 : 0;
  const value_t *va = &c->values[n->inputs[ia]], *vb = &c->values[n->inputs[1 - ia]];
  value_t* vy;
  if (new_value(c, n->outputs[0], &vy) != 0) return OOM(c);
  layer_t* l = add_layer(c, mul ? DRPAI_AIMAC_MUL : DRPAI_AIMAC_ADD, va->at, va->bytes, vy->at, vy->bytes);
  if (!l) return OOM(c);
  l->has_in2 = 1;
  l->in2 = vb->at;
  int32_t* cmd = l->cmd.c;
  int64_t d[4];
  nchw(y, d);
  cmd[DRPAI_C_N] = (int32_t)d[0];
  cmd[DRPAI_C_CIN] = cmd[DRPAI_C_COUT] = (int32_t)d[1];
  cmd[DRPAI_C_HIN] = cmd[DRPAI_C_HOUT] = (int32_t)d[2];
  cmd[DRPAI_C_WIN] = cmd[DRPAI_C_WOUT] = (int32_t)d[3];
  cmd[DRPAI_C_IN_ZP] = va->zp;
  cmd[DRPAI_C_B_ZP] = vb->zp;
  cmd[DRPAI_C_OUT_ZP] = vy->zp;
  cmd[DRPAI_C_FLAGS] = small >= 0 ? DRPAI_CF_B_PER_CHANNEL : 0;
  int bad;
  if (mul) {
    bad = drpai_quant_multiplier((double)va->scale * vb->scale / vy->scale, &cmd[DRPAI_C_MULT], &cmd[DRPAI_C_SHIFT]);
  } else {
    /* One shift for both operands, chosen for the larger ratio; the other
     * multiplier is then exact to the same precision. */
    double ra = (double)va->scale / vy->scale, rb = (double)vb->scale / vy->scale;
    int32_t m;
    bad = drpai_quant_multiplier(ra > rb ? ra : rb, &m, &cmd[DRPAI_C_SHIFT]);
    double unit = ldexp(1.0, cmd[DRPAI_C_SHIFT]);
    cmd[DRPAI_C_MULT] = (int32_t)llround(ra * unit);
    cmd[DRPAI_C_B_MULT] = (int32_t)llround(rb * unit);
  }
  if (bad != 0)
    return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s': rescale factor cannot be represented", n->name);
  return AXLE_HAL_OK;
}

static int32_t compile_concat(cc_t* c, const axle_hal_node_t* n) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t* y = tout(g, n, 0);
  uint32_t axis;
  int64_t outer, inner;
  concat_geometry(g, n, &axis, &outer, &inner);
  int64_t w = axis + 1 < y->rank ? y->shape[y->rank - 1] : 1;
  value_t* vy;
  if (new_value(c, n->outputs[0], &vy) != 0) return OOM(c);
  int64_t offset = 0;
  for (uint32_t i = 0; i < n->input_count; ++i) {
    const value_t* vx = &c->values[n->inputs[i]];
    int64_t cin = tin(g, n, i)->shape[axis];
    layer_t* l = add_layer(c, DRPAI_AIMAC_CONCAT, vx->at, vx->bytes, vy->at, vy->bytes);
    if (!l) return OOM(c);
    int32_t* cmd = l->cmd.c;
    cmd[DRPAI_C_N] = (int32_t)outer;
    cmd[DRPAI_C_CIN] = (int32_t)cin;
    cmd[DRPAI_C_HIN] = cmd[DRPAI_C_HOUT] = (int32_t)(inner / w);
    cmd[DRPAI_C_WIN] = cmd[DRPAI_C_WOUT] = (int32_t)w;
    cmd[DRPAI_C_COUT] = (int32_t)y->shape[axis];
    cmd[DRPAI_C_OFFSET] = (int32_t)offset;
    cmd[DRPAI_C_IN_ZP] = vx->zp;
    cmd[DRPAI_C_OUT_ZP] = vy->zp;
    if (drpai_quant_multiplier((double)vx->scale / vy->scale, &cmd[DRPAI_C_MULT], &cmd[DRPAI_C_SHIFT]) != 0)
      return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s': rescale factor cannot be represented", n->name);
    offset += cin;
  }
  return AXLE_HAL_OK;
}

/* act: a Relu/Clip fused into this Conv/Gemm/MatMul, or NULL. */
static int32_t compile_node(cc_t* c, const axle_hal_node_t* n, const axle_hal_node_t* act, const int32_t* out_slot) {
  const axle_hal_graph_t* g = c->g;
  op_t op = op_of(n);
  switch (op) {
    case OP_CONV: return compile_conv(c, n, act);
    case OP_GEMM: return compile_gemm(c, n, 0, act);
    case OP_MATMUL: return compile_gemm(c, n, 1, act);
    case OP_MAXPOOL:
    case OP_AVGPOOL:
    case OP_GMAXPOOL:
    case OP_GAVGPOOL: return compile_pool(c, n, op);
    case OP_ADD: return compile_binary(c, n, 0);
    case OP_MUL: return compile_binary(c, n, 1);
    case OP_CONCAT: return compile_concat(c, n);
    case OP_ACT: {
      float args[2] = {0.0f, 0.0f};
      drpai_act_fn f = act_of(g, n, args);
      return compile_lut(c, n, f, args);
    }
    case OP_RESHAPE: {
      /* Row-major data does not move; only a differing calibration needs a
       * requantizing table. */
      const value_t* vx = &c->values[n->inputs[0]];
      float s = 0.0f;
      int32_t z = 0;
      if (tensor_q(tout(g, n, 0), &s, &z) == 0 && s == vx->scale && z == vx->zp) {
        c->values[n->outputs[0]] = *vx;
        return AXLE_HAL_OK;
      }
      return compile_lut(c, n, act_identity, NULL);
    }
    case OP_SOFTMAX: {
      const axle_hal_tensor_t* x = tin(g, n, 0);
      const value_t* vx = &c->values[n->inputs[0]];
      int32_t slot = out_slot[n->outputs[0]];
      if (slot < 0) return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s' (Softmax): output is not a partition output", n->name);
      int64_t axis = attr_int(n, "axis", g->opset >= 13 ? -1 : 1);
      if (axis < 0) axis += x->rank;
      if (axis < 0 || axis >= (int64_t)x->rank)
        return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s' (Softmax): bad axis", n->name);
      uint64_t outer = 1, len = 1, inner = 1;
      for (uint32_t d = 0; d < x->rank; ++d) {
        if (d < axis) outer *= (uint64_t)x->shape[d];
        else if (d == axis || g->opset < 13) len *= (uint64_t)x->shape[d];
        else inner *= (uint64_t)x->shape[d];
      }
      ref_t tmp;
      if (alloc_in(c, DRPAI_REGION_WORK, (uint64_t)vx->bytes * 4, &tmp) != 0) return OOM(c);
      int32_t st = emit_dequantize(c, vx, tmp);
      if (st != AXLE_HAL_OK) return st;
      ref_t dst = {DRPAI_REGION_DATA_OUT, (uint32_t)slot};
      st = emit_softmax(c, tmp, dst, (uint32_t)outer, (uint32_t)len, (uint32_t)inner);
      value_t* vy = &c->values[n->outputs[0]];
      vy->valid = 1;
      vy->f32 = 1;
      vy->at = dst;
      vy->bytes = vx->bytes * 4;
      return st;
    }
    default:
      return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": node '%s' (%s): not supported", n->name, n->op_type);
  }
}

/* ---- the prepost pipeline -------------------------------------------------------------- */

static void image_stage(dstage_t* d, uint32_t iw, uint32_t ih, uint32_t ow, uint32_t oh, uint32_t ich,
                        uint32_t flags, uint64_t icap, uint64_t ocap) {
  d->iw = (uint16_t)iw;
  d->ih = (uint16_t)ih;
  d->ow = (uint16_t)ow;
  d->oh = (uint16_t)oh;
  d->ich = (uint16_t)ich;
  d->flags = (uint16_t)flags;
  d->icap = (uint32_t)icap;
  d->ocap = (uint32_t)ocap;
}

/* The pre-processing result: float32 pixels, HWC or CHW. */
typedef struct pre_out_t {
  ref_t at;
  uint32_t w, h, ch;
  int chw;
} pre_out_t;

/* Builds the DRP pre-processing from the camera input (io input 0 in
 * data_in) to float32 data of a fixed size. */
static int32_t pre_chain(cc_t* c, const drpai_prepost_t* pp, pre_out_t* res) {
  uint32_t w = pp->input_w, h = pp->input_h, ch = pp->input_c, fmt = pp->input_format;
  uint32_t cap_w = w, cap_h = h; /* the most a buffer must hold (crop can grow at run time) */
  int f32 = 0, chw = 0, dynamic = 0;
  ref_t src = c->io[0].at;
  uint64_t src_cap = c->io[0].size;
  for (uint32_t i = 0; i < pp->pre_count; ++i) {
    const drpai_pp_op_t* op = &pp->pre[i];
    uint32_t elem = f32 ? 4 : 1, nw = w, nh = h, nch = ch, flags = 0;
    const char* bad = NULL;
    switch (op->lib) {
      case DRPAI_LIB_CROP:
        nw = op->w ? op->w : w - (op->x < w ? op->x : w);
        nh = op->h ? op->h : h - (op->y < h ? op->y : h);
        if (chw) bad = "crop needs HWC data";
        else if (op->x + nw > w || op->y + nh > h || !nw || !nh) bad = "the crop window leaves the image";
        else if (fmt == DRPAI_PP_YUY2 && ((op->x & 1) || (nw & 1))) bad = "a YUY2 crop needs an even CROP_POS_X and width";
        dynamic = 1;
        break;
      case DRPAI_LIB_YUV2RGB:
        if (fmt != DRPAI_PP_YUY2 || f32 || chw) bad = "conv_yuv2rgb needs YUY2 data";
        nch = op->rgb_format == 2 ? 1 : 3;
        fmt = op->rgb_format == 0 ? DRPAI_PP_RGB : op->rgb_format == 1 ? DRPAI_PP_BGR : DRPAI_PP_GRAY;
        flags = DRPAI_PF_SIZE_FOLLOWS;
        break;
      case DRPAI_LIB_RESIZE:
        if (f32 || chw || fmt == DRPAI_PP_YUY2) bad = "resize_hwc needs uint8 HWC pixels (convert YUY2 first)";
        nw = op->ow;
        nh = op->oh;
        dynamic = 0;
        break;
      case DRPAI_LIB_SCALER:
        if (chw || fmt == DRPAI_PP_YUY2) bad = "imagescaler needs HWC pixels (convert YUY2 first)";
        else if (ch > 4 || (op->nvalues != 1 && op->nvalues != ch)) bad = "ADD_ARRAY/MUL_ARRAY need 1 or one value per channel";
        flags = DRPAI_PF_SIZE_FOLLOWS;
        break;
      case DRPAI_LIB_TRANSPOSE:
        if (chw == !op->to_hwc) bad = op->to_hwc ? "the data is already HWC" : "the data is already CHW";
        flags = DRPAI_PF_SIZE_FOLLOWS;
        break;
      default:
        bad = "not a pre-processing operation";
    }
    if (bad) return cfail(c, AXLE_HAL_INVALID_MODEL, DEV ": prepost operation %u (%s): %s", i, drpai_lib_name(op->lib), bad);
    if (op->lib == DRPAI_LIB_RESIZE) cap_w = nw, cap_h = nh;
    uint32_t nelem = op->lib == DRPAI_LIB_SCALER ? 4 : elem;
    uint64_t out_cap = (uint64_t)cap_w * cap_h * nch * nelem;
    ref_t dst;
    if (alloc_in(c, DRPAI_REGION_WORK, out_cap, &dst) != 0) return OOM(c);
    dstage_t* d = add_dstage(c, op->lib, src, dst);
    if (!d) return OOM(c);
    image_stage(d, w, h, nw, nh, ch, flags, src_cap, out_cap);
    if (i == 0) snprintf(d->node, sizeof(d->node), "%s", pp->input_name);
    switch (op->lib) {
      case DRPAI_LIB_CROP:
        drpai_put16(ARG(d, DRPAI_P_CROP_X), (uint16_t)op->x);
        drpai_put16(ARG(d, DRPAI_P_CROP_Y), (uint16_t)op->y);
        drpai_put16(ARG(d, DRPAI_P_CROP_FMT), fmt == DRPAI_PP_YUY2 ? 1 : 0);
        drpai_put16(ARG(d, DRPAI_P_CROP_ELEM), (uint16_t)(ch * elem));
        break;
      case DRPAI_LIB_YUV2RGB:
        drpai_put16(ARG(d, DRPAI_P_RGB_FMT), (uint16_t)op->rgb_format);
        break;
      case DRPAI_LIB_RESIZE:
        drpai_put16(ARG(d, DRPAI_P_RESIZE_ALG), (uint16_t)op->alg);
        break;
      case DRPAI_LIB_SCALER:
        drpai_put16(ARG(d, DRPAI_P_SCALER_TYPE), f32 ? 1 : 0);
        for (uint32_t k = 0; k < 4; ++k) {
          uint32_t src_k = op->nvalues == 1 || k >= op->nvalues ? 0 : k;
          drpai_putf32(ARG(d, DRPAI_P_SCALER_ADD) + 4 * k, op->add[src_k]);
          drpai_putf32(ARG(d, DRPAI_P_SCALER_MUL) + 4 * k, op->mul[src_k]);
        }
        f32 = 1;
        break;
      case DRPAI_LIB_TRANSPOSE:
        drpai_put16(ARG(d, DRPAI_P_TR_ELEM), (uint16_t)elem);
        drpai_put16(ARG(d, DRPAI_P_TR_DIR), (uint16_t)op->to_hwc);
        chw = !op->to_hwc;
        break;
    }
    w = nw;
    h = nh;
    ch = nch;
    src = dst;
    src_cap = out_cap;
  }
  /* The body's input size is fixed, but PREPOST_CROP changes the crop's at
   * run time: something must bring it back to a fixed size. */
  if (dynamic) return cfail(c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: a resize_hwc must follow crop");
  if (!f32) return cfail(c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: the model input is float32; end the "
                                                    "pre-processing with imagescaler (and transpose)");
  res->at = src;
  res->w = w;
  res->h = h;
  res->ch = ch;
  res->chw = chw;
  return AXLE_HAL_OK;
}

/* The pre-processing in front of body input tensor t, then quantization. */
static int32_t compile_pre(cc_t* c, const drpai_prepost_t* pp, int32_t t) {
  const axle_hal_tensor_t* body = &c->g->tensors[t];
  pre_out_t r;
  int32_t st = pre_chain(c, pp, &r);
  if (st != AXLE_HAL_OK) return st;
  uint32_t w = r.w, h = r.h, ch = r.ch;
  int chw = r.chw;
  int64_t want[4] = {1, chw ? ch : h, chw ? h : w, chw ? w : ch};
  int ok = body->rank == 4 || body->rank == 3;
  for (uint32_t d = 0; ok && d < body->rank; ++d) ok = body->shape[d] == want[4 - body->rank + d];
  if (!ok)
    return cfail(c, AXLE_HAL_INVALID_MODEL,
                 DEV ": prepost: the pre-processing produces %s %ux%ux%u but model input '%s' has another shape",
                 chw ? "CHW" : "HWC", chw ? ch : h, chw ? h : w, chw ? w : ch, body->name);
  return emit_quantize(c, r.at, t, NULL);
}

/* ---- program files ------------------------------------------------------------------------- */

static uint32_t addr(const drpai_program_t* p, ref_t r) { return p->region[r.region].addr + r.offset; }

static uint8_t* new_file(drpai_program_t* p, int f, const char* magic, uint32_t entry, uint32_t count) {
  uint32_t size = DRPAI_HEADER_BYTES + entry * count;
  p->file[f].data = (uint8_t*)calloc(1, size);
  if (!p->file[f].data) return NULL;
  p->file[f].size = size;
  memcpy(p->file[f].data, magic, 4);
  drpai_put16(p->file[f].data + 4, DRPAI_FORMAT_VERSION);
  drpai_put16(p->file[f].data + 6, (uint16_t)entry);
  drpai_put32(p->file[f].data + 8, count);
  return p->file[f].data;
}

static int append(char** s, size_t* len, size_t* cap, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char** s, size_t* len, size_t* cap, const char* fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*s + *len, *cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < *cap - *len) {
      *len += (size_t)n;
      return 0;
    }
    size_t ncap = *cap * 2 + (size_t)n;
    char* q = (char*)realloc(*s, ncap);
    if (!q) return -1;
    *s = q;
    *cap = ncap;
  }
}

static int32_t build_files(cc_t* c, uint32_t org_base, drpai_program_t* p) {
  if (c->nl > DRPAI_MAX_LAYERS || c->ns > DRPAI_MAX_STAGES)
    return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": %u layers and %u stages exceed the device's %u", c->nl, c->ns,
                 DRPAI_MAX_LAYERS);
  uint32_t np = 0, libs[DRPAI_LIB_MAX + 1] = {0}, nlibs = 0;
  for (uint32_t i = 0; i < c->nl; ++i) np += c->l[i].has_param;
  for (uint32_t i = 0; i < c->nd; ++i) libs[c->d[i].lib] = 1;
  for (uint32_t i = 1; i <= DRPAI_LIB_MAX; ++i) nlibs += libs[i];
  uint8_t *cfg = new_file(p, DRPAI_FILE_DRPCFG, DRPAI_MAGIC_DRPCFG, DRPAI_DRPCFG_ENTRY, nlibs),
          *desc = new_file(p, DRPAI_FILE_DRP_DESC, DRPAI_MAGIC_DRP_DESC, DRPAI_DRP_DESC_ENTRY, c->ns),
          *ad = new_file(p, DRPAI_FILE_AIMAC_DESC, DRPAI_MAGIC_AIMAC_DESC, DRPAI_AIMAC_DESC_ENTRY, c->nl),
          *ac = new_file(p, DRPAI_FILE_AIMAC_CMD, DRPAI_MAGIC_AIMAC_CMD, DRPAI_AIMAC_CMD_ENTRY, c->nl),
          *pd = new_file(p, DRPAI_FILE_AIMAC_PARAM_DESC, DRPAI_MAGIC_PARAM_DESC, DRPAI_PARAM_DESC_ENTRY, np),
          *pc = new_file(p, DRPAI_FILE_AIMAC_PARAM_CMD, DRPAI_MAGIC_PARAM_CMD, DRPAI_PARAM_CMD_ENTRY, np);
  p->file[DRPAI_FILE_DRP_PARAM].data = (uint8_t*)calloc(1, (size_t)c->nd * DRPAI_PARAM_BLOCK + 1);
  p->file[DRPAI_FILE_DRP_PARAM].size = c->nd * DRPAI_PARAM_BLOCK;
  p->file[DRPAI_FILE_WEIGHT].data = c->w ? c->w : (uint8_t*)malloc(1);
  p->file[DRPAI_FILE_WEIGHT].size = c->nw;
  c->w = NULL;
  if (!cfg || !desc || !ad || !ac || !pd || !pc || !p->file[DRPAI_FILE_DRP_PARAM].data ||
      !p->file[DRPAI_FILE_WEIGHT].data)
    return OOM(c);
  p->region[DRPAI_REGION_DATA_IN].size = c->size[DRPAI_REGION_DATA_IN];
  p->region[DRPAI_REGION_DATA_OUT].size = c->size[DRPAI_REGION_DATA_OUT];
  p->region[DRPAI_REGION_WORK].size = c->size[DRPAI_REGION_WORK] ? c->size[DRPAI_REGION_WORK] : DRPAI_ALIGN;
  drpai_program_layout(p, org_base);
  if ((uint64_t)org_base + p->total > 0xFC000000ull)
    return cfail(c, AXLE_HAL_RESOURCE_EXHAUSTED, DEV ": the program needs %u bytes from 0x%08X, past 0xFC000000",
                 p->total, org_base);

  for (uint32_t i = 1, k = 0; i <= DRPAI_LIB_MAX; ++i)
    if (libs[i]) drpai_put32(cfg + DRPAI_HEADER_BYTES + 4 * k++, i);
  drpai_put32(desc + 12, p->region[DRPAI_REGION_DATA_IN].addr);
  drpai_put32(desc + 16, p->region[DRPAI_REGION_DATA_IN].size);
  drpai_put32(desc + 20, p->region[DRPAI_REGION_DATA_OUT].addr);
  drpai_put32(desc + 24, p->region[DRPAI_REGION_DATA_OUT].size);
  for (uint32_t i = 0; i < c->ns; ++i) {
    uint8_t* e = desc + DRPAI_HEADER_BYTES + (size_t)i * DRPAI_DRP_DESC_ENTRY;
    const seq_t* s = &c->s[i];
    drpai_put32(e, s->kind);
    if (s->kind == DRPAI_STAGE_DRP) {
      drpai_put32(e + 4, c->d[s->a].lib);
      drpai_put32(e + 8, s->a * DRPAI_PARAM_BLOCK);
    } else {
      drpai_put32(e + 4, s->a);
      drpai_put32(e + 8, s->b);
    }
  }
  for (uint32_t i = 0; i < c->nd; ++i) {
    const dstage_t* d = &c->d[i];
    uint8_t* b = p->file[DRPAI_FILE_DRP_PARAM].data + (size_t)i * DRPAI_PARAM_BLOCK;
    uint16_t flags = d->flags;
    if (d->src.region == DRPAI_REGION_DATA_IN) flags |= DRPAI_PF_SRC_INPUT;
    if (d->dst.region == DRPAI_REGION_DATA_OUT) flags |= DRPAI_PF_DST_OUTPUT;
    drpai_put32(b + DRPAI_P_LIB, d->lib);
    drpai_put32(b + DRPAI_P_RADDR, addr(p, d->src));
    drpai_put32(b + DRPAI_P_WADDR, addr(p, d->dst));
    drpai_put16(b + DRPAI_P_IWIDTH, d->iw);
    drpai_put16(b + DRPAI_P_IHEIGHT, d->ih);
    drpai_put16(b + DRPAI_P_OWIDTH, d->ow);
    drpai_put16(b + DRPAI_P_OHEIGHT, d->oh);
    drpai_put16(b + DRPAI_P_ICH, d->ich);
    drpai_put16(b + DRPAI_P_FLAGS, flags);
    drpai_put32(b + DRPAI_P_ICAP, d->icap);
    drpai_put32(b + DRPAI_P_OCAP, d->ocap);
    memcpy(b + DRPAI_P_ARGS, d->args, sizeof(d->args));
  }
  uint32_t wbase = p->region[DRPAI_REGION_WEIGHT].addr;
  for (uint32_t i = 0, pi = 0; i < c->nl; ++i) {
    const layer_t* l = &c->l[i];
    uint8_t* e = ad + DRPAI_HEADER_BYTES + (size_t)i * DRPAI_AIMAC_DESC_ENTRY;
    drpai_put32(e, l->op);
    drpai_put32(e + 4, addr(p, l->in));
    drpai_put32(e + 8, addr(p, l->out));
    drpai_put32(e + 12, i);
    drpai_put32(e + 16, l->has_param ? pi : DRPAI_NO_PARAM);
    drpai_put32(e + 20, l->in_bytes);
    drpai_put32(e + 24, l->out_bytes);
    drpai_put32(e + 28, l->has_in2 ? addr(p, l->in2) : 0);
    for (uint32_t k = 0; k < DRPAI_AIMAC_CMD_WORDS; ++k)
      drpai_put32(ac + DRPAI_HEADER_BYTES + (size_t)i * DRPAI_AIMAC_CMD_ENTRY + 4 * k, (uint32_t)l->cmd.c[k]);
    if (!l->has_param) continue;
    uint8_t* q = pd + DRPAI_HEADER_BYTES + (size_t)pi * DRPAI_PARAM_DESC_ENTRY;
    int lut = l->op == DRPAI_AIMAC_LUT;
    drpai_put32(q, wbase + l->w_off);
    drpai_put32(q + 4, l->w_bytes);
    drpai_put32(q + 8, lut ? 0 : wbase + l->b_off);
    drpai_put32(q + 12, lut ? 0 : l->channels * 4);
    drpai_put32(q + 16, lut ? 0 : wbase + l->r_off);
    drpai_put32(q + 20, lut ? 0 : l->channels * 8);
    drpai_put32(q + 24, l->channels);
    uint8_t* m = pc + DRPAI_HEADER_BYTES + (size_t)pi * DRPAI_PARAM_CMD_ENTRY;
    drpai_put32(m, i);
    drpai_put32(m + 4, wbase + l->w_off);
    drpai_put32(m + 8, lut ? l->w_bytes : l->r_off + l->channels * 8 - l->w_off);
    ++pi;
  }

  /* drp_param_info.txt */
  size_t len = 0, cap = 1024;
  char* text = (char*)malloc(cap);
  int bad = !text || append(&text, &len, &cap, "# axle drp_param_info 1\n");
  uint32_t kind_index[2] = {0, 0};
  for (uint32_t i = 0; i < c->nio && !bad; ++i) {
    const io_t* io = &c->io[i];
    char shape[128];
    size_t at = 0;
    for (uint32_t d = 0; d < io->rank; ++d)
      at += (size_t)snprintf(shape + at, sizeof(shape) - at, "%s%lld", d ? "x" : "", (long long)io->shape[d]);
    bad = append(&text, &len, &cap, "io:%s,index:%u,name:%s,dtype:%s,shape:%s,addr:0x%08X,size:0x%08X\n",
                 io->output ? "output" : "input", kind_index[io->output]++, io->name,
                 drpai_dtype_name(io->dtype), shape, addr(p, io->at), io->size);
  }
  for (uint32_t i = 0; i < c->nd && !bad; ++i)
    bad = append(&text, &len, &cap, "op:%u,lib:%s,offset:0x%08X,size:0x%08X%s%s\n", i,
                 drpai_lib_name(c->d[i].lib), i * DRPAI_PARAM_BLOCK, DRPAI_PARAM_BLOCK,
                 c->d[i].node[0] ? ",node:" : "", c->d[i].node);
  if (bad) {
    free(text);
    return OOM(c);
  }
  p->file[DRPAI_FILE_DRP_PARAM_INFO].data = (uint8_t*)text;
  p->file[DRPAI_FILE_DRP_PARAM_INFO].size = (uint32_t)len;
  /* Parse what we wrote: the host then reads the same io lines a loaded
   * directory would give it. */
  for (size_t at = 0; at < len;) {
    size_t end = at;
    while (end < len && text[end] != '\n') ++end;
    const char* why = NULL;
    if (drpai_info_parse_line(&p->info, text + at, end - at, &why) != 0)
      return cfail(c, AXLE_HAL_INTERNAL, DEV ": generated drp_param_info.txt is invalid: %s", why ? why : "?");
    at = end + 1;
  }
  return AXLE_HAL_OK;
}

/* A name that fits a drp_param_info.txt field. */
static int name_ok(const char* s) {
  size_t n = strlen(s);
  return n > 0 && n < DRPAI_MAX_NODE_NAME && !strpbrk(s, ",\n\r");
}

static int32_t add_io(cc_t* c, int output, const char* name, int32_t dtype, uint32_t rank, const int64_t* shape,
                      uint32_t size) {
  if (c->nio == DRPAI_INFO_MAX_IO) return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": more than %u inputs and outputs", DRPAI_INFO_MAX_IO);
  if (!name_ok(name))
    return cfail(c, AXLE_HAL_UNSUPPORTED, DEV ": tensor name '%s' cannot be written to drp_param_info.txt "
                 "(empty, over 255 characters, or containing a comma or newline)", name);
  io_t* io = &c->io[c->nio++];
  io->output = output;
  snprintf(io->name, sizeof(io->name), "%s", name);
  io->dtype = dtype;
  io->rank = rank;
  memcpy(io->shape, shape, rank * sizeof(int64_t));
  io->size = size;
  return alloc_in(c, output ? DRPAI_REGION_DATA_OUT : DRPAI_REGION_DATA_IN, size, &io->at) == 0 ? AXLE_HAL_OK : OOM(c);
}

int32_t drpai_compile(const axle_hal_graph_t* g, const uint32_t* nodes, uint32_t node_count,
                      const drpai_prepost_t* pp, uint32_t org_base, drpai_compiled_t* out, char* err,
                      size_t es) {
  memset(out, 0, sizeof(*out));
  cc_t c;
  memset(&c, 0, sizeof(c));
  c.g = g;
  c.err = err;
  c.es = es;
  err[0] = '\0';
  if (node_count == 0) return cfail(&c, AXLE_HAL_INVALID_ARGUMENT, DEV ": compile: no nodes");
  if (org_base % DRPAI_ALIGN) return cfail(&c, AXLE_HAL_INVALID_ARGUMENT, DEV ": compile: base 0x%08X is not 64-byte aligned", org_base);
  for (uint32_t i = 0; i < node_count; ++i) {
    if (nodes[i] >= g->node_count) return cfail(&c, AXLE_HAL_INVALID_ARGUMENT, DEV ": compile: node %u out of range", nodes[i]);
    int32_t st = drpai_check_node(g, nodes[i], err, es);
    if (st != AXLE_HAL_OK) return st;
  }
  c.values = (value_t*)calloc(g->tensor_count, sizeof(value_t));
  int32_t* out_slot = (int32_t*)malloc(g->tensor_count * sizeof(int32_t));
  uint8_t* in_sub = (uint8_t*)calloc(g->node_count, 1);
  uint8_t* made = (uint8_t*)calloc(g->tensor_count, 1);
  int32_t st = (!c.values || !out_slot || !in_sub || !made) ? OOM(&c) : AXLE_HAL_OK;
  int32_t ins[DRPAI_INFO_MAX_IO], outs[DRPAI_INFO_MAX_IO];
  uint32_t nin = 0, nout = 0;
  if (st == AXLE_HAL_OK) {
    for (uint32_t t = 0; t < g->tensor_count; ++t) out_slot[t] = -1;
    for (uint32_t i = 0; i < node_count; ++i) in_sub[nodes[i]] = 1;
    /* Partition inputs: data read before anything in the partition made it. */
    for (uint32_t i = 0; i < node_count && st == AXLE_HAL_OK; ++i) {
      const axle_hal_node_t* n = &g->nodes[nodes[i]];
      for (uint32_t j = 0; j < n->input_count && st == AXLE_HAL_OK; ++j) {
        int32_t t = n->inputs[j];
        if (t < 0 || (j > 0 && (g->tensors[t].flags & AXLE_HAL_TENSOR_CONSTANT))) continue;
        int seen = made[t];
        for (uint32_t k = 0; k < nin; ++k) seen |= ins[k] == t;
        if (!seen) {
          if (nin == DRPAI_INFO_MAX_IO) st = cfail(&c, AXLE_HAL_UNSUPPORTED, DEV ": too many partition inputs");
          else ins[nin++] = t;
        }
      }
      for (uint32_t k = 0; k < n->output_count; ++k)
        if (n->outputs[k] >= 0) made[n->outputs[k]] = 1;
    }
    /* Partition outputs: model outputs and what other devices consume. */
    for (uint32_t i = 0; i < node_count && st == AXLE_HAL_OK; ++i) {
      int32_t t = g->nodes[nodes[i]].outputs[0];
      int needed = (g->tensors[t].flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT) != 0;
      for (uint32_t m = 0; m < g->node_count && !needed; ++m)
        if (!in_sub[m])
          for (uint32_t k = 0; k < g->nodes[m].input_count; ++k) needed |= g->nodes[m].inputs[k] == t;
      if (!needed) continue;
      if (nout == DRPAI_INFO_MAX_IO) st = cfail(&c, AXLE_HAL_UNSUPPORTED, DEV ": too many partition outputs");
      else outs[nout++] = t;
    }
    if (st == AXLE_HAL_OK && nout == 0) st = cfail(&c, AXLE_HAL_INVALID_ARGUMENT, DEV ": the partition has no output");
  }
  if (st == AXLE_HAL_OK && pp) {
    const axle_hal_tensor_t* body = &g->tensors[ins[0]];
    if (nin != 1)
      st = cfail(&c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: the DRP-AI part has %u inputs; pre-processing feeds one", nin);
    else if (pp->body_name[0] && strcmp(pp->body_name, body->name) != 0)
      st = cfail(&c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: input_to_body names '%s' but the model input is '%s'",
                 pp->body_name, body->name);
    else if (pp->post_count && nout != 1)
      st = cfail(&c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: post-processing needs exactly one output");
    if (st == AXLE_HAL_OK && pp->body_rank) {
      int same = pp->body_rank == body->rank;
      for (uint32_t d = 0; same && d < body->rank; ++d) same = pp->body_shape[d] == body->shape[d];
      if (!same) st = cfail(&c, AXLE_HAL_INVALID_MODEL, DEV ": prepost: input_to_body's shape differs from '%s'", body->name);
    }
    if (st == AXLE_HAL_OK) {
      int64_t shape[3] = {pp->input_h, pp->input_w, pp->input_c};
      st = add_io(&c, 0, pp->input_name, DRPAI_DT_U8, 3, shape, pp->input_h * pp->input_w * pp->input_c);
      out->inputs[0] = -1;
    }
  } else {
    for (uint32_t i = 0; i < nin && st == AXLE_HAL_OK; ++i) {
      const axle_hal_tensor_t* t = &g->tensors[ins[i]];
      st = add_io(&c, 0, t->name, DRPAI_DT_F32, t->rank, t->shape, (uint32_t)t->size_bytes);
      out->inputs[i] = ins[i];
    }
  }
  for (uint32_t i = 0; i < nout && st == AXLE_HAL_OK; ++i) {
    const axle_hal_tensor_t* t = &g->tensors[outs[i]];
    st = add_io(&c, 1, t->name, DRPAI_DT_F32, t->rank, t->shape, (uint32_t)t->size_bytes);
    out_slot[outs[i]] = (int32_t)c.io[c.nio - 1].at.offset;
    out->outputs[i] = outs[i];
  }
  /* Inputs enter the int8 domain, the nodes run, outputs leave it. */
  if (st == AXLE_HAL_OK && pp) st = compile_pre(&c, pp, ins[0]);
  for (uint32_t i = 0; i < nin && st == AXLE_HAL_OK && !pp; ++i) st = emit_quantize(&c, c.io[i].at, ins[i], c.io[i].name);
  for (uint32_t i = 0; i < node_count && st == AXLE_HAL_OK; ++i) {
    const axle_hal_node_t* n = &g->nodes[nodes[i]];
    const axle_hal_node_t* act = i + 1 < node_count && fusable(g, n, &g->nodes[nodes[i + 1]], out_slot)
                                     ? &g->nodes[nodes[++i]]
                                     : NULL;
    st = compile_node(&c, n, act, out_slot);
  }
  for (uint32_t i = 0; i < nout && st == AXLE_HAL_OK; ++i) {
    const value_t* v = &c.values[outs[i]];
    ref_t dst = {DRPAI_REGION_DATA_OUT, (uint32_t)out_slot[outs[i]]};
    if (v->f32) continue; /* Softmax already wrote it there */
    if (pp && pp->post_count) {
      const axle_hal_tensor_t* t = &g->tensors[outs[i]];
      ref_t tmp;
      if (alloc_in(&c, DRPAI_REGION_WORK, (uint64_t)v->bytes * 4, &tmp) != 0) st = OOM(&c);
      if (st == AXLE_HAL_OK) st = emit_dequantize(&c, v, tmp);
      uint32_t last = (uint32_t)t->shape[t->rank - 1];
      if (st == AXLE_HAL_OK) st = emit_softmax(&c, tmp, dst, v->bytes / last, last, 1);
    } else {
      st = emit_dequantize(&c, v, dst);
    }
  }
  if (st == AXLE_HAL_OK) st = build_files(&c, org_base, &out->program);
  if (st == AXLE_HAL_OK) {
    out->input_count = pp ? 1 : nin;
    out->output_count = nout;
  } else {
    drpai_program_free(&out->program);
  }
  free(c.values);
  free(out_slot);
  free(in_sub);
  free(made);
  free(c.d);
  free(c.l);
  free(c.s);
  free(c.w);
  return st;
}

int32_t drpai_compile_pre(const drpai_prepost_t* pp, uint32_t org_base, drpai_compiled_t* out, char* err,
                          size_t es) {
  memset(out, 0, sizeof(*out));
  cc_t c;
  memset(&c, 0, sizeof(c));
  c.err = err;
  c.es = es;
  err[0] = '\0';
  int64_t in_shape[3] = {pp->input_h, pp->input_w, pp->input_c};
  int32_t st = add_io(&c, 0, pp->input_name, DRPAI_DT_U8, 3, in_shape, pp->input_h * pp->input_w * pp->input_c);
  pre_out_t r;
  if (st == AXLE_HAL_OK) st = pre_chain(&c, pp, &r);
  if (st == AXLE_HAL_OK) {
    int64_t shape[4] = {1, r.chw ? r.ch : r.h, r.chw ? r.h : r.w, r.chw ? r.w : r.ch};
    uint32_t bytes = r.w * r.h * r.ch * 4;
    st = add_io(&c, 1, "preprocessed", DRPAI_DT_F32, 4, shape, bytes);
    dstage_t* d = st == AXLE_HAL_OK ? add_dstage(&c, DRPAI_LIB_MEMCOPY, r.at, c.io[1].at) : NULL;
    if (st == AXLE_HAL_OK && !d) st = OOM(&c);
    if (d) {
      d->icap = d->ocap = bytes;
      drpai_put32(ARG(d, DRPAI_P_COPY_BYTES), bytes);
    }
  }
  if (st == AXLE_HAL_OK) st = build_files(&c, org_base, &out->program);
  if (st == AXLE_HAL_OK) {
    out->input_count = out->output_count = 1;
    out->inputs[0] = out->outputs[0] = -1;
  } else {
    drpai_program_free(&out->program);
  }
  free(c.d);
  free(c.l);
  free(c.s);
  free(c.w);
  return st;
}
