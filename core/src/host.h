/*
 * The host table the core hands to every plugin (hal.h axle_hal_host_t), and
 * the core-side objects behind its callbacks.
 */
#ifndef AXLE_CORE_HOST_H_
#define AXLE_CORE_HOST_H_

#include <pthread.h>

#include "axle/hal.h"

/* The process-wide host table (immutable, shared by all runtimes). */
const axle_hal_host_t* axle_host_table(void);

uint64_t axle_now_ns(void);

/* What host->complete() signals: one per in-flight submission. The sync path
 * checks `done` without locking first, so an inline-completing plugin costs
 * one uncontended lock. */
typedef struct axle_completion_t {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  int32_t status;
  /* The completing thread's message when status != OK: a plugin that fails
   * on its own worker thread calls host->status_make there, then complete(),
   * so the text travels here to the thread that waits. */
  char message[512];
} axle_completion_t;

void axle_completion_init(axle_completion_t* c);
void axle_completion_destroy(axle_completion_t* c);
void axle_completion_reset(axle_completion_t* c);
void axle_completion_signal(axle_completion_t* c, int32_t status);
/* Waits until signalled or until deadline_ns (0 = forever). Returns 1 when
 * signalled (status in c->status), 0 on timeout. */
int axle_completion_wait(axle_completion_t* c, uint64_t deadline_ns);

#endif /* AXLE_CORE_HOST_H_ */
