/*
 * Neural-network op family: Conv, Gemm, MatMul, BatchNormalization, MaxPool,
 * AveragePool, GlobalAveragePool, GlobalMaxPool, Softmax, LogSoftmax (fp32).
 *
 * prepare() turns attributes and the (already inferred) shapes into a plain
 * kernel parameter block, so run() is a single kernel call with pointer
 * arithmetic at most. check() declines anything prepare() could not honour,
 * so placement falls back cleanly instead of failing at compile time.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"
#include "cpu_fuse.h"
#include "cpu_hugepage.h"
#include "cpu_op.h"
#include "cpu_threadpool.h"

#define NN_MAX_SPATIAL AXLE_KERNEL_MAX_SPATIAL
#define NN_MAX_BATCH_DIMS (AXLE_HAL_MAX_RANK - 2)

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */
/* ------------------------------------------------------------------------ */

/* Sets the host message naming node and op and returns code. */
static int32_t nn_fail(const axle_hal_host_t* host, const cpu_step_t* step, int32_t code,
                       const char* fmt, ...) __attribute__((format(printf, 4, 5)));
static int32_t nn_fail(const axle_hal_host_t* host, const cpu_step_t* step, int32_t code,
                       const char* fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!host || !host->status_make) return code;
  return host->status_make(code, "cpu: node '%s' (%s): %s", step->node->name,
                           step->node->op_type, msg);
}

static void* nn_params_alloc(cpu_step_t* step, size_t size) {
  step->params = calloc(1, size);
  return step->params;
}

void* cpu_params_alloc_packed(cpu_step_t* step, size_t head, size_t floats, float** tail) {
  const size_t at = (head + 63) / 64 * 64, size = at + floats * sizeof(float);
  void* p = NULL;
  if (posix_memalign(&p, cpu_huge_align(size, 64), size) != 0) return NULL;
  cpu_huge_advise(p, size);
  memset(p, 0, at);
  step->params = p;
  *tail = (float*)((char*)p + at);
  return p;
}

static int nn_constant(const axle_hal_tensor_t* t) {
  return t && (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data;
}

/* The kernels' parallelism for this step (the threads compile option). */
static axle_parallel_t nn_parallel(const cpu_step_t* step) {
  return cpu_pool_parallel(step->threads);
}

static const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case AXLE_HAL_DTYPE_UNDEFINED: return "undefined";
    case AXLE_HAL_DTYPE_F32: return "float32";
    case AXLE_HAL_DTYPE_U8: return "uint8";
    case AXLE_HAL_DTYPE_I8: return "int8";
    case AXLE_HAL_DTYPE_U16: return "uint16";
    case AXLE_HAL_DTYPE_I16: return "int16";
    case AXLE_HAL_DTYPE_I32: return "int32";
    case AXLE_HAL_DTYPE_I64: return "int64";
    case AXLE_HAL_DTYPE_STRING: return "string";
    case AXLE_HAL_DTYPE_BOOL: return "bool";
    case AXLE_HAL_DTYPE_F16: return "float16";
    case AXLE_HAL_DTYPE_F64: return "float64";
    case AXLE_HAL_DTYPE_U32: return "uint32";
    case AXLE_HAL_DTYPE_U64: return "uint64";
    case AXLE_HAL_DTYPE_BF16: return "bfloat16";
    default: return "unknown";
  }
}

/* Declines unless the first `required` inputs exist, every present input
 * among the first max_in and every present output is float32. Inputs beyond
 * max_in are left to the op (e.g. none here; kept for clarity). */
static int32_t check_f32(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                         uint32_t required, uint32_t max_in, uint32_t max_out, char* reason,
                         size_t reason_size) {
  if (n->input_count > max_in)
    return cpu_unsupported(reason, reason_size, "%s with %u inputs (at most %u)", n->op_type,
                           n->input_count, max_in);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    const axle_hal_tensor_t* t = cpu_node_input(g, n, i);
    if (!t) {
      if (i < required)
        return cpu_unsupported(reason, reason_size, "%s: required input %u is missing",
                               n->op_type, i);
      continue;
    }
    if (t->dtype != AXLE_HAL_DTYPE_F32)
      return cpu_unsupported(reason, reason_size,
                             "%s: input '%s' is %s; the CPU plugin implements float32 only",
                             n->op_type, t->name, dtype_name(t->dtype));
  }
  if (n->input_count < required)
    return cpu_unsupported(reason, reason_size, "%s needs %u inputs, node has %u", n->op_type,
                           required, n->input_count);
  if (n->output_count < 1 || !cpu_node_output(g, n, 0))
    return cpu_unsupported(reason, reason_size, "%s has no output", n->op_type);
  for (uint32_t i = 0; i < n->output_count && i < max_out; ++i) {
    const axle_hal_tensor_t* t = cpu_node_output(g, n, i);
    if (t && t->dtype != AXLE_HAL_DTYPE_F32)
      return cpu_unsupported(reason, reason_size,
                             "%s: output '%s' is %s; the CPU plugin implements float32 only",
                             n->op_type, t->name, dtype_name(t->dtype));
  }
  return AXLE_HAL_OK;
}

static const axle_hal_attr_t* attr_typed(const axle_hal_node_t* n, const char* name,
                                         int32_t type) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == type ? a : NULL;
}

static const char* attr_string(const axle_hal_node_t* n, const char* name, const char* dflt) {
  const axle_hal_attr_t* a = attr_typed(n, name, AXLE_HAL_ATTR_STRING);
  return a && a->s ? a->s : dflt;
}

static int64_t prod(const int64_t* d, uint32_t from, uint32_t to) {
  int64_t p = 1;
  for (uint32_t i = from; i < to; ++i) p *= d[i];
  return p;
}

/* Compares an inferred output shape with the one this op computes, so a
 * disagreement with the core's shape inference fails compile loudly instead
 * of writing past a buffer. */
static int32_t expect_shape(const axle_hal_host_t* host, const cpu_step_t* step,
                            const axle_hal_tensor_t* t, uint32_t rank, const int64_t* shape) {
  int same = t->rank == rank;
  for (uint32_t i = 0; same && i < rank; ++i) same = t->shape[i] == shape[i];
  if (same) return AXLE_HAL_OK;
  char want[160] = "", have[160] = "";
  size_t w = 0, h = 0;
  for (uint32_t i = 0; i < rank && w < sizeof want; ++i)
    w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", i ? "x" : "",
                          (long long)shape[i]);
  for (uint32_t i = 0; i < t->rank && h < sizeof have; ++i)
    h += (size_t)snprintf(have + h, sizeof have - h, "%s%lld", i ? "x" : "",
                          (long long)t->shape[i]);
  return nn_fail(host, step, AXLE_HAL_INVALID_MODEL,
                 "output '%s' has shape [%s] but the op computes [%s]", t->name, have, want);
}

/* ------------------------------------------------------------------------ */
/* Sliding windows (Conv, MaxPool, AveragePool)                              */
/* ------------------------------------------------------------------------ */

typedef struct nn_window_t {
  uint32_t spatial;
  int64_t in[NN_MAX_SPATIAL], out[NN_MAX_SPATIAL], kernel[NN_MAX_SPATIAL];
  int64_t stride[NN_MAX_SPATIAL], dilation[NN_MAX_SPATIAL];
  int64_t pad_begin[NN_MAX_SPATIAL], pad_end[NN_MAX_SPATIAL];
} nn_window_t;

/* Reads an INTS attribute of exactly `count` values each >= min_value.
 * Absent: fills dflt. Returns 0, or -1 with err set. */
static int read_ints(const axle_hal_node_t* n, const char* name, uint32_t count,
                     int64_t min_value, int64_t dflt, int64_t* dst, char* err,
                     size_t err_size) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  if (!a) {
    for (uint32_t i = 0; i < count; ++i) dst[i] = dflt;
    return 0;
  }
  if (a->type != AXLE_HAL_ATTR_INTS || a->count != count) {
    snprintf(err, err_size, "attribute %s needs %u integers", name, count);
    return -1;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (a->ints[i] < min_value) {
      snprintf(err, err_size, "attribute %s[%u] = %lld is below %lld", name, i,
               (long long)a->ints[i], (long long)min_value);
      return -1;
    }
    dst[i] = a->ints[i];
  }
  return 0;
}

/* Resolves kernel, strides, dilations and padding of a windowed op over the
 * spatial dimensions of x, and computes the output sizes the way ONNX Runtime
 * does. kernel: from the weights (Conv) or NULL to read kernel_shape
 * (pooling). ceil_mode only for pooling. Returns AXLE_HAL_OK, or a status
 * with err describing the problem. */
static int32_t window_resolve(const axle_hal_node_t* n, const axle_hal_tensor_t* x,
                              const int64_t* kernel, int ceil_mode, nn_window_t* w, char* err,
                              size_t err_size) {
  memset(w, 0, sizeof *w);
  if (x->rank < 3 || x->rank > 2 + NN_MAX_SPATIAL) {
    snprintf(err, err_size, "input '%s' has rank %u; 1 to %d spatial dimensions are supported",
             x->name, x->rank, NN_MAX_SPATIAL);
    return AXLE_HAL_UNSUPPORTED;
  }
  const uint32_t sp = x->rank - 2;
  w->spatial = sp;
  for (uint32_t i = 0; i < sp; ++i) w->in[i] = x->shape[2 + i];

  int64_t ks[NN_MAX_SPATIAL];
  if (kernel) {
    memcpy(ks, kernel, sp * sizeof ks[0]);
    /* kernel_shape is optional on Conv but must agree with the weights. */
    const axle_hal_attr_t* a = axle_hal_node_attr(n, "kernel_shape");
    if (a) {
      int ok = a->type == AXLE_HAL_ATTR_INTS && a->count == sp;
      for (uint32_t i = 0; ok && i < sp; ++i) ok = a->ints[i] == ks[i];
      if (!ok) {
        snprintf(err, err_size, "attribute kernel_shape disagrees with the weight shape");
        return AXLE_HAL_INVALID_MODEL;
      }
    }
  } else {
    if (!axle_hal_node_attr(n, "kernel_shape")) {
      snprintf(err, err_size, "attribute kernel_shape is required");
      return AXLE_HAL_INVALID_MODEL;
    }
    if (read_ints(n, "kernel_shape", sp, 1, 1, ks, err, err_size)) return AXLE_HAL_INVALID_MODEL;
  }
  for (uint32_t i = 0; i < sp; ++i) {
    if (ks[i] < 1) {
      snprintf(err, err_size, "kernel size %lld in dimension %u", (long long)ks[i], i);
      return AXLE_HAL_INVALID_MODEL;
    }
    w->kernel[i] = ks[i];
  }
  if (read_ints(n, "strides", sp, 1, 1, w->stride, err, err_size) ||
      read_ints(n, "dilations", sp, 1, 1, w->dilation, err, err_size))
    return AXLE_HAL_INVALID_MODEL;

  const char* auto_pad = attr_string(n, "auto_pad", "NOTSET");
  const int same_upper = strcmp(auto_pad, "SAME_UPPER") == 0;
  const int same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
  const int valid = strcmp(auto_pad, "VALID") == 0;
  if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET") != 0 &&
      auto_pad[0] != '\0') {
    snprintf(err, err_size, "auto_pad '%s' is not supported", auto_pad);
    return AXLE_HAL_UNSUPPORTED;
  }
  int64_t pads[2 * NN_MAX_SPATIAL];
  if (!same_upper && !same_lower && !valid) {
    if (read_ints(n, "pads", 2 * sp, 0, 0, pads, err, err_size)) return AXLE_HAL_INVALID_MODEL;
  }

  for (uint32_t i = 0; i < sp; ++i) {
    const int64_t in = w->in[i], s = w->stride[i];
    const int64_t span = (w->kernel[i] - 1) * w->dilation[i] + 1;
    int64_t out;
    if (same_upper || same_lower) {
      /* ONNX Runtime: output = ceil(in / stride), padding split evenly with
       * the odd element at the end (UPPER) or the start (LOWER). */
      out = (in + s - 1) / s;
      int64_t total = (out - 1) * s + span - in;
      if (total < 0) total = 0;
      w->pad_begin[i] = same_upper ? total / 2 : total - total / 2;
      w->pad_end[i] = total - w->pad_begin[i];
    } else {
      if (valid) {
        w->pad_begin[i] = w->pad_end[i] = 0;
      } else {
        w->pad_begin[i] = pads[i];
        w->pad_end[i] = pads[sp + i];
      }
      const int64_t extent = in + w->pad_begin[i] + w->pad_end[i] - span;
      if (extent < 0) {
        snprintf(err, err_size, "window of %lld exceeds the padded input of %lld in dimension %u",
                 (long long)span, (long long)(in + w->pad_begin[i] + w->pad_end[i]), i);
        return AXLE_HAL_INVALID_MODEL;
      }
      if (ceil_mode) {
        out = (extent + s - 1) / s + 1;
        /* The last window must start inside the input or its leading
         * padding (PyTorch / ONNX Runtime rule). */
        if ((out - 1) * s >= in + w->pad_begin[i]) --out;
      } else {
        out = extent / s + 1;
      }
    }
    w->out[i] = out;
  }
  return AXLE_HAL_OK;
}

/* Copies a window into the kernels' 3-D form, padding leading dimensions
 * with size-1 no-ops. */
static void window_to_3d(const nn_window_t* w, int64_t* in, int64_t* out, int64_t* kernel,
                         int64_t* stride, int64_t* dilation, int64_t* pad, int64_t* pad_end) {
  const uint32_t lead = NN_MAX_SPATIAL - w->spatial;
  for (uint32_t d = 0; d < NN_MAX_SPATIAL; ++d) {
    const int real = d >= lead;
    const uint32_t i = real ? d - lead : 0;
    in[d] = real ? w->in[i] : 1;
    out[d] = real ? w->out[i] : 1;
    kernel[d] = real ? w->kernel[i] : 1;
    stride[d] = real ? w->stride[i] : 1;
    dilation[d] = real ? w->dilation[i] : 1;
    pad[d] = real ? w->pad_begin[i] : 0;
    if (pad_end) pad_end[d] = real ? w->pad_end[i] : 0;
  }
}

/* Output shape [N, C, out...] of a windowed op. */
static void window_out_shape(const axle_hal_tensor_t* x, int64_t channels, const nn_window_t* w,
                             int64_t* shape) {
  shape[0] = x->shape[0];
  shape[1] = channels;
  for (uint32_t i = 0; i < w->spatial; ++i) shape[2 + i] = w->out[i];
}

/* ------------------------------------------------------------------------ */
/* Conv                                                                      */
/* ------------------------------------------------------------------------ */

/* Conv with constant weights runs the prepared convolution (weights packed
 * here, once, with any batch normalisation folded in, epilogue fused); with
 * weights computed at run time it falls back to the reference kernels. */
typedef struct conv_params_t {
  axle_f32_conv_params_t k;
  int prepared;
  int use_gemm;                /* reference path: im2col + GEMM (else direct) */
  axle_f32_conv_plan_t plan;
  axle_f32_epilogue_t ep;      /* residual filled per run */
  const float* packed;         /* tail of this block */
} conv_params_t;

/* Validates shapes and attributes of a Conv; fills w and group. Shared by
 * check() and prepare() so both agree on what runs. */
static int32_t conv_resolve(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                            nn_window_t* w, int64_t* group, char* err, size_t err_size) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* wt = cpu_node_input(g, n, 1);
  const axle_hal_tensor_t* b = cpu_node_input(g, n, 2);
  *group = cpu_attr_int(n, "group", 1);
  if (*group < 1) {
    snprintf(err, err_size, "group = %lld", (long long)*group);
    return AXLE_HAL_INVALID_MODEL;
  }
  if (wt->rank != x->rank) {
    snprintf(err, err_size, "weight '%s' has rank %u, input has rank %u", wt->name, wt->rank,
             x->rank);
    return x->rank >= 3 && x->rank <= 5 ? AXLE_HAL_INVALID_MODEL : AXLE_HAL_UNSUPPORTED;
  }
  int32_t st = window_resolve(n, x, wt->rank > 2 ? wt->shape + 2 : NULL, 0, w, err, err_size);
  if (st != AXLE_HAL_OK) return st;
  const int64_t c = x->shape[1], m = wt->shape[0];
  if (c % *group || m % *group || wt->shape[1] * *group != c) {
    snprintf(err, err_size,
             "channels do not split into %lld groups (input %lld, weight %lldx%lld)",
             (long long)*group, (long long)c, (long long)m, (long long)wt->shape[1]);
    return AXLE_HAL_INVALID_MODEL;
  }
  if (b && !(b->rank == 1 && b->shape[0] == m)) {
    snprintf(err, err_size, "bias '%s' must have shape [%lld]", b->name, (long long)m);
    return AXLE_HAL_INVALID_MODEL;
  }
  return AXLE_HAL_OK;
}

static int32_t conv_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                          size_t reason_size) {
  int32_t st = check_f32(g, n, 2, 3, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  nn_window_t w;
  int64_t group;
  char err[200];
  st = conv_resolve(g, n, &w, &group, err, sizeof err);
  if (st != AXLE_HAL_OK) return cpu_unsupported(reason, reason_size, "Conv: %s", err);
  return AXLE_HAL_OK;
}

/* Weights and bias with a batch normalisation folded in:
 * w'[m] = w[m] * scale[m], b'[m] = b[m] * scale[m] + shift[m]. */
/* Folds batch normalisation bn into weights and bias (per output channel
 * of m, per_channel weights each). AXLE_HAL_OUT_OF_MEMORY or OK. */
static int32_t fold_bn(const axle_hal_graph_t* g, const axle_hal_node_t* bn, size_t m,
                       size_t per_channel, const float* w, const float* b, float* w_out,
                       float* b_out) {
  const axle_hal_tensor_t* t[4];
  for (uint32_t i = 0; i < 4; ++i) t[i] = cpu_node_input(g, bn, 1 + i);
  float* scale = malloc(2 * m * sizeof(float));
  if (!scale) return AXLE_HAL_OUT_OF_MEMORY;
  float* shift = scale + m;
  axle_f32_batchnorm_fold_scalar(m, t[0]->data, t[1]->data, t[2]->data, t[3]->data,
                                 cpu_attr_float(bn, "epsilon", 1e-5f), scale, shift);
  for (size_t o = 0; o < m; ++o) {
    for (size_t i = 0; i < per_channel; ++i) w_out[o * per_channel + i] = w[o * per_channel + i] * scale[o];
    b_out[o] = (b ? b[o] : 0.0f) * scale[o] + shift[o];
  }
  free(scale);
  return AXLE_HAL_OK;
}

/* The kernels' description of a resolved Conv. */
static void conv_kernel_params(const axle_hal_tensor_t* x, const axle_hal_tensor_t* wt,
                               const nn_window_t* w, int64_t group, axle_f32_conv_params_t* k) {
  memset(k, 0, sizeof *k);
  k->batch = x->shape[0];
  k->groups = group;
  k->in_channels = x->shape[1];
  k->out_channels = wt->shape[0];
  window_to_3d(w, k->in, k->out, k->kernel, k->stride, k->dilation, k->pad, NULL);
}

int32_t cpu_conv_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                          axle_f32_conv_params_t* k, char* err, size_t err_size) {
  nn_window_t w;
  int64_t group;
  const int32_t st = conv_resolve(g, n, &w, &group, err, err_size);
  if (st == AXLE_HAL_OK)
    conv_kernel_params(cpu_node_input(g, n, 0), cpu_node_input(g, n, 1), &w, group, k);
  return st;
}

/* The only reader of tensor id, and at which input, or NULL. */
static const axle_hal_node_t* sole_reader(const axle_hal_graph_t* g, int32_t id, uint32_t* input) {
  const axle_hal_node_t* reader = NULL;
  for (uint32_t i = 0; i < g->node_count; ++i)
    for (uint32_t j = 0; j < g->nodes[i].input_count; ++j)
      if (g->nodes[i].inputs[j] == id) {
        if (reader) return NULL;
        reader = &g->nodes[i];
        *input = j;
      }
  return reader;
}

int cpu_feeds_depthwise(const axle_hal_graph_t* g, const axle_hal_tensor_t* t) {
  uint32_t input = 0;
  const axle_hal_node_t* reader = sole_reader(g, (int32_t)(t - g->tensors), &input);
  if (reader && input == 0 && !strcmp(reader->op_type, "DequantizeLinear") &&
      reader->output_count > 0)
    reader = sole_reader(g, reader->outputs[0], &input);
  axle_f32_conv_params_t k;
  char err[200];
  return reader && input == 0 && !strcmp(reader->op_type, "Conv") &&
         cpu_conv_geometry(g, reader, &k, err, sizeof err) == AXLE_HAL_OK && k.groups > 1 &&
         k.groups == k.in_channels;
}

int32_t cpu_conv_prepare_fused(const axle_hal_host_t* host, cpu_step_t* step,
                               const cpu_fusion_t* f) {
  nn_window_t w;
  int64_t group;
  char err[200];
  int32_t st = conv_resolve(step->graph, step->node, &w, &group, err, sizeof err);
  if (st != AXLE_HAL_OK) return nn_fail(host, step, st, "%s", err);
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* wt = step->in[1];
  const axle_hal_tensor_t* bt = step->input_count > 2 ? step->in[2] : NULL;
  int64_t shape[2 + NN_MAX_SPATIAL];
  window_out_shape(x, wt->shape[0], &w, shape);
  st = expect_shape(host, step, step->out[0], x->rank, shape);
  if (st != AXLE_HAL_OK) return st;

  axle_f32_conv_params_t k;
  conv_kernel_params(x, wt, &w, group, &k);

  const int prepared = nn_constant(wt) && (!bt || nn_constant(bt));
  if (!prepared) {
    if (f) return nn_fail(host, step, AXLE_HAL_INTERNAL, "fused convolution needs constant weights");
    conv_params_t* p = nn_params_alloc(step, sizeof *p);
    if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
    p->k = k;
    /* Depthwise (one input channel per group): im2col would only copy. */
    p->use_gemm = x->shape[1] / group != 1;
    step->scratch_bytes = p->use_gemm ? axle_f32_conv_gemm_scratch_size(&p->k) : 0;
    return AXLE_HAL_OK;
  }

  axle_f32_conv_plan_t plan;
  axle_f32_conv_plan(&k, &plan);
  plan.split_channels = step->threads > 1 && cpu_feeds_depthwise(step->graph, step->out[0]);
  const size_t floats = cpu_conv_stage_floats(step->graph, step->node, f, &plan);
  float* tail = NULL;
  conv_params_t* p = cpu_params_alloc_packed(step, sizeof *p, floats, &tail);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  p->k = k;
  p->prepared = 1;
  p->plan = plan;
  p->packed = tail;
  if (cpu_conv_stage_pack(step->graph, step->node, f, &plan, tail, &p->ep) != AXLE_HAL_OK)
    return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  step->scratch_bytes = axle_f32_conv_scratch_size(&plan, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

/* Whether the packed stage carries a bias: the Conv's own, or the one a
 * folded batch norm makes. */
static int stage_has_bias(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                          const cpu_fusion_t* f) {
  return cpu_node_input(g, n, 2) || (f && f->bn);
}

size_t cpu_conv_stage_floats(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                             const cpu_fusion_t* f, const axle_f32_conv_plan_t* plan) {
  return axle_f32_conv_packed_size(plan) +
         (stage_has_bias(g, n, f) ? (size_t)plan->p.out_channels : 0);
}

int32_t cpu_conv_stage_pack(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                            const cpu_fusion_t* f, const axle_f32_conv_plan_t* plan,
                            float* tail, axle_f32_epilogue_t* ep) {
  const axle_hal_tensor_t* wt = cpu_node_input(g, n, 1);
  const axle_hal_tensor_t* bt = cpu_node_input(g, n, 2);
  const size_t m = (size_t)plan->p.out_channels;
  const size_t per_channel = (size_t)(axle_hal_tensor_elements(wt) / plan->p.out_channels);
  float* bias = stage_has_bias(g, n, f) ? tail + axle_f32_conv_packed_size(plan) : NULL;
  axle_f32_epilogue_init(ep);
  ep->bias = bias;
  if (f && f->bn) {
    float* folded = malloc(m * per_channel * sizeof(float));
    if (!folded) return AXLE_HAL_OUT_OF_MEMORY;
    const int32_t st =
        fold_bn(g, f->bn, m, per_channel, wt->data, bt ? bt->data : NULL, folded, bias);
    if (st == AXLE_HAL_OK) axle_f32_conv_pack(plan, folded, tail);
    free(folded);
    if (st != AXLE_HAL_OK) return st;
  } else {
    axle_f32_conv_pack(plan, wt->data, tail);
    if (bt) memcpy(bias, bt->data, m * sizeof(float));
  }
  if (f && f->act == CPU_ACT_CLAMP) {
    ep->min = f->min;
    ep->max = f->max;
  } else if (f && f->act == CPU_ACT_LEAKY) {
    ep->leaky = 1;
    ep->leaky_alpha = f->alpha;
  }
  return AXLE_HAL_OK;
}

static int32_t conv_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  return cpu_conv_prepare_fused(host, step, NULL);
}

static void conv_run(const cpu_step_t* step, const void* const* in, void* const* out,
                     void* scratch) {
  const conv_params_t* p = step->params;
  if (p->prepared) {
    axle_f32_epilogue_t ep = p->ep;
    /* A fused residual Add brings its other operand as input 3. */
    ep.residual = step->input_count > 3 ? in[3] : NULL;
    const axle_parallel_t par = nn_parallel(step);
    axle_f32_conv(&p->plan, in[0], p->packed, &ep, out[0], scratch, &par);
    return;
  }
  const float* bias = step->input_count > 2 ? in[2] : NULL;
  if (p->use_gemm)
    axle_f32_conv_gemm_scalar(&p->k, in[0], in[1], bias, out[0], scratch);
  else
    axle_f32_conv_direct_scalar(&p->k, in[0], in[1], bias, out[0]);
}

/* ------------------------------------------------------------------------ */
/* Gemm                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct gemm_params_t {
  size_t m, n, k;
  size_t a_rs, a_cs, b_rs, b_cs;
  size_t c_rs, c_cs; /* C broadcast strides (0 along broadcast dims) */
  float alpha, beta;
  int use_c;
  const float* b_packed; /* constant B packed at compile time (tail of the block) */
} gemm_params_t;

/* The blocked GEMM for y = alpha * A * B (+ y when accumulating), with B
 * from the compile-time packing when there is one. */
static void nn_gemm_setup(axle_f32_gemm_t* g, size_t m, size_t n, size_t k, const float* a,
                          size_t a_rs, size_t a_cs, const float* b, size_t b_rs, size_t b_cs,
                          const float* b_packed, float alpha, float* y, int accumulate) {
  memset(g, 0, sizeof *g);
  g->m = m;
  g->n = n;
  g->k = k;
  g->a.data = a;
  g->a.rs = a_rs;
  g->a.cs = a_cs;
  g->alpha = alpha;
  g->b.packed = b_packed;
  g->b.data = b;
  g->b.rs = b_rs;
  g->b.cs = b_cs;
  g->c = y;
  g->ldc = n;
  g->accumulate = accumulate;
}

/* Any non-NULL pointer: scratch sizes depend only on the operand kinds. */
#define NN_SOME_DATA ((const float*)16)

static int32_t gemm_resolve(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                            gemm_params_t* p, char* err, size_t err_size) {
  const axle_hal_tensor_t* a = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* b = cpu_node_input(g, n, 1);
  const axle_hal_tensor_t* c = cpu_node_input(g, n, 2);
  memset(p, 0, sizeof *p);
  if (a->rank != 2 || b->rank != 2) {
    snprintf(err, err_size, "A and B must be 2-D (ranks %u and %u)", a->rank, b->rank);
    return AXLE_HAL_UNSUPPORTED;
  }
  const int ta = cpu_attr_int(n, "transA", 0) != 0;
  const int tb = cpu_attr_int(n, "transB", 0) != 0;
  const int64_t m = ta ? a->shape[1] : a->shape[0];
  const int64_t k = ta ? a->shape[0] : a->shape[1];
  const int64_t kb = tb ? b->shape[1] : b->shape[0];
  const int64_t nn = tb ? b->shape[0] : b->shape[1];
  if (k != kb) {
    snprintf(err, err_size, "inner dimensions differ (%lld and %lld)", (long long)k,
             (long long)kb);
    return AXLE_HAL_INVALID_MODEL;
  }
  p->m = (size_t)m;
  p->n = (size_t)nn;
  p->k = (size_t)k;
  /* A transposed is stored [K, M]; B transposed is stored [N, K]. */
  p->a_rs = ta ? 1 : (size_t)k;
  p->a_cs = ta ? (size_t)m : 1;
  p->b_rs = tb ? 1 : (size_t)nn;
  p->b_cs = tb ? (size_t)k : 1;
  p->alpha = cpu_attr_float(n, "alpha", 1.0f);
  p->beta = cpu_attr_float(n, "beta", 1.0f);
  if (c) {
    /* Unidirectional broadcast of C to [M, N]: align trailing dimensions. */
    int64_t cd[2] = {1, 1};
    if (c->rank > 2) {
      snprintf(err, err_size, "C has rank %u (at most 2)", c->rank);
      return AXLE_HAL_INVALID_MODEL;
    }
    for (uint32_t i = 0; i < c->rank; ++i) cd[2 - c->rank + i] = c->shape[i];
    if ((cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != nn)) {
      snprintf(err, err_size, "C of shape [%lldx%lld] does not broadcast to [%lldx%lld]",
               (long long)cd[0], (long long)cd[1], (long long)m, (long long)nn);
      return AXLE_HAL_INVALID_MODEL;
    }
    p->c_cs = cd[1] == 1 ? 0 : 1;
    p->c_rs = cd[0] == 1 ? 0 : (size_t)cd[1];
    p->use_c = p->beta != 0.0f;
  }
  return AXLE_HAL_OK;
}

static int32_t gemm_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                          size_t reason_size) {
  int32_t st = check_f32(g, n, 2, 3, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  gemm_params_t p;
  char err[200];
  if (gemm_resolve(g, n, &p, err, sizeof err) != AXLE_HAL_OK)
    return cpu_unsupported(reason, reason_size, "Gemm: %s", err);
  return AXLE_HAL_OK;
}

static int32_t gemm_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  gemm_params_t tmp;
  char err[200];
  int32_t st = gemm_resolve(step->graph, step->node, &tmp, err, sizeof err);
  if (st != AXLE_HAL_OK) return nn_fail(host, step, st, "%s", err);
  const int64_t shape[2] = {(int64_t)tmp.m, (int64_t)tmp.n};
  st = expect_shape(host, step, step->out[0], 2, shape);
  if (st != AXLE_HAL_OK) return st;
  /* Constant B (the weights of a fully connected layer): packed once. */
  const int pack_b = nn_constant(step->in[1]);
  float* tail = NULL;
  gemm_params_t* p = cpu_params_alloc_packed(
      step, sizeof *p, pack_b ? axle_f32_gemm_packed_b_size(tmp.k, tmp.n) : 0, &tail);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  *p = tmp;
  if (pack_b) {
    axle_f32_gemm_pack_b(p->k, p->n, step->in[1]->data, p->b_rs, p->b_cs, tail);
    p->b_packed = tail;
  }
  axle_f32_gemm_t g;
  nn_gemm_setup(&g, p->m, p->n, p->k, NN_SOME_DATA, p->a_rs, p->a_cs, NN_SOME_DATA, p->b_rs,
                p->b_cs, p->b_packed, p->alpha, NULL, p->use_c);
  step->scratch_bytes = axle_f32_gemm_scratch_size(&g, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void gemm_run(const cpu_step_t* step, const void* const* in, void* const* out,
                     void* scratch) {
  const gemm_params_t* p = step->params;
  float* y = out[0];
  if (p->use_c) {
    /* beta * C broadcast into y, then the product accumulates onto it. */
    const float* c = in[2];
    for (size_t i = 0; i < p->m; ++i)
      for (size_t j = 0; j < p->n; ++j) y[i * p->n + j] = p->beta * c[i * p->c_rs + j * p->c_cs];
  }
  if (p->alpha == 0.0f) {
    /* BLAS semantics: alpha == 0 references neither A nor B (NaNs there
     * must not reach y). */
    if (!p->use_c) memset(y, 0, p->m * p->n * sizeof(float));
    return;
  }
  axle_f32_gemm_t g;
  nn_gemm_setup(&g, p->m, p->n, p->k, in[0], p->a_rs, p->a_cs, in[1], p->b_rs, p->b_cs,
                p->b_packed, p->alpha, y, p->use_c);
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_gemm(&g, scratch, &par);
}

/* ------------------------------------------------------------------------ */
/* MatMul (numpy semantics)                                                  */
/* ------------------------------------------------------------------------ */

typedef struct matmul_params_t {
  size_t m, n, k;
  uint32_t batch_dims;               /* broadcast batch rank */
  int64_t batch_size[NN_MAX_BATCH_DIMS];
  int64_t a_stride[NN_MAX_BATCH_DIMS]; /* elements; 0 where A broadcasts */
  int64_t b_stride[NN_MAX_BATCH_DIMS];
  int64_t batches;                   /* product of batch_size */
  const float* b_packed;             /* constant B packed at compile time */
} matmul_params_t;

static int32_t matmul_resolve(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                              matmul_params_t* p, int64_t* out_shape, uint32_t* out_rank,
                              char* err, size_t err_size) {
  const axle_hal_tensor_t* a = cpu_node_input(g, n, 0);
  const axle_hal_tensor_t* b = cpu_node_input(g, n, 1);
  memset(p, 0, sizeof *p);
  if (a->rank < 1 || b->rank < 1) {
    snprintf(err, err_size, "operands must have rank >= 1 (ranks %u and %u)", a->rank, b->rank);
    return AXLE_HAL_INVALID_MODEL;
  }
  /* 1-D operands are promoted ([K] -> [1,K] for A, [K,1] for B) and the
   * promoted dimension is dropped from the result. */
  const int64_t m = a->rank == 1 ? 1 : a->shape[a->rank - 2];
  const int64_t k = a->shape[a->rank - 1];
  const int64_t kb = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
  const int64_t nn = b->rank == 1 ? 1 : b->shape[b->rank - 1];
  if (k != kb) {
    snprintf(err, err_size, "inner dimensions differ (%lld and %lld)", (long long)k,
             (long long)kb);
    return AXLE_HAL_INVALID_MODEL;
  }
  const uint32_t ab = a->rank > 2 ? a->rank - 2 : 0;
  const uint32_t bb = b->rank > 2 ? b->rank - 2 : 0;
  const uint32_t nb = ab > bb ? ab : bb;
  if (nb > NN_MAX_BATCH_DIMS) {
    snprintf(err, err_size, "too many batch dimensions (%u)", nb);
    return AXLE_HAL_UNSUPPORTED;
  }
  p->m = (size_t)m;
  p->n = (size_t)nn;
  p->k = (size_t)k;
  p->batch_dims = nb;
  /* Right-aligned broadcast of the batch dimensions; strides count whole
   * matrices so the innermost batch dimension steps by one matrix. */
  int64_t a_step = m * k, b_step = k * nn;
  p->batches = 1;
  for (uint32_t r = 0; r < nb; ++r) {
    const uint32_t d = nb - 1 - r; /* output batch dim, innermost first */
    const int64_t da = r < ab ? a->shape[ab - 1 - r] : 1;
    const int64_t db = r < bb ? b->shape[bb - 1 - r] : 1;
    if (da != db && da != 1 && db != 1) {
      snprintf(err, err_size, "batch dimensions %lld and %lld do not broadcast", (long long)da,
               (long long)db);
      return AXLE_HAL_INVALID_MODEL;
    }
    p->batch_size[d] = da == 1 ? db : da;
    p->a_stride[d] = da == 1 ? 0 : a_step;
    p->b_stride[d] = db == 1 ? 0 : b_step;
    a_step *= da;
    b_step *= db;
    p->batches *= p->batch_size[d];
  }
  uint32_t r = 0;
  for (uint32_t d = 0; d < nb; ++d) out_shape[r++] = p->batch_size[d];
  if (a->rank != 1) out_shape[r++] = m;
  if (b->rank != 1) out_shape[r++] = nn;
  *out_rank = r;
  /* B shared by every batch while A's batches are contiguous: the batch
   * folds into M and the whole product is one GEMM (Linear layers). */
  int fold = nb > 0 && a->rank >= 2;
  for (uint32_t d = 0; d < nb && fold; ++d) fold = p->b_stride[d] == 0;
  if (fold) {
    p->m *= (size_t)p->batches;
    p->batches = 1;
    p->batch_dims = 0;
  }
  return AXLE_HAL_OK;
}

static int32_t matmul_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                            size_t reason_size) {
  int32_t st = check_f32(g, n, 2, 2, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  matmul_params_t p;
  int64_t shape[AXLE_HAL_MAX_RANK];
  uint32_t rank;
  char err[200];
  if (matmul_resolve(g, n, &p, shape, &rank, err, sizeof err) != AXLE_HAL_OK)
    return cpu_unsupported(reason, reason_size, "MatMul: %s", err);
  return AXLE_HAL_OK;
}

static int32_t matmul_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  matmul_params_t tmp;
  int64_t shape[AXLE_HAL_MAX_RANK];
  uint32_t rank;
  char err[200];
  int32_t st = matmul_resolve(step->graph, step->node, &tmp, shape, &rank, err, sizeof err);
  if (st != AXLE_HAL_OK) return nn_fail(host, step, st, "%s", err);
  st = expect_shape(host, step, step->out[0], rank, shape);
  if (st != AXLE_HAL_OK) return st;
  /* A constant B shared by every batch (Linear layers): packed once. */
  int pack_b = nn_constant(step->in[1]);
  for (uint32_t d = 0; d < tmp.batch_dims; ++d) pack_b = pack_b && tmp.b_stride[d] == 0;
  float* tail = NULL;
  matmul_params_t* p = cpu_params_alloc_packed(
      step, sizeof *p, pack_b ? axle_f32_gemm_packed_b_size(tmp.k, tmp.n) : 0, &tail);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  *p = tmp;
  if (pack_b) {
    axle_f32_gemm_pack_b(p->k, p->n, step->in[1]->data, p->n, 1, tail);
    p->b_packed = tail;
  }
  axle_f32_gemm_t g;
  nn_gemm_setup(&g, p->m, p->n, p->k, NN_SOME_DATA, p->k, 1, NN_SOME_DATA, p->n, 1, p->b_packed,
                1.0f, NULL, 0);
  step->scratch_bytes = axle_f32_gemm_scratch_size(&g, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void matmul_run(const cpu_step_t* step, const void* const* in, void* const* out,
                       void* scratch) {
  const matmul_params_t* p = step->params;
  const float* a = in[0];
  const float* b = in[1];
  float* y = out[0];
  const size_t y_step = p->m * p->n;
  const axle_parallel_t par = nn_parallel(step);
  /* Odometer over the broadcast batch dimensions; offsets advance by the
   * per-dimension strides so no division happens per batch. */
  int64_t idx[NN_MAX_BATCH_DIMS] = {0};
  int64_t a_off = 0, b_off = 0;
  for (int64_t bi = 0; bi < p->batches; ++bi) {
    axle_f32_gemm_t g;
    nn_gemm_setup(&g, p->m, p->n, p->k, a + a_off, p->k, 1, b + b_off, p->n, 1, p->b_packed,
                  1.0f, y + (size_t)bi * y_step, 0);
    axle_f32_gemm(&g, scratch, &par);
    for (uint32_t d = p->batch_dims; d-- > 0;) {
      a_off += p->a_stride[d];
      b_off += p->b_stride[d];
      if (++idx[d] < p->batch_size[d]) break;
      a_off -= p->a_stride[d] * p->batch_size[d];
      b_off -= p->b_stride[d] * p->batch_size[d];
      idx[d] = 0;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* BatchNormalization (inference)                                            */
/* ------------------------------------------------------------------------ */

typedef struct bn_params_t {
  size_t batch, channels, size;
  float epsilon;
  int folded;         /* scale/shift below are valid (constant statistics) */
  float affine[];     /* scale[channels], shift[channels] when folded */
} bn_params_t;

static int32_t bn_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                        size_t reason_size) {
  int32_t st = check_f32(g, n, 5, 5, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  if (cpu_attr_int(n, "training_mode", 0) != 0)
    return cpu_unsupported(reason, reason_size,
                           "BatchNormalization: training_mode=1 is not supported "
                           "(inference only)");
  /* Before opset 14, training is signalled by the optional statistics
   * outputs instead of an attribute. */
  for (uint32_t i = 1; i < n->output_count; ++i)
    if (n->outputs[i] >= 0)
      return cpu_unsupported(reason, reason_size,
                             "BatchNormalization: running-statistics outputs (training) are "
                             "not supported");
  if (cpu_attr_int(n, "spatial", 1) != 1)
    return cpu_unsupported(reason, reason_size,
                           "BatchNormalization: spatial=0 (per-activation statistics) is not "
                           "implemented");
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (x->rank < 2)
    return cpu_unsupported(reason, reason_size, "BatchNormalization: input rank %u (need >= 2)",
                           x->rank);
  for (uint32_t i = 1; i < 5; ++i) {
    const axle_hal_tensor_t* t = cpu_node_input(g, n, i);
    if (axle_hal_tensor_elements(t) != x->shape[1] || t->rank != 1)
      return cpu_unsupported(reason, reason_size,
                             "BatchNormalization: '%s' must have shape [%lld]", t->name,
                             (long long)x->shape[1]);
  }
  return AXLE_HAL_OK;
}

static int bn_constant(const axle_hal_tensor_t* t) {
  return (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data;
}

static int32_t bn_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const size_t channels = (size_t)x->shape[1];
  const int folded = bn_constant(step->in[1]) && bn_constant(step->in[2]) &&
                     bn_constant(step->in[3]) && bn_constant(step->in[4]);
  int32_t st = expect_shape(host, step, step->out[0], x->rank, x->shape);
  if (st != AXLE_HAL_OK) return st;
  bn_params_t* p = nn_params_alloc(
      step, sizeof *p + (folded ? 2 * channels * sizeof(float) : 0));
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  p->batch = (size_t)x->shape[0];
  p->channels = channels;
  p->size = (size_t)prod(x->shape, 2, x->rank);
  p->epsilon = cpu_attr_float(step->node, "epsilon", 1e-5f);
  p->folded = folded;
  if (folded) {
    axle_f32_batchnorm_fold_scalar(channels, step->in[1]->data, step->in[2]->data,
                                   step->in[3]->data, step->in[4]->data, p->epsilon,
                                   p->affine, p->affine + channels);
  } else {
    step->scratch_bytes = 2 * channels * sizeof(float);
  }
  return AXLE_HAL_OK;
}

static void bn_run(const cpu_step_t* step, const void* const* in, void* const* out,
                   void* scratch) {
  const bn_params_t* p = step->params;
  const float* scale = p->affine;
  const float* shift = p->affine + p->channels;
  if (!p->folded) {
    float* s = scratch;
    axle_f32_batchnorm_fold_scalar(p->channels, in[1], in[2], in[3], in[4], p->epsilon, s,
                                   s + p->channels);
    scale = s;
    shift = s + p->channels;
  }
  axle_f32_channel_affine_scalar(p->batch, p->channels, p->size, in[0], scale, shift, out[0]);
}

/* ------------------------------------------------------------------------ */
/* MaxPool / AveragePool                                                     */
/* ------------------------------------------------------------------------ */

typedef struct pool_params_t {
  axle_f32_pool_params_t k;
  int with_indices;
} pool_params_t;

static int32_t pool_resolve(const axle_hal_graph_t* g, const axle_hal_node_t* n, int is_max,
                            nn_window_t* w, char* err, size_t err_size) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  const int64_t ceil_mode = cpu_attr_int(n, "ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) {
    snprintf(err, err_size, "ceil_mode = %lld", (long long)ceil_mode);
    return AXLE_HAL_INVALID_MODEL;
  }
  if (is_max) {
    const int64_t so = cpu_attr_int(n, "storage_order", 0);
    if (so != 0 && so != 1) {
      snprintf(err, err_size, "storage_order = %lld", (long long)so);
      return AXLE_HAL_INVALID_MODEL;
    }
  } else {
    const int64_t cip = cpu_attr_int(n, "count_include_pad", 0);
    if (cip != 0 && cip != 1) {
      snprintf(err, err_size, "count_include_pad = %lld", (long long)cip);
      return AXLE_HAL_INVALID_MODEL;
    }
  }
  return window_resolve(n, x, NULL, (int)ceil_mode, w, err, err_size);
}

static int32_t pool_check_common(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                 int is_max, char* reason, size_t reason_size) {
  int32_t st = check_f32(g, n, 1, 1, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  if (is_max && n->output_count > 1 && n->outputs[1] >= 0) {
    const axle_hal_tensor_t* idx = cpu_node_output(g, n, 1);
    if (!idx || idx->dtype != AXLE_HAL_DTYPE_I64)
      return cpu_unsupported(reason, reason_size, "MaxPool: Indices output must be int64");
  }
  if (n->output_count > (uint32_t)(is_max ? 2 : 1))
    return cpu_unsupported(reason, reason_size, "%s with %u outputs", n->op_type,
                           n->output_count);
  nn_window_t w;
  char err[200];
  st = pool_resolve(g, n, is_max, &w, err, sizeof err);
  if (st != AXLE_HAL_OK) return cpu_unsupported(reason, reason_size, "%s: %s", n->op_type, err);
  return AXLE_HAL_OK;
}

static int32_t maxpool_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                             size_t reason_size) {
  return pool_check_common(g, n, 1, reason, reason_size);
}

static int32_t avgpool_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                             size_t reason_size) {
  return pool_check_common(g, n, 0, reason, reason_size);
}

/* The kernels' description of a resolved pooling over x. */
static void pool_kernel_params(const axle_hal_node_t* n, const axle_hal_tensor_t* x,
                               const nn_window_t* w, axle_f32_pool_params_t* k) {
  memset(k, 0, sizeof *k);
  k->channels = x->shape[0] * x->shape[1];
  window_to_3d(w, k->in, k->out, k->kernel, k->stride, k->dilation, k->pad, k->pad_end);
  k->count_include_pad = (int32_t)cpu_attr_int(n, "count_include_pad", 0);
  k->storage_order = (int32_t)cpu_attr_int(n, "storage_order", 0);
}

int32_t cpu_maxpool_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                             axle_f32_pool_params_t* k, char* err, size_t err_size) {
  nn_window_t w;
  const int32_t st = pool_resolve(g, n, 1, &w, err, err_size);
  if (st == AXLE_HAL_OK) pool_kernel_params(n, cpu_node_input(g, n, 0), &w, k);
  return st;
}

static int32_t pool_prepare_common(const axle_hal_host_t* host, cpu_step_t* step, int is_max) {
  nn_window_t w;
  char err[200];
  int32_t st = pool_resolve(step->graph, step->node, is_max, &w, err, sizeof err);
  if (st != AXLE_HAL_OK) return nn_fail(host, step, st, "%s", err);
  const axle_hal_tensor_t* x = step->in[0];
  int64_t shape[2 + NN_MAX_SPATIAL];
  window_out_shape(x, x->shape[1], &w, shape);
  st = expect_shape(host, step, step->out[0], x->rank, shape);
  if (st != AXLE_HAL_OK) return st;
  const int with_indices = is_max && step->output_count > 1 && step->out[1];
  if (with_indices) {
    st = expect_shape(host, step, step->out[1], x->rank, shape);
    if (st != AXLE_HAL_OK) return st;
  }
  pool_params_t* p = nn_params_alloc(step, sizeof *p);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  pool_kernel_params(step->node, x, &w, &p->k);
  p->with_indices = with_indices;
  const uint32_t threads = step->threads ? step->threads : 1;
  if (is_max && !with_indices) step->scratch_bytes = axle_f32_maxpool_scratch_size(&p->k, threads);
  if (!is_max) step->scratch_bytes = axle_f32_avgpool_scratch_size(&p->k, threads);
  return AXLE_HAL_OK;
}

static int32_t maxpool_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  return pool_prepare_common(host, step, 1);
}

static int32_t avgpool_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  return pool_prepare_common(host, step, 0);
}

static void maxpool_run(const cpu_step_t* step, const void* const* in, void* const* out,
                        void* scratch) {
  const pool_params_t* p = step->params;
  if (p->with_indices) {
    axle_f32_maxpool_scalar(&p->k, in[0], out[0], out[1]);
    return;
  }
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_maxpool(&p->k, in[0], out[0], scratch, &par);
}

static void avgpool_run(const cpu_step_t* step, const void* const* in, void* const* out,
                        void* scratch) {
  const pool_params_t* p = step->params;
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_avgpool(&p->k, in[0], out[0], scratch, &par);
}

/* ------------------------------------------------------------------------ */
/* GlobalAveragePool / GlobalMaxPool                                         */
/* ------------------------------------------------------------------------ */

typedef struct global_params_t {
  size_t channels, size;
} global_params_t;

static int32_t global_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                            size_t reason_size) {
  int32_t st = check_f32(g, n, 1, 1, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (x->rank < 2)
    return cpu_unsupported(reason, reason_size, "%s: input rank %u (need >= 2)", n->op_type,
                           x->rank);
  return AXLE_HAL_OK;
}

static int32_t global_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  int64_t shape[AXLE_HAL_MAX_RANK];
  shape[0] = x->shape[0];
  shape[1] = x->shape[1];
  for (uint32_t i = 2; i < x->rank; ++i) shape[i] = 1;
  int32_t st = expect_shape(host, step, step->out[0], x->rank, shape);
  if (st != AXLE_HAL_OK) return st;
  global_params_t* p = nn_params_alloc(step, sizeof *p);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  p->channels = (size_t)(x->shape[0] * x->shape[1]);
  p->size = (size_t)prod(x->shape, 2, x->rank);
  return AXLE_HAL_OK;
}

static void global_avg_run(const cpu_step_t* step, const void* const* in, void* const* out,
                           void* scratch) {
  (void)scratch;
  const global_params_t* p = step->params;
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_global_avgpool(p->channels, p->size, in[0], out[0], &par);
}

static void global_max_run(const cpu_step_t* step, const void* const* in, void* const* out,
                           void* scratch) {
  (void)scratch;
  const global_params_t* p = step->params;
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_global_maxpool(p->channels, p->size, in[0], out[0], &par);
}

/* ------------------------------------------------------------------------ */
/* Softmax / LogSoftmax                                                      */
/* ------------------------------------------------------------------------ */

typedef struct softmax_params_t {
  size_t outer, axis, inner;
} softmax_params_t;

/* Opset < 13 flattens the input to 2-D at `axis` (default 1) and normalises
 * each row; opset >= 13 normalises along `axis` alone (default -1). */
static int32_t softmax_resolve(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                               softmax_params_t* p, char* err, size_t err_size) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  const int legacy = g->opset > 0 && g->opset < 13;
  const int64_t rank = x->rank;
  int64_t axis = cpu_attr_int(n, "axis", legacy ? 1 : -1);
  if (axis < 0) axis += rank;
  /* Legacy coercion accepts axis == rank (rows of one element). */
  if (axis < 0 || axis > rank || (!legacy && axis == rank) || rank == 0) {
    snprintf(err, err_size, "axis %lld is out of range for rank %lld",
             (long long)cpu_attr_int(n, "axis", legacy ? 1 : -1), (long long)rank);
    return AXLE_HAL_INVALID_MODEL;
  }
  p->outer = (size_t)prod(x->shape, 0, (uint32_t)axis);
  if (legacy) {
    p->axis = (size_t)prod(x->shape, (uint32_t)axis, x->rank);
    p->inner = 1;
  } else {
    p->axis = (size_t)x->shape[axis];
    p->inner = (size_t)prod(x->shape, (uint32_t)axis + 1, x->rank);
  }
  return AXLE_HAL_OK;
}

static int32_t softmax_check(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                             size_t reason_size) {
  int32_t st = check_f32(g, n, 1, 1, 1, reason, reason_size);
  if (st != AXLE_HAL_OK) return st;
  softmax_params_t p;
  char err[200];
  if (softmax_resolve(g, n, &p, err, sizeof err) != AXLE_HAL_OK)
    return cpu_unsupported(reason, reason_size, "%s: %s", n->op_type, err);
  return AXLE_HAL_OK;
}

static int32_t softmax_prepare(const axle_hal_host_t* host, cpu_step_t* step) {
  softmax_params_t tmp;
  char err[200];
  int32_t st = softmax_resolve(step->graph, step->node, &tmp, err, sizeof err);
  if (st != AXLE_HAL_OK) return nn_fail(host, step, st, "%s", err);
  st = expect_shape(host, step, step->out[0], step->in[0]->rank, step->in[0]->shape);
  if (st != AXLE_HAL_OK) return st;
  softmax_params_t* p = nn_params_alloc(step, sizeof *p);
  if (!p) return nn_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  *p = tmp;
  return AXLE_HAL_OK;
}

static void softmax_run(const cpu_step_t* step, const void* const* in, void* const* out,
                        void* scratch) {
  (void)scratch;
  const softmax_params_t* p = step->params;
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_softmax(p->outer, p->axis, p->inner, in[0], out[0], &par);
}

static void logsoftmax_run(const cpu_step_t* step, const void* const* in, void* const* out,
                           void* scratch) {
  (void)scratch;
  const softmax_params_t* p = step->params;
  const axle_parallel_t par = nn_parallel(step);
  axle_f32_logsoftmax(p->outer, p->axis, p->inner, in[0], out[0], &par);
}

/* ------------------------------------------------------------------------ */

const cpu_op_t cpu_ops_nn[] = {
    {"AveragePool", avgpool_check, avgpool_prepare, avgpool_run},
    {"BatchNormalization", bn_check, bn_prepare, bn_run},
    {"Conv", conv_check, conv_prepare, conv_run},
    {"Gemm", gemm_check, gemm_prepare, gemm_run},
    {"GlobalAveragePool", global_check, global_prepare, global_avg_run},
    {"GlobalMaxPool", global_check, global_prepare, global_max_run},
    {"LogSoftmax", softmax_check, softmax_prepare, logsoftmax_run},
    {"MatMul", matmul_check, matmul_prepare, matmul_run},
    {"MaxPool", maxpool_check, maxpool_prepare, maxpool_run},
    {"Softmax", softmax_check, softmax_prepare, softmax_run},
    {NULL, NULL, NULL, NULL},
};
