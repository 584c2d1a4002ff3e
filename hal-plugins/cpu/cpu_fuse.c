/* Fusion planning and the private arena planner (see cpu_fuse.h). */
#include "cpu_fuse.h"

#include "cpu_chain.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cpu_fuse_is_op(const axle_hal_node_t* n, const char* op) {
  return (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) &&
         strcmp(n->op_type, op) == 0;
}

static const axle_hal_tensor_t* tensor_at(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                          uint32_t i) {
  return i < n->input_count && n->inputs[i] >= 0 ? &g->tensors[n->inputs[i]] : NULL;
}

int cpu_fuse_constant(const axle_hal_tensor_t* t) {
  return t && (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data;
}

int cpu_fuse_same_dims(const axle_hal_tensor_t* a, const axle_hal_tensor_t* b) {
  if (a->rank != b->rank) return 0;
  for (uint32_t i = 0; i < a->rank; ++i)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

static int same_shape(const axle_hal_tensor_t* a, const axle_hal_tensor_t* b) {
  return a->dtype == b->dtype && cpu_fuse_same_dims(a, b);
}

static const axle_hal_attr_t* attr(const axle_hal_node_t* n, const char* name, int32_t type) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == type ? a : NULL;
}

/* A constant scalar bound of Clip (opset >= 11 input), or the default. */
static int clip_bound(const axle_hal_graph_t* g, const axle_hal_node_t* n, uint32_t i,
                      float dflt, float* v) {
  const axle_hal_tensor_t* t = tensor_at(g, n, i);
  if (!t) {
    *v = dflt;
    return 1;
  }
  if (!cpu_fuse_constant(t) || t->dtype != AXLE_HAL_DTYPE_F32 || axle_hal_tensor_elements(t) != 1)
    return 0;
  *v = *(const float*)t->data;
  return 1;
}

int cpu_fuse_activation(const axle_hal_graph_t* g, const axle_hal_node_t* n, cpu_fusion_t* f) {
  if (n->output_count != 1) return 0;
  if (cpu_fuse_is_op(n, "Relu") && n->input_count == 1) {
    f->act = CPU_ACT_CLAMP;
    f->min = 0.0f;
    f->max = INFINITY;
    return 1;
  }
  if (cpu_fuse_is_op(n, "LeakyRelu") && n->input_count == 1) {
    const axle_hal_attr_t* a = attr(n, "alpha", AXLE_HAL_ATTR_FLOAT);
    f->act = CPU_ACT_LEAKY;
    f->alpha = a ? a->f : 0.01f;
    return 1;
  }
  if (cpu_fuse_is_op(n, "Clip")) {
    float lo, hi;
    if (g->opset > 0 && g->opset < 11) {
      const axle_hal_attr_t* a = attr(n, "min", AXLE_HAL_ATTR_FLOAT);
      const axle_hal_attr_t* b = attr(n, "max", AXLE_HAL_ATTR_FLOAT);
      lo = a ? a->f : -FLT_MAX;
      hi = b ? b->f : FLT_MAX;
    } else if (n->input_count > 3 || !clip_bound(g, n, 1, -INFINITY, &lo) ||
               !clip_bound(g, n, 2, INFINITY, &hi)) {
      return 0;
    }
    /* NaN bounds or min > max have their own ONNX semantics; keep them on
     * the elementwise op. */
    if (isnan(lo) || isnan(hi) || lo > hi) return 0;
    f->act = CPU_ACT_CLAMP;
    f->min = lo;
    f->max = hi;
    return 1;
  }
  return 0;
}

/* Batch normalisation the Conv can absorb: inference form, constant
 * statistics shaped [channels]. */
static int foldable_bn(const axle_hal_graph_t* g, const axle_hal_node_t* n, int64_t channels) {
  if (!cpu_fuse_is_op(n, "BatchNormalization") || n->input_count != 5) return 0;
  for (uint32_t i = 1; i < n->output_count; ++i)
    if (n->outputs[i] >= 0) return 0;
  const axle_hal_attr_t* tm = attr(n, "training_mode", AXLE_HAL_ATTR_INT);
  const axle_hal_attr_t* sp = attr(n, "spatial", AXLE_HAL_ATTR_INT);
  if ((tm && tm->i != 0) || (sp && sp->i != 1)) return 0;
  for (uint32_t i = 1; i < 5; ++i) {
    const axle_hal_tensor_t* t = tensor_at(g, n, i);
    if (!cpu_fuse_constant(t) || t->dtype != AXLE_HAL_DTYPE_F32 || t->rank != 1 ||
        t->shape[0] != channels)
      return 0;
  }
  return 1;
}

int32_t cpu_fuse_sole_reader(const cpu_fuse_ctx_t* c, int32_t t, uint32_t after) {
  if (t < 0 || c->uses[t] != 1) return -1;
  if (c->g->tensors[t].flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT) return -1;
  const int32_t pos = c->position[c->consumer[t]];
  return pos > (int32_t)after ? pos : -1;
}

/* Whether the group may run at position `to` instead of `from`: every
 * position strictly between writes only internal tensors (re-planned around
 * the group's inputs); a tensor with a core location could overlap them. */
int cpu_fuse_may_delay(const cpu_fuse_ctx_t* c, const uint8_t* internal, uint32_t from,
                       uint32_t to) {
  for (uint32_t p = from + 1; p < to; ++p) {
    const axle_hal_node_t* n = &c->g->nodes[c->sg->nodes[p]];
    for (uint32_t o = 0; o < n->output_count; ++o)
      if (n->outputs[o] >= 0 && !internal[n->outputs[o]]) return 0;
  }
  return 1;
}

/* Whether two tensors with core locations share bytes. */
static int overlap(const cpu_fuse_ctx_t* c, int32_t a, int32_t b) {
  const int32_t la = c->location[a], lb = c->location[b];
  if (la < 0 || lb < 0) return 0;
  const axle_hal_tensor_location_t* x = &c->sg->locations[la];
  const axle_hal_tensor_location_t* y = &c->sg->locations[lb];
  return x->slot == y->slot && x->offset < y->offset + c->g->tensors[b].size_bytes &&
         y->offset < x->offset + c->g->tensors[a].size_bytes;
}

/* A group writing a tensor with a core location at its last member's
 * position must not clobber an input that the core's plan let that
 * location reuse (it expected the input dead by then). */
int cpu_fuse_output_safe(const cpu_fuse_ctx_t* c, const uint8_t* internal,
                         const cpu_group_t* grp) {
  if (internal[grp->output]) return 1;
  for (uint32_t i = 0; i < grp->input_count; ++i) {
    const int32_t x = grp->inputs[i];
    if (x >= 0 && !internal[x] && overlap(c, grp->output, x)) return 0;
  }
  return 1;
}

int cpu_fuse_conv_packable(const axle_hal_graph_t* g, const axle_hal_node_t* conv) {
  /* Folding and packing happen at compile time: the weights must be known. */
  if (conv->output_count != 1 || conv->outputs[0] < 0 ||
      !cpu_fuse_constant(tensor_at(g, conv, 1)) ||
      (tensor_at(g, conv, 2) && !cpu_fuse_constant(tensor_at(g, conv, 2))))
    return 0;
  const axle_hal_tensor_t* y = &g->tensors[conv->outputs[0]];
  return y->dtype == AXLE_HAL_DTYPE_F32 && y->rank >= 2;
}

static void grow_group(const cpu_fuse_ctx_t* c, const uint8_t* internal, const int32_t* role,
                       uint32_t head, cpu_group_t* grp) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_node_t* conv = &g->nodes[c->sg->nodes[head]];
  memset(grp, 0, sizeof *grp);
  grp->kind = CPU_GROUP_CONV;
  grp->members[0] = head;
  grp->count = 1;
  grp->fusion.residual = -1;
  /* Step operands {x, w, bias, residual}. */
  grp->input_count = 4;
  for (uint32_t j = 0; j < 3; ++j) grp->inputs[j] = j < conv->input_count ? conv->inputs[j] : -1;
  grp->inputs[3] = -1;
  if (!cpu_fuse_conv_packable(g, conv)) return;
  int32_t cur = conv->outputs[0];
  grp->output = cur;
  const axle_hal_tensor_t* y = &g->tensors[cur];
  int stage = 0; /* 0: BN next allowed, 1: Add allowed, 2: activation allowed */
  while (grp->count < CPU_FUSE_MAX_MEMBERS) {
    const uint32_t last = grp->members[grp->count - 1];
    const int32_t pos = cpu_fuse_sole_reader(c, cur, last);
    if (pos < 0 || role[pos] != CPU_ROLE_PLAIN) return;
    const axle_hal_node_t* n = &g->nodes[c->sg->nodes[pos]];
    if (n->output_count != 1 || n->outputs[0] < 0 || !same_shape(&g->tensors[n->outputs[0]], y))
      return;
    if (!cpu_fuse_may_delay(c, internal, last, (uint32_t)pos)) return;
    cpu_fusion_t f = grp->fusion;
    if (stage == 0 && foldable_bn(g, n, y->shape[1]) && n->inputs[0] == cur) {
      f.bn = n;
      stage = 1;
    } else if (stage <= 1 && cpu_fuse_is_op(n, "Add") && n->input_count == 2) {
      const int32_t other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
      if (other < 0 || other == cur || !same_shape(&g->tensors[other], y)) return;
      f.residual = other;
      grp->inputs[3] = other;
      stage = 2;
    } else if (n->inputs[0] == cur && cpu_fuse_activation(g, n, &f)) {
      stage = 3;
    } else {
      return;
    }
    grp->fusion = f;
    grp->position = (uint32_t)pos;
    grp->members[grp->count++] = (uint32_t)pos;
    cur = n->outputs[0];
    grp->output = cur;
    if (stage == 3) return;
  }
}

/* The plan over allocated tables (cpu_fuse_plan owns and frees them):
 * readers and writers, locations, internal tensors, then the groups. */
static int32_t plan_groups(cpu_fuse_ctx_t* c, int keep_intermediates, uint8_t* slot0,
                           uint8_t* foreign, cpu_fuse_result_t* out) {
  const axle_hal_subgraph_t* sg = c->sg;
  const axle_hal_graph_t* g = c->g;
  for (uint32_t i = 0; i < g->node_count; ++i) c->position[i] = -1;
  for (uint32_t p = 0; p < sg->node_count; ++p) c->position[sg->nodes[p]] = (int32_t)p;
  for (uint32_t t = 0; t < g->tensor_count; ++t) c->writer_pos[t] = -1;
  /* Readers and writers over the whole graph: a tensor any node outside the
   * partition touches is foreign. */
  for (uint32_t i = 0; i < g->node_count; ++i) {
    const axle_hal_node_t* n = &g->nodes[i];
    const int outside = c->position[i] < 0;
    for (uint32_t j = 0; j < n->input_count; ++j) {
      const int32_t t = n->inputs[j];
      if (t < 0 || (uint32_t)t >= g->tensor_count) continue;
      ++c->uses[t];
      c->consumer[t] = (int32_t)i;
      if (outside) foreign[t] = 1;
    }
    for (uint32_t j = 0; j < n->output_count; ++j) {
      const int32_t t = n->outputs[j];
      if (t < 0 || (uint32_t)t >= g->tensor_count) continue;
      if (outside) foreign[t] = 1;
      else
        c->writer_pos[t] = c->position[i];
    }
  }
  for (uint32_t t = 0; t < g->tensor_count; ++t) c->location[t] = -1;
  for (uint32_t i = 0; i < sg->location_count; ++i) {
    const int32_t t = sg->locations[i].tensor;
    if (t < 0 || (uint32_t)t >= g->tensor_count) continue;
    c->location[t] = (int32_t)i;
    if (sg->locations[i].slot == 0) slot0[t] = 1;
  }
  for (uint32_t t = 0; t < g->tensor_count; ++t) {
    const uint32_t f = g->tensors[t].flags;
    out->internal[t] = slot0[t] && !foreign[t] && c->writer_pos[t] >= 0 &&
                       !(f & (AXLE_HAL_TENSOR_CONSTANT | AXLE_HAL_TENSOR_GRAPH_INPUT |
                              AXLE_HAL_TENSOR_GRAPH_OUTPUT));
  }
  for (uint32_t p = 0; p < sg->node_count; ++p) out->role[p] = CPU_ROLE_PLAIN;
  /* AXLE_CPU_FUSION=0 compiles every node on its own: a diagnostic switch
   * for telling a fusion problem from a kernel problem. */
  const char* env = getenv("AXLE_CPU_FUSION");
  const int enabled = (!env || strcmp(env, "0") != 0) && !keep_intermediates;
  /* Integer QDQ patterns first: their Convs are no float Conv chains. */
  if (enabled) cpu_qdq_plan(c, out);
  for (uint32_t p = 0; enabled && p < sg->node_count; ++p) {
    if (out->role[p] != CPU_ROLE_PLAIN || !cpu_fuse_is_op(&g->nodes[sg->nodes[p]], "Conv"))
      continue;
    cpu_group_t grp;
    grow_group(c, out->internal, out->role, p, &grp);
    if (grp.count < 2 || !cpu_fuse_output_safe(c, out->internal, &grp)) continue;
    for (uint32_t m = 0; m + 1 < grp.count; ++m) out->role[grp.members[m]] = CPU_ROLE_ABSORBED;
    out->role[grp.position] = (int32_t)out->group_count;
    out->groups[out->group_count++] = grp;
  }
  return enabled ? cpu_chain_plan(c, out) : AXLE_HAL_OK;
}

int32_t cpu_fuse_plan(const axle_hal_subgraph_t* sg, int keep_intermediates, uint32_t threads,
                      cpu_fuse_result_t* out) {
  memset(out, 0, sizeof *out);
  const axle_hal_graph_t* g = sg->graph;
  cpu_fuse_ctx_t c = {sg, g, NULL, NULL, NULL, NULL, NULL, threads};
  c.uses = calloc(g->tensor_count + 1, sizeof *c.uses);
  c.consumer = calloc(g->tensor_count + 1, sizeof *c.consumer);
  c.writer_pos = malloc((g->tensor_count + 1) * sizeof *c.writer_pos);
  c.position = malloc((g->node_count + 1) * sizeof *c.position);
  c.location = malloc((g->tensor_count + 1) * sizeof *c.location);
  out->role = malloc((sg->node_count + 1) * sizeof *out->role);
  out->internal = calloc(g->tensor_count + 1, 1);
  out->groups = malloc((sg->node_count + 1) * sizeof *out->groups);
  uint8_t* slot0 = calloc(g->tensor_count + 1, 1);
  uint8_t* foreign = calloc(g->tensor_count + 1, 1);
  int32_t st = AXLE_HAL_OUT_OF_MEMORY;
  if (c.uses && c.consumer && c.writer_pos && c.position && c.location && out->role &&
      out->internal && out->groups && slot0 && foreign)
    st = plan_groups(&c, keep_intermediates, slot0, foreign, out);
  free(c.uses);
  free(c.consumer);
  free(c.writer_pos);
  free(c.position);
  free(c.location);
  free(slot0);
  free(foreign);
  if (st != AXLE_HAL_OK) cpu_fuse_free(out);
  return st;
}

void cpu_fuse_free(cpu_fuse_result_t* r) {
  free(r->groups);
  free(r->role);
  free(r->internal);
  memset(r, 0, sizeof *r);
}

typedef struct plan_item_t {
  uint64_t size;
  uint32_t first, last, index;
} plan_item_t;

static int by_size_desc(const void* a, const void* b) {
  const plan_item_t* x = a;
  const plan_item_t* y = b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->first < y->first ? -1 : x->first > y->first;
}

uint64_t cpu_plan_offsets(uint32_t count, const uint64_t* size, const uint32_t* first,
                          const uint32_t* last, uint64_t align, uint64_t* offset) {
  plan_item_t* items = malloc((count + 1) * sizeof *items);
  uint32_t* placed = malloc((count + 1) * sizeof *placed);
  uint64_t peak = 0;
  if (!items || !placed) {
    /* No scratch to plan with: no reuse, still correct. */
    for (uint32_t i = 0; i < count; ++i) {
      offset[i] = peak;
      peak += (size[i] + align - 1) / align * align;
    }
    free(items);
    free(placed);
    return peak;
  }
  for (uint32_t i = 0; i < count; ++i)
    items[i] = (plan_item_t){(size[i] + align - 1) / align * align, first[i], last[i], i};
  qsort(items, count, sizeof *items, by_size_desc);
  uint32_t n_placed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    plan_item_t* it = &items[i];
    /* placed[] is kept sorted by offset, so the first fitting gap is found
     * in one pass over the items alive at the same time. */
    uint64_t at = 0;
    uint32_t ins = n_placed;
    for (uint32_t j = 0; j < n_placed; ++j) {
      const plan_item_t* o = &items[placed[j]];
      if (o->last < it->first || o->first > it->last) continue;
      const uint64_t o_off = offset[o->index];
      if (at + it->size <= o_off) break;
      if (o_off + o->size > at) at = o_off + o->size;
    }
    offset[it->index] = at;
    if (at + it->size > peak) peak = at + it->size;
    for (ins = 0; ins < n_placed && offset[items[placed[ins]].index] <= at; ++ins) {
    }
    memmove(placed + ins + 1, placed + ins, (n_placed - ins) * sizeof *placed);
    placed[ins] = i;
    ++n_placed;
  }
  free(items);
  free(placed);
  return peak;
}
