#include "graph.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

/* The tensor and node arrays grow while a model loads, so they are malloc'd
 * (realloc keeps indices stable); everything they point at lives in the arena.
 * inputs/outputs are arena arrays: their size is known when they are made. */

void axle_graph_init(axle_graph_t* g) {
  memset(g, 0, sizeof(*g));
  axle_arena_init(&g->arena);
  g->source = "<memory>";
  axle_graph_sync(g);
}

void axle_graph_free(axle_graph_t* g) {
  free(g->tensors);
  free(g->nodes);
  axle_arena_free(&g->arena);
  /* Leaves an empty graph, so a second free (or reuse) is harmless. */
  axle_graph_init(g);
}

void axle_graph_sync(axle_graph_t* g) {
  g->hal.struct_size = sizeof(g->hal);
  g->hal.opset = g->opset;
  g->hal.tensor_count = g->tensor_count;
  g->hal.tensors = g->tensors;
  g->hal.node_count = g->node_count;
  g->hal.nodes = g->nodes;
}

/* Makes room for one more element. Indices are int32_t, so counts stop there. */
static int axle_graph_reserve(void** array, uint32_t* capacity, uint32_t count, size_t elem) {
  if (count < *capacity) return 1;
  if (count >= INT32_MAX) return 0;
  uint32_t cap = *capacity ? *capacity : 16;
  while (cap <= count) cap = cap > INT32_MAX / 2 ? INT32_MAX : cap * 2;
  void* p = realloc(*array, (size_t)cap * elem);
  if (!p) return 0;
  *array = p;
  *capacity = cap;
  return 1;
}

int32_t axle_graph_add_tensor(axle_graph_t* g, const char* name) {
  if (!axle_graph_reserve((void**)&g->tensors, &g->tensor_capacity, g->tensor_count,
                          sizeof(*g->tensors)))
    return -1;
  const char* copy = axle_arena_strdup(&g->arena, name ? name : "");
  if (!copy) return -1;
  axle_hal_tensor_t* t = &g->tensors[g->tensor_count];
  memset(t, 0, sizeof(*t));
  t->name = copy;
  int32_t index = (int32_t)g->tensor_count++;
  axle_graph_sync(g);
  return index;
}

int32_t axle_graph_find_tensor(const axle_graph_t* g, const char* name) {
  if (!name) return -1;
  for (uint32_t i = 0; i < g->tensor_count; ++i)
    if (strcmp(g->tensors[i].name, name) == 0) return (int32_t)i;
  return -1;
}

static int axle_attr_copy(axle_arena_t* a, const axle_hal_attr_t* src, axle_hal_attr_t* dst) {
  *dst = *src;
  dst->name = axle_arena_strdup(a, src->name ? src->name : "");
  if (!dst->name) return 0;
  if (src->s && !(dst->s = axle_arena_strdup(a, src->s))) return 0;
  dst->ints = NULL;
  dst->floats = NULL;
  dst->strings = NULL;
  if (src->type == AXLE_HAL_ATTR_INTS && src->count) {
    dst->ints = axle_arena_dup(a, src->ints, src->count * sizeof(int64_t), sizeof(int64_t));
    if (!dst->ints) return 0;
  } else if (src->type == AXLE_HAL_ATTR_FLOATS && src->count) {
    dst->floats = axle_arena_dup(a, src->floats, src->count * sizeof(float), sizeof(float));
    if (!dst->floats) return 0;
  } else if (src->type == AXLE_HAL_ATTR_STRINGS && src->count) {
    char** strings = axle_arena_alloc(a, src->count * sizeof(char*), sizeof(char*));
    if (!strings) return 0;
    for (uint32_t i = 0; i < src->count; ++i)
      if (!(strings[i] = axle_arena_strdup(a, src->strings[i] ? src->strings[i] : "")))
        return 0;
    dst->strings = (const char* const*)strings;
  }
  return 1;
}

static int32_t* axle_indices_dup(axle_arena_t* a, const int32_t* src, uint32_t n) {
  return n ? axle_arena_dup(a, src, n * sizeof(int32_t), sizeof(int32_t)) : NULL;
}

int32_t axle_graph_add_node(axle_graph_t* g, const axle_hal_node_t* node) {
  if (!axle_graph_reserve((void**)&g->nodes, &g->node_capacity, g->node_count,
                          sizeof(*g->nodes)))
    return -1;
  axle_arena_t* a = &g->arena;
  uint32_t index = g->node_count;
  axle_hal_node_t n = *node;
  const char* op = node->op_type ? node->op_type : "";
  n.op_type = axle_arena_strdup(a, op);
  n.domain = axle_arena_strdup(a, node->domain ? node->domain : "");
  if (node->name && node->name[0]) {
    n.name = axle_arena_strdup(a, node->name);
  } else {
    int len = snprintf(NULL, 0, "%s_%u", op, index);
    char* name = len < 0 ? NULL : axle_arena_alloc(a, (size_t)len + 1, 1);
    if (name) snprintf(name, (size_t)len + 1, "%s_%u", op, index);
    n.name = name;
  }
  n.inputs = axle_indices_dup(a, node->inputs, node->input_count);
  n.outputs = axle_indices_dup(a, node->outputs, node->output_count);
  n.attrs = NULL;
  if (!n.op_type || !n.domain || !n.name || (node->input_count && !n.inputs) ||
      (node->output_count && !n.outputs))
    return -1;
  if (node->attr_count) {
    axle_hal_attr_t* attrs =
        axle_arena_alloc(a, node->attr_count * sizeof(*attrs), _Alignof(axle_hal_attr_t));
    if (!attrs) return -1;
    for (uint32_t i = 0; i < node->attr_count; ++i)
      if (!axle_attr_copy(a, &node->attrs[i], &attrs[i])) return -1;
    n.attrs = attrs;
  }
  g->nodes[index] = n;
  g->node_count++;
  axle_graph_sync(g);
  return (int32_t)index;
}

axle_status_t axle_graph_clone(const axle_graph_t* src, axle_graph_t* dst) {
  axle_graph_init(dst);
  dst->opset = src->opset;
  axle_arena_t* a = &dst->arena;
  const char* source = axle_arena_strdup(a, src->source ? src->source : "<memory>");
  if (!source) goto oom;
  dst->source = source;
  if (src->tensor_count) {
    dst->tensors = malloc(src->tensor_count * sizeof(*dst->tensors));
    if (!dst->tensors) goto oom;
    dst->tensor_capacity = src->tensor_count;
  }
  for (uint32_t i = 0; i < src->tensor_count; ++i) {
    const axle_hal_tensor_t* s = &src->tensors[i];
    axle_hal_tensor_t* t = &dst->tensors[i];
    *t = *s;
    if (!(t->name = axle_arena_strdup(a, s->name))) goto oom;
    if (s->quant.count) {
      t->quant.scales =
          s->quant.scales ? axle_arena_dup(a, s->quant.scales, s->quant.count * sizeof(float),
                                           sizeof(float))
                          : NULL;
      t->quant.zero_points = s->quant.zero_points
                                 ? axle_arena_dup(a, s->quant.zero_points,
                                                  s->quant.count * sizeof(int32_t),
                                                  sizeof(int32_t))
                                 : NULL;
      if ((s->quant.scales && !t->quant.scales) ||
          (s->quant.zero_points && !t->quant.zero_points))
        goto oom;
    }
    dst->tensor_count = i + 1;
  }
  for (uint32_t i = 0; i < src->node_count; ++i)
    if (axle_graph_add_node(dst, &src->nodes[i]) < 0) goto oom;
  dst->inputs = axle_indices_dup(a, src->inputs, src->input_count);
  dst->outputs = axle_indices_dup(a, src->outputs, src->output_count);
  if ((src->input_count && !dst->inputs) || (src->output_count && !dst->outputs)) goto oom;
  dst->input_count = src->input_count;
  dst->output_count = src->output_count;
  axle_graph_sync(dst);
  return AXLE_OK;
oom:
  axle_graph_free(dst);
  return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "%s: out of memory copying the graph",
                          src->source ? src->source : "<memory>");
}

/* Min-heap of node indices: Kahn's algorithm that always takes the lowest
 * ready index keeps an already sorted graph exactly as it is. */
static void axle_heap_push(uint32_t* heap, uint32_t* size, uint32_t v) {
  uint32_t i = (*size)++;
  while (i > 0 && heap[(i - 1) / 2] > v) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = v;
}

static uint32_t axle_heap_pop(uint32_t* heap, uint32_t* size) {
  uint32_t top = heap[0], last = heap[--*size], i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= *size) break;
    if (c + 1 < *size && heap[c + 1] < heap[c]) ++c;
    if (heap[c] >= last) break;
    heap[i] = heap[c];
    i = c;
  }
  if (*size) heap[i] = last;
  return top;
}

static const char* axle_graph_source(const axle_graph_t* g) {
  return g->source ? g->source : "<memory>";
}

axle_status_t axle_graph_toposort(axle_graph_t* g) {
  uint32_t nn = g->node_count, nt = g->tensor_count;
  if (nn == 0) return AXLE_OK;
  axle_status_t st = AXLE_OK;
  int32_t* producer = malloc(((size_t)nt + 1) * sizeof(int32_t));
  uint32_t* pending = calloc(nn, sizeof(uint32_t));      /* unmet inputs per node */
  size_t* first = calloc((size_t)nn + 1, sizeof(size_t)); /* consumer lists (CSR) */
  uint32_t* heap = malloc(nn * sizeof(uint32_t));
  uint32_t* order = malloc(nn * sizeof(uint32_t));
  uint32_t* consumers = NULL;
  axle_hal_node_t* sorted = NULL;
  if (!producer || !pending || !first || !heap || !order) goto oom;

  for (uint32_t t = 0; t < nt; ++t) producer[t] = -1;
  for (uint32_t i = 0; i < nn; ++i) {
    const axle_hal_node_t* n = &g->nodes[i];
    for (uint32_t k = 0; k < n->output_count; ++k) {
      int32_t t = n->outputs[k];
      if (t < 0) continue;
      if ((uint32_t)t >= nt) {
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: node '%s' (%s): output %u refers to tensor %d of %u",
                              axle_graph_source(g), n->name, n->op_type, k, t, nt);
        goto done;
      }
      if (producer[t] >= 0) {
        const axle_hal_node_t* p = &g->nodes[producer[t]];
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: tensor '%s' is produced twice: by node '%s' (%s) and by "
                              "node '%s' (%s)",
                              axle_graph_source(g), g->tensors[t].name, p->name, p->op_type,
                              n->name, n->op_type);
        goto done;
      }
      producer[t] = (int32_t)i;
    }
  }

  size_t edges = 0;
  for (uint32_t i = 0; i < nn; ++i) {
    const axle_hal_node_t* n = &g->nodes[i];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      int32_t t = n->inputs[k];
      if (t < 0) continue;
      if ((uint32_t)t >= nt) {
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: node '%s' (%s): input %u refers to tensor %d of %u",
                              axle_graph_source(g), n->name, n->op_type, k, t, nt);
        goto done;
      }
      const axle_hal_tensor_t* tensor = &g->tensors[t];
      if (producer[t] < 0) {
        if (tensor->data ||
            (tensor->flags & (AXLE_HAL_TENSOR_CONSTANT | AXLE_HAL_TENSOR_GRAPH_INPUT)))
          continue;
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: node '%s' (%s): input '%s' is never produced (it is no "
                              "graph input, initializer or node output)",
                              axle_graph_source(g), n->name, n->op_type, tensor->name);
        goto done;
      }
      pending[i]++;
      first[producer[t] + 1]++;
      edges++;
    }
  }
  for (uint32_t i = 0; i < nn; ++i) first[i + 1] += first[i];
  consumers = malloc((edges ? edges : 1) * sizeof(uint32_t));
  if (!consumers) goto oom;
  {
    /* Fill consumer lists using heap[] as the per-producer write cursor. */
    for (uint32_t i = 0; i < nn; ++i) heap[i] = 0;
    for (uint32_t i = 0; i < nn; ++i) {
      const axle_hal_node_t* n = &g->nodes[i];
      for (uint32_t k = 0; k < n->input_count; ++k) {
        int32_t t = n->inputs[k];
        if (t < 0 || producer[t] < 0) continue;
        uint32_t p = (uint32_t)producer[t];
        consumers[first[p] + heap[p]++] = i;
      }
    }
  }

  uint32_t ready = 0, emitted = 0;
  for (uint32_t i = 0; i < nn; ++i)
    if (pending[i] == 0) axle_heap_push(heap, &ready, i);
  while (ready) {
    uint32_t u = axle_heap_pop(heap, &ready);
    order[emitted++] = u;
    for (size_t e = first[u]; e < first[u + 1]; ++e)
      if (--pending[consumers[e]] == 0) axle_heap_push(heap, &ready, consumers[e]);
  }

  if (emitted < nn) {
    st = axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: the graph has a cycle",
                          axle_graph_source(g));
    /* Name the first stuck node and an input whose producer is stuck too. */
    for (uint32_t i = 0; i < nn; ++i) {
      if (pending[i] == 0) continue;
      const axle_hal_node_t* n = &g->nodes[i];
      for (uint32_t k = 0; k < n->input_count; ++k) {
        int32_t t = n->inputs[k];
        if (t < 0 || producer[t] < 0 || pending[producer[t]] == 0) continue;
        const axle_hal_node_t* p = &g->nodes[producer[t]];
        st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: the graph has a cycle: node '%s' (%s) needs tensor '%s' "
                              "from node '%s' (%s), which depends on it",
                              axle_graph_source(g), n->name, n->op_type, g->tensors[t].name,
                              p->name, p->op_type);
        goto done;
      }
    }
    goto done;
  }

  sorted = malloc(nn * sizeof(*sorted));
  if (!sorted) goto oom;
  for (uint32_t i = 0; i < nn; ++i) sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, nn * sizeof(*sorted));
  axle_graph_sync(g);
  goto done;

oom:
  st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "%s: out of memory sorting the graph",
                        axle_graph_source(g));
done:
  free(producer);
  free(pending);
  free(first);
  free(heap);
  free(order);
  free(consumers);
  free(sorted);
  return st;
}

int64_t axle_node_attr_int(const axle_hal_node_t* n, const char* name, int64_t dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_INT ? a->i : dflt;
}

float axle_node_attr_float(const axle_hal_node_t* n, const char* name, float dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  if (!a) return dflt;
  /* Some exporters write integral float attributes (alpha=1) as INT. */
  if (a->type == AXLE_HAL_ATTR_INT) return (float)a->i;
  return a->type == AXLE_HAL_ATTR_FLOAT ? a->f : dflt;
}

const char* axle_node_attr_string(const axle_hal_node_t* n, const char* name,
                                  const char* dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  return a && a->type == AXLE_HAL_ATTR_STRING && a->s ? a->s : dflt;
}
