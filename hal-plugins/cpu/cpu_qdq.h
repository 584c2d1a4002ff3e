/*
 * Integer QDQ patterns in the CPU plugin's compile step.
 *
 * A QDQ model (ONNX Runtime's quantize_static with QuantFormat.QDQ) keeps
 * float ops between DequantizeLinear and QuantizeLinear nodes. These
 * patterns become one integer step each, run where the QuantizeLinear ran:
 *
 *   QConv[u8]  DequantizeLinear(x: uint8, per-tensor)
 *              -> Conv(W = DequantizeLinear(constant int8, zero point 0,
 *                      per-tensor or per-channel on axis 0),
 *                      B = DequantizeLinear(constant int32, zero point 0,
 *                      scale exactly x_scale * w_scale) or absent)
 *              -> optional Relu / Clip (constant bounds)
 *              -> QuantizeLinear(per-tensor, uint8)
 *              on axle_qu8_conv, weights packed here once, requantisation
 *              scale[c] = x_scale * w_scale[c] / y_scale (float32, in that
 *              order) and the activation folded into the output clamp:
 *              QuantizeLinear is monotone, so Q(clip(v, lo, hi)) =
 *              clamp(Q(v), Q(lo), Q(hi)).
 *   QGemm[u8]  the same around Gemm(A [M, K], B [N, K], transB = 1, alpha =
 *              beta = 1): a 1x1 convolution of M one-pixel images.
 *   QAdd[u8]   DequantizeLinear(a), DequantizeLinear(b) (uint8, per-tensor)
 *              -> Add (same shapes) -> optional Relu / Clip
 *              -> QuantizeLinear(per-tensor, uint8)
 *              on axle_qu8_add, bit-identical to the float ops.
 *   QConvPair[u8]  a pointwise QConv whose output only a depthwise QConv
 *              reads (through its DequantizeLinear alone), where the
 *              kernels gain by a pair of the two (axle_qu8_conv_pair_pays):
 *              one step on axle_qu8_conv_pair, which never writes the
 *              expanded tensor out; the bits of the two QConv steps.
 *
 * The float tensors between the nodes are never written, so each link needs
 * the fusion rules of cpu_fuse.h (one reader, no graph output, lifetimes
 * re-planned). A DequantizeLinear whose readers all became integer steps
 * does not run; one with other readers still runs for them. Anything else
 * (uint8 weights, weight zero points, per-axis activations, broadcasting,
 * weights computed at run time, malformed scales) stays on the float ops.
 *
 * Thread safety: planning and prepare run at compile time on one thread;
 * the steps' run functions are reentrant (read-only parameters).
 */
#ifndef AXLE_CPU_QDQ_H_
#define AXLE_CPU_QDQ_H_

#include <stdint.h>

#include "axle/hal.h"
#include "cpu_op.h"

/* The graph nodes of one matched pattern. */
typedef struct cpu_qdq_match_t {
  const axle_hal_node_t* dq[3]; /* QConv, QGemm: x, w, bias (NULL: none); QAdd: a, b */
  const axle_hal_node_t* op;    /* Conv, Gemm or Add */
  const axle_hal_node_t* act;   /* Relu / Clip, or NULL */
  const axle_hal_node_t* q;     /* QuantizeLinear */
} cpu_qdq_match_t;

struct cpu_fuse_ctx_t;
struct cpu_fuse_result_t;
struct cpu_group_t;

/* Adds a CPU_GROUP_QCONV / QGEMM / QADD group to out for each pattern
 * among out's plain nodes, then marks the DequantizeLinear nodes only those
 * groups read as absorbed (each listed in the first group reading it),
 * then joins expansion / depthwise QConv groups into CPU_GROUP_QPAIR ones. */
void cpu_qdq_plan(const struct cpu_fuse_ctx_t* c, struct cpu_fuse_result_t* out);

/* The op of a group kind's steps (run only: no op-type lookup or check). */
const cpu_op_t* cpu_qdq_op(int32_t kind);

/* Prepare of a QDQ group's step (operands: the uint8 inputs -> the uint8
 * output): reads scales and weights from the group's nodes, packs the
 * weights. Failures name the node. */
int32_t cpu_qdq_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                        const struct cpu_group_t* grp);

#endif /* AXLE_CPU_QDQ_H_ */
