/* Helpers shared by the op families (declared in cpu_op.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "axle_kernels_elementwise.h"
#include "cpu_op.h"

int32_t cpu_unsupported(char* reason, size_t reason_size, const char* fmt, ...) {
  if (reason && reason_size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, reason_size, fmt, ap);
    va_end(ap);
  }
  return AXLE_HAL_UNSUPPORTED;
}

static const axle_hal_tensor_t* tensor_at(const axle_hal_graph_t* g, int32_t index) {
  if (index < 0 || (uint32_t)index >= g->tensor_count) return NULL;
  return &g->tensors[index];
}

const axle_hal_tensor_t* cpu_node_input(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                        uint32_t i) {
  if (i >= n->input_count) return NULL;
  return tensor_at(g, n->inputs[i]);
}

const axle_hal_tensor_t* cpu_node_output(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                         uint32_t i) {
  if (i >= n->output_count) return NULL;
  return tensor_at(g, n->outputs[i]);
}

int64_t cpu_attr_int(const axle_hal_node_t* n, const char* name, int64_t dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  if (!a) return dflt;
  if (a->type == AXLE_HAL_ATTR_INT) return a->i;
  return dflt;
}

float cpu_attr_float(const axle_hal_node_t* n, const char* name, float dflt) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, name);
  if (!a) return dflt;
  if (a->type == AXLE_HAL_ATTR_FLOAT) return a->f;
  /* Some exporters write integral float attributes (alpha=1) as INT. */
  if (a->type == AXLE_HAL_ATTR_INT) return (float)a->i;
  return dflt;
}

int32_t cpu_step_fail(const axle_hal_host_t* host, const cpu_step_t* step, int32_t code,
                      const char* what) {
  if (!host || !host->status_make) return code;
  return host->status_make(code, "cpu: node '%s' (%s): %s", step->node->name,
                           step->node->op_type, what);
}

void* cpu_step_params(const axle_hal_host_t* host, cpu_step_t* step, size_t bytes) {
  step->params = calloc(1, bytes);
  if (!step->params) cpu_step_fail(host, step, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  return step->params;
}

const void* cpu_step_input_data(const cpu_step_t* step, const void* const* in, uint32_t i) {
  if (i >= step->input_count) return NULL;
  if (in[i]) return in[i];
  return step->in[i] ? step->in[i]->data : NULL;
}

const char* cpu_dtype_name(int32_t dtype) {
  const char* n = axle_cast_dtype_name(dtype);
  return n ? n : "undefined";
}
