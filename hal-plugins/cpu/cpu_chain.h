/*
 * Inverted-residual chains in the CPU plugin's compile step.
 *
 * MobileNetV2's block is a 1x1 expansion, a 3x3 depthwise Conv and a 1x1
 * projection, each with its batch norm and activation (the projection
 * perhaps with the residual Add). Where the expanded tensor is larger than
 * half the L2, the three run as one step, band by band on
 * axle_f32_conv_chain (kernels/f32/conv_chain.c says why), so that tensor
 * and the depthwise output are never written to memory.
 *
 * Planned after the Conv groups (cpu_fuse.h): three Convs whose links are
 * single-reader tensors, each one a Conv group or a Conv on its own with
 * constant weights, no residual before the projection, shapes the chain
 * kernel takes (axle_f32_conv_chain_supports). The chain replaces the
 * three; the step's operands are {x, residual (or absent)} -> output, run
 * where the projection's group ran. The arithmetic per element is that of
 * the three Conv steps, so outputs match the unchained program to float
 * rounding of the depthwise sums' order.
 *
 * Thread safety: planning and prepare run at compile time on one thread;
 * the run function is reentrant (read-only parameters).
 */
#ifndef AXLE_CPU_CHAIN_H_
#define AXLE_CPU_CHAIN_H_

#include <stdint.h>

#include "axle/hal.h"
#include "cpu_op.h"

struct cpu_fuse_ctx_t;
struct cpu_fuse_result_t;
struct cpu_group_t;

/* Replaces each chain of Conv groups and plain Convs in out by one
 * CPU_GROUP_CHAIN group (roles and group indices updated). Returns
 * AXLE_HAL_OK or AXLE_HAL_OUT_OF_MEMORY (out unchanged then). */
int32_t cpu_chain_plan(const struct cpu_fuse_ctx_t* c, struct cpu_fuse_result_t* out);

/* The op of chain steps (run only: no op-type lookup or check). */
const cpu_op_t* cpu_chain_op(void);

/* Prepare of a chain step: resolves and plans the three Convs, folds and
 * packs their weights. Failures name the Conv at fault. */
int32_t cpu_chain_prepare(const axle_hal_host_t* host, cpu_step_t* step,
                          const struct cpu_group_t* grp);

#endif /* AXLE_CPU_CHAIN_H_ */
