/*
 * ONNX loading (core/src/onnx_load.c) and the graph IR (core/src/graph.c).
 *
 * Models are built in C with the protobuf-c structs generated from Debian's
 * onnx.proto and packed, so every malformed variant is made on the spot:
 * truncated at every length, bytes corrupted one at a time, sizes that lie,
 * graphs with cycles, and messages nested deep enough to exhaust a recursive
 * parser's stack. Loading must fail with a message naming the source and the
 * culprit, and never crash (run under ASan/UBSan in the sanitizer build).
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx/onnx.pb-c.h"
#include "onnx_tensor.h"
#include "status.h"

/* ------------------------------------------------------------------------ */
/* Building ModelProtos                                                      */
/* ------------------------------------------------------------------------ */

/* Every test allocation, freed after each test by tmem_free(). */
static void** g_mem;
static size_t g_mem_count, g_mem_cap;

static void* talloc(size_t size) {
  if (g_mem_count == g_mem_cap) {
    g_mem_cap = g_mem_cap ? 2 * g_mem_cap : 256;
    g_mem = realloc(g_mem, g_mem_cap * sizeof(void*));
  }
  void* p = calloc(1, size ? size : 1);
  g_mem[g_mem_count++] = p;
  return p;
}

static void tmem_free(void) {
  for (size_t i = 0; i < g_mem_count; ++i) free(g_mem[i]);
  g_mem_count = 0;
}

static void* tdup(const void* src, size_t size) {
  void* p = talloc(size);
  memcpy(p, src, size);
  return p;
}

#define NEW(type, init) ((type*)tdup(&(type)init, sizeof(type)))
#define LIST 32 /* capacity of every repeated field the builders fill */

static char* tstr(const char* s) { return tdup(s, strlen(s) + 1); }

static Onnx__GraphProto* mk_graph(void) {
  Onnx__GraphProto* g = NEW(Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
  g->name = tstr("g");
  g->node = talloc(LIST * sizeof(void*));
  g->initializer = talloc(LIST * sizeof(void*));
  g->input = talloc(LIST * sizeof(void*));
  g->output = talloc(LIST * sizeof(void*));
  g->value_info = talloc(LIST * sizeof(void*));
  return g;
}

static Onnx__ModelProto* mk_model(Onnx__GraphProto* g, int64_t opset) {
  Onnx__ModelProto* m = NEW(Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
  m->has_ir_version = 1;
  m->ir_version = 8;
  Onnx__OperatorSetIdProto* o = NEW(Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
  o->domain = tstr("");
  o->has_version = 1;
  o->version = opset;
  m->opset_import = talloc(sizeof(void*));
  m->opset_import[0] = o;
  m->n_opset_import = 1;
  m->graph = g;
  return m;
}

static uint8_t* pack_model(const Onnx__ModelProto* m, size_t* len) {
  *len = onnx__model_proto__get_packed_size(m);
  uint8_t* buf = talloc(*len);
  onnx__model_proto__pack(m, buf);
  return buf;
}

/* A ValueInfo; dims < 0 become the symbolic dim_param "N". */
static Onnx__ValueInfoProto* mk_value(const char* name, int32_t elem, size_t rank,
                                      const int64_t* dims) {
  Onnx__ValueInfoProto* v = NEW(Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
  v->name = tstr(name);
  v->type = NEW(Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
  v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  v->type->tensor_type = NEW(Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
  v->type->tensor_type->has_elem_type = 1;
  v->type->tensor_type->elem_type = elem;
  Onnx__TensorShapeProto* s = NEW(Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
  s->n_dim = rank;
  s->dim = talloc((rank + 1) * sizeof(void*));
  for (size_t i = 0; i < rank; ++i) {
    Onnx__TensorShapeProto__Dimension* d =
        NEW(Onnx__TensorShapeProto__Dimension, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
    if (dims[i] < 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = tstr("N");
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    }
    s->dim[i] = d;
  }
  v->type->tensor_type->shape = s;
  return v;
}

static Onnx__TensorProto* mk_tensor(const char* name, int32_t dtype, size_t rank,
                                    const int64_t* dims) {
  Onnx__TensorProto* t = NEW(Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
  t->name = tstr(name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = rank;
  t->dims = tdup(dims ? (const void*)dims : (const void*)"", rank * sizeof(int64_t));
  return t;
}

static void set_raw(Onnx__TensorProto* t, const void* data, size_t bytes) {
  t->has_raw_data = 1;
  t->raw_data.len = bytes;
  t->raw_data.data = tdup(data, bytes);
}

static Onnx__NodeProto* mk_node(const char* op, const char* name, const char* const* ins,
                                const char* const* outs) {
  Onnx__NodeProto* n = NEW(Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
  n->op_type = tstr(op);
  if (name) n->name = tstr(name);
  n->input = talloc(LIST * sizeof(char*));
  n->output = talloc(LIST * sizeof(char*));
  n->attribute = talloc(LIST * sizeof(void*));
  for (; ins && *ins; ++ins) n->input[n->n_input++] = tstr(*ins);
  for (; outs && *outs; ++outs) n->output[n->n_output++] = tstr(*outs);
  return n;
}

static Onnx__AttributeProto* mk_attr(Onnx__NodeProto* n, const char* name, int type) {
  Onnx__AttributeProto* a = NEW(Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
  a->name = tstr(name);
  a->has_type = 1;
  a->type = type;
  n->attribute[n->n_attribute++] = a;
  return a;
}

static void attr_int(Onnx__NodeProto* n, const char* name, int64_t v) {
  Onnx__AttributeProto* a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}

static void attr_ints(Onnx__NodeProto* n, const char* name, size_t count, const int64_t* v) {
  Onnx__AttributeProto* a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = count;
  a->ints = tdup(v, count * sizeof(int64_t));
}

static void attr_string(Onnx__NodeProto* n, const char* name, const char* s) {
  Onnx__AttributeProto* a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.len = strlen(s);
  a->s.data = (uint8_t*)tstr(s);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) (sizeof(D(__VA_ARGS__)) / sizeof(int64_t))
#define NAMES(...) ((const char* const[]){__VA_ARGS__, NULL})
#define ADD(list, item) (g->list[g->n_##list++] = (item))

/* x[N,3,4,4] -> Conv(w,b) -> Relu -> Reshape(k from Constant) -> Dropout -> d.
 * Nodes are listed out of order, the Relu has no name, the Conv carries every
 * attribute kind, and the initializers use every storage form. */
static Onnx__ModelProto* valid_model(void) {
  Onnx__GraphProto* g = mk_graph();
  ADD(input, mk_value("x", AXLE_DTYPE_F32, 4, D(-1, 3, 4, 4)));
  ADD(input, mk_value("w", AXLE_DTYPE_F32, 4, D(2, 3, 3, 3))); /* IR < 4 style */

  float w[54];
  for (int i = 0; i < 54; ++i) w[i] = (float)i * 0.5f;
  Onnx__TensorProto* t = mk_tensor("w", AXLE_DTYPE_F32, 4, D(2, 3, 3, 3));
  set_raw(t, w, sizeof(w));
  ADD(initializer, t);
  t = mk_tensor("b", AXLE_DTYPE_F32, 1, D(2));
  t->n_float_data = 2;
  t->float_data = tdup((float[]){-1.0f, 2.0f}, 2 * sizeof(float));
  ADD(initializer, t);
  t = mk_tensor("h", AXLE_DTYPE_F16, 1, D(2));
  t->n_int32_data = 2;
  t->int32_data = tdup((int32_t[]){0x3c00, 0xc000}, 2 * sizeof(int32_t));
  ADD(initializer, t);
  t = mk_tensor("flag", AXLE_DTYPE_BOOL, 1, D(3));
  t->n_int32_data = 3;
  t->int32_data = tdup((int32_t[]){1, 0, 5}, 3 * sizeof(int32_t));
  ADD(initializer, t);
  t = mk_tensor("u", AXLE_DTYPE_U32, 1, D(2));
  t->n_uint64_data = 2;
  t->uint64_data = tdup((uint64_t[]){7, 0xffffffffu}, 2 * sizeof(uint64_t));
  ADD(initializer, t);
  t = mk_tensor("dd", AXLE_DTYPE_F64, 0, NULL);
  t->n_double_data = 1;
  t->double_data = tdup((double[]){2.5}, sizeof(double));
  ADD(initializer, t);
  t = mk_tensor("i8", AXLE_DTYPE_I8, 1, D(2));
  t->n_int32_data = 2;
  t->int32_data = tdup((int32_t[]){-3, 127}, 2 * sizeof(int32_t));
  ADD(initializer, t);
  t = mk_tensor("big", AXLE_DTYPE_I64, 1, D(2));
  t->n_int64_data = 2;
  t->int64_data = tdup((int64_t[]){INT64_MIN, 42}, 2 * sizeof(int64_t));
  ADD(initializer, t);
  t = mk_tensor("empty", AXLE_DTYPE_F32, 2, D(0, 5));
  ADD(initializer, t);

  ADD(node, mk_node("Relu", NULL, NAMES("c"), NAMES("y")));
  Onnx__NodeProto* conv = mk_node("Conv", "conv1", NAMES("x", "w", "b"), NAMES("c"));
  attr_ints(conv, "kernel_shape", 2, D(3, 3));
  attr_ints(conv, "pads", 4, D(1, 1, 1, 1));
  attr_int(conv, "group", 1);
  attr_string(conv, "auto_pad", "NOTSET");
  Onnx__AttributeProto* a = mk_attr(conv, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = 0.25f;
  a = mk_attr(conv, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->n_floats = 2;
  a->floats = tdup((float[]){1.5f, 2.5f}, 2 * sizeof(float));
  a = mk_attr(conv, "tags", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  a->n_strings = 2;
  a->strings = talloc(2 * sizeof(ProtobufCBinaryData));
  a->strings[0] = (ProtobufCBinaryData){1, (uint8_t*)tstr("a")};
  a->strings[1] = (ProtobufCBinaryData){2, (uint8_t*)tstr("bc")};
  ADD(node, conv);
  Onnx__NodeProto* k = mk_node("Constant", "const1", NULL, NAMES("k"));
  a = mk_attr(k, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = mk_tensor("", AXLE_DTYPE_I64, 1, D(2));
  set_raw(a->t, (int64_t[]){1, -1}, 2 * sizeof(int64_t));
  ADD(node, k);
  ADD(node, mk_node("Reshape", "reshape", NAMES("y", "k"), NAMES("z")));
  ADD(node, mk_node("Dropout", "drop", NAMES("z"), NAMES("d", "")));

  ADD(output, mk_value("d", AXLE_DTYPE_F32, 2, D(-1, 32)));
  ADD(value_info, mk_value("c", AXLE_DTYPE_F32, 4, D(-1, 2, 4, 4)));
  return mk_model(g, 13);
}

static axle_status_t load(const Onnx__ModelProto* m, axle_graph_t* g) {
  size_t len;
  uint8_t* bytes = pack_model(m, &len);
  return axle_onnx_load(bytes, len, "model.onnx", g);
}

/* Loads m, expecting failure with code and every fragment in the message. */
static void expect_fail(const Onnx__ModelProto* m, axle_status_t code, const char* a,
                        const char* b) {
  axle_graph_t g;
  axle_status_t st = load(m, &g);
  const char* msg = axle_status_message();
  CU_ASSERT_EQUAL(st, code);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "model.onnx"));
  if (a) CU_ASSERT_PTR_NOT_NULL(strstr(msg, a));
  if (b) CU_ASSERT_PTR_NOT_NULL(strstr(msg, b));
  if (st != code || (a && !strstr(msg, a)) || (b && !strstr(msg, b)))
    fprintf(stderr, "\n  status %d, message: %s\n", st, msg);
  CU_ASSERT_EQUAL(g.node_count, 0); /* left empty */
  axle_graph_free(&g);
}

static const axle_hal_tensor_t* tensor(const axle_graph_t* g, const char* name) {
  int32_t i = axle_graph_find_tensor(g, name);
  CU_ASSERT_FATAL(i >= 0);
  return &g->tensors[i];
}

/* ------------------------------------------------------------------------ */
/* Loading valid models                                                      */
/* ------------------------------------------------------------------------ */

static void test_valid_model(void) {
  axle_graph_t g;
  axle_status_t st = load(valid_model(), &g);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  CU_ASSERT_EQUAL(g.opset, 13);
  CU_ASSERT_EQUAL(g.hal.opset, 13);
  CU_ASSERT_STRING_EQUAL(g.source, "model.onnx");
  CU_ASSERT_EQUAL(g.hal.tensor_count, g.tensor_count);
  CU_ASSERT_EQUAL(g.hal.node_count, 5);
  CU_ASSERT_PTR_EQUAL(g.hal.nodes, g.nodes);

  /* "w" is listed as an input but has an initializer: a constant. */
  CU_ASSERT_EQUAL_FATAL(g.input_count, 1);
  const axle_hal_tensor_t* x = &g.tensors[g.inputs[0]];
  CU_ASSERT_STRING_EQUAL(x->name, "x");
  CU_ASSERT_EQUAL(x->flags, AXLE_HAL_TENSOR_GRAPH_INPUT);
  CU_ASSERT_EQUAL(x->dtype, AXLE_DTYPE_F32);
  CU_ASSERT_EQUAL(x->rank, 4);
  CU_ASSERT_EQUAL(x->shape[0], -1);
  CU_ASSERT_EQUAL(x->shape[3], 4);
  CU_ASSERT_EQUAL(x->size_bytes, 0);
  CU_ASSERT_PTR_NULL(x->data);

  const axle_hal_tensor_t* w = tensor(&g, "w");
  CU_ASSERT_EQUAL(w->flags, AXLE_HAL_TENSOR_CONSTANT);
  CU_ASSERT_EQUAL(w->size_bytes, 54 * 4);
  CU_ASSERT_EQUAL((uintptr_t)w->data % 64, 0);
  CU_ASSERT_EQUAL(((const float*)w->data)[53], 26.5f);
  CU_ASSERT_EQUAL(((const float*)tensor(&g, "b")->data)[1], 2.0f);
  const uint16_t* h = tensor(&g, "h")->data;
  CU_ASSERT(h[0] == 0x3c00 && h[1] == 0xc000);
  CU_ASSERT_EQUAL(tensor(&g, "h")->size_bytes, 4);
  const uint8_t* flag = tensor(&g, "flag")->data;
  CU_ASSERT(flag[0] == 1 && flag[1] == 0 && flag[2] == 1);
  const uint32_t* u = tensor(&g, "u")->data;
  CU_ASSERT(u[0] == 7 && u[1] == 0xffffffffu);
  CU_ASSERT_EQUAL(tensor(&g, "dd")->rank, 0);
  CU_ASSERT_EQUAL(*(const double*)tensor(&g, "dd")->data, 2.5);
  const int8_t* i8 = tensor(&g, "i8")->data;
  CU_ASSERT(i8[0] == -3 && i8[1] == 127);
  CU_ASSERT_EQUAL(((const int64_t*)tensor(&g, "big")->data)[0], INT64_MIN);
  const axle_hal_tensor_t* empty = tensor(&g, "empty");
  CU_ASSERT_PTR_NOT_NULL(empty->data); /* constant even with no elements */
  CU_ASSERT_EQUAL(empty->size_bytes, 0);

  /* Sorted: Conv first, then the unnamed Relu (named after its file index). */
  static const char* const order[] = {"conv1", "Relu_0", "const1", "reshape", "drop"};
  for (uint32_t i = 0; i < 5; ++i) CU_ASSERT_STRING_EQUAL(g.nodes[i].name, order[i]);
  const axle_hal_node_t* conv = &g.nodes[0];
  CU_ASSERT_STRING_EQUAL(conv->op_type, "Conv");
  CU_ASSERT_STRING_EQUAL(conv->domain, "");
  CU_ASSERT_EQUAL(conv->input_count, 3);
  CU_ASSERT_EQUAL(conv->inputs[1], axle_graph_find_tensor(&g, "w"));
  CU_ASSERT_EQUAL(axle_node_attr_int(conv, "group", 7), 1);
  CU_ASSERT_EQUAL(axle_node_attr_int(conv, "missing", 7), 7);
  CU_ASSERT_EQUAL(axle_node_attr_float(conv, "alpha", 0), 0.25f);
  CU_ASSERT_STRING_EQUAL(axle_node_attr_string(conv, "auto_pad", ""), "NOTSET");
  CU_ASSERT_STRING_EQUAL(axle_node_attr_string(conv, "group", "dflt"), "dflt");
  const axle_hal_attr_t* a = axle_hal_node_attr(conv, "pads");
  CU_ASSERT_FATAL(a && a->type == AXLE_HAL_ATTR_INTS && a->count == 4);
  CU_ASSERT_EQUAL(a->ints[3], 1);
  CU_ASSERT_EQUAL(a->tensor, -1);
  a = axle_hal_node_attr(conv, "fs");
  CU_ASSERT_FATAL(a && a->type == AXLE_HAL_ATTR_FLOATS && a->count == 2);
  CU_ASSERT_EQUAL(a->floats[1], 2.5f);
  a = axle_hal_node_attr(conv, "tags");
  CU_ASSERT_FATAL(a && a->type == AXLE_HAL_ATTR_STRINGS && a->count == 2);
  CU_ASSERT_STRING_EQUAL(a->strings[1], "bc");

  const axle_hal_node_t* k = &g.nodes[2];
  a = axle_hal_node_attr(k, "value");
  CU_ASSERT_FATAL(a && a->type == AXLE_HAL_ATTR_TENSOR && a->tensor >= 0);
  const axle_hal_tensor_t* kt = &g.tensors[a->tensor];
  CU_ASSERT_EQUAL(kt->flags, AXLE_HAL_TENSOR_CONSTANT);
  CU_ASSERT_EQUAL(kt->dtype, AXLE_DTYPE_I64);
  CU_ASSERT_EQUAL(((const int64_t*)kt->data)[1], -1);

  const axle_hal_node_t* drop = &g.nodes[4];
  CU_ASSERT_EQUAL(drop->output_count, 2);
  CU_ASSERT_EQUAL(drop->outputs[1], -1);
  CU_ASSERT_EQUAL_FATAL(g.output_count, 1);
  const axle_hal_tensor_t* d = &g.tensors[g.outputs[0]];
  CU_ASSERT_STRING_EQUAL(d->name, "d");
  CU_ASSERT_EQUAL(d->flags, AXLE_HAL_TENSOR_GRAPH_OUTPUT);
  CU_ASSERT_EQUAL(d->rank, 2); /* declared type kept as a hint */
  CU_ASSERT_EQUAL(tensor(&g, "c")->shape[1], 2);

  /* Inference runs through the loaded graph once the batch is fixed. */
  g.tensors[g.inputs[0]].shape[0] = 1;
  for (uint32_t i = 0; i < g.node_count; ++i) {
    st = axle_shape_infer_node(&g, i);
    if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
    CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  }
  CU_ASSERT_EQUAL(d->rank, 2);
  CU_ASSERT_EQUAL(d->shape[0], 1);
  CU_ASSERT_EQUAL(d->shape[1], 32);
  CU_ASSERT_EQUAL(d->size_bytes, 128);
  axle_graph_free(&g);
  axle_graph_free(&g); /* a freed graph is empty, freeing it again is harmless */
}

static void test_initializer_as_output_and_domains(void) {
  Onnx__GraphProto* g = mk_graph();
  Onnx__TensorProto* t = mk_tensor("w", AXLE_DTYPE_F32, 1, D(1));
  set_raw(t, (float[]){3.0f}, 4);
  ADD(initializer, t);
  Onnx__NodeProto* n = mk_node("Custom", NULL, NAMES("w"), NAMES("y"));
  n->domain = tstr("com.example");
  ADD(node, n);
  ADD(output, mk_value("w", AXLE_DTYPE_F32, 1, D(1)));
  ADD(output, mk_value("y", AXLE_DTYPE_F32, 1, D(1)));
  Onnx__ModelProto* m = mk_model(g, 17);
  m->opset_import[0]->domain = tstr("ai.onnx"); /* the default domain's other name */
  axle_graph_t gr;
  CU_ASSERT_EQUAL_FATAL(load(m, &gr), AXLE_OK);
  CU_ASSERT_EQUAL(gr.opset, 17);
  CU_ASSERT_EQUAL(gr.input_count, 0);
  CU_ASSERT_EQUAL(gr.output_count, 2);
  CU_ASSERT_EQUAL(tensor(&gr, "w")->flags, AXLE_HAL_TENSOR_CONSTANT | AXLE_HAL_TENSOR_GRAPH_OUTPUT);
  CU_ASSERT_STRING_EQUAL(gr.nodes[0].domain, "com.example");
  CU_ASSERT_STRING_EQUAL(gr.nodes[0].name, "Custom_0");
  CU_ASSERT_EQUAL(axle_shape_infer_node(&gr, 0), AXLE_STATUS_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "com.example"));
  axle_graph_free(&gr);
}

/* ------------------------------------------------------------------------ */
/* Hostile bytes                                                             */
/* ------------------------------------------------------------------------ */

static void check_outcome(axle_status_t st, axle_graph_t* g) {
  CU_ASSERT(st == AXLE_OK || st == AXLE_STATUS_INVALID_MODEL || st == AXLE_STATUS_UNSUPPORTED);
  if (st != AXLE_OK) CU_ASSERT(axle_status_message()[0] != '\0');
  if (st == AXLE_OK) CU_ASSERT_EQUAL(g->hal.node_count, g->node_count);
  axle_graph_free(g);
}

static void test_truncated(void) {
  size_t len;
  uint8_t* bytes = pack_model(valid_model(), &len);
  size_t ok = 0;
  for (size_t n = 0; n < len; ++n) {
    /* A copy of exactly n bytes, so ASan sees any read past the prefix. */
    uint8_t* prefix = malloc(n ? n : 1);
    memcpy(prefix, bytes, n);
    axle_graph_t g;
    axle_status_t st = axle_onnx_load(prefix, n, "cut.onnx", &g);
    ok += st == AXLE_OK;
    check_outcome(st, &g);
    free(prefix);
  }
  /* Most prefixes cut a message short; the full model still loads. */
  CU_ASSERT(ok < len / 2);
  axle_graph_t g;
  CU_ASSERT_EQUAL(axle_onnx_load(bytes, len, "full.onnx", &g), AXLE_OK);
  axle_graph_free(&g);
}

static void test_corrupted(void) {
  size_t len;
  uint8_t* bytes = pack_model(valid_model(), &len);
  uint8_t* copy = malloc(len);
  static const uint8_t kDamage[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
  for (size_t i = 0; i < len; ++i) {
    for (size_t k = 0; k < sizeof(kDamage) + 1; ++k) {
      memcpy(copy, bytes, len);
      copy[i] = k < sizeof(kDamage) ? kDamage[k] : (uint8_t)(bytes[i] ^ 0x55);
      axle_graph_t g;
      check_outcome(axle_onnx_load(copy, len, "bad.onnx", &g), &g);
    }
  }
  free(copy);
}

static void test_garbage_and_empty(void) {
  axle_graph_t g;
  CU_ASSERT_EQUAL(axle_onnx_load("", 0, "empty.onnx", &g), AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "empty.onnx: the model has no graph"));
  CU_ASSERT_EQUAL(axle_onnx_load(NULL, 4, "null.onnx", &g), AXLE_STATUS_INVALID_ARGUMENT);
  static const char kText[] = "this is not a protobuf at all, just some text";
  CU_ASSERT_EQUAL(axle_onnx_load(kText, sizeof(kText), NULL, &g), AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "<memory>"));
  axle_graph_free(&g);
}

/* Appends field `field` holding `len` bytes (length-delimited) before buf. */
static size_t wrap(uint8_t* buf, size_t at, size_t len, unsigned field) {
  uint8_t head[16];
  size_t n = 0;
  head[n++] = (uint8_t)(field << 3 | 2);
  for (size_t v = len;; v >>= 7) {
    head[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  memcpy(buf + at - n, head, n);
  return n;
}

/* Model{graph{node{attribute{g{node{attribute{g{...}}}}}}}}: a recursive
 * parser would use one stack frame per level. */
static void test_deep_nesting(void) {
  const size_t levels = 60000, cap = 16 * levels + 64;
  uint8_t* buf = malloc(cap);
  size_t at = cap, len = 0;
  for (size_t i = 0; i < levels; ++i) {
    size_t n = wrap(buf, at, len, 6); /* AttributeProto.g */
    at -= n, len += n;
    n = wrap(buf, at, len, 5); /* NodeProto.attribute */
    at -= n, len += n;
    n = wrap(buf, at, len, 1); /* GraphProto.node */
    at -= n, len += n;
  }
  len += wrap(buf, at, len, 7); /* ModelProto.graph */
  at = cap - len;
  axle_graph_t g;
  CU_ASSERT_EQUAL(axle_onnx_load(buf + at, len, "deep.onnx", &g), AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "nested"));
  free(buf);
}

/* ------------------------------------------------------------------------ */
/* Invalid models                                                            */
/* ------------------------------------------------------------------------ */

static Onnx__ModelProto* relu_model(Onnx__GraphProto** out_graph) {
  Onnx__GraphProto* g = mk_graph();
  ADD(input, mk_value("x", AXLE_DTYPE_F32, 2, D(2, 3)));
  ADD(node, mk_node("Relu", "relu", NAMES("x"), NAMES("y")));
  ADD(output, mk_value("y", AXLE_DTYPE_F32, 2, D(2, 3)));
  *out_graph = g;
  return mk_model(g, 13);
}

static void test_missing_graph(void) {
  Onnx__ModelProto* m = mk_model(NULL, 13);
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "has no graph", NULL);
}

static void test_missing_opset(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  m->n_opset_import = 0;
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "no opset", NULL);
}

static void test_raw_size_mismatch(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  Onnx__TensorProto* t = mk_tensor("w", AXLE_DTYPE_F32, 2, D(2, 3));
  set_raw(t, (float[]){1, 2, 3, 4, 5}, 20);
  ADD(initializer, t);
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'w'", "20 bytes of raw_data");
}

static void test_typed_count_mismatch(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  Onnx__TensorProto* t = mk_tensor("k", AXLE_DTYPE_I64, 1, D(3));
  t->n_int64_data = 2;
  t->int64_data = tdup((int64_t[]){1, 2}, 16);
  ADD(initializer, t);
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'k'", "int64_data");
}

static void test_bad_initializers(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  ADD(initializer, mk_tensor("neg", AXLE_DTYPE_F32, 2, D(2, -3)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'neg'", "negative dimension -3");

  m = relu_model(&g);
  ADD(initializer, mk_tensor("deep", AXLE_DTYPE_F32, 9, D(1, 1, 1, 1, 1, 1, 1, 1, 1)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'deep'", "rank 9");

  m = relu_model(&g);
  ADD(initializer, mk_tensor("odd", 99, 1, D(1)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'odd'", "unknown data type 99");

  m = relu_model(&g);
  ADD(initializer, mk_tensor("s", AXLE_DTYPE_STRING, 1, D(1)));
  expect_fail(m, AXLE_STATUS_UNSUPPORTED, "initializer 's'", "string");

  m = relu_model(&g);
  Onnx__TensorProto* t = mk_tensor("huge", AXLE_DTYPE_F32, 3, D(INT64_MAX, INT64_MAX, 2));
  ADD(initializer, t);
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "initializer 'huge'", "too large");

  m = relu_model(&g);
  t = mk_tensor("ext", AXLE_DTYPE_F32, 1, D(4));
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  ADD(initializer, t);
  expect_fail(m, AXLE_STATUS_UNSUPPORTED, "initializer 'ext'", "external");

  m = relu_model(&g);
  for (int i = 0; i < 2; ++i) {
    t = mk_tensor("x", AXLE_DTYPE_F32, 0, NULL);
    set_raw(t, (float[]){1.0f}, 4);
    ADD(initializer, t);
  }
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "'x'", "two initializers");
}

static void test_unknown_input(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  ADD(node, mk_node("Add", "add", NAMES("y", "nowhere"), NAMES("z")));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "node 'add' (Add)", "input 'nowhere'");
}

static void test_cycle(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  ADD(node, mk_node("Add", "a", NAMES("y", "q"), NAMES("p")));
  ADD(node, mk_node("Neg", "b", NAMES("p"), NAMES("q")));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "cycle", "node 'a' (Add)");

  m = relu_model(&g);
  ADD(node, mk_node("Neg", "self", NAMES("s"), NAMES("s")));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "cycle", "'self'");
}

static void test_duplicate_producer(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  ADD(node, mk_node("Neg", "neg", NAMES("x"), NAMES("y")));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "tensor 'y' is produced twice",
              "by node 'relu' and by node 'neg' (Neg)");

  m = relu_model(&g);
  ADD(node, mk_node("Neg", "neg", NAMES("y"), NAMES("x")));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "tensor 'x' is produced twice", "a graph input");
}

static void test_bad_inputs_and_outputs(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  g->input[0]->type->tensor_type->shape = NULL;
  expect_fail(m, AXLE_STATUS_UNSUPPORTED, "graph input 'x'", "no shape");

  m = relu_model(&g);
  g->input[0]->type->tensor_type->elem_type = 8;
  expect_fail(m, AXLE_STATUS_UNSUPPORTED, "graph input 'x'", "string");

  m = relu_model(&g);
  ADD(input, mk_value("big", AXLE_DTYPE_F32, 9, D(1, 1, 1, 1, 1, 1, 1, 1, 1)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "graph input 'big'", "more than 8");

  m = relu_model(&g);
  ADD(input, mk_value("x", AXLE_DTYPE_F32, 2, D(2, 3)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "graph input 'x'", "twice");

  m = relu_model(&g);
  ADD(output, mk_value("ghost", AXLE_DTYPE_F32, 1, D(1)));
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "graph output 'ghost'", "produced by no node");
}

static void test_bad_attributes(void) {
  Onnx__GraphProto* g;
  Onnx__ModelProto* m = relu_model(&g);
  Onnx__AttributeProto* a =
      mk_attr(g->node[0], "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = mk_graph();
  expect_fail(m, AXLE_STATUS_UNSUPPORTED, "node 'relu' (Relu)", "attribute 'then_branch'");

  m = relu_model(&g);
  a = mk_attr(g->node[0], "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = mk_tensor("", AXLE_DTYPE_F32, 1, D(2));
  set_raw(a->t, (float[]){1}, 4);
  expect_fail(m, AXLE_STATUS_INVALID_MODEL, "node 'relu' (Relu): attribute 'value'", "raw_data");

  /* Pre-IR-3 files leave the type out; it follows from the field set. */
  m = relu_model(&g);
  a = mk_attr(g->node[0], "alpha", 0);
  a->has_type = 0;
  a->has_f = 1;
  a->f = 0.5f;
  axle_graph_t gr;
  CU_ASSERT_EQUAL_FATAL(load(m, &gr), AXLE_OK);
  CU_ASSERT_EQUAL(axle_hal_node_attr(&gr.nodes[0], "alpha")->type, AXLE_HAL_ATTR_FLOAT);
  axle_graph_free(&gr);
}

/* ------------------------------------------------------------------------ */
/* Standalone TensorProto (.pb) decoding                                     */
/* ------------------------------------------------------------------------ */

static uint8_t* pack_tensor(const Onnx__TensorProto* t, size_t* len) {
  *len = onnx__tensor_proto__get_packed_size(t);
  uint8_t* buf = talloc(*len);
  onnx__tensor_proto__pack(t, buf);
  return buf;
}

static void test_tensor_decode(void) {
  Onnx__TensorProto* t = mk_tensor("input_0", AXLE_DTYPE_I64, 2, D(2, 2));
  t->n_int64_data = 4;
  t->int64_data = tdup((int64_t[]){1, -2, 3, INT64_MAX}, 32);
  size_t len;
  uint8_t* bytes = pack_tensor(t, &len);
  axle_dtype_t dtype;
  uint32_t rank;
  int64_t shape[AXLE_MAX_RANK];
  void* data;
  size_t size;
  CU_ASSERT_EQUAL_FATAL(
      axle_onnx_tensor_decode(bytes, len, "input_0.pb", &dtype, &rank, shape, &data, &size),
      AXLE_OK);
  CU_ASSERT_EQUAL(dtype, AXLE_DTYPE_I64);
  CU_ASSERT_EQUAL(rank, 2);
  CU_ASSERT(shape[0] == 2 && shape[1] == 2 && shape[2] == 0);
  CU_ASSERT_EQUAL(size, 32);
  CU_ASSERT_EQUAL(((int64_t*)data)[3], INT64_MAX);
  free(data);

  t = mk_tensor("half", AXLE_DTYPE_F16, 1, D(3));
  set_raw(t, (uint16_t[]){0x3c00, 0x0001, 0xfbff}, 6);
  bytes = pack_tensor(t, &len);
  CU_ASSERT_EQUAL_FATAL(axle_onnx_tensor_decode(bytes, len, NULL, &dtype, &rank, shape, &data,
                                                &size), AXLE_OK);
  CU_ASSERT_EQUAL(((uint16_t*)data)[2], 0xfbff);
  free(data);

  /* Every prefix fails cleanly or decodes, and nothing leaks on failure. */
  t = mk_tensor("w", AXLE_DTYPE_F32, 1, D(4));
  set_raw(t, (float[]){1, 2, 3, 4}, 16);
  bytes = pack_tensor(t, &len);
  for (size_t n = 0; n < len; ++n) {
    uint8_t* prefix = malloc(n ? n : 1);
    memcpy(prefix, bytes, n);
    axle_status_t st =
        axle_onnx_tensor_decode(prefix, n, "cut.pb", &dtype, &rank, shape, &data, &size);
    CU_ASSERT(st == AXLE_OK || st == AXLE_STATUS_INVALID_MODEL);
    if (st != AXLE_OK) CU_ASSERT_PTR_NULL(data);
    free(data);
    free(prefix);
  }

  t->raw_data.len = 12;
  bytes = pack_tensor(t, &len);
  CU_ASSERT_EQUAL(axle_onnx_tensor_decode(bytes, len, "w.pb", &dtype, &rank, shape, &data, &size),
                  AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "w.pb: tensor 'w' has 12 bytes"));
  CU_ASSERT_PTR_NULL(data);
  CU_ASSERT_EQUAL(dtype, AXLE_DTYPE_UNDEFINED);
}

/* ------------------------------------------------------------------------ */
/* Graph IR                                                                  */
/* ------------------------------------------------------------------------ */

static int32_t add_named(axle_graph_t* g, const char* name, uint32_t flags) {
  int32_t i = axle_graph_add_tensor(g, name);
  CU_ASSERT_FATAL(i >= 0);
  g->tensors[i].flags = flags;
  return i;
}

static void add_unary(axle_graph_t* g, const char* op, const char* name, int32_t in,
                      int32_t out) {
  axle_hal_node_t n = {.name = name, .op_type = op, .input_count = 1, .inputs = &in,
                       .output_count = 1, .outputs = &out};
  CU_ASSERT_FATAL(axle_graph_add_node(g, &n) >= 0);
}

static void test_graph_build_and_sort(void) {
  axle_graph_t g;
  axle_graph_init(&g);
  CU_ASSERT_STRING_EQUAL(g.source, "<memory>");
  CU_ASSERT_EQUAL(axle_graph_toposort(&g), AXLE_OK); /* empty graph */
  /* Many tensors, so the arrays grow and hal pointers must follow. */
  int32_t prev = add_named(&g, "in", AXLE_HAL_TENSOR_GRAPH_INPUT);
  char name[32];
  for (int i = 0; i < 100; ++i) {
    snprintf(name, sizeof(name), "t%d", i);
    add_named(&g, name, 0);
  }
  /* A chain t99 <- ... <- t0 <- in, appended in reverse. */
  for (int i = 99; i >= 0; --i) {
    snprintf(name, sizeof(name), "t%d", i);
    int32_t in = i == 0 ? prev : axle_graph_find_tensor(&g, name) - 1;
    add_unary(&g, "Relu", NULL, in, axle_graph_find_tensor(&g, name));
  }
  CU_ASSERT_PTR_EQUAL(g.hal.tensors, g.tensors);
  CU_ASSERT_EQUAL(g.hal.tensor_count, 101);
  CU_ASSERT_STRING_EQUAL(g.nodes[0].name, "Relu_0");
  CU_ASSERT_STRING_EQUAL(g.nodes[99].name, "Relu_99");
  CU_ASSERT_EQUAL(axle_graph_find_tensor(&g, "t57"), 58);
  CU_ASSERT_EQUAL(axle_graph_find_tensor(&g, "nope"), -1);
  CU_ASSERT_EQUAL_FATAL(axle_graph_toposort(&g), AXLE_OK);
  CU_ASSERT_STRING_EQUAL(g.nodes[0].name, "Relu_99"); /* the one reading "in" */
  for (uint32_t i = 1; i < g.node_count; ++i)
    CU_ASSERT_EQUAL(g.nodes[i].inputs[0], g.nodes[i - 1].outputs[0]);
  /* Sorting a sorted graph changes nothing. */
  axle_hal_node_t before[100];
  memcpy(before, g.nodes, sizeof(before));
  CU_ASSERT_EQUAL(axle_graph_toposort(&g), AXLE_OK);
  CU_ASSERT_EQUAL(memcmp(before, g.nodes, sizeof(before)), 0);

  /* A tensor nobody produces. */
  int32_t orphan = add_named(&g, "orphan", 0);
  add_unary(&g, "Neg", "uses_orphan", orphan, add_named(&g, "o", 0));
  CU_ASSERT_EQUAL(axle_graph_toposort(&g), AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(),
                                "node 'uses_orphan' (Neg): input 'orphan' is never produced"));
  g.tensors[orphan].flags = AXLE_HAL_TENSOR_CONSTANT;
  CU_ASSERT_EQUAL(axle_graph_toposort(&g), AXLE_OK);
  axle_graph_free(&g);
}

static void test_graph_stable_sort(void) {
  /* Independent nodes keep their relative order; dependants follow their
   * producers as early as possible. */
  axle_graph_t g;
  axle_graph_init(&g);
  int32_t x = add_named(&g, "x", AXLE_HAL_TENSOR_GRAPH_INPUT);
  int32_t a = add_named(&g, "a", 0), b = add_named(&g, "b", 0), c = add_named(&g, "c", 0);
  add_unary(&g, "Neg", "n0", b, c); /* needs n2 */
  add_unary(&g, "Neg", "n1", x, add_named(&g, "d", 0));
  add_unary(&g, "Neg", "n2", a, b); /* needs n3 */
  add_unary(&g, "Neg", "n3", x, a);
  add_unary(&g, "Neg", "n4", x, add_named(&g, "e", 0));
  CU_ASSERT_EQUAL_FATAL(axle_graph_toposort(&g), AXLE_OK);
  static const char* const order[] = {"n1", "n3", "n2", "n0", "n4"};
  for (uint32_t i = 0; i < 5; ++i) CU_ASSERT_STRING_EQUAL(g.nodes[i].name, order[i]);
  axle_graph_free(&g);
}

static void test_graph_clone(void) {
  axle_graph_t src, dst;
  CU_ASSERT_EQUAL_FATAL(load(valid_model(), &src), AXLE_OK);
  src.tensors[0].quant = (axle_hal_quant_t){
      .count = 2, .axis = 0, .scales = (const float[]){0.5f, 0.25f},
      .zero_points = (const int32_t[]){1, 2}};
  CU_ASSERT_EQUAL_FATAL(axle_graph_clone(&src, &dst), AXLE_OK);
  CU_ASSERT_EQUAL(dst.tensor_count, src.tensor_count);
  CU_ASSERT_EQUAL(dst.node_count, src.node_count);
  CU_ASSERT_EQUAL(dst.opset, 13);
  CU_ASSERT_EQUAL(dst.hal.opset, 13);
  CU_ASSERT_STRING_EQUAL(dst.source, "model.onnx");
  CU_ASSERT_PTR_NOT_EQUAL(dst.tensors, src.tensors);
  CU_ASSERT_PTR_NOT_EQUAL(dst.inputs, src.inputs);
  CU_ASSERT_EQUAL(dst.inputs[0], src.inputs[0]);
  CU_ASSERT_EQUAL(dst.outputs[0], src.outputs[0]);
  CU_ASSERT_PTR_NOT_EQUAL(dst.tensors[0].quant.scales, src.tensors[0].quant.scales);
  CU_ASSERT_EQUAL(dst.tensors[0].quant.zero_points[1], 2);
  for (uint32_t i = 0; i < src.tensor_count; ++i) {
    CU_ASSERT_STRING_EQUAL(dst.tensors[i].name, src.tensors[i].name);
    CU_ASSERT_PTR_EQUAL(dst.tensors[i].data, src.tensors[i].data); /* shared */
  }
  for (uint32_t i = 0; i < src.node_count; ++i) {
    CU_ASSERT_STRING_EQUAL(dst.nodes[i].name, src.nodes[i].name);
    CU_ASSERT_EQUAL(dst.nodes[i].input_count, src.nodes[i].input_count);
    for (uint32_t k = 0; k < src.nodes[i].input_count; ++k)
      CU_ASSERT_EQUAL(dst.nodes[i].inputs[k], src.nodes[i].inputs[k]);
    if (src.nodes[i].input_count) CU_ASSERT_PTR_NOT_EQUAL(dst.nodes[i].inputs, src.nodes[i].inputs);
    CU_ASSERT_EQUAL(dst.nodes[i].attr_count, src.nodes[i].attr_count);
  }
  const axle_hal_attr_t* a = axle_hal_node_attr(&dst.nodes[0], "tags");
  CU_ASSERT_STRING_EQUAL(a->strings[0], "a");
  CU_ASSERT_PTR_NOT_EQUAL(a->strings, axle_hal_node_attr(&src.nodes[0], "tags")->strings);
  /* Specialising the copy leaves the original alone. */
  dst.tensors[dst.inputs[0]].shape[0] = 8;
  CU_ASSERT_EQUAL(src.tensors[src.inputs[0]].shape[0], -1);
  src.tensors[0].quant = (axle_hal_quant_t){0};
  axle_graph_free(&dst);
  axle_graph_free(&src);
}

static void cleanup(void) {
  tmem_free();
  axle_status_clear();
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite load = CU_add_suite_with_setup_and_teardown("onnx_load", NULL, NULL, NULL, cleanup);
  CU_pSuite graph = CU_add_suite_with_setup_and_teardown("graph", NULL, NULL, NULL, cleanup);
  CU_add_test(load, "valid model", test_valid_model);
  CU_add_test(load, "initializer output, domains", test_initializer_as_output_and_domains);
  CU_add_test(load, "every truncation", test_truncated);
  CU_add_test(load, "corrupted bytes", test_corrupted);
  CU_add_test(load, "garbage and empty input", test_garbage_and_empty);
  CU_add_test(load, "deep nesting", test_deep_nesting);
  CU_add_test(load, "missing graph", test_missing_graph);
  CU_add_test(load, "missing opset", test_missing_opset);
  CU_add_test(load, "raw_data size mismatch", test_raw_size_mismatch);
  CU_add_test(load, "typed data count mismatch", test_typed_count_mismatch);
  CU_add_test(load, "bad initializers", test_bad_initializers);
  CU_add_test(load, "unknown input name", test_unknown_input);
  CU_add_test(load, "cycles", test_cycle);
  CU_add_test(load, "duplicate producers", test_duplicate_producer);
  CU_add_test(load, "bad graph inputs/outputs", test_bad_inputs_and_outputs);
  CU_add_test(load, "bad attributes", test_bad_attributes);
  CU_add_test(load, "TensorProto decode", test_tensor_decode);
  CU_add_test(graph, "build and sort", test_graph_build_and_sort);
  CU_add_test(graph, "stable sort", test_graph_stable_sort);
  CU_add_test(graph, "clone", test_graph_clone);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  free(g_mem);
  return failures ? 1 : 0;
}
