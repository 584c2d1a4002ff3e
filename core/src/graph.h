/*
 * Graph IR inside the core.
 *
 * The IR *is* the HAL view (axle_hal_graph_t and friends) plus the storage
 * that owns it, so plugins receive the core's graph without conversion.
 * Everything a graph points at (names, attribute arrays, initializer bytes)
 * lives in its arena and dies with axle_graph_free().
 *
 * Thread safety: a graph is built by one thread, then read-only.
 */
#ifndef AXLE_CORE_GRAPH_H_
#define AXLE_CORE_GRAPH_H_

#include "axle/axle.h"
#include "axle/hal.h"
#include "arena.h"

typedef struct axle_graph_t {
  axle_hal_graph_t hal;        /* hal.tensors/nodes point at the arrays below */
  axle_arena_t arena;          /* owns strings, attribute arrays, data */

  axle_hal_tensor_t* tensors;
  uint32_t tensor_count, tensor_capacity;
  axle_hal_node_t* nodes;
  uint32_t node_count, node_capacity;

  /* Graph inputs that are not initializers, and graph outputs (tensor indices). */
  int32_t* inputs;
  uint32_t input_count;
  int32_t* outputs;
  uint32_t output_count;

  int64_t opset;
  const char* source;          /* file name for messages ("<memory>" otherwise) */
} axle_graph_t;

void axle_graph_init(axle_graph_t* g);
void axle_graph_free(axle_graph_t* g);

/* Adds a tensor (name copied) and returns its index, or -1 when out of memory. */
int32_t axle_graph_add_tensor(axle_graph_t* g, const char* name);
/* Index of the tensor called name, or -1. Linear in tensor count. */
int32_t axle_graph_find_tensor(const axle_graph_t* g, const char* name);
/* Appends a node; arrays are copied into the arena. Returns index or -1. */
int32_t axle_graph_add_node(axle_graph_t* g, const axle_hal_node_t* node);
/* Re-points hal.tensors/hal.nodes/counts after arrays grew. */
void axle_graph_sync(axle_graph_t* g);

/* Deep copy (used by sessions, which specialise shapes and fold constants).
 * Initializer data is shared with src, which must outlive dst. */
axle_status_t axle_graph_clone(const axle_graph_t* src, axle_graph_t* dst);

/* Sorts nodes topologically (Kahn, stable). Fails with INVALID_MODEL on a
 * cycle or on a tensor consumed but never produced. */
axle_status_t axle_graph_toposort(axle_graph_t* g);

/* ONNX loading (onnx_load.c): parses a ModelProto with protobuf-c and fills g.
 * source names the file in messages. */
axle_status_t axle_onnx_load(const void* data, size_t size, const char* source,
                             axle_graph_t* g);

/* Shape inference (shape_infer.c): fills dtype/rank/shape of every tensor
 * produced by node `node` from its inputs (which must be known). Uses constant
 * input data where the op needs it (Reshape shape, Slice starts, ...). Fails
 * with a message naming the node, op and tensor when something is wrong or
 * a needed value is not constant. */
axle_status_t axle_shape_infer_node(axle_graph_t* g, uint32_t node);

/* Attribute helpers. */
int64_t axle_node_attr_int(const axle_hal_node_t* n, const char* name, int64_t dflt);
float axle_node_attr_float(const axle_hal_node_t* n, const char* name, float dflt);
const char* axle_node_attr_string(const axle_hal_node_t* n, const char* name,
                                  const char* dflt);

#endif /* AXLE_CORE_GRAPH_H_ */
