/*
 * Test harness for CPU plugin op families: builds a one-node graph, the
 * cpu_step_t the plugin would build, and drives check/prepare/run the way
 * plugin.c does (constant inputs reach run() through in[] too). Shared by
 * test_cpu_elementwise.c and test_cpu_layout.c; header-only so that it does
 * not become a test executable of its own.
 */
#ifndef AXLE_TESTS_CPU_OP_HARNESS_H_
#define AXLE_TESTS_CPU_OP_HARNESS_H_

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_op.h"
#include "cpu_threadpool.h"

#define HX_MAX 16

typedef struct hx_t {
  axle_hal_tensor_t tensors[HX_MAX];
  const void* values[HX_MAX]; /* data handed to run() */
  uint32_t tensor_count;
  int32_t inputs[HX_MAX], outputs[HX_MAX];
  uint32_t input_count, output_count;
  axle_hal_attr_t attrs[HX_MAX];
  uint32_t attr_count;
  const char* op_type;
  int64_t opset;
  uint32_t threads; /* the step's (0: 1); more run on the plugin's pool */
  char reason[256];
} hx_t;

static char hx_message[512];

static inline int32_t hx_status_make(int32_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(hx_message, sizeof hx_message, fmt, ap);
  va_end(ap);
  return code;
}

static const axle_hal_host_t hx_host = {
    sizeof(axle_hal_host_t), AXLE_HAL_ABI_VERSION, NULL, NULL, hx_status_make, NULL, NULL,
    NULL, NULL};

static inline void hx_init(hx_t* h, const char* op_type, int64_t opset) {
  memset(h, 0, sizeof *h);
  h->op_type = op_type;
  h->opset = opset;
}

static inline int32_t hx_tensor(hx_t* h, int32_t dtype, uint32_t rank, const int64_t* shape) {
  axle_hal_tensor_t* t = &h->tensors[h->tensor_count];
  t->name = "t";
  t->dtype = dtype;
  t->rank = rank;
  for (uint32_t d = 0; d < rank; ++d) t->shape[d] = shape[d];
  t->size_bytes = (uint64_t)axle_hal_tensor_elements(t) * axle_hal_dtype_size(dtype);
  return (int32_t)h->tensor_count++;
}

/* A runtime input: data only reaches run(). */
static inline void hx_in(hx_t* h, int32_t dtype, uint32_t rank, const int64_t* shape, const void* data) {
  const int32_t t = hx_tensor(h, dtype, rank, shape);
  h->values[t] = data;
  h->inputs[h->input_count++] = t;
}

/* A constant input: known at prepare time as well. */
static inline void hx_const(hx_t* h, int32_t dtype, uint32_t rank, const int64_t* shape,
                     const void* data) {
  const int32_t t = hx_tensor(h, dtype, rank, shape);
  h->tensors[t].data = data;
  h->tensors[t].flags = AXLE_HAL_TENSOR_CONSTANT;
  h->values[t] = data;
  h->inputs[h->input_count++] = t;
}

static inline void hx_omit(hx_t* h) { h->inputs[h->input_count++] = -1; }

static inline void hx_out(hx_t* h, int32_t dtype, uint32_t rank, const int64_t* shape, void* data) {
  const int32_t t = hx_tensor(h, dtype, rank, shape);
  h->values[t] = data;
  h->outputs[h->output_count++] = t;
}

static inline axle_hal_attr_t* hx_attr(hx_t* h, const char* name, int32_t type) {
  axle_hal_attr_t* a = &h->attrs[h->attr_count++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->type = type;
  a->tensor = -1;
  return a;
}

static inline void hx_int(hx_t* h, const char* name, int64_t v) { hx_attr(h, name, AXLE_HAL_ATTR_INT)->i = v; }
static inline void hx_float(hx_t* h, const char* name, float v) { hx_attr(h, name, AXLE_HAL_ATTR_FLOAT)->f = v; }
static inline void hx_string(hx_t* h, const char* name, const char* s) { hx_attr(h, name, AXLE_HAL_ATTR_STRING)->s = s; }
static inline void hx_ints(hx_t* h, const char* name, uint32_t n, const int64_t* v) {
  axle_hal_attr_t* a = hx_attr(h, name, AXLE_HAL_ATTR_INTS);
  a->count = n;
  a->ints = v;
}
/* A TENSOR attribute: the value tensor lives in the graph but is no operand. */
static inline void hx_tensor_attr(hx_t* h, const char* name, int32_t dtype, uint32_t rank,
                           const int64_t* shape, const void* data) {
  const int32_t t = hx_tensor(h, dtype, rank, shape);
  h->tensors[t].data = data;
  h->tensors[t].flags = AXLE_HAL_TENSOR_CONSTANT;
  hx_attr(h, name, AXLE_HAL_ATTR_TENSOR)->tensor = t;
}

static inline const cpu_op_t* hx_find(const char* op_type) {
  const cpu_op_t* const tables[] = {cpu_ops_elementwise, cpu_ops_layout};
  for (size_t f = 0; f < 2; ++f)
    for (const cpu_op_t* op = tables[f]; op->op_type; ++op)
      if (strcmp(op->op_type, op_type) == 0) return op;
  return NULL;
}

/* check + prepare + run. Returns the first non-OK status (message in
 * h->reason or hx_message). run() goes twice when runs > 1, as a session
 * runs a compiled step repeatedly. */
static inline int32_t hx_run_n(hx_t* h, int runs) {
  const cpu_op_t* op = hx_find(h->op_type);
  if (!op) return AXLE_HAL_NOT_FOUND;
  axle_hal_node_t node;
  memset(&node, 0, sizeof node);
  node.name = "n";
  node.op_type = h->op_type;
  node.domain = "";
  node.input_count = h->input_count;
  node.inputs = h->inputs;
  node.output_count = h->output_count;
  node.outputs = h->outputs;
  node.attr_count = h->attr_count;
  node.attrs = h->attrs;
  axle_hal_graph_t g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.opset = h->opset;
  g.tensor_count = h->tensor_count;
  g.tensors = h->tensors;
  g.node_count = 1;
  g.nodes = &node;
  h->reason[0] = 0;
  int32_t st = op->check(&g, &node, h->reason, sizeof h->reason);
  if (st != AXLE_HAL_OK) return st;
  const axle_hal_tensor_t* in[HX_MAX];
  const axle_hal_tensor_t* out[HX_MAX];
  const void* in_data[HX_MAX];
  void* out_data[HX_MAX];
  for (uint32_t i = 0; i < h->input_count; ++i) {
    in[i] = h->inputs[i] >= 0 ? &h->tensors[h->inputs[i]] : NULL;
    in_data[i] = h->inputs[i] >= 0 ? h->values[h->inputs[i]] : NULL;
  }
  for (uint32_t i = 0; i < h->output_count; ++i) {
    out[i] = &h->tensors[h->outputs[i]];
    out_data[i] = (void*)h->values[h->outputs[i]];
  }
  cpu_step_t step;
  memset(&step, 0, sizeof step);
  step.graph = &g;
  step.node = &node;
  step.op = op;
  step.input_count = h->input_count;
  step.output_count = h->output_count;
  step.in = in;
  step.out = out;
  step.threads = h->threads ? h->threads : 1;
  hx_message[0] = 0;
  st = op->prepare(&hx_host, &step);
  if (st == AXLE_HAL_OK) {
    void* scratch = step.scratch_bytes ? aligned_alloc(64, (step.scratch_bytes + 63) & ~(size_t)63)
                                       : NULL;
    if (step.threads > 1) cpu_pool_acquire();
    for (int r = 0; r < runs; ++r) op->run(&step, in_data, out_data, scratch);
    if (step.threads > 1) cpu_pool_release();
    free(scratch);
  }
  free(step.params);
  return st;
}

static inline int32_t hx_run(hx_t* h) { return hx_run_n(h, 1); }

/* CUnit registration: suites of NULL-terminated case tables. */
typedef struct hx_case_t {
  const char* name;
  void (*fn)(void);
} hx_case_t;

typedef struct hx_suite_t {
  const char* name;
  const hx_case_t* cases;
} hx_suite_t;

/* Runs every suite; the exit status is non-zero when anything failed. */
static inline int hx_main(const hx_suite_t* suites, size_t count) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  for (size_t i = 0; i < count; ++i) {
    CU_pSuite s = CU_add_suite(suites[i].name, NULL, NULL);
    if (!s) goto fail;
    for (const hx_case_t* c = suites[i].cases; c->name; ++c)
      if (!CU_add_test(s, c->name, c->fn)) goto fail;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
fail:
  CU_cleanup_registry();
  return 1;
}

#endif /* AXLE_TESTS_CPU_OP_HARNESS_H_ */
