/* Asynchronous runs: submit posts the run to the runtime's workers; the event
 * reports completion by status, condition variable and an eventfd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "session.h"
#include "status.h"
#include "tensor.h"

struct axle_event_t {
  axle_session_t* session;           /* NULL once the run finished */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  axle_status_t status;
  char message[1024];
  int fd;
  volatile int32_t cancel;
  uint64_t deadline_ns;
  axle_tensor_t** inputs;            /* retained until completion */
  uint32_t input_count;
  axle_tensor_t** outputs;
  uint32_t output_count;
  void** io;
  void* scratch;                     /* outputs nobody asked for */
};

static void event_run(void* arg) {
  axle_event_t* e = (axle_event_t*)arg;
  axle_session_t* s = e->session;
  axle_exec_ctx_t* ctx = NULL;
  uint64_t t0 = (s->flags & AXLE_SESSION_PROFILE) ? axle_now_ns() : 0;
  axle_status_t st = axle_exec_ctx_acquire(s, &ctx);
  if (st == AXLE_OK) {
    st = axle_exec_run(s, ctx, e->io, e->deadline_ns, &e->cancel);
    axle_exec_ctx_release(s, ctx);
  }
  if (s->flags & AXLE_SESSION_PROFILE)
    axle_trace_record(&s->trace, 0, "run (async)", "session", t0, axle_now_ns() - t0, NULL);
  for (uint32_t i = 0; i < e->input_count; ++i) axle_tensor_release(e->inputs[i]);
  e->input_count = 0;
  free(e->scratch);
  e->scratch = NULL;

  /* Done first, then let go of the session: a caller that saw its session
   * released must also see its events finished. e is not touched after its
   * done flag is set (its owner may free it at once); s stays valid until
   * pending drops. */
  pthread_mutex_lock(&e->mu);
  e->status = st;
  if (st != AXLE_OK) snprintf(e->message, sizeof(e->message), "%s", axle_status_message());
  e->session = NULL;
  e->done = 1;
  uint64_t one = 1;
  if (write(e->fd, &one, sizeof(one)) < 0) {
    /* eventfd writes only fail on counter overflow, impossible for one write */
  }
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);

  pthread_mutex_lock(&s->pending_mu);
  if (--s->pending == 0) pthread_cond_broadcast(&s->pending_cv);
  pthread_mutex_unlock(&s->pending_mu);
}

static void event_free(axle_event_t* e) {
  for (uint32_t i = 0; i < e->input_count; ++i) axle_tensor_release(e->inputs[i]);
  for (uint32_t i = 0; i < e->output_count; ++i) axle_tensor_release(e->outputs[i]);
  free(e->inputs);
  free(e->outputs);
  free(e->io);
  free(e->scratch);
  if (e->fd >= 0) close(e->fd);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

axle_status_t axle_session_submit(axle_session_t* s, const axle_run_options_t* run_options,
                                  const char* const* input_names, axle_tensor_t* const* inputs,
                                  uint32_t input_count, const char* const* output_names,
                                  uint32_t output_count, axle_event_t** out_event) {
  if (!out_event) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_event is NULL");
  *out_event = NULL;
  if (!s) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "session is NULL");
  axle_event_t* e = (axle_event_t*)calloc(1, sizeof(*e));
  if (!e) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_init(&e->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&e->cv, &attr);
  pthread_condattr_destroy(&attr);
  e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  uint32_t nio = s->slot_count - 1;
  e->io = (void**)calloc(nio + 1, sizeof(void*));
  e->inputs = (axle_tensor_t**)calloc(input_count + 1, sizeof(axle_tensor_t*));
  e->outputs = (axle_tensor_t**)calloc(output_count + 1, sizeof(axle_tensor_t*));
  uint32_t* idx = (uint32_t*)calloc(output_count + 1, sizeof(uint32_t));
  int* created = (int*)calloc(output_count + 1, sizeof(int));
  axle_status_t st = AXLE_OK;
  if (e->fd < 0)
    st = axle_status_make(AXLE_STATUS_RESOURCE_EXHAUSTED, "cannot create an eventfd");
  else if (!e->io || !e->inputs || !e->outputs || !idx || !created)
    st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  if (st == AXLE_OK) st = axle_session_bind_inputs(s, input_names, inputs, input_count, e->io);
  if (st == AXLE_OK) st = axle_session_resolve_outputs(s, output_names, output_count, idx);
  if (st == AXLE_OK) {
    e->output_count = output_count;
    st = axle_session_bind_outputs(s, idx, output_count, e->outputs, created, e->io);
  }
  if (st == AXLE_OK) st = axle_session_scratch_outputs(s, e->io, &e->scratch);
  free(idx);
  free(created);
  if (st != AXLE_OK) {
    event_free(e);
    return st;
  }
  for (uint32_t i = 0; i < input_count; ++i) {
    axle_tensor_retain(inputs[i]);
    e->inputs[e->input_count++] = inputs[i];
  }
  if (run_options && run_options->struct_size >= offsetof(axle_run_options_t, timeout_ms) + 4 &&
      run_options->timeout_ms)
    e->deadline_ns = axle_now_ns() + (uint64_t)run_options->timeout_ms * 1000000ull;
  e->session = s;
  pthread_mutex_lock(&s->pending_mu);
  ++s->pending;
  pthread_mutex_unlock(&s->pending_mu);
  st = axle_runtime_post(s->runtime, event_run, e);
  if (st != AXLE_OK) {
    pthread_mutex_lock(&s->pending_mu);
    --s->pending;
    pthread_mutex_unlock(&s->pending_mu);
    event_free(e);
    return st;
  }
  *out_event = e;
  return AXLE_OK;
}

static axle_status_t finished(axle_event_t* e) {
  if (e->status != AXLE_OK) return axle_status_make(e->status, "%s", e->message);
  return AXLE_OK;
}

axle_status_t axle_event_wait(axle_event_t* e, int64_t timeout_ms) {
  if (!e) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "event is NULL");
  uint64_t deadline = timeout_ms >= 0 ? axle_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
  pthread_mutex_lock(&e->mu);
  while (!e->done) {
    if (timeout_ms < 0) {
      pthread_cond_wait(&e->cv, &e->mu);
      continue;
    }
    struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
    if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) != 0 && !e->done) {
      pthread_mutex_unlock(&e->mu);
      return axle_status_make(AXLE_STATUS_TIMEOUT, "run still in progress after %lld ms",
                              (long long)timeout_ms);
    }
  }
  pthread_mutex_unlock(&e->mu);
  return finished(e);
}

axle_status_t axle_event_query(axle_event_t* e) {
  if (!e) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "event is NULL");
  pthread_mutex_lock(&e->mu);
  int done = e->done;
  pthread_mutex_unlock(&e->mu);
  if (!done) return AXLE_STATUS_PENDING;
  return finished(e);
}

axle_status_t axle_event_cancel(axle_event_t* e) {
  if (!e) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "event is NULL");
  /* The executor checks the flag between partitions and hands it to the
   * plugin, which polls it between nodes/layers. */
  __atomic_store_n(&e->cancel, 1, __ATOMIC_RELEASE);
  return AXLE_OK;
}

axle_status_t axle_event_fd(axle_event_t* e, int* out_fd) {
  if (out_fd) *out_fd = -1;
  if (!e || !out_fd) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "event and out_fd are required");
  *out_fd = e->fd;
  return AXLE_OK;
}

axle_status_t axle_event_output(axle_event_t* e, uint32_t index, axle_tensor_t** out_tensor) {
  if (out_tensor) *out_tensor = NULL;
  if (!e || !out_tensor)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "event and out_tensor are required");
  pthread_mutex_lock(&e->mu);
  int done = e->done;
  pthread_mutex_unlock(&e->mu);
  if (!done) return axle_status_make(AXLE_STATUS_PENDING, "the run has not completed yet");
  if (e->status != AXLE_OK) return finished(e);
  if (index >= e->output_count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "output index %u out of range (%u requested)",
                            index, e->output_count);
  axle_tensor_retain(e->outputs[index]);
  *out_tensor = e->outputs[index];
  return AXLE_OK;
}

void axle_event_release(axle_event_t* e) {
  if (!e) return;
  pthread_mutex_lock(&e->mu);
  if (!e->done) {
    __atomic_store_n(&e->cancel, 1, __ATOMIC_RELEASE);
    while (!e->done) pthread_cond_wait(&e->cv, &e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  event_free(e);
}
