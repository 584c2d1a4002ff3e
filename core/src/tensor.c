#include "tensor.h"

#include <stdlib.h>
#include <string.h>

#include "status.h"

size_t axle_dtype_size(axle_dtype_t dtype) { return axle_hal_dtype_size((int32_t)dtype); }

const char* axle_dtype_name(axle_dtype_t dtype) {
  switch (dtype) {
    case AXLE_DTYPE_F32: return "float32";
    case AXLE_DTYPE_U8: return "uint8";
    case AXLE_DTYPE_I8: return "int8";
    case AXLE_DTYPE_U16: return "uint16";
    case AXLE_DTYPE_I16: return "int16";
    case AXLE_DTYPE_I32: return "int32";
    case AXLE_DTYPE_I64: return "int64";
    case AXLE_DTYPE_STRING: return "string";
    case AXLE_DTYPE_BOOL: return "bool";
    case AXLE_DTYPE_F16: return "float16";
    case AXLE_DTYPE_F64: return "float64";
    case AXLE_DTYPE_U32: return "uint32";
    case AXLE_DTYPE_U64: return "uint64";
    case AXLE_DTYPE_BF16: return "bfloat16";
    case AXLE_DTYPE_UNDEFINED: break;
  }
  return "undefined";
}

axle_status_t axle_tensor_check_shape(axle_dtype_t dtype, uint32_t rank, const int64_t* shape,
                                      int64_t* out_elements, size_t* out_bytes) {
  size_t esize = axle_dtype_size(dtype);
  if (esize == 0)
    return axle_status_make(AXLE_STATUS_UNSUPPORTED, "tensor dtype %d (%s) is not supported",
                            (int)dtype, axle_dtype_name(dtype));
  if (rank > AXLE_MAX_RANK || (rank && !shape))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "tensor rank %u exceeds %d", rank,
                            AXLE_MAX_RANK);
  int64_t n = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "tensor dimension %u is negative",
                              i);
    if (shape[i] && n > INT64_MAX / shape[i] / (int64_t)esize)
      return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "tensor size overflows");
    n *= shape[i];
  }
  *out_elements = n;
  *out_bytes = (size_t)n * esize;
  return AXLE_OK;
}

static axle_status_t tensor_alloc(axle_dtype_t dtype, uint32_t rank, const int64_t* shape,
                                  size_t extra, axle_tensor_t** out) {
  int64_t elements;
  size_t bytes;
  axle_status_t st = axle_tensor_check_shape(dtype, rank, shape, &elements, &bytes);
  if (st != AXLE_OK) return st;
  /* Header and data in one block: one malloc per output tensor per run. */
  size_t header = (sizeof(axle_tensor_t) + 63) & ~(size_t)63;
  size_t total = header + ((extra + 63) & ~(size_t)63);
  axle_tensor_t* t = (axle_tensor_t*)aligned_alloc(64, total < header ? header : total);
  if (!t) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory (%zu bytes)", total);
  memset(t, 0, sizeof(*t));
  t->refcount = 1;
  t->dtype = dtype;
  t->rank = rank;
  if (rank) memcpy(t->shape, shape, rank * sizeof(int64_t));
  t->elements = elements;
  t->bytes = bytes;
  if (extra) t->data = (char*)t + header;
  *out = t;
  return AXLE_OK;
}

axle_status_t axle_tensor_create(axle_dtype_t dtype, uint32_t rank, const int64_t* shape,
                                 axle_tensor_t** out_tensor) {
  if (!out_tensor) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = NULL;
  int64_t elements;
  size_t bytes;
  axle_status_t st = axle_tensor_check_shape(dtype, rank, shape, &elements, &bytes);
  if (st != AXLE_OK) return st;
  st = tensor_alloc(dtype, rank, shape, bytes ? bytes : 1, out_tensor);
  if (st == AXLE_OK) memset((*out_tensor)->data, 0, bytes);
  return st;
}

axle_status_t axle_tensor_wrap(axle_dtype_t dtype, uint32_t rank, const int64_t* shape,
                               void* data, size_t size, void (*release_fn)(void*), void* user,
                               axle_tensor_t** out_tensor) {
  if (!out_tensor) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = NULL;
  axle_tensor_t* t = NULL;
  axle_status_t st = tensor_alloc(dtype, rank, shape, 0, &t);
  if (st != AXLE_OK) return st;
  if (size < t->bytes || (!data && t->bytes)) {
    size_t need = t->bytes;
    free(t);
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "wrapped memory holds %zu bytes but the tensor needs %zu", size, need);
  }
  t->data = data;
  t->release_fn = release_fn;
  t->user = user;
  *out_tensor = t;
  return AXLE_OK;
}

axle_status_t axle_tensor_create_on_buffer(axle_buffer_t* buffer, uint64_t offset,
                                           axle_dtype_t dtype, uint32_t rank,
                                           const int64_t* shape, axle_tensor_t** out_tensor) {
  if (!out_tensor) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = NULL;
  if (!buffer) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "buffer is NULL");
  axle_tensor_t* t = NULL;
  axle_status_t st = tensor_alloc(dtype, rank, shape, 0, &t);
  if (st != AXLE_OK) return st;
  if (offset > buffer->size || buffer->size - offset < t->bytes) {
    size_t need = t->bytes;
    free(t);
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "tensor of %zu bytes at offset %llu does not fit a buffer of %llu",
                            need, (unsigned long long)offset,
                            (unsigned long long)buffer->size);
  }
  axle_buffer_retain(buffer);
  t->buffer = buffer;
  t->offset = offset;
  *out_tensor = t;
  return AXLE_OK;
}

void axle_tensor_retain(axle_tensor_t* t) {
  if (t) __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
}

void axle_tensor_release(axle_tensor_t* t) {
  if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (t->release_fn) t->release_fn(t->user);
  if (t->buffer) {
    if (t->data) axle_buffer_unmap(t->buffer);
    axle_buffer_release(t->buffer);
  }
  free((void*)t->quant.scales);
  free((void*)t->quant.zero_points);
  free(t);
}

axle_dtype_t axle_tensor_dtype(const axle_tensor_t* t) { return t ? t->dtype : AXLE_DTYPE_UNDEFINED; }
uint32_t axle_tensor_rank(const axle_tensor_t* t) { return t ? t->rank : 0; }
const int64_t* axle_tensor_shape(const axle_tensor_t* t) { return t ? t->shape : NULL; }
int64_t axle_tensor_element_count(const axle_tensor_t* t) { return t ? t->elements : 0; }
size_t axle_tensor_byte_size(const axle_tensor_t* t) { return t ? t->bytes : 0; }

void* axle_tensor_data(axle_tensor_t* t) {
  if (!t) return NULL;
  if (!t->data && t->buffer) {
    void* base = NULL;
    if (axle_buffer_map(t->buffer, &base) != AXLE_OK) return NULL;
    t->data = (char*)base + t->offset;
  }
  return t->data;
}

axle_status_t axle_tensor_set_quant(axle_tensor_t* t, const axle_quant_t* q) {
  if (!t || !q) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "tensor and quant are required");
  if (q->count && (!q->scales || !q->zero_points))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "quantization needs scales and zero points");
  if (q->count > 1 && (q->axis < 0 || (uint32_t)q->axis >= t->rank || t->shape[q->axis] != q->count))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "per-channel quantization: %u scales do not match axis %d", q->count,
                            q->axis);
  float* scales = NULL;
  int32_t* zps = NULL;
  if (q->count) {
    scales = (float*)malloc(q->count * sizeof(float));
    zps = (int32_t*)malloc(q->count * sizeof(int32_t));
    if (!scales || !zps) {
      free(scales);
      free(zps);
      return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(scales, q->scales, q->count * sizeof(float));
    memcpy(zps, q->zero_points, q->count * sizeof(int32_t));
  }
  free((void*)t->quant.scales);
  free((void*)t->quant.zero_points);
  t->quant.count = q->count;
  t->quant.axis = q->axis;
  t->quant.scales = scales;
  t->quant.zero_points = zps;
  return AXLE_OK;
}

axle_quant_t axle_tensor_quant(const axle_tensor_t* t) {
  axle_quant_t none = {0, 0, NULL, NULL};
  return t ? t->quant : none;
}
