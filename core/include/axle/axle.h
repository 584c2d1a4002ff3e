/*
 * Axle public C API: the one authoritative header.
 *
 * Conventions (apply to every declaration below unless it says otherwise):
 *  - Functions that can fail return axle_status_t. On failure the calling
 *    thread's detailed message (axle_status_message()) names the plugin,
 *    device, node and tensor involved. Nothing prints, exits or aborts on bad
 *    input.
 *  - Out-parameters come last and are set to NULL/0 before anything else.
 *  - create/load/open functions return a reference the caller owns and gives
 *    back with the matching *_release (which accepts NULL). Getters borrow:
 *    returned pointers live as long as the object they came from.
 *  - Option structs start with struct_size; set it to sizeof(the struct) as
 *    compiled. The library reads only the fields that size covers, so old
 *    callers keep working when fields are appended.
 *  - Thread safety is stated per object: runtimes and models are immutable
 *    after creation and safe to share; sessions may be run from several
 *    threads at once; tensors and events are not synchronised (one thread at a
 *    time, or external locking).
 */
#ifndef AXLE_AXLE_H_
#define AXLE_AXLE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AXLE_BUILDING_LIBRARY)
#define AXLE_API __attribute__((visibility("default")))
#else
#define AXLE_API
#endif

#define AXLE_VERSION_MAJOR 0
#define AXLE_VERSION_MINOR 1
#define AXLE_VERSION_PATCH 0
#define AXLE_VERSION_STRING "0.1.0"
#define AXLE_VERSION_NUMBER (AXLE_VERSION_MAJOR * 10000 + AXLE_VERSION_MINOR * 100 + AXLE_VERSION_PATCH)

/* Run-time version of the loaded library (compare with AXLE_VERSION_NUMBER). */
AXLE_API int axle_version_number(void);
AXLE_API const char* axle_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status                                                                    */
/* ------------------------------------------------------------------------ */

/* Append-only: values never change meaning. Equal to AXLE_HAL_* in hal.h. */
typedef enum axle_status_t {
  AXLE_OK = 0,
  AXLE_STATUS_INVALID_ARGUMENT = 1,
  AXLE_STATUS_NOT_FOUND = 2,
  AXLE_STATUS_UNSUPPORTED = 3,
  AXLE_STATUS_OUT_OF_MEMORY = 4,
  AXLE_STATUS_IO_ERROR = 5,
  AXLE_STATUS_INVALID_MODEL = 6,
  AXLE_STATUS_DEVICE_ERROR = 7,
  AXLE_STATUS_TIMEOUT = 8,
  AXLE_STATUS_CANCELLED = 9,
  AXLE_STATUS_BUSY = 10,
  AXLE_STATUS_ABI_MISMATCH = 11,
  AXLE_STATUS_INTERNAL = 12,
  AXLE_STATUS_PENDING = 13,
  AXLE_STATUS_RESOURCE_EXHAUSTED = 14
} axle_status_t;

/* Constant name of a status ("invalid argument"). Thread-safe. */
AXLE_API const char* axle_status_string(axle_status_t status);
/* The calling thread's message for its last failed call (never NULL; "" when
 * none). Valid until that thread's next Axle call. */
AXLE_API const char* axle_status_message(void);

/* Frees memory the library returned as char* (reports). Accepts NULL. */
AXLE_API void axle_free(void* ptr);

/* ------------------------------------------------------------------------ */
/* Element types and tensor descriptions                                     */
/* ------------------------------------------------------------------------ */

/* ONNX TensorProto numbering. */
typedef enum axle_dtype_t {
  AXLE_DTYPE_UNDEFINED = 0,
  AXLE_DTYPE_F32 = 1,
  AXLE_DTYPE_U8 = 2,
  AXLE_DTYPE_I8 = 3,
  AXLE_DTYPE_U16 = 4,
  AXLE_DTYPE_I16 = 5,
  AXLE_DTYPE_I32 = 6,
  AXLE_DTYPE_I64 = 7,
  AXLE_DTYPE_STRING = 8,
  AXLE_DTYPE_BOOL = 9,
  AXLE_DTYPE_F16 = 10,
  AXLE_DTYPE_F64 = 11,
  AXLE_DTYPE_U32 = 12,
  AXLE_DTYPE_U64 = 13,
  AXLE_DTYPE_BF16 = 16
} axle_dtype_t;

#define AXLE_MAX_RANK 8

/* Bytes per element (0 for UNDEFINED/STRING). Thread-safe. */
AXLE_API size_t axle_dtype_size(axle_dtype_t dtype);
/* Lower-case name ("float32", "uint8", ...). Thread-safe. */
AXLE_API const char* axle_dtype_name(axle_dtype_t dtype);

/* Quantization parameters: count 0 = none, 1 = per tensor, >1 = per channel
 * along axis. Pointers borrow from the owning model or tensor. */
typedef struct axle_quant_t {
  uint32_t count;
  int32_t axis;
  const float* scales;
  const int32_t* zero_points;
} axle_quant_t;

/* Description of a model input/output. Dimensions < 0 are symbolic. */
typedef struct axle_tensor_info_t {
  uint32_t struct_size;
  const char* name;            /* borrowed from the model */
  axle_dtype_t dtype;
  uint32_t rank;
  int64_t shape[AXLE_MAX_RANK];
  axle_quant_t quant;
} axle_tensor_info_t;

/* ------------------------------------------------------------------------ */
/* Runtime: loaded plugins and their devices                                 */
/* ------------------------------------------------------------------------ */

typedef struct axle_runtime_t axle_runtime_t;

/* Runtime flags. */
#define AXLE_RUNTIME_NO_DISCOVERY 0x1u  /* load only plugins named explicitly */

typedef struct axle_runtime_options_t {
  uint32_t struct_size;
  uint32_t flags;              /* AXLE_RUNTIME_* */
  /* Colon-separated directories searched before the install directory;
   * NULL = the AXLE_PLUGIN_PATH environment variable. */
  const char* plugin_path;
} axle_runtime_options_t;

/* Creates a runtime and loads every plugin found on the search path
 * (AXLE_PLUGIN_PATH, then the install directory), unless
 * AXLE_RUNTIME_NO_DISCOVERY. A plugin that fails to load is skipped and
 * recorded as a diagnostic; that is not an error of this call.
 * options may be NULL. Caller releases *out_runtime. */
AXLE_API axle_status_t axle_runtime_create(const axle_runtime_options_t* options,
                                           axle_runtime_t** out_runtime);
/* Releases a runtime. Sessions created from it must be released first. */
AXLE_API void axle_runtime_release(axle_runtime_t* runtime);

/* Loads one plugin from a shared-library path. On failure the runtime is
 * unchanged (other plugins keep working) and the message names the file and
 * the reason. Not thread-safe against other calls on the same runtime. */
AXLE_API axle_status_t axle_runtime_load_plugin(axle_runtime_t* runtime, const char* path);

/* Plugins refused during discovery: count, and each message ("FILE: reason"),
 * borrowed from the runtime. */
AXLE_API uint32_t axle_runtime_diagnostic_count(const axle_runtime_t* runtime);
AXLE_API const char* axle_runtime_diagnostic(const axle_runtime_t* runtime, uint32_t index);

/* Loaded plugins. */
AXLE_API uint32_t axle_runtime_plugin_count(const axle_runtime_t* runtime);
typedef struct axle_plugin_info_t {
  uint32_t struct_size;
  const char* name;            /* borrowed */
  const char* description;
  const char* path;            /* file it was loaded from */
  uint32_t abi_version;        /* negotiated */
  uint64_t features;
} axle_plugin_info_t;
AXLE_API axle_status_t axle_runtime_plugin_info(const axle_runtime_t* runtime, uint32_t index,
                                                axle_plugin_info_t* info);

/* Device kinds (same values as AXLE_HAL_DEVICE_*). */
typedef enum axle_device_kind_t {
  AXLE_DEVICE_CPU = 0,
  AXLE_DEVICE_NPU = 1,
  AXLE_DEVICE_DSP = 2,
  AXLE_DEVICE_FPGA = 3,
  AXLE_DEVICE_GPU = 4,
  AXLE_DEVICE_OTHER = 5
} axle_device_kind_t;

typedef struct axle_device_info_t {
  uint32_t struct_size;
  const char* name;            /* borrowed; unique in the runtime */
  const char* description;
  const char* plugin;          /* plugin name */
  axle_device_kind_t kind;
  int32_t emulated;            /* 1 = emulator, 0 = real hardware */
  uint64_t memory_bytes;       /* 0 = host memory */
  uint64_t dtype_mask;         /* bit (1 << AXLE_DTYPE_x) per supported dtype */
} axle_device_info_t;

AXLE_API uint32_t axle_runtime_device_count(const axle_runtime_t* runtime);
AXLE_API axle_status_t axle_runtime_device_info(const axle_runtime_t* runtime, uint32_t index,
                                                axle_device_info_t* info);
/* Index of the device called name; AXLE_STATUS_NOT_FOUND lists the known ones. */
AXLE_API axle_status_t axle_runtime_device_find(const axle_runtime_t* runtime, const char* name,
                                                uint32_t* out_index);

/* ------------------------------------------------------------------------ */
/* Models                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct axle_model_t axle_model_t;

/* Loads an ONNX model from a file or from memory (copied). The message of a
 * failure names the file and what is wrong. Caller releases *out_model.
 * Models are immutable and may be shared by threads and sessions. */
AXLE_API axle_status_t axle_model_load_file(const char* path, axle_model_t** out_model);
AXLE_API axle_status_t axle_model_load_memory(const void* data, size_t size,
                                              axle_model_t** out_model);
AXLE_API void axle_model_release(axle_model_t* model);

AXLE_API uint32_t axle_model_input_count(const axle_model_t* model);
AXLE_API uint32_t axle_model_output_count(const axle_model_t* model);
AXLE_API axle_status_t axle_model_input_info(const axle_model_t* model, uint32_t index,
                                             axle_tensor_info_t* info);
AXLE_API axle_status_t axle_model_output_info(const axle_model_t* model, uint32_t index,
                                              axle_tensor_info_t* info);
AXLE_API uint32_t axle_model_node_count(const axle_model_t* model);
/* Borrowed name and op type of node index. */
AXLE_API axle_status_t axle_model_node_info(const axle_model_t* model, uint32_t index,
                                            const char** out_name, const char** out_op_type);
/* Default-domain opset the model imports. */
AXLE_API int64_t axle_model_opset(const axle_model_t* model);

/* ------------------------------------------------------------------------ */
/* Buffers: device memory                                                    */
/* ------------------------------------------------------------------------ */

typedef struct axle_buffer_t axle_buffer_t;

/* Allocates size bytes on device (index from axle_runtime_device_*).
 * Caller releases. Thread-safe. */
AXLE_API axle_status_t axle_buffer_allocate(axle_runtime_t* runtime, uint32_t device,
                                            uint64_t size, axle_buffer_t** out_buffer);
/* Wraps caller memory for device without copying; the caller keeps it alive
 * until the buffer and every tensor on it are released. */
AXLE_API axle_status_t axle_buffer_import(axle_runtime_t* runtime, uint32_t device,
                                          void* host_ptr, uint64_t size,
                                          axle_buffer_t** out_buffer);
/* Host view of the buffer, valid until axle_buffer_unmap(). */
AXLE_API axle_status_t axle_buffer_map(axle_buffer_t* buffer, void** out_host_ptr);
AXLE_API void axle_buffer_unmap(axle_buffer_t* buffer);
AXLE_API uint64_t axle_buffer_size(const axle_buffer_t* buffer);
/* Buffers are reference counted: retain adds one, release drops one. */
AXLE_API void axle_buffer_retain(axle_buffer_t* buffer);
AXLE_API void axle_buffer_release(axle_buffer_t* buffer);

/* ------------------------------------------------------------------------ */
/* Tensors: typed, shaped views of memory                                    */
/* ------------------------------------------------------------------------ */

typedef struct axle_tensor_t axle_tensor_t;

/* Allocates a zeroed host tensor. Caller releases. */
AXLE_API axle_status_t axle_tensor_create(axle_dtype_t dtype, uint32_t rank,
                                          const int64_t* shape, axle_tensor_t** out_tensor);
/* Wraps caller memory (row-major, size >= elements x dtype size) without
 * copying. release_fn(user), if given, runs when the tensor is released. */
AXLE_API axle_status_t axle_tensor_wrap(axle_dtype_t dtype, uint32_t rank,
                                        const int64_t* shape, void* data, size_t size,
                                        void (*release_fn)(void* user), void* user,
                                        axle_tensor_t** out_tensor);
/* A tensor over a buffer at a byte offset (retains the buffer). */
AXLE_API axle_status_t axle_tensor_create_on_buffer(axle_buffer_t* buffer, uint64_t offset,
                                                    axle_dtype_t dtype, uint32_t rank,
                                                    const int64_t* shape,
                                                    axle_tensor_t** out_tensor);
AXLE_API void axle_tensor_retain(axle_tensor_t* tensor);
AXLE_API void axle_tensor_release(axle_tensor_t* tensor);

AXLE_API axle_dtype_t axle_tensor_dtype(const axle_tensor_t* tensor);
AXLE_API uint32_t axle_tensor_rank(const axle_tensor_t* tensor);
/* Borrowed array of rank dimensions. */
AXLE_API const int64_t* axle_tensor_shape(const axle_tensor_t* tensor);
AXLE_API int64_t axle_tensor_element_count(const axle_tensor_t* tensor);
AXLE_API size_t axle_tensor_byte_size(const axle_tensor_t* tensor);
/* Host pointer to the elements (maps the underlying buffer when needed). */
AXLE_API void* axle_tensor_data(axle_tensor_t* tensor);
/* Quantization: set copies the arrays; get borrows them from the tensor. */
AXLE_API axle_status_t axle_tensor_set_quant(axle_tensor_t* tensor, const axle_quant_t* quant);
AXLE_API axle_quant_t axle_tensor_quant(const axle_tensor_t* tensor);

/* ------------------------------------------------------------------------ */
/* Sessions: a model placed on devices                                       */
/* ------------------------------------------------------------------------ */

typedef struct axle_session_t axle_session_t;

#define AXLE_SESSION_STRICT 0x1u     /* no CPU fallback: unplaced nodes are an error */
#define AXLE_SESSION_PROFILE 0x2u    /* record per-node and device trace events */

typedef struct axle_session_options_t {
  uint32_t struct_size;
  uint32_t flags;              /* AXLE_SESSION_* */
  /* Device names in order of preference; NULL/0 = {"cpu"}. */
  const char* const* devices;
  uint32_t device_count;
  uint32_t threads;            /* 0 = plugin default */
  /* Inputs fixed at creation: their values become constants of the session
   * (shape tensors such as Reshape's shape or Slice's starts). Borrowed for
   * the duration of the call. Such inputs are not passed to run(). */
  uint32_t constant_input_count;
  const char* const* constant_input_names;
  axle_tensor_t* const* constant_inputs;
  /* Concrete shapes for inputs with symbolic dimensions, by name (only name,
   * rank and shape are read). Symbolic dimensions not given here become 1. */
  uint32_t input_shape_count;
  const axle_tensor_info_t* input_shapes;
  /* Calibration for devices that compute in 8 bits: calibration_count
   * samples, each one tensor per session input in session input order
   * (calibration_inputs[sample * input_count + input]). The core runs the
   * float model on the CPU over them and records per-tensor uint8
   * quantization (min/max, asymmetric) on every float tensor before
   * placement. Borrowed for the duration of the call. */
  uint32_t calibration_count;
  axle_tensor_t* const* calibration_inputs;
} axle_session_options_t;

/* Places model on the runtime's devices, plans memory and compiles every
 * partition. options may be NULL. The session keeps references to runtime and
 * model. Caller releases. A session may be run from several threads at once. */
AXLE_API axle_status_t axle_session_create(axle_runtime_t* runtime, axle_model_t* model,
                                           const axle_session_options_t* options,
                                           axle_session_t** out_session);
/* Waits for the session's pending submissions, then frees it. */
AXLE_API void axle_session_release(axle_session_t* session);

typedef struct axle_run_options_t {
  uint32_t struct_size;
  uint32_t timeout_ms;         /* 0 = none; past it the run ends with TIMEOUT */
} axle_run_options_t;

/* Runs synchronously on the calling thread.
 * inputs[i] is bound to the model input named input_names[i] (all model inputs
 * must be given; C-contiguous host tensors are read in place).
 * outputs[i] receives output_names[i] (output_names NULL = all model outputs in
 * order, output_count must then equal the model's output count). If outputs[i]
 * is non-NULL on entry it must have the right dtype/shape and is written in
 * place; if NULL a new tensor is returned that the caller releases.
 * run_options may be NULL. */
AXLE_API axle_status_t axle_session_run(axle_session_t* session,
                                        const axle_run_options_t* run_options,
                                        const char* const* input_names,
                                        axle_tensor_t* const* inputs, uint32_t input_count,
                                        const char* const* output_names,
                                        axle_tensor_t** outputs, uint32_t output_count);

typedef struct axle_event_t axle_event_t;

/* Starts the run asynchronously and returns at once with an event. Inputs are
 * retained by the event; do not write to them until it completes. Outputs are
 * fetched from the event with axle_event_output(). Caller releases the event
 * (releasing a pending event cancels the run and waits for it). */
AXLE_API axle_status_t axle_session_submit(axle_session_t* session,
                                           const axle_run_options_t* run_options,
                                           const char* const* input_names,
                                           axle_tensor_t* const* inputs, uint32_t input_count,
                                           const char* const* output_names,
                                           uint32_t output_count, axle_event_t** out_event);

/* Event of an asynchronous run. Functions on one event may be called from any
 * thread. */
/* Waits up to timeout_ms (negative = forever). Returns the run's status,
 * AXLE_STATUS_TIMEOUT when still running at the deadline. */
AXLE_API axle_status_t axle_event_wait(axle_event_t* event, int64_t timeout_ms);
/* Non-blocking: AXLE_STATUS_PENDING while running, else the run's status. */
AXLE_API axle_status_t axle_event_query(axle_event_t* event);
/* Asks the run to stop; it then completes with AXLE_STATUS_CANCELLED unless
 * it already finished. */
AXLE_API axle_status_t axle_event_cancel(axle_event_t* event);
/* A file descriptor that poll()/select()/epoll report readable once the run
 * completes. Owned by the event (do not close it). */
AXLE_API axle_status_t axle_event_fd(axle_event_t* event, int* out_fd);
/* Output index (of the names given at submit) of a completed run: a new
 * reference the caller releases. */
AXLE_API axle_status_t axle_event_output(axle_event_t* event, uint32_t index,
                                         axle_tensor_t** out_tensor);
AXLE_API void axle_event_release(axle_event_t* event);

/* Placement report: which node went where and why the others did not.
 * format 0 = text, 1 = JSON. Caller frees *out_text with axle_free(). */
#define AXLE_REPORT_TEXT 0
#define AXLE_REPORT_JSON 1
AXLE_API axle_status_t axle_session_placement_report(const axle_session_t* session, int format,
                                                     char** out_text);

typedef struct axle_session_stats_t {
  uint32_t struct_size;
  uint64_t planned_peak_bytes;    /* arena bytes after liveness-based reuse */
  uint64_t unplanned_bytes;       /* sum of intermediate sizes without reuse */
  uint32_t partition_count;       /* compiled partitions (device segments) */
  uint32_t node_count;
} axle_session_stats_t;
AXLE_API axle_status_t axle_session_stats(const axle_session_t* session,
                                          axle_session_stats_t* stats);

/* Session inputs/outputs after shape inference (all dims concrete). */
AXLE_API uint32_t axle_session_input_count(const axle_session_t* session);
AXLE_API uint32_t axle_session_output_count(const axle_session_t* session);
AXLE_API axle_status_t axle_session_input_info(const axle_session_t* session, uint32_t index,
                                               axle_tensor_info_t* info);
AXLE_API axle_status_t axle_session_output_info(const axle_session_t* session, uint32_t index,
                                                axle_tensor_info_t* info);

/* Profiling (sessions created with AXLE_SESSION_PROFILE): Chrome trace JSON of
 * every event recorded so far (runs, partitions, nodes, plugin device events).
 * trace_json: caller frees with axle_free(). trace_write writes it to a file. */
AXLE_API axle_status_t axle_session_trace_json(axle_session_t* session, char** out_json);
AXLE_API axle_status_t axle_session_trace_write(axle_session_t* session, const char* path);
/* Drops the recorded events. */
AXLE_API void axle_session_trace_clear(axle_session_t* session);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_AXLE_H_ */
