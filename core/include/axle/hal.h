/*
 * Axle HAL plugin ABI.
 *
 * This header is the whole contract between the Axle core and a hardware
 * plugin. It is standalone on purpose: it includes only <stdint.h> and
 * <stddef.h>, so a plugin author can build against it without the rest of the
 * tree, and a plugin never links libaxle. Everything the plugin needs from the
 * core (memory, messages, completion, tracing, time) arrives in a host table.
 *
 * Versioning rules (Vulkan-loader style):
 *  - The plugin exports one symbol, AXLE_HAL_ENTRY_NAME, of type
 *    axle_hal_entry_fn. The core passes the highest ABI version it speaks; the
 *    plugin answers with a table whose header states the version it chose
 *    (<= the core's) and the size of the table it filled.
 *  - Every struct starts with struct_size. Readers only read the fields the
 *    writer's size covers; fields are only ever appended.
 *  - A NULL function pointer means "not implemented"; the core substitutes a
 *    generic behaviour or reports AXLE_HAL_UNSUPPORTED naming the plugin.
 *
 * Ownership: everything the core passes in (graphs, host table, bindings)
 * stays owned by the core and is valid for the duration of the call, except
 * the host table and graphs handed to compile(), which outlive every object the
 * plugin creates from them. Objects the plugin returns (devices, memory,
 * executables) are owned by the plugin and released through its own table.
 *
 * Threading: init/shutdown are called once, from one thread. Everything else
 * may be called from several threads at once for different objects; submit()
 * may be called concurrently for the same executable with different bindings.
 */
#ifndef AXLE_HAL_H_
#define AXLE_HAL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Highest plugin ABI version this header describes. */
#define AXLE_HAL_ABI_VERSION 1u
/* The one symbol a plugin exports. */
#define AXLE_HAL_ENTRY_NAME "axle_hal_plugin_entry"

/* Status codes: identical values to axle_status_t in axle.h. */
enum {
  AXLE_HAL_OK = 0,
  AXLE_HAL_INVALID_ARGUMENT = 1,
  AXLE_HAL_NOT_FOUND = 2,
  AXLE_HAL_UNSUPPORTED = 3,
  AXLE_HAL_OUT_OF_MEMORY = 4,
  AXLE_HAL_IO_ERROR = 5,
  AXLE_HAL_INVALID_MODEL = 6,
  AXLE_HAL_DEVICE_ERROR = 7,
  AXLE_HAL_TIMEOUT = 8,
  AXLE_HAL_CANCELLED = 9,
  AXLE_HAL_BUSY = 10,
  AXLE_HAL_ABI_MISMATCH = 11,
  AXLE_HAL_INTERNAL = 12,
  AXLE_HAL_PENDING = 13,
  AXLE_HAL_RESOURCE_EXHAUSTED = 14
};

/* Element types: identical values to axle_dtype_t in axle.h (ONNX numbering). */
enum {
  AXLE_HAL_DTYPE_UNDEFINED = 0,
  AXLE_HAL_DTYPE_F32 = 1,
  AXLE_HAL_DTYPE_U8 = 2,
  AXLE_HAL_DTYPE_I8 = 3,
  AXLE_HAL_DTYPE_U16 = 4,
  AXLE_HAL_DTYPE_I16 = 5,
  AXLE_HAL_DTYPE_I32 = 6,
  AXLE_HAL_DTYPE_I64 = 7,
  AXLE_HAL_DTYPE_STRING = 8,
  AXLE_HAL_DTYPE_BOOL = 9,
  AXLE_HAL_DTYPE_F16 = 10,
  AXLE_HAL_DTYPE_F64 = 11,
  AXLE_HAL_DTYPE_U32 = 12,
  AXLE_HAL_DTYPE_U64 = 13,
  AXLE_HAL_DTYPE_BF16 = 16
};

/* ------------------------------------------------------------------------ */
/* Graph, as the core hands it to plugins (read-only plain data).            */
/* ------------------------------------------------------------------------ */

#define AXLE_HAL_MAX_RANK 8

/* Tensor flags. */
#define AXLE_HAL_TENSOR_CONSTANT 0x1u    /* data holds the initializer */
#define AXLE_HAL_TENSOR_GRAPH_INPUT 0x2u
#define AXLE_HAL_TENSOR_GRAPH_OUTPUT 0x4u

typedef struct axle_hal_quant_t {
  uint32_t count;              /* 0 = not quantized; 1 = per tensor; else per channel */
  int32_t axis;                /* channel axis when count > 1 */
  const float* scales;         /* count entries */
  const int32_t* zero_points;  /* count entries */
} axle_hal_quant_t;

typedef struct axle_hal_tensor_t {
  const char* name;
  int32_t dtype;               /* AXLE_HAL_DTYPE_* */
  uint32_t rank;
  int64_t shape[AXLE_HAL_MAX_RANK]; /* fully known once a session is created */
  uint32_t flags;              /* AXLE_HAL_TENSOR_* */
  const void* data;            /* initializer bytes (row-major) or NULL */
  uint64_t size_bytes;         /* element count x element size */
  axle_hal_quant_t quant;
} axle_hal_tensor_t;

enum {
  AXLE_HAL_ATTR_FLOAT = 1,
  AXLE_HAL_ATTR_INT = 2,
  AXLE_HAL_ATTR_STRING = 3,
  AXLE_HAL_ATTR_TENSOR = 4,
  AXLE_HAL_ATTR_FLOATS = 6,
  AXLE_HAL_ATTR_INTS = 7,
  AXLE_HAL_ATTR_STRINGS = 8
};

typedef struct axle_hal_attr_t {
  const char* name;
  int32_t type;                /* AXLE_HAL_ATTR_* */
  uint32_t count;              /* element count of floats/ints/strings */
  int64_t i;
  float f;
  const char* s;               /* NUL-terminated (string attrs) */
  const int64_t* ints;
  const float* floats;
  const char* const* strings;
  int32_t tensor;              /* tensor index for TENSOR attributes, else -1 */
} axle_hal_attr_t;

typedef struct axle_hal_node_t {
  const char* name;            /* never NULL; generated when the model has none */
  const char* op_type;
  const char* domain;          /* "" for the default ONNX domain */
  uint32_t input_count;
  const int32_t* inputs;       /* tensor indices; -1 = omitted optional input */
  uint32_t output_count;
  const int32_t* outputs;
  uint32_t attr_count;
  const axle_hal_attr_t* attrs;
} axle_hal_node_t;

typedef struct axle_hal_graph_t {
  uint32_t struct_size;
  int64_t opset;               /* default-domain opset version */
  uint32_t tensor_count;
  const axle_hal_tensor_t* tensors;
  uint32_t node_count;
  const axle_hal_node_t* nodes; /* topologically sorted */
} axle_hal_graph_t;

/* ------------------------------------------------------------------------ */
/* Host table: what the core offers the plugin.                              */
/* ------------------------------------------------------------------------ */

/* A profiling event reported by a plugin (Chrome trace "complete" event). */
typedef struct axle_hal_trace_event_t {
  uint32_t struct_size;
  const char* name;            /* e.g. node name or "kpu layer 3" */
  const char* category;        /* e.g. op type or functional block */
  uint64_t start_ns;           /* host monotonic clock (host->now_ns) */
  uint64_t duration_ns;
  const char* args_json;       /* optional: a JSON object text, or NULL */
  int32_t track;               /* 0 = the device's main track; >0 sub-tracks */
} axle_hal_trace_event_t;

typedef struct axle_hal_host_t {
  uint32_t struct_size;
  uint32_t abi_version;
  /* Memory for objects the plugin creates; align is a power of two. */
  void* (*alloc)(size_t size, size_t align);
  void (*free)(void* ptr);
  /* Sets the calling thread's detailed message (printf-style) and returns
   * code. Plugins use it on every failure so the user sees why. */
  int32_t (*status_make)(int32_t code, const char* fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
      ;
  /* Diagnostic log (level 0 error .. 3 debug); never stdout. */
  void (*log)(int level, const char* plugin, const char* message);
  /* Marks the submission whose completion token is given as finished. Call
   * exactly once per successful submit(), from any thread, possibly before
   * submit() returns. On failure call status_make() on the same thread first:
   * complete() carries that message to the thread waiting for the run. */
  void (*complete)(void* completion, int32_t status);
  /* Records a profiling event into the trace of the run that owns trace_ctx
   * (NULL trace_ctx: profiling off; the call is then a no-op). */
  void (*trace)(void* trace_ctx, const axle_hal_trace_event_t* event);
  /* Monotonic clock in nanoseconds, the time base of trace events. */
  uint64_t (*now_ns)(void);
} axle_hal_host_t;

/* ------------------------------------------------------------------------ */
/* Plugin-side objects.                                                      */
/* ------------------------------------------------------------------------ */

/* Opaque plugin objects: the plugin defines them; the core only stores them. */
typedef struct axle_hal_plugin_state_t axle_hal_plugin_state_t;
typedef struct axle_hal_device_t axle_hal_device_t;
typedef struct axle_hal_memory_t axle_hal_memory_t;
typedef struct axle_hal_executable_t axle_hal_executable_t;

/* Device kinds. */
enum {
  AXLE_HAL_DEVICE_CPU = 0,
  AXLE_HAL_DEVICE_NPU = 1,
  AXLE_HAL_DEVICE_DSP = 2,
  AXLE_HAL_DEVICE_FPGA = 3,
  AXLE_HAL_DEVICE_GPU = 4,
  AXLE_HAL_DEVICE_OTHER = 5
};

typedef struct axle_hal_device_info_t {
  uint32_t struct_size;
  char name[64];               /* unique within the runtime, e.g. "cpu", "k210" */
  char description[128];
  int32_t kind;                /* AXLE_HAL_DEVICE_* */
  int32_t emulated;            /* 1 = emulator on the host, 0 = real hardware */
  uint64_t memory_bytes;       /* 0 = host memory */
  uint64_t dtype_mask;         /* bit (1 << AXLE_HAL_DTYPE_x) per supported dtype */
  uint32_t flags;              /* AXLE_HAL_DEVICE_FLAG_* */
} axle_hal_device_info_t;

/* The device reads and writes host memory directly: the core may bind caller
 * memory by host pointer (axle_hal_binding_t.host_ptr) instead of importing it
 * on every run. */
#define AXLE_HAL_DEVICE_FLAG_HOST_ACCESS 0x1u

/* Compile flags. */
/* Every tensor that has a location must hold its value after the run: no
 * fusion may skip writing it (calibration and debugging read them all). */
#define AXLE_HAL_COMPILE_KEEP_INTERMEDIATES 0x1u

/* Options for compile(). */
typedef struct axle_hal_compile_options_t {
  uint32_t struct_size;
  uint32_t threads;            /* 0 = plugin default */
  uint32_t flags;              /* AXLE_HAL_COMPILE_* */
} axle_hal_compile_options_t;

/* Where a tensor used by an executable lives at run time: binding slot plus
 * byte offset. The core fixes this at compile time (memory plan); the memory
 * bound to each slot is supplied at submit time. */
typedef struct axle_hal_tensor_location_t {
  int32_t tensor;              /* tensor index in the graph */
  uint32_t slot;               /* binding slot */
  uint64_t offset;             /* byte offset inside the slot's memory */
} axle_hal_tensor_location_t;

/* The part of a graph to compile. */
typedef struct axle_hal_subgraph_t {
  uint32_t struct_size;
  const axle_hal_graph_t* graph;
  uint32_t node_count;
  const uint32_t* nodes;       /* node indices, in execution order */
  uint32_t location_count;     /* every non-constant tensor the nodes touch */
  const axle_hal_tensor_location_t* locations;
  uint32_t slot_count;
} axle_hal_subgraph_t;

/* One memory per slot at submit time. A slot's base address is
 * map(memory) + offset, or host_ptr + offset when memory is NULL (only for
 * devices with AXLE_HAL_DEVICE_FLAG_HOST_ACCESS). Slots the executable does
 * not use are {NULL, 0, NULL}. */
typedef struct axle_hal_binding_t {
  axle_hal_memory_t* memory;
  uint64_t offset;             /* added to every location offset in the slot */
  void* host_ptr;
} axle_hal_binding_t;

typedef struct axle_hal_submit_info_t {
  uint32_t struct_size;
  axle_hal_executable_t* executable;
  uint32_t binding_count;
  const axle_hal_binding_t* bindings;
  void* completion;            /* pass to host->complete() exactly once */
  /* Cancellation: non-zero when the core asks the work to stop. Plugins poll it
   * between units of work (nodes, layers, commands), with
   * axle_hal_cancel_requested: the core sets it from another thread while the
   * work runs. */
  const volatile int32_t* cancel_flag;
  uint64_t deadline_ns;        /* 0 = none; else host->now_ns() deadline */
  void* trace_ctx;             /* non-NULL when profiling: pass to host->trace */
} axle_hal_submit_info_t;

/* Whether the core has asked a submitted run to stop: flag is the submit
 * info's cancel_flag, or NULL (nobody can cancel). The core writes the flag
 * from another thread with an atomic store, so it is read with an atomic load:
 * a plain read, volatile or not, races with that store (C11 5.1.2.4; it is
 * what ThreadSanitizer reports). Relaxed, as the flag guards no other data.
 * __atomic_load_n is the GCC / Clang builtin, so this header still needs no
 * other include. Thread safety: any thread. */
static inline int axle_hal_cancel_requested(const volatile int32_t* flag) {
  return flag && __atomic_load_n(flag, __ATOMIC_RELAXED) != 0;
}

/* What a native executable consumes and produces (executable_describe). */
typedef struct axle_hal_native_info_t {
  uint32_t struct_size;
  uint32_t input_count;
  uint32_t output_count;
  const axle_hal_tensor_t* io;   /* input_count + output_count, owned by the executable */
  uint64_t arena_bytes;          /* slot 0 size the core allocates per run context */
} axle_hal_native_info_t;

/* Plugin features. */
#define AXLE_HAL_FEATURE_ASYNC 0x1u       /* completes after submit returns */
#define AXLE_HAL_FEATURE_SERIALIZE 0x2u   /* native artifacts */
#define AXLE_HAL_FEATURE_PROFILING 0x4u   /* reports trace events */

typedef struct axle_hal_plugin_header_t {
  uint32_t abi_version;        /* version the plugin implements, <= core's */
  uint32_t struct_size;        /* sizeof the whole axle_hal_plugin_t filled */
  const char* name;            /* short unique name, e.g. "cpu" */
  const char* description;
  uint64_t features;           /* AXLE_HAL_FEATURE_* */
  uint64_t reserved[4];        /* zero */
} axle_hal_plugin_header_t;

/* The function table. Every function returns an AXLE_HAL_* status and sets
 * the message through host->status_make on failure. Out-parameters are set to
 * NULL/0 first. */
typedef struct axle_hal_plugin_t {
  axle_hal_plugin_header_t header;

  /* Lifetime. init() receives the host table, which stays valid until
   * shutdown(). */
  int32_t (*init)(const axle_hal_host_t* host, axle_hal_plugin_state_t** out_state);
  void (*shutdown)(axle_hal_plugin_state_t* state);

  /* Devices. */
  int32_t (*device_count)(axle_hal_plugin_state_t* state, uint32_t* out_count);
  int32_t (*device_info)(axle_hal_plugin_state_t* state, uint32_t index,
                         axle_hal_device_info_t* info);
  int32_t (*device_open)(axle_hal_plugin_state_t* state, uint32_t index,
                         axle_hal_device_t** out_device);
  void (*device_close)(axle_hal_device_t* device);

  /* Device memory. map() returns a host pointer valid until unmap(); on
   * emulated devices that is the memory itself. copy() is device-to-device
   * within one device. import() wraps caller host memory without copying; the
   * caller keeps it alive until memory_free(). */
  int32_t (*memory_allocate)(axle_hal_device_t* device, uint64_t size, uint64_t align,
                             axle_hal_memory_t** out_memory);
  void (*memory_free)(axle_hal_device_t* device, axle_hal_memory_t* memory);
  int32_t (*memory_map)(axle_hal_device_t* device, axle_hal_memory_t* memory,
                        void** out_host_ptr);
  void (*memory_unmap)(axle_hal_device_t* device, axle_hal_memory_t* memory);
  int32_t (*memory_copy)(axle_hal_device_t* device, axle_hal_memory_t* dst,
                         uint64_t dst_offset, axle_hal_memory_t* src,
                         uint64_t src_offset, uint64_t size);
  int32_t (*memory_import)(axle_hal_device_t* device, void* host_ptr, uint64_t size,
                           axle_hal_memory_t** out_memory);

  /* Capability query: AXLE_HAL_OK when the device can run graph node `node`;
   * otherwise a status and a one-line reason written into reason. */
  int32_t (*node_supported)(axle_hal_device_t* device, const axle_hal_graph_t* graph,
                            uint32_t node, char* reason, size_t reason_size);

  /* Compile a subgraph. The graph outlives the executable. */
  int32_t (*compile)(axle_hal_device_t* device, const axle_hal_subgraph_t* subgraph,
                     const axle_hal_compile_options_t* options,
                     axle_hal_executable_t** out_executable);
  void (*executable_release)(axle_hal_executable_t* executable);

  /* Native artifact: serialize into host->alloc memory the core frees with
   * host->free; load() accepts what serialize() wrote (or a vendor file).
   * What load() makes of serialize()'s bytes binds its inputs and outputs
   * at the slots and offsets the serialized executable was compiled for;
   * a vendor file binds natively (see executable_describe). */
  int32_t (*executable_serialize)(axle_hal_executable_t* executable, void** out_data,
                                  size_t* out_size);
  int32_t (*executable_load)(axle_hal_device_t* device, const void* data, size_t size,
                             axle_hal_executable_t** out_executable);

  /* Execution. On AXLE_HAL_OK the plugin calls host->complete(completion, s)
   * exactly once, now or later; on failure it never calls it. */
  int32_t (*submit)(axle_hal_device_t* device, const axle_hal_submit_info_t* info);
  /* Asks in-flight work to stop (complete() then reports AXLE_HAL_CANCELLED). */
  int32_t (*cancel)(axle_hal_device_t* device, void* completion);
  /* Returns the device to its initial state after an error. */
  int32_t (*reset)(axle_hal_device_t* device);
  /* Health: AXLE_HAL_OK, or the sticky error status with its message. */
  int32_t (*device_status)(axle_hal_device_t* device);

  /* Native artifacts named by the user (a .kmodel, an NVDLA loadable, a
   * DRP-AI object-file directory, or what executable_serialize wrote, saved
   * to a file). path is the file or directory; data/size its bytes (NULL/0
   * for a directory). Returns AXLE_HAL_UNSUPPORTED quickly, without a
   * message, when the artifact is not this plugin's format; any other error
   * means "mine, but broken" and carries a message naming path. */
  int32_t (*artifact_load)(axle_hal_device_t* device, const char* path, const void* data,
                           size_t size, axle_hal_executable_t** out_executable);
  /* Inputs/outputs of an executable from artifact_load (or of a vendor
   * file given to executable_load). At submit, slot 0 is arena_bytes of
   * device memory the core provides per run, slot 1 + i is io[i] (inputs
   * first, then outputs) in caller memory. */
  int32_t (*executable_describe)(axle_hal_executable_t* executable,
                                 axle_hal_native_info_t* info);
  /* What the executable really runs after the plugin's own rewriting (fused
   * nodes, chosen kernels), one line per step, for placement reports and
   * `axle info --optimized`. Writes at most text_size bytes, NUL-terminated. */
  int32_t (*executable_report)(axle_hal_executable_t* executable, char* text,
                               size_t text_size);
} axle_hal_plugin_t;

/* The exported entry point. Returns NULL when the plugin cannot speak any
 * version <= core_abi_version (it should then call host->status_make). */
typedef const axle_hal_plugin_t* (*axle_hal_entry_fn)(uint32_t core_abi_version,
                                                      const axle_hal_host_t* host);

/* Attribute lookup helper usable by plugins (header-only, no linking). */
static inline const axle_hal_attr_t* axle_hal_node_attr(const axle_hal_node_t* node,
                                                        const char* name) {
  for (uint32_t i = 0; i < node->attr_count; ++i) {
    const char* a = node->attrs[i].name;
    const char* b = name;
    while (*a && *a == *b) {
      ++a;
      ++b;
    }
    if (*a == *b) return &node->attrs[i];
  }
  return NULL;
}

static inline size_t axle_hal_dtype_size(int32_t dtype) {
  switch (dtype) {
    case AXLE_HAL_DTYPE_F32: case AXLE_HAL_DTYPE_I32: case AXLE_HAL_DTYPE_U32: return 4;
    case AXLE_HAL_DTYPE_U8: case AXLE_HAL_DTYPE_I8: case AXLE_HAL_DTYPE_BOOL: return 1;
    case AXLE_HAL_DTYPE_U16: case AXLE_HAL_DTYPE_I16: case AXLE_HAL_DTYPE_F16:
    case AXLE_HAL_DTYPE_BF16: return 2;
    case AXLE_HAL_DTYPE_I64: case AXLE_HAL_DTYPE_U64: case AXLE_HAL_DTYPE_F64: return 8;
    default: return 0;
  }
}

static inline int64_t axle_hal_tensor_elements(const axle_hal_tensor_t* t) {
  int64_t n = 1;
  for (uint32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

#ifdef __cplusplus
}
#endif
#endif /* AXLE_HAL_H_ */
