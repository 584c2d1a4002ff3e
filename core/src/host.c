#include "host.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "status.h"
#include "trace.h"

uint64_t axle_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void* host_alloc(size_t size, size_t align) {
  if (align < sizeof(void*)) align = sizeof(void*);
  if (align & (align - 1)) return NULL;
  size_t rounded = (size + align - 1) & ~(align - 1);
  if (rounded < size) return NULL;
  return aligned_alloc(align, rounded ? rounded : align);
}

static void host_free(void* p) { free(p); }

static int32_t host_status_make(int32_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return (int32_t)axle_status_make((axle_status_t)code, "%s", buf);
}

/* Plugin logs go to stderr only when AXLE_LOG asks for them (level <= its
 * value): a library must not talk unless told to. */
static void host_log(int level, const char* plugin, const char* message) {
  static int threshold = -2;
  if (threshold == -2) {
    const char* env = getenv("AXLE_LOG");
    threshold = env ? atoi(env) : -1;
  }
  if (level <= threshold) fprintf(stderr, "axle[%s]: %s\n", plugin ? plugin : "?", message);
}

static void host_complete(void* completion, int32_t status) {
  axle_completion_t* c = (axle_completion_t*)completion;
  if (status != AXLE_HAL_OK) snprintf(c->message, sizeof(c->message), "%s", axle_status_message());
  axle_completion_signal(c, status);
}

static void host_trace(void* trace_ctx, const axle_hal_trace_event_t* ev) {
  if (trace_ctx && ev) axle_trace_record_plugin_event((axle_trace_ctx_t*)trace_ctx, ev);
}

static const axle_hal_host_t g_host = {
    .struct_size = sizeof(axle_hal_host_t),
    .abi_version = AXLE_HAL_ABI_VERSION,
    .alloc = host_alloc,
    .free = host_free,
    .status_make = host_status_make,
    .log = host_log,
    .complete = host_complete,
    .trace = host_trace,
    .now_ns = axle_now_ns,
};

const axle_hal_host_t* axle_host_table(void) { return &g_host; }

void axle_completion_init(axle_completion_t* c) {
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &attr);
  pthread_condattr_destroy(&attr);
  c->done = 0;
  c->status = 0;
  c->message[0] = '\0';
}

void axle_completion_destroy(axle_completion_t* c) {
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
}

void axle_completion_reset(axle_completion_t* c) {
  pthread_mutex_lock(&c->mu);
  c->done = 0;
  c->status = 0;
  pthread_mutex_unlock(&c->mu);
}

void axle_completion_signal(axle_completion_t* c, int32_t status) {
  pthread_mutex_lock(&c->mu);
  c->status = status;
  __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

int axle_completion_wait(axle_completion_t* c, uint64_t deadline_ns) {
  if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
    /* Lock once so the signaller has left the critical section before the
     * caller may destroy or reuse c. */
    pthread_mutex_lock(&c->mu);
    pthread_mutex_unlock(&c->mu);
    return 1;
  }
  pthread_mutex_lock(&c->mu);
  while (!c->done) {
    if (deadline_ns == 0) {
      pthread_cond_wait(&c->cv, &c->mu);
    } else {
      struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
                            (long)(deadline_ns % 1000000000ull)};
      if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT && !c->done) {
        pthread_mutex_unlock(&c->mu);
        return 0;
      }
    }
  }
  pthread_mutex_unlock(&c->mu);
  return 1;
}
