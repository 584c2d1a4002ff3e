#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx/onnx.pb-c.h"
#include "onnx_tensor.h"
#include "status.h"

/* protobuf-c recurses once per nested message with no limit, so a small
 * crafted file (attribute -> graph -> node -> attribute -> ...) could exhaust
 * the stack. The wire format is walked first and refused past this depth,
 * the default limit of protobuf's own parsers. */
#define AXLE_ONNX_MAX_DEPTH 100

/* Messages quote names at most this long so that a hostile name cannot push
 * the reason out of the fixed-size status message. */
#define AXLE_ONNX_WHAT 320

/* ------------------------------------------------------------------------ */
/* Wire-format pre-check                                                     */
/* ------------------------------------------------------------------------ */

static int axle_wire_varint(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 1;
    }
  }
  return 0;
}

/* 1: framing is sound and nesting stays within the limit; 0: malformed;
 * -1: nested too deep. */
static int axle_wire_check(const ProtobufCMessageDescriptor* d, const uint8_t* p,
                           const uint8_t* end, unsigned depth) {
  while (p < end) {
    uint64_t key, v;
    if (!axle_wire_varint(&p, end, &key)) return 0;
    switch (key & 7) {
      case 0:
        if (!axle_wire_varint(&p, end, &v)) return 0;
        break;
      case 1:
        if (end - p < 8) return 0;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return 0;
        p += 4;
        break;
      case 2: {
        if (!axle_wire_varint(&p, end, &v) || v > (uint64_t)(end - p)) return 0;
        const ProtobufCFieldDescriptor* f =
            (key >> 3) <= UINT_MAX
                ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (depth >= AXLE_ONNX_MAX_DEPTH) return -1;
          int r = axle_wire_check((const ProtobufCMessageDescriptor*)f->descriptor, p, p + v,
                                  depth + 1);
          if (r <= 0) return r;
        }
        p += v;
        break;
      }
      default:
        return 0; /* groups (3, 4) do not occur in onnx.proto */
    }
  }
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct axle_onnx_tensor_desc_t {
  axle_dtype_t dtype;
  uint32_t rank;
  int64_t shape[AXLE_MAX_RANK];
  size_t count, bytes;
} axle_onnx_tensor_desc_t;

static axle_status_t axle_onnx_dtype_check(int32_t t, const char* src, const char* what) {
  switch (t) {
    case AXLE_DTYPE_F32: case AXLE_DTYPE_U8: case AXLE_DTYPE_I8: case AXLE_DTYPE_U16:
    case AXLE_DTYPE_I16: case AXLE_DTYPE_I32: case AXLE_DTYPE_I64: case AXLE_DTYPE_BOOL:
    case AXLE_DTYPE_F16: case AXLE_DTYPE_F64: case AXLE_DTYPE_U32: case AXLE_DTYPE_U64:
    case AXLE_DTYPE_BF16:
      return AXLE_OK;
    case 0:
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: %s has no data type", src, what);
  }
  static const char* const kUnsupported[] = {
      [8] = "string", [14] = "complex64", [15] = "complex128", [17] = "float8e4m3fn",
      [18] = "float8e4m3fnuz", [19] = "float8e5m2", [20] = "float8e5m2fnuz", [21] = "uint4",
      [22] = "int4", [23] = "float4e2m1", [24] = "float8e8m0", [25] = "uint2", [26] = "int2"};
  if (t > 0 && (size_t)t < sizeof(kUnsupported) / sizeof(kUnsupported[0]) && kUnsupported[t])
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: %s has data type %s, which Axle does "
                            "not support", src, what, kUnsupported[t]);
  return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: %s has unknown data type %d", src,
                          what, (int)t);
}

/* The typed field that holds dtype's values when raw_data is absent (the ONNX
 * spec packs every small integer type, bool and 16-bit floats into int32_data). */
static size_t axle_onnx_typed_count(const Onnx__TensorProto* t, axle_dtype_t dtype,
                                    const char** field) {
  switch (dtype) {
    case AXLE_DTYPE_F32: *field = "float_data"; return t->n_float_data;
    case AXLE_DTYPE_F64: *field = "double_data"; return t->n_double_data;
    case AXLE_DTYPE_I64: *field = "int64_data"; return t->n_int64_data;
    case AXLE_DTYPE_U32: case AXLE_DTYPE_U64: *field = "uint64_data"; return t->n_uint64_data;
    default: *field = "int32_data"; return t->n_int32_data;
  }
}

/* Validates what a TensorProto declares against the data it carries. */
static axle_status_t axle_onnx_tensor_check(const Onnx__TensorProto* t, const char* src,
                                            const char* what, axle_onnx_tensor_desc_t* d) {
  memset(d, 0, sizeof(*d));
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: %s keeps its data in an external "
                            "file (data_location EXTERNAL), which is not supported; save the "
                            "model with its weights embedded", src, what);
  if (t->segment)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                            "%s: %s is segmented, which is not supported", src, what);
  int32_t type = t->has_data_type ? t->data_type : 0;
  axle_status_t st = axle_onnx_dtype_check(type, src, what);
  if (st != AXLE_OK) return st;
  if (t->n_dims > AXLE_MAX_RANK)
    return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: %s has rank %zu, more than %d",
                            src, what, t->n_dims, AXLE_MAX_RANK);
  d->dtype = (axle_dtype_t)type;
  d->rank = (uint32_t)t->n_dims;
  int empty = 0;
  for (uint32_t i = 0; i < d->rank; ++i) {
    if (t->dims[i] < 0)
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: %s has negative dimension %lld at axis %u", src, what,
                              (long long)t->dims[i], i);
    d->shape[i] = t->dims[i];
    empty |= t->dims[i] == 0;
  }
  size_t es = axle_hal_dtype_size(d->dtype), count = 1;
  for (uint32_t i = 0; i < d->rank && !empty; ++i)
    if (__builtin_mul_overflow(count, (uint64_t)d->shape[i], &count) ||
        __builtin_mul_overflow(count, es, &d->bytes))
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: %s is too large", src, what);
  d->count = empty ? 0 : count;
  d->bytes = d->count * es;
  if (t->has_raw_data) {
    if (t->raw_data.len != d->bytes)
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: %s has %zu bytes of raw_data, but %zu %s elements need %zu",
                              src, what, t->raw_data.len, d->count, axle_dtype_name(d->dtype),
                              d->bytes);
    return AXLE_OK;
  }
  const char* field;
  size_t n = axle_onnx_typed_count(t, d->dtype, &field);
  if (n != d->count)
    return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                            "%s: %s has %zu values in %s, but its shape needs %zu", src, what,
                            n, field, d->count);
  return AXLE_OK;
}

static int axle_host_little_endian(void) {
  const uint16_t probe = 1;
  uint8_t first;
  memcpy(&first, &probe, 1);
  return first == 1;
}

/* Copies the checked tensor's elements into dst in host byte order. */
static void axle_onnx_tensor_copy(const Onnx__TensorProto* t, const axle_onnx_tensor_desc_t* d,
                                  void* dst) {
  if (d->bytes == 0) return;
  size_t n = d->count;
  if (t->has_raw_data) {
    /* raw_data is little-endian by definition. */
    memcpy(dst, t->raw_data.data, d->bytes);
    size_t es = axle_hal_dtype_size(d->dtype);
    if (es > 1 && !axle_host_little_endian())
      for (uint8_t* e = dst; e < (uint8_t*)dst + d->bytes; e += es)
        for (size_t a = 0, b = es - 1; a < b; ++a, --b) {
          uint8_t tmp = e[a];
          e[a] = e[b];
          e[b] = tmp;
        }
    return;
  }
  switch (d->dtype) {
    case AXLE_DTYPE_F32: memcpy(dst, t->float_data, d->bytes); break;
    case AXLE_DTYPE_F64: memcpy(dst, t->double_data, d->bytes); break;
    case AXLE_DTYPE_I64: memcpy(dst, t->int64_data, d->bytes); break;
    case AXLE_DTYPE_U64: memcpy(dst, t->uint64_data, d->bytes); break;
    case AXLE_DTYPE_I32: memcpy(dst, t->int32_data, d->bytes); break;
    case AXLE_DTYPE_U32:
      for (size_t i = 0; i < n; ++i) ((uint32_t*)dst)[i] = (uint32_t)t->uint64_data[i];
      break;
    case AXLE_DTYPE_I16: case AXLE_DTYPE_U16: case AXLE_DTYPE_F16: case AXLE_DTYPE_BF16:
      /* 16-bit floats travel as their bit pattern in the low half. */
      for (size_t i = 0; i < n; ++i) ((uint16_t*)dst)[i] = (uint16_t)(uint32_t)t->int32_data[i];
      break;
    case AXLE_DTYPE_BOOL:
      for (size_t i = 0; i < n; ++i) ((uint8_t*)dst)[i] = t->int32_data[i] != 0;
      break;
    default: /* I8, U8 */
      for (size_t i = 0; i < n; ++i) ((uint8_t*)dst)[i] = (uint8_t)(uint32_t)t->int32_data[i];
      break;
  }
}

axle_status_t axle_onnx_tensor_decode(const void* data, size_t size, const char* source,
                                      axle_dtype_t* dtype, uint32_t* rank,
                                      int64_t shape[AXLE_MAX_RANK], void** out_data,
                                      size_t* out_bytes) {
  *dtype = AXLE_DTYPE_UNDEFINED;
  *rank = 0;
  memset(shape, 0, AXLE_MAX_RANK * sizeof(int64_t));
  *out_data = NULL;
  *out_bytes = 0;
  if (!source) source = "<memory>";
  if (!data && size)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: tensor data is NULL", source);
  Onnx__TensorProto* t =
      onnx__tensor_proto__unpack(NULL, size, data ? data : (const void*)"");
  if (!t)
    return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                            "%s: not a valid ONNX TensorProto (truncated or corrupted)", source);
  char what[AXLE_ONNX_WHAT];
  if (t->name && t->name[0])
    snprintf(what, sizeof(what), "tensor '%.256s'", t->name);
  else
    snprintf(what, sizeof(what), "tensor");
  axle_onnx_tensor_desc_t d;
  axle_status_t st = axle_onnx_tensor_check(t, source, what, &d);
  if (st == AXLE_OK) {
    void* buf = malloc(d.bytes ? d.bytes : 1);
    if (!buf) {
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "%s: out of memory for %s (%zu bytes)",
                            source, what, d.bytes);
    } else {
      axle_onnx_tensor_copy(t, &d, buf);
      *dtype = d.dtype;
      *rank = d.rank;
      memcpy(shape, d.shape, sizeof(d.shape));
      *out_data = buf;
      *out_bytes = d.bytes;
    }
  }
  onnx__tensor_proto__free_unpacked(t, NULL);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Model loading                                                             */
/* ------------------------------------------------------------------------ */

typedef struct axle_onnx_loader_t {
  axle_graph_t* g;
  const char* src;
  int32_t* slots;        /* open-addressing name index: tensor index or -1 */
  size_t slot_mask;
  int32_t* producer;     /* per named tensor: producing node or -1 */
  axle_arena_t scratch;  /* temporary node arrays, dropped after loading */
} axle_onnx_loader_t;

static axle_status_t axle_onnx_oom(const axle_onnx_loader_t* L) {
  return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "%s: out of memory loading the model",
                          L->src);
}

/* The slot holding name, or the empty slot where it belongs. */
static int32_t* axle_onnx_slot(const axle_onnx_loader_t* L, const char* name) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char* p = (const unsigned char*)name; *p; ++p)
    h = (h ^ *p) * 1099511628211ull;
  size_t i = (size_t)h & L->slot_mask;
  while (L->slots[i] >= 0 && strcmp(L->g->tensors[L->slots[i]].name, name) != 0)
    i = (i + 1) & L->slot_mask;
  return &L->slots[i];
}

static int32_t axle_onnx_find(const axle_onnx_loader_t* L, const char* name) {
  return *axle_onnx_slot(L, name);
}

/* Adds a named tensor (the caller has checked the name is new). */
static axle_status_t axle_onnx_add(axle_onnx_loader_t* L, const char* name, int32_t* index) {
  *index = axle_graph_add_tensor(L->g, name);
  if (*index < 0) return axle_onnx_oom(L);
  *axle_onnx_slot(L, name) = *index;
  return AXLE_OK;
}

/* Decodes an initializer or attribute tensor into tensor `index`. */
static axle_status_t axle_onnx_constant(axle_onnx_loader_t* L, const Onnx__TensorProto* tp,
                                        const char* what, int32_t index) {
  axle_onnx_tensor_desc_t d;
  axle_status_t st = axle_onnx_tensor_check(tp, L->src, what, &d);
  if (st != AXLE_OK) return st;
  void* data = axle_arena_alloc(&L->g->arena, d.bytes ? d.bytes : 1, 64);
  if (!data) return axle_onnx_oom(L);
  axle_onnx_tensor_copy(tp, &d, data);
  axle_hal_tensor_t* t = &L->g->tensors[index];
  t->dtype = d.dtype;
  t->rank = d.rank;
  memcpy(t->shape, d.shape, sizeof(d.shape));
  t->data = data;
  t->size_bytes = d.bytes;
  t->flags |= AXLE_HAL_TENSOR_CONSTANT;
  return AXLE_OK;
}

/* Reads a ValueInfo's tensor type. Returns AXLE_OK or the code for *why; the
 * caller decides whether that is an error (graph inputs) or not (hints). */
static axle_status_t axle_onnx_value_type(const Onnx__ValueInfoProto* v, int32_t* elem,
                                          uint32_t* rank, int64_t shape[AXLE_MAX_RANK],
                                          const char** why) {
  const Onnx__TypeProto* tp = v->type;
  if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
    *why = "has no type";
    return AXLE_STATUS_INVALID_MODEL;
  }
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    *why = "is not a tensor (sequences, maps and optionals are not supported)";
    return AXLE_STATUS_UNSUPPORTED;
  }
  const Onnx__TypeProto__Tensor* tt = tp->tensor_type;
  *elem = tt->has_elem_type ? tt->elem_type : 0;
  if (!tt->shape) {
    *why = "has no shape (its rank is unknown)";
    return AXLE_STATUS_UNSUPPORTED;
  }
  if (tt->shape->n_dim > AXLE_MAX_RANK) {
    *why = "has more than 8 dimensions";
    return AXLE_STATUS_INVALID_MODEL;
  }
  *rank = (uint32_t)tt->shape->n_dim;
  for (uint32_t i = 0; i < *rank; ++i) {
    const Onnx__TensorShapeProto__Dimension* dim = tt->shape->dim[i];
    /* dim_param, a missing value and exporters' -1 all mean "symbolic". */
    shape[i] = dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                       dim->dim_value >= 0
                   ? dim->dim_value
                   : -1;
  }
  return AXLE_OK;
}

static void axle_onnx_set_type(axle_hal_tensor_t* t, int32_t dtype, uint32_t rank,
                               const int64_t* shape) {
  t->dtype = dtype;
  t->rank = rank;
  memset(t->shape, 0, sizeof(t->shape));
  uint64_t bytes = axle_hal_dtype_size(dtype);
  for (uint32_t i = 0; i < rank; ++i) {
    t->shape[i] = shape[i];
    if (shape[i] < 0 || __builtin_mul_overflow(bytes, (uint64_t)shape[i], &bytes)) bytes = 0;
  }
  t->size_bytes = bytes;
}

static const char* axle_onnx_node_label(const Onnx__NodeProto* n, size_t i, char* buf,
                                        size_t size) {
  if (n->name && n->name[0]) return n->name;
  /* Same name axle_graph_add_node() will generate for it. */
  snprintf(buf, size, "%s_%zu", n->op_type ? n->op_type : "", i);
  return buf;
}

static int axle_onnx_default_domain(const char* domain) {
  return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

/* Old exporters (IR < 3) leave the attribute type out; it follows from the
 * field that is set. */
static int axle_onnx_attr_type(const Onnx__AttributeProto* a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    return a->type;
  if (a->n_floats) return AXLE_HAL_ATTR_FLOATS;
  if (a->n_ints) return AXLE_HAL_ATTR_INTS;
  if (a->n_strings) return AXLE_HAL_ATTR_STRINGS;
  if (a->t) return AXLE_HAL_ATTR_TENSOR;
  if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  if (a->has_f) return AXLE_HAL_ATTR_FLOAT;
  if (a->has_i) return AXLE_HAL_ATTR_INT;
  if (a->has_s) return AXLE_HAL_ATTR_STRING;
  return 0;
}

static char* axle_onnx_bytes_string(axle_arena_t* a, const ProtobufCBinaryData* b) {
  char* s = axle_arena_alloc(a, b->len + 1, 1);
  if (s && b->len) memcpy(s, b->data, b->len);
  return s;
}

static axle_status_t axle_onnx_attr(axle_onnx_loader_t* L, const Onnx__AttributeProto* a,
                                    const char* node, const char* op, axle_hal_attr_t* out) {
  memset(out, 0, sizeof(*out));
  out->tensor = -1;
  if (!a->name || !a->name[0])
    return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                            "%s: node '%s' (%s): an attribute has no name", L->src, node, op);
  out->name = a->name;
  out->type = axle_onnx_attr_type(a);
  switch (out->type) {
    case AXLE_HAL_ATTR_FLOAT:
      out->f = a->f;
      return AXLE_OK;
    case AXLE_HAL_ATTR_INT:
      out->i = a->i;
      return AXLE_OK;
    case AXLE_HAL_ATTR_STRING:
      out->s = axle_onnx_bytes_string(&L->scratch, &a->s);
      return out->s ? AXLE_OK : axle_onnx_oom(L);
    case AXLE_HAL_ATTR_FLOATS:
      out->count = (uint32_t)a->n_floats;
      out->floats = a->floats;
      return AXLE_OK;
    case AXLE_HAL_ATTR_INTS:
      out->count = (uint32_t)a->n_ints;
      out->ints = a->ints;
      return AXLE_OK;
    case AXLE_HAL_ATTR_STRINGS: {
      char** strings = axle_arena_alloc(&L->scratch, (a->n_strings + 1) * sizeof(char*),
                                        sizeof(char*));
      if (!strings) return axle_onnx_oom(L);
      for (size_t i = 0; i < a->n_strings; ++i)
        if (!(strings[i] = axle_onnx_bytes_string(&L->scratch, &a->strings[i])))
          return axle_onnx_oom(L);
      out->count = (uint32_t)a->n_strings;
      out->strings = (const char* const*)strings;
      return AXLE_OK;
    }
    case AXLE_HAL_ATTR_TENSOR: {
      char what[AXLE_ONNX_WHAT];
      snprintf(what, sizeof(what), "node '%.128s' (%.64s): attribute '%.64s'", node, op,
               a->name);
      if (!a->t)
        return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: %s has no tensor", L->src,
                                what);
      /* Named after node and attribute; not entered in the name index, so it
       * can never capture a reference meant for a graph tensor. */
      char name[AXLE_ONNX_WHAT];
      snprintf(name, sizeof(name), "%.200s:%.100s", node, a->name);
      int32_t index = axle_graph_add_tensor(L->g, name);
      if (index < 0) return axle_onnx_oom(L);
      out->tensor = index;
      return axle_onnx_constant(L, a->t, what, index);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
      return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                              "%s: node '%s' (%s): attribute '%s' holds a subgraph; control "
                              "flow with subgraphs is not supported",
                              L->src, node, op, a->name);
    case 0:
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: node '%s' (%s): attribute '%s' has no type and no value",
                              L->src, node, op, a->name);
    default:
      return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                              "%s: node '%s' (%s): attribute '%s' has type %d (sparse tensors, "
                              "tensor lists and type protos are not supported)",
                              L->src, node, op, a->name, out->type);
  }
}

static axle_status_t axle_onnx_initializers(axle_onnx_loader_t* L, const Onnx__GraphProto* gp) {
  if (gp->n_sparse_initializer)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                            "%s: sparse initializers are not supported", L->src);
  for (size_t i = 0; i < gp->n_initializer; ++i) {
    const Onnx__TensorProto* tp = gp->initializer[i];
    if (!tp->name || !tp->name[0])
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: initializer #%zu has no name",
                              L->src, i);
    if (axle_onnx_find(L, tp->name) >= 0)
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: tensor '%s' is defined by two initializers", L->src,
                              tp->name);
    char what[AXLE_ONNX_WHAT];
    snprintf(what, sizeof(what), "initializer '%.256s'", tp->name);
    int32_t index;
    axle_status_t st = axle_onnx_add(L, tp->name, &index);
    if (st == AXLE_OK) st = axle_onnx_constant(L, tp, what, index);
    if (st != AXLE_OK) return st;
  }
  return AXLE_OK;
}

static axle_status_t axle_onnx_inputs(axle_onnx_loader_t* L, const Onnx__GraphProto* gp) {
  axle_graph_t* g = L->g;
  g->inputs = axle_arena_alloc(&g->arena, (gp->n_input + 1) * sizeof(int32_t), sizeof(int32_t));
  if (!g->inputs) return axle_onnx_oom(L);
  for (size_t i = 0; i < gp->n_input; ++i) {
    const Onnx__ValueInfoProto* v = gp->input[i];
    if (!v->name || !v->name[0])
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: graph input #%zu has no name",
                              L->src, i);
    int32_t index = axle_onnx_find(L, v->name);
    if (index >= 0) {
      /* An input with an initializer is a constant with a default value
       * (IR < 4 lists every weight as an input). */
      if (g->tensors[index].flags & AXLE_HAL_TENSOR_CONSTANT) continue;
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: graph input '%s' is listed twice",
                              L->src, v->name);
    }
    int32_t elem = 0;
    uint32_t rank = 0;
    int64_t shape[AXLE_MAX_RANK];
    const char* why = NULL;
    axle_status_t st = axle_onnx_value_type(v, &elem, &rank, shape, &why);
    if (st != AXLE_OK)
      return axle_status_make(st, "%s: graph input '%s' %s", L->src, v->name, why);
    char what[AXLE_ONNX_WHAT];
    snprintf(what, sizeof(what), "graph input '%.256s'", v->name);
    if ((st = axle_onnx_dtype_check(elem, L->src, what)) != AXLE_OK) return st;
    if ((st = axle_onnx_add(L, v->name, &index)) != AXLE_OK) return st;
    axle_onnx_set_type(&g->tensors[index], elem, rank, shape);
    g->tensors[index].flags |= AXLE_HAL_TENSOR_GRAPH_INPUT;
    g->inputs[g->input_count++] = index;
  }
  return AXLE_OK;
}

/* Creates every node output first, so nodes may refer to tensors produced
 * later in the file (the graph is sorted afterwards). */
static axle_status_t axle_onnx_node_outputs(axle_onnx_loader_t* L, const Onnx__GraphProto* gp) {
  char label[160], other[160];
  for (size_t i = 0; i < gp->n_node; ++i) {
    const Onnx__NodeProto* n = gp->node[i];
    for (size_t k = 0; k < n->n_output; ++k) {
      const char* name = n->output[k];
      if (!name[0]) continue;
      int32_t index = axle_onnx_find(L, name);
      if (index >= 0) {
        const axle_hal_tensor_t* t = &L->g->tensors[index];
        const char* by = t->flags & AXLE_HAL_TENSOR_CONSTANT      ? "an initializer"
                         : t->flags & AXLE_HAL_TENSOR_GRAPH_INPUT ? "a graph input"
                                                                  : "node";
        const char* prev = "";
        if (L->producer[index] >= 0) {
          size_t p = (size_t)L->producer[index];
          prev = axle_onnx_node_label(gp->node[p], p, other, sizeof(other));
        }
        return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                                "%s: tensor '%s' is produced twice: by %s%s%s%s and by node "
                                "'%s' (%s)",
                                L->src, name, by, prev[0] ? " '" : "", prev, prev[0] ? "'" : "",
                                axle_onnx_node_label(n, i, label, sizeof(label)),
                                n->op_type ? n->op_type : "");
      }
      axle_status_t st = axle_onnx_add(L, name, &index);
      if (st != AXLE_OK) return st;
      L->producer[index] = (int32_t)i;
    }
  }
  return AXLE_OK;
}

static axle_status_t axle_onnx_nodes(axle_onnx_loader_t* L, const Onnx__GraphProto* gp) {
  char label[160];
  for (size_t i = 0; i < gp->n_node; ++i) {
    const Onnx__NodeProto* n = gp->node[i];
    const char* name = axle_onnx_node_label(n, i, label, sizeof(label));
    if (!n->op_type || !n->op_type[0])
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: node '%s' has no op_type", L->src,
                              name);
    axle_hal_node_t node = {
        .name = n->name,
        .op_type = n->op_type,
        .domain = axle_onnx_default_domain(n->domain) ? "" : n->domain,
        .input_count = (uint32_t)n->n_input,
        .output_count = (uint32_t)n->n_output,
        .attr_count = (uint32_t)n->n_attribute,
    };
    int32_t* ins = axle_arena_alloc(&L->scratch, (n->n_input + 1) * sizeof(int32_t), 4);
    int32_t* outs = axle_arena_alloc(&L->scratch, (n->n_output + 1) * sizeof(int32_t), 4);
    axle_hal_attr_t* attrs = axle_arena_alloc(&L->scratch, (n->n_attribute + 1) * sizeof(*attrs),
                                              _Alignof(axle_hal_attr_t));
    if (!ins || !outs || !attrs) return axle_onnx_oom(L);
    for (size_t k = 0; k < n->n_input; ++k) {
      /* "" marks an omitted optional input. */
      ins[k] = n->input[k][0] ? axle_onnx_find(L, n->input[k]) : -1;
      if (n->input[k][0] && ins[k] < 0)
        return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                                "%s: node '%s' (%s): input '%s' names no tensor (it is no graph "
                                "input, initializer or node output)",
                                L->src, name, n->op_type, n->input[k]);
    }
    for (size_t k = 0; k < n->n_output; ++k)
      outs[k] = n->output[k][0] ? axle_onnx_find(L, n->output[k]) : -1;
    for (size_t k = 0; k < n->n_attribute; ++k) {
      axle_status_t st = axle_onnx_attr(L, n->attribute[k], name, n->op_type, &attrs[k]);
      if (st != AXLE_OK) return st;
    }
    node.inputs = ins;
    node.outputs = outs;
    node.attrs = attrs;
    if (axle_graph_add_node(L->g, &node) < 0) return axle_onnx_oom(L);
  }
  return AXLE_OK;
}

static axle_status_t axle_onnx_outputs(axle_onnx_loader_t* L, const Onnx__GraphProto* gp) {
  axle_graph_t* g = L->g;
  g->outputs =
      axle_arena_alloc(&g->arena, (gp->n_output + 1) * sizeof(int32_t), sizeof(int32_t));
  if (!g->outputs) return axle_onnx_oom(L);
  for (size_t i = 0; i < gp->n_output; ++i) {
    const Onnx__ValueInfoProto* v = gp->output[i];
    if (!v->name || !v->name[0])
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: graph output #%zu has no name",
                              L->src, i);
    int32_t index = axle_onnx_find(L, v->name);
    if (index < 0)
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: graph output '%s' is produced by no node, input or "
                              "initializer",
                              L->src, v->name);
    axle_hal_tensor_t* t = &g->tensors[index];
    if (t->flags & AXLE_HAL_TENSOR_GRAPH_OUTPUT)
      return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: graph output '%s' is listed twice",
                              L->src, v->name);
    t->flags |= AXLE_HAL_TENSOR_GRAPH_OUTPUT;
    g->outputs[g->output_count++] = index;
  }
  return AXLE_OK;
}

/* Declared types of node outputs (graph outputs, value_info) are only hints:
 * shape inference recomputes them, so unusable ones are skipped. */
static void axle_onnx_hints(axle_onnx_loader_t* L, Onnx__ValueInfoProto* const* infos,
                            size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const Onnx__ValueInfoProto* v = infos[i];
    int32_t index = v->name && v->name[0] ? axle_onnx_find(L, v->name) : -1;
    if (index < 0 || L->producer[index] < 0) continue;
    int32_t elem = 0;
    uint32_t rank = 0;
    int64_t shape[AXLE_MAX_RANK];
    const char* why;
    if (axle_onnx_value_type(v, &elem, &rank, shape, &why) != AXLE_OK ||
        axle_hal_dtype_size(elem) == 0)
      continue;
    axle_onnx_set_type(&L->g->tensors[index], elem, rank, shape);
  }
}

static axle_status_t axle_onnx_graph(axle_onnx_loader_t* L, const Onnx__ModelProto* m) {
  const Onnx__GraphProto* gp = m->graph;
  if (!gp) return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: the model has no graph", L->src);

  int has_opset = 0;
  for (size_t i = 0; i < m->n_opset_import; ++i) {
    const Onnx__OperatorSetIdProto* o = m->opset_import[i];
    if (axle_onnx_default_domain(o->domain) && o->has_version) {
      L->g->opset = o->version;
      has_opset = 1;
    }
  }
  for (size_t i = 0; i < gp->n_node && !has_opset; ++i)
    if (axle_onnx_default_domain(gp->node[i]->domain))
      return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                              "%s: the model imports no opset for the default ONNX domain",
                              L->src);

  /* Every name the index will hold; the file size (< 2 GiB) bounds it. */
  size_t names = gp->n_initializer + gp->n_input;
  for (size_t i = 0; i < gp->n_node; ++i) names += gp->node[i]->n_output;
  if (names >= INT32_MAX / 4)
    return axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s: the graph has too many tensors",
                            L->src);
  size_t slots = 16;
  while (slots < 2 * names) slots *= 2;
  L->slots = malloc(slots * sizeof(int32_t));
  L->producer = malloc((names + 1) * sizeof(int32_t));
  if (!L->slots || !L->producer) return axle_onnx_oom(L);
  memset(L->slots, 0xff, slots * sizeof(int32_t));
  memset(L->producer, 0xff, (names + 1) * sizeof(int32_t));
  L->slot_mask = slots - 1;

  axle_status_t st = axle_onnx_initializers(L, gp);
  if (st == AXLE_OK) st = axle_onnx_inputs(L, gp);
  if (st == AXLE_OK) st = axle_onnx_node_outputs(L, gp);
  if (st == AXLE_OK) st = axle_onnx_nodes(L, gp);
  if (st == AXLE_OK) st = axle_onnx_outputs(L, gp);
  if (st != AXLE_OK) return st;
  axle_onnx_hints(L, gp->output, gp->n_output);
  axle_onnx_hints(L, gp->value_info, gp->n_value_info);
  axle_graph_sync(L->g);
  return axle_graph_toposort(L->g);
}

/* g is (re)initialised here; on failure it is left empty. */
axle_status_t axle_onnx_load(const void* data, size_t size, const char* source,
                             axle_graph_t* g) {
  axle_graph_init(g);
  if (!source) source = "<memory>";
  if (!data && size)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "%s: model data is NULL", source);
  if (size > INT32_MAX)
    return axle_status_make(AXLE_STATUS_INVALID_MODEL,
                            "%s: %zu bytes exceed protobuf's 2 GiB limit; ONNX models that "
                            "large keep weights in external data, which is not supported",
                            source, size);
  axle_onnx_loader_t L = {.g = g};
  axle_arena_init(&L.scratch);
  L.src = axle_arena_strdup(&g->arena, source);
  if (!L.src) {
    L.src = source;
    return axle_onnx_oom(&L);
  }
  g->source = L.src;

  const uint8_t* bytes = data ? data : (const uint8_t*)"";
  int wire = axle_wire_check(&onnx__model_proto__descriptor, bytes, bytes + size, 0);
  Onnx__ModelProto* m = wire > 0 ? onnx__model_proto__unpack(NULL, size, bytes) : NULL;
  axle_status_t st;
  if (wire < 0)
    st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                          "%s: messages are nested more than %d levels deep", source,
                          AXLE_ONNX_MAX_DEPTH);
  else if (!m)
    st = axle_status_make(AXLE_STATUS_INVALID_MODEL,
                          "%s: not a valid ONNX model (protobuf parse failed: the file is "
                          "truncated or corrupted)",
                          source);
  else
    st = axle_onnx_graph(&L, m);

  if (m) onnx__model_proto__free_unpacked(m, NULL);
  free(L.slots);
  free(L.producer);
  axle_arena_free(&L.scratch);
  if (st != AXLE_OK) axle_graph_free(g);
  return st;
}
