/*
 * The Axle DRP-AI plugin: device "drpai" (Renesas RZ/V2H DRP-AI).
 *
 * Each executable is one DRP-AI program with its own descriptor ("one open
 * per model", driver manual 4.2.1), placed once in the DRP-AI memory area
 * through SET_ADRCONV + ASSIGN/write and run per submission with the board's
 * sequence (drpai_runner.c). The device behind the descriptors is the real
 * driver on a board and the emulated one elsewhere (drpai_dev.c).
 *
 * Environment (docs/drpai.md has the full list):
 *   AXLE_DRPAI_BACKEND   auto | driver | emulator
 *   AXLE_DRPAI_EMIT_DIR  when set, compile() also writes the partition as a
 *                        DRP-AI object-file directory there (what
 *                        `axle drpai-translate` uses)
 *   AXLE_DRPAI_PREPOST   prepost YAML put in front of the emitted program
 *   AXLE_DRPAI_ORG_BASE  first DRP-AI address of compiled programs (default 0)
 *
 * It includes only hal.h and its own sources: a plugin never links libaxle.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/hal.h"
#include "drpai_compile.h"
#include "drpai_dev.h"
#include "drpai_prepost.h"
#include "drpai_program.h"
#include "drpai_runner.h"
#include "drpai_uapi.h"

#define PLUGIN_NAME "drpai"
#define DEV PLUGIN_NAME
#define EXPORT __attribute__((visibility("default")))
#define HOST_MIN_SIZE (offsetof(axle_hal_host_t, now_ns) + sizeof(void*))
#define MAX_REGIONS 1024u

struct axle_hal_plugin_state_t {
  const axle_hal_host_t* host;
  drpai_backend_t backend;
  uint64_t area_size;
};

struct axle_hal_memory_t {
  void* ptr;
  uint64_t size;
  int imported;
};

typedef struct region_t {
  uint64_t phys, size;
} region_t;

struct axle_hal_device_t {
  const axle_hal_host_t* host;
  drpai_dev_t* ctl;              /* control descriptor: RESET */
  drpai_backend_t backend;
  uint64_t area_base, area_size;
  pthread_mutex_t lock;          /* regions, current run */
  pthread_mutex_t run;           /* one inference at a time from this device */
  region_t regions[MAX_REGIONS]; /* placed programs, sorted by phys */
  uint32_t region_count;
  void* running;                 /* completion of the run in progress */
  atomic_int cancel_running;
};

typedef struct binding_t {
  uint32_t slot;
  uint64_t offset, bytes;
} binding_t;

struct axle_hal_executable_t {
  axle_hal_device_t* device;
  drpai_program_t program;
  drpai_dev_t* fd;
  uint64_t phys;
  uint32_t slot_count;
  uint32_t nin, nout;
  binding_t in[DRPAI_INFO_MAX_IO], out[DRPAI_INFO_MAX_IO];
  axle_hal_tensor_t io[2 * DRPAI_INFO_MAX_IO]; /* executable_describe */
  char label[96];                /* trace name */
};

/* ---- placement in the DRP-AI memory area ------------------------------------ */

/* First fit whose address shares the lower 24 bits with org (the ADRCONV
 * rule), so that one SET_ADRCONV maps the whole program. */
static int region_alloc(axle_hal_device_t* d, uint64_t size, uint32_t org, uint64_t* out) {
  /* The emulated device is shared with other processes: its own allocator
   * keeps their programs apart. */
  int shared = drpai_dev_reserve(d->ctl, size, org, out);
  if (shared != -ENOTSUP) return shared;
  uint64_t end = d->area_base + d->area_size, at = d->area_base;
  pthread_mutex_lock(&d->lock);
  int rc = -1;
  for (uint32_t i = 0; i <= d->region_count && d->region_count < MAX_REGIONS; ++i) {
    uint64_t gap_end = i < d->region_count ? d->regions[i].phys : end;
    uint64_t phys = at + (((uint64_t)org - at) & DRPAI_PAGE_MASK);
    if (phys + size <= gap_end) {
      memmove(&d->regions[i + 1], &d->regions[i], (d->region_count - i) * sizeof(region_t));
      d->regions[i].phys = phys;
      d->regions[i].size = size;
      ++d->region_count;
      *out = phys;
      rc = 0;
      break;
    }
    if (i < d->region_count) at = d->regions[i].phys + d->regions[i].size;
  }
  pthread_mutex_unlock(&d->lock);
  return rc;
}

static void region_free(axle_hal_device_t* d, uint64_t phys) {
  drpai_dev_unreserve(d->ctl, phys);
  pthread_mutex_lock(&d->lock);
  for (uint32_t i = 0; i < d->region_count; ++i) {
    if (d->regions[i].phys == phys) {
      memmove(&d->regions[i], &d->regions[i + 1], (d->region_count - i - 1) * sizeof(region_t));
      --d->region_count;
      break;
    }
  }
  pthread_mutex_unlock(&d->lock);
}

/* ---- executables ---------------------------------------------------------------- */

static void exe_free(axle_hal_executable_t* e) {
  if (!e) return;
  const axle_hal_host_t* host = e->device->host;
  if (e->fd) {
    drpai_dev_close(e->fd);
    region_free(e->device, e->phys);
  }
  drpai_program_free(&e->program);
  host->free(e);
}

/* Takes ownership of p: opens the model's descriptor, finds room, places
 * the object files, fills the io description. */
static int32_t exe_create(axle_hal_device_t* d, drpai_program_t* p, const char* label,
                          axle_hal_executable_t** out) {
  const axle_hal_host_t* host = d->host;
  axle_hal_executable_t* e = (axle_hal_executable_t*)host->alloc(sizeof(*e), 64);
  if (!e) {
    drpai_program_free(p);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": out of memory");
  }
  memset(e, 0, sizeof(*e));
  e->device = d;
  e->program = *p;
  memset(p, 0, sizeof(*p));
  snprintf(e->label, sizeof(e->label), DEV " %s", label);
  int rc = drpai_dev_open(&e->fd);
  if (rc != 0) {
    e->fd = NULL;
    exe_free(e);
    return host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": %s: cannot open " DRPAI_DEVICE_PATH ": %s", label,
                             strerror(-rc));
  }
  uint64_t size = ((uint64_t)e->program.total + DRPAI_ALIGN - 1) & ~(uint64_t)(DRPAI_ALIGN - 1);
  if (region_alloc(d, size, e->program.org_base, &e->phys) != 0) {
    drpai_dev_close(e->fd);
    e->fd = NULL;
    exe_free(e);
    return host->status_make(AXLE_HAL_RESOURCE_EXHAUSTED,
                             DEV ": %s: no room for %llu bytes in the %llu-byte DRP-AI memory area", label,
                             (unsigned long long)size, (unsigned long long)d->area_size);
  }
  char why[256];
  rc = drpai_runner_place(e->fd, &e->program, e->phys, why, sizeof(why));
  if (rc != 0) {
    exe_free(e);
    return host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": %s: placing the object files: %s", label, why);
  }
  e->nin = drpai_program_io_count(&e->program, 0);
  e->nout = drpai_program_io_count(&e->program, 1);
  for (uint32_t k = 0; k < e->nin + e->nout; ++k) {
    const drpai_info_io_t* io = drpai_program_io(&e->program, k >= e->nin, k < e->nin ? k : k - e->nin);
    axle_hal_tensor_t* t = &e->io[k];
    t->name = io->name;
    t->dtype = io->dtype; /* DRPAI_DT_* use the ONNX numbering, as hal.h */
    t->rank = io->rank;
    memcpy(t->shape, io->shape, sizeof(int64_t) * io->rank);
    t->flags = k < e->nin ? AXLE_HAL_TENSOR_GRAPH_INPUT : AXLE_HAL_TENSOR_GRAPH_OUTPUT;
    t->size_bytes = io->size;
  }
  *out = e;
  return AXLE_HAL_OK;
}

/* Native executables: slot 0 is the (empty) arena, then inputs, outputs. */
static void bind_native(axle_hal_executable_t* e) {
  for (uint32_t k = 0; k < e->nin + e->nout; ++k) {
    binding_t* b = k < e->nin ? &e->in[k] : &e->out[k - e->nin];
    b->slot = 1 + k;
    b->offset = 0;
    b->bytes = e->io[k].size_bytes;
  }
  e->slot_count = 1 + e->nin + e->nout;
}

/* ---- lifetime and devices ------------------------------------------------------ */

static int32_t drpai_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out_state) {
  if (out_state) *out_state = NULL;
  if (!host || host->struct_size < HOST_MIN_SIZE) return AXLE_HAL_ABI_MISMATCH;
  if (!out_state) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": init: out_state is NULL");
  drpai_backend_t backend;
  if (drpai_dev_probe(&backend) != 0)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                             DEV ": AXLE_DRPAI_BACKEND must be auto, driver or emulator");
  /* The area size is what device_info reports as memory; asking the device
   * once also makes a missing or broken driver a clear init failure. */
  drpai_dev_t* dev = NULL;
  drpai_data_t area = {0, 0};
  int rc = drpai_dev_open(&dev);
  if (rc == 0) {
    while ((rc = drpai_dev_ioctl(dev, DRPAI_GET_DRPAI_AREA, &area)) == -ERESTART) {
    }
    backend = drpai_dev_backend(dev);
    drpai_dev_close(dev);
  }
  if (rc != 0)
    return host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": the DRP-AI (%s) is unusable: %s",
                             backend == DRPAI_BACKEND_DRIVER ? DRPAI_DEVICE_PATH : "emulated", strerror(-rc));
  axle_hal_plugin_state_t* st = (axle_hal_plugin_state_t*)host->alloc(sizeof(*st), 16);
  if (!st) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": init: out of memory");
  st->host = host;
  st->backend = backend;
  st->area_size = area.size;
  *out_state = st;
  return AXLE_HAL_OK;
}

static void drpai_shutdown(axle_hal_plugin_state_t* st) {
  if (st) st->host->free(st);
}

static int32_t drpai_device_count(axle_hal_plugin_state_t* st, uint32_t* out) {
  (void)st;
  if (!out) return AXLE_HAL_INVALID_ARGUMENT;
  *out = 1;
  return AXLE_HAL_OK;
}

static int32_t drpai_device_info(axle_hal_plugin_state_t* st, uint32_t index, axle_hal_device_info_t* info) {
  if (!info || info->struct_size < sizeof(uint32_t))
    return st->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": device_info: bad info struct");
  if (index != 0) return st->host->status_make(AXLE_HAL_NOT_FOUND, DEV ": no device %u (there is one)", index);
  axle_hal_device_info_t full;
  memset(&full, 0, sizeof(full));
  full.struct_size = info->struct_size;
  snprintf(full.name, sizeof(full.name), "drpai");
  snprintf(full.description, sizeof(full.description), "Renesas RZ/V2H DRP-AI, %s: int8 AI-MAC + DRP",
           st->backend == DRPAI_BACKEND_DRIVER ? "driver " DRPAI_DEVICE_PATH : "emulated");
  full.kind = AXLE_HAL_DEVICE_NPU;
  full.emulated = st->backend == DRPAI_BACKEND_EMULATOR;
  full.memory_bytes = st->area_size;
  full.dtype_mask = (1ull << AXLE_HAL_DTYPE_F32) | (1ull << AXLE_HAL_DTYPE_U8);
  size_t n = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy(info, &full, n);
  return AXLE_HAL_OK;
}

static int32_t drpai_device_open(axle_hal_plugin_state_t* st, uint32_t index, axle_hal_device_t** out) {
  const axle_hal_host_t* host = st->host;
  if (out) *out = NULL;
  if (!out) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": device_open: out is NULL");
  if (index != 0) return host->status_make(AXLE_HAL_NOT_FOUND, DEV ": no device %u (there is one)", index);
  axle_hal_device_t* d = (axle_hal_device_t*)host->alloc(sizeof(*d), 64);
  if (!d) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": out of memory");
  memset(d, 0, sizeof(*d));
  d->host = host;
  int rc = drpai_dev_open(&d->ctl);
  drpai_data_t area = {0, 0};
  if (rc == 0)
    while ((rc = drpai_dev_ioctl(d->ctl, DRPAI_GET_DRPAI_AREA, &area)) == -ERESTART) {
    }
  if (rc != 0) {
    if (d->ctl) drpai_dev_close(d->ctl);
    host->free(d);
    return host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": cannot open the DRP-AI: %s", strerror(-rc));
  }
  d->backend = drpai_dev_backend(d->ctl);
  d->area_base = area.address;
  d->area_size = area.size;
  pthread_mutex_init(&d->lock, NULL);
  pthread_mutex_init(&d->run, NULL);
  *out = d;
  return AXLE_HAL_OK;
}

static void drpai_device_close(axle_hal_device_t* d) {
  if (!d) return;
  drpai_dev_close(d->ctl);
  pthread_mutex_destroy(&d->lock);
  pthread_mutex_destroy(&d->run);
  d->host->free(d);
}

/* ---- memory: host staging buffers (the plugin writes them to the device) ---- */

static int32_t drpai_memory_allocate(axle_hal_device_t* d, uint64_t size, uint64_t align,
                                     axle_hal_memory_t** out) {
  const axle_hal_host_t* host = d->host;
  if (out) *out = NULL;
  if (!out || (align & (align - 1)))
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": memory_allocate: bad arguments");
  if (size > ((uint64_t)1 << 40))
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": memory_allocate of %llu bytes", (unsigned long long)size);
  axle_hal_memory_t* m = (axle_hal_memory_t*)host->alloc(sizeof(*m), 16);
  void* p = host->alloc(size ? (size_t)size : 1, align > 64 ? (size_t)align : 64);
  if (!m || !p) {
    if (m) host->free(m);
    if (p) host->free(p);
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": memory_allocate of %llu bytes", (unsigned long long)size);
  }
  m->ptr = p;
  m->size = size;
  m->imported = 0;
  *out = m;
  return AXLE_HAL_OK;
}

static void drpai_memory_free(axle_hal_device_t* d, axle_hal_memory_t* m) {
  if (!m) return;
  if (!m->imported) d->host->free(m->ptr);
  d->host->free(m);
}

static int32_t drpai_memory_map(axle_hal_device_t* d, axle_hal_memory_t* m, void** out) {
  if (!m || !out) return d->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": memory_map: bad arguments");
  *out = m->ptr;
  return AXLE_HAL_OK;
}

static void drpai_memory_unmap(axle_hal_device_t* d, axle_hal_memory_t* m) {
  (void)d;
  (void)m;
}

static int range_ok(uint64_t off, uint64_t n, uint64_t limit) { return off <= limit && n <= limit - off; }

static int32_t drpai_memory_copy(axle_hal_device_t* d, axle_hal_memory_t* dst, uint64_t doff,
                                 axle_hal_memory_t* src, uint64_t soff, uint64_t n) {
  if (!dst || !src || !range_ok(doff, n, dst->size) || !range_ok(soff, n, src->size))
    return d->host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                                DEV ": memory_copy of %llu bytes out of bounds (dst %llu+ of %llu, src %llu+ of %llu)",
                                (unsigned long long)n, (unsigned long long)doff,
                                (unsigned long long)(dst ? dst->size : 0), (unsigned long long)soff,
                                (unsigned long long)(src ? src->size : 0));
  if (n) memmove((uint8_t*)dst->ptr + doff, (const uint8_t*)src->ptr + soff, (size_t)n);
  return AXLE_HAL_OK;
}

static int32_t drpai_memory_import(axle_hal_device_t* d, void* ptr, uint64_t size, axle_hal_memory_t** out) {
  if (out) *out = NULL;
  if (!out || (!ptr && size))
    return d->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": memory_import: bad arguments");
  axle_hal_memory_t* m = (axle_hal_memory_t*)d->host->alloc(sizeof(*m), 16);
  if (!m) return d->host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": out of memory");
  m->ptr = ptr;
  m->size = size;
  m->imported = 1;
  *out = m;
  return AXLE_HAL_OK;
}

/* ---- capability and compilation ------------------------------------------------ */

static int32_t drpai_node_supported(axle_hal_device_t* d, const axle_hal_graph_t* g, uint32_t node,
                                    char* reason, size_t reason_size) {
  (void)d;
  return drpai_check_node(g, node, reason, reason_size);
}

static uint32_t org_base(void) {
  const char* s = getenv("AXLE_DRPAI_ORG_BASE");
  return s ? (uint32_t)strtoul(s, NULL, 0) : 0;
}

static int find_location(const axle_hal_subgraph_t* sg, int32_t tensor, binding_t* b) {
  for (uint32_t i = 0; i < sg->location_count; ++i) {
    if (sg->locations[i].tensor == tensor && sg->locations[i].slot < sg->slot_count) {
      b->slot = sg->locations[i].slot;
      b->offset = sg->locations[i].offset;
      b->bytes = sg->graph->tensors[tensor].size_bytes;
      return 0;
    }
  }
  return -1;
}

/* AXLE_DRPAI_EMIT_DIR: the partition as an object-file directory, with the
 * AXLE_DRPAI_PREPOST pipeline in front (the `axle drpai-translate` path). */
static int32_t emit_dir(const axle_hal_host_t* host, const axle_hal_subgraph_t* sg, const char* dir) {
  char why[512];
  drpai_prepost_t pp;
  const char* yaml = getenv("AXLE_DRPAI_PREPOST");
  if (yaml && *yaml && drpai_prepost_load(yaml, &pp, why, sizeof(why)) != 0)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": prepost: %s", why);
  drpai_compiled_t c;
  int32_t st = drpai_compile(sg->graph, sg->nodes, sg->node_count, yaml && *yaml ? &pp : NULL, org_base(), &c,
                             why, sizeof(why));
  if (st != AXLE_HAL_OK) return host->status_make(st, "%s", why);
  if (drpai_program_write_dir(&c.program, dir, why, sizeof(why)) != 0)
    st = host->status_make(AXLE_HAL_IO_ERROR, DEV ": writing the object files: %s", why);
  drpai_program_free(&c.program);
  return st;
}

static int32_t drpai_compile_sg(axle_hal_device_t* d, const axle_hal_subgraph_t* sg,
                                const axle_hal_compile_options_t* opt, axle_hal_executable_t** out) {
  const axle_hal_host_t* host = d->host;
  (void)opt;
  if (out) *out = NULL;
  if (!out || !sg || sg->struct_size < offsetof(axle_hal_subgraph_t, slot_count) + sizeof(uint32_t) || !sg->graph)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": compile: malformed subgraph");
  char why[512];
  drpai_compiled_t c;
  int32_t st = drpai_compile(sg->graph, sg->nodes, sg->node_count, NULL, org_base(), &c, why, sizeof(why));
  if (st != AXLE_HAL_OK) return host->status_make(st, "%s", why);
  binding_t in[DRPAI_INFO_MAX_IO], outb[DRPAI_INFO_MAX_IO];
  for (uint32_t k = 0; k < c.input_count + c.output_count; ++k) {
    int32_t t = k < c.input_count ? c.inputs[k] : c.outputs[k - c.input_count];
    binding_t* b = k < c.input_count ? &in[k] : &outb[k - c.input_count];
    if (find_location(sg, t, b) != 0) {
      drpai_program_free(&c.program);
      return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": compile: tensor '%s' has no location",
                               sg->graph->tensors[t].name);
    }
  }
  const char* emit = getenv("AXLE_DRPAI_EMIT_DIR");
  if (emit && *emit && (st = emit_dir(host, sg, emit)) != AXLE_HAL_OK) {
    drpai_program_free(&c.program);
    return st;
  }
  char label[64];
  snprintf(label, sizeof(label), "'%s'..", sg->graph->nodes[sg->nodes[0]].name);
  axle_hal_executable_t* e;
  st = exe_create(d, &c.program, label, &e);
  if (st != AXLE_HAL_OK) return st;
  memcpy(e->in, in, sizeof(binding_t) * e->nin);
  memcpy(e->out, outb, sizeof(binding_t) * e->nout);
  e->slot_count = sg->slot_count;
  *out = e;
  return AXLE_HAL_OK;
}

static void drpai_executable_release(axle_hal_executable_t* e) { exe_free(e); }

/* ---- native artifacts -------------------------------------------------------------- */

/* Bindings trailer. The AXDS container holds the program alone, the way
 * `axle drpai-translate` and a board see it; executable_serialize appends
 * the slots the executable was compiled for, so that executable_load gives
 * back an executable bound like the original (hal.h). Little-endian:
 *   per input, then per output: u32 slot, u32 0, u64 offset, u64 bytes
 *   u32 slot_count, u32 nin, u32 nout, u32 trailer size, "AXDB" */
#define TRAILER_MAGIC "AXDB"
#define TRAILER_ENTRY 24u
#define TRAILER_TAIL 20u

static size_t trailer_bytes(uint32_t io_count) { return TRAILER_TAIL + (size_t)TRAILER_ENTRY * io_count; }

static void put64(uint8_t* p, uint64_t v) {
  drpai_put32(p, (uint32_t)v);
  drpai_put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get64(const uint8_t* p) { return drpai_get32(p) | ((uint64_t)drpai_get32(p + 4) << 32); }

static void trailer_write(const axle_hal_executable_t* e, uint8_t* t, size_t tb) {
  for (uint32_t k = 0; k < e->nin + e->nout; ++k, t += TRAILER_ENTRY) {
    const binding_t* b = k < e->nin ? &e->in[k] : &e->out[k - e->nin];
    drpai_put32(t, b->slot);
    drpai_put32(t + 4, 0);
    put64(t + 8, b->offset);
    put64(t + 16, b->bytes);
  }
  drpai_put32(t, e->slot_count);
  drpai_put32(t + 4, e->nin);
  drpai_put32(t + 8, e->nout);
  drpai_put32(t + 12, (uint32_t)tb);
  memcpy(t + 16, TRAILER_MAGIC, 4);
}

/* The trailer's size when data ends with one, else 0. */
static size_t trailer_find(const uint8_t* data, size_t size) {
  if (size < TRAILER_TAIL || memcmp(data + size - 4, TRAILER_MAGIC, 4) != 0) return 0;
  const uint8_t* tail = data + size - TRAILER_TAIL;
  const uint32_t nin = drpai_get32(tail + 4), nout = drpai_get32(tail + 8);
  const uint32_t tb = drpai_get32(tail + 12);
  if (nin > DRPAI_INFO_MAX_IO || nout > DRPAI_INFO_MAX_IO || tb != trailer_bytes(nin + nout) || tb > size)
    return 0;
  return tb;
}

/* Restores the compiled bindings from a trailer of tb bytes at t; a
 * reason when they do not fit the program. */
static const char* trailer_apply(axle_hal_executable_t* e, const uint8_t* t, size_t tb) {
  const uint8_t* tail = t + tb - TRAILER_TAIL;
  if (drpai_get32(tail + 4) != e->nin || drpai_get32(tail + 8) != e->nout)
    return "its bindings name another number of inputs or outputs than its program";
  const uint32_t slot_count = drpai_get32(tail);
  for (uint32_t k = 0; k < e->nin + e->nout; ++k, t += TRAILER_ENTRY) {
    binding_t* b = k < e->nin ? &e->in[k] : &e->out[k - e->nin];
    b->slot = drpai_get32(t);
    b->offset = get64(t + 8);
    b->bytes = get64(t + 16);
    if (b->slot >= slot_count || drpai_get32(t + 4) != 0 || b->bytes != e->io[k].size_bytes ||
        b->offset > UINT64_MAX - b->bytes)
      return "a binding has a bad slot, size or offset";
  }
  e->slot_count = slot_count;
  return NULL;
}

static int32_t drpai_serialize(axle_hal_executable_t* e, void** out, size_t* out_size) {
  const axle_hal_host_t* host = e->device->host;
  uint8_t* blob;
  size_t size;
  if (out) *out = NULL;
  if (out_size) *out_size = 0;
  if (!out || !out_size) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": serialize: bad arguments");
  if (drpai_program_pack(&e->program, &blob, &size) != 0)
    return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": serialize: out of memory");
  const size_t tb = trailer_bytes(e->nin + e->nout);
  uint8_t* copy = (uint8_t*)host->alloc(size + tb, 16);
  if (copy) {
    memcpy(copy, blob, size);
    trailer_write(e, copy + size, tb);
    size += tb;
  }
  free(blob);
  if (!copy) return host->status_make(AXLE_HAL_OUT_OF_MEMORY, DEV ": serialize: out of memory");
  *out = copy;
  *out_size = size;
  return AXLE_HAL_OK;
}

/* A user's file (from_user) binds natively, as hal.h says of artifacts;
 * what executable_serialize wrote, given to executable_load, restores the
 * slots it was compiled for. */
static int32_t load_blob(axle_hal_device_t* d, const void* data, size_t size, const char* what,
                         int from_user, axle_hal_executable_t** out) {
  const axle_hal_host_t* host = d->host;
  drpai_program_t p;
  char why[384];
  const size_t tb = trailer_find((const uint8_t*)data, size);
  int rc = drpai_program_unpack((const uint8_t*)data, size - tb, &p, why, sizeof(why));
  if (rc == 1)
    return from_user ? AXLE_HAL_UNSUPPORTED
                     : host->status_make(AXLE_HAL_INVALID_MODEL, DEV ": %s is not a DRP-AI program", what);
  if (rc == 2)
    return host->status_make(AXLE_HAL_UNSUPPORTED, DEV ": %s was written by a newer Axle", what);
  if (rc != 0) return host->status_make(AXLE_HAL_INVALID_MODEL, DEV ": %s: %s", what, why);
  axle_hal_executable_t* e;
  int32_t st = exe_create(d, &p, what, &e);
  if (st != AXLE_HAL_OK) return st;
  bind_native(e);
  /* executable_serialize always writes the trailer: without it, the bytes
   * were cut (a container alone is a user's file, for artifact_load). */
  const char* bad = from_user ? NULL
                    : tb      ? trailer_apply(e, (const uint8_t*)data + size - tb, tb)
                              : "truncated: the bindings trailer is missing";
  if (bad) {
    exe_free(e);
    return host->status_make(AXLE_HAL_INVALID_MODEL, DEV ": %s: %s", what, bad);
  }
  *out = e;
  return AXLE_HAL_OK;
}

static int32_t drpai_executable_load(axle_hal_device_t* d, const void* data, size_t size,
                                     axle_hal_executable_t** out) {
  if (out) *out = NULL;
  if (!out || (!data && size))
    return d->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": executable_load: bad arguments");
  return load_blob(d, data ? data : "", size, "artifact", 0, out);
}

static int32_t drpai_artifact_load(axle_hal_device_t* d, const char* path, const void* data, size_t size,
                                   axle_hal_executable_t** out) {
  const axle_hal_host_t* host = d->host;
  if (out) *out = NULL;
  if (!out || !path) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": artifact_load: bad arguments");
  if (data) return load_blob(d, data, size, path, 1, out);
  drpai_program_t p;
  char why[384];
  int rc = drpai_program_read_dir(path, &p, why, sizeof(why));
  if (rc == 1) return AXLE_HAL_UNSUPPORTED;
  if (rc != 0) return host->status_make(AXLE_HAL_INVALID_MODEL, DEV ": %s: %s", path, why);
  axle_hal_executable_t* e;
  int32_t st = exe_create(d, &p, path, &e);
  if (st != AXLE_HAL_OK) return st;
  bind_native(e);
  *out = e;
  return AXLE_HAL_OK;
}

static int32_t drpai_describe(axle_hal_executable_t* e, axle_hal_native_info_t* info) {
  if (!info || info->struct_size < offsetof(axle_hal_native_info_t, arena_bytes) + sizeof(uint64_t))
    return e->device->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": executable_describe: bad info");
  info->input_count = e->nin;
  info->output_count = e->nout;
  info->io = e->io;
  info->arena_bytes = 0;
  return AXLE_HAL_OK;
}

static int32_t drpai_report(axle_hal_executable_t* e, char* text, size_t size) {
  if (!text || size == 0)
    return e->device->host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": executable_report: no buffer");
  drpai_program_report(&e->program, text, size);
  return AXLE_HAL_OK;
}

/* ---- execution ------------------------------------------------------------------------ */

typedef struct stop_t {
  axle_hal_device_t* d;
  const axle_hal_submit_info_t* info;
  int timed_out;
} stop_t;

static int should_stop(void* ctx) {
  stop_t* s = (stop_t*)ctx;
  if (axle_hal_cancel_requested(s->info->cancel_flag) || atomic_load(&s->d->cancel_running)) return 1;
  if (s->info->deadline_ns && s->d->host->now_ns() >= s->info->deadline_ns) {
    s->timed_out = 1;
    return 1;
  }
  return 0;
}

static uint8_t* slot_ptr(const axle_hal_submit_info_t* info, const binding_t* b) {
  const axle_hal_binding_t* bind = &info->bindings[b->slot];
  uint8_t* base = bind->memory ? (uint8_t*)bind->memory->ptr : (uint8_t*)bind->host_ptr;
  return base ? base + bind->offset + b->offset : NULL;
}

static int binding_ok(const axle_hal_submit_info_t* info, const binding_t* b) {
  const axle_hal_binding_t* bind = &info->bindings[b->slot];
  if (!bind->memory) return bind->host_ptr != NULL; /* the core vouches for host pointers */
  uint64_t limit = bind->memory->size;
  return range_ok(bind->offset, 0, limit) && range_ok(b->offset, b->bytes, limit - bind->offset);
}

static void trace_run(axle_hal_device_t* d, const axle_hal_executable_t* e, const axle_hal_submit_info_t* info,
                      uint64_t t0, int32_t status) {
  const axle_hal_host_t* host = d->host;
  drpai_run_stats_t s;
  int modelled = drpai_dev_last_stats(e->fd, &s);
  char args[320];
  if (modelled)
    snprintf(args, sizeof(args),
             "{\"device\":\"" DEV "\",\"backend\":\"emulator\",\"status\":%d,\"drp_stages\":%u,"
             "\"aimac_layers\":%u,\"aimac_macs\":%llu,\"drp_elements\":%llu,\"modelled_us\":%.3f}",
             (int)status, s.drp_stages, s.aimac_layers, (unsigned long long)s.aimac_macs,
             (unsigned long long)s.drp_elements, (double)s.model_ns / 1000.0);
  else
    snprintf(args, sizeof(args), "{\"device\":\"" DEV "\",\"backend\":\"driver\",\"status\":%d}", (int)status);
  uint64_t t1 = host->now_ns();
  axle_hal_trace_event_t ev = {sizeof(ev), e->label, "device", t0, t1 - t0, args, 0};
  host->trace(info->trace_ctx, &ev);
}

static int32_t drpai_submit(axle_hal_device_t* d, const axle_hal_submit_info_t* info) {
  const axle_hal_host_t* host = d->host;
  if (!info || info->struct_size < offsetof(axle_hal_submit_info_t, trace_ctx) + sizeof(void*) || !info->executable)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": submit: malformed submit info");
  axle_hal_executable_t* e = info->executable;
  if (e->device != d) return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": submit: executable of another device");
  if (info->binding_count < e->slot_count || !info->bindings)
    return host->status_make(AXLE_HAL_INVALID_ARGUMENT, DEV ": submit: %u bindings for %u slots",
                             info->binding_count, e->slot_count);
  const void* ins[DRPAI_INFO_MAX_IO];
  void* outs[DRPAI_INFO_MAX_IO];
  for (uint32_t k = 0; k < e->nin + e->nout; ++k) {
    const binding_t* b = k < e->nin ? &e->in[k] : &e->out[k - e->nin];
    const axle_hal_tensor_t* t = &e->io[k];
    if (!binding_ok(info, b))
      return host->status_make(AXLE_HAL_INVALID_ARGUMENT,
                               DEV ": submit: %s '%s' at slot %u offset %llu (+%llu bytes) is unbound or outside "
                               "the bound memory",
                               k < e->nin ? "input" : "output", t->name, b->slot, (unsigned long long)b->offset,
                               (unsigned long long)b->bytes);
    if (k < e->nin) ins[k] = slot_ptr(info, b);
    else outs[k - e->nin] = slot_ptr(info, b);
  }
  /* Synchronous: the DRP-AI runs one inference at a time anyway, and the
   * caller's thread waits on the descriptor the way a board application
   * does. complete() is called before returning. */
  pthread_mutex_lock(&d->run);
  pthread_mutex_lock(&d->lock);
  d->running = info->completion;
  atomic_store(&d->cancel_running, 0);
  pthread_mutex_unlock(&d->lock);
  uint64_t t0 = host->now_ns();
  stop_t stop = {d, info, 0};
  int32_t dev_err = 0;
  char why[256];
  int rc = drpai_runner_run(e->fd, &e->program, e->phys, ins, outs, should_stop, &stop, &dev_err, why, sizeof(why));
  int32_t status = AXLE_HAL_OK;
  if (rc == -ECANCELED)
    status = stop.timed_out ? host->status_make(AXLE_HAL_TIMEOUT, DEV ": %s: deadline passed; the DRP-AI was reset", e->label)
                            : host->status_make(AXLE_HAL_CANCELLED, DEV ": %s: cancelled; the DRP-AI was reset", e->label);
  else if (rc != 0)
    status = host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": %s: %s", e->label, why);
  if (info->trace_ctx) trace_run(d, e, info, t0, status);
  pthread_mutex_lock(&d->lock);
  d->running = NULL;
  pthread_mutex_unlock(&d->lock);
  pthread_mutex_unlock(&d->run);
  host->complete(info->completion, status);
  return AXLE_HAL_OK;
}

static int32_t drpai_cancel(axle_hal_device_t* d, void* completion) {
  pthread_mutex_lock(&d->lock);
  if (d->running && d->running == completion) atomic_store(&d->cancel_running, 1);
  pthread_mutex_unlock(&d->lock);
  return AXLE_HAL_OK;
}

static int32_t drpai_reset(axle_hal_device_t* d) {
  int rc;
  while ((rc = drpai_dev_ioctl(d->ctl, DRPAI_RESET, NULL)) == -ERESTART) {
  }
  if (rc != 0) return d->host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": RESET failed: %s", strerror(-rc));
  return AXLE_HAL_OK;
}

static int32_t drpai_device_status(axle_hal_device_t* d) {
  drpai_status_t s;
  int rc;
  while ((rc = drpai_dev_ioctl(d->ctl, DRPAI_GET_STATUS, &s)) == -ERESTART) {
  }
  /* A failed inference is reported by its submit; the device stays usable.
   * Only a device that cannot be asked is unhealthy. */
  if (rc == 0 || rc == -EBUSY || rc == -EIO) return AXLE_HAL_OK;
  return d->host->status_make(AXLE_HAL_DEVICE_ERROR, DEV ": GET_STATUS failed: %s", strerror(-rc));
}

/* ---- the table and the entry point ------------------------------------------------- */

static const axle_hal_plugin_t g_drpai_plugin = {
    .header =
        {
            .abi_version = 1,
            .struct_size = sizeof(axle_hal_plugin_t),
            .name = PLUGIN_NAME,
            .description = "Renesas RZ/V2H DRP-AI: driver or emulator, DRP-AI object files",
            .features = AXLE_HAL_FEATURE_SERIALIZE | AXLE_HAL_FEATURE_PROFILING,
            .reserved = {0, 0, 0, 0},
        },
    .init = drpai_init,
    .shutdown = drpai_shutdown,
    .device_count = drpai_device_count,
    .device_info = drpai_device_info,
    .device_open = drpai_device_open,
    .device_close = drpai_device_close,
    .memory_allocate = drpai_memory_allocate,
    .memory_free = drpai_memory_free,
    .memory_map = drpai_memory_map,
    .memory_unmap = drpai_memory_unmap,
    .memory_copy = drpai_memory_copy,
    .memory_import = drpai_memory_import,
    .node_supported = drpai_node_supported,
    .compile = drpai_compile_sg,
    .executable_release = drpai_executable_release,
    .executable_serialize = drpai_serialize,
    .executable_load = drpai_executable_load,
    .submit = drpai_submit,
    .cancel = drpai_cancel,
    .reset = drpai_reset,
    .device_status = drpai_device_status,
    .artifact_load = drpai_artifact_load,
    .executable_describe = drpai_describe,
    .executable_report = drpai_report,
};

EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version, const axle_hal_host_t* host);

const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core_abi_version, const axle_hal_host_t* host) {
  if (core_abi_version < 1) {
    if (host && host->struct_size >= offsetof(axle_hal_host_t, status_make) + sizeof(void*) && host->status_make)
      host->status_make(AXLE_HAL_ABI_MISMATCH, PLUGIN_NAME ": the core speaks ABI %u; this plugin needs 1",
                        core_abi_version);
    return NULL;
  }
  return &g_drpai_plugin;
}

static const axle_hal_entry_fn drpai_entry_type_check __attribute__((unused)) = axle_hal_plugin_entry;
