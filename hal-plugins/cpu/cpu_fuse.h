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
 * Integer QDQ patterns (cpu_qdq.h) are groups too, planned first, with the
 * same single-reader links and lifetime rules. Inverted-residual chains and
 * Conv -> MaxPool steps (cpu_chain.h) are planned last, from the Conv
 * groups.
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
#include "axle_kernels.h"
#include "cpu_op.h"
#include "cpu_qdq.h"

/* A chain (cpu_chain.h) holds three Conv groups of up to four nodes each. */
#define CPU_FUSE_MAX_MEMBERS 12
#define CPU_GROUP_MAX_INPUTS 4

enum { CPU_ACT_NONE = 0, CPU_ACT_CLAMP = 1, CPU_ACT_LEAKY = 2 };

/* What a fused Conv step does beyond the convolution. */
typedef struct cpu_fusion_t {
  const axle_hal_node_t* bn; /* BatchNormalization folded into the weights, or NULL */
  int32_t residual;          /* tensor added before the activation (step input 3), or -1 */
  int32_t act;               /* CPU_ACT_* */
  float min, max;            /* CPU_ACT_CLAMP */
  float alpha;               /* CPU_ACT_LEAKY */
} cpu_fusion_t;

/* The three Convs of an inverted-residual chain (cpu_chain.h), each with
 * the fusion of its own group (only the projection's may add a residual);
 * or, for a Conv -> MaxPool chain, conv[0] and stage[0] and the MaxPool. */
typedef struct cpu_chain_t {
  const axle_hal_node_t* conv[3]; /* expansion, depthwise, projection */
  cpu_fusion_t stage[3];
  const axle_hal_node_t* pool; /* CPU_GROUP_CONV_POOL */
} cpu_chain_t;

/* What a group computes: a Conv with its fused followers (fusion), an
 * integer QDQ pattern (cpu_qdq.h: match; a pair of two: match, pair), an inverted-residual chain of
 * three such Convs or such a Conv and the MaxPool after it (cpu_chain.h:
 * chain). */
enum {
  CPU_GROUP_CONV = 0,
  CPU_GROUP_QCONV = 1,
  CPU_GROUP_QGEMM = 2,
  CPU_GROUP_QADD = 3,
  CPU_GROUP_CHAIN = 4,
  CPU_GROUP_CONV_POOL = 5,
  CPU_GROUP_QPAIR = 6
};

typedef struct cpu_group_t {
  int32_t kind;                           /* CPU_GROUP_* */
  uint32_t members[CPU_FUSE_MAX_MEMBERS]; /* subgraph positions, head (Conv / Add) first */
  uint32_t count;
  uint32_t position;                      /* where the group runs: its last node's position */
  int32_t inputs[CPU_GROUP_MAX_INPUTS];   /* the step's operand tensors (-1: absent) */
  uint32_t input_count;
  int32_t output;                         /* tensor the group writes */
  cpu_fusion_t fusion;                    /* CPU_GROUP_CONV */
  cpu_qdq_match_t match;                  /* CPU_GROUP_QCONV, QGEMM, QADD; QPAIR: the expansion */
  cpu_qdq_match_t pair;                   /* CPU_GROUP_QPAIR: the depthwise QConv */
  cpu_chain_t chain;                      /* CPU_GROUP_CHAIN, CPU_GROUP_CONV_POOL */
} cpu_group_t;

/* Role of a subgraph position in the fused program. */
enum { CPU_ROLE_PLAIN = -1, CPU_ROLE_ABSORBED = -2 };

typedef struct cpu_fuse_result_t {
  uint32_t group_count;
  cpu_group_t* groups;
  int32_t* role;     /* per position: CPU_ROLE_*, or the group whose last member it is */
  uint8_t* internal; /* per graph tensor: lives only inside this partition */
} cpu_fuse_result_t;

/* Plans the fusions of sg for a program that runs on `threads` threads
 * (some chains pay only at some counts). Allocates with malloc;
 * cpu_fuse_free releases. Returns AXLE_HAL_OK or AXLE_HAL_OUT_OF_MEMORY. */
int32_t cpu_fuse_plan(const axle_hal_subgraph_t* sg, int keep_intermediates, uint32_t threads,
                      cpu_fuse_result_t* out);
void cpu_fuse_free(cpu_fuse_result_t* r);

/* The graph as planning sees it, for the pattern matchers (cpu_qdq.c).
 * Built and owned by cpu_fuse_plan, valid during it. */
typedef struct cpu_fuse_ctx_t {
  const axle_hal_subgraph_t* sg;
  const axle_hal_graph_t* g;
  uint32_t* uses;        /* per tensor: input slots reading it, over the whole graph */
  int32_t* consumer;     /* per tensor: a node reading it (meaningful when uses == 1) */
  int32_t* position;     /* per graph node: subgraph position or -1 */
  int32_t* writer_pos;   /* per tensor: position of the node writing it, or -1 */
  int32_t* location;     /* per tensor: index into sg->locations, or -1 */
  uint32_t threads;      /* the program's thread count */
} cpu_fuse_ctx_t;

/* Whether n is op in the default domain. */
int cpu_fuse_is_op(const axle_hal_node_t* n, const char* op);
/* Whether t is a constant with data (NULL: no). */
int cpu_fuse_constant(const axle_hal_tensor_t* t);
/* a and b have the same rank and dimensions (dtypes may differ). */
int cpu_fuse_same_dims(const axle_hal_tensor_t* a, const axle_hal_tensor_t* b);
/* The position of the only reader of tensor t, if there is exactly one, it
 * is in this partition after position `after`, and t is not a graph output;
 * else -1. */
int32_t cpu_fuse_sole_reader(const cpu_fuse_ctx_t* c, int32_t t, uint32_t after);
/* Whether a group may run at position `to` although it reads its inputs
 * from position `from` on (see the lifetime note above). */
int cpu_fuse_may_delay(const cpu_fuse_ctx_t* c, const uint8_t* internal, uint32_t from,
                       uint32_t to);
/* Whether a group may write its output over no input it still reads. */
int cpu_fuse_output_safe(const cpu_fuse_ctx_t* c, const uint8_t* internal,
                         const cpu_group_t* grp);
/* Whether Conv node conv can be folded and packed at compile time: one
 * output, constant weights (and bias, if any), a float output. */
int cpu_fuse_conv_packable(const axle_hal_graph_t* g, const axle_hal_node_t* conv);
/* Fills f (act, min, max, alpha) when n is an activation a group can
 * apply last: Relu, Clip with constant bounds, LeakyRelu. */
int cpu_fuse_activation(const axle_hal_graph_t* g, const axle_hal_node_t* n, cpu_fusion_t* f);

/* Offsets for `count` buffers with sizes and [first, last] step intervals
 * (inclusive; buffers whose intervals meet never share bytes): greedy by
 * size into the lowest gap. Returns the arena size; offsets are `align`
 * aligned. */
uint64_t cpu_plan_offsets(uint32_t count, const uint64_t* size, const uint32_t* first,
                          const uint32_t* last, uint64_t align, uint64_t* offset);

/* The kernels' geometry of Conv node n (attributes resolved as the Conv op
 * does; the node must pass the Conv op's check). On failure err says why.
 * In cpu_ops_nn.c. */
int32_t cpu_conv_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                          axle_f32_conv_params_t* k, char* err, size_t err_size);
/* Whether the only reader of tensor t (in g) is a depthwise Conv (one
 * input channel per group) taking it as its data, directly or through a
 * DequantizeLinear read by nothing else (a QDQ model's next integer
 * step). Such a step splits its threads by channels, so the step writing t
 * should too. In cpu_ops_nn.c. */
int cpu_feeds_depthwise(const axle_hal_graph_t* g, const axle_hal_tensor_t* t);
/* The same for a MaxPool node (channels: batch x channels, as the MaxPool
 * op pools them). */
int32_t cpu_maxpool_geometry(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                             axle_f32_pool_params_t* k, char* err, size_t err_size);

/* Sets step->params to a zeroed block of `head` bytes whose tail (from
 * byte `head`, rounded up to 64) holds `floats` 64-byte aligned floats for
 * packed operands; *tail points at them. One block that free() releases;
 * large ones (packed weights streamed on every run) go on huge pages.
 * NULL when out of memory. In cpu_ops_nn.c. */
void* cpu_params_alloc_packed(cpu_step_t* step, size_t head, size_t floats, float** tail);

/* A Conv with constant weights and fusion f (NULL: none) as prepared for
 * plan: the floats its packed weights and bias take, and the packing into
 * tail (batch norm folded, bias after the weights) with ep's bias and
 * activation set. The pack returns AXLE_HAL_OK or AXLE_HAL_OUT_OF_MEMORY
 * (no message). In cpu_ops_nn.c. */
size_t cpu_conv_stage_floats(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                             const cpu_fusion_t* f, const axle_f32_conv_plan_t* plan);
int32_t cpu_conv_stage_pack(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                            const cpu_fusion_t* f, const axle_f32_conv_plan_t* plan,
                            float* tail, axle_f32_epilogue_t* ep);

/* Prepare of a Conv step with fusion f (NULL: plain Conv); in cpu_ops_nn.c. */
int32_t cpu_conv_prepare_fused(const axle_hal_host_t* host, cpu_step_t* step,
                               const cpu_fusion_t* f);

#endif /* AXLE_CPU_FUSE_H_ */
