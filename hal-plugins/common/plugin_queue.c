/* The worker-thread submission queue of emulated devices (plugin_queue.h). */
#include "plugin_queue.h"

#include <stddef.h>

static void* queue_worker_main(void* arg) {
  axle_plugin_queue_t* q = (axle_plugin_queue_t*)arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (!q->head && !q->stopping) pthread_cond_wait(&q->wake, &q->lock);
    if (!q->head) break; /* stopping and drained */
    axle_plugin_job_t* job = q->head;
    q->head = job->next;
    if (!q->head) q->tail = NULL;
    q->running = job;
    pthread_mutex_unlock(&q->lock);

    const int32_t status = q->execute(q->owner, job);

    pthread_mutex_lock(&q->lock);
    q->running = NULL;
    if (!q->head) pthread_cond_broadcast(&q->idle);
    pthread_mutex_unlock(&q->lock);
    /* Complete outside the lock: the core may submit or cancel from inside
     * complete(). */
    void* completion = job->completion;
    q->host->free(job);
    q->host->complete(completion, status);
    pthread_mutex_lock(&q->lock);
  }
  pthread_cond_broadcast(&q->idle);
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

int axle_plugin_queue_start(axle_plugin_queue_t* q, const axle_hal_host_t* host,
                            axle_plugin_job_fn execute, void* owner) {
  q->host = host;
  q->execute = execute;
  q->owner = owner;
  q->head = q->tail = q->running = NULL;
  q->stopping = 0;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->wake, NULL);
  pthread_cond_init(&q->idle, NULL);
  const int err = pthread_create(&q->worker, NULL, queue_worker_main, q);
  if (err) {
    pthread_cond_destroy(&q->idle);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
  }
  return err;
}

static void cancel_all_locked(axle_plugin_queue_t* q) {
  if (q->running) atomic_store(&q->running->cancelled, 1);
  for (axle_plugin_job_t* j = q->head; j; j = j->next) atomic_store(&j->cancelled, 1);
}

void axle_plugin_queue_stop(axle_plugin_queue_t* q) {
  pthread_mutex_lock(&q->lock);
  q->stopping = 1;
  cancel_all_locked(q);
  pthread_cond_broadcast(&q->wake);
  pthread_mutex_unlock(&q->lock);
  pthread_join(q->worker, NULL);
  pthread_cond_destroy(&q->idle);
  pthread_cond_destroy(&q->wake);
  pthread_mutex_destroy(&q->lock);
}

void axle_plugin_job_init(axle_plugin_job_t* job, const axle_hal_submit_info_t* info) {
  job->next = NULL;
  job->completion = info->completion;
  job->cancel_flag = info->cancel_flag;
  atomic_init(&job->cancelled, 0);
  job->deadline_ns = info->deadline_ns;
  job->trace_ctx = info->trace_ctx;
}

int axle_plugin_queue_push(axle_plugin_queue_t* q, axle_plugin_job_t* job) {
  pthread_mutex_lock(&q->lock);
  if (q->stopping) {
    pthread_mutex_unlock(&q->lock);
    return -1;
  }
  if (q->tail)
    q->tail->next = job;
  else
    q->head = job;
  q->tail = job;
  pthread_cond_signal(&q->wake);
  pthread_mutex_unlock(&q->lock);
  return 0;
}

void axle_plugin_queue_cancel(axle_plugin_queue_t* q, void* completion) {
  pthread_mutex_lock(&q->lock);
  if (q->running && q->running->completion == completion)
    atomic_store(&q->running->cancelled, 1);
  for (axle_plugin_job_t* j = q->head; j; j = j->next)
    if (j->completion == completion) atomic_store(&j->cancelled, 1);
  pthread_mutex_unlock(&q->lock);
}

void axle_plugin_queue_reset(axle_plugin_queue_t* q) {
  pthread_mutex_lock(&q->lock);
  cancel_all_locked(q);
  /* On the worker (reset() from inside complete()) waiting would deadlock:
   * the job it waits for is the one calling. */
  if (!pthread_equal(pthread_self(), q->worker))
    while (q->head || q->running) pthread_cond_wait(&q->idle, &q->lock);
  pthread_mutex_unlock(&q->lock);
}

int32_t axle_plugin_job_should_stop(const axle_hal_host_t* host, axle_plugin_job_t* job) {
  if (axle_hal_cancel_requested(job->cancel_flag) || atomic_load(&job->cancelled))
    return AXLE_HAL_CANCELLED;
  if (job->deadline_ns && host->now_ns() >= job->deadline_ns) return AXLE_HAL_TIMEOUT;
  return AXLE_HAL_OK;
}
