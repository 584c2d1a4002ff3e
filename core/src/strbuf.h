/* Growable strings for the reports the core writes (placement, traces). */
#ifndef AXLE_CORE_STRBUF_H_
#define AXLE_CORE_STRBUF_H_

#include <stddef.h>

typedef struct axle_strbuf_t {
  char* p;
  size_t n, cap;
  int failed;                        /* sticky: out of memory once = NULL at the end */
} axle_strbuf_t;

void axle_strbuf_printf(axle_strbuf_t* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s as a quoted JSON string. */
void axle_strbuf_json_string(axle_strbuf_t* b, const char* s);
/* The text (caller frees), or NULL after any allocation failure. */
char* axle_strbuf_finish(axle_strbuf_t* b);

#endif /* AXLE_CORE_STRBUF_H_ */
