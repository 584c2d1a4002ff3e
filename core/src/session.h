/*
 * Session internals.
 *
 * Created once (session.c): the model's graph is cloned and specialised
 * (concrete shapes, constant inputs, folded constants), nodes are placed
 * (placement.c), cut into partitions of consecutive nodes on one device, each
 * tensor copy gets a location (an arena offset planned by liveness in
 * memory_plan.c, or a caller I/O slot), and every partition is compiled.
 * After creation the session is read-only except for its pool of execution
 * contexts and its trace, each behind its own mutex, so runs from several
 * threads proceed in parallel (executor.c).
 */
#ifndef AXLE_CORE_SESSION_H_
#define AXLE_CORE_SESSION_H_

#include <pthread.h>

#include "graph.h"
#include "host.h"
#include "model.h"
#include "runtime.h"
#include "trace.h"

/* A copy of tensor data between devices, done by the core before a partition. */
typedef struct axle_transfer_t {
  uint32_t src_dev, dst_dev;         /* session device indices */
  uint32_t src_slot, dst_slot;
  uint64_t src_offset, dst_offset;
  uint64_t bytes;
} axle_transfer_t;

typedef struct axle_partition_t {
  uint32_t dev;                      /* session device index */
  uint32_t first_node, node_count;   /* range in session->order */
  axle_hal_executable_t* exe;
  axle_hal_tensor_location_t* locations;
  uint32_t location_count;
  axle_transfer_t* transfers;        /* done before the partition runs */
  uint32_t transfer_count;
} axle_partition_t;

/* A graph output that no partition writes (an input or a constant). */
typedef struct axle_output_copy_t {
  uint32_t output;                   /* session output index */
  int32_t input;                     /* session input index, or -1 for constant */
  const void* constant;
  uint64_t bytes;
} axle_output_copy_t;

/* Per-node placement decision, for the report. */
typedef struct axle_node_placement_t {
  int32_t dev;                       /* session device index; -1 = not executed */
  const char* state;                 /* "placed", "fallback", "folded", "dead" */
  char* reasons;                     /* "; "-joined declines, malloc'd, or NULL */
} axle_node_placement_t;

typedef struct axle_exec_ctx_t axle_exec_ctx_t;

struct axle_session_t {
  axle_runtime_t* runtime;
  axle_model_t* model;               /* retained */
  axle_graph_t graph;                /* specialised clone */
  uint32_t flags;
  uint32_t threads;

  axle_device_t** devs;              /* devices the session uses */
  uint32_t dev_count;
  uint64_t* arena_bytes;             /* per session device */

  uint32_t* order;                   /* executed node indices, in order */
  uint32_t order_count;
  axle_partition_t* partitions;
  uint32_t partition_count;
  axle_node_placement_t* placement;  /* per graph node */

  uint32_t slot_count;               /* 1 + inputs + outputs */
  axle_output_copy_t* output_copies;
  uint32_t output_copy_count;
  uint64_t planned_peak_bytes, unplanned_bytes;

  pthread_mutex_t ctx_mu;            /* guards free_ctx */
  axle_exec_ctx_t* free_ctx;

  pthread_mutex_t pending_mu;        /* async runs still referencing the session */
  pthread_cond_t pending_cv;
  uint32_t pending;

  axle_trace_t trace;
};

/* placement.c: fills session->placement and a device per executed node
 * (node_dev, indexed by graph node). prefs are session device indices in
 * order of preference. */
axle_status_t axle_placement_run(axle_session_t* s, const uint32_t* prefs, uint32_t pref_count,
                                 int32_t cpu_dev, int32_t* node_dev);
/* Appends text for a declined placement to the node's reasons. */
void axle_placement_note(axle_session_t* s, uint32_t node, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* memory_plan.c: assigns offsets to intervals so that intervals alive at the
 * same time never overlap; returns the arena size. */
typedef struct axle_interval_t {
  uint64_t size;
  uint32_t first, last;              /* inclusive positions in execution order */
  uint64_t offset;                   /* result */
} axle_interval_t;
uint64_t axle_memory_plan(axle_interval_t* items, uint32_t count, uint64_t align);

/* calibrate.c: per-tensor uint8 quantization from sample runs on the CPU
 * (samples: sample_count x input_count tensors). Needs s->order. */
axle_status_t axle_session_calibrate(axle_session_t* s, axle_device_t* cpu,
                                     axle_tensor_t* const* samples, uint32_t sample_count);

/* executor.c */
axle_status_t axle_exec_ctx_acquire(axle_session_t* s, axle_exec_ctx_t** out_ctx);
void axle_exec_ctx_release(axle_session_t* s, axle_exec_ctx_t* ctx);
void axle_exec_ctx_destroy(axle_session_t* s, axle_exec_ctx_t* ctx);
/* Runs every partition with io[slot-1] as the host address of each caller
 * I/O slot. cancel may be NULL. */
axle_status_t axle_exec_run(axle_session_t* s, axle_exec_ctx_t* ctx, void* const* io,
                            uint64_t deadline_ns, volatile int32_t* cancel);

/* Index of the graph input called name, or -1; and the NOT_FOUND error that
 * lists the inputs there are. */
int32_t axle_session_find_input(const axle_graph_t* g, const char* name);
axle_status_t axle_session_unknown_input(const axle_graph_t* g, const char* name);
/* Points every output slot the caller did not bind (io[inputs + j] NULL) into
 * one new scratch block (*out_scratch, freed by the caller). */
axle_status_t axle_session_scratch_outputs(const axle_session_t* s, void** io, void** out_scratch);

/* Shared argument checking for run/submit: resolves names to session I/O
 * indices and validates dtype/shape. */
axle_status_t axle_session_bind_inputs(const axle_session_t* s, const char* const* names,
                                       axle_tensor_t* const* inputs, uint32_t count,
                                       void** io);
axle_status_t axle_session_resolve_outputs(const axle_session_t* s, const char* const* names,
                                           uint32_t count, uint32_t* indices);
/* Creates output tensors for outputs[i] == NULL, checks the others, and
 * fills io for them. */
axle_status_t axle_session_bind_outputs(const axle_session_t* s, const uint32_t* indices,
                                        uint32_t count, axle_tensor_t** outputs, int* created,
                                        void** io);

#endif /* AXLE_CORE_SESSION_H_ */
