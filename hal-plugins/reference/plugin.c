/*
 * The Axle reference plugin: the smallest complete HAL plugin, written to be
 * read. It drives one emulated device, "ref", that runs float32 Add, Mul and
 * Relu on tensors of equal shape. Everything else it declines with a reason.
 *
 * What it demonstrates (README.md walks through it in order):
 *   - the entry point and ABI version negotiation;
 *   - struct_size handling in both directions (host table in, device info out);
 *   - device memory in host RAM (allocate / map / copy / import);
 *   - the capability query with one-line reasons;
 *   - compile: a subgraph becomes a list of steps whose operands are
 *     {slot, offset} locations, resolved to pointers only at submit time;
 *   - asynchronous submit: work is queued to a per-device worker thread which
 *     later calls host->complete(), so the core's async paths are exercised;
 *   - cancellation (the core's cancel_flag, our own cancel(), deadlines);
 *   - profiling: one trace event per node plus one device-level event;
 *   - a tiny native artifact format with strict validation on load.
 *
 * Environment:
 *   AXLE_REF_DELAY_MS  milliseconds each step sleeps before computing (read
 *                      when a device is opened). Tests use it to make timing
 *                      (timeouts, cancellation, pending events) deterministic.
 *
 * It includes only hal.h, the C library and the worker-thread queue that
 * plugins share (hal-plugins/common/plugin_queue.c, compiled in): a plugin
 * never links libaxle.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle/hal.h"
#include "plugin_queue.h"

#define REF_PLUGIN_NAME "reference"
#define REF_DEVICE_NAME "ref"

/* Plugins are built with hidden visibility; only the entry point is exported. */
#define REF_EXPORT __attribute__((visibility("default")))

/* Artifact format (executable_serialize / executable_load), little-endian:
 *
 *   offset  size  field
 *   0       4     magic "AXRF"
 *   4       4     format version (REF_FORMAT_VERSION)
 *   8       4     slot_count
 *   12      4     step_count (>= 1)
 *   16      8     const_bytes: size of the constant pool at the end
 *   24      ...   step_count steps, each:
 *                   u32 op (1 Add, 2 Mul, 3 Relu)
 *                   u32 name_len (1..REF_MAX_NAME)
 *                   u64 elements (float32 count of every operand)
 *                   3 operands (in0, in1, out), each {u32 kind, u32 slot, u64 offset}
 *                     kind 0 = unused (offset and slot 0), 1 = slot location,
 *                     2 = constant (offset into the pool, slot 0)
 *                   name_len bytes of node name (no NUL)
 *   ...     const_bytes  constant pool (float32 values)
 *
 * The file must end exactly after the pool. Load rejects anything else.
 */
#define REF_MAGIC "AXRF"
#define REF_FORMAT_VERSION 1u
#define REF_HEADER_BYTES 24u
#define REF_STEP_FIXED_BYTES 64u
#define REF_MAX_NAME 255u
#define REF_MAX_SLOTS 4096u
#define REF_MAX_STEPS (1u << 20)

enum { REF_OP_ADD = 1, REF_OP_MUL = 2, REF_OP_RELU = 3 };
enum { REF_OPERAND_NONE = 0, REF_OPERAND_SLOT = 1, REF_OPERAND_CONST = 2 };

/* ------------------------------------------------------------------------ */
/* Plugin objects. The core sees them only as opaque pointers.               */
/* ------------------------------------------------------------------------ */

struct axle_hal_plugin_state_t {
  const axle_hal_host_t* host;  /* valid until shutdown() */
};

struct axle_hal_memory_t {
  void* ptr;
  uint64_t size;
  int imported;                 /* 1 = caller's memory: never freed by us */
};

typedef struct ref_operand_t {
  uint32_t kind;                /* REF_OPERAND_* */
  uint32_t slot;
  uint64_t offset;              /* slot: location offset; const: pool offset */
} ref_operand_t;

typedef struct ref_step_t {
  uint32_t op;                  /* REF_OP_* */
  uint64_t elements;
  ref_operand_t in[2];
  ref_operand_t out;
  char* name;                   /* node name, for trace events */
} ref_step_t;

struct axle_hal_executable_t {
  axle_hal_device_t* device;
  const axle_hal_host_t* host;
  uint32_t slot_count;
  uint32_t step_count;
  ref_step_t* steps;
  /* Constants are copied in (not borrowed from the graph) so that a loaded
   * artifact, which has no graph, runs the same way. */
  uint8_t* consts;
  uint64_t const_bytes;
};

/* One submission waiting for or running on the worker. */
typedef struct ref_job_t {
  axle_plugin_job_t q;                   /* the queue's part: token, cancellation */
  const axle_hal_executable_t* exe;
  uint8_t* base[];                       /* slot_count resolved slot bases */
} ref_job_t;

struct axle_hal_device_t {
  const axle_hal_host_t* host;
  uint32_t delay_ms;            /* AXLE_REF_DELAY_MS */
  axle_plugin_queue_t queue;    /* the worker thread playing the hardware queue */
  atomic_int sticky_status;     /* device_status(); the emulator never sets it */
};

/* ------------------------------------------------------------------------ */
/* Small helpers.                                                            */
/* ------------------------------------------------------------------------ */

static const char* ref_op_name(uint32_t op) {
  switch (op) {
    case REF_OP_ADD: return "Add";
    case REF_OP_MUL: return "Mul";
    case REF_OP_RELU: return "Relu";
    default: return "?";
  }
}

static uint32_t ref_op_from_type(const char* op_type) {
  if (!op_type) return 0;
  if (strcmp(op_type, "Add") == 0) return REF_OP_ADD;
  if (strcmp(op_type, "Mul") == 0) return REF_OP_MUL;
  if (strcmp(op_type, "Relu") == 0) return REF_OP_RELU;
  return 0;
}

static uint32_t ref_op_inputs(uint32_t op) { return op == REF_OP_RELU ? 1u : 2u; }

static char* ref_strdup(const axle_hal_host_t* host, const char* s, size_t len) {
  char* copy = (char*)host->alloc(len + 1, 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = '\0';
  return copy;
}

/* Formats a shape as "[2,3,4]" for messages. */
static void ref_shape_str(const axle_hal_tensor_t* t, char* buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "[");
  for (uint32_t i = 0; i < t->rank && used < size; ++i)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                             (long long)t->shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

static int ref_same_shape(const axle_hal_tensor_t* a, const axle_hal_tensor_t* b) {
  if (a->rank != b->rank) return 0;
  for (uint32_t i = 0; i < a->rank; ++i)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

/* The one rule set of this device, shared by node_supported() and compile()
 * so that the two can never disagree. Writes a one-line reason naming the
 * device, node and op, and returns an AXLE_HAL_* status. */
static int32_t ref_check_node(const axle_hal_graph_t* g, uint32_t index, char* reason,
                              size_t reason_size) {
  char dummy[1];
  if (!reason || reason_size == 0) {
    reason = dummy;
    reason_size = sizeof(dummy);
  }
  reason[0] = '\0';
  if (!g || index >= g->node_count) {
    snprintf(reason, reason_size, REF_DEVICE_NAME ": node index %u is out of range", index);
    return AXLE_HAL_INVALID_ARGUMENT;
  }
  const axle_hal_node_t* n = &g->nodes[index];
  if (n->domain && n->domain[0]) {
    snprintf(reason, reason_size, REF_DEVICE_NAME ": node '%s' (%s): domain '%s' is not supported",
             n->name, n->op_type, n->domain);
    return AXLE_HAL_UNSUPPORTED;
  }
  uint32_t op = ref_op_from_type(n->op_type);
  if (!op) {
    snprintf(reason, reason_size,
             REF_DEVICE_NAME ": node '%s' (%s): op not supported (this device runs only float32 "
             "Add, Mul and Relu)",
             n->name, n->op_type);
    return AXLE_HAL_UNSUPPORTED;
  }
  uint32_t want = ref_op_inputs(op);
  if (n->input_count != want || n->output_count != 1) {
    snprintf(reason, reason_size,
             REF_DEVICE_NAME ": node '%s' (%s): expected %u input(s) and 1 output, got %u and %u",
             n->name, n->op_type, want, n->input_count, n->output_count);
    return AXLE_HAL_UNSUPPORTED;
  }
  const axle_hal_tensor_t* t[3];
  for (uint32_t i = 0; i < want + 1; ++i) {
    int32_t ti = i < want ? n->inputs[i] : n->outputs[0];
    if (ti < 0 || (uint32_t)ti >= g->tensor_count) {
      snprintf(reason, reason_size, REF_DEVICE_NAME ": node '%s' (%s): %s %u is missing",
               n->name, n->op_type, i < want ? "input" : "output", i < want ? i : 0);
      return AXLE_HAL_UNSUPPORTED;
    }
    t[i] = &g->tensors[ti];
    if (t[i]->dtype != AXLE_HAL_DTYPE_F32) {
      snprintf(reason, reason_size,
               REF_DEVICE_NAME ": node '%s' (%s): tensor '%s' has dtype %d; only float32 is "
               "supported",
               n->name, n->op_type, t[i]->name, (int)t[i]->dtype);
      return AXLE_HAL_UNSUPPORTED;
    }
    for (uint32_t d = 0; d < t[i]->rank; ++d) {
      if (t[i]->shape[d] < 0) {
        snprintf(reason, reason_size,
                 REF_DEVICE_NAME ": node '%s' (%s): tensor '%s' has an unknown dimension",
                 n->name, n->op_type, t[i]->name);
        return AXLE_HAL_UNSUPPORTED;
      }
    }
  }
  /* Equal shapes only: broadcasting is the classic thing a small accelerator
   * lacks, and declining it shows how fallback to the CPU works. */
  for (uint32_t i = 1; i < want + 1; ++i) {
    if (!ref_same_shape(t[0], t[i])) {
      char a[96], b[96];
      ref_shape_str(t[0], a, sizeof(a));
      ref_shape_str(t[i], b, sizeof(b));
      snprintf(reason, reason_size,
               REF_DEVICE_NAME ": node '%s' (%s): shapes %s ('%s') and %s ('%s') differ; this "
               "device does not broadcast",
               n->name, n->op_type, a, t[0]->name, b, t[i]->name);
      return AXLE_HAL_UNSUPPORTED;
    }
  }
  return AXLE_HAL_OK;
}

static void ref_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ------------------------------------------------------------------------ */
/* Lifetime.                                                                 */
/* ------------------------------------------------------------------------ */

/* The host-table fields this plugin calls; a host table shorter than this
 * (a core older than ABI 1, which cannot exist) is refused. */
#define REF_HOST_MIN_SIZE (offsetof(axle_hal_host_t, now_ns) + sizeof(void*))

static int32_t ref_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out_state) {
  if (out_state) *out_state = NULL;
  if (!host || host->struct_size < REF_HOST_MIN_SIZE) return AXLE_HAL_ABI_MISMATCH;
  if (!out_state)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_PLUGIN_NAME ": init: out_state is NULL");
  axle_hal_plugin_state_t* st = (axle_hal_plugin_state_t*)host->alloc(sizeof(*st), 16);
  if (!st) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_PLUGIN_NAME ": init: out of memory");
  st->host = host;
  *out_state = st;
  return AXLE_HAL_OK;
}

static void ref_shutdown(axle_hal_plugin_state_t* state) {
  if (state) state->host->free(state);
}

/* ------------------------------------------------------------------------ */
/* Devices.                                                                  */
/* ------------------------------------------------------------------------ */

static int32_t ref_device_count(axle_hal_plugin_state_t* state, uint32_t* out_count) {
  (void)state;
  if (!out_count) return AXLE_HAL_INVALID_ARGUMENT;
  *out_count = 1;
  return AXLE_HAL_OK;
}

static int32_t ref_device_info(axle_hal_plugin_state_t* state, uint32_t index,
                               axle_hal_device_info_t* info) {
  if (!info || info->struct_size < sizeof(uint32_t))
    return state->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                    REF_PLUGIN_NAME ": device_info: info is NULL or has no size");
  if (index != 0)
    return state->host->status_make(AXLE_HAL_NOT_FOUND,
                                    REF_PLUGIN_NAME ": device index %u out of range (1 device)",
                                    index);
  axle_hal_device_info_t full;
  memset(&full, 0, sizeof(full));
  snprintf(full.name, sizeof(full.name), "%s", REF_DEVICE_NAME);
  snprintf(full.description, sizeof(full.description),
           "Axle reference device (emulated; float32 Add, Mul, Relu)");
  full.kind = AXLE_HAL_DEVICE_OTHER;
  full.emulated = 1;
  full.memory_bytes = 0; /* host memory */
  full.dtype_mask = 1ull << AXLE_HAL_DTYPE_F32;
  /* No AXLE_HAL_DEVICE_FLAG_HOST_ACCESS, on purpose: although this emulator
   * could read caller memory directly, leaving the flag off makes the core
   * import caller buffers with memory_import() on every run, which is the
   * path real accelerators take and the one this plugin exists to exercise.
   * submit() still accepts host_ptr bindings, as the ABI allows. */
  full.flags = 0;
  /* Write only what the caller's struct covers: an older core passes a
   * shorter struct, and bytes past it belong to someone else. */
  uint32_t caller_size = info->struct_size;
  size_t n = caller_size < sizeof(full) ? caller_size : sizeof(full);
  memcpy((char*)info + sizeof(uint32_t), (const char*)&full + sizeof(uint32_t),
         n - sizeof(uint32_t));
  return AXLE_HAL_OK;
}

static int32_t ref_execute(void* owner, axle_plugin_job_t* job);

static int32_t ref_device_open(axle_hal_plugin_state_t* state, uint32_t index,
                               axle_hal_device_t** out_device) {
  const axle_hal_host_t* host = state->host;
  if (out_device) *out_device = NULL;
  if (!out_device)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_PLUGIN_NAME ": device_open: out is NULL");
  if (index != 0)
    return host->status_make(AXLE_HAL_NOT_FOUND,
                             REF_PLUGIN_NAME ": device index %u out of range (1 device)", index);
  axle_hal_device_t* dev = (axle_hal_device_t*)host->alloc(sizeof(*dev), 16);
  if (!dev)
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": device_open: out of memory");
  memset(dev, 0, sizeof(*dev));
  dev->host = host;
  atomic_init(&dev->sticky_status, AXLE_HAL_OK);
  const char* delay = getenv("AXLE_REF_DELAY_MS");
  if (delay && *delay) {
    char* end = NULL;
    unsigned long v = strtoul(delay, &end, 10);
    dev->delay_ms = (end && *end == '\0' && v <= 600000ul) ? (uint32_t)v : 0;
  }
  /* One worker per open device plays the role of the hardware queue: work
   * submitted here completes later, on another thread, as on real devices. */
  if (axle_plugin_queue_start(&dev->queue, host, ref_execute, dev) != 0) {
    host->free(dev);
    return host->status_make(AXLE_HAL_RESOURCE_EXHAUSTED,
                             REF_DEVICE_NAME ": cannot start the worker thread");
  }
  *out_device = dev;
  return AXLE_HAL_OK;
}

static void ref_device_close(axle_hal_device_t* dev) {
  if (!dev) return;
  /* The core waits for its submissions before closing; anything still here
   * is completed as CANCELLED so that no completion token is ever lost. */
  axle_plugin_queue_stop(&dev->queue);
  dev->host->free(dev);
}

/* ------------------------------------------------------------------------ */
/* Device memory: the emulated device's memory is host RAM, so map() is the  */
/* identity and import() just records the caller's pointer.                 */
/* ------------------------------------------------------------------------ */

static int32_t ref_memory_allocate(axle_hal_device_t* dev, uint64_t size, uint64_t align,
                                   axle_hal_memory_t** out_memory) {
  const axle_hal_host_t* host = dev->host;
  if (out_memory) *out_memory = NULL;
  if (!out_memory)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_DEVICE_NAME ": memory_allocate: out is NULL");
  if (align == 0) align = 64;
  if (align & (align - 1))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             REF_DEVICE_NAME ": memory_allocate: alignment %llu is not a power of two",
                             (unsigned long long)align);
  if (align < 64) align = 64;
  if (size > (uint64_t)SIZE_MAX - align)
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY,
                             REF_DEVICE_NAME ": memory_allocate: %llu bytes is too large",
                             (unsigned long long)size);
  axle_hal_memory_t* m = (axle_hal_memory_t*)host->alloc(sizeof(*m), 16);
  /* A zero-byte allocation is legal (a partition without intermediates has an
   * empty arena); it still gets a distinct, mappable pointer. */
  void* p = m ? host->alloc(size ? (size_t)size : 1, (size_t)align) : NULL;
  if (!p) {
    if (m) host->free(m);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY,
                             REF_DEVICE_NAME ": cannot allocate %llu bytes",
                             (unsigned long long)size);
  }
  m->ptr = p;
  m->size = size;
  m->imported = 0;
  *out_memory = m;
  return AXLE_HAL_OK;
}

static void ref_memory_free(axle_hal_device_t* dev, axle_hal_memory_t* m) {
  if (!m) return;
  if (!m->imported) dev->host->free(m->ptr);
  dev->host->free(m);
}

static int32_t ref_memory_map(axle_hal_device_t* dev, axle_hal_memory_t* m, void** out_ptr) {
  if (out_ptr) *out_ptr = NULL;
  if (!m || !out_ptr)
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                  REF_DEVICE_NAME ": memory_map: NULL argument");
  *out_ptr = m->ptr;
  return AXLE_HAL_OK;
}

static void ref_memory_unmap(axle_hal_device_t* dev, axle_hal_memory_t* m) {
  /* Nothing to flush: host RAM is coherent. A device behind a bus would write
   * back a staging copy here. */
  (void)dev;
  (void)m;
}

static int ref_range_ok(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

static int32_t ref_memory_copy(axle_hal_device_t* dev, axle_hal_memory_t* dst, uint64_t dst_offset,
                               axle_hal_memory_t* src, uint64_t src_offset, uint64_t size) {
  if (!dst || !src)
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                  REF_DEVICE_NAME ": memory_copy: NULL memory");
  if (!ref_range_ok(dst_offset, size, dst->size) || !ref_range_ok(src_offset, size, src->size))
    return dev->host->status_make(
        AXLE_HAL_INVALID_ARGUMENT,
        REF_DEVICE_NAME ": memory_copy of %llu bytes out of bounds (dst %llu+ of %llu, src %llu+ "
        "of %llu)",
        (unsigned long long)size, (unsigned long long)dst_offset, (unsigned long long)dst->size,
        (unsigned long long)src_offset, (unsigned long long)src->size);
  if (size) memmove((uint8_t*)dst->ptr + dst_offset, (const uint8_t*)src->ptr + src_offset, (size_t)size);
  return AXLE_HAL_OK;
}

static int32_t ref_memory_import(axle_hal_device_t* dev, void* host_ptr, uint64_t size,
                                 axle_hal_memory_t** out_memory) {
  if (out_memory) *out_memory = NULL;
  if (!out_memory || (!host_ptr && size))
    return dev->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                  REF_DEVICE_NAME ": memory_import: NULL argument");
  axle_hal_memory_t* m = (axle_hal_memory_t*)dev->host->alloc(sizeof(*m), 16);
  if (!m) return dev->host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": out of memory");
  m->ptr = host_ptr;
  m->size = size;
  m->imported = 1;
  *out_memory = m;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Capability query and compile.                                             */
/* ------------------------------------------------------------------------ */

static int32_t ref_node_supported(axle_hal_device_t* dev, const axle_hal_graph_t* graph,
                                  uint32_t node, char* reason, size_t reason_size) {
  (void)dev;
  return ref_check_node(graph, node, reason, reason_size);
}

static void ref_executable_free(axle_hal_executable_t* exe) {
  if (!exe) return;
  const axle_hal_host_t* host = exe->host;
  if (exe->steps) {
    for (uint32_t i = 0; i < exe->step_count; ++i) host->free(exe->steps[i].name);
    host->free(exe->steps);
  }
  host->free(exe->consts);
  host->free(exe);
}

static axle_hal_executable_t* ref_executable_new(axle_hal_device_t* dev, uint32_t step_count,
                                                 uint64_t const_bytes) {
  const axle_hal_host_t* host = dev->host;
  axle_hal_executable_t* exe = (axle_hal_executable_t*)host->alloc(sizeof(*exe), 16);
  if (!exe) return NULL;
  memset(exe, 0, sizeof(*exe));
  exe->device = dev;
  exe->host = host;
  exe->steps = (ref_step_t*)host->alloc(sizeof(ref_step_t) * (step_count ? step_count : 1), 16);
  exe->consts = (uint8_t*)host->alloc(const_bytes ? (size_t)const_bytes : 1, 64);
  if (!exe->steps || !exe->consts) {
    ref_executable_free(exe);
    return NULL;
  }
  memset(exe->steps, 0, sizeof(ref_step_t) * (step_count ? step_count : 1));
  exe->step_count = step_count;
  exe->const_bytes = const_bytes;
  return exe;
}

static const axle_hal_tensor_location_t* ref_find_location(const axle_hal_subgraph_t* sg,
                                                           int32_t tensor) {
  for (uint32_t i = 0; i < sg->location_count; ++i)
    if (sg->locations[i].tensor == tensor) return &sg->locations[i];
  return NULL;
}

static int ref_is_constant(const axle_hal_tensor_t* t) {
  return (t->flags & AXLE_HAL_TENSOR_CONSTANT) && t->data;
}

static int32_t ref_compile(axle_hal_device_t* dev, const axle_hal_subgraph_t* sg,
                           const axle_hal_compile_options_t* options,
                           axle_hal_executable_t** out_exe) {
  const axle_hal_host_t* host = dev->host;
  (void)options; /* single-threaded emulator: nothing to tune */
  if (out_exe) *out_exe = NULL;
  if (!out_exe || !sg || sg->struct_size < offsetof(axle_hal_subgraph_t, slot_count) + sizeof(uint32_t) ||
      !sg->graph || (sg->node_count && !sg->nodes) || (sg->location_count && !sg->locations))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             REF_DEVICE_NAME ": compile: malformed subgraph description");
  if (sg->node_count == 0)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_DEVICE_NAME ": compile: empty subgraph");
  if (sg->slot_count > REF_MAX_SLOTS)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             REF_DEVICE_NAME ": compile: %u slots (max %u)", sg->slot_count,
                             REF_MAX_SLOTS);
  const axle_hal_graph_t* g = sg->graph;

  /* Pass 1: validate every node with the same rules as the capability query,
   * and size the constant pool. */
  uint64_t const_bytes = 0;
  for (uint32_t i = 0; i < sg->node_count; ++i) {
    char reason[256];
    int32_t st = ref_check_node(g, sg->nodes[i], reason, sizeof(reason));
    if (st != AXLE_HAL_OK) return host->status_make(st, "%s", reason);
    const axle_hal_node_t* n = &g->nodes[sg->nodes[i]];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      const axle_hal_tensor_t* t = &g->tensors[n->inputs[k]];
      if (ref_is_constant(t)) const_bytes += t->size_bytes;
    }
  }

  axle_hal_executable_t* exe = ref_executable_new(dev, sg->node_count, const_bytes);
  if (!exe) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": compile: out of memory");
  exe->slot_count = sg->slot_count;

  /* Pass 2: one step per node. Operands become {slot, offset} (resolved to a
   * pointer per submit, because bindings change between runs) or an offset
   * into our constant pool. */
  uint64_t pool_used = 0;
  for (uint32_t i = 0; i < sg->node_count; ++i) {
    const axle_hal_node_t* n = &g->nodes[sg->nodes[i]];
    ref_step_t* s = &exe->steps[i];
    s->op = ref_op_from_type(n->op_type);
    s->elements = (uint64_t)axle_hal_tensor_elements(&g->tensors[n->outputs[0]]);
    s->name = ref_strdup(host, n->name, strlen(n->name));
    if (!s->name) {
      ref_executable_free(exe);
      return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": compile: out of memory");
    }
    uint32_t nin = ref_op_inputs(s->op);
    for (uint32_t k = 0; k < nin + 1; ++k) {
      int32_t ti = k < nin ? n->inputs[k] : n->outputs[0];
      const axle_hal_tensor_t* t = &g->tensors[ti];
      ref_operand_t* o = k < nin ? &s->in[k] : &s->out;
      if (k < nin && ref_is_constant(t)) {
        if (t->size_bytes != s->elements * sizeof(float)) {
          ref_executable_free(exe);
          return host->status_make(AXLE_HAL_INVALID_MODEL,
                                   REF_DEVICE_NAME ": node '%s' (%s): constant '%s' holds %llu "
                                   "bytes, expected %llu",
                                   n->name, n->op_type, t->name, (unsigned long long)t->size_bytes,
                                   (unsigned long long)(s->elements * sizeof(float)));
        }
        o->kind = REF_OPERAND_CONST;
        o->offset = pool_used;
        memcpy(exe->consts + pool_used, t->data, (size_t)t->size_bytes);
        pool_used += t->size_bytes;
        continue;
      }
      const axle_hal_tensor_location_t* loc = ref_find_location(sg, ti);
      if (!loc || loc->slot >= sg->slot_count) {
        ref_executable_free(exe);
        return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                 REF_DEVICE_NAME ": node '%s' (%s): tensor '%s' has %s", n->name,
                                 n->op_type, t->name,
                                 loc ? "a location slot beyond slot_count" : "no location");
      }
      o->kind = REF_OPERAND_SLOT;
      o->slot = loc->slot;
      o->offset = loc->offset;
    }
  }
  *out_exe = exe;
  return AXLE_HAL_OK;
}

static void ref_executable_release(axle_hal_executable_t* exe) { ref_executable_free(exe); }

/* ------------------------------------------------------------------------ */
/* Native artifact: serialize / load (format at the top of this file).       */
/* ------------------------------------------------------------------------ */

static void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int32_t ref_executable_serialize(axle_hal_executable_t* exe, void** out_data,
                                        size_t* out_size) {
  if (out_data) *out_data = NULL;
  if (out_size) *out_size = 0;
  if (!exe || !out_data || !out_size) return AXLE_HAL_INVALID_ARGUMENT;
  const axle_hal_host_t* host = exe->host;
  size_t size = REF_HEADER_BYTES + (size_t)exe->const_bytes;
  for (uint32_t i = 0; i < exe->step_count; ++i) {
    size_t len = strlen(exe->steps[i].name);
    if (len > REF_MAX_NAME) len = REF_MAX_NAME; /* names are for traces only */
    size += REF_STEP_FIXED_BYTES + (len ? len : 1);
  }
  /* host->alloc, because the core frees the result with host->free. */
  uint8_t* buf = (uint8_t*)host->alloc(size, 16);
  if (!buf) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": serialize: out of memory");
  memcpy(buf, REF_MAGIC, 4);
  put_u32(buf + 4, REF_FORMAT_VERSION);
  put_u32(buf + 8, exe->slot_count);
  put_u32(buf + 12, exe->step_count);
  put_u64(buf + 16, exe->const_bytes);
  uint8_t* p = buf + REF_HEADER_BYTES;
  for (uint32_t i = 0; i < exe->step_count; ++i) {
    const ref_step_t* s = &exe->steps[i];
    size_t len = strlen(s->name);
    if (len > REF_MAX_NAME) len = REF_MAX_NAME;
    put_u32(p, s->op);
    put_u32(p + 4, (uint32_t)(len ? len : 1));
    put_u64(p + 8, s->elements);
    const ref_operand_t* ops[3] = {&s->in[0], &s->in[1], &s->out};
    for (int k = 0; k < 3; ++k) {
      put_u32(p + 16 + 16 * k, ops[k]->kind);
      put_u32(p + 20 + 16 * k, ops[k]->slot);
      put_u64(p + 24 + 16 * k, ops[k]->offset);
    }
    p += REF_STEP_FIXED_BYTES;
    if (len) {
      memcpy(p, s->name, len);
      p += len;
    } else {
      *p++ = '?';
    }
  }
  if (exe->const_bytes) memcpy(p, exe->consts, (size_t)exe->const_bytes);
  *out_data = buf;
  *out_size = size;
  return AXLE_HAL_OK;
}

/* Validates one operand of a loaded step. Returns NULL when fine, else why. */
static const char* ref_check_operand(const ref_operand_t* o, int required, uint64_t elements,
                                     uint32_t slot_count, uint64_t const_bytes, int output) {
  switch (o->kind) {
    case REF_OPERAND_NONE:
      if (required) return "required operand is missing";
      if (o->slot || o->offset) return "unused operand has non-zero fields";
      return NULL;
    case REF_OPERAND_SLOT:
      if (!required) return "operand given for a one-input op";
      if (o->slot >= slot_count) return "slot beyond slot_count";
      return NULL;
    case REF_OPERAND_CONST:
      if (!required) return "operand given for a one-input op";
      if (output) return "output cannot be a constant";
      if (o->slot) return "constant operand has a slot";
      if (o->offset % 4) return "constant offset is not 4-byte aligned";
      if (!ref_range_ok(o->offset, elements * 4, const_bytes))
        return "constant lies outside the pool";
      return NULL;
    default:
      return "unknown operand kind";
  }
}

static int32_t ref_executable_load(axle_hal_device_t* dev, const void* data, size_t size,
                                   axle_hal_executable_t** out_exe) {
  const axle_hal_host_t* host = dev->host;
  if (out_exe) *out_exe = NULL;
  if (!out_exe || (!data && size))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_DEVICE_NAME ": load: NULL argument");
  const uint8_t* b = (const uint8_t*)data;
#define REF_BAD(...) host->status_make(AXLE_HAL_INVALID_MODEL, REF_DEVICE_NAME ": artifact: " __VA_ARGS__)
  if (size < REF_HEADER_BYTES) return REF_BAD("%zu bytes is shorter than the %u-byte header", size, REF_HEADER_BYTES);
  if (memcmp(b, REF_MAGIC, 4) != 0) return REF_BAD("bad magic (not a reference-plugin artifact)");
  uint32_t version = get_u32(b + 4);
  if (version != REF_FORMAT_VERSION)
    return host->status_make(AXLE_HAL_UNSUPPORTED,
                             REF_DEVICE_NAME ": artifact: format version %u, this plugin reads %u",
                             version, REF_FORMAT_VERSION);
  uint32_t slot_count = get_u32(b + 8);
  uint32_t step_count = get_u32(b + 12);
  uint64_t const_bytes = get_u64(b + 16);
  if (slot_count > REF_MAX_SLOTS) return REF_BAD("%u slots (max %u)", slot_count, REF_MAX_SLOTS);
  if (step_count == 0 || step_count > REF_MAX_STEPS) return REF_BAD("%u steps", step_count);
  /* Every step needs at least its fixed part plus one name byte: reject
   * impossible counts before allocating for them. */
  if ((uint64_t)step_count * (REF_STEP_FIXED_BYTES + 1) > size - REF_HEADER_BYTES)
    return REF_BAD("%u steps do not fit in %zu bytes", step_count, size);
  if (const_bytes > size - REF_HEADER_BYTES || const_bytes % 4)
    return REF_BAD("constant pool of %llu bytes is impossible", (unsigned long long)const_bytes);

  axle_hal_executable_t* exe = ref_executable_new(dev, step_count, const_bytes);
  if (!exe) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": load: out of memory");
  exe->slot_count = slot_count;
  size_t pos = REF_HEADER_BYTES;
  size_t steps_end = size - (size_t)const_bytes;
  int32_t st = AXLE_HAL_OK;
  for (uint32_t i = 0; i < step_count && st == AXLE_HAL_OK; ++i) {
    if (steps_end - pos < REF_STEP_FIXED_BYTES) {
      st = REF_BAD("step %u is truncated", i);
      break;
    }
    const uint8_t* p = b + pos;
    ref_step_t* s = &exe->steps[i];
    s->op = get_u32(p);
    uint32_t name_len = get_u32(p + 4);
    s->elements = get_u64(p + 8);
    ref_operand_t* ops[3] = {&s->in[0], &s->in[1], &s->out};
    for (int k = 0; k < 3; ++k) {
      ops[k]->kind = get_u32(p + 16 + 16 * k);
      ops[k]->slot = get_u32(p + 20 + 16 * k);
      ops[k]->offset = get_u64(p + 24 + 16 * k);
    }
    pos += REF_STEP_FIXED_BYTES;
    if (s->op < REF_OP_ADD || s->op > REF_OP_RELU) {
      st = REF_BAD("step %u has unknown op %u", i, s->op);
      break;
    }
    if (s->elements > UINT64_MAX / 4) {
      st = REF_BAD("step %u has %llu elements", i, (unsigned long long)s->elements);
      break;
    }
    if (name_len == 0 || name_len > REF_MAX_NAME || name_len > steps_end - pos) {
      st = REF_BAD("step %u has a bad name length %u", i, name_len);
      break;
    }
    uint32_t nin = ref_op_inputs(s->op);
    for (uint32_t k = 0; k < 3; ++k) {
      int required = k < nin || k == 2;
      const char* why =
          ref_check_operand(ops[k], required, s->elements, slot_count, const_bytes, k == 2);
      if (why) {
        st = REF_BAD("step %u operand %u: %s", i, k, why);
        break;
      }
    }
    if (st != AXLE_HAL_OK) break;
    s->name = ref_strdup(host, (const char*)b + pos, name_len);
    if (!s->name) {
      st = host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": load: out of memory");
      break;
    }
    pos += name_len;
  }
  if (st == AXLE_HAL_OK && pos != steps_end)
    st = REF_BAD("%zu stray bytes between the steps and the constant pool", steps_end - pos);
  if (st != AXLE_HAL_OK) {
    ref_executable_free(exe);
    return st;
  }
  if (const_bytes) memcpy(exe->consts, b + steps_end, (size_t)const_bytes);
  *out_exe = exe;
  return AXLE_HAL_OK;
#undef REF_BAD
}

/* ------------------------------------------------------------------------ */
/* Execution.                                                                */
/* ------------------------------------------------------------------------ */

static int ref_operand_fits(const ref_operand_t* o, uint64_t bytes, const axle_hal_binding_t* b) {
  if (o->kind != REF_OPERAND_SLOT) return 1;
  const axle_hal_binding_t* bind = &b[o->slot];
  /* A host_ptr binding carries no size: the core vouches for it. */
  if (!bind->memory) return 1;
  uint64_t limit = bind->memory->size;
  return ref_range_ok(bind->offset, 0, limit) && ref_range_ok(o->offset, bytes, limit - bind->offset);
}

static int32_t ref_submit(axle_hal_device_t* dev, const axle_hal_submit_info_t* info) {
  const axle_hal_host_t* host = dev->host;
  if (!info || info->struct_size < offsetof(axle_hal_submit_info_t, trace_ctx) + sizeof(void*) ||
      !info->executable)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, REF_DEVICE_NAME ": submit: malformed submit info");
  const axle_hal_executable_t* exe = info->executable;
  if (exe->device != dev)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             REF_DEVICE_NAME ": submit: executable belongs to another device");
  if (info->binding_count < exe->slot_count || (exe->slot_count && !info->bindings))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             REF_DEVICE_NAME ": submit: %u bindings for %u slots",
                             info->binding_count, exe->slot_count);
  for (uint32_t s = 0; s < exe->slot_count; ++s) {
    if (!info->bindings[s].memory && !info->bindings[s].host_ptr) {
      /* A slot no step uses may stay unbound. */
      for (uint32_t i = 0; i < exe->step_count; ++i) {
        const ref_operand_t* ops[3] = {&exe->steps[i].in[0], &exe->steps[i].in[1], &exe->steps[i].out};
        for (int k = 0; k < 3; ++k)
          if (ops[k]->kind == REF_OPERAND_SLOT && ops[k]->slot == s)
            return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                     REF_DEVICE_NAME ": submit: slot %u is used by node '%s' but "
                                     "has no memory bound",
                                     s, exe->steps[i].name);
      }
    }
  }
  /* Check every access against the bound memory now, so a bad binding fails
   * the submit (synchronously, with a message) instead of corrupting memory
   * later on the worker. */
  for (uint32_t i = 0; i < exe->step_count; ++i) {
    const ref_step_t* st = &exe->steps[i];
    const ref_operand_t* ops[3] = {&st->in[0], &st->in[1], &st->out};
    for (int k = 0; k < 3; ++k) {
      if (!ref_operand_fits(ops[k], st->elements * 4, info->bindings))
        return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                 REF_DEVICE_NAME ": node '%s' (%s): %s at slot %u offset %llu "
                                 "(+%llu bytes) is outside the bound memory",
                                 st->name, ref_op_name(st->op), k == 2 ? "output" : "input",
                                 ops[k]->slot, (unsigned long long)ops[k]->offset,
                                 (unsigned long long)(st->elements * 4));
    }
  }

  ref_job_t* job = (ref_job_t*)host->alloc(sizeof(ref_job_t) + sizeof(uint8_t*) * exe->slot_count, 16);
  if (!job) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, REF_DEVICE_NAME ": submit: out of memory");
  axle_plugin_job_init(&job->q, info);
  job->exe = exe;
  /* Resolve slots to host pointers now: the bindings array is only valid for
   * the duration of this call. */
  for (uint32_t s = 0; s < exe->slot_count; ++s) {
    const axle_hal_binding_t* bind = &info->bindings[s];
    uint8_t* base = bind->memory ? (uint8_t*)bind->memory->ptr : (uint8_t*)bind->host_ptr;
    job->base[s] = base ? base + bind->offset : NULL;
  }

  if (axle_plugin_queue_push(&dev->queue, &job->q) != 0) {
    host->free(job);
    return host->status_make(AXLE_HAL_BUSY, REF_DEVICE_NAME ": submit: device is closing");
  }
  return AXLE_HAL_OK;
}

/* Why the current job must stop now, or AXLE_HAL_OK to go on. Checked
 * between steps and while sleeping, the "units of work" of this device. */
static int32_t ref_should_stop(const axle_hal_host_t* host, ref_job_t* job) {
  return axle_plugin_job_should_stop(host, &job->q);
}

static int32_t ref_delay(const axle_hal_host_t* host, ref_job_t* job, uint32_t ms) {
  /* Sleep in 1 ms slices so cancellation and deadlines act promptly. */
  uint64_t end = host->now_ns() + (uint64_t)ms * 1000000ull;
  for (;;) {
    int32_t st = ref_should_stop(host, job);
    if (st != AXLE_HAL_OK) return st;
    uint64_t now = host->now_ns();
    if (now >= end) return AXLE_HAL_OK;
    uint64_t left = end - now;
    ref_sleep_ns(left < 1000000ull ? left : 1000000ull);
  }
}

static void ref_run_step(const ref_step_t* s, const float* a, const float* b, float* y) {
  uint64_t n = s->elements;
  switch (s->op) {
    case REF_OP_ADD:
      for (uint64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
      break;
    case REF_OP_MUL:
      for (uint64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
      break;
    case REF_OP_RELU:
      for (uint64_t i = 0; i < n; ++i) y[i] = a[i] > 0.0f ? a[i] : 0.0f;
      break;
  }
}

static void* ref_operand_ptr(const axle_hal_executable_t* exe, const ref_job_t* job,
                             const ref_operand_t* o) {
  switch (o->kind) {
    case REF_OPERAND_SLOT: return job->base[o->slot] + o->offset;
    case REF_OPERAND_CONST: return exe->consts + o->offset;
    default: return NULL;
  }
}

static int32_t ref_execute(void* owner, axle_plugin_job_t* queued) {
  axle_hal_device_t* dev = (axle_hal_device_t*)owner;
  ref_job_t* job = (ref_job_t*)queued;
  const axle_hal_host_t* host = dev->host;
  const axle_hal_executable_t* exe = job->exe;
  uint64_t t0 = host->now_ns();
  int32_t status = AXLE_HAL_OK;
  uint32_t done = 0;
  for (uint32_t i = 0; i < exe->step_count; ++i) {
    const ref_step_t* s = &exe->steps[i];
    status = ref_should_stop(host, job);
    if (status == AXLE_HAL_OK && dev->delay_ms) status = ref_delay(host, job, dev->delay_ms);
    if (status != AXLE_HAL_OK) break;
    uint64_t ts = host->now_ns();
    ref_run_step(s, (const float*)ref_operand_ptr(exe, job, &s->in[0]),
                 (const float*)ref_operand_ptr(exe, job, &s->in[1]),
                 (float*)ref_operand_ptr(exe, job, &s->out));
    uint64_t te = host->now_ns();
    ++done;
    if (job->q.trace_ctx) {
      char args[160];
      snprintf(args, sizeof(args), "{\"op\":\"%s\",\"device\":\"" REF_DEVICE_NAME "\",\"elements\":%llu}",
               ref_op_name(s->op), (unsigned long long)s->elements);
      axle_hal_trace_event_t ev = {sizeof(ev), s->name, ref_op_name(s->op), ts, te - ts, args, 1};
      host->trace(job->q.trace_ctx, &ev);
    }
  }
  if (job->q.trace_ctx) {
    /* The device-level event: the whole submission on the main track. */
    char args[160];
    snprintf(args, sizeof(args), "{\"device\":\"" REF_DEVICE_NAME "\",\"steps\":%u,\"done\":%u,\"status\":%d}",
             exe->step_count, done, (int)status);
    uint64_t t1 = host->now_ns();
    axle_hal_trace_event_t ev = {sizeof(ev), REF_DEVICE_NAME " execute", "device", t0, t1 - t0, args, 0};
    host->trace(job->q.trace_ctx, &ev);
  }
  return status;
}

static int32_t ref_cancel(axle_hal_device_t* dev, void* completion) {
  axle_plugin_queue_cancel(&dev->queue, completion);
  return AXLE_HAL_OK;
}

/* Returns with the device idle (unless called from complete() on the
 * worker) and its sticky status cleared. */
static int32_t ref_reset(axle_hal_device_t* dev) {
  axle_plugin_queue_reset(&dev->queue);
  atomic_store(&dev->sticky_status, AXLE_HAL_OK);
  return AXLE_HAL_OK;
}

static int32_t ref_device_status(axle_hal_device_t* dev) {
  return atomic_load(&dev->sticky_status);
}

/* ------------------------------------------------------------------------ */
/* The table and the entry point.                                            */
/* ------------------------------------------------------------------------ */

static const axle_hal_plugin_t g_reference_plugin = {
    .header =
        {
            .abi_version = 1,
            .struct_size = sizeof(axle_hal_plugin_t),
            .name = REF_PLUGIN_NAME,
            .description = "Axle reference plugin: emulated device 'ref' (float32 Add, Mul, Relu)",
            .features = AXLE_HAL_FEATURE_ASYNC | AXLE_HAL_FEATURE_PROFILING |
                        AXLE_HAL_FEATURE_SERIALIZE,
            .reserved = {0, 0, 0, 0},
        },
    .init = ref_init,
    .shutdown = ref_shutdown,
    .device_count = ref_device_count,
    .device_info = ref_device_info,
    .device_open = ref_device_open,
    .device_close = ref_device_close,
    .memory_allocate = ref_memory_allocate,
    .memory_free = ref_memory_free,
    .memory_map = ref_memory_map,
    .memory_unmap = ref_memory_unmap,
    .memory_copy = ref_memory_copy,
    .memory_import = ref_memory_import,
    .node_supported = ref_node_supported,
    .compile = ref_compile,
    .executable_release = ref_executable_release,
    .executable_serialize = ref_executable_serialize,
    .executable_load = ref_executable_load,
    .submit = ref_submit,
    .cancel = ref_cancel,
    .reset = ref_reset,
    .device_status = ref_device_status,
};

REF_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version,
                                                          const axle_hal_host_t* host);

/* Negotiation: we implement ABI 1 only, so we answer 1 to any core that
 * speaks 1 or newer, and decline (NULL + a message) a core that speaks less.
 * A plugin implementing several versions would return the table of
 * min(core_abi_version, highest it knows). */
const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version,
                                               const axle_hal_host_t* host) {
  if (core_abi_version < 1) {
    if (host && host->struct_size >= offsetof(axle_hal_host_t, status_make) + sizeof(void*) &&
        host->status_make)
      host->status_make(AXLE_HAL_ABI_MISMATCH,
                        REF_PLUGIN_NAME ": the core speaks ABI version %u; this plugin needs 1",
                        core_abi_version);
    return NULL;
  }
  return &g_reference_plugin;
}

/* The entry point must match the typedef the core casts it to. */
static const axle_hal_entry_fn ref_entry_type_check __attribute__((unused)) = axle_hal_plugin_entry;
