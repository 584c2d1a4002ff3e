/*
 * Band-by-band chains in the CPU plugin's compile step.
 *
 * MobileNetV2's block is a 1x1 expansion, a 3x3 depthwise Conv and a 1x1
 * projection, each with its batch norm and activation (the projection
 * perhaps with the residual Add). Where the expanded tensor is larger than
 * half the L2, the three run as one step, band by band on
 * axle_f32_conv_chain (kernels/f32/conv_chain.c says why), so that tensor
 * and the depthwise output are never written to memory.
 *
 * Likewise a Conv (with its batch norm and activation, no residual) whose
 * only reader is a MaxPool (ResNet's stem) runs with it as one step on
 * axle_f32_conv_pool (kernels/f32/conv_pool.c) where the Conv's output of
 * one image is larger than half the L2: the convolution's rows go into a
 * per-thread buffer that the pooling reads, band after band.
 *
 * Planned after the Conv groups (cpu_fuse.h): Convs whose links are
 * single-reader tensors, each one a Conv group or a Conv on its own with
 * constant weights, no residual before the projection, shapes the kernels
 * take (axle_f32_conv_chain_supports, axle_f32_conv_pool_supports). The
 * chain replaces its members; the step's operands are {x, residual (or
 * absent)} -> output for an inverted-residual chain, {x} -> pooled output
 * for a Conv -> MaxPool one, run where the last member ran. The arithmetic
 * per element is that of the separate steps, so outputs match the unchained
 * program to float rounding of the sums' order.
 *
 * Thread safety: planning and prepare run at compile time on one thread;
 * the run functions are reentrant (read-only parameters).
 */
#ifndef AXLE_CPU_CHAIN_H_
#define AXLE_CPU_CHAIN_H_

#include <stdint.h>

#include "axle/hal.h"
#include "cpu_op.h"

struct cpu_fuse_ctx_t;
struct cpu_fuse_result_t;
struct cpu_group_t;

/* Replaces each chain of Conv groups and plain Convs (and a MaxPool) in out
 * by one CPU_GROUP_CHAIN (CPU_GROUP_CONV_POOL) group (roles and group
 * indices updated). Returns
 * AXLE_HAL_OK or AXLE_HAL_OUT_OF_MEMORY (out unchanged then). */
int32_t cpu_chain_plan(const struct cpu_fuse_ctx_t* c, struct cpu_fuse_result_t* out);

/* The op of chain steps of group kind `kind` (CPU_GROUP_CHAIN: "ConvChain",
 * CPU_GROUP_CONV_POOL: "ConvPool"; run only: no op-type lookup or check). */
const cpu_op_t* cpu_chain_op(int32_t kind);

/* Prepare of a chain step: resolves and plans the Convs (and the MaxPool),
 * folds and packs their weights. Failures name the node at fault. */
int32_t cpu_chain_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                          const struct cpu_group_t* grp);

#endif /* AXLE_CPU_CHAIN_H_ */
