/*
 * Profiling events of a session, exported as Chrome trace JSON (Perfetto and
 * chrome://tracing open it). Recording is thread-safe (one mutex per trace).
 */
#ifndef AXLE_CORE_TRACE_H_
#define AXLE_CORE_TRACE_H_

#include <pthread.h>
#include <stdint.h>

#include "axle/hal.h"

typedef struct axle_trace_event_rec_t {
  char* name;
  char* category;
  char* args_json;                   /* JSON object text or NULL */
  uint64_t start_ns, duration_ns;
  int32_t tid;
} axle_trace_event_rec_t;

typedef struct axle_trace_t {
  pthread_mutex_t mu;
  axle_trace_event_rec_t* events;
  size_t count, capacity;
  char** track_names;                /* indexed by tid */
  int32_t track_count;
} axle_trace_t;

/* What plugins receive as trace_ctx: routes their events to a device track. */
typedef struct axle_trace_ctx_t {
  axle_trace_t* trace;
  int32_t tid;                       /* device track */
  const char* device;                /* added to every event's args */
} axle_trace_ctx_t;

void axle_trace_init(axle_trace_t* t);
void axle_trace_free(axle_trace_t* t);
void axle_trace_clear(axle_trace_t* t);
/* Names track tid (shown as a thread in the viewer). */
void axle_trace_name_track(axle_trace_t* t, int32_t tid, const char* name);
void axle_trace_record(axle_trace_t* t, int32_t tid, const char* name, const char* category,
                       uint64_t start_ns, uint64_t duration_ns, const char* args_json);
void axle_trace_record_plugin_event(axle_trace_ctx_t* ctx, const axle_hal_trace_event_t* ev);
/* Chrome trace JSON (malloc'd), or NULL when out of memory. */
char* axle_trace_to_json(axle_trace_t* t);

#endif /* AXLE_CORE_TRACE_H_ */
