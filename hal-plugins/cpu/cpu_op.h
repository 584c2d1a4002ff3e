/*
 * The CPU plugin's operator contract.
 *
 * Each ONNX operator is one cpu_op_t: check() answers the capability query,
 * prepare() runs once at compile time (validates attributes, precomputes
 * everything shape-dependent into params), run() does the arithmetic and
 * nothing else: no allocation, no graph walk, no attribute parsing per run.
 *
 * Op tables live one per op family (cpu_ops_<family>.c) and are listed in
 * cpu_ops.c. Thread safety: run() may be called concurrently on the same step
 * with different data pointers and scratch, so it must not write to step.
 */
#ifndef AXLE_CPU_OP_H_
#define AXLE_CPU_OP_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"

typedef struct cpu_op_t cpu_op_t;

typedef struct cpu_step_t {
  const axle_hal_graph_t* graph;
  const axle_hal_node_t* node;
  const cpu_op_t* op;
  uint32_t input_count;
  uint32_t output_count;
  const axle_hal_tensor_t** in;   /* input_count entries; NULL = omitted input */
  const axle_hal_tensor_t** out;  /* output_count entries */
  void* params;                   /* one malloc() block owned by the step, or NULL */
  size_t scratch_bytes;           /* per-run scratch the op needs (64-byte aligned) */
  uint32_t threads;               /* compile option; ops may split work */
} cpu_step_t;

struct cpu_op_t {
  const char* op_type;
  /* AXLE_HAL_OK when the node can run here; else AXLE_HAL_UNSUPPORTED and a
   * one-line reason (unsupported dtype, attribute value, ...). */
  int32_t (*check)(const axle_hal_graph_t* graph, const axle_hal_node_t* node,
                   char* reason, size_t reason_size);
  /* Fills step->params and step->scratch_bytes. Failures go through
   * host->status_make with a message naming the node. */
  int32_t (*prepare)(const axle_hal_host_t* host, cpu_step_t* step);
  /* in[i]: input data (NULL for omitted), out[i]: output data, scratch:
   * scratch_bytes of 64-byte aligned memory. */
  void (*run)(const cpu_step_t* step, const void* const* in, void* const* out,
              void* scratch);
};

/* Op families; each table ends with an entry whose op_type is NULL. */
extern const cpu_op_t cpu_ops_nn[];          /* Conv, Gemm, MatMul, pooling, BN, Softmax */
extern const cpu_op_t cpu_ops_elementwise[]; /* arithmetic, activations, Cast, Q/DQ */
extern const cpu_op_t cpu_ops_layout[];      /* shape and data-movement ops */

/* Finds the op for op_type in the default ONNX domain, or NULL. */
const cpu_op_t* cpu_op_find(const char* op_type);

/* Helpers shared by op families (cpu_op_util.c). */
/* Writes a message into reason and returns AXLE_HAL_UNSUPPORTED. */
int32_t cpu_unsupported(char* reason, size_t reason_size, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The tensor of node input i, or NULL when omitted / out of range. */
const axle_hal_tensor_t* cpu_node_input(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                        uint32_t i);
const axle_hal_tensor_t* cpu_node_output(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                         uint32_t i);
int64_t cpu_attr_int(const axle_hal_node_t* n, const char* name, int64_t dflt);
/* prepare() failures: sets "cpu: node 'N' (Op): what" and returns code. */
int32_t cpu_step_fail(const axle_hal_host_t* host, const cpu_step_t* step, int32_t code,
                      const char* what);
/* step->params as one zeroed block the step owns; NULL (message set) when out
 * of memory. */
void* cpu_step_params(const axle_hal_host_t* host, cpu_step_t* step, size_t bytes);
/* Input i's data at run time: in[i], or the constant's data. */
const void* cpu_step_input_data(const cpu_step_t* step, const void* const* in, uint32_t i);
/* "float32", "int64", ... ("undefined" for unknown codes). */
const char* cpu_dtype_name(int32_t dtype);
float cpu_attr_float(const axle_hal_node_t* n, const char* name, float dflt);

#endif /* AXLE_CPU_OP_H_ */
