/*
 * What the KPU can take from an Axle graph, node by node. k210_op_parse is
 * the one rule set: node_supported answers with it and the compiler builds
 * layers from what it returns, so the two never disagree.
 */
#ifndef AXLE_K210_OPS_H_
#define AXLE_K210_OPS_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"
#include "k210_quant.h"

/* Where a node sits in a KPU layer: conv -> batch norm -> activation -> pool. */
typedef enum k210_role_t { K210_ROLE_CONV, K210_ROLE_BN, K210_ROLE_ACT, K210_ROLE_POOL } k210_role_t;

typedef struct k210_op_t {
  k210_role_t role;
  const axle_hal_tensor_t* x; /* the image input */
  const axle_hal_tensor_t* y; /* the output */
  int32_t x_index, y_index;   /* their tensor indices */
  /* Conv: weights [M, C or 1, k, k], optional bias [M]; stride 1, 2 or 4
   * (2 and 4 become a left-top pick pool). */
  const axle_hal_tensor_t *w, *b;
  uint32_t ksize, stride;
  int depthwise;
  /* BatchNormalization (constants). */
  const axle_hal_tensor_t *bn_scale, *bn_bias, *bn_mean, *bn_var;
  double epsilon;
  /* Activation. */
  k210_act_fn_t act;
  /* Pooling: K210_POOL_*. */
  int pool_type;
} k210_op_t;

/* Parses graph node `node` into op. AXLE_HAL_OK, or AXLE_HAL_UNSUPPORTED with
 * a one-line reason naming device, node and op
 * ("k210: node 'c' (Conv): 5x5 kernels are not supported by the KPU ..."). */
int32_t k210_op_parse(const axle_hal_graph_t* g, uint32_t node, k210_op_t* op, char* reason,
                      size_t reason_size);

/* node_supported: k210_op_parse, and for an activation the note of how well
 * 16 segments fit it over the calibrated range. */
int32_t k210_node_check(const axle_hal_graph_t* g, uint32_t node, char* reason, size_t reason_size);

/* Calibrated range of a quantized tensor: [scale * (0 - zp), scale * (255 - zp)]. */
void k210_tensor_range(const axle_hal_tensor_t* t, double* lo, double* hi);

#endif /* AXLE_K210_OPS_H_ */
