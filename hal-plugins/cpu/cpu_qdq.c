/* Integer QDQ patterns: matching, prepare and run (see cpu_qdq.h). */
#include "cpu_qdq.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "axle_kernels_elementwise.h"
#include "axle_kernels_qu8.h"
#include "cpu_fuse.h"
#include "cpu_threadpool.h"

/* Channels x kernel volume the kernels' int32 sums are exact for
 * (axle_kernels_qu8.h). */
#define QDQ_MAX_K 65536

#define QDQ_ALIGN(n) (((n) + 63) & ~(size_t)63)

static int decline(char* err, size_t es, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int decline(char* err, size_t es, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, es, fmt, ap);
  va_end(ap);
  return 0;
}

/* Scale input of node n: constant float32 with `count` elements, each
 * finite and positive (anything else has no integer form). */
static int read_scales(const axle_hal_graph_t* g, const axle_hal_node_t* n, int64_t count,
                       const float** scale, char* err, size_t es) {
  const axle_hal_tensor_t* s = cpu_node_input(g, n, 1);
  if (!cpu_fuse_constant(s) || s->dtype != AXLE_HAL_DTYPE_F32)
    return decline(err, es, "node '%s': scale is not a constant float32", n->name);
  if (axle_hal_tensor_elements(s) != count || s->rank > 1)
    return decline(err, es, "node '%s': scale '%s' has %lld elements, expected %lld", n->name,
                   s->name, (long long)axle_hal_tensor_elements(s), (long long)count);
  const float* v = s->data;
  for (int64_t i = 0; i < count; ++i)
    if (!(v[i] > 0.0f) || !isfinite(v[i]))
      return decline(err, es, "node '%s': scale '%s'[%lld] = %g is not finite and positive",
                     n->name, s->name, (long long)i, (double)v[i]);
  *scale = v;
  return 1;
}

/* (scale, zero point) of Q/DQ node n, per tensor, its quantized side
 * uint8. */
static int read_u8_per_tensor(const axle_hal_graph_t* g, const axle_hal_node_t* n, float* scale,
                              int32_t* zp, char* err, size_t es) {
  const float* s = NULL;
  if (cpu_attr_int(n, "block_size", 0) != 0)
    return decline(err, es, "node '%s': blocked quantization", n->name);
  if (!read_scales(g, n, 1, &s, err, es)) return 0;
  const axle_hal_tensor_t* z = cpu_node_input(g, n, 2);
  if (z && (!cpu_fuse_constant(z) || z->dtype != AXLE_HAL_DTYPE_U8 ||
            axle_hal_tensor_elements(z) != 1))
    return decline(err, es, "node '%s': zero point '%s' is not a constant uint8 scalar",
                   n->name, z->name);
  *scale = s[0];
  *zp = z ? *(const uint8_t*)z->data : 0;
  return 1;
}

/* Whether the zero point of DQ node n (dtype, count elements) is absent or
 * all zero, as the integer kernels' symmetric weights need. */
static int zero_point_zero(const axle_hal_graph_t* g, const axle_hal_node_t* n, int32_t dtype,
                           int64_t count, char* err, size_t es) {
  const axle_hal_tensor_t* z = cpu_node_input(g, n, 2);
  if (!z) return 1;
  if (!cpu_fuse_constant(z) || z->dtype != dtype || axle_hal_tensor_elements(z) != count)
    return decline(err, es, "node '%s': zero point '%s' is not constant or does not match "
                   "the scale", n->name, z->name);
  const size_t bytes = (size_t)count * axle_hal_dtype_size(dtype);
  for (size_t i = 0; i < bytes; ++i)
    if (((const uint8_t*)z->data)[i])
      return decline(err, es, "node '%s': zero point '%s' is not zero", n->name, z->name);
  return 1;
}

/* Output clamp of an optional activation before QuantizeLinear: Q is
 * monotone, so clip(v, lo, hi) becomes [Q(lo), Q(hi)], computed by the
 * QuantizeLinear op's own kernel. */
static int act_bounds(const axle_hal_graph_t* g, const axle_hal_node_t* act, float y_scale,
                      int32_t y_zp, uint8_t* min, uint8_t* max, char* err, size_t es) {
  *min = 0;
  *max = 255;
  if (!act) return 1;
  cpu_fusion_t f;
  memset(&f, 0, sizeof f);
  if (!cpu_fuse_activation(g, act, &f) || f.act != CPU_ACT_CLAMP)
    return decline(err, es, "node '%s': not a clamp with constant bounds", act->name);
  axle_f32_quantize_u8_scalar(&f.min, y_scale, y_zp, min, 1);
  axle_f32_quantize_u8_scalar(&f.max, y_scale, y_zp, max, 1);
  return 1;
}

/* The QuantizeLinear end of a pattern: per tensor, uint8 output. */
static int read_output(const axle_hal_graph_t* g, const cpu_qdq_match_t* m, float* scale,
                       int32_t* zp, uint8_t* min, uint8_t* max, char* err, size_t es) {
  const axle_hal_tensor_t* y = cpu_node_output(g, m->q, 0);
  if (!y || y->dtype != AXLE_HAL_DTYPE_U8)
    return decline(err, es, "node '%s': output is not uint8", m->q->name);
  return read_u8_per_tensor(g, m->q, scale, zp, err, es) &&
         act_bounds(g, m->act, *scale, *zp, min, max, err, es);
}

/* ------------------------------------------------------------------------ */
/* QConv                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct qconv_spec_t {
  axle_f32_conv_params_t k;
  float x_scale, y_scale;
  int32_t x_zp, y_zp;
  const int8_t* w;
  const float* w_scale;
  int64_t w_scales; /* 1 (per tensor) or out_channels */
  const int32_t* bias;
  uint8_t min, max;
} qconv_spec_t;

/* The bias DQ: constant int32 [M], zero point 0, scale exactly
 * x_scale * w_scale[c] (else the int32 values mean something else). */
static int read_bias(const axle_hal_graph_t* g, const cpu_qdq_match_t* m, qconv_spec_t* s,
                     char* err, size_t es) {
  const axle_hal_node_t* dq = m->dq[2];
  const int64_t ch = s->k.out_channels;
  const axle_hal_tensor_t* b = cpu_node_input(g, dq, 0);
  if (!cpu_fuse_constant(b) || b->dtype != AXLE_HAL_DTYPE_I32 || b->rank != 1 ||
      b->shape[0] != ch)
    return decline(err, es, "node '%s': bias is not a constant int32 [%lld]", dq->name,
                   (long long)ch);
  const axle_hal_tensor_t* bs = cpu_node_input(g, dq, 1);
  const int64_t count = bs && axle_hal_tensor_elements(bs) == 1 ? 1 : ch;
  const float* scale;
  if (!read_scales(g, dq, count, &scale, err, es) ||
      !zero_point_zero(g, dq, AXLE_HAL_DTYPE_I32, count, err, es))
    return 0;
  for (int64_t c = 0; c < ch; ++c) {
    const float want = s->x_scale * s->w_scale[s->w_scales == 1 ? 0 : c];
    if (scale[count == 1 ? 0 : c] != want)
      return decline(err, es, "node '%s': bias scale %.9g is not x_scale * w_scale = %.9g",
                     dq->name, (double)scale[count == 1 ? 0 : c], (double)want);
  }
  s->bias = b->data;
  return 1;
}

/* Gemm(A [M, K], B [N, K], transB = 1, alpha = beta = 1) is a 1x1
 * convolution of M images of K channels (one pixel) with N filters. */
static int gemm_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                         axle_f32_conv_params_t* k, char* err, size_t es) {
  const axle_hal_tensor_t* a = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* b = cpu_node_input(g, n, 1);
  if (!a || !b || a->rank != 2 || b->rank != 2 || a->shape[1] != b->shape[1] ||
      cpu_attr_int(n, "transA", 0) != 0 || cpu_attr_int(n, "transB", 0) != 1 ||
      cpu_attr_float(n, "alpha", 1.0f) != 1.0f || cpu_attr_float(n, "beta", 1.0f) != 1.0f)
    return decline(err, es, "node '%s': not A [M, K] times B [N, K] transposed", n->name);
  memset(k, 0, sizeof *k);
  k->batch = a->shape[0];
  k->groups = 1;
  k->in_channels = a->shape[1];
  k->out_channels = b->shape[0];
  for (uint32_t d = 0; d < AXLE_KERNEL_MAX_SPATIAL; ++d)
    k->in[d] = k->out[d] = k->kernel[d] = k->stride[d] = k->dilation[d] = 1;
  return 1;
}

static int qconv_read(const axle_hal_graph_t* g, const cpu_qdq_match_t* m, qconv_spec_t* s,
                      char* err, size_t es) {
  memset(s, 0, sizeof *s);
  char reason[200] = "";
  const cpu_op_t* conv = cpu_op_find("Conv");
  if (cpu_fuse_is_op(m->op, "Gemm")) {
    if (!gemm_geometry(g, m->op, &s->k, err, es)) return 0;
  } else if (!conv || conv->check(g, m->op, reason, sizeof reason) != AXLE_HAL_OK ||
             cpu_conv_geometry(g, m->op, &s->k, reason, sizeof reason) != AXLE_HAL_OK) {
    return decline(err, es, "node '%s': %s", m->op->name, reason);
  }
  const axle_hal_tensor_t* xq = cpu_node_input(g, m->dq[0], 0);
  if (!xq || xq->dtype != AXLE_HAL_DTYPE_U8 || !cpu_fuse_same_dims(xq, cpu_node_input(g, m->op, 0)))
    return decline(err, es, "node '%s': input is not uint8", m->dq[0]->name);
  if (!read_u8_per_tensor(g, m->dq[0], &s->x_scale, &s->x_zp, err, es)) return 0;

  const axle_hal_node_t* dqw = m->dq[1];
  const axle_hal_tensor_t* w = cpu_node_input(g, dqw, 0);
  const int64_t ch = s->k.out_channels;
  if (!cpu_fuse_constant(w) || w->dtype != AXLE_HAL_DTYPE_I8 ||
      !cpu_fuse_same_dims(w, cpu_node_input(g, m->op, 1)))
    return decline(err, es, "node '%s': weights are not a constant int8 tensor", dqw->name);
  const axle_hal_tensor_t* ws = cpu_node_input(g, dqw, 1);
  s->w_scales = ws && axle_hal_tensor_elements(ws) == 1 ? 1 : ch;
  if (s->w_scales != 1) {
    int64_t axis = cpu_attr_int(dqw, "axis", 1);
    if (axis < 0) axis += w->rank;
    if (axis != 0) return decline(err, es, "node '%s': per-axis scale on axis %lld, not 0",
                                  dqw->name, (long long)axis);
  }
  if (cpu_attr_int(dqw, "block_size", 0) != 0)
    return decline(err, es, "node '%s': blocked quantization", dqw->name);
  if (!read_scales(g, dqw, s->w_scales, &s->w_scale, err, es) ||
      !zero_point_zero(g, dqw, AXLE_HAL_DTYPE_I8, s->w_scales, err, es))
    return 0;
  s->w = w->data;
  const int64_t k = axle_hal_tensor_elements(w) / (ch ? ch : 1);
  if (k > QDQ_MAX_K)
    return decline(err, es, "node '%s': %lld products per output exceed the int32 bound",
                   m->op->name, (long long)k);
  if (m->dq[2] && !read_bias(g, m, s, err, es)) return 0;
  const axle_hal_tensor_t* y = cpu_node_output(g, m->q, 0);
  if (!y || !cpu_fuse_same_dims(y, cpu_node_output(g, m->op, 0)))
    return decline(err, es, "node '%s': output shape differs from the convolution's",
                   m->q->name);
  return read_output(g, m, &s->y_scale, &s->y_zp, &s->min, &s->max, err, es);
}

typedef struct qconv_params_t {
  axle_qu8_conv_plan_t plan;
  axle_qu8_requant_t rq;
  const void* packed;
} qconv_params_t;

/* What a QConv's spec and plan put after a params block's head: its
 * requantisation scales and packed weights, each 64-byte aligned. */
static size_t qconv_tail_bytes(const qconv_spec_t* s, const axle_qu8_conv_plan_t* plan) {
  return QDQ_ALIGN((size_t)s->k.out_channels * sizeof(float)) +
         QDQ_ALIGN(axle_qu8_conv_packed_size(plan));
}

/* Fills p, its scales and packed weights at tail (64-byte aligned,
 * qconv_tail_bytes long). */
static void qconv_fill(const qconv_spec_t* s, const axle_qu8_conv_plan_t* plan, char* tail,
                       qconv_params_t* p) {
  const size_t ch = (size_t)s->k.out_channels;
  float* scale = (float*)(void*)tail;
  void* packed = tail + QDQ_ALIGN(ch * sizeof(float));
  for (size_t c = 0; c < ch; ++c) {
    /* float32, in this order: the contract an integer reference repeats. */
    const float xw = s->x_scale * s->w_scale[s->w_scales == 1 ? 0 : c];
    scale[c] = xw / s->y_scale;
  }
  axle_qu8_conv_pack(plan, s->w, s->bias, packed);
  p->plan = *plan;
  axle_qu8_requant_init(&p->rq, scale, ch, s->y_zp, s->min, s->max);
  p->packed = packed;
}

/* A params block's tail, 64-byte aligned (the block is malloc-aligned). */
static char* qdq_tail(char* block, size_t head) {
  return (char*)(((uintptr_t)(block + head) + 63) & ~(uintptr_t)63);
}

static int32_t qconv_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                             const cpu_qdq_match_t* m) {
  qconv_spec_t s;
  char err[256];
  if (!qconv_read(step->graph, m, &s, err, sizeof err))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, err);
  axle_qu8_conv_plan_t plan;
  axle_qu8_conv_plan(&s.k, s.x_zp, &plan);
  plan.split_channels = step->threads > 1 && cpu_feeds_depthwise(step->graph, step->out[0]);
  const size_t head = QDQ_ALIGN(sizeof(qconv_params_t));
  /* + 64: the block is malloc-aligned, the packed weights need 64. */
  char* block = cpu_step_params(host, step, head + qconv_tail_bytes(&s, &plan) + 64);
  if (!block) return AXLE_HAL_OUT_OF_MEMORY;
  qconv_params_t* p = (qconv_params_t*)(void*)block;
  qconv_fill(&s, &plan, qdq_tail(block, head), p);
  step->scratch_bytes = axle_qu8_conv_scratch_size(&plan, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void qconv_run(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  const qconv_params_t* p = step->params;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  axle_qu8_conv(&p->plan, in[0], p->packed, &p->rq, out[0], scratch, &par);
}

/* ------------------------------------------------------------------------ */
/* QConvPair                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct qpair_params_t {
  qconv_params_t pw, dw;
  axle_qu8_conv_pair_t pair; /* points into pw and dw */
} qpair_params_t;

/* Specs and plans of a pair's two QConvs; 0 (err set) when either does not
 * read as a QConv or the kernels do not pair them. */
static int qpair_read(const axle_hal_graph_t* g, const cpu_qdq_match_t* pw,
                      const cpu_qdq_match_t* dw, qconv_spec_t s[2], axle_qu8_conv_plan_t plan[2],
                      char* err, size_t es) {
  if (!qconv_read(g, pw, &s[0], err, es) || !qconv_read(g, dw, &s[1], err, es)) return 0;
  axle_qu8_conv_plan(&s[0].k, s[0].x_zp, &plan[0]);
  axle_qu8_conv_plan(&s[1].k, s[1].x_zp, &plan[1]);
  if (!axle_qu8_conv_pair_supports(&plan[0], &plan[1]))
    return decline(err, es, "nodes '%s' and '%s': not a pair the kernels take", pw->op->name,
                   dw->op->name);
  return 1;
}

static int32_t qpair_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                             const cpu_group_t* grp) {
  qconv_spec_t s[2];
  axle_qu8_conv_plan_t plan[2];
  char err[256];
  if (!qpair_read(step->graph, &grp->match, &grp->pair, s, plan, err, sizeof err))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, err);
  const size_t head = QDQ_ALIGN(sizeof(qpair_params_t)), first = qconv_tail_bytes(&s[0], &plan[0]);
  char* block = cpu_step_params(host, step, head + first + qconv_tail_bytes(&s[1], &plan[1]) + 64);
  if (!block) return AXLE_HAL_OUT_OF_MEMORY;
  qpair_params_t* p = (qpair_params_t*)(void*)block;
  char* tail = qdq_tail(block, head);
  qconv_fill(&s[0], &plan[0], tail, &p->pw);
  qconv_fill(&s[1], &plan[1], tail + first, &p->dw);
  p->pair = (axle_qu8_conv_pair_t){&p->pw.plan, p->pw.packed, &p->pw.rq,
                                   &p->dw.plan, p->dw.packed, &p->dw.rq};
  step->scratch_bytes =
      axle_qu8_conv_pair_scratch_size(&p->pair, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void qpair_run(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  const qpair_params_t* p = step->params;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  axle_qu8_conv_pair(&p->pair, in[0], out[0], scratch, &par);
}

/* ------------------------------------------------------------------------ */
/* QAdd                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct qadd_params_t {
  axle_qu8_add_params_t q;
  size_t n;
} qadd_params_t;

static int qadd_read(const axle_hal_graph_t* g, const cpu_qdq_match_t* m, qadd_params_t* p,
                     char* err, size_t es) {
  memset(p, 0, sizeof *p);
  const axle_hal_tensor_t* y = cpu_node_output(g, m->q, 0);
  const axle_hal_tensor_t* sum = cpu_node_output(g, m->op, 0);
  for (uint32_t i = 0; i < 2; ++i) {
    const axle_hal_tensor_t* x = cpu_node_input(g, m->dq[i], 0);
    if (!x || x->dtype != AXLE_HAL_DTYPE_U8 || !y || !sum || !cpu_fuse_same_dims(x, y) ||
        !cpu_fuse_same_dims(x, sum))
      return decline(err, es, "node '%s': operands are not uint8 of the output's shape",
                     m->op->name);
  }
  if (!read_u8_per_tensor(g, m->dq[0], &p->q.a_scale, &p->q.a_zero_point, err, es) ||
      !read_u8_per_tensor(g, m->dq[1], &p->q.b_scale, &p->q.b_zero_point, err, es) ||
      !read_output(g, m, &p->q.y_scale, &p->q.y_zero_point, &p->q.min, &p->q.max, err, es))
    return 0;
  p->n = (size_t)axle_hal_tensor_elements(y);
  return 1;
}

static int32_t qadd_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                            const cpu_qdq_match_t* m) {
  qadd_params_t spec;
  char err[256];
  if (!qadd_read(step->graph, m, &spec, err, sizeof err))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, err);
  qadd_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  *p = spec;
  return AXLE_HAL_OK;
}

static void qadd_run(const cpu_step_t* step, const void* const* in, void* const* out,
                     void* scratch) {
  (void)scratch;
  const qadd_params_t* p = step->params;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  axle_qu8_add(p->n, in[0], in[1], &p->q, out[0], &par);
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */
/* ------------------------------------------------------------------------ */

static const axle_hal_node_t* node_at(const cpu_fuse_ctx_t* c, uint32_t pos) {
  return &c->g->nodes[c->sg->nodes[pos]];
}

/* The plain DequantizeLinear node of this partition writing tensor t (its
 * position in *pos), or NULL. */
static const axle_hal_node_t* dq_writer(const cpu_fuse_ctx_t* c, const int32_t* role, int32_t t,
                                        uint32_t* pos) {
  if (t < 0 || c->writer_pos[t] < 0 || role[c->writer_pos[t]] != CPU_ROLE_PLAIN) return NULL;
  const axle_hal_node_t* n = node_at(c, (uint32_t)c->writer_pos[t]);
  if (!cpu_fuse_is_op(n, "DequantizeLinear") || n->input_count < 2 || n->output_count != 1)
    return NULL;
  *pos = (uint32_t)c->writer_pos[t];
  return n;
}

/* The position of the plain single-output node writing t, when the node at
 * `reader` is t's only reader; else -1. */
static int32_t sole_writer(const cpu_fuse_ctx_t* c, const int32_t* role, int32_t t,
                           uint32_t reader) {
  if (t < 0 || c->writer_pos[t] < 0) return -1;
  const int32_t p = c->writer_pos[t];
  if (role[p] != CPU_ROLE_PLAIN || node_at(c, (uint32_t)p)->output_count != 1 ||
      cpu_fuse_sole_reader(c, t, (uint32_t)p) != (int32_t)reader)
    return -1;
  return p;
}

/* A pattern ending in the QuantizeLinear at position qp, as a group. */
static int match_at(const cpu_fuse_ctx_t* c, const cpu_fuse_result_t* out, uint32_t qp,
                    cpu_group_t* grp) {
  const axle_hal_node_t* q = node_at(c, qp);
  if (!cpu_fuse_is_op(q, "QuantizeLinear") || q->input_count < 2 || q->output_count != 1 ||
      q->outputs[0] < 0)
    return 0;
  memset(grp, 0, sizeof *grp);
  cpu_qdq_match_t* m = &grp->match;
  m->q = q;
  int32_t p = sole_writer(c, out->role, q->inputs[0], qp);
  if (p < 0) return 0;
  const axle_hal_node_t* n = node_at(c, (uint32_t)p);
  int32_t act_pos = -1;
  if (cpu_fuse_is_op(n, "Relu") || cpu_fuse_is_op(n, "Clip")) {
    m->act = n;
    act_pos = p;
    p = sole_writer(c, out->role, n->inputs[0], (uint32_t)act_pos);
    if (p < 0) return 0;
    n = node_at(c, (uint32_t)p);
  }
  m->op = n;
  uint32_t pos[3];
  if ((cpu_fuse_is_op(n, "Conv") || cpu_fuse_is_op(n, "Gemm")) && n->input_count >= 2) {
    grp->kind = cpu_fuse_is_op(n, "Conv") ? CPU_GROUP_QCONV : CPU_GROUP_QGEMM;
    m->dq[0] = dq_writer(c, out->role, n->inputs[0], &pos[0]);
    m->dq[1] = dq_writer(c, out->role, n->inputs[1], &pos[1]);
    if (!m->dq[0] || !m->dq[1]) return 0;
    if (n->input_count > 2 && n->inputs[2] >= 0 &&
        !(m->dq[2] = dq_writer(c, out->role, n->inputs[2], &pos[2])))
      return 0;
  } else if (cpu_fuse_is_op(n, "Add") && n->input_count == 2) {
    grp->kind = CPU_GROUP_QADD;
    m->dq[0] = dq_writer(c, out->role, n->inputs[0], &pos[0]);
    m->dq[1] = dq_writer(c, out->role, n->inputs[1], &pos[1]);
    if (!m->dq[0] || !m->dq[1]) return 0;
  } else {
    return 0;
  }
  char err[256];
  qconv_spec_t conv;
  qadd_params_t add;
  if (grp->kind == CPU_GROUP_QADD ? !qadd_read(c->g, m, &add, err, sizeof err)
                                  : !qconv_read(c->g, m, &conv, err, sizeof err))
    return 0;
  /* The step reads the uint8 inputs of the DequantizeLinear nodes where the
   * QuantizeLinear ran. Internal ones are re-planned around that; one with a
   * core location must not be overwritten in between. */
  grp->input_count = grp->kind == CPU_GROUP_QADD ? 2 : 1;
  for (uint32_t i = 0; i < grp->input_count; ++i) {
    grp->inputs[i] = m->dq[i]->inputs[0];
    if (grp->inputs[i] >= 0 && !out->internal[grp->inputs[i]] &&
        !cpu_fuse_may_delay(c, out->internal, pos[i], qp))
      return 0;
  }
  grp->members[grp->count++] = (uint32_t)p;
  if (act_pos >= 0) grp->members[grp->count++] = (uint32_t)act_pos;
  grp->members[grp->count++] = qp;
  grp->position = qp;
  grp->output = q->outputs[0];
  return 1;
}

/* DequantizeLinear nodes read only by integer groups need not run: each is
 * listed (for tracing) in the first group reading it, before its
 * activation and QuantizeLinear. */
static void absorb_dequantize(const cpu_fuse_ctx_t* c, cpu_fuse_result_t* out) {
  for (uint32_t p = 0; p < c->sg->node_count; ++p) {
    const axle_hal_node_t* n = node_at(c, p);
    if (out->role[p] != CPU_ROLE_PLAIN || !cpu_fuse_is_op(n, "DequantizeLinear") ||
        n->output_count != 1 || n->outputs[0] < 0 ||
        (c->g->tensors[n->outputs[0]].flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT))
      continue;
    uint32_t reads = 0;
    int32_t first = -1;
    for (uint32_t i = 0; i < out->group_count; ++i) {
      if (out->groups[i].kind == CPU_GROUP_CONV) continue;
      for (uint32_t j = 0; j < 3; ++j) {
        if (out->groups[i].match.dq[j] != n) continue;
        ++reads;
        if (first < 0) first = (int32_t)i;
      }
    }
    if (!reads || reads != c->uses[n->outputs[0]]) continue;
    cpu_group_t* grp = &out->groups[first];
    if (grp->count >= CPU_FUSE_MAX_MEMBERS) continue;
    const uint32_t at = grp->count - (grp->match.act ? 2 : 1);
    memmove(grp->members + at + 1, grp->members + at, (grp->count - at) * sizeof *grp->members);
    grp->members[at] = p;
    ++grp->count;
    out->role[p] = CPU_ROLE_ABSORBED;
  }
}

/* The depthwise QConv group that reads QConv group e's output through a
 * DequantizeLinear it absorbed, the output's only reader, whose own output
 * nothing else reads (an integer step reading it would read e's output,
 * which the pair never writes), where the kernels pair the two and the
 * pair may run where the depthwise group runs; -1 else. */
static int32_t pair_partner(const cpu_fuse_ctx_t* c, const cpu_fuse_result_t* out,
                            const cpu_group_t* e) {
  if (e->kind != CPU_GROUP_QCONV) return -1;
  const int32_t at = cpu_fuse_sole_reader(c, e->output, e->position);
  if (at < 0 || out->role[at] != CPU_ROLE_ABSORBED) return -1;
  const axle_hal_node_t* dq = node_at(c, (uint32_t)at);
  if (dq->output_count != 1 || dq->outputs[0] < 0 || c->uses[dq->outputs[0]] != 1) return -1;
  for (uint32_t j = 0; j < out->group_count; ++j) {
    const cpu_group_t* d = &out->groups[j];
    if (d->kind != CPU_GROUP_QCONV || d->match.dq[0] != dq) continue;
    int absorbed = 0;
    for (uint32_t m = 0; m < d->count; ++m) absorbed |= d->members[m] == (uint32_t)at;
    qconv_spec_t s[2];
    axle_qu8_conv_plan_t plan[2];
    char err[256];
    const int32_t x = e->inputs[0];
    const uint32_t from = (uint32_t)c->position[e->match.dq[0] - c->g->nodes];
    if (!absorbed || e->count + d->count > CPU_FUSE_MAX_MEMBERS ||
        (x >= 0 && !out->internal[x] && !cpu_fuse_may_delay(c, out->internal, from, d->position)) ||
        !qpair_read(c->g, &e->match, &d->match, s, plan, err, sizeof err) ||
        !axle_qu8_conv_pair_pays(&plan[0], &plan[1]))
      return -1;
    return (int32_t)j;
  }
  return -1;
}

/* Joins each expansion group and its depthwise partner (pair_partner) into
 * one CPU_GROUP_QPAIR group, in the depthwise group's place. */
static void pair_plan(const cpu_fuse_ctx_t* c, cpu_fuse_result_t* out) {
  for (uint32_t i = 0; i < out->group_count; ++i) {
    const int32_t j = pair_partner(c, out, &out->groups[i]);
    if (j < 0) continue;
    const cpu_group_t* e = &out->groups[i];
    const cpu_group_t* d = &out->groups[j];
    cpu_group_t p = *d;
    p.kind = CPU_GROUP_QPAIR;
    p.match = e->match;
    p.pair = d->match;
    p.count = 0;
    for (uint32_t m = 0; m < e->count; ++m) p.members[p.count++] = e->members[m];
    for (uint32_t m = 0; m < d->count; ++m) p.members[p.count++] = d->members[m];
    p.inputs[0] = e->inputs[0];
    p.input_count = 1;
    if (!cpu_fuse_output_safe(c, out->internal, &p)) continue;
    for (uint32_t m = 0; m < p.count; ++m) out->role[p.members[m]] = CPU_ROLE_ABSORBED;
    out->groups[j] = p;
    /* Drop group i; the groups after it move down one. */
    memmove(out->groups + i, out->groups + i + 1, (out->group_count - i - 1) * sizeof *out->groups);
    --out->group_count;
    for (uint32_t k = 0; k < out->group_count; ++k) out->role[out->groups[k].position] = (int32_t)k;
    --i;
  }
}

void cpu_qdq_plan(const cpu_fuse_ctx_t* c, cpu_fuse_result_t* out) {
  for (uint32_t p = 0; p < c->sg->node_count; ++p) {
    cpu_group_t grp;
    if (out->role[p] != CPU_ROLE_PLAIN || !match_at(c, out, p, &grp) ||
        !cpu_fuse_output_safe(c, out->internal, &grp))
      continue;
    for (uint32_t m = 0; m + 1 < grp.count; ++m) out->role[grp.members[m]] = CPU_ROLE_ABSORBED;
    out->role[p] = (int32_t)out->group_count;
    out->groups[out->group_count++] = grp;
  }
  absorb_dequantize(c, out);
  pair_plan(c, out);
}

static const cpu_op_t k_qconv_op = {"QConv[u8]", NULL, NULL, qconv_run};
static const cpu_op_t k_qgemm_op = {"QGemm[u8]", NULL, NULL, qconv_run};
static const cpu_op_t k_qadd_op = {"QAdd[u8]", NULL, NULL, qadd_run};
static const cpu_op_t k_qpair_op = {"QConvPair[u8]", NULL, NULL, qpair_run};

const cpu_op_t* cpu_qdq_op(int32_t kind) {
  switch (kind) {
    case CPU_GROUP_QCONV: return &k_qconv_op;
    case CPU_GROUP_QGEMM: return &k_qgemm_op;
    case CPU_GROUP_QADD: return &k_qadd_op;
    case CPU_GROUP_QPAIR: return &k_qpair_op;
    default: return NULL;
  }
}

int32_t cpu_qdq_prepare(const axle_hal_host_t* host, cpu_step_t* step, const cpu_group_t* grp) {
  return grp->kind == CPU_GROUP_QADD    ? qadd_prepare(host, step, &grp->match)
         : grp->kind == CPU_GROUP_QPAIR ? qpair_prepare(host, step, grp)
                                        : qconv_prepare(host, step, &grp->match);
}
