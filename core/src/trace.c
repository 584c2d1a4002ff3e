#include "trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void axle_trace_init(axle_trace_t* t) {
  memset(t, 0, sizeof(*t));
  pthread_mutex_init(&t->mu, NULL);
}

static void free_events(axle_trace_t* t) {
  for (size_t i = 0; i < t->count; ++i) {
    free(t->events[i].name);
    free(t->events[i].category);
    free(t->events[i].args_json);
  }
  t->count = 0;
}

void axle_trace_clear(axle_trace_t* t) {
  pthread_mutex_lock(&t->mu);
  free_events(t);
  pthread_mutex_unlock(&t->mu);
}

void axle_trace_free(axle_trace_t* t) {
  free_events(t);
  free(t->events);
  for (int32_t i = 0; i < t->track_count; ++i) free(t->track_names[i]);
  free(t->track_names);
  pthread_mutex_destroy(&t->mu);
}

void axle_trace_name_track(axle_trace_t* t, int32_t tid, const char* name) {
  if (tid < 0) return;
  pthread_mutex_lock(&t->mu);
  if (tid >= t->track_count) {
    char** grown = (char**)realloc(t->track_names, (size_t)(tid + 1) * sizeof(char*));
    if (grown) {
      for (int32_t i = t->track_count; i <= tid; ++i) grown[i] = NULL;
      t->track_names = grown;
      t->track_count = tid + 1;
    }
  }
  if (tid < t->track_count && !t->track_names[tid]) t->track_names[tid] = strdup(name);
  pthread_mutex_unlock(&t->mu);
}

void axle_trace_record(axle_trace_t* t, int32_t tid, const char* name, const char* category,
                       uint64_t start_ns, uint64_t duration_ns, const char* args_json) {
  axle_trace_event_rec_t e = {name ? strdup(name) : NULL, category ? strdup(category) : NULL,
                              args_json ? strdup(args_json) : NULL, start_ns, duration_ns, tid};
  pthread_mutex_lock(&t->mu);
  if (t->count == t->capacity) {
    size_t cap = t->capacity ? t->capacity * 2 : 256;
    axle_trace_event_rec_t* grown =
        (axle_trace_event_rec_t*)realloc(t->events, cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&t->mu);
      free(e.name);
      free(e.category);
      free(e.args_json);
      return;
    }
    t->events = grown;
    t->capacity = cap;
  }
  t->events[t->count++] = e;
  pthread_mutex_unlock(&t->mu);
}

/* Escapes s as the body of a JSON string into out (size n). */
static void json_escape(const char* s, char* out, size_t n) {
  size_t o = 0;
  for (; s && *s && o + 7 < n; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(out + o, n - o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o] = '\0';
}

void axle_trace_record_plugin_event(axle_trace_ctx_t* ctx, const axle_hal_trace_event_t* ev) {
  if (ev->struct_size < offsetof(axle_hal_trace_event_t, args_json)) return;
  char args[1024], dev[128];
  json_escape(ctx->device, dev, sizeof(dev));
  const char* extra = ev->struct_size > offsetof(axle_hal_trace_event_t, args_json)
                          ? ev->args_json
                          : NULL;
  /* Merge the plugin's JSON object with the device name. */
  if (extra && extra[0] == '{' && extra[1] != '}' && strlen(extra) < sizeof(args) - 200)
    snprintf(args, sizeof(args), "{\"device\":\"%s\",%s", dev, extra + 1);
  else
    snprintf(args, sizeof(args), "{\"device\":\"%s\"}", dev);
  int32_t track = ev->struct_size > offsetof(axle_hal_trace_event_t, track) ? ev->track : 0;
  if (track <= 0 || track >= 10) track = 0;
  if (track) {
    /* Sub-tracks (a device's functional blocks, say) show as their own rows. */
    char name[160];
    snprintf(name, sizeof(name), "%s/%d", ctx->device, track);
    axle_trace_name_track(ctx->trace, ctx->tid + track, name);
  }
  axle_trace_record(ctx->trace, ctx->tid + track, ev->name, ev->category, ev->start_ns,
                    ev->duration_ns, args);
}

typedef struct sbuf_t {
  char* p;
  size_t n, cap;
  int failed;
} sbuf_t;

static void sb_printf(sbuf_t* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t* b, const char* fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->failed = 1;
      return;
    }
    if ((size_t)w < b->cap - b->n) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = (b->cap + (size_t)w + 1) * 2;
    char* g = (char*)realloc(b->p, cap);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
}

char* axle_trace_to_json(axle_trace_t* t) {
  sbuf_t b = {(char*)malloc(4096), 0, 4096, 0};
  if (!b.p) return NULL;
  b.p[0] = '\0';
  pthread_mutex_lock(&t->mu);
  uint64_t base = t->count ? t->events[0].start_ns : 0;
  for (size_t i = 0; i < t->count; ++i)
    if (t->events[i].start_ns < base) base = t->events[i].start_ns;
  sb_printf(&b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  sb_printf(&b, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                "\"args\":{\"name\":\"axle\"}}");
  char esc_a[512], esc_b[256];
  for (int32_t i = 0; i < t->track_count; ++i) {
    if (!t->track_names[i]) continue;
    json_escape(t->track_names[i], esc_a, sizeof(esc_a));
    sb_printf(&b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                  "\"args\":{\"name\":\"%s\"}}", i, esc_a);
  }
  for (size_t i = 0; i < t->count; ++i) {
    const axle_trace_event_rec_t* e = &t->events[i];
    json_escape(e->name ? e->name : "", esc_a, sizeof(esc_a));
    json_escape(e->category ? e->category : "", esc_b, sizeof(esc_b));
    sb_printf(&b, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                  "\"ts\":%.3f,\"dur\":%.3f,\"args\":%s}",
              esc_a, esc_b, e->tid, (double)(e->start_ns - base) / 1000.0,
              (double)e->duration_ns / 1000.0, e->args_json ? e->args_json : "{}");
  }
  pthread_mutex_unlock(&t->mu);
  sb_printf(&b, "\n]}\n");
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}
