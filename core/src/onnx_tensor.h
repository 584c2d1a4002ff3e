/*
 * Standalone ONNX TensorProto decoding (onnx_load.c), for the .pb files of
 * the ONNX backend node tests. Uses the same checks and conversion as model
 * initializers.
 */
#ifndef AXLE_CORE_ONNX_TENSOR_H_
#define AXLE_CORE_ONNX_TENSOR_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/axle.h"

/* Parses a serialized TensorProto. On success *out_data is a malloc'd copy of
 * the elements in host byte order (row-major; caller frees; never NULL, even
 * for zero elements) and *out_bytes its size. source names the file in
 * messages. Outputs are zeroed first; on failure nothing is allocated. */
axle_status_t axle_onnx_tensor_decode(const void* data, size_t size, const char* source,
                                      axle_dtype_t* dtype, uint32_t* rank,
                                      int64_t shape[AXLE_MAX_RANK], void** out_data,
                                      size_t* out_bytes);

#endif /* AXLE_CORE_ONNX_TENSOR_H_ */
