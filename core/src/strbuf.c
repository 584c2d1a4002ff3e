#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void axle_strbuf_printf(axle_strbuf_t* b, const char* fmt, ...) {
  while (!b->failed) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->failed = 1;
      return;
    }
    if (b->p && (size_t)w < b->cap - b->n) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = (b->cap + (size_t)w + 256) * 2;
    char* g = (char*)realloc(b->p, cap);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
}

void axle_strbuf_json_string(axle_strbuf_t* b, const char* s) {
  axle_strbuf_printf(b, "\"");
  for (; s && *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      axle_strbuf_printf(b, "\\%c", c);
    else if (c < 0x20)
      axle_strbuf_printf(b, "\\u%04x", c);
    else
      axle_strbuf_printf(b, "%c", c);
  }
  axle_strbuf_printf(b, "\"");
}

char* axle_strbuf_finish(axle_strbuf_t* b) {
  if (b->failed) {
    free(b->p);
    return NULL;
  }
  if (!b->p) axle_strbuf_printf(b, "%s", "");
  return b->failed ? NULL : b->p;
}
