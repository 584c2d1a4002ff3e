/*
 * Axle graph -> KPU program. Conv (1x1/3x3, normal or depthwise, stride 1,
 * or strides the pick pools express exactly), BatchNormalization, a monotonic
 * activation and 2x2/4x4 pooling fuse into KPU layers; u8 quantization comes
 * from the per-tensor quantization the core's calibration puts on float
 * tensors; weights are quantized per layer here. The result is a kmodel v3
 * file (with Axle's trailer naming the subgraph's inputs and outputs), which
 * the plugin then loads like any other kmodel.
 */
#ifndef AXLE_K210_COMPILE_H_
#define AXLE_K210_COMPILE_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"

typedef struct k210_compile_log_t {
  void* ctx;
  void (*note)(void* ctx, const char* message);
} k210_compile_log_t;

/* Compiles the nodes of sg into a kmodel (malloc'd bytes). flags are the
 * AXLE_HAL_COMPILE_* flags: with KEEP_INTERMEDIATES nothing is fused and
 * every tensor with a location is written. Returns an AXLE_HAL_* status; on
 * failure why names the node and the reason. */
int32_t k210_compile(const axle_hal_subgraph_t* sg, uint32_t flags, const k210_compile_log_t* log,
                     uint8_t** out, size_t* out_size, char* why, size_t why_size);

#endif /* AXLE_K210_COMPILE_H_ */
