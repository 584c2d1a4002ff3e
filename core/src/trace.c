#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

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

void axle_trace_record_plugin_event(axle_trace_ctx_t* ctx, const axle_hal_trace_event_t* ev) {
  if (ev->struct_size < offsetof(axle_hal_trace_event_t, args_json)) return;
  const char* extra = ev->struct_size > offsetof(axle_hal_trace_event_t, args_json)
                          ? ev->args_json
                          : NULL;
  /* The device name joins the plugin's own JSON object. */
  axle_strbuf_t args = {NULL, 0, 0, 0};
  axle_strbuf_printf(&args, "{\"device\":");
  axle_strbuf_json_string(&args, ctx->device);
  if (extra && extra[0] == '{' && extra[1] != '}' && extra[1])
    axle_strbuf_printf(&args, ",%s", extra + 1);
  else
    axle_strbuf_printf(&args, "}");
  char* text = axle_strbuf_finish(&args);
  int32_t track = ev->struct_size > offsetof(axle_hal_trace_event_t, track) ? ev->track : 0;
  if (track <= 0 || track >= 10) track = 0;
  if (track) {
    /* Sub-tracks (a device's functional blocks, say) show as their own rows. */
    char name[160];
    snprintf(name, sizeof(name), "%s/%d", ctx->device, track);
    axle_trace_name_track(ctx->trace, ctx->tid + track, name);
  }
  axle_trace_record(ctx->trace, ctx->tid + track, ev->name, ev->category, ev->start_ns,
                    ev->duration_ns, text);
  free(text);
}

char* axle_trace_to_json(axle_trace_t* t) {
  axle_strbuf_t b = {NULL, 0, 0, 0};
  pthread_mutex_lock(&t->mu);
  uint64_t base = t->count ? t->events[0].start_ns : 0;
  for (size_t i = 0; i < t->count; ++i)
    if (t->events[i].start_ns < base) base = t->events[i].start_ns;
  axle_strbuf_printf(&b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  axle_strbuf_printf(&b, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                         "\"args\":{\"name\":\"axle\"}}");
  for (int32_t i = 0; i < t->track_count; ++i) {
    if (!t->track_names[i]) continue;
    axle_strbuf_printf(&b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                           "\"args\":{\"name\":", i);
    axle_strbuf_json_string(&b, t->track_names[i]);
    axle_strbuf_printf(&b, "}}");
  }
  for (size_t i = 0; i < t->count; ++i) {
    const axle_trace_event_rec_t* e = &t->events[i];
    axle_strbuf_printf(&b, ",\n{\"name\":");
    axle_strbuf_json_string(&b, e->name ? e->name : "");
    axle_strbuf_printf(&b, ",\"cat\":");
    axle_strbuf_json_string(&b, e->category ? e->category : "");
    axle_strbuf_printf(&b, ",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":%s}",
                       e->tid, (double)(e->start_ns - base) / 1000.0,
                       (double)e->duration_ns / 1000.0, e->args_json ? e->args_json : "{}");
  }
  pthread_mutex_unlock(&t->mu);
  axle_strbuf_printf(&b, "\n]}\n");
  return axle_strbuf_finish(&b);
}
