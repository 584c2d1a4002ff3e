#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "status.h"
#include "tensor.h"

/* An execution context: everything one in-flight run needs (arenas, bound
 * slots, completion). Contexts are pooled per session so concurrent runs
 * never share memory and the steady state allocates nothing. */
struct axle_exec_ctx_t {
  axle_exec_ctx_t* next;
  axle_hal_memory_t** arenas;        /* per session device, NULL when unused */
  char** arena_host;                 /* mapped views, for core-side copies */
  axle_hal_binding_t* bindings;      /* partition_count x slot_count */
  axle_trace_ctx_t* trace_ctxs;      /* per session device */
  axle_completion_t completion;
  volatile int32_t no_cancel;        /* cancel flag of runs nobody can cancel */
};

static void ctx_free(axle_session_t* s, axle_exec_ctx_t* c) {
  for (uint32_t d = 0; c->arenas && d < s->dev_count; ++d) {
    if (!c->arenas[d]) continue;
    axle_device_t* dev = s->devs[d];
    if (c->arena_host[d] && AXLE_PLUGIN_HAS(dev->plugin, memory_unmap))
      dev->plugin->table->memory_unmap(dev->hal, c->arenas[d]);
    if (AXLE_PLUGIN_HAS(dev->plugin, memory_free)) dev->plugin->table->memory_free(dev->hal, c->arenas[d]);
  }
  axle_completion_destroy(&c->completion);
  free(c->arenas);
  free(c->arena_host);
  free(c->bindings);
  free(c->trace_ctxs);
  free(c);
}

static axle_status_t ctx_new(axle_session_t* s, axle_exec_ctx_t** out) {
  axle_exec_ctx_t* c = (axle_exec_ctx_t*)calloc(1, sizeof(*c));
  if (!c) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  axle_completion_init(&c->completion);
  c->arenas = (axle_hal_memory_t**)calloc(s->dev_count, sizeof(*c->arenas));
  c->arena_host = (char**)calloc(s->dev_count, sizeof(char*));
  c->trace_ctxs = (axle_trace_ctx_t*)calloc(s->dev_count, sizeof(axle_trace_ctx_t));
  c->bindings = (axle_hal_binding_t*)calloc((size_t)s->partition_count * s->slot_count + 1,
                                            sizeof(axle_hal_binding_t));
  if (!c->arenas || !c->arena_host || !c->trace_ctxs || !c->bindings) {
    ctx_free(s, c);
    return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (uint32_t d = 0; d < s->dev_count; ++d) {
    axle_device_t* dev = s->devs[d];
    c->trace_ctxs[d].trace = &s->trace;
    c->trace_ctxs[d].tid = (int32_t)(1 + d) * 10;
    c->trace_ctxs[d].device = dev->info.name;
    int used = 0;
    for (uint32_t p = 0; p < s->partition_count; ++p) used |= s->partitions[p].dev == d;
    if (!used) continue;
    /* Zero-size tensors still have a location in the arena, so every device
     * that runs something gets one, however small. */
    uint64_t bytes = s->arena_bytes[d] ? s->arena_bytes[d] : 64;
    axle_status_t st = AXLE_OK;
    if (!AXLE_PLUGIN_HAS(dev->plugin, memory_allocate) || !AXLE_PLUGIN_HAS(dev->plugin, memory_map))
      st = axle_status_make(AXLE_STATUS_UNSUPPORTED, "%s: device '%s' has no memory allocation",
                            dev->plugin->name, dev->info.name);
    if (st == AXLE_OK)
      st = (axle_status_t)dev->plugin->table->memory_allocate(dev->hal, bytes, 64, &c->arenas[d]);
    if (st == AXLE_OK) {
      void* host = NULL;
      st = (axle_status_t)dev->plugin->table->memory_map(dev->hal, c->arenas[d], &host);
      c->arena_host[d] = (char*)host;
    }
    if (st != AXLE_OK) {
      ctx_free(s, c);
      return axle_status_annotate(st, "%s: device '%s': arena of %llu bytes", dev->plugin->name,
                                  dev->info.name, (unsigned long long)bytes);
    }
  }
  for (uint32_t p = 0; p < s->partition_count; ++p)
    c->bindings[(size_t)p * s->slot_count].memory = c->arenas[s->partitions[p].dev];
  *out = c;
  return AXLE_OK;
}

axle_status_t axle_exec_ctx_acquire(axle_session_t* s, axle_exec_ctx_t** out_ctx) {
  pthread_mutex_lock(&s->ctx_mu);
  axle_exec_ctx_t* c = s->free_ctx;
  if (c) s->free_ctx = c->next;
  pthread_mutex_unlock(&s->ctx_mu);
  if (c) {
    *out_ctx = c;
    return AXLE_OK;
  }
  return ctx_new(s, out_ctx);
}

void axle_exec_ctx_release(axle_session_t* s, axle_exec_ctx_t* c) {
  pthread_mutex_lock(&s->ctx_mu);
  c->next = s->free_ctx;
  s->free_ctx = c;
  pthread_mutex_unlock(&s->ctx_mu);
}

void axle_exec_ctx_destroy(axle_session_t* s, axle_exec_ctx_t* c) {
  pthread_mutex_lock(&s->ctx_mu);
  for (axle_exec_ctx_t** link = &s->free_ctx; *link; link = &(*link)->next)
    if (*link == c) {
      *link = c->next;
      break;
    }
  pthread_mutex_unlock(&s->ctx_mu);
  ctx_free(s, c);
}

/* Binds the caller I/O slots of one partition. Devices that cannot read host
 * memory get the caller's memory imported for this run (freed by unbind). */
static axle_status_t bind_io(axle_session_t* s, axle_device_t* d, axle_hal_binding_t* b,
                             void* const* io) {
  int host = (d->info.flags & AXLE_HAL_DEVICE_FLAG_HOST_ACCESS) != 0;
  const axle_graph_t* g = &s->graph;
  for (uint32_t slot = 1; slot < s->slot_count; ++slot) {
    b[slot].memory = NULL;
    b[slot].offset = 0;
    b[slot].host_ptr = NULL;
    if (host) {
      b[slot].host_ptr = io[slot - 1];
      continue;
    }
    uint32_t i = slot - 1;
    int32_t t = i < g->input_count ? g->inputs[i] : g->outputs[i - g->input_count];
    if (!AXLE_PLUGIN_HAS(d->plugin, memory_import))
      return axle_status_make(AXLE_STATUS_UNSUPPORTED,
                              "%s: device '%s' can neither read host memory nor import it",
                              d->plugin->name, d->info.name);
    axle_status_t st = (axle_status_t)d->plugin->table->memory_import(
        d->hal, io[i], g->tensors[t].size_bytes, &b[slot].memory);
    if (st != AXLE_OK)
      return axle_status_annotate(st, "%s: device '%s': importing tensor '%s'", d->plugin->name,
                                  d->info.name, g->tensors[t].name);
  }
  return AXLE_OK;
}

static void unbind_io(axle_session_t* s, axle_device_t* d, axle_hal_binding_t* b) {
  for (uint32_t slot = 1; slot < s->slot_count; ++slot)
    if (b[slot].memory) {
      d->plugin->table->memory_free(d->hal, b[slot].memory);
      b[slot].memory = NULL;
    }
}

static axle_status_t run_partition(axle_session_t* s, axle_exec_ctx_t* c, uint32_t pi,
                                   void* const* io, uint64_t deadline_ns,
                                   volatile int32_t* cancel) {
  const axle_partition_t* p = &s->partitions[pi];
  axle_device_t* d = s->devs[p->dev];
  for (uint32_t i = 0; i < p->transfer_count; ++i) {
    const axle_transfer_t* tr = &p->transfers[i];
    memcpy(c->arena_host[tr->dst_dev] + tr->dst_offset, c->arena_host[tr->src_dev] + tr->src_offset,
           tr->bytes);
  }
  axle_hal_binding_t* b = c->bindings + (size_t)pi * s->slot_count;
  axle_status_t st = bind_io(s, d, b, io);
  if (st != AXLE_OK) {
    unbind_io(s, d, b);
    return st;
  }
  int profiling = (s->flags & AXLE_SESSION_PROFILE) != 0;
  axle_hal_submit_info_t info = {sizeof(info), p->exe, s->slot_count, b, &c->completion,
                                 cancel, deadline_ns, profiling ? &c->trace_ctxs[p->dev] : NULL};
  c->completion.done = 0;
  c->completion.message[0] = '\0';
  uint64_t t0 = profiling ? axle_now_ns() : 0;
  st = (axle_status_t)d->plugin->table->submit(d->hal, &info);
  if (st == AXLE_OK) {
    if (!axle_completion_wait(&c->completion, deadline_ns)) {
      /* Deadline: ask the device to stop and wait for it to let go of the
       * memory before reporting. */
      __atomic_store_n(cancel, 1, __ATOMIC_RELAXED);
      if (AXLE_PLUGIN_HAS(d->plugin, cancel)) d->plugin->table->cancel(d->hal, &c->completion);
      axle_completion_wait(&c->completion, 0);
      st = AXLE_STATUS_TIMEOUT;
    } else {
      st = (axle_status_t)c->completion.status;
      if (st != AXLE_OK && c->completion.message[0])
        axle_status_make(st, "%s", c->completion.message);
    }
  }
  unbind_io(s, d, b);
  if (profiling) {
    char args[160];
    snprintf(args, sizeof(args), "{\"device\":\"%s\",\"nodes\":%u}", d->info.name, p->node_count);
    axle_trace_record(&s->trace, (int32_t)(1 + p->dev) * 10, "partition", "partition", t0,
                      axle_now_ns() - t0, args);
  }
  if (st == AXLE_STATUS_TIMEOUT && !axle_status_message()[0])
    return axle_status_make(st, "%s: device '%s': run exceeded its deadline", d->plugin->name,
                            d->info.name);
  if (st == AXLE_STATUS_CANCELLED && !axle_status_message()[0])
    return axle_status_make(st, "%s: device '%s': run cancelled", d->plugin->name, d->info.name);
  if (st != AXLE_OK && !axle_status_message()[0])
    return axle_status_make(st, "%s: device '%s' failed: %s", d->plugin->name, d->info.name,
                            axle_status_string(st));
  return st;
}

axle_status_t axle_exec_run(axle_session_t* s, axle_exec_ctx_t* c, void* const* io,
                            uint64_t deadline_ns, volatile int32_t* cancel) {
  if (!cancel) {
    c->no_cancel = 0;
    cancel = &c->no_cancel;
  }
  axle_status_clear();
  for (uint32_t p = 0; p < s->partition_count; ++p) {
    if (axle_hal_cancel_requested(cancel))
      return axle_status_make(AXLE_STATUS_CANCELLED, "run cancelled");
    if (deadline_ns && axle_now_ns() > deadline_ns)
      return axle_status_make(AXLE_STATUS_TIMEOUT, "run exceeded its deadline");
    axle_status_t st = run_partition(s, c, p, io, deadline_ns, cancel);
    if (st != AXLE_OK) return st;
  }
  const axle_graph_t* g = &s->graph;
  for (uint32_t i = 0; i < s->output_copy_count; ++i) {
    const axle_output_copy_t* oc = &s->output_copies[i];
    const void* src = oc->input >= 0    ? io[oc->input]
                      : oc->input <= -2 ? io[g->input_count + (uint32_t)(-2 - oc->input)]
                                        : oc->constant;
    if (oc->bytes) memcpy(io[g->input_count + oc->output], src, oc->bytes);
  }
  return AXLE_OK;
}

/* ---- worker pool for asynchronous runs ---------------------------------- */

typedef struct work_item_t {
  struct work_item_t* next;
  axle_work_fn fn;
  void* arg;
} work_item_t;

struct axle_worker_pool_t {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  work_item_t *head, *tail;
  int stop;
  uint32_t thread_count;
  pthread_t threads[4];
};

static void* worker_main(void* arg) {
  axle_worker_pool_t* pool = (axle_worker_pool_t*)arg;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (!pool->head && !pool->stop) pthread_cond_wait(&pool->cv, &pool->mu);
    if (!pool->head) break;
    work_item_t* w = pool->head;
    pool->head = w->next;
    if (!pool->head) pool->tail = NULL;
    pthread_mutex_unlock(&pool->mu);
    w->fn(w->arg);
    free(w);
    pthread_mutex_lock(&pool->mu);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

axle_status_t axle_runtime_post(axle_runtime_t* rt, axle_work_fn fn, void* arg) {
  work_item_t* w = (work_item_t*)malloc(sizeof(*w));
  if (!w) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  w->next = NULL;
  w->fn = fn;
  w->arg = arg;
  pthread_mutex_lock(&rt->workers_mu);
  if (!rt->workers) {
    axle_worker_pool_t* pool = (axle_worker_pool_t*)calloc(1, sizeof(*pool));
    if (pool) {
      pthread_mutex_init(&pool->mu, NULL);
      pthread_cond_init(&pool->cv, NULL);
      /* Async runs mostly wait on devices; a few threads keep several in
       * flight without oversubscribing the host. */
      for (uint32_t i = 0; i < 4; ++i)
        if (pthread_create(&pool->threads[pool->thread_count], NULL, worker_main, pool) == 0)
          ++pool->thread_count;
      if (!pool->thread_count) {
        pthread_cond_destroy(&pool->cv);
        pthread_mutex_destroy(&pool->mu);
        free(pool);
        pool = NULL;
      }
    }
    rt->workers = pool;
  }
  axle_worker_pool_t* pool = rt->workers;
  pthread_mutex_unlock(&rt->workers_mu);
  if (!pool) {
    free(w);
    return axle_status_make(AXLE_STATUS_RESOURCE_EXHAUSTED, "cannot start worker threads");
  }
  pthread_mutex_lock(&pool->mu);
  if (pool->tail)
    pool->tail->next = w;
  else
    pool->head = w;
  pool->tail = w;
  pthread_cond_signal(&pool->cv);
  pthread_mutex_unlock(&pool->mu);
  return AXLE_OK;
}

void axle_worker_pool_destroy(axle_worker_pool_t* pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mu);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->cv);
  pthread_mutex_unlock(&pool->mu);
  for (uint32_t i = 0; i < pool->thread_count; ++i) pthread_join(pool->threads[i], NULL);
  pthread_cond_destroy(&pool->cv);
  pthread_mutex_destroy(&pool->mu);
  free(pool);
}
