/*
 * The CTS's own minimal host: an implementation of axle_hal_host_t that
 * records what the plugin does with it, so conformance can be checked without
 * libaxle (a plugin must work with any conforming host, not just ours).
 */
#ifndef AXLE_CTS_HOST_H_
#define AXLE_CTS_HOST_H_

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"

/* The host table handed to the plugin (struct_size = sizeof, ABI 1). */
const axle_hal_host_t* cts_host(void);
/* A host table from a "newer core": larger struct, higher abi_version, extra
 * trailing fields the plugin must ignore. */
const axle_hal_host_t* cts_host_newer(void);

/* The calling thread's last status_make() message, and a way to clear it. */
const char* cts_message(void);
void cts_message_clear(void);
/* Number of status_make() calls made so far on any thread. */
uint64_t cts_status_make_calls(void);

/* Outstanding host->alloc() blocks, and frees of pointers host->alloc never
 * returned (a conformance violation, counted instead of crashing). */
uint64_t cts_alloc_outstanding(void);
uint64_t cts_bad_frees(void);
/* Number of log lines the plugin wrote. */
uint64_t cts_log_lines(void);

/* A completion token: what the CTS passes as submit_info.completion. */
typedef struct cts_token_t {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int count;               /* complete() calls; must end at exactly 1 */
  int32_t status;
  uint64_t completed_ns;
} cts_token_t;

void cts_token_init(cts_token_t* t);
void cts_token_destroy(cts_token_t* t);
/* Waits up to timeout_ms for the first complete(); returns 1 when completed. */
int cts_token_wait(cts_token_t* t, int timeout_ms);
int cts_token_count(cts_token_t* t);

/* A trace context: what the CTS passes as submit_info.trace_ctx. */
typedef struct cts_trace_event_t {
  char name[128];
  char category[64];
  char args[512];
  int has_args;
  uint32_t struct_size;
  uint64_t start_ns, duration_ns;
  int32_t track;
  int after_complete;      /* recorded after the run's completion: a violation */
} cts_trace_event_t;

typedef struct cts_trace_t {
  pthread_mutex_t mu;
  cts_token_t* token;      /* the run this trace belongs to */
  cts_trace_event_t events[256];
  int count;
  int dropped;
} cts_trace_t;

void cts_trace_init(cts_trace_t* tr, cts_token_t* token);
void cts_trace_destroy(cts_trace_t* tr);

uint64_t cts_now_ns(void);

/* Minimal JSON validator: 1 when text is exactly one JSON value (object when
 * want_object). Used for args_json. */
int cts_json_valid(const char* text, int want_object);

#endif /* AXLE_CTS_HOST_H_ */
