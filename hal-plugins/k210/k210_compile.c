/*
 * Graph -> kmodel. Steps: fuse the subgraph's nodes into KPU layers
 * (conv -> batch norm -> activation -> pool, each optional; a layer without a
 * Conv runs an identity depthwise 1x1), place every feature map in KPU RAM
 * by liveness, send what leaves the subgraph to main memory (DMA) and
 * dequantize it there, quantize weights and fit the batch-norm and activation
 * tables, and write the kmodel with Axle's trailer.
 */
#include "k210_compile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k210_kmodel_write.h"
#include "k210_ops.h"
#include "k210_quant.h"
#include "k210_ram.h"

typedef struct layer_t {
  k210_op_t op[4];          /* by k210_role_t */
  int has[4];
  char label[160];          /* node names joined by '+' */
  int32_t in_t, out_t;      /* graph tensors */
  uint32_t c, h, w, oc, oh, ow, ksize, pool_type;
  int depthwise;
  int32_t in_map, out_map;  /* indices into maps */
  /* The u8 quantization of what the layer writes: its output tensor's, or
   * for a mean pool the pooled input's (averages never leave it, and the
   * activation quantizes before the pool). Consumers read with this. */
  double out_scale;
  int32_t out_zp;
  int main_out;             /* the output leaves the subgraph */
  int reupload;             /* ...and later layers read it too */
  uint32_t main_u8, main_f32;
  /* built */
  uint8_t* weights;
  uint32_t weight_bytes;
  uint8_t* bn;
  uint8_t act[K210_ACT_TABLE_BYTES];
  uint64_t words[K210_LAYER_WORDS];
} layer_t;

typedef struct map_t {
  int32_t tensor;
  uint32_t c, h, w, rows, base;
  int32_t last_use;         /* last layer reading it (or writing it) */
  int live;
} map_t;

typedef struct compiler_t {
  const axle_hal_subgraph_t* sg;
  const axle_hal_graph_t* g;
  const k210_compile_log_t* log;
  char* why;
  size_t why_size;
  layer_t* layers;
  uint32_t layer_count;
  map_t* maps;
  uint32_t map_count;
  uint8_t* in_sg;           /* [node_count] */
  int keep;                 /* AXLE_HAL_COMPILE_KEEP_INTERMEDIATES */
} compiler_t;

static int32_t fail(compiler_t* c, int32_t status, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int32_t fail(compiler_t* c, int32_t status, const char* fmt, ...) {
  int at = snprintf(c->why, c->why_size, "k210: compile: ");
  va_list ap;
  va_start(ap, fmt);
  if (at >= 0 && (size_t)at < c->why_size) vsnprintf(c->why + at, c->why_size - (size_t)at, fmt, ap);
  va_end(ap);
  return status;
}

static void note(compiler_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(compiler_t* c, const char* fmt, ...) {
  if (!c->log || !c->log->note) return;
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  c->log->note(c->log->ctx, text);
}

/* How many nodes of the whole graph read tensor t, and whether one outside
 * the subgraph does. */
static uint32_t consumers(const compiler_t* c, int32_t t, int* outside, uint32_t* only) {
  uint32_t count = 0;
  *outside = 0;
  for (uint32_t n = 0; n < c->g->node_count; ++n) {
    const axle_hal_node_t* node = &c->g->nodes[n];
    for (uint32_t i = 0; i < node->input_count; ++i)
      if (node->inputs[i] == t) {
        ++count;
        *only = n;
        if (!c->in_sg[n]) *outside = 1;
        break;
      }
  }
  return count;
}

static int has_location(const compiler_t* c, int32_t t) {
  for (uint32_t i = 0; i < c->sg->location_count; ++i)
    if (c->sg->locations[i].tensor == t) return 1;
  return 0;
}

/* Whether tensor t must be written to its location: read outside the
 * subgraph, a graph output, or (KEEP_INTERMEDIATES) any located tensor. */
static int leaves_subgraph(const compiler_t* c, int32_t t) {
  int outside;
  uint32_t only;
  consumers(c, t, &outside, &only);
  return outside || (c->g->tensors[t].flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT) || (c->keep && has_location(c, t));
}

/* ------------------------------------------------------------------------ */
/* Fusion.                                                                   */
/* ------------------------------------------------------------------------ */

static void add_to_layer(compiler_t* c, layer_t* l, uint32_t node, const k210_op_t* op) {
  l->op[op->role] = *op;
  l->has[op->role] = 1;
  size_t len = strlen(l->label);
  snprintf(l->label + len, sizeof(l->label) - len, "%s%s", len ? "+" : "", c->g->nodes[node].name);
  l->out_t = op->y_index;
}

static int32_t fuse(compiler_t* c, uint8_t* taken) {
  const axle_hal_subgraph_t* sg = c->sg;
  char reason[400];
  for (uint32_t k = 0; k < sg->node_count; ++k) {
    uint32_t n = sg->nodes[k];
    if (taken[n]) continue;
    k210_op_t op;
    int32_t st = k210_op_parse(c->g, n, &op, reason, sizeof(reason));
    if (st != AXLE_HAL_OK) return fail(c, st, "%s", reason);
    layer_t* l = &c->layers[c->layer_count++];
    memset(l, 0, sizeof(*l));
    l->in_t = op.x_index;
    add_to_layer(c, l, n, &op);
    taken[n] = 1;
    /* A strided conv already uses the pool stage for its pick. */
    int stage = (int)op.role, pool_used = op.role == K210_ROLE_CONV && op.stride > 1;
    for (;;) {
      int outside;
      uint32_t next = 0;
      if (consumers(c, l->out_t, &outside, &next) != 1 || !c->in_sg[next] || taken[next] ||
          leaves_subgraph(c, l->out_t))
        break;
      k210_op_t nop;
      if (k210_op_parse(c->g, next, &nop, reason, sizeof(reason)) != AXLE_HAL_OK) break;
      if (nop.x_index != l->out_t || (int)nop.role <= stage || (nop.role == K210_ROLE_POOL && pool_used))
        break;
      add_to_layer(c, l, next, &nop);
      taken[next] = 1;
      stage = (int)nop.role;
    }
  }
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Feature maps in KPU RAM.                                                  */
/* ------------------------------------------------------------------------ */

static int32_t map_of(compiler_t* c, int32_t tensor) {
  for (uint32_t i = 0; i < c->map_count; ++i)
    if (c->maps[i].tensor == tensor) return (int32_t)i;
  return -1;
}

static int32_t add_map(compiler_t* c, int32_t tensor, uint32_t ch, uint32_t h, uint32_t w, int32_t use) {
  map_t* m = &c->maps[c->map_count];
  memset(m, 0, sizeof(*m));
  *m = (map_t){tensor, ch, h, w, 0, 0, use, 0};
  k210_fmap_t f = k210_fmap_for_shape(0, w, h, ch);
  m->rows = k210_fmap_rows(&f);
  return (int32_t)c->map_count++;
}

/* Lowest free run of rows among the live maps, or -1. */
static int64_t find_rows(const compiler_t* c, uint32_t rows) {
  uint32_t base = 0;
  for (;;) {
    int moved = 0;
    for (uint32_t i = 0; i < c->map_count; ++i) {
      const map_t* m = &c->maps[i];
      if (m->live && base < m->base + m->rows && m->base < base + rows) {
        base = m->base + m->rows;
        moved = 1;
      }
    }
    if (!moved) return (uint64_t)base + rows <= K210_RAM_ROWS ? (int64_t)base : -1;
  }
}

static int32_t place(compiler_t* c, int32_t map, const layer_t* l) {
  map_t* m = &c->maps[map];
  int64_t base = find_rows(c, m->rows);
  if (base < 0) {
    uint32_t live = 0;
    for (uint32_t i = 0; i < c->map_count; ++i) live += c->maps[i].live ? c->maps[i].rows : 0;
    return fail(c, AXLE_HAL_RESOURCE_EXHAUSTED,
                "layer '%s': its %ux%ux%u output needs %u KiB of KPU RAM while %u KiB hold feature maps "
                "still in use; the KPU has 2048 KiB",
                l->label, m->c, m->h, m->w, m->rows / 16, live / 16);
  }
  m->base = (uint32_t)base;
  m->live = 1;
  return AXLE_HAL_OK;
}

static int32_t plan_memory(compiler_t* c, int32_t* input_tensor, uint32_t* main_bytes) {
  *input_tensor = -1;
  for (uint32_t i = 0; i < c->layer_count; ++i) {
    layer_t* l = &c->layers[i];
    const axle_hal_tensor_t* x = &c->g->tensors[l->in_t];
    l->in_map = map_of(c, l->in_t);
    if (l->in_map < 0) {
      /* Not produced here: the program's input. kmodel v3 has one. */
      if (*input_tensor >= 0)
        return fail(c, AXLE_HAL_UNSUPPORTED,
                    "the subgraph reads '%s' and '%s' from outside; a kmodel v3 program has one input",
                    c->g->tensors[*input_tensor].name, x->name);
      *input_tensor = l->in_t;
      l->in_map = add_map(c, l->in_t, (uint32_t)x->shape[1], (uint32_t)x->shape[2], (uint32_t)x->shape[3], (int32_t)i);
    }
    c->maps[l->in_map].last_use = (int32_t)i;
    const axle_hal_tensor_t* y = &c->g->tensors[l->out_t];
    l->out_map = add_map(c, l->out_t, (uint32_t)y->shape[1], (uint32_t)y->shape[2], (uint32_t)y->shape[3], (int32_t)i);
  }
  /* Liveness: a map is held from its layer (or the start) to its last
   * reader; a layer's output never shares rows with its input. */
  int32_t st = place(c, c->layers[0].in_map, &c->layers[0]);
  uint32_t main_at = 0;
  for (uint32_t i = 0; st == AXLE_HAL_OK && i < c->layer_count; ++i) {
    layer_t* l = &c->layers[i];
    st = place(c, l->out_map, l);
    for (uint32_t k = 0; k < c->map_count; ++k)
      if (c->maps[k].live && c->maps[k].last_use == (int32_t)i) c->maps[k].live = 0;
    if (leaves_subgraph(c, l->out_t)) {
      uint32_t n = l->oc * l->oh * l->ow;
      if (l->oh * l->ow > 65536)
        return fail(c, AXLE_HAL_UNSUPPORTED, "layer '%s': a %ux%u output plane is larger than the KPU's DMA "
                                             "sends per channel (65536 bytes)", l->label, l->oh, l->ow);
      l->main_out = 1;
      l->reupload = c->maps[l->out_map].last_use > (int32_t)i;
      l->main_u8 = main_at;
      main_at += (n + 7) / 8 * 8;
      l->main_f32 = main_at;
      main_at += 4 * n;
    }
  }
  *main_bytes = main_at;
  return st;
}

/* ------------------------------------------------------------------------ */
/* Parameters and words.                                                     */
/* ------------------------------------------------------------------------ */

static void layer_shape(layer_t* l, const axle_hal_graph_t* g) {
  const axle_hal_tensor_t* x = &g->tensors[l->in_t];
  const axle_hal_tensor_t* y = &g->tensors[l->out_t];
  l->c = (uint32_t)x->shape[1];
  l->h = (uint32_t)x->shape[2];
  l->w = (uint32_t)x->shape[3];
  l->oc = (uint32_t)y->shape[1];
  l->oh = (uint32_t)y->shape[2];
  l->ow = (uint32_t)y->shape[3];
  const k210_op_t* conv = l->has[K210_ROLE_CONV] ? &l->op[K210_ROLE_CONV] : NULL;
  l->ksize = conv ? conv->ksize : 1;
  l->depthwise = conv ? conv->depthwise : 1;
  if (l->has[K210_ROLE_POOL])
    l->pool_type = (uint32_t)l->op[K210_ROLE_POOL].pool_type;
  else if (conv && conv->stride > 1)
    l->pool_type = conv->stride == 2 ? K210_POOL_LEFT_TOP_2_S2 : K210_POOL_LEFT_TOP_4_S4;
  else
    l->pool_type = K210_POOL_BYPASS;
}

static double qscale(const axle_hal_tensor_t* t) { return t->quant.scales[0]; }
static int32_t qzero(const axle_hal_tensor_t* t) { return t->quant.zero_points[0]; }

static int is_mean_pool(uint32_t pool_type) {
  return pool_type == K210_POOL_MEAN_2_S2 || pool_type == K210_POOL_MEAN_4_S4 || pool_type == K210_POOL_MEAN_2_S1;
}

/* The quantization of tensor t in KPU RAM: what the layer producing it
 * wrote, else (the program's input) the calibrated one. */
static void quant_in_ram(const compiler_t* c, int32_t t, double* scale, int32_t* zp) {
  for (uint32_t i = 0; i < c->layer_count; ++i)
    if (c->layers[i].out_t == t) {
      *scale = c->layers[i].out_scale;
      *zp = c->layers[i].out_zp;
      return;
    }
  *scale = qscale(&c->g->tensors[t]);
  *zp = qzero(&c->g->tensors[t]);
}

static float const_at(const axle_hal_tensor_t* t, size_t i) {
  float v;
  memcpy(&v, (const uint8_t*)t->data + 4 * i, sizeof(v));
  return v;
}

/* Weights, batch norm and activation of one layer (docs: k210_quant.h). */
static int32_t build_params(compiler_t* c, layer_t* l) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_tensor_t* y = &g->tensors[l->out_t];
  const k210_op_t* conv = l->has[K210_ROLE_CONV] ? &l->op[K210_ROLE_CONV] : NULL;
  const k210_op_t* bn = l->has[K210_ROLE_BN] ? &l->op[K210_ROLE_BN] : NULL;
  uint32_t taps = (l->depthwise ? 1 : l->c) * l->ksize * l->ksize;
  const axle_hal_tensor_t* written = is_mean_pool(l->pool_type) ? l->op[K210_ROLE_POOL].x : y;
  l->out_scale = qscale(written);
  l->out_zp = qzero(written);
  double sx;
  int32_t zx;
  quant_in_ram(c, l->in_t, &sx, &zx);
  l->weight_bytes = l->oc * taps;
  float* wf = (float*)malloc(sizeof(float) * l->weight_bytes);
  double* m = (double*)malloc(sizeof(double) * l->oc);
  double* b = (double*)malloc(sizeof(double) * l->oc);
  k210_bn_t* bns = (k210_bn_t*)malloc(sizeof(k210_bn_t) * l->oc);
  l->weights = (uint8_t*)malloc(l->weight_bytes);
  l->bn = (uint8_t*)malloc((size_t)K210_BN_BYTES * l->oc);
  int32_t st = AXLE_HAL_OK;
  if (!wf || !m || !b || !bns || !l->weights || !l->bn) {
    st = fail(c, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* Without a Conv the layer is an identity depthwise 1x1. */
  for (uint32_t i = 0; i < l->weight_bytes; ++i) wf[i] = conv ? const_at(conv->w, i) : 1.0f;
  double sw;
  int32_t zw;
  k210_quantize_weights(wf, l->weight_bytes, l->weights, &sw, &zw);
  for (uint32_t oc = 0; oc < l->oc; ++oc) {
    double a = 1, shift = 0, bias = conv && conv->b ? const_at(conv->b, oc) : 0.0;
    if (bn) {
      a = const_at(bn->bn_scale, oc) / sqrt((double)const_at(bn->bn_var, oc) + bn->epsilon);
      shift = const_at(bn->bn_bias, oc) - const_at(bn->bn_mean, oc) * a;
    }
    m[oc] = a * sx * sw;
    b[oc] = a * bias + shift;
  }
  /* The pre-activation range: what feeds the activation, or the pool, or the
   * output, as calibrated. */
  const axle_hal_tensor_t* pre = l->has[K210_ROLE_ACT] ? l->op[K210_ROLE_ACT].x
                                 : l->has[K210_ROLE_POOL] ? l->op[K210_ROLE_POOL].x
                                                          : y;
  double lo, hi, s_v;
  k210_tensor_range(pre, &lo, &hi);
  k210_fit_batchnorm(m, b, l->oc, fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi), bns, &s_v);
  for (uint32_t oc = 0; oc < l->oc; ++oc) k210_bn_encode(&bns[oc], l->bn + (size_t)K210_BN_BYTES * oc);
  k210_act_fn_t identity = {K210_ACT_IDENTITY, 0, 0};
  const k210_act_fn_t* f = l->has[K210_ROLE_ACT] ? &l->op[K210_ROLE_ACT].act : &identity;
  k210_act_table_t table;
  double err = k210_fit_activation(f, s_v, lo, hi, l->out_scale, l->out_zp, &table);
  if (!k210_act_encode(&table, l->act)) st = fail(c, AXLE_HAL_INTERNAL, "layer '%s': activation table does not encode", l->label);
  note(c, "k210: layer '%s': %ux%u %sconv %u->%u, %ux%u -> %ux%u, pool %u; activation fit max error %.3f LSB "
          "over [%g, %g]",
       l->label, l->ksize, l->ksize, l->depthwise ? "depthwise " : "", l->c, l->oc, l->h, l->w, l->oh, l->ow,
       l->pool_type, err, lo, hi);

  k210_layer_t w;
  memset(&w, 0, sizeof(w));
  const map_t* in = &c->maps[l->in_map];
  const map_t* out = &c->maps[l->out_map];
  k210_fmap_t fi = k210_fmap_for_shape(in->base, l->w, l->h, l->c);
  k210_fmap_t fo = k210_fmap_for_shape(out->base, l->ow, l->oh, l->oc);
  uint32_t per_load = 131071 / taps < l->oc ? 131071 / taps : l->oc;
  w.depth_wise_layer = l->depthwise;
  w.image_src_addr = fi.base_row;
  w.image_dst_addr = fo.base_row;
  w.i_ch_num = l->c - 1;
  w.o_ch_num = l->oc - 1;
  w.o_ch_num_coef = per_load - 1;
  w.i_row_wid = l->w - 1;
  w.i_col_high = l->h - 1;
  w.o_row_wid = l->ow - 1;
  w.o_col_high = l->oh - 1;
  w.kernel_type = l->ksize == 3 ? K210_KERNEL_3X3 : K210_KERNEL_1X1;
  w.pool_type = l->pool_type;
  w.load_para = 1;
  w.dma_burst_size = 15;
  w.pad_value = zx;
  w.load_coor = 1;
  w.load_time = (l->oc + per_load - 1) / per_load - 1;
  w.para_size = (int64_t)per_load * taps;
  w.channel_switch_addr = fi.channel_switch;
  w.row_switch_addr = fi.row_switch;
  w.coef_group = fi.groups;
  w.load_act = 1;
  w.wb_channel_switch_addr = fo.channel_switch;
  w.wb_row_switch_addr = fo.row_switch;
  w.wb_group = fo.groups;
  /* Zero points folded into the accumulator: sum((qx - zx)(qw - zw)). */
  w.arg_x = -zw;
  w.arg_w = -zx;
  w.arg_add = (int64_t)l->ksize * l->ksize * zx * zw;
  if ((uint64_t)l->oh * l->ow <= 65536) {
    w.channel_byte_num = (int64_t)l->oh * l->ow - 1;
    w.dma_total_byte = (int64_t)l->oh * l->ow * l->oc - 1;
  }
  const char* bad = k210_layer_encode(&w, l->words);
  if (bad && st == AXLE_HAL_OK) st = fail(c, AXLE_HAL_INTERNAL, "layer '%s': field %s does not fit", l->label, bad);
done:
  free(wf);
  free(m);
  free(b);
  free(bns);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Output.                                                                   */
/* ------------------------------------------------------------------------ */

static int32_t location(compiler_t* c, int32_t tensor, k210_io_t* io) {
  const axle_hal_subgraph_t* sg = c->sg;
  for (uint32_t i = 0; i < sg->location_count; ++i)
    if (sg->locations[i].tensor == tensor) {
      if (sg->locations[i].slot >= sg->slot_count) break;
      io->slot = sg->locations[i].slot;
      io->offset = sg->locations[i].offset;
      return AXLE_HAL_OK;
    }
  return fail(c, AXLE_HAL_INVALID_ARGUMENT, "tensor '%s' has no location in the subgraph", c->g->tensors[tensor].name);
}

static void io_from_tensor(const axle_hal_tensor_t* t, k210_io_t* io) {
  snprintf(io->name, sizeof(io->name), "%s", t->name);
  io->dtype = AXLE_HAL_DTYPE_F32;
  io->rank = t->rank;
  memcpy(io->shape, t->shape, sizeof(io->shape));
}

static int32_t emit(compiler_t* c, int32_t input_tensor, uint32_t main_bytes, uint8_t** out, size_t* out_size) {
  uint32_t outputs = 0, count = 0;
  for (uint32_t i = 0; i < c->layer_count; ++i) {
    outputs += (uint32_t)c->layers[i].main_out;
    count += 1 + (uint32_t)c->layers[i].main_out + (uint32_t)c->layers[i].reupload;
  }
  k210_kw_layer_t* kl = (k210_kw_layer_t*)calloc(count, sizeof(*kl));
  k210_io_t* io = (k210_io_t*)calloc(1 + outputs, sizeof(*io));
  uint32_t* addr = (uint32_t*)calloc(outputs + 1, sizeof(uint32_t));
  uint32_t* size = (uint32_t*)calloc(outputs + 1, sizeof(uint32_t));
  int32_t st = AXLE_HAL_OK;
  if (!kl || !io || !addr || !size) st = fail(c, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  const axle_hal_tensor_t* x = &c->g->tensors[input_tensor];
  if (st == AXLE_HAL_OK) {
    io_from_tensor(x, &io[0]);
    io[0].quantized = 1;
    io[0].scale = (float)qscale(x);
    io[0].zero_point = qzero(x);
    st = location(c, input_tensor, &io[0]);
  }
  uint32_t k = 0, o = 0, min_row = K210_RAM_ROWS;
  for (uint32_t m = 0; m < c->map_count; ++m)
    if (c->maps[m].base < min_row) min_row = c->maps[m].base;
  for (uint32_t i = 0; st == AXLE_HAL_OK && i < c->layer_count; ++i) {
    const layer_t* l = &c->layers[i];
    k210_kw_layer_t* conv = &kl[k++];
    conv->type = K210_KL_K210_CONV;
    conv->flags = l->main_out ? K210_KLF_MAIN_MEM_OUT : 0;
    conv->main_out = l->main_u8;
    memcpy(conv->words, l->words, sizeof(conv->words));
    conv->weights = l->weights;
    conv->weight_bytes = l->weight_bytes;
    conv->bn = l->bn;
    conv->bn_bytes = K210_BN_BYTES * l->oc;
    conv->act = l->act;
    if (!l->main_out) continue;
    const axle_hal_tensor_t* y = &c->g->tensors[l->out_t];
    uint32_t n = l->oc * l->oh * l->ow;
    float scale = (float)l->out_scale, bias = (float)(-l->out_zp * l->out_scale);
    k210_kw_layer_t* dq = &kl[k++];
    dq->type = K210_KL_DEQUANTIZE;
    dq->arg_count = 6;
    uint32_t args[6] = {0, l->main_u8, l->main_f32, n, 0, 0};
    memcpy(&args[4], &scale, 4);
    memcpy(&args[5], &bias, 4);
    memcpy(dq->args, args, sizeof(args));
    if (l->reupload) {
      /* The later layers read it from KPU RAM: put it back from main memory
       * rather than rely on the KPU also writing rows it streams out. */
      k210_kw_layer_t* up = &kl[k++];
      up->type = K210_KL_K210_UPLOAD;
      up->arg_count = 6;
      uint32_t uargs[6] = {0, l->main_u8, c->maps[l->out_map].base, l->ow, l->oh, l->oc};
      memcpy(up->args, uargs, sizeof(uargs));
    }
    addr[o] = l->main_f32;
    size[o] = 4 * n;
    io_from_tensor(y, &io[1 + o]);
    st = location(c, l->out_t, &io[1 + o]);
    ++o;
  }
  if (st == AXLE_HAL_OK) {
    k210_kw_model_t model = {min_row, main_bytes, outputs, addr, size, count, kl, io, c->sg->slot_count};
    if (!k210_kmodel_write(&model, out, out_size)) st = fail(c, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  }
  free(kl);
  free(io);
  free(addr);
  free(size);
  return st;
}

int32_t k210_compile(const axle_hal_subgraph_t* sg, uint32_t flags, const k210_compile_log_t* log,
                     uint8_t** out, size_t* out_size, char* why, size_t why_size) {
  *out = NULL;
  *out_size = 0;
  const axle_hal_graph_t* g = sg->graph;
  compiler_t c = {sg, g, log, why, why_size, NULL, 0, NULL, 0, NULL,
                  (flags & AXLE_HAL_COMPILE_KEEP_INTERMEDIATES) != 0};
  if (sg->node_count == 0) return fail(&c, AXLE_HAL_INVALID_ARGUMENT, "empty subgraph");
  c.layers = (layer_t*)calloc(sg->node_count, sizeof(layer_t));
  c.maps = (map_t*)calloc(2 * (size_t)sg->node_count, sizeof(map_t));
  c.in_sg = (uint8_t*)calloc(g->node_count, 1);
  uint8_t* taken = (uint8_t*)calloc(g->node_count, 1);
  int32_t st = AXLE_HAL_OK;
  if (!c.layers || !c.maps || !c.in_sg || !taken) st = fail(&c, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  for (uint32_t k = 0; st == AXLE_HAL_OK && k < sg->node_count; ++k) {
    if (sg->nodes[k] >= g->node_count) st = fail(&c, AXLE_HAL_INVALID_ARGUMENT, "node index %u out of range", sg->nodes[k]);
    else c.in_sg[sg->nodes[k]] = 1;
  }
  if (st == AXLE_HAL_OK) st = fuse(&c, taken);
  for (uint32_t i = 0; st == AXLE_HAL_OK && i < c.layer_count; ++i) layer_shape(&c.layers[i], g);
  int32_t input_tensor = -1;
  uint32_t main_bytes = 0;
  if (st == AXLE_HAL_OK) st = plan_memory(&c, &input_tensor, &main_bytes);
  for (uint32_t i = 0; st == AXLE_HAL_OK && i < c.layer_count; ++i) st = build_params(&c, &c.layers[i]);
  if (st == AXLE_HAL_OK) st = emit(&c, input_tensor, main_bytes, out, out_size);
  for (uint32_t i = 0; c.layers && i < c.layer_count; ++i) {
    free(c.layers[i].weights);
    free(c.layers[i].bn);
  }
  free(c.layers);
  free(c.maps);
  free(c.in_sg);
  free(taken);
  return st;
}
