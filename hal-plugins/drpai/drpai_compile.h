/*
 * The DRP-AI compiler: Axle graph nodes (with the core's calibration on
 * every activation) -> a DRP-AI program. Int8 convolution, GEMM/MatMul,
 * pooling and table-driven activations run on the AI-MAC; quantization at the
 * inputs, dequantization at the outputs, Softmax post-processing and the
 * prepost YAML's image pipeline run as DRP stages.
 */
#ifndef AXLE_DRPAI_COMPILE_H_
#define AXLE_DRPAI_COMPILE_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"
#include "drpai_prepost.h"
#include "drpai_program.h"

/* AXLE_HAL_OK when the DRP-AI can run graph node `index`; otherwise a status
 * and a one-line reason naming the device, node and op. */
int32_t drpai_check_node(const axle_hal_graph_t* g, uint32_t index, char* reason, size_t reason_size);

typedef struct drpai_compiled_t {
  drpai_program_t program;
  uint32_t input_count, output_count;
  /* The graph tensor behind each io line (-1: the prepost camera input). */
  int32_t inputs[DRPAI_INFO_MAX_IO];
  int32_t outputs[DRPAI_INFO_MAX_IO];
} drpai_compiled_t;

/* Compiles nodes (graph indices in execution order). prepost (may be NULL)
 * puts the YAML's DRP pre-processing in front of the partition's only input
 * and its post-processing after its only output. The program's DRP-AI
 * addresses start at org_base. Returns an AXLE_HAL_* status; err says why. */
int32_t drpai_compile(const axle_hal_graph_t* g, const uint32_t* nodes, uint32_t node_count,
                      const drpai_prepost_t* prepost, uint32_t org_base, drpai_compiled_t* out,
                      char* err, size_t err_size);

/* Only the prepost YAML's pre-processing: camera input -> float32 output
 * "preprocessed" ([1,C,H,W] or [1,H,W,C]). */
int32_t drpai_compile_pre(const drpai_prepost_t* prepost, uint32_t org_base, drpai_compiled_t* out, char* err,
                          size_t err_size);

#endif /* AXLE_DRPAI_COMPILE_H_ */
