/*
 * Per-thread status messages inside the core.
 * axle_status_make() formats the calling thread's message and returns code, so
 * failures read: return axle_status_make(AXLE_STATUS_X, "cpu: node '%s' ...").
 */
#ifndef AXLE_CORE_STATUS_H_
#define AXLE_CORE_STATUS_H_

#include "axle/axle.h"

axle_status_t axle_status_make(axle_status_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to the current message (keeps code). */
axle_status_t axle_status_annotate(axle_status_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
void axle_status_clear(void);

#endif /* AXLE_CORE_STATUS_H_ */
