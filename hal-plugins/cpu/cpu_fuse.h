/*
 * Graph-level fusion inside the CPU plugin's compile step.
 *
 * A Conv absorbs the chain that follows it, in this order and each part
 * optional:
 *   BatchNormalization (constant statistics: folded into weights and bias),
 *   Add of a tensor shaped like the output (residual, added after the bias),
 *   Relu | Clip (constant bounds) | LeakyRelu (applied last).
 * A link is taken only when the tensor between the two nodes has that one
 * consumer in the whole graph (not only in this partition) and is not a
 * graph output, so nothing can ever read it. The group runs where its last
 * member ran (a residual may be computed between the Conv and the Add) and
 * writes the last member's output; the others become no-ops.
 *
 * Running a group late, and writing its result straight from the Conv,
 * changes how long tensors live, so the core's memory plan no longer holds:
 * a fused Conv would read its input from memory the plan lets its own output
 * share. When a partition has fusions, the plugin therefore re-plans the
 * tensors that live only inside the partition ("internal") into a private
 * per-run arena with the fused lifetimes; tensors other partitions or the
 * caller see keep the core's locations, and a group is never stretched over
 * a node that writes one of those.
 *
 * Nothing is fused when the core compiles with
 * AXLE_HAL_COMPILE_KEEP_INTERMEDIATES (calibration reads every intermediate
 * back). AXLE_CPU_FUSION=0 turns fusion off, to tell a fusion problem from a
 * kernel problem.
 */
#ifndef AXLE_CPU_FUSE_H_
#define AXLE_CPU_FUSE_H_

#include <stdint.h>

#include "axle/hal.h"
#include "cpu_op.h"

#define CPU_FUSE_MAX_MEMBERS 4

enum { CPU_ACT_NONE = 0, CPU_ACT_CLAMP = 1, CPU_ACT_LEAKY = 2 };

/* What a fused Conv step does beyond the convolution. */
typedef struct cpu_fusion_t {
  const axle_hal_node_t* bn; /* BatchNormalization folded into the weights, or NULL */
  int32_t residual;          /* tensor added before the activation (step input 3), or -1 */
  int32_t act;               /* CPU_ACT_* */
  float min, max;            /* CPU_ACT_CLAMP */
  float alpha;               /* CPU_ACT_LEAKY */
} cpu_fusion_t;

typedef struct cpu_group_t {
  uint32_t members[CPU_FUSE_MAX_MEMBERS]; /* subgraph positions, head (the Conv) first */
  uint32_t count;
  int32_t output;                         /* tensor the group writes */
  cpu_fusion_t fusion;
} cpu_group_t;

/* Role of a subgraph position in the fused program. */
enum { CPU_ROLE_PLAIN = -1, CPU_ROLE_ABSORBED = -2 };

typedef struct cpu_fuse_result_t {
  uint32_t group_count;
  cpu_group_t* groups;
  int32_t* role;     /* per position: CPU_ROLE_*, or the group whose last member it is */
  uint8_t* internal; /* per graph tensor: lives only inside this partition */
} cpu_fuse_result_t;

/* Plans the fusions of sg. Allocates with malloc; cpu_fuse_free releases.
 * Returns AXLE_HAL_OK or AXLE_HAL_OUT_OF_MEMORY. */
int32_t cpu_fuse_plan(const axle_hal_subgraph_t* sg, int keep_intermediates,
                      cpu_fuse_result_t* out);
void cpu_fuse_free(cpu_fuse_result_t* r);

/* Offsets for `count` buffers with sizes and [first, last] step intervals
 * (inclusive; buffers whose intervals meet never share bytes): greedy by
 * size into the lowest gap. Returns the arena size; offsets are `align`
 * aligned. */
uint64_t cpu_plan_offsets(uint32_t count, const uint64_t* size, const uint32_t* first,
                          const uint32_t* last, uint64_t align, uint64_t* offset);

/* Prepare of a Conv step with fusion f (NULL: plain Conv); in cpu_ops_nn.c. */
int32_t cpu_conv_prepare_fused(const axle_hal_host_t* host, cpu_step_t* step,
                               const cpu_fusion_t* f);

#endif /* AXLE_CPU_FUSE_H_ */
