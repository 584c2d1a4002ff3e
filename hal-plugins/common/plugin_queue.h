/*
 * A device's submission queue served by one worker thread.
 *
 * Emulated devices use it to behave like hardware queues: submit() checks
 * and resolves everything on the caller's thread, pushes a job and returns;
 * the worker runs jobs in order and reports each through host->complete().
 * It is a static helper compiled into the plugins that want it, not part of
 * the core (a plugin never links libaxle).
 *
 * Ownership: jobs are allocated by the plugin with host->alloc and embed
 * axle_plugin_job_t as their first member; once pushed, the queue owns them
 * and frees them with host->free after execute() returns and before the
 * completion is reported (after complete() the token is the core's again).
 *
 * Thread safety: push, cancel and reset may be called from any thread,
 * including from inside host->complete() on the worker; start and stop are
 * called once each, by the device's open and close.
 */
#ifndef AXLE_PLUGIN_QUEUE_H_
#define AXLE_PLUGIN_QUEUE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "axle/hal.h"

/* The queue's part of a job: the submission's completion token and the
 * reasons it may have to stop early. */
typedef struct axle_plugin_job_t {
  struct axle_plugin_job_t* next;
  void* completion;
  const volatile int32_t* cancel_flag; /* the core's flag, may be NULL */
  atomic_int cancelled;                /* set by cancel() / reset() / stop */
  uint64_t deadline_ns;                /* 0: none */
  void* trace_ctx;
} axle_plugin_job_t;

/* Runs one job on the worker thread and returns its completion status. A
 * failure message, if any, is set with host->status_make on this thread:
 * complete() carries it to the waiting thread. */
typedef int32_t (*axle_plugin_job_fn)(void* owner, axle_plugin_job_t* job);

typedef struct axle_plugin_queue_t {
  const axle_hal_host_t* host;
  axle_plugin_job_fn execute;
  void* owner;
  pthread_t worker;
  pthread_mutex_t lock; /* guards the fields below */
  pthread_cond_t wake;  /* worker: a new job, or stopping */
  pthread_cond_t idle;  /* reset(): nothing queued or running */
  axle_plugin_job_t *head, *tail, *running;
  int stopping;
} axle_plugin_queue_t;

/* Initialises q and starts its worker, which calls execute(owner, job).
 * Returns 0, or an errno value when the thread cannot be created (q is then
 * left uninitialised). */
int axle_plugin_queue_start(axle_plugin_queue_t* q, const axle_hal_host_t* host,
                            axle_plugin_job_fn execute, void* owner);
/* Marks everything queued or running cancelled, lets the worker complete it
 * all (as CANCELLED, so no completion token is ever lost) and joins it. */
void axle_plugin_queue_stop(axle_plugin_queue_t* q);

/* Fills the queue's part of a job from a submission. */
void axle_plugin_job_init(axle_plugin_job_t* job, const axle_hal_submit_info_t* info);
/* Appends job. Returns 0, or -1 when the queue is stopping (the job stays
 * the caller's). */
int axle_plugin_queue_push(axle_plugin_queue_t* q, axle_plugin_job_t* job);
/* Marks the queued or running job holding completion cancelled; an unknown
 * token has already completed, which is not an error (the race is inherent). */
void axle_plugin_queue_cancel(axle_plugin_queue_t* q, void* completion);
/* Cancels everything and, unless called on the worker itself (from inside
 * complete()), waits until nothing is queued or running. */
void axle_plugin_queue_reset(axle_plugin_queue_t* q);

/* Why a running job must stop now (AXLE_HAL_CANCELLED or AXLE_HAL_TIMEOUT),
 * or AXLE_HAL_OK. execute() checks it between its units of work. */
int32_t axle_plugin_job_should_stop(const axle_hal_host_t* host, axle_plugin_job_t* job);

#endif /* AXLE_PLUGIN_QUEUE_H_ */
