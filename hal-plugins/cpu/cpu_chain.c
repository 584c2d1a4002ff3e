/* Band-by-band chains (inverted-residual blocks, Conv -> MaxPool):
 * planning, prepare and run (see cpu_chain.h). */
#include "cpu_chain.h"

#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"
#include "cpu_fuse.h"
#include "cpu_threadpool.h"

/* ---- planning ------------------------------------------------------------ */

/* One Conv of a chain: its group, or the Conv alone (packable) as a group
 * of one. */
static int conv_unit(const cpu_fuse_ctx_t* c, const cpu_fuse_result_t* out,
                     const int32_t* head_group, uint32_t pos, cpu_group_t* unit) {
  const axle_hal_graph_t* g = c->g;
  const axle_hal_node_t* n = &g->nodes[c->sg->nodes[pos]];
  if (!cpu_fuse_is_op(n, "Conv")) return 0;
  if (head_group[pos] >= 0) {
    *unit = out->groups[head_group[pos]];
    return 1;
  }
  if (out->role[pos] != CPU_ROLE_PLAIN || !cpu_fuse_conv_packable(g, n)) return 0;
  memset(unit, 0, sizeof *unit);
  unit->kind = CPU_GROUP_CONV;
  unit->members[0] = pos;
  unit->count = 1;
  unit->position = pos;
  unit->output = n->outputs[0];
  unit->fusion.residual = -1;
  return 1;
}

/* The Conv reading unit's output as its data input (its only reader). */
static int32_t next_conv(const cpu_fuse_ctx_t* c, const cpu_group_t* unit) {
  const int32_t pos = cpu_fuse_sole_reader(c, unit->output, unit->position);
  if (pos < 0) return -1;
  const axle_hal_node_t* n = &c->g->nodes[c->sg->nodes[pos]];
  return n->input_count > 0 && n->inputs[0] == unit->output ? pos : -1;
}

/* Whether the kernels chain these Convs (geometry from the nodes) on
 * `threads` threads. */
static int kernels_chain(const axle_hal_graph_t* g, const axle_hal_node_t* const conv[3],
                         uint32_t threads) {
  axle_f32_conv_plan_t plan[3];
  for (int i = 0; i < 3; ++i) {
    axle_f32_conv_params_t k;
    char err[200];
    if (cpu_conv_geometry(g, conv[i], &k, err, sizeof err) != AXLE_HAL_OK) return 0;
    axle_f32_conv_plan(&k, &plan[i]);
  }
  return axle_f32_conv_chain_mode(&plan[0], &plan[1], &plan[2], threads) != AXLE_F32_CHAIN_NONE;
}

/* The chain whose expansion Conv is at pos, into grp; used[i]: the group
 * index of stage i (-1: a Conv alone). */
static int chain_at(const cpu_fuse_ctx_t* c, const cpu_fuse_result_t* out,
                    const int32_t* head_group, uint32_t pos, cpu_group_t* grp, int32_t used[3]) {
  cpu_group_t unit[3];
  int32_t at = (int32_t)pos;
  for (int i = 0; i < 3; ++i) {
    if (at < 0 || !conv_unit(c, out, head_group, (uint32_t)at, &unit[i])) return 0;
    /* Only the projection may add a residual. */
    if (i < 2 && unit[i].fusion.residual >= 0) return 0;
    used[i] = head_group[at];
    if (i < 2) at = next_conv(c, &unit[i]);
  }
  const axle_hal_node_t* conv[3];
  for (int i = 0; i < 3; ++i) conv[i] = &c->g->nodes[c->sg->nodes[unit[i].members[0]]];
  if (!cpu_fuse_may_delay(c, out->internal, pos, unit[2].position) ||
      !kernels_chain(c->g, conv, c->threads))
    return 0;
  memset(grp, 0, sizeof *grp);
  grp->kind = CPU_GROUP_CHAIN;
  for (int i = 0; i < 3; ++i) {
    for (uint32_t m = 0; m < unit[i].count; ++m) grp->members[grp->count++] = unit[i].members[m];
    grp->chain.conv[i] = conv[i];
    grp->chain.stage[i] = unit[i].fusion;
  }
  grp->position = unit[2].position;
  grp->inputs[0] = conv[0]->inputs[0];
  grp->inputs[1] = unit[2].fusion.residual;
  grp->input_count = 2;
  grp->output = unit[2].output;
  return cpu_fuse_output_safe(c, out->internal, grp);
}

/* The kernels' plan of a Conv -> MaxPool pair (the pooling per image, as
 * the kernels pool), for planning and prepare alike. On failure *at is the
 * node at fault and err says why. */
static int32_t conv_pool_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* conv,
                                  const axle_hal_node_t* pool, axle_f32_conv_plan_t* plan,
                                  axle_f32_pool_params_t* q, const axle_hal_node_t** at, char* err,
                                  size_t err_size) {
  axle_f32_conv_params_t k;
  *at = conv;
  int32_t st = cpu_conv_geometry(g, conv, &k, err, err_size);
  if (st != AXLE_HAL_OK) return st;
  *at = pool;
  st = cpu_maxpool_geometry(g, pool, q, err, err_size);
  if (st != AXLE_HAL_OK) return st;
  axle_f32_conv_plan(&k, plan);
  q->channels = k.out_channels;
  return AXLE_HAL_OK;
}

/* Whether the kernels pool these in bands. */
static int kernels_pool(const axle_hal_graph_t* g, const axle_hal_node_t* conv,
                        const axle_hal_node_t* pool) {
  axle_f32_conv_plan_t plan;
  axle_f32_pool_params_t q;
  const axle_hal_node_t* at;
  char err[200];
  return conv_pool_geometry(g, conv, pool, &plan, &q, &at, err, sizeof err) == AXLE_HAL_OK &&
         axle_f32_conv_pool_supports(&plan, &q);
}

/* The Conv -> MaxPool chain whose Conv is at pos, into grp; used[0]: the
 * Conv's group index (-1: a Conv alone). The MaxPool must be the Conv's
 * (or its group's) only reader, with no Indices output. */
static int conv_pool_at(const cpu_fuse_ctx_t* c, const cpu_fuse_result_t* out,
                        const int32_t* head_group, uint32_t pos, cpu_group_t* grp,
                        int32_t used[3]) {
  cpu_group_t unit;
  if (!conv_unit(c, out, head_group, pos, &unit) || unit.fusion.residual >= 0) return 0;
  const int32_t at = cpu_fuse_sole_reader(c, unit.output, unit.position);
  if (at < 0 || out->role[at] != CPU_ROLE_PLAIN) return 0;
  const axle_hal_node_t* pool = &c->g->nodes[c->sg->nodes[at]];
  if (!cpu_fuse_is_op(pool, "MaxPool") || pool->input_count < 1 || pool->inputs[0] != unit.output ||
      pool->outputs[0] < 0 || (pool->output_count > 1 && pool->outputs[1] >= 0))
    return 0;
  const axle_hal_node_t* conv = &c->g->nodes[c->sg->nodes[unit.members[0]]];
  if (!cpu_fuse_may_delay(c, out->internal, pos, (uint32_t)at) || !kernels_pool(c->g, conv, pool))
    return 0;
  memset(grp, 0, sizeof *grp);
  grp->kind = CPU_GROUP_CONV_POOL;
  for (uint32_t m = 0; m < unit.count; ++m) grp->members[grp->count++] = unit.members[m];
  grp->members[grp->count++] = (uint32_t)at;
  grp->chain.conv[0] = conv;
  grp->chain.stage[0] = unit.fusion;
  grp->chain.pool = pool;
  grp->position = (uint32_t)at;
  grp->inputs[0] = conv->inputs[0];
  grp->input_count = 1;
  grp->output = pool->outputs[0];
  used[0] = head_group[pos];
  used[1] = used[2] = -1;
  return cpu_fuse_output_safe(c, out->internal, grp);
}

int32_t cpu_chain_plan(const cpu_fuse_ctx_t* c, cpu_fuse_result_t* out) {
  const uint32_t nodes = c->sg->node_count;
  int32_t* head_group = malloc((nodes + 1) * sizeof *head_group);
  uint8_t* dropped = calloc(out->group_count + 1, 1);
  if (!head_group || !dropped) {
    free(head_group);
    free(dropped);
    return AXLE_HAL_OUT_OF_MEMORY;
  }
  for (uint32_t p = 0; p < nodes; ++p) head_group[p] = -1;
  for (uint32_t i = 0; i < out->group_count; ++i)
    if (out->groups[i].kind == CPU_GROUP_CONV) head_group[out->groups[i].members[0]] = (int32_t)i;
  /* Chains go after the groups they replace; every chain spans two
   * positions at least, so the array (room for one group per position)
   * holds them. */
  const uint32_t before = out->group_count;
  for (uint32_t p = 0; p < nodes; ++p) {
    cpu_group_t grp;
    int32_t used[3];
    if (!chain_at(c, out, head_group, p, &grp, used) &&
        !conv_pool_at(c, out, head_group, p, &grp, used))
      continue;
    for (int i = 0; i < 3; ++i)
      if (used[i] >= 0) {
        dropped[used[i]] = 1;
        head_group[out->groups[used[i]].members[0]] = -1;
      }
    for (uint32_t m = 0; m < grp.count; ++m) out->role[grp.members[m]] = CPU_ROLE_ABSORBED;
    out->groups[out->group_count++] = grp;
  }
  /* Drop the replaced groups and renumber the roles. */
  uint32_t kept = 0;
  for (uint32_t i = 0; i < out->group_count; ++i) {
    if (i < before && dropped[i]) continue;
    out->groups[kept] = out->groups[i];
    out->role[out->groups[kept].position] = (int32_t)kept;
    ++kept;
  }
  out->group_count = kept;
  free(head_group);
  free(dropped);
  return AXLE_HAL_OK;
}

/* ---- prepare and run ----------------------------------------------------- */

typedef struct chain_params_t {
  axle_f32_conv_plan_t plan[3];
  axle_f32_conv_chain_t chain; /* points into plan[] and the block's tail */
} chain_params_t;

static int32_t chain_fail(const axle_hal_host_t* host, const axle_hal_node_t* n, int32_t code,
                          const char* what) {
  if (!host || !host->status_make) return code;
  return host->status_make(code, "cpu: node '%s' (%s): %s", n->name, n->op_type, what);
}

static size_t round16(size_t floats) { return (floats + 15) & ~(size_t)15; }

typedef struct conv_pool_params_t {
  axle_f32_conv_plan_t plan;
  axle_f32_conv_pool_t cp; /* points into plan and the block's tail */
} conv_pool_params_t;

static int32_t conv_pool_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                                 const cpu_group_t* grp) {
  const cpu_chain_t* ch = &grp->chain;
  const axle_hal_graph_t* g = step->graph;
  axle_f32_conv_plan_t plan;
  axle_f32_pool_params_t q;
  const axle_hal_node_t* at;
  char err[200];
  const int32_t st = conv_pool_geometry(g, ch->conv[0], ch->pool, &plan, &q, &at, err, sizeof err);
  if (st != AXLE_HAL_OK) return chain_fail(host, at, st, err);
  if (!axle_f32_conv_pool_supports(&plan, &q))
    return chain_fail(host, ch->conv[0], AXLE_HAL_INTERNAL,
                      "planned with its MaxPool as a band step the kernels do not take");
  const size_t floats = round16(cpu_conv_stage_floats(g, ch->conv[0], &ch->stage[0], &plan));
  float* tail = NULL;
  conv_pool_params_t* p = cpu_params_alloc_packed(step, sizeof *p, floats, &tail);
  if (!p) return chain_fail(host, ch->conv[0], AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  p->plan = plan;
  if (cpu_conv_stage_pack(g, ch->conv[0], &ch->stage[0], &p->plan, tail, &p->cp.ep) != AXLE_HAL_OK)
    return chain_fail(host, ch->conv[0], AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  p->cp.conv = &p->plan;
  p->cp.packed = tail;
  p->cp.pool = q;
  axle_f32_conv_pool_init(&p->cp, 0);
  step->scratch_bytes = axle_f32_conv_pool_scratch_size(&p->cp, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void conv_pool_run(const cpu_step_t* step, const void* const* in, void* const* out,
                          void* scratch) {
  const conv_pool_params_t* p = step->params;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  axle_f32_conv_pool(&p->cp, in[0], out[0], scratch, &par);
}

int32_t cpu_chain_prepare(const axle_hal_host_t* host, cpu_step_t* step, const cpu_group_t* grp) {
  if (grp->kind == CPU_GROUP_CONV_POOL) return conv_pool_prepare(host, step, grp);
  const cpu_chain_t* ch = &grp->chain;
  const axle_hal_graph_t* g = step->graph;
  axle_f32_conv_plan_t plan[3];
  size_t floats[3], total = 0;
  for (int i = 0; i < 3; ++i) {
    axle_f32_conv_params_t k;
    char err[200];
    const int32_t st = cpu_conv_geometry(g, ch->conv[i], &k, err, sizeof err);
    if (st != AXLE_HAL_OK) return chain_fail(host, ch->conv[i], st, err);
    axle_f32_conv_plan(&k, &plan[i]);
  }
  const int mode =
      axle_f32_conv_chain_mode(&plan[0], &plan[1], &plan[2], step->threads ? step->threads : 1);
  if (mode == AXLE_F32_CHAIN_NONE)
    return chain_fail(host, ch->conv[0], AXLE_HAL_INTERNAL,
                      "planned as a convolution chain the kernels do not take");
  for (int i = 0; i < 3; ++i) {
    if (mode == AXLE_F32_CHAIN_CHANNELS_LAST) axle_f32_conv_plan_channels_last(&plan[i]);
    floats[i] = round16(cpu_conv_stage_floats(g, ch->conv[i], &ch->stage[i], &plan[i]));
    total += floats[i];
  }
  float* tail = NULL;
  chain_params_t* p = cpu_params_alloc_packed(step, sizeof *p, total, &tail);
  if (!p) return chain_fail(host, ch->conv[0], AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < 3; ++i) {
    p->plan[i] = plan[i];
    if (cpu_conv_stage_pack(g, ch->conv[i], &ch->stage[i], &p->plan[i], tail, &p->chain.ep[i]) !=
        AXLE_HAL_OK)
      return chain_fail(host, ch->conv[i], AXLE_HAL_OUT_OF_MEMORY, "out of memory");
    p->chain.packed[i] = tail;
    tail += floats[i];
  }
  p->chain.expand = &p->plan[0];
  p->chain.dw = &p->plan[1];
  p->chain.project = &p->plan[2];
  p->chain.channels_last = mode == AXLE_F32_CHAIN_CHANNELS_LAST;
  axle_f32_conv_chain_init(&p->chain, 0);
  step->scratch_bytes =
      axle_f32_conv_chain_scratch_size(&p->chain, step->threads ? step->threads : 1);
  return AXLE_HAL_OK;
}

static void chain_run(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  const chain_params_t* p = step->params;
  axle_f32_conv_chain_t chain = p->chain;
  chain.ep[2].residual = step->input_count > 1 ? in[1] : NULL;
  const axle_parallel_t par = cpu_pool_parallel(step->threads);
  axle_f32_conv_chain(&chain, in[0], out[0], scratch, &par);
}

static const cpu_op_t k_chain_op = {"ConvChain", NULL, NULL, chain_run};
static const cpu_op_t k_conv_pool_op = {"ConvPool", NULL, NULL, conv_pool_run};

const cpu_op_t* cpu_chain_op(int32_t kind) {
  return kind == CPU_GROUP_CONV_POOL ? &k_conv_pool_op : &k_chain_op;
}
