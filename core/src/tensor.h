/* Tensor and buffer internals shared by tensor.c, buffer.c and the executor. */
#ifndef AXLE_CORE_TENSOR_H_
#define AXLE_CORE_TENSOR_H_

#include "axle/axle.h"
#include "runtime.h"

struct axle_buffer_t {
  int refcount;                      /* atomic */
  axle_device_t* device;
  axle_hal_memory_t* memory;
  uint64_t size;
  void* mapped;                      /* host view while map_count > 0 */
  int map_count;
  pthread_mutex_t mu;
};

struct axle_tensor_t {
  int refcount;                      /* atomic */
  axle_dtype_t dtype;
  uint32_t rank;
  int64_t shape[AXLE_MAX_RANK];
  int64_t elements;
  size_t bytes;
  void* data;                        /* host address; NULL until a buffer is mapped */
  axle_buffer_t* buffer;             /* retained, or NULL for host tensors */
  uint64_t offset;                   /* into buffer */
  void (*release_fn)(void* user);
  void* user;
  axle_quant_t quant;                /* arrays owned by the tensor */
};

/* Validates dtype/rank/shape and computes elements and bytes. */
axle_status_t axle_tensor_check_shape(axle_dtype_t dtype, uint32_t rank, const int64_t* shape,
                                      int64_t* out_elements, size_t* out_bytes);

#endif /* AXLE_CORE_TENSOR_H_ */
