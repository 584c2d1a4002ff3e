#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "tensor.h"

/* ---- options ------------------------------------------------------------ */

static axle_status_t add_dev(axle_session_t* s, axle_device_t* d, uint32_t* out_index) {
  for (uint32_t i = 0; i < s->dev_count; ++i)
    if (s->devs[i] == d) {
      *out_index = i;
      return AXLE_OK;
    }
  axle_device_t** grown = (axle_device_t**)realloc(s->devs, (s->dev_count + 1) * sizeof(*grown));
  if (!grown) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  s->devs = grown;
  *out_index = s->dev_count;
  s->devs[s->dev_count++] = d;
  return AXLE_OK;
}

int32_t axle_session_find_input(const axle_graph_t* g, const char* name) {
  for (uint32_t i = 0; i < g->input_count; ++i)
    if (strcmp(g->tensors[g->inputs[i]].name, name) == 0) return (int32_t)i;
  return -1;
}

axle_status_t axle_session_unknown_input(const axle_graph_t* g, const char* name) {
  char known[512] = "";
  size_t at = 0;
  for (uint32_t i = 0; i < g->input_count && at < sizeof(known); ++i)
    at += (size_t)snprintf(known + at, sizeof(known) - at, "%s'%s'", i ? ", " : "",
                           g->tensors[g->inputs[i]].name);
  return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s: the model has no input '%s' (inputs: %s)",
                          g->source, name, g->input_count ? known : "none");
}

static void remove_input(axle_graph_t* g, uint32_t index) {
  g->tensors[g->inputs[index]].flags &= ~AXLE_HAL_TENSOR_GRAPH_INPUT;
  memmove(&g->inputs[index], &g->inputs[index + 1],
          (g->input_count - index - 1) * sizeof(int32_t));
  --g->input_count;
}

static axle_status_t apply_constant_inputs(axle_session_t* s, const axle_session_options_t* o) {
  axle_graph_t* g = &s->graph;
  for (uint32_t i = 0; i < o->constant_input_count; ++i) {
    const char* name = o->constant_input_names ? o->constant_input_names[i] : NULL;
    axle_tensor_t* v = o->constant_inputs ? o->constant_inputs[i] : NULL;
    if (!name || !v)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "constant input %u has no name or value", i);
    int32_t idx = axle_session_find_input(g, name);
    if (idx < 0) return axle_session_unknown_input(g, name);
    axle_hal_tensor_t* t = &g->tensors[g->inputs[idx]];
    if ((int32_t)v->dtype != t->dtype)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "%s: constant input '%s' is %s but the model declares %s", g->source,
                              name, axle_dtype_name(v->dtype), axle_dtype_name((axle_dtype_t)t->dtype));
    if (v->rank != t->rank)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "%s: constant input '%s' has rank %u but the model declares %u",
                              g->source, name, v->rank, t->rank);
    for (uint32_t d = 0; d < t->rank; ++d)
      if (t->shape[d] >= 0 && t->shape[d] != v->shape[d])
        return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                                "%s: constant input '%s' dimension %u is %lld, the model declares %lld",
                                g->source, name, d, (long long)v->shape[d], (long long)t->shape[d]);
    const void* src = axle_tensor_data(v);
    if (!src && v->bytes)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "constant input '%s' has no data", name);
    void* data = axle_arena_dup(&g->arena, src, v->bytes, 64);
    if (!data) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(t->shape, v->shape, sizeof(int64_t) * v->rank);
    t->data = data;
    t->size_bytes = v->bytes;
    t->flags |= AXLE_HAL_TENSOR_CONSTANT;
    remove_input(g, (uint32_t)idx);
  }
  return AXLE_OK;
}

static axle_status_t apply_input_shapes(axle_session_t* s, const axle_session_options_t* o) {
  axle_graph_t* g = &s->graph;
  for (uint32_t i = 0; i < o->input_shape_count; ++i) {
    const axle_tensor_info_t* info = &o->input_shapes[i];
    if (!info->name) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "input shape %u has no name", i);
    int32_t idx = axle_session_find_input(g, info->name);
    if (idx < 0) return axle_session_unknown_input(g, info->name);
    axle_hal_tensor_t* t = &g->tensors[g->inputs[idx]];
    if (info->rank != t->rank)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "%s: input '%s' has rank %u, the shape given has rank %u", g->source,
                              info->name, t->rank, info->rank);
    for (uint32_t d = 0; d < t->rank; ++d) {
      if (info->shape[d] < 0 || (t->shape[d] >= 0 && t->shape[d] != info->shape[d]))
        return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                                "%s: input '%s' dimension %u cannot be %lld (model: %lld)",
                                g->source, info->name, d, (long long)info->shape[d],
                                (long long)t->shape[d]);
      t->shape[d] = info->shape[d];
    }
  }
  for (uint32_t i = 0; i < g->input_count; ++i) {
    axle_hal_tensor_t* t = &g->tensors[g->inputs[i]];
    int64_t n;
    size_t bytes;
    for (uint32_t d = 0; d < t->rank; ++d)
      if (t->shape[d] < 0) t->shape[d] = 1; /* symbolic dims default to 1 */
    axle_status_t st = axle_tensor_check_shape((axle_dtype_t)t->dtype, t->rank, t->shape, &n, &bytes);
    if (st != AXLE_OK) return axle_status_annotate(st, "%s: input '%s'", g->source, t->name);
    t->size_bytes = bytes;
  }
  return AXLE_OK;
}

/* ---- constant folding --------------------------------------------------- */

static int node_inputs_constant(const axle_graph_t* g, const axle_hal_node_t* n) {
  for (uint32_t i = 0; i < n->input_count; ++i)
    if (n->inputs[i] >= 0 && !(g->tensors[n->inputs[i]].flags & AXLE_HAL_TENSOR_CONSTANT))
      return 0;
  return 1;
}

static int node_outputs_constant(const axle_graph_t* g, const axle_hal_node_t* n) {
  for (uint32_t i = 0; i < n->output_count; ++i)
    if (n->outputs[i] >= 0 && !(g->tensors[n->outputs[i]].flags & AXLE_HAL_TENSOR_CONSTANT))
      return 0;
  return n->output_count > 0;
}

/* DequantizeLinear never folds: a QDQ pattern must keep its integer
 * weights for the plugins that run it on integer kernels (ONNX Runtime
 * keeps them too). Plugins compute a constant one once when they compile. */
static int node_folds(const axle_hal_node_t* n) {
  return !((!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, "DequantizeLinear") == 0);
}

/* Folding is worth it only for data small enough to keep in the model. */
#define AXLE_FOLD_MAX_BYTES (64u << 20)

/* Runs node n on the CPU device now and turns its outputs into constants.
 * Returns AXLE_OK when folded; any failure just leaves the node to run. */
static axle_status_t fold_node(axle_session_t* s, axle_device_t* cpu, uint32_t n) {
  axle_graph_t* g = &s->graph;
  const axle_hal_node_t* node = &g->nodes[n];
  char reason[256];
  if (cpu->plugin->table->node_supported(cpu->hal, &g->hal, n, reason, sizeof(reason)) != AXLE_HAL_OK)
    return AXLE_STATUS_UNSUPPORTED;
  axle_hal_tensor_location_t locs[16];
  if (node->output_count > 16) return AXLE_STATUS_UNSUPPORTED;
  uint64_t total = 0;
  uint32_t nloc = 0;
  for (uint32_t i = 0; i < node->output_count; ++i) {
    int32_t t = node->outputs[i];
    if (t < 0) continue;
    locs[nloc].tensor = t;
    locs[nloc].slot = 0;
    locs[nloc].offset = total;
    total += (g->tensors[t].size_bytes + 63) & ~(uint64_t)63;
    ++nloc;
  }
  if (total > AXLE_FOLD_MAX_BYTES) return AXLE_STATUS_RESOURCE_EXHAUSTED;
  void* mem = aligned_alloc(64, total ? total : 64);
  if (!mem) return AXLE_STATUS_OUT_OF_MEMORY;
  axle_hal_subgraph_t sub = {sizeof(sub), &g->hal, 1, &n, nloc, locs, 1};
  axle_hal_compile_options_t copts = {sizeof(copts), 1, 0};
  axle_hal_executable_t* exe = NULL;
  axle_status_t st = (axle_status_t)cpu->plugin->table->compile(cpu->hal, &sub, &copts, &exe);
  if (st == AXLE_OK) {
    axle_hal_binding_t binding = {NULL, 0, mem};
    axle_completion_t done;
    axle_completion_init(&done);
    axle_hal_submit_info_t info = {sizeof(info), exe, 1, &binding, &done, NULL, 0, NULL};
    st = (axle_status_t)cpu->plugin->table->submit(cpu->hal, &info);
    if (st == AXLE_OK) {
      axle_completion_wait(&done, 0);
      st = (axle_status_t)done.status;
    }
    axle_completion_destroy(&done);
    cpu->plugin->table->executable_release(exe);
  }
  for (uint32_t i = 0; st == AXLE_OK && i < nloc; ++i) {
    axle_hal_tensor_t* t = &g->tensors[locs[i].tensor];
    void* data = axle_arena_dup(&g->arena, (char*)mem + locs[i].offset, t->size_bytes, 64);
    if (!data) st = AXLE_STATUS_OUT_OF_MEMORY;
    t->data = data;
    t->flags |= AXLE_HAL_TENSOR_CONSTANT;
  }
  free(mem);
  return st;
}

/* Shape inference over every node, folding constant subgraphs on the way so
 * that value-dependent shapes (Shape -> Gather -> Concat -> Reshape) resolve.
 * Marks nodes that need not run. */
static axle_status_t specialise(axle_session_t* s, axle_device_t* cpu, uint8_t* alive) {
  axle_graph_t* g = &s->graph;
  for (uint32_t n = 0; n < g->node_count; ++n) {
    const axle_hal_node_t* node = &g->nodes[n];
    axle_status_t st = axle_shape_infer_node(g, n);
    if (st != AXLE_OK) return axle_status_annotate(st, "%s", g->source);
    alive[n] = 1;
    s->placement[n].dev = -1;
    if (node_outputs_constant(g, node)) {
      alive[n] = 0;
      s->placement[n].state = "folded";
    } else if (cpu && node->input_count > 0 && node_folds(node) &&
               node_inputs_constant(g, node) && fold_node(s, cpu, n) == AXLE_OK) {
      alive[n] = 0;
      s->placement[n].state = "folded";
    }
  }
  axle_status_clear();
  /* Dead-node removal: keep only nodes whose outputs someone needs. */
  uint8_t* needed = (uint8_t*)calloc(g->tensor_count ? g->tensor_count : 1, 1);
  if (!needed) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < g->output_count; ++i) needed[g->outputs[i]] = 1;
  for (uint32_t n = g->node_count; n-- > 0;) {
    if (!alive[n]) continue;
    const axle_hal_node_t* node = &g->nodes[n];
    int used = 0;
    for (uint32_t i = 0; i < node->output_count; ++i)
      if (node->outputs[i] >= 0 && needed[node->outputs[i]]) used = 1;
    if (!used) {
      alive[n] = 0;
      s->placement[n].state = "dead";
      continue;
    }
    for (uint32_t i = 0; i < node->input_count; ++i)
      if (node->inputs[i] >= 0) needed[node->inputs[i]] = 1;
  }
  free(needed);
  return AXLE_OK;
}

/* ---- partitions, locations, memory plan --------------------------------- */

typedef struct value_t {
  uint32_t dev;
  axle_interval_t interval;
} value_t;

typedef struct pending_loc_t {
  int32_t tensor;
  int32_t value;                     /* >= 0: value index; < 0: -(I/O slot) */
} pending_loc_t;

static void free_partitions(axle_session_t* s) {
  for (uint32_t p = 0; p < s->partition_count; ++p) {
    axle_partition_t* part = &s->partitions[p];
    if (part->exe) s->devs[part->dev]->plugin->table->executable_release(part->exe);
    free(part->locations);
    free(part->transfers);
  }
  free(s->partitions);
  s->partitions = NULL;
  s->partition_count = 0;
  free(s->output_copies);
  s->output_copies = NULL;
  s->output_copy_count = 0;
}

static axle_status_t plan_partitions(axle_session_t* s, const int32_t* node_dev) {
  axle_graph_t* g = &s->graph;
  uint32_t nt = g->tensor_count, nd = s->dev_count;
  axle_status_t st = AXLE_OK;

  /* Cut the execution order into runs of one device. */
  uint32_t count = 0;
  for (uint32_t k = 0; k < s->order_count; ++k)
    if (k == 0 || node_dev[s->order[k]] != node_dev[s->order[k - 1]]) ++count;
  s->partitions = (axle_partition_t*)calloc(count ? count : 1, sizeof(axle_partition_t));
  if (!s->partitions) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  for (uint32_t k = 0; k < s->order_count; ++k) {
    if (k == 0 || node_dev[s->order[k]] != node_dev[s->order[k - 1]]) {
      axle_partition_t* p = &s->partitions[s->partition_count++];
      p->dev = (uint32_t)node_dev[s->order[k]];
      p->first_node = k;
    }
    s->partitions[s->partition_count - 1].node_count++;
  }

  int32_t* io_slot = (int32_t*)calloc(nt, sizeof(int32_t));
  int32_t* value_of = (int32_t*)malloc((size_t)nt * nd * sizeof(int32_t));
  int32_t* home = (int32_t*)malloc(nt * sizeof(int32_t));
  uint32_t* stamp = (uint32_t*)calloc(nt, sizeof(uint32_t));
  value_t* values = (value_t*)malloc((size_t)nt * nd * sizeof(value_t));
  pending_loc_t* plocs = (pending_loc_t*)malloc((size_t)nt * sizeof(pending_loc_t));
  uint32_t* value_ids = (uint32_t*)malloc((size_t)nt * nd * sizeof(uint32_t));
  if (!io_slot || !value_of || !home || !stamp || !values || !plocs || !value_ids) {
    st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory planning '%s'", g->source);
    goto done;
  }
  for (size_t i = 0; i < (size_t)nt * nd; ++i) value_of[i] = -1;
  for (uint32_t i = 0; i < nt; ++i) home[i] = -1;
  for (uint32_t j = g->output_count; j-- > 0;) io_slot[g->outputs[j]] = (int32_t)(1 + g->input_count + j);
  for (uint32_t i = 0; i < g->input_count; ++i) io_slot[g->inputs[i]] = (int32_t)(1 + i);
  uint32_t value_count = 0;

  for (uint32_t pi = 0; pi < s->partition_count && st == AXLE_OK; ++pi) {
    axle_partition_t* p = &s->partitions[pi];
    uint32_t nloc = 0;
    for (uint32_t k = p->first_node; k < p->first_node + p->node_count; ++k) {
      const axle_hal_node_t* node = &g->nodes[s->order[k]];
      for (uint32_t side = 0; side < 2; ++side) {
        uint32_t cnt = side ? node->output_count : node->input_count;
        const int32_t* list = side ? node->outputs : node->inputs;
        for (uint32_t i = 0; i < cnt; ++i) {
          int32_t t = list[i];
          if (t < 0 || (g->tensors[t].flags & AXLE_HAL_TENSOR_CONSTANT)) continue;
          int32_t vid = -1;
          if (io_slot[t]) {
            vid = -io_slot[t];
          } else if (side == 1) {
            vid = (int32_t)value_count++;
            values[vid].dev = p->dev;
            values[vid].interval.size = g->tensors[t].size_bytes;
            values[vid].interval.first = values[vid].interval.last = k;
            value_of[(size_t)t * nd + p->dev] = vid;
            home[t] = (int32_t)p->dev;
          } else {
            vid = value_of[(size_t)t * nd + p->dev];
            if (vid < 0) {
              if (home[t] < 0) {
                st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                                      "%s: node '%s' (%s) reads tensor '%s' that nothing produces",
                                      g->source, node->name, node->op_type, g->tensors[t].name);
                break;
              }
              /* A tensor from another device: the core copies it in before
               * this partition starts. */
              int32_t src = value_of[(size_t)t * nd + (uint32_t)home[t]];
              vid = (int32_t)value_count++;
              values[vid].dev = p->dev;
              values[vid].interval.size = g->tensors[t].size_bytes;
              values[vid].interval.first = values[vid].interval.last = p->first_node;
              value_of[(size_t)t * nd + p->dev] = vid;
              if (values[src].interval.last < p->first_node) values[src].interval.last = p->first_node;
              axle_transfer_t* grown = (axle_transfer_t*)realloc(
                  p->transfers, (p->transfer_count + 1) * sizeof(axle_transfer_t));
              if (!grown) {
                st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
              }
              p->transfers = grown;
              axle_transfer_t* tr = &p->transfers[p->transfer_count++];
              tr->src_dev = values[src].dev;
              tr->dst_dev = p->dev;
              tr->src_slot = tr->dst_slot = 0;
              /* Offsets are value ids until planned (resolved below). */
              tr->src_offset = (uint64_t)src;
              tr->dst_offset = (uint64_t)vid;
              tr->bytes = g->tensors[t].size_bytes;
            }
            if (values[vid].interval.last < k) values[vid].interval.last = k;
          }
          if (stamp[t] != pi + 1) {
            stamp[t] = pi + 1;
            plocs[nloc].tensor = t;
            plocs[nloc].value = vid;
            ++nloc;
          }
        }
        if (st != AXLE_OK) break;
      }
      if (st != AXLE_OK) break;
    }
    if (st != AXLE_OK) break;
    p->locations = (axle_hal_tensor_location_t*)malloc((nloc ? nloc : 1) * sizeof(*p->locations));
    if (!p->locations) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      break;
    }
    p->location_count = nloc;
    for (uint32_t i = 0; i < nloc; ++i) {
      p->locations[i].tensor = plocs[i].tensor;
      /* value id stashed in offset until planning; slot says which kind. */
      p->locations[i].slot = plocs[i].value < 0 ? (uint32_t)(-plocs[i].value) : 0;
      p->locations[i].offset = plocs[i].value < 0 ? 0 : (uint64_t)plocs[i].value;
    }
  }
  if (st != AXLE_OK) goto done;

  /* Plan each device's arena. */
  s->planned_peak_bytes = s->unplanned_bytes = 0;
  for (uint32_t d = 0; d < nd; ++d) {
    uint32_t n = 0;
    for (uint32_t v = 0; v < value_count; ++v)
      if (values[v].dev == d) value_ids[n++] = v;
    axle_interval_t* items = (axle_interval_t*)malloc((n ? n : 1) * sizeof(axle_interval_t));
    if (!items) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    for (uint32_t i = 0; i < n; ++i) {
      items[i] = values[value_ids[i]].interval;
      s->unplanned_bytes += items[i].size;
    }
    s->arena_bytes[d] = axle_memory_plan(items, n, 64);
    s->planned_peak_bytes += s->arena_bytes[d];
    for (uint32_t i = 0; i < n; ++i) values[value_ids[i]].interval.offset = items[i].offset;
    free(items);
  }
  for (uint32_t pi = 0; pi < s->partition_count; ++pi) {
    axle_partition_t* p = &s->partitions[pi];
    for (uint32_t i = 0; i < p->location_count; ++i)
      if (p->locations[i].slot == 0)
        p->locations[i].offset = values[p->locations[i].offset].interval.offset;
    for (uint32_t i = 0; i < p->transfer_count; ++i) {
      p->transfers[i].src_offset = values[p->transfers[i].src_offset].interval.offset;
      p->transfers[i].dst_offset = values[p->transfers[i].dst_offset].interval.offset;
    }
  }

  /* Graph outputs no node writes: copied from an input or a constant. */
  for (uint32_t j = 0; j < g->output_count; ++j) {
    int32_t t = g->outputs[j];
    int written = home[t] >= 0 && io_slot[t] == (int32_t)(1 + g->input_count + j);
    if (!written) {
      for (uint32_t k = 0; k < s->order_count && !written; ++k) {
        const axle_hal_node_t* node = &g->nodes[s->order[k]];
        for (uint32_t i = 0; i < node->output_count; ++i)
          if (node->outputs[i] == t && io_slot[t] == (int32_t)(1 + g->input_count + j)) written = 1;
      }
    }
    if (written) continue;
    axle_output_copy_t* grown = (axle_output_copy_t*)realloc(
        s->output_copies, (s->output_copy_count + 1) * sizeof(axle_output_copy_t));
    if (!grown) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    s->output_copies = grown;
    axle_output_copy_t* c = &s->output_copies[s->output_copy_count++];
    c->output = j;
    c->input = (g->tensors[t].flags & AXLE_HAL_TENSOR_GRAPH_INPUT) ? axle_session_find_input(g, g->tensors[t].name) : -1;
    c->constant = g->tensors[t].data;
    c->bytes = g->tensors[t].size_bytes;
    if (c->input < 0 && !c->constant && c->bytes) {
      /* Written by a node into a different slot (duplicate output names). */
      int32_t first = -1;
      for (uint32_t k = 0; k < j; ++k)
        if (g->outputs[k] == t) first = (int32_t)k;
      if (first < 0) {
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: output '%s' is never computed",
                              g->source, g->tensors[t].name);
        goto done;
      }
      c->input = -2 - first; /* copy from an earlier output slot */
    }
  }
done:
  free(io_slot);
  free(value_of);
  free(home);
  free(stamp);
  free(values);
  free(plocs);
  free(value_ids);
  return st;
}

static axle_status_t compile_partition(axle_session_t* s, axle_partition_t* p) {
  axle_device_t* d = s->devs[p->dev];
  axle_hal_subgraph_t sub = {sizeof(sub), &s->graph.hal,    p->node_count, &s->order[p->first_node],
                             p->location_count, p->locations, s->slot_count};
  axle_hal_compile_options_t opts = {sizeof(opts), s->threads, 0};
  axle_status_clear();
  axle_status_t st = (axle_status_t)d->plugin->table->compile(d->hal, &sub, &opts, &p->exe);
  if (st != AXLE_OK) {
    p->exe = NULL;
    return axle_status_annotate(st, "%s: device '%s' cannot compile %u node%s starting at '%s'",
                                d->plugin->name, d->info.name, p->node_count,
                                p->node_count == 1 ? "" : "s",
                                s->graph.nodes[s->order[p->first_node]].name);
  }
  return AXLE_OK;
}

/* Plans and compiles; a partition a non-CPU device fails to compile moves to
 * the CPU (unless strict) and everything is planned again. */
static axle_status_t build(axle_session_t* s, int32_t* node_dev, int32_t cpu_dev) {
  for (;;) {
    free_partitions(s);
    axle_status_t st = plan_partitions(s, node_dev);
    if (st != AXLE_OK) return st;
    uint32_t failed = UINT32_MAX;
    for (uint32_t p = 0; p < s->partition_count && failed == UINT32_MAX; ++p) {
      st = compile_partition(s, &s->partitions[p]);
      if (st != AXLE_OK) failed = p;
    }
    if (failed == UINT32_MAX) return AXLE_OK;
    axle_partition_t* p = &s->partitions[failed];
    if ((s->flags & AXLE_SESSION_STRICT) || cpu_dev < 0 || (int32_t)p->dev == cpu_dev) return st;
    char msg[700];
    snprintf(msg, sizeof(msg), "%s", axle_status_message());
    for (uint32_t k = p->first_node; k < p->first_node + p->node_count; ++k) {
      uint32_t n = s->order[k];
      char reason[256];
      axle_device_t* cpu = s->devs[cpu_dev];
      axle_placement_note(s, n, "compile failed: %s", msg);
      if (cpu->plugin->table->node_supported(cpu->hal, &s->graph.hal, n, reason, sizeof(reason)) !=
          AXLE_HAL_OK)
        return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                                "%s; the CPU cannot take node '%s' (%s) either: %s", msg,
                                s->graph.nodes[n].name, s->graph.nodes[n].op_type, reason);
      node_dev[n] = cpu_dev;
      s->placement[n].state = "fallback";
    }
  }
}

/* ---- native artifacts ---------------------------------------------------- */

/* Builds a session around an executable a plugin loaded from its own file
 * format: one partition, I/O described by the plugin. */
static axle_status_t create_native(axle_session_t* s, const axle_model_t* m, const uint32_t* prefs,
                                   uint32_t pref_count, int explicit_devices) {
  axle_runtime_t* rt = s->runtime;
  axle_hal_executable_t* exe = NULL;
  int32_t dev = -1;
  char tried[512] = "";
  size_t at = 0;
  uint32_t n = explicit_devices ? pref_count : rt->device_count;
  for (uint32_t i = 0; i < n && !exe; ++i) {
    axle_device_t* d = explicit_devices ? s->devs[prefs[i]] : rt->devices[i];
    if (!AXLE_PLUGIN_HAS(d->plugin, artifact_load) || !AXLE_PLUGIN_HAS(d->plugin, executable_describe))
      continue;
    if (at < sizeof(tried))
      at += (size_t)snprintf(tried + at, sizeof(tried) - at, "%s%s", at ? ", " : "", d->info.name);
    axle_status_clear();
    axle_status_t st = (axle_status_t)d->plugin->table->artifact_load(d->hal, m->path, m->data,
                                                                      m->size, &exe);
    if (st == AXLE_STATUS_UNSUPPORTED) {
      exe = NULL;
      continue;
    }
    if (st != AXLE_OK)
      return axle_status_annotate(st, "%s: device '%s'", d->plugin->name, d->info.name);
    uint32_t di = 0;
    st = add_dev(s, d, &di);
    if (st != AXLE_OK) {
      d->plugin->table->executable_release(exe);
      return st;
    }
    dev = (int32_t)di;
  }
  if (!exe)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                            "%s: not an ONNX model (%s) and no device recognises it as a native "
                            "artifact (asked: %s)",
                            m->path, m->onnx_error ? m->onnx_error : "unreadable",
                            at ? tried : "no device can load native artifacts");
  axle_device_t* d = s->devs[dev];
  axle_hal_native_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  axle_status_t st = (axle_status_t)d->plugin->table->executable_describe(exe, &info);
  uint32_t count = info.input_count + info.output_count;
  if (st == AXLE_OK && (count > 4096 || (count && !info.io)))
    st = axle_status_make(AXLE_STATUS_DEVICE_ERROR, "%s: described %u inputs/outputs", d->plugin->name, count);
  axle_graph_t* g = &s->graph;
  if (st == AXLE_OK) {
    g->inputs = (int32_t*)axle_arena_alloc(&g->arena, (info.input_count + 1) * sizeof(int32_t), 4);
    g->outputs = (int32_t*)axle_arena_alloc(&g->arena, (info.output_count + 1) * sizeof(int32_t), 4);
    if (!g->inputs || !g->outputs) st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (uint32_t i = 0; st == AXLE_OK && i < count; ++i) {
    const axle_hal_tensor_t* src = &info.io[i];
    int64_t elements;
    size_t bytes;
    st = axle_tensor_check_shape((axle_dtype_t)src->dtype, src->rank, src->shape, &elements, &bytes);
    if (st != AXLE_OK) {
      st = axle_status_annotate(st, "%s: %s tensor %u '%s'", d->plugin->name,
                                i < info.input_count ? "input" : "output", i, src->name ? src->name : "");
      break;
    }
    char fallback[32];
    snprintf(fallback, sizeof(fallback), "%s%u", i < info.input_count ? "input" : "output",
             i < info.input_count ? i : i - info.input_count);
    int32_t t = axle_graph_add_tensor(g, src->name && src->name[0] ? src->name : fallback);
    if (t < 0) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      break;
    }
    axle_hal_tensor_t* dst = &g->tensors[t];
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->shape, src->shape, sizeof(dst->shape));
    dst->size_bytes = bytes;
    if (i < info.input_count) {
      dst->flags = AXLE_HAL_TENSOR_GRAPH_INPUT;
      g->inputs[g->input_count++] = t;
    } else {
      dst->flags = AXLE_HAL_TENSOR_GRAPH_OUTPUT;
      g->outputs[g->output_count++] = t;
    }
  }
  if (st == AXLE_OK) {
    s->partitions = (axle_partition_t*)calloc(1, sizeof(axle_partition_t));
    if (!s->partitions) st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  if (st != AXLE_OK) {
    d->plugin->table->executable_release(exe);
    return st;
  }
  axle_graph_sync(g);
  s->partitions[0].dev = (uint32_t)dev;
  s->partitions[0].exe = exe;
  s->partition_count = 1;
  s->slot_count = 1 + g->input_count + g->output_count;
  s->arena_bytes[dev] = info.arena_bytes;
  s->planned_peak_bytes = s->unplanned_bytes = info.arena_bytes;
  return AXLE_OK;
}

axle_status_t axle_session_create(axle_runtime_t* rt, axle_model_t* model,
                                  const axle_session_options_t* options,
                                  axle_session_t** out_session) {
  if (!out_session) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  if (!rt || !model) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "runtime and model are required");
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  if (options) {
    if (options->struct_size < sizeof(uint32_t))
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                              "axle_session_options_t.struct_size is not set");
    memcpy(&o, options, options->struct_size < sizeof(o) ? options->struct_size : sizeof(o));
  }
  axle_session_t* s = (axle_session_t*)calloc(1, sizeof(*s));
  if (!s) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  s->runtime = rt;
  s->model = model;
  axle_model_retain(model);
  s->flags = o.flags;
  s->threads = o.threads;
  pthread_mutex_init(&s->ctx_mu, NULL);
  pthread_mutex_init(&s->pending_mu, NULL);
  pthread_cond_init(&s->pending_cv, NULL);
  axle_trace_init(&s->trace);
  axle_graph_init(&s->graph);

  uint32_t prefs[64];
  uint32_t pref_count = 0;
  int32_t* node_dev = NULL;
  uint8_t* alive = NULL;
  axle_status_t st = axle_graph_clone(&model->graph, &s->graph);
  if (st != AXLE_OK) goto fail;

  /* Devices: the preference list, then the CPU as fallback. */
  static const char* const default_devices[] = {"cpu"};
  const char* const* names = o.device_count ? o.devices : default_devices;
  /* Native artifacts without a device list go to whichever device claims
   * them, so the CPU default does not apply. */
  uint32_t name_count = o.device_count ? o.device_count : model->native ? 0 : 1;
  if (name_count > 64 || !names) {
    st = axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "device list is invalid (%u names)", name_count);
    goto fail;
  }
  for (uint32_t i = 0; i < name_count; ++i) {
    uint32_t rt_index = 0, di = 0;
    if (!names[i]) {
      st = axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "device name %u is NULL", i);
      goto fail;
    }
    st = axle_runtime_device_find(rt, names[i], &rt_index);
    if (st != AXLE_OK) goto fail;
    st = add_dev(s, rt->devices[rt_index], &di);
    if (st != AXLE_OK) goto fail;
    prefs[pref_count++] = di;
  }
  if (model->native) {
    s->arena_bytes = (uint64_t*)calloc(rt->device_count + 1, sizeof(uint64_t));
    if (!s->arena_bytes) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
      goto fail;
    }
    st = create_native(s, model, prefs, pref_count, o.device_count > 0);
    if (st != AXLE_OK) goto fail;
    axle_trace_name_track(&s->trace, 0, "session");
    for (uint32_t d = 0; d < s->dev_count; ++d)
      axle_trace_name_track(&s->trace, (int32_t)(1 + d) * 10, s->devs[d]->info.name);
    axle_status_clear();
    *out_session = s;
    return AXLE_OK;
  }
  int32_t cpu_dev = -1;
  axle_device_t* cpu = axle_runtime_cpu_device(rt);
  if (cpu) {
    uint32_t di = 0;
    st = add_dev(s, cpu, &di);
    if (st != AXLE_OK) goto fail;
    cpu_dev = (int32_t)di;
  }
  s->arena_bytes = (uint64_t*)calloc(s->dev_count, sizeof(uint64_t));
  s->placement = (axle_node_placement_t*)calloc(s->graph.node_count + 1, sizeof(axle_node_placement_t));
  node_dev = (int32_t*)malloc((s->graph.node_count + 1) * sizeof(int32_t));
  alive = (uint8_t*)calloc(s->graph.node_count + 1, 1);
  s->order = (uint32_t*)malloc((s->graph.node_count + 1) * sizeof(uint32_t));
  if (!s->arena_bytes || !s->placement || !node_dev || !alive || !s->order) {
    st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }

  st = apply_constant_inputs(s, &o);
  if (st == AXLE_OK) st = apply_input_shapes(s, &o);
  if (st == AXLE_OK) st = specialise(s, cpu, alive);
  if (st != AXLE_OK) goto fail;
  axle_graph_sync(&s->graph);
  for (uint32_t n = 0; n < s->graph.node_count; ++n)
    if (alive[n]) s->order[s->order_count++] = n;
  s->slot_count = 1 + s->graph.input_count + s->graph.output_count;

  if (o.calibration_count) {
    st = axle_session_calibrate(s, cpu, o.calibration_inputs, o.calibration_count);
    if (st != AXLE_OK) goto fail;
  }
  st = axle_placement_run(s, prefs, pref_count, cpu_dev, node_dev);
  if (st == AXLE_OK) st = build(s, node_dev, cpu_dev);
  if (st != AXLE_OK) goto fail;
  for (uint32_t k = 0; k < s->order_count; ++k) s->placement[s->order[k]].dev = node_dev[s->order[k]];

  for (uint32_t d = 0; d < s->dev_count; ++d)
    axle_trace_name_track(&s->trace, (int32_t)(1 + d) * 10, s->devs[d]->info.name);
  axle_trace_name_track(&s->trace, 0, "session");
  free(node_dev);
  free(alive);
  axle_status_clear();
  *out_session = s;
  return AXLE_OK;

fail:
  free(node_dev);
  free(alive);
  axle_session_release(s);
  return st;
}

void axle_session_release(axle_session_t* s) {
  if (!s) return;
  pthread_mutex_lock(&s->pending_mu);
  while (s->pending) pthread_cond_wait(&s->pending_cv, &s->pending_mu);
  pthread_mutex_unlock(&s->pending_mu);
  while (s->free_ctx) {
    axle_exec_ctx_t* c = s->free_ctx;
    axle_exec_ctx_destroy(s, c); /* unlinks c from free_ctx */
  }
  free_partitions(s);
  if (s->placement)
    for (uint32_t n = 0; n < s->graph.node_count; ++n) free(s->placement[n].reasons);
  free(s->placement);
  free(s->order);
  free(s->arena_bytes);
  free(s->devs);
  axle_graph_free(&s->graph);
  axle_model_release(s->model);
  axle_trace_free(&s->trace);
  pthread_mutex_destroy(&s->ctx_mu);
  pthread_mutex_destroy(&s->pending_mu);
  pthread_cond_destroy(&s->pending_cv);
  free(s);
}
