#include "cts_host.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local char g_message[1024];
static uint64_t g_status_calls;
static uint64_t g_log_lines;

/* Every host->alloc block is remembered so that frees of foreign pointers
 * (malloc'd memory handed to host->free) are detected instead of crashing,
 * and so that leaks are visible after shutdown. */
static pthread_mutex_t g_alloc_mu = PTHREAD_MUTEX_INITIALIZER;
static void** g_blocks;
static size_t g_block_count, g_block_cap;
static uint64_t g_bad_frees;

uint64_t cts_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void* host_alloc(size_t size, size_t align) {
  if (align == 0 || (align & (align - 1))) return NULL;
  if (align < sizeof(void*)) align = sizeof(void*);
  size_t rounded = (size + align - 1) & ~(align - 1);
  if (rounded < size) return NULL;
  void* p = aligned_alloc(align, rounded ? rounded : align);
  if (!p) return NULL;
  pthread_mutex_lock(&g_alloc_mu);
  if (g_block_count == g_block_cap) {
    size_t cap = g_block_cap ? g_block_cap * 2 : 256;
    void** grown = (void**)realloc(g_blocks, cap * sizeof(void*));
    if (!grown) {
      pthread_mutex_unlock(&g_alloc_mu);
      free(p);
      return NULL;
    }
    g_blocks = grown;
    g_block_cap = cap;
  }
  g_blocks[g_block_count++] = p;
  pthread_mutex_unlock(&g_alloc_mu);
  return p;
}

static void host_free(void* p) {
  if (!p) return;
  pthread_mutex_lock(&g_alloc_mu);
  for (size_t i = g_block_count; i-- > 0;) {
    if (g_blocks[i] == p) {
      g_blocks[i] = g_blocks[--g_block_count];
      pthread_mutex_unlock(&g_alloc_mu);
      free(p);
      return;
    }
  }
  ++g_bad_frees;
  pthread_mutex_unlock(&g_alloc_mu);
}

static int32_t host_status_make(int32_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int32_t host_status_make(int32_t code, const char* fmt, ...) {
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message, sizeof(g_message), fmt, ap);
    va_end(ap);
  } else {
    g_message[0] = '\0';
  }
  __atomic_add_fetch(&g_status_calls, 1, __ATOMIC_RELAXED);
  return code;
}

static void host_log(int level, const char* plugin, const char* message) {
  (void)level;
  (void)plugin;
  (void)message;
  __atomic_add_fetch(&g_log_lines, 1, __ATOMIC_RELAXED);
}

static void host_complete(void* completion, int32_t status) {
  cts_token_t* t = (cts_token_t*)completion;
  pthread_mutex_lock(&t->mu);
  if (t->count++ == 0) {
    t->status = status;
    t->completed_ns = cts_now_ns();
  }
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static void copy_str(char* dst, size_t size, const char* src) {
  snprintf(dst, size, "%s", src ? src : "");
}

static void host_trace(void* ctx, const axle_hal_trace_event_t* ev) {
  if (!ctx || !ev) return;
  cts_trace_t* tr = (cts_trace_t*)ctx;
  pthread_mutex_lock(&tr->mu);
  if (tr->count == (int)(sizeof(tr->events) / sizeof(tr->events[0]))) {
    ++tr->dropped;
    pthread_mutex_unlock(&tr->mu);
    return;
  }
  cts_trace_event_t* e = &tr->events[tr->count++];
  memset(e, 0, sizeof(*e));
  e->struct_size = ev->struct_size;
  /* Read only what the plugin's struct_size covers. */
  if (ev->struct_size >= offsetof(axle_hal_trace_event_t, name) + sizeof(void*))
    copy_str(e->name, sizeof(e->name), ev->name);
  if (ev->struct_size >= offsetof(axle_hal_trace_event_t, category) + sizeof(void*))
    copy_str(e->category, sizeof(e->category), ev->category);
  if (ev->struct_size >= offsetof(axle_hal_trace_event_t, duration_ns) + sizeof(uint64_t)) {
    e->start_ns = ev->start_ns;
    e->duration_ns = ev->duration_ns;
  }
  if (ev->struct_size >= offsetof(axle_hal_trace_event_t, args_json) + sizeof(void*) &&
      ev->args_json) {
    e->has_args = 1;
    copy_str(e->args, sizeof(e->args), ev->args_json);
  }
  if (ev->struct_size >= offsetof(axle_hal_trace_event_t, track) + sizeof(int32_t))
    e->track = ev->track;
  if (tr->token) e->after_complete = cts_token_count(tr->token) > 0;
  pthread_mutex_unlock(&tr->mu);
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
    .now_ns = cts_now_ns,
};

/* A future core appends fields; a v1 plugin must neither need nor touch them. */
typedef struct cts_host_v2_t {
  axle_hal_host_t v1;
  void (*future_fn)(void);
  uint64_t future_field[4];
} cts_host_v2_t;

static void future_fn(void) {}

static const cts_host_v2_t g_host_newer = {
    .v1 =
        {
            .struct_size = sizeof(cts_host_v2_t),
            .abi_version = AXLE_HAL_ABI_VERSION + 1,
            .alloc = host_alloc,
            .free = host_free,
            .status_make = host_status_make,
            .log = host_log,
            .complete = host_complete,
            .trace = host_trace,
            .now_ns = cts_now_ns,
        },
    .future_fn = future_fn,
    .future_field = {1, 2, 3, 4},
};

const axle_hal_host_t* cts_host(void) { return &g_host; }
const axle_hal_host_t* cts_host_newer(void) { return &g_host_newer.v1; }

const char* cts_message(void) { return g_message; }
void cts_message_clear(void) { g_message[0] = '\0'; }
uint64_t cts_status_make_calls(void) { return __atomic_load_n(&g_status_calls, __ATOMIC_RELAXED); }
uint64_t cts_log_lines(void) { return __atomic_load_n(&g_log_lines, __ATOMIC_RELAXED); }

uint64_t cts_alloc_outstanding(void) {
  pthread_mutex_lock(&g_alloc_mu);
  uint64_t n = g_block_count;
  pthread_mutex_unlock(&g_alloc_mu);
  return n;
}

uint64_t cts_bad_frees(void) {
  pthread_mutex_lock(&g_alloc_mu);
  uint64_t n = g_bad_frees;
  pthread_mutex_unlock(&g_alloc_mu);
  return n;
}

void cts_token_init(cts_token_t* t) {
  pthread_mutex_init(&t->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&t->cv, &attr);
  pthread_condattr_destroy(&attr);
  t->count = 0;
  t->status = -1;
  t->completed_ns = 0;
}

void cts_token_destroy(cts_token_t* t) {
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
}

int cts_token_wait(cts_token_t* t, int timeout_ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&t->mu);
  while (t->count == 0) {
    if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT) break;
  }
  int done = t->count > 0;
  pthread_mutex_unlock(&t->mu);
  return done;
}

int cts_token_count(cts_token_t* t) {
  pthread_mutex_lock(&t->mu);
  int n = t->count;
  pthread_mutex_unlock(&t->mu);
  return n;
}

void cts_trace_init(cts_trace_t* tr, cts_token_t* token) {
  memset(tr, 0, sizeof(*tr));
  pthread_mutex_init(&tr->mu, NULL);
  tr->token = token;
}

void cts_trace_destroy(cts_trace_t* tr) { pthread_mutex_destroy(&tr->mu); }

/* ---- a tiny recursive-descent JSON validator (RFC 8259 syntax) ---------- */

typedef struct {
  const char* p;
  int depth;
} json_cur_t;

static void json_ws(json_cur_t* c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') ++c->p;
}

static int json_value(json_cur_t* c);

static int json_string(json_cur_t* c) {
  if (*c->p != '"') return 0;
  ++c->p;
  while (*c->p && *c->p != '"') {
    unsigned char ch = (unsigned char)*c->p;
    if (ch < 0x20) return 0;
    if (ch == '\\') {
      ++c->p;
      if (*c->p == 'u') {
        for (int i = 1; i <= 4; ++i) {
          char h = c->p[i];
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return 0;
        }
        c->p += 5;
        continue;
      }
      if (!*c->p || !strchr("\"\\/bfnrt", *c->p)) return 0;
    }
    ++c->p;
  }
  if (*c->p != '"') return 0;
  ++c->p;
  return 1;
}

static int json_number(json_cur_t* c) {
  const char* s = c->p;
  if (*c->p == '-') ++c->p;
  if (*c->p == '0') {
    ++c->p;
  } else if (*c->p >= '1' && *c->p <= '9') {
    while (*c->p >= '0' && *c->p <= '9') ++c->p;
  } else {
    return 0;
  }
  if (*c->p == '.') {
    ++c->p;
    if (!(*c->p >= '0' && *c->p <= '9')) return 0;
    while (*c->p >= '0' && *c->p <= '9') ++c->p;
  }
  if (*c->p == 'e' || *c->p == 'E') {
    ++c->p;
    if (*c->p == '+' || *c->p == '-') ++c->p;
    if (!(*c->p >= '0' && *c->p <= '9')) return 0;
    while (*c->p >= '0' && *c->p <= '9') ++c->p;
  }
  return c->p > s;
}

static int json_value(json_cur_t* c) {
  if (++c->depth > 64) return 0;
  json_ws(c);
  int ok = 0;
  if (*c->p == '{') {
    ++c->p;
    json_ws(c);
    if (*c->p == '}') {
      ++c->p;
      ok = 1;
    } else {
      for (;;) {
        json_ws(c);
        if (!json_string(c)) break;
        json_ws(c);
        if (*c->p != ':') break;
        ++c->p;
        if (!json_value(c)) break;
        json_ws(c);
        if (*c->p == ',') {
          ++c->p;
          continue;
        }
        if (*c->p == '}') {
          ++c->p;
          ok = 1;
        }
        break;
      }
    }
  } else if (*c->p == '[') {
    ++c->p;
    json_ws(c);
    if (*c->p == ']') {
      ++c->p;
      ok = 1;
    } else {
      for (;;) {
        if (!json_value(c)) break;
        json_ws(c);
        if (*c->p == ',') {
          ++c->p;
          continue;
        }
        if (*c->p == ']') {
          ++c->p;
          ok = 1;
        }
        break;
      }
    }
  } else if (*c->p == '"') {
    ok = json_string(c);
  } else if (strncmp(c->p, "true", 4) == 0) {
    c->p += 4;
    ok = 1;
  } else if (strncmp(c->p, "false", 5) == 0) {
    c->p += 5;
    ok = 1;
  } else if (strncmp(c->p, "null", 4) == 0) {
    c->p += 4;
    ok = 1;
  } else {
    ok = json_number(c);
  }
  --c->depth;
  return ok;
}

int cts_json_valid(const char* text, int want_object) {
  if (!text) return 0;
  json_cur_t c = {text, 0};
  json_ws(&c);
  if (want_object && *c.p != '{') return 0;
  if (!json_value(&c)) return 0;
  json_ws(&c);
  return *c.p == '\0';
}
