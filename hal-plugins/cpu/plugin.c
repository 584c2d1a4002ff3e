/*
 * The CPU HAL plugin: one device, "cpu", running graphs with the kernels in
 * kernels/ on the calling thread and the plugin's thread pool.
 *
 * Compile first fuses (cpu_fuse.h: Conv with its batch norm, residual Add and
 * activation), then resolves everything a run needs into flat arrays: one
 * cpu_step_t per node or fused group (prepared by its op) and, per step
 * operand, a reference saying where its data lives (constant initializer,
 * binding slot + offset, or the private arena of re-planned internal
 * tensors). A run then only adds bases to offsets and calls run() per step:
 * no allocation, no graph walk, no attribute parsing in the steady state.
 *
 * Threading: submit() may run concurrently on one executable. Per-run state
 * (operand pointer arrays, slot bases, scratch) lives in run contexts pooled
 * per executable behind a mutex; a context is created only when more runs
 * overlap than ever before, so steady-state runs never allocate.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/hal.h"
#include "axle_kernels.h"
#include "cpu_chain.h"
#include "cpu_fuse.h"
#include "cpu_hugepage.h"
#include "cpu_op.h"
#include "cpu_threadpool.h"

#define CPU_PLUGIN_NAME "cpu"
#define CPU_ALIGN 64u

_Static_assert(AXLE_HAL_ABI_VERSION == 1,
               "ABI version changed: revisit negotiation in axle_hal_plugin_entry");

/* True when a struct whose first member is struct_size covers `field`. */
#define CPU_COVERS(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */
/* ------------------------------------------------------------------------ */

struct axle_hal_device_t {
  axle_hal_plugin_state_t* state;
};

struct axle_hal_plugin_state_t {
  const axle_hal_host_t* host;
  axle_hal_device_t device;
};

struct axle_hal_memory_t {
  void* ptr;
  uint64_t size;
  int owned; /* 0 for imported host memory */
};

/* Where one step operand's data comes from at run time. */
enum { CPU_REF_ABSENT = 0, CPU_REF_CONSTANT = 1, CPU_REF_SLOT = 2, CPU_REF_PRIVATE = 3 };
typedef struct cpu_ref_t {
  int32_t kind;
  uint32_t slot;
  uint64_t offset;       /* CPU_REF_SLOT: in the slot; CPU_REF_PRIVATE: in the arena */
  const void* constant;  /* CPU_REF_CONSTANT: initializer bytes */
} cpu_ref_t;

/* A node a fused step absorbed: traced as a zero-length event. */
typedef struct cpu_trace_member_t {
  const axle_hal_node_t* node;
  char* args_json;              /* {"op":"Relu","fused_into":"conv1+relu1"} */
} cpu_trace_member_t;

/* Per-run state; pooled per executable. */
typedef struct cpu_run_ctx_t {
  struct cpu_run_ctx_t* next_free;
  struct cpu_run_ctx_t* next_all;
  uint8_t** slot_base;  /* slot_count entries */
  const void** in;      /* max_in entries */
  void** out;           /* max_out entries */
  void* scratch;        /* max_scratch bytes, CPU_ALIGN aligned, or NULL */
  uint8_t* arena;       /* private_bytes, CPU_ALIGN aligned, or NULL */
} cpu_run_ctx_t;

struct axle_hal_executable_t {
  const axle_hal_host_t* host;
  uint32_t step_count;
  cpu_step_t* steps;
  cpu_ref_t** in_refs;          /* per step: input_count refs */
  cpu_ref_t** out_refs;         /* per step: output_count refs */
  char** args_json;             /* per step trace args, e.g. {"op":"Conv"} */
  cpu_trace_member_t* members;  /* absorbed nodes of fused steps, for tracing */
  uint32_t* member_first;       /* per step: its first entry in members */
  uint32_t* member_count;       /* per step: entries in members (0: not fused) */
  uint32_t member_total;
  const axle_hal_tensor_t** tensor_ptrs; /* backing store of steps[i].in/out */
  cpu_ref_t* refs;              /* backing store of in_refs/out_refs */
  uint32_t slot_count;
  uint64_t* slot_extent;        /* bytes each slot must hold */
  uint8_t* slot_used;
  uint32_t max_in, max_out;
  size_t max_scratch;
  uint64_t private_bytes;       /* arena of tensors re-planned after fusion */
  pthread_mutex_t pool_lock;
  cpu_run_ctx_t* free_ctx;
  cpu_run_ctx_t* all_ctx;
};

/* ------------------------------------------------------------------------ */
/* Allocation and messages                                                   */
/* ------------------------------------------------------------------------ */

/* Plugin objects come from the host allocator when it offers one, so the
 * core can account for them; posix_memalign otherwise. */
static void* cpu_alloc_raw(const axle_hal_host_t* host, size_t size, size_t align) {
  void* p = NULL;
  if (host && host->alloc && host->free) {
    p = host->alloc(size, align);
  } else if (posix_memalign(&p, align, size) != 0) {
    p = NULL;
  }
  return p;
}

/* Large blocks (the tensor arena, kernel scratch) go on huge pages
 * (cpu_hugepage.h); a host that refuses a 2 MiB alignment still gets asked
 * for the one the block needs. */
static void* cpu_alloc(const axle_hal_host_t* host, size_t size, size_t align) {
  if (size == 0) size = 1;
  if (align < sizeof(void*)) align = sizeof(void*);
  const size_t huge = cpu_huge_align(size, align);
  void* p = cpu_alloc_raw(host, size, huge);
  if (!p && huge != align) p = cpu_alloc_raw(host, size, align);
  cpu_huge_advise(p, size);
  return p;
}

static void* cpu_zalloc(const axle_hal_host_t* host, size_t size) {
  void* p = cpu_alloc(host, size, sizeof(void*));
  if (p) memset(p, 0, size ? size : 1);
  return p;
}

static void cpu_free(const axle_hal_host_t* host, void* p) {
  if (!p) return;
  if (host && host->alloc && host->free)
    host->free(p);
  else
    free(p);
}

static int32_t cpu_fail(const axle_hal_host_t* host, int32_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int32_t cpu_fail(const axle_hal_host_t* host, int32_t code, const char* fmt, ...) {
  if (!host || !host->status_make) return code;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return host->status_make(code, CPU_PLUGIN_NAME ": %s", msg);
}

/* ------------------------------------------------------------------------ */
/* Lifetime and devices                                                      */
/* ------------------------------------------------------------------------ */

static int32_t cpu_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out_state) {
  if (!out_state) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "init: out_state is NULL");
  *out_state = NULL;
  if (!host) return AXLE_HAL_INVALID_ARGUMENT;
  axle_hal_plugin_state_t* s = cpu_zalloc(host, sizeof *s);
  if (!s) return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "init: out of memory");
  s->host = host;
  s->device.state = s;
  cpu_pool_acquire();
  *out_state = s;
  return AXLE_HAL_OK;
}

static void cpu_shutdown(axle_hal_plugin_state_t* state) {
  if (!state) return;
  /* The last instance joins the pool's workers before the code they run
   * can be unloaded. */
  cpu_pool_release();
  cpu_free(state->host, state);
}

static int32_t cpu_device_count(axle_hal_plugin_state_t* state, uint32_t* out_count) {
  if (!out_count) return AXLE_HAL_INVALID_ARGUMENT;
  *out_count = state ? 1 : 0;
  return AXLE_HAL_OK;
}

static uint64_t cpu_dtype_mask(void) {
  /* Every dtype some CPU op family handles (float math, integer and bool
   * tensors for layout/elementwise/quantization ops). */
  static const int dtypes[] = {AXLE_HAL_DTYPE_F32, AXLE_HAL_DTYPE_U8,  AXLE_HAL_DTYPE_I8,
                               AXLE_HAL_DTYPE_I32, AXLE_HAL_DTYPE_I64, AXLE_HAL_DTYPE_BOOL};
  uint64_t mask = 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) mask |= 1ull << dtypes[i];
  return mask;
}

/* The kernels dispatch picks on this CPU (under AXLE_KERNELS_ISA), so that
 * `axle devices` says what will run. */
static const char* cpu_kernels_description(void) {
  switch (axle_kernels_isa()) {
    case AXLE_ISA_AVX512:
      return "Host CPU: AVX-512 kernels (fp32; int8 QDQ with AVX-512 VNNI)";
    case AXLE_ISA_AVX2_VNNI:
      return "Host CPU: AVX2/FMA kernels (fp32; int8 QDQ with AVX-VNNI)";
    case AXLE_ISA_AVX2_FMA:
      return "Host CPU: AVX2/FMA kernels (fp32; int8 QDQ with vpmaddwd)";
    default:
      return "Host CPU: portable scalar kernels (fp32, int8 QDQ)";
  }
}

static int32_t cpu_device_info(axle_hal_plugin_state_t* state, uint32_t index,
                               axle_hal_device_info_t* info) {
  const axle_hal_host_t* host = state ? state->host : NULL;
  if (!state || !info)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "device_info: NULL argument");
  if (index != 0)
    return cpu_fail(host, AXLE_HAL_NOT_FOUND, "device_info: no device %u (one device)", index);
  if (info->struct_size < sizeof(uint32_t))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "device_info: struct_size %u is too small",
                    info->struct_size);
  axle_hal_device_info_t full;
  memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  snprintf(full.name, sizeof full.name, "%s", "cpu");
  snprintf(full.description, sizeof full.description, "%s", cpu_kernels_description());
  full.kind = AXLE_HAL_DEVICE_CPU;
  full.emulated = 0;
  full.memory_bytes = 0;
  full.dtype_mask = cpu_dtype_mask();
  /* Device memory is host memory: the core may bind caller buffers by
   * pointer, which saves an import per run. */
  full.flags = AXLE_HAL_DEVICE_FLAG_HOST_ACCESS;
  /* Write only what the caller's struct covers (it may be older). */
  size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
  memcpy(info, &full, n);
  return AXLE_HAL_OK;
}

static int32_t cpu_device_open(axle_hal_plugin_state_t* state, uint32_t index,
                               axle_hal_device_t** out_device) {
  const axle_hal_host_t* host = state ? state->host : NULL;
  if (!out_device) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "device_open: NULL argument");
  *out_device = NULL;
  if (!state) return AXLE_HAL_INVALID_ARGUMENT;
  if (index != 0)
    return cpu_fail(host, AXLE_HAL_NOT_FOUND, "device_open: no device %u (one device)", index);
  /* The device holds no resources of its own, so every open shares it. */
  *out_device = &state->device;
  return AXLE_HAL_OK;
}

static void cpu_device_close(axle_hal_device_t* device) { (void)device; }

static const axle_hal_host_t* device_host(const axle_hal_device_t* device) {
  return device && device->state ? device->state->host : NULL;
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

static int32_t cpu_memory_allocate(axle_hal_device_t* device, uint64_t size, uint64_t align,
                                   axle_hal_memory_t** out_memory) {
  const axle_hal_host_t* host = device_host(device);
  if (!out_memory)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "memory_allocate: NULL argument");
  *out_memory = NULL;
  if (!device) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "memory_allocate: NULL device");
  if (align & (align - 1))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                    "memory_allocate: alignment %llu is not a power of two",
                    (unsigned long long)align);
  if (size > SIZE_MAX - CPU_ALIGN)
    return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "memory_allocate: %llu bytes",
                    (unsigned long long)size);
  /* Vector kernels want 64-byte (cache line / AVX-512) alignment regardless
   * of what was asked. */
  if (align < CPU_ALIGN) align = CPU_ALIGN;
  axle_hal_memory_t* m = cpu_zalloc(host, sizeof *m);
  if (!m) return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "memory_allocate: out of memory");
  m->ptr = cpu_alloc(host, (size_t)size, (size_t)align);
  if (!m->ptr) {
    cpu_free(host, m);
    return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "memory_allocate: cannot allocate %llu bytes",
                    (unsigned long long)size);
  }
  m->size = size;
  m->owned = 1;
  *out_memory = m;
  return AXLE_HAL_OK;
}

static void cpu_memory_free(axle_hal_device_t* device, axle_hal_memory_t* memory) {
  if (!memory) return;
  const axle_hal_host_t* host = device_host(device);
  if (memory->owned) cpu_free(host, memory->ptr);
  cpu_free(host, memory);
}

static int32_t cpu_memory_map(axle_hal_device_t* device, axle_hal_memory_t* memory,
                              void** out_host_ptr) {
  if (!out_host_ptr)
    return cpu_fail(device_host(device), AXLE_HAL_INVALID_ARGUMENT, "memory_map: NULL argument");
  *out_host_ptr = NULL;
  if (!memory)
    return cpu_fail(device_host(device), AXLE_HAL_INVALID_ARGUMENT, "memory_map: NULL memory");
  *out_host_ptr = memory->ptr;
  return AXLE_HAL_OK;
}

static void cpu_memory_unmap(axle_hal_device_t* device, axle_hal_memory_t* memory) {
  (void)device;
  (void)memory;
}

static int range_ok(const axle_hal_memory_t* m, uint64_t offset, uint64_t size) {
  return offset <= m->size && size <= m->size - offset;
}

static int32_t cpu_memory_copy(axle_hal_device_t* device, axle_hal_memory_t* dst,
                               uint64_t dst_offset, axle_hal_memory_t* src, uint64_t src_offset,
                               uint64_t size) {
  const axle_hal_host_t* host = device_host(device);
  if (!dst || !src) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "memory_copy: NULL memory");
  if (!range_ok(dst, dst_offset, size) || !range_ok(src, src_offset, size))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                    "memory_copy: %llu bytes from offset %llu of %llu into offset %llu of %llu "
                    "is out of bounds",
                    (unsigned long long)size, (unsigned long long)src_offset,
                    (unsigned long long)src->size, (unsigned long long)dst_offset,
                    (unsigned long long)dst->size);
  if (size)  /* memmove: a copy within one memory may overlap */
    memmove((uint8_t*)dst->ptr + dst_offset, (const uint8_t*)src->ptr + src_offset, (size_t)size);
  return AXLE_HAL_OK;
}

static int32_t cpu_memory_import(axle_hal_device_t* device, void* host_ptr, uint64_t size,
                                 axle_hal_memory_t** out_memory) {
  const axle_hal_host_t* host = device_host(device);
  if (!out_memory) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "memory_import: NULL argument");
  *out_memory = NULL;
  if (!host_ptr && size)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "memory_import: NULL pointer of %llu bytes",
                    (unsigned long long)size);
  axle_hal_memory_t* m = cpu_zalloc(host, sizeof *m);
  if (!m) return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "memory_import: out of memory");
  m->ptr = host_ptr;
  m->size = size;
  m->owned = 0;
  *out_memory = m;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Capability                                                                */
/* ------------------------------------------------------------------------ */

static int is_default_domain(const char* domain) {
  return !domain || domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
}

static int32_t cpu_node_supported(axle_hal_device_t* device, const axle_hal_graph_t* graph,
                                  uint32_t node, char* reason, size_t reason_size) {
  (void)device;
  if (reason && reason_size) reason[0] = '\0';
  if (!graph || node >= graph->node_count)
    return cpu_unsupported(reason, reason_size, "node %u does not exist", node);
  const axle_hal_node_t* n = &graph->nodes[node];
  if (!is_default_domain(n->domain))
    return cpu_unsupported(reason, reason_size, "unsupported op '%s' (domain '%s')", n->op_type,
                           n->domain);
  const cpu_op_t* op = cpu_op_find(n->op_type);
  if (!op) return cpu_unsupported(reason, reason_size, "unsupported op '%s'", n->op_type);
  return op->check(graph, n, reason, reason_size);
}

/* ------------------------------------------------------------------------ */
/* Executables                                                               */
/* ------------------------------------------------------------------------ */

static void ctx_free(const axle_hal_host_t* host, cpu_run_ctx_t* c) {
  if (!c) return;
  cpu_free(host, c->scratch);
  cpu_free(host, c->arena);
  cpu_free(host, c);
}

static void cpu_executable_release(axle_hal_executable_t* e) {
  if (!e) return;
  const axle_hal_host_t* host = e->host;
  if (e->steps)
    for (uint32_t i = 0; i < e->step_count; ++i) free(e->steps[i].params);
  if (e->args_json)
    for (uint32_t i = 0; i < e->step_count; ++i) cpu_free(host, e->args_json[i]);
  if (e->members)
    for (uint32_t i = 0; i < e->member_total; ++i) cpu_free(host, e->members[i].args_json);
  for (cpu_run_ctx_t* c = e->all_ctx; c;) {
    cpu_run_ctx_t* next = c->next_all;
    ctx_free(host, c);
    c = next;
  }
  pthread_mutex_destroy(&e->pool_lock);
  cpu_free(host, e->steps);
  cpu_free(host, e->in_refs);
  cpu_free(host, e->out_refs);
  cpu_free(host, e->args_json);
  cpu_free(host, e->members);
  cpu_free(host, e->member_first);
  cpu_free(host, e->member_count);
  cpu_free(host, e->tensor_ptrs);
  cpu_free(host, e->refs);
  cpu_free(host, e->slot_extent);
  cpu_free(host, e->slot_used);
  cpu_free(host, e);
}

/* Appends s to w as JSON string content (names come from the model). */
static char* json_escape(char* w, const char* s) {
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    if (*p == '"' || *p == '\\')
      w += sprintf(w, "\\%c", *p);
    else if (*p < 0x20)
      w += sprintf(w, "\\u%04x", *p);
    else
      *w++ = (char)*p;
  }
  return w;
}

/* {"op":"<op>"} or {"op":"<op>","<key>":"<value>"}. */
static char* make_args_json(const axle_hal_host_t* host, const char* op, const char* key,
                            const char* value) {
  const size_t len = strlen(op) + (key ? strlen(key) + strlen(value) : 0);
  char* s = cpu_alloc(host, 32 + 6 * len, 1);
  if (!s) return NULL;
  char* w = s + sprintf(s, "{\"op\":\"");
  w = json_escape(w, op);
  if (key) {
    w += sprintf(w, "\",\"%s\":\"", key);
    w = json_escape(w, value);
  }
  strcpy(w, "\"}");
  return s;
}

/* "conv1+bn1+relu1": the names of a group's members. */
static char* join_members(const axle_hal_host_t* host, const axle_hal_graph_t* g,
                          const axle_hal_subgraph_t* sg, const cpu_group_t* grp) {
  size_t len = 1;
  for (uint32_t m = 0; m < grp->count; ++m)
    len += strlen(g->nodes[sg->nodes[grp->members[m]]].name) + 1;
  char* s = cpu_alloc(host, len, 1);
  if (!s) return NULL;
  s[0] = '\0';
  for (uint32_t m = 0; m < grp->count; ++m) {
    if (m) strcat(s, "+");
    strcat(s, g->nodes[sg->nodes[grp->members[m]]].name);
  }
  return s;
}

/* Trace events of step i: the step's own (named after its node, for a
 * group the Conv, with "fused" naming all members), then one zero-length
 * event per absorbed member ("fused_into"), so every node of the partition
 * still appears under its own name. */
static int32_t make_trace_info(const axle_hal_host_t* host, axle_hal_executable_t* e,
                               uint32_t i, const axle_hal_graph_t* g,
                               const axle_hal_subgraph_t* sg, const cpu_group_t* grp,
                               cpu_trace_member_t* members, uint32_t* member_at) {
  const char* op = e->steps[i].op->op_type;
  if (!grp) {
    e->args_json[i] = make_args_json(host, op, NULL, NULL);
    return e->args_json[i] ? AXLE_HAL_OK : AXLE_HAL_OUT_OF_MEMORY;
  }
  char* joined = join_members(host, g, sg, grp);
  if (!joined) return AXLE_HAL_OUT_OF_MEMORY;
  e->args_json[i] = make_args_json(host, op, "fused", joined);
  e->member_first[i] = *member_at;
  int32_t st = e->args_json[i] ? AXLE_HAL_OK : AXLE_HAL_OUT_OF_MEMORY;
  for (uint32_t m = 1; st == AXLE_HAL_OK && m < grp->count; ++m) {
    cpu_trace_member_t* tm = &members[(*member_at)++];
    tm->node = &g->nodes[sg->nodes[grp->members[m]]];
    tm->args_json = make_args_json(host, tm->node->op_type, "fused_into", joined);
    ++e->member_count[i];
    if (!tm->args_json) st = AXLE_HAL_OUT_OF_MEMORY;
  }
  cpu_free(host, joined);
  return st;
}

/* Fills one operand reference; the tensor is the step's in/out entry.
 * private_off: per tensor, its offset in the private arena or UINT64_MAX. */
static int32_t resolve_ref(const axle_hal_host_t* host, axle_hal_executable_t* e,
                           const axle_hal_node_t* node, const axle_hal_graph_t* g,
                           const axle_hal_subgraph_t* sg, const int32_t* loc_index,
                           const uint64_t* private_off, int32_t tensor, cpu_ref_t* ref) {
  if (tensor < 0) {
    ref->kind = CPU_REF_ABSENT;
    return AXLE_HAL_OK;
  }
  const axle_hal_tensor_t* t = &g->tensors[tensor];
  if (t->flags & AXLE_HAL_TENSOR_CONSTANT) {
    if (!t->data && t->size_bytes)
      return cpu_fail(host, AXLE_HAL_INVALID_MODEL,
                      "node '%s' (%s): constant tensor '%s' has no data", node->name,
                      node->op_type, t->name);
    ref->kind = CPU_REF_CONSTANT;
    ref->constant = t->data;
    return AXLE_HAL_OK;
  }
  if (private_off && private_off[tensor] != UINT64_MAX) {
    ref->kind = CPU_REF_PRIVATE;
    ref->offset = private_off[tensor];
    return AXLE_HAL_OK;
  }
  const int32_t li = loc_index[tensor];
  if (li < 0)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                    "node '%s' (%s): tensor '%s' has no location in the subgraph", node->name,
                    node->op_type, t->name);
  const axle_hal_tensor_location_t* loc = &sg->locations[li];
  if (loc->slot >= sg->slot_count)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                    "node '%s' (%s): tensor '%s' is in slot %u of %u", node->name,
                    node->op_type, t->name, loc->slot, sg->slot_count);
  ref->kind = CPU_REF_SLOT;
  ref->slot = loc->slot;
  ref->offset = loc->offset;
  const uint64_t end = loc->offset + t->size_bytes;
  if (end > e->slot_extent[loc->slot]) e->slot_extent[loc->slot] = end;
  e->slot_used[loc->slot] = 1;
  return AXLE_HAL_OK;
}

/* Operand tensors of the step emitted at subgraph position p: the node's own,
 * or a fused group's (cpu_group_t: inputs -> output). Returns the input
 * count; tensors go to ins/outs (room for max(node's, 4) and 1+). */
static uint32_t step_operands(const axle_hal_graph_t* g, const axle_hal_subgraph_t* sg,
                              const cpu_fuse_result_t* fuse, uint32_t p, int32_t* ins,
                              int32_t* outs, uint32_t* out_count) {
  const int32_t role = fuse->role[p];
  if (role >= 0) {
    const cpu_group_t* grp = &fuse->groups[role];
    for (uint32_t j = 0; j < grp->input_count; ++j) ins[j] = grp->inputs[j];
    outs[0] = grp->output;
    *out_count = 1;
    return grp->input_count;
  }
  const axle_hal_node_t* n = &g->nodes[sg->nodes[p]];
  for (uint32_t j = 0; j < n->input_count; ++j) ins[j] = n->inputs[j];
  for (uint32_t j = 0; j < n->output_count; ++j) outs[j] = n->outputs[j];
  *out_count = n->output_count;
  return n->input_count;
}

/* Places the tensors that live only inside the partition into a private
 * arena, with lifetimes measured in the fused program's steps (the core's
 * plan assumed the unfused order). tids: the steps' operand tensors, in
 * step order (in then out per step). */
static int32_t plan_private(const axle_hal_host_t* host, axle_hal_executable_t* e,
                            const axle_hal_graph_t* g, const cpu_fuse_result_t* fuse,
                            const int32_t* tids, uint64_t* private_off) {
  const uint32_t nt = g->tensor_count;
  uint32_t* first = cpu_alloc(host, (nt + 1) * sizeof *first, sizeof(void*));
  uint32_t* last = cpu_alloc(host, (nt + 1) * sizeof *last, sizeof(void*));
  uint32_t* ids = cpu_alloc(host, (nt + 1) * sizeof *ids, sizeof(void*));
  uint64_t* sizes = cpu_alloc(host, (nt + 1) * sizeof *sizes, sizeof(void*));
  uint64_t* offs = cpu_alloc(host, (nt + 1) * sizeof *offs, sizeof(void*));
  uint32_t* f2 = cpu_alloc(host, (nt + 1) * sizeof *f2, sizeof(void*));
  uint32_t* l2 = cpu_alloc(host, (nt + 1) * sizeof *l2, sizeof(void*));
  int32_t st = AXLE_HAL_OK;
  if (!first || !last || !ids || !sizes || !offs || !f2 || !l2) {
    st = cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "compile: out of memory");
    goto done;
  }
  for (uint32_t t = 0; t < nt; ++t) {
    first[t] = UINT32_MAX;
    private_off[t] = UINT64_MAX;
  }
  size_t io = 0;
  for (uint32_t i = 0; i < e->step_count; ++i) {
    const cpu_step_t* s = &e->steps[i];
    for (uint32_t j = 0; j < s->input_count + s->output_count; ++j, ++io) {
      const int32_t t = tids[io];
      if (t < 0 || !fuse->internal[t]) continue;
      if (first[t] == UINT32_MAX) first[t] = i;
      last[t] = i;
    }
  }
  uint32_t n = 0;
  for (uint32_t t = 0; t < nt; ++t) {
    if (first[t] == UINT32_MAX) continue;
    ids[n] = t;
    sizes[n] = g->tensors[t].size_bytes;
    f2[n] = first[t];
    l2[n] = last[t];
    ++n;
  }
  e->private_bytes = cpu_plan_offsets(n, sizes, f2, l2, CPU_ALIGN, offs);
  for (uint32_t i = 0; i < n; ++i) private_off[ids[i]] = offs[i];
done:
  cpu_free(host, first);
  cpu_free(host, last);
  cpu_free(host, ids);
  cpu_free(host, sizes);
  cpu_free(host, offs);
  cpu_free(host, f2);
  cpu_free(host, l2);
  return st;
}

static int32_t cpu_compile(axle_hal_device_t* device, const axle_hal_subgraph_t* sg,
                           const axle_hal_compile_options_t* options,
                           axle_hal_executable_t** out_executable) {
  const axle_hal_host_t* host = device_host(device);
  if (!out_executable) return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "compile: NULL argument");
  *out_executable = NULL;
  if (!device || !sg || !sg->graph)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "compile: NULL device or subgraph");
  if (!CPU_COVERS(sg, axle_hal_subgraph_t, slot_count))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "compile: subgraph struct_size %u too small",
                    sg->struct_size);
  const axle_hal_graph_t* g = sg->graph;
  if (!CPU_COVERS(g, axle_hal_graph_t, nodes))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "compile: graph struct_size %u too small",
                    g->struct_size);
  uint32_t threads = 0;
  if (options && CPU_COVERS(options, axle_hal_compile_options_t, threads))
    threads = options->threads;
  if (threads == 0) threads = cpu_pool_default_threads();

  /* Validate node indices and operands before allocating. */
  for (uint32_t i = 0; i < sg->node_count; ++i) {
    if (sg->nodes[i] >= g->node_count)
      return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "compile: node index %u out of range",
                      sg->nodes[i]);
    const axle_hal_node_t* n = &g->nodes[sg->nodes[i]];
    for (uint32_t j = 0; j < n->input_count; ++j)
      if (n->inputs[j] >= (int32_t)g->tensor_count)
        return cpu_fail(host, AXLE_HAL_INVALID_MODEL, "node '%s': input %u out of range",
                        n->name, j);
    for (uint32_t j = 0; j < n->output_count; ++j)
      if (n->outputs[j] >= (int32_t)g->tensor_count)
        return cpu_fail(host, AXLE_HAL_INVALID_MODEL, "node '%s': output %u out of range",
                        n->name, j);
  }
  cpu_fuse_result_t fuse;
  const int keep = options && CPU_COVERS(options, axle_hal_compile_options_t, flags) &&
                   (options->flags & AXLE_HAL_COMPILE_KEEP_INTERMEDIATES);
  if (cpu_fuse_plan(sg, keep, threads, &fuse) != AXLE_HAL_OK)
    return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "compile: out of memory");

  /* Count steps and operands of the fused program. */
  uint32_t step_count = 0, max_in = 4, max_out = 1;
  size_t io_total = 0;
  for (uint32_t p = 0; p < sg->node_count; ++p) {
    if (fuse.role[p] == CPU_ROLE_ABSORBED) continue;
    const axle_hal_node_t* n = &g->nodes[sg->nodes[p]];
    const uint32_t nin = fuse.role[p] >= 0 ? fuse.groups[fuse.role[p]].input_count
                                           : n->input_count;
    const uint32_t nout = fuse.role[p] >= 0 ? 1 : n->output_count;
    io_total += nin + nout;
    if (nin > max_in) max_in = nin;
    if (nout > max_out) max_out = nout;
    ++step_count;
  }

  axle_hal_executable_t* e = cpu_zalloc(host, sizeof *e);
  if (!e) {
    cpu_fuse_free(&fuse);
    return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "compile: out of memory");
  }
  e->host = host;
  pthread_mutex_init(&e->pool_lock, NULL);
  e->step_count = step_count;
  e->slot_count = sg->slot_count;
  e->max_in = max_in;
  e->max_out = max_out;
  int32_t* loc_index = cpu_alloc(host, (g->tensor_count + 1) * sizeof(int32_t), sizeof(int32_t));
  int32_t* tids = cpu_alloc(host, (io_total + 1) * sizeof(int32_t), sizeof(int32_t));
  int32_t* step_group = cpu_alloc(host, (step_count + 1) * sizeof(int32_t), sizeof(int32_t));
  uint64_t* private_off =
      fuse.group_count ? cpu_alloc(host, (g->tensor_count + 1) * sizeof(uint64_t), 8) : NULL;
  e->steps = cpu_zalloc(host, e->step_count * sizeof *e->steps);
  e->in_refs = cpu_zalloc(host, e->step_count * sizeof *e->in_refs);
  e->out_refs = cpu_zalloc(host, e->step_count * sizeof *e->out_refs);
  e->args_json = cpu_zalloc(host, e->step_count * sizeof *e->args_json);
  e->member_total = sg->node_count - step_count;
  e->members = cpu_zalloc(host, (e->member_total + 1) * sizeof *e->members);
  e->member_first = cpu_zalloc(host, e->step_count * sizeof *e->member_first);
  e->member_count = cpu_zalloc(host, e->step_count * sizeof *e->member_count);
  e->tensor_ptrs = cpu_zalloc(host, io_total * sizeof *e->tensor_ptrs);
  e->refs = cpu_zalloc(host, io_total * sizeof *e->refs);
  e->slot_extent = cpu_zalloc(host, e->slot_count * sizeof *e->slot_extent);
  e->slot_used = cpu_zalloc(host, e->slot_count * sizeof *e->slot_used);
  int32_t st = AXLE_HAL_OK;
  if (!loc_index || !tids || !step_group || (fuse.group_count && !private_off) || !e->steps ||
      !e->in_refs ||
      !e->out_refs || !e->args_json || !e->members || !e->member_first || !e->member_count ||
      !e->tensor_ptrs ||
      !e->refs || !e->slot_extent || !e->slot_used) {
    st = cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "compile: out of memory");
    goto fail;
  }
  for (uint32_t t = 0; t < g->tensor_count; ++t) loc_index[t] = -1;
  for (uint32_t i = 0; i < sg->location_count; ++i) {
    const int32_t t = sg->locations[i].tensor;
    if (t >= 0 && (uint32_t)t < g->tensor_count) loc_index[t] = (int32_t)i;
  }

  /* Steps, their operand tensors and trace records. */
  size_t io = 0;
  uint32_t i = 0, member_at = 0;
  for (uint32_t p = 0; p < sg->node_count; ++p) {
    const int32_t role = fuse.role[p];
    if (role == CPU_ROLE_ABSORBED) continue;
    const cpu_group_t* grp = role >= 0 ? &fuse.groups[role] : NULL;
    const axle_hal_node_t* n = &g->nodes[sg->nodes[grp ? grp->members[0] : p]];
    cpu_step_t* s = &e->steps[i];
    if (!is_default_domain(n->domain)) {
      st = cpu_fail(host, AXLE_HAL_UNSUPPORTED, "node '%s': unsupported op '%s' (domain '%s')",
                    n->name, n->op_type, n->domain);
      goto fail;
    }
    /* Integer QDQ steps and chains have their own ops (cpu_qdq.h,
     * cpu_chain.h), matched, not checked. */
    const int matched = grp && grp->kind != CPU_GROUP_CONV;
    const int chain = grp && (grp->kind == CPU_GROUP_CHAIN || grp->kind == CPU_GROUP_CONV_POOL);
    const cpu_op_t* op = !matched ? cpu_op_find(n->op_type)
                         : chain  ? cpu_chain_op(grp->kind)
                                  : cpu_qdq_op(grp->kind);
    if (!op) {
      st = cpu_fail(host, AXLE_HAL_UNSUPPORTED, "node '%s': unsupported op '%s'", n->name,
                    n->op_type);
      goto fail;
    }
    /* Placement normally asked already; asking again keeps prepare() from
     * ever seeing a node its check() would refuse. */
    char reason[256] = "";
    if (!matched && op->check(g, n, reason, sizeof reason) != AXLE_HAL_OK) {
      st = cpu_fail(host, AXLE_HAL_UNSUPPORTED, "node '%s' (%s): %s", n->name, n->op_type,
                    reason);
      goto fail;
    }
    uint32_t nout = 0;
    const uint32_t room = grp ? grp->input_count : n->input_count;
    const uint32_t nin = step_operands(g, sg, &fuse, p, tids + io, tids + io + room, &nout);
    step_group[i] = role;
    s->graph = g;
    s->node = n;
    s->op = op;
    s->threads = threads;
    s->input_count = nin;
    s->output_count = nout;
    s->in = e->tensor_ptrs + io;
    s->out = e->tensor_ptrs + io + nin;
    e->in_refs[i] = e->refs + io;
    e->out_refs[i] = e->refs + io + nin;
    for (uint32_t j = 0; j < nin + nout; ++j)
      s->in[j] = tids[io + j] >= 0 ? &g->tensors[tids[io + j]] : NULL;
    if (make_trace_info(host, e, i, g, sg, grp, e->members, &member_at) != AXLE_HAL_OK) {
      st = cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "compile: out of memory");
      goto fail;
    }
    io += nin + nout;
    ++i;
  }
  if (fuse.group_count) {
    st = plan_private(host, e, g, &fuse, tids, private_off);
    if (st != AXLE_HAL_OK) goto fail;
  }

  /* Operand references, then each op's prepare. */
  io = 0;
  for (i = 0; i < e->step_count; ++i) {
    cpu_step_t* s = &e->steps[i];
    for (uint32_t j = 0; j < s->input_count + s->output_count; ++j) {
      st = resolve_ref(host, e, s->node, g, sg, loc_index, private_off, tids[io + j],
                       &e->in_refs[i][j]);
      if (st != AXLE_HAL_OK) goto fail;
    }
    io += s->input_count + s->output_count;
    const cpu_group_t* grp = step_group[i] >= 0 ? &fuse.groups[step_group[i]] : NULL;
    st = !grp                               ? s->op->prepare(host, s)
         : grp->kind == CPU_GROUP_CONV      ? cpu_conv_prepare_fused(host, s, &grp->fusion)
         : grp->kind == CPU_GROUP_CHAIN     ? cpu_chain_prepare(host, s, grp)
         : grp->kind == CPU_GROUP_CONV_POOL ? cpu_chain_prepare(host, s, grp)
                                            : cpu_qdq_prepare(host, s, grp);
    if (st != AXLE_HAL_OK) goto fail; /* prepare set the message */
    const size_t scratch = (s->scratch_bytes + CPU_ALIGN - 1) & ~(size_t)(CPU_ALIGN - 1);
    if (scratch > e->max_scratch) e->max_scratch = scratch;
  }
  cpu_free(host, loc_index);
  cpu_free(host, tids);
  cpu_free(host, step_group);
  cpu_free(host, private_off);
  cpu_fuse_free(&fuse);
  *out_executable = e;
  return AXLE_HAL_OK;

fail:
  cpu_free(host, loc_index);
  cpu_free(host, tids);
  cpu_free(host, step_group);
  cpu_free(host, private_off);
  cpu_fuse_free(&fuse);
  cpu_executable_release(e);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Execution                                                                 */
/* ------------------------------------------------------------------------ */

static cpu_run_ctx_t* ctx_acquire(axle_hal_executable_t* e) {
  pthread_mutex_lock(&e->pool_lock);
  cpu_run_ctx_t* c = e->free_ctx;
  if (c) e->free_ctx = c->next_free;
  pthread_mutex_unlock(&e->pool_lock);
  if (c) return c;

  /* First run, or more concurrent runs than before: grow the pool. */
  const size_t size = sizeof *c + e->slot_count * sizeof *c->slot_base +
                      e->max_in * sizeof *c->in + e->max_out * sizeof *c->out;
  c = cpu_zalloc(e->host, size);
  if (!c) return NULL;
  c->slot_base = (uint8_t**)(c + 1);
  c->in = (const void**)(c->slot_base + e->slot_count);
  c->out = (void**)(c->in + e->max_in);
  if (e->max_scratch) {
    c->scratch = cpu_alloc(e->host, e->max_scratch, CPU_ALIGN);
    if (!c->scratch) {
      cpu_free(e->host, c);
      return NULL;
    }
  }
  if (e->private_bytes) {
    c->arena = cpu_alloc(e->host, (size_t)e->private_bytes, CPU_ALIGN);
    if (!c->arena) {
      ctx_free(e->host, c);
      return NULL;
    }
  }
  pthread_mutex_lock(&e->pool_lock);
  c->next_all = e->all_ctx;
  e->all_ctx = c;
  pthread_mutex_unlock(&e->pool_lock);
  return c;
}

static void ctx_release(axle_hal_executable_t* e, cpu_run_ctx_t* c) {
  pthread_mutex_lock(&e->pool_lock);
  c->next_free = e->free_ctx;
  e->free_ctx = c;
  pthread_mutex_unlock(&e->pool_lock);
}

static void* ref_pointer(const cpu_ref_t* r, const cpu_run_ctx_t* c) {
  switch (r->kind) {
    case CPU_REF_CONSTANT: return (void*)r->constant;
    case CPU_REF_SLOT: return c->slot_base[r->slot] + r->offset;
    case CPU_REF_PRIVATE: return c->arena + r->offset;
    default: return NULL;
  }
}

/* Runs every step; returns the completion status. */
static int32_t run_steps(axle_hal_executable_t* e, cpu_run_ctx_t* c,
                         const axle_hal_submit_info_t* info) {
  const axle_hal_host_t* host = e->host;
  const volatile int32_t* cancel =
      CPU_COVERS(info, axle_hal_submit_info_t, cancel_flag) ? info->cancel_flag : NULL;
  const uint64_t deadline =
      CPU_COVERS(info, axle_hal_submit_info_t, deadline_ns) ? info->deadline_ns : 0;
  void* trace_ctx = CPU_COVERS(info, axle_hal_submit_info_t, trace_ctx) ? info->trace_ctx : NULL;
  const int tracing = trace_ctx && host->trace && host->now_ns;
  const int timed = deadline && host->now_ns;

  for (uint32_t i = 0; i < e->step_count; ++i) {
    const cpu_step_t* s = &e->steps[i];
    if (axle_hal_cancel_requested(cancel))
      return cpu_fail(host, AXLE_HAL_CANCELLED, "run cancelled before node '%s' (%u of %u)",
                      s->node->name, i + 1, e->step_count);
    if (timed && host->now_ns() > deadline)
      return cpu_fail(host, AXLE_HAL_TIMEOUT, "deadline passed before node '%s' (%u of %u)",
                      s->node->name, i + 1, e->step_count);
    for (uint32_t j = 0; j < s->input_count; ++j)
      c->in[j] = ref_pointer(&e->in_refs[i][j], c);
    for (uint32_t j = 0; j < s->output_count; ++j)
      c->out[j] = ref_pointer(&e->out_refs[i][j], c);
    const uint64_t t0 = tracing ? host->now_ns() : 0;
    s->op->run(s, c->in, c->out, c->scratch);
    if (tracing) {
      const uint64_t t1 = host->now_ns();
      axle_hal_trace_event_t ev;
      memset(&ev, 0, sizeof ev);
      ev.struct_size = sizeof ev;
      ev.name = s->node->name;
      ev.category = s->node->op_type;
      ev.start_ns = t0;
      ev.duration_ns = t1 - t0;
      ev.args_json = e->args_json[i];
      ev.track = 0;
      host->trace(trace_ctx, &ev);
      for (uint32_t m = 0; m < e->member_count[i]; ++m) {
        const cpu_trace_member_t* tm = &e->members[e->member_first[i] + m];
        ev.name = tm->node->name;
        ev.category = tm->node->op_type;
        ev.start_ns = t1;
        ev.duration_ns = 0;
        ev.args_json = tm->args_json;
        host->trace(trace_ctx, &ev);
      }
    }
  }
  return AXLE_HAL_OK;
}

static int32_t cpu_submit(axle_hal_device_t* device, const axle_hal_submit_info_t* info) {
  const axle_hal_host_t* host = device_host(device);
  if (!info || !info->executable)
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "submit: NULL submit info or executable");
  if (!CPU_COVERS(info, axle_hal_submit_info_t, completion))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "submit: struct_size %u too small",
                    info->struct_size);
  axle_hal_executable_t* e = info->executable;
  host = e->host;
  if (info->binding_count < e->slot_count || (e->slot_count && !info->bindings))
    return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                    "submit: %u bindings for an executable with %u slots", info->binding_count,
                    e->slot_count);
  /* Resolve and bounds-check every slot once; steps then only add offsets. */
  for (uint32_t s = 0; s < e->slot_count; ++s) {
    if (!e->slot_used[s]) continue;
    const axle_hal_binding_t* b = &info->bindings[s];
    if (!b->memory && !b->host_ptr)
      return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT, "submit: slot %u has no memory bound", s);
    /* A host pointer carries no size: the core sized it from the plan. */
    if (b->memory && !range_ok(b->memory, b->offset, e->slot_extent[s]))
      return cpu_fail(host, AXLE_HAL_INVALID_ARGUMENT,
                      "submit: slot %u needs %llu bytes at offset %llu but its memory holds %llu",
                      s, (unsigned long long)e->slot_extent[s], (unsigned long long)b->offset,
                      (unsigned long long)b->memory->size);
  }
  cpu_run_ctx_t* c = ctx_acquire(e);
  if (!c) return cpu_fail(host, AXLE_HAL_OUT_OF_MEMORY, "submit: out of memory");
  for (uint32_t s = 0; s < e->slot_count; ++s)
    c->slot_base[s] = !e->slot_used[s] ? NULL
                      : info->bindings[s].memory
                          ? (uint8_t*)info->bindings[s].memory->ptr + info->bindings[s].offset
                          : (uint8_t*)info->bindings[s].host_ptr + info->bindings[s].offset;
  const int32_t status = run_steps(e, c, info);
  ctx_release(e, c);
  /* The CPU completes inline: the run is over when submit returns. */
  if (host->complete) host->complete(info->completion, status);
  return AXLE_HAL_OK;
}

/* One line per step: "conv1 Conv [1,64,56,56]  fused: bn1(BatchNormalization)
 * + relu1(Relu)", the op being the step's (QConv[u8] for an integer QDQ
 * pattern), so `axle info --optimized` shows what fusion left. */
static int32_t cpu_executable_report(axle_hal_executable_t* e, char* text, size_t size) {
  if (!e || !text || !size) return AXLE_HAL_INVALID_ARGUMENT;
  size_t at = 0;
  text[0] = '\0';
  for (uint32_t i = 0; i < e->step_count && at + 1 < size; ++i) {
    const cpu_step_t* st = &e->steps[i];
    const axle_hal_tensor_t* y = st->output_count ? st->out[0] : NULL;
    char shape[96] = "";
    size_t k = 0;
    for (uint32_t d = 0; y && d < y->rank && k + 24 < sizeof shape; ++d)
      k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? "," : "[",
                            (long long)y->shape[d]);
    if (y && k + 2 < sizeof shape) snprintf(shape + k, sizeof shape - k, "%s", y->rank ? "]" : "[]");
    int w = snprintf(text + at, size - at, "%s %s %s", st->node->name, st->op->op_type, shape);
    if (w < 0) break;
    at += (size_t)w < size - at ? (size_t)w : size - at - 1;
    for (uint32_t m = 0; e->member_count && m < e->member_count[i] && at + 1 < size; ++m) {
      const axle_hal_node_t* n = e->members[e->member_first[i] + m].node;
      w = snprintf(text + at, size - at, "%s%s(%s)", m ? " + " : "  fused: ", n->name, n->op_type);
      if (w < 0) break;
      at += (size_t)w < size - at ? (size_t)w : size - at - 1;
    }
    if (at + 1 < size) text[at++] = '\n';
    text[at] = '\0';
  }
  return AXLE_HAL_OK;
}

static int32_t cpu_cancel(axle_hal_device_t* device, void* completion) {
  /* Nothing is ever in flight after submit() returns; the core's cancel
   * flag stops a running submit between steps. */
  (void)device;
  (void)completion;
  return AXLE_HAL_OK;
}

static int32_t cpu_reset(axle_hal_device_t* device) {
  (void)device;
  return AXLE_HAL_OK;
}

static int32_t cpu_device_status(axle_hal_device_t* device) {
  (void)device;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Entry                                                                     */
/* ------------------------------------------------------------------------ */

static const axle_hal_plugin_t g_cpu_plugin = {
    .header =
        {
            .abi_version = AXLE_HAL_ABI_VERSION,
            .struct_size = sizeof(axle_hal_plugin_t),
            .name = CPU_PLUGIN_NAME,
            .description = "Axle CPU plugin: reference fp32 kernels on the host",
            .features = AXLE_HAL_FEATURE_PROFILING,
            .reserved = {0, 0, 0, 0},
        },
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .memory_allocate = cpu_memory_allocate,
    .memory_free = cpu_memory_free,
    .memory_map = cpu_memory_map,
    .memory_unmap = cpu_memory_unmap,
    .memory_copy = cpu_memory_copy,
    .memory_import = cpu_memory_import,
    .node_supported = cpu_node_supported,
    .compile = cpu_compile,
    .executable_release = cpu_executable_release,
    .executable_serialize = NULL,
    .executable_load = NULL,
    .submit = cpu_submit,
    .cancel = cpu_cancel,
    .reset = cpu_reset,
    .device_status = cpu_device_status,
    .executable_report = cpu_executable_report,
};

__attribute__((visibility("default"))) const axle_hal_plugin_t* axle_hal_plugin_entry(
    uint32_t core_abi_version, const axle_hal_host_t* host);

const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version,
                                               const axle_hal_host_t* host) {
  /* We speak version 1 only, so min(core, ours) is 1 for every core that
   * speaks at least 1; older cores get nothing. */
  if (core_abi_version < 1) {
    cpu_fail(host, AXLE_HAL_ABI_MISMATCH,
             "core speaks plugin ABI version %u; this plugin needs at least 1", core_abi_version);
    return NULL;
  }
  return &g_cpu_plugin;
}
