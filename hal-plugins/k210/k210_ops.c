#include "k210_ops.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "k210_arith.h"
#include "k210_layer.h"
#include "k210_ram.h"

/* KPU limits from the layer-word fields: 10-bit channel counts, 9-bit
 * heights, and lines of at most 15 rows of 64 bytes (row_switch_addr has 4
 * bits); weights come in at most 64 loads (load_time) of at most 128 KiB
 * (para_size). */
#define MAX_CHANNELS 1024u
#define MAX_HEIGHT 512u
#define MAX_WIDTH 960u
#define MAX_LOADS 64u
#define MAX_LOAD_BYTES 131071u

typedef struct chk_t {
  const axle_hal_graph_t* g;
  const axle_hal_node_t* n;
  char* reason;
  size_t size;
} chk_t;

static int32_t decline(const chk_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int32_t decline(const chk_t* c, const char* fmt, ...) {
  int at = snprintf(c->reason, c->size, "k210: node '%s' (%s): ", c->n->name, c->n->op_type);
  if (at >= 0 && (size_t)at < c->size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason + at, c->size - (size_t)at, fmt, ap);
    va_end(ap);
  }
  return AXLE_HAL_UNSUPPORTED;
}

static const axle_hal_tensor_t* tensor_at(const axle_hal_graph_t* g, const int32_t* list, uint32_t count,
                                          uint32_t i) {
  if (i >= count || list[i] < 0 || (uint32_t)list[i] >= g->tensor_count) return NULL;
  return &g->tensors[list[i]];
}

static int is_const(const axle_hal_tensor_t* t) {
  return t && (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data && t->dtype == AXLE_HAL_DTYPE_F32;
}

static int64_t attr_int(const axle_hal_node_t* n, const char* name, int64_t dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_INT ? a->i : dflt;
}

static double attr_float(const axle_hal_node_t* n, const char* name, double dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_FLOAT ? a->f : dflt;
}

static const char* attr_str(const axle_hal_node_t* n, const char* name) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_STRING && a->s ? a->s : "NOTSET";
}

/* Up to max ints of a list attribute into out (untouched when absent);
 * returns the count, -1 when absent, -2 when longer than max. */
static int attr_ints(const axle_hal_node_t* n, const char* name, int64_t* out, uint32_t max) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  if (!a || a->type != AXLE_HAL_ATTR_INTS) return -1;
  if (a->count > max) return -2;
  for (uint32_t i = 0; i < a->count; ++i) out[i] = a->ints[i];
  return (int)a->count;
}

void k210_tensor_range(const axle_hal_tensor_t* t, double* lo, double* hi) {
  double s = t->quant.scales[0], z = t->quant.zero_points[0];
  *lo = s * (0 - z);
  *hi = s * (255 - z);
}

static int32_t check_quant(const chk_t* c, const axle_hal_tensor_t* t) {
  const axle_hal_quant_t* q = &t->quant;
  if (q->count != 1 || !q->scales || !q->zero_points)
    return decline(c, "no calibration data (tensor '%s' has no per-tensor quantization; create the "
                      "session with calibration inputs)",
                   t->name);
  if (!isfinite(q->scales[0]) || !(q->scales[0] > 0) || q->zero_points[0] < 0 || q->zero_points[0] > 255)
    return decline(c, "tensor '%s' has scale %g and zero point %d; the KPU needs u8 (scale > 0, zero "
                      "point 0..255)",
                   t->name, (double)q->scales[0], (int)q->zero_points[0]);
  return AXLE_HAL_OK;
}

/* A feature map of C x H x W in the KPU's row layout fits its RAM. */
static int32_t check_map(const chk_t* c, const char* what, int64_t ch, int64_t h, int64_t w) {
  if (ch > MAX_CHANNELS) return decline(c, "%s has %lld channels; the KPU takes at most %u", what, (long long)ch, MAX_CHANNELS);
  if (h > MAX_HEIGHT || w > MAX_WIDTH)
    return decline(c, "%s is %lldx%lld; the KPU takes at most %u lines of %u pixels", what, (long long)h,
                   (long long)w, MAX_HEIGHT, MAX_WIDTH);
  k210_fmap_t m = k210_fmap_for_shape(0, (uint32_t)w, (uint32_t)h, (uint32_t)ch);
  if (k210_fmap_rows(&m) > K210_RAM_ROWS)
    return decline(c, "%s (%lldx%lldx%lld) needs %u KiB of KPU RAM; the KPU has 2048 KiB", what,
                   (long long)ch, (long long)h, (long long)w, k210_fmap_rows(&m) / 16);
  return AXLE_HAL_OK;
}

/* Image input and output: float32, calibrated, NCHW with batch 1, and the
 * output the layer's pool or stride gives. */
static int32_t check_images(const chk_t* c, k210_op_t* op, uint32_t out_stride, int64_t out_ch) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_node_t* n = c->n;
  op->x = tensor_at(g, n->inputs, n->input_count, 0);
  op->y = tensor_at(g, n->outputs, n->output_count, 0);
  if (!op->x || !op->y) return decline(c, "input or output is missing");
  op->x_index = n->inputs[0];
  op->y_index = n->outputs[0];
  for (uint32_t i = 1; i < n->output_count; ++i)
    if (n->outputs[i] >= 0) return decline(c, "only the first output is supported");
  const axle_hal_tensor_t* t[2] = {op->x, op->y};
  for (int i = 0; i < 2; ++i) {
    if (t[i]->dtype != AXLE_HAL_DTYPE_F32)
      return decline(c, "tensor '%s' has dtype %d; KPU layers take calibrated float32 tensors", t[i]->name,
                     (int)t[i]->dtype);
    int32_t st = check_quant(c, t[i]);
    if (st != AXLE_HAL_OK) return st;
  }
  for (int i = 0; i < 2; ++i)
    if (t[i]->rank != 4 || t[i]->shape[0] != 1 || t[i]->shape[1] < 1 || t[i]->shape[2] < 1 || t[i]->shape[3] < 1)
      return decline(c, "tensor '%s' is not an NCHW image of batch 1; the KPU runs one image at a time",
                     t[i]->name);
  const int64_t* xs = op->x->shape;
  const int64_t* ys = op->y->shape;
  if (ys[1] != out_ch || ys[2] != xs[2] / out_stride || ys[3] != xs[3] / out_stride)
    return decline(c, "output '%s' is [1,%lld,%lld,%lld]; the KPU produces [1,%lld,%lld,%lld] for this "
                      "input",
                   op->y->name, (long long)ys[1], (long long)ys[2], (long long)ys[3], (long long)out_ch,
                   (long long)(xs[2] / out_stride), (long long)(xs[3] / out_stride));
  int32_t st = check_map(c, "input", xs[1], xs[2], xs[3]);
  return st != AXLE_HAL_OK ? st : check_map(c, "output", ys[1], ys[2], ys[3]);
}

/* Pads in effect: explicit, or what auto_pad SAME_* gives. */
static int32_t conv_pads(const chk_t* c, int64_t k, int64_t s, int64_t in, int64_t pads[4]) {
  const char* ap = attr_str(c->n, "auto_pad");
  if (strcmp(ap, "NOTSET") == 0) {
    int got = attr_ints(c->n, "pads", pads, 4);
    if (got >= 0 && got != 4) return decline(c, "pads must list 4 values");
    return AXLE_HAL_OK;
  }
  if (strcmp(ap, "VALID") == 0) return AXLE_HAL_OK;
  if (strcmp(ap, "SAME_UPPER") != 0 && strcmp(ap, "SAME_LOWER") != 0)
    return decline(c, "auto_pad '%s' is not supported", ap);
  int64_t out = (in + s - 1) / s, total = (out - 1) * s + k - in;
  if (total < 0) total = 0;
  int64_t small = total / 2, big = total - small;
  int upper = strcmp(ap, "SAME_UPPER") == 0;
  pads[0] = pads[1] = upper ? small : big;
  pads[2] = pads[3] = upper ? big : small;
  return AXLE_HAL_OK;
}

static int32_t parse_conv(const chk_t* c, k210_op_t* op) {
  const axle_hal_node_t* n = c->n;
  op->role = K210_ROLE_CONV;
  op->w = tensor_at(c->g, n->inputs, n->input_count, 1);
  op->b = tensor_at(c->g, n->inputs, n->input_count, 2);
  const axle_hal_tensor_t* x = tensor_at(c->g, n->inputs, n->input_count, 0);
  if (!x || !is_const(op->w) || op->w->rank != 4 || (op->b && (!is_const(op->b) || op->b->rank != 1)))
    return decline(c, "weights (and bias) must be float32 constants");
  const int64_t* ws = op->w->shape;
  int64_t ch = x->rank == 4 ? x->shape[1] : 0, group = attr_int(n, "group", 1);
  if (ws[2] != ws[3] || (ws[2] != 1 && ws[2] != 3))
    return decline(c, "%lldx%lld kernels are not supported by the KPU (1x1 and 3x3 only)", (long long)ws[2],
                   (long long)ws[3]);
  op->ksize = (uint32_t)ws[2];
  op->depthwise = group != 1;
  if (group != 1 && !(group == ch && ws[0] == ch && ws[1] == 1))
    return decline(c, "group %lld: the KPU runs normal (group 1) or depthwise (group = channels, one "
                      "filter each) convolutions",
                   (long long)group);
  if (op->b && op->b->shape[0] != ws[0]) return decline(c, "bias has %lld values for %lld filters", (long long)op->b->shape[0], (long long)ws[0]);
  int64_t dil[2] = {1, 1}, str[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  if (attr_ints(n, "dilations", dil, 2) == -2 || attr_ints(n, "strides", str, 2) == -2 || dil[0] != 1 || dil[1] != 1)
    return decline(c, "dilated convolutions are not supported by the KPU");
  if (str[0] != str[1] || (str[0] != 1 && str[0] != 2 && str[0] != 4))
    return decline(c, "strides [%lld,%lld]: the KPU runs stride 1, and 2 or 4 through its left-top pick "
                      "pools",
                   (long long)str[0], (long long)str[1]);
  op->stride = (uint32_t)str[0];
  int32_t st = conv_pads(c, ws[2], str[0], x->rank == 4 ? x->shape[2] : 1, pads);
  if (st != AXLE_HAL_OK) return st;
  int64_t want = op->ksize == 3 ? 1 : 0;
  for (int i = 0; i < 4; ++i)
    if (pads[i] != want)
      return decline(c, "pads [%lld,%lld,%lld,%lld]: a %ux%u kernel on the KPU is padded by %lld on every side",
                     (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3],
                     op->ksize, op->ksize, (long long)want);
  if (op->stride > 1 && x->rank == 4 && (x->shape[2] % op->stride || x->shape[3] % op->stride))
    return decline(c, "stride %u on a %lldx%lld input: the pick pool is exact only when the size divides by "
                      "the stride",
                   op->stride, (long long)x->shape[2], (long long)x->shape[3]);
  st = check_images(c, op, op->stride, ws[0]);
  if (st != AXLE_HAL_OK) return st;
  if (!op->depthwise && ws[1] != ch)
    return decline(c, "weights expect %lld input channels, the input has %lld", (long long)ws[1], (long long)ch);
  uint64_t per_oc = (uint64_t)(op->depthwise ? 1 : ch) * op->ksize * op->ksize;
  uint64_t per_load = MAX_LOAD_BYTES / per_oc < (uint64_t)ws[0] ? MAX_LOAD_BYTES / per_oc : (uint64_t)ws[0];
  if (((uint64_t)ws[0] + per_load - 1) / per_load > MAX_LOADS)
    return decline(c, "%llu bytes of weights exceed what one KPU layer loads (%u loads of up to %u bytes)",
                   (unsigned long long)(per_oc * (uint64_t)ws[0]), MAX_LOADS, MAX_LOAD_BYTES);
  return AXLE_HAL_OK;
}

static int32_t parse_bn(const chk_t* c, k210_op_t* op) {
  const axle_hal_node_t* n = c->n;
  op->role = K210_ROLE_BN;
  const axle_hal_tensor_t** p[4] = {&op->bn_scale, &op->bn_bias, &op->bn_mean, &op->bn_var};
  for (uint32_t i = 0; i < 4; ++i) {
    *p[i] = tensor_at(c->g, n->inputs, n->input_count, 1 + i);
    if (!is_const(*p[i]) || (*p[i])->rank != 1) return decline(c, "scale, bias, mean and variance must be float32 constants");
  }
  if (attr_int(n, "training_mode", 0) != 0) return decline(c, "training mode is not supported");
  op->epsilon = attr_float(n, "epsilon", 1e-5);
  const axle_hal_tensor_t* x = tensor_at(c->g, n->inputs, n->input_count, 0);
  int64_t ch = x && x->rank == 4 ? x->shape[1] : 0;
  for (int i = 0; i < 4; ++i)
    if ((*p[i])->shape[0] != ch) return decline(c, "statistics do not match the %lld channels", (long long)ch);
  return check_images(c, op, 1, ch);
}

static int32_t parse_act(const chk_t* c, k210_op_t* op) {
  const axle_hal_node_t* n = c->n;
  const char* t = n->op_type;
  op->role = K210_ROLE_ACT;
  k210_act_fn_t* f = &op->act;
  if (strcmp(t, "Relu") == 0) {
    f->kind = K210_ACT_RELU;
  } else if (strcmp(t, "Clip") == 0) {
    f->kind = K210_ACT_CLIP;
    f->p0 = attr_float(n, "min", -FLT_MAX);
    f->p1 = attr_float(n, "max", FLT_MAX);
    for (uint32_t i = 1; i < 3; ++i) {
      const axle_hal_tensor_t* b = tensor_at(c->g, n->inputs, n->input_count, i);
      if (!b) continue;
      if (!is_const(b) || b->size_bytes != sizeof(float)) return decline(c, "Clip bounds must be float32 scalar constants");
      float v;
      memcpy(&v, b->data, sizeof(v));
      *(i == 1 ? &f->p0 : &f->p1) = v;
    }
    if (!(f->p0 <= f->p1)) return decline(c, "min %g is above max %g", f->p0, f->p1);
  } else if (strcmp(t, "LeakyRelu") == 0) {
    f->kind = K210_ACT_LEAKY_RELU;
    f->p0 = attr_float(n, "alpha", 0.01);
  } else if (strcmp(t, "HardSigmoid") == 0) {
    f->kind = K210_ACT_HARD_SIGMOID;
    f->p0 = attr_float(n, "alpha", 0.2);
    f->p1 = attr_float(n, "beta", 0.5);
  } else if (strcmp(t, "Elu") == 0) {
    f->kind = K210_ACT_ELU;
    f->p0 = attr_float(n, "alpha", 1.0);
  } else if (strcmp(t, "Selu") == 0) {
    f->kind = K210_ACT_SELU;
    f->p0 = attr_float(n, "alpha", 1.67326319217681884765625);
    f->p1 = attr_float(n, "gamma", 1.05070102214813232421875);
    if (!(f->p1 > 0)) return decline(c, "gamma %g makes Selu decreasing; the KPU table fits non-decreasing functions", f->p1);
  } else {
    static const struct {
      const char* name;
      k210_act_kind_t kind;
    } smooth[] = {{"Sigmoid", K210_ACT_SIGMOID}, {"Tanh", K210_ACT_TANH}, {"Softplus", K210_ACT_SOFTPLUS},
                  {"Softsign", K210_ACT_SOFTSIGN}};
    for (size_t i = 0; i < sizeof(smooth) / sizeof(smooth[0]); ++i)
      if (strcmp(t, smooth[i].name) == 0) f->kind = smooth[i].kind;
  }
  if ((f->kind == K210_ACT_LEAKY_RELU || f->kind == K210_ACT_HARD_SIGMOID || f->kind == K210_ACT_ELU ||
       f->kind == K210_ACT_SELU) &&
      !(f->p0 >= 0))
    return decline(c, "alpha %g makes it non-monotonic; the KPU table fits non-decreasing functions", f->p0);
  const axle_hal_tensor_t* x = tensor_at(c->g, n->inputs, n->input_count, 0);
  return check_images(c, op, 1, x && x->rank == 4 ? x->shape[1] : 0);
}

static int32_t parse_pool(const chk_t* c, k210_op_t* op) {
  const axle_hal_node_t* n = c->n;
  int max = strcmp(n->op_type, "MaxPool") == 0;
  op->role = K210_ROLE_POOL;
  int64_t k[2] = {0, 0}, s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  if (attr_ints(n, "kernel_shape", k, 2) != 2 || attr_ints(n, "strides", s, 2) == -2 ||
      attr_ints(n, "pads", p, 4) == -2 || attr_ints(n, "dilations", d, 2) == -2)
    return decline(c, "2-D kernel_shape, strides, pads and dilations expected");
  const char* ap = attr_str(n, "auto_pad");
  if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
    return decline(c, "auto_pad '%s' is not supported", ap);
  if (d[0] != 1 || d[1] != 1) return decline(c, "dilated pooling is not supported by the KPU");
  int s1 = k[0] == 2 && k[1] == 2 && s[0] == 1 && s[1] == 1 && p[0] == 0 && p[1] == 0 && p[2] == 1 && p[3] == 1;
  int plain = k[0] == k[1] && s[0] == k[0] && s[1] == k[1] && (k[0] == 2 || k[0] == 4) && !p[0] && !p[1] && !p[2] && !p[3];
  if (!s1 && !plain)
    return decline(c, "kernel %lldx%lld, strides [%lld,%lld], pads [%lld,%lld,%lld,%lld] is not a KPU pool "
                      "(2x2 or 4x4 with stride = kernel and no padding, or 2x2 stride 1 padded by 1 at the end)",
                   (long long)k[0], (long long)k[1], (long long)s[0], (long long)s[1], (long long)p[0],
                   (long long)p[1], (long long)p[2], (long long)p[3]);
  if (!max && s1 && attr_int(n, "count_include_pad", 0))
    return decline(c, "count_include_pad = 1: the KPU's stride-1 mean pool averages the taps inside the image");
  const axle_hal_tensor_t* x = tensor_at(c->g, n->inputs, n->input_count, 0);
  if (attr_int(n, "ceil_mode", 0) && x && x->rank == 4 && (x->shape[2] % s[0] || x->shape[3] % s[1]))
    return decline(c, "ceil_mode on a %lldx%lld input keeps a partial window the KPU drops", (long long)x->shape[2],
                   (long long)x->shape[3]);
  if (s1)
    op->pool_type = max ? K210_POOL_MAX_2_S1 : K210_POOL_MEAN_2_S1;
  else if (k[0] == 2)
    op->pool_type = max ? K210_POOL_MAX_2_S2 : K210_POOL_MEAN_2_S2;
  else
    op->pool_type = max ? K210_POOL_MAX_4_S4 : K210_POOL_MEAN_4_S4;
  return check_images(c, op, k210_pool_stride(op->pool_type), x && x->rank == 4 ? x->shape[1] : 0);
}

int32_t k210_op_parse(const axle_hal_graph_t* g, uint32_t node, k210_op_t* op, char* reason, size_t reason_size) {
  char dummy[1];
  if (!reason || reason_size == 0) {
    reason = dummy;
    reason_size = sizeof(dummy);
  }
  reason[0] = '\0';
  memset(op, 0, sizeof(*op));
  if (!g || node >= g->node_count) {
    snprintf(reason, reason_size, "k210: node index %u is out of range", node);
    return AXLE_HAL_INVALID_ARGUMENT;
  }
  chk_t c = {g, &g->nodes[node], reason, reason_size};
  const char* t = c.n->op_type ? c.n->op_type : "";
  if (c.n->domain && c.n->domain[0]) return decline(&c, "domain '%s' is not supported", c.n->domain);
  if (strcmp(t, "Conv") == 0) return parse_conv(&c, op);
  if (strcmp(t, "BatchNormalization") == 0) return parse_bn(&c, op);
  if (strcmp(t, "MaxPool") == 0 || strcmp(t, "AveragePool") == 0) return parse_pool(&c, op);
  static const char* const acts[] = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                                     "Softplus", "Elu", "Selu", "Softsign"};
  for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); ++i)
    if (strcmp(t, acts[i]) == 0) return parse_act(&c, op);
  return decline(&c, "not supported by the KPU (it runs Conv, BatchNormalization, monotonic activations and "
                     "2x2/4x4 pooling on calibrated float32 images)");
}

int32_t k210_node_check(const axle_hal_graph_t* g, uint32_t node, char* reason, size_t reason_size) {
  k210_op_t op;
  int32_t st = k210_op_parse(g, node, &op, reason, reason_size);
  if (st != AXLE_HAL_OK || op.role != K210_ROLE_ACT || !reason || reason_size == 0) return st;
  /* Not a refusal: the note says how well 16 segments carry the function. */
  double lo, hi;
  k210_tensor_range(op.x, &lo, &hi);
  k210_act_table_t table;
  double err = k210_fit_activation(&op.act, (hi - lo) / (double)(1 << 24), lo, hi, op.y->quant.scales[0],
                                   op.y->quant.zero_points[0], &table);
  snprintf(reason, reason_size, "k210: node '%s' (%s): 16-segment fit, max error %.3f LSB over [%g, %g]",
           g->nodes[node].name, g->nodes[node].op_type, err, lo, hi);
  return AXLE_HAL_OK;
}
