#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One message per thread: failures on one thread never clobber another's. */
static _Thread_local char g_message[1024];

const char* axle_status_string(axle_status_t status) {
  switch (status) {
    case AXLE_OK: return "ok";
    case AXLE_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case AXLE_STATUS_NOT_FOUND: return "not found";
    case AXLE_STATUS_UNSUPPORTED: return "unsupported";
    case AXLE_STATUS_OUT_OF_MEMORY: return "out of memory";
    case AXLE_STATUS_IO_ERROR: return "i/o error";
    case AXLE_STATUS_INVALID_MODEL: return "invalid model";
    case AXLE_STATUS_DEVICE_ERROR: return "device error";
    case AXLE_STATUS_TIMEOUT: return "timeout";
    case AXLE_STATUS_CANCELLED: return "cancelled";
    case AXLE_STATUS_BUSY: return "busy";
    case AXLE_STATUS_ABI_MISMATCH: return "abi mismatch";
    case AXLE_STATUS_INTERNAL: return "internal error";
    case AXLE_STATUS_PENDING: return "pending";
    case AXLE_STATUS_RESOURCE_EXHAUSTED: return "resource exhausted";
  }
  return "unknown status";
}

const char* axle_status_message(void) { return g_message; }

void axle_status_clear(void) { g_message[0] = '\0'; }

axle_status_t axle_status_make(axle_status_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_message, sizeof(g_message), fmt, ap);
  va_end(ap);
  return code;
}

axle_status_t axle_status_annotate(axle_status_t code, const char* fmt, ...) {
  char prefix[512], old[sizeof(g_message)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof(prefix), fmt, ap);
  va_end(ap);
  memcpy(old, g_message, sizeof(old));
  snprintf(g_message, sizeof(g_message), "%.511s: %.500s", prefix, old);
  return code;
}

void axle_free(void* ptr) { free(ptr); }
