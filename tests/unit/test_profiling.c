/*
 * Profiling through the public API: a session created with
 * AXLE_SESSION_PROFILE records events; axle_session_trace_json() returns Chrome
 * trace JSON that a strict parser (written here, no dependency) reads back;
 * every complete event has name/ph/ts/dur/pid/tid; every node of the model has
 * an event naming its op and device; the reference plugin's own events
 * ("ref execute" and its per-node events) arrive through the host table.
 *
 * Environment: AXLE_PLUGIN_PATH, AXLE_SOURCE_DIR.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "axle/axle.h"

static char g_models[4096];

/* ------------------------------------------------------------------------ */
/* A small strict JSON parser (RFC 8259) producing a tree.                   */
/* ------------------------------------------------------------------------ */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jval_t {
  jtype_t type;
  double num;
  int boolean;
  char* str;             /* J_STR: decoded UTF-8 */
  struct jval_t** items; /* J_ARR values; J_OBJ values */
  char** keys;           /* J_OBJ keys */
  size_t count;
} jval_t;

typedef struct {
  const char* p;
  int depth;
  const char* error;
} jparser_t;

static void jfree(jval_t* v) {
  if (!v) return;
  for (size_t i = 0; i < v->count; ++i) {
    jfree(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

static void jws(jparser_t* j) {
  while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') ++j->p;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static char* jstring(jparser_t* j) {
  if (*j->p != '"') {
    j->error = "expected string";
    return NULL;
  }
  ++j->p;
  size_t cap = 16, n = 0;
  char* out = (char*)malloc(cap);
  for (;;) {
    unsigned char c = (unsigned char)*j->p;
    if (c == '"') {
      ++j->p;
      break;
    }
    if (c == '\0' || c < 0x20) {
      j->error = c ? "control character in string" : "unterminated string";
      free(out);
      return NULL;
    }
    char buf[4];
    size_t len = 1;
    buf[0] = (char)c;
    if (c == '\\') {
      char e = *++j->p;
      switch (e) {
        case '"': buf[0] = '"'; break;
        case '\\': buf[0] = '\\'; break;
        case '/': buf[0] = '/'; break;
        case 'b': buf[0] = '\b'; break;
        case 'f': buf[0] = '\f'; break;
        case 'n': buf[0] = '\n'; break;
        case 'r': buf[0] = '\r'; break;
        case 't': buf[0] = '\t'; break;
        case 'u': {
          unsigned cp = 0;
          for (int i = 1; i <= 4; ++i) {
            int h = hexval(j->p[i]);
            if (h < 0) {
              j->error = "bad \\u escape";
              free(out);
              return NULL;
            }
            cp = cp * 16 + (unsigned)h;
          }
          j->p += 4;
          /* Surrogates are kept as-is (the trace never needs them). */
          if (cp < 0x80) {
            buf[0] = (char)cp;
          } else if (cp < 0x800) {
            buf[0] = (char)(0xC0 | (cp >> 6));
            buf[1] = (char)(0x80 | (cp & 0x3F));
            len = 2;
          } else {
            buf[0] = (char)(0xE0 | (cp >> 12));
            buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[2] = (char)(0x80 | (cp & 0x3F));
            len = 3;
          }
          break;
        }
        default:
          j->error = "bad escape";
          free(out);
          return NULL;
      }
    }
    ++j->p;
    if (n + len + 1 > cap) {
      cap = (n + len + 1) * 2;
      out = (char*)realloc(out, cap);
    }
    memcpy(out + n, buf, len);
    n += len;
  }
  out[n] = '\0';
  return out;
}

static jval_t* jvalue(jparser_t* j);

static int jappend(jval_t* v, char* key, jval_t* item) {
  jval_t** items = (jval_t**)realloc(v->items, (v->count + 1) * sizeof(*items));
  if (!items) return 0;
  v->items = items;
  if (v->type == J_OBJ) {
    char** keys = (char**)realloc(v->keys, (v->count + 1) * sizeof(*keys));
    if (!keys) return 0;
    v->keys = keys;
    v->keys[v->count] = key;
  }
  v->items[v->count++] = item;
  return 1;
}

static jval_t* jvalue(jparser_t* j) {
  if (++j->depth > 100) {
    j->error = "nesting too deep";
    return NULL;
  }
  jws(j);
  jval_t* v = (jval_t*)calloc(1, sizeof(*v));
  char c = *j->p;
  if (c == '{' || c == '[') {
    v->type = c == '{' ? J_OBJ : J_ARR;
    char close = c == '{' ? '}' : ']';
    ++j->p;
    jws(j);
    if (*j->p == close) {
      ++j->p;
    } else {
      for (;;) {
        char* key = NULL;
        if (v->type == J_OBJ) {
          jws(j);
          key = jstring(j);
          if (!key) goto fail;
          jws(j);
          if (*j->p != ':') {
            free(key);
            j->error = "expected ':'";
            goto fail;
          }
          ++j->p;
        }
        jval_t* item = jvalue(j);
        if (!item) {
          free(key);
          goto fail;
        }
        if (!jappend(v, key, item)) {
          free(key);
          jfree(item);
          goto fail;
        }
        jws(j);
        if (*j->p == ',') {
          ++j->p;
          continue;
        }
        if (*j->p == close) {
          ++j->p;
          break;
        }
        j->error = "expected ',' or closing bracket";
        goto fail;
      }
    }
  } else if (c == '"') {
    v->type = J_STR;
    v->str = jstring(j);
    if (!v->str) goto fail;
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
    v->type = J_BOOL;
    v->boolean = c == 't';
    j->p += v->boolean ? 4 : 5;
  } else if (strncmp(j->p, "null", 4) == 0) {
    v->type = J_NULL;
    j->p += 4;
  } else {
    /* Strict number grammar, then strtod for the value. */
    const char* s = j->p;
    const char* q = s;
    if (*q == '-') ++q;
    if (*q == '0') {
      ++q;
    } else if (*q >= '1' && *q <= '9') {
      while (*q >= '0' && *q <= '9') ++q;
    } else {
      j->error = "unexpected character";
      goto fail;
    }
    if (*q == '.') {
      ++q;
      if (!(*q >= '0' && *q <= '9')) {
        j->error = "bad fraction";
        goto fail;
      }
      while (*q >= '0' && *q <= '9') ++q;
    }
    if (*q == 'e' || *q == 'E') {
      ++q;
      if (*q == '+' || *q == '-') ++q;
      if (!(*q >= '0' && *q <= '9')) {
        j->error = "bad exponent";
        goto fail;
      }
      while (*q >= '0' && *q <= '9') ++q;
    }
    v->type = J_NUM;
    v->num = strtod(s, NULL);
    j->p = q;
  }
  --j->depth;
  return v;
fail:
  jfree(v);
  return NULL;
}

/* Parses a whole document; NULL (and *error) when it is not exactly one
 * JSON value. */
static jval_t* jparse(const char* text, const char** error) {
  jparser_t j = {text, 0, NULL};
  jval_t* v = jvalue(&j);
  if (v) {
    jws(&j);
    if (*j.p) {
      j.error = "trailing characters";
      jfree(v);
      v = NULL;
    }
  }
  if (error) *error = j.error;
  return v;
}

static const jval_t* jget(const jval_t* obj, const char* key) {
  if (!obj || obj->type != J_OBJ) return NULL;
  for (size_t i = 0; i < obj->count; ++i)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

static const char* jstr(const jval_t* obj, const char* key) {
  const jval_t* v = jget(obj, key);
  return v && v->type == J_STR ? v->str : NULL;
}

/* 1 when needle occurs in any string (key or value) inside v. */
static int jcontains(const jval_t* v, const char* needle) {
  if (!v) return 0;
  if (v->type == J_STR) return strstr(v->str, needle) != NULL;
  for (size_t i = 0; i < v->count; ++i) {
    if (v->keys && strstr(v->keys[i], needle)) return 1;
    if (jcontains(v->items[i], needle)) return 1;
  }
  return 0;
}

/* pid/tid may be numbers or strings in Chrome traces: compare either. */
static int jsame(const jval_t* a, const jval_t* b) {
  if (!a || !b || a->type != b->type) return 0;
  if (a->type == J_NUM) return a->num == b->num;
  if (a->type == J_STR) return strcmp(a->str, b->str) == 0;
  return 0;
}

/* ------------------------------------------------------------------------ */

typedef struct {
  jval_t* doc;
  const jval_t* events;
} trace_t;

/* Validates the Chrome trace structure; returns 1 when every event is sound. */
static int trace_parse(const char* json, trace_t* out) {
  memset(out, 0, sizeof(*out));
  const char* err = NULL;
  out->doc = jparse(json, &err);
  if (!out->doc) {
    fprintf(stderr, "\n  trace is not JSON: %s\n", err ? err : "?");
    return 0;
  }
  const jval_t* ev = out->doc->type == J_OBJ ? jget(out->doc, "traceEvents") : out->doc;
  if (!ev || ev->type != J_ARR) {
    fprintf(stderr, "\n  no traceEvents array\n");
    return 0;
  }
  out->events = ev;
  int ok = 1;
  for (size_t i = 0; i < ev->count; ++i) {
    const jval_t* e = ev->items[i];
    const char* ph = jstr(e, "ph");
    const jval_t* pid = jget(e, "pid");
    const jval_t* tid = jget(e, "tid");
    if (e->type != J_OBJ || !jstr(e, "name") || !ph || !pid || !tid ||
        (pid->type != J_NUM && pid->type != J_STR) || (tid->type != J_NUM && tid->type != J_STR)) {
      fprintf(stderr, "\n  event %zu lacks name/ph/pid/tid\n", i);
      ok = 0;
      continue;
    }
    if (strcmp(ph, "X") == 0) {
      const jval_t* ts = jget(e, "ts");
      const jval_t* dur = jget(e, "dur");
      if (!ts || ts->type != J_NUM || !dur || dur->type != J_NUM || dur->num < 0 || ts->num < 0) {
        fprintf(stderr, "\n  complete event %zu ('%s') lacks a valid ts/dur\n", i, jstr(e, "name"));
        ok = 0;
      }
    } else if (strcmp(ph, "M") != 0 && strcmp(ph, "B") != 0 && strcmp(ph, "E") != 0 &&
               strcmp(ph, "i") != 0 && strcmp(ph, "I") != 0 && strcmp(ph, "C") != 0) {
      fprintf(stderr, "\n  event %zu has unexpected phase '%s'\n", i, ph);
      ok = 0;
    }
  }
  return ok;
}

static size_t count_complete(const trace_t* t) {
  size_t n = 0;
  for (size_t i = 0; t->events && i < t->events->count; ++i) {
    const char* ph = jstr(t->events->items[i], "ph");
    if (ph && strcmp(ph, "X") == 0) ++n;
  }
  return n;
}

/* The metadata (process_name/thread_name) event describing e's pid or tid. */
static int track_named(const trace_t* t, const jval_t* e, const char* needle) {
  for (size_t i = 0; i < t->events->count; ++i) {
    const jval_t* m = t->events->items[i];
    const char* ph = jstr(m, "ph");
    if (!ph || strcmp(ph, "M") != 0 || !jsame(jget(m, "pid"), jget(e, "pid"))) continue;
    const char* name = jstr(m, "name");
    int thread_meta = name && strcmp(name, "thread_name") == 0;
    if (thread_meta && !jsame(jget(m, "tid"), jget(e, "tid"))) continue;
    if (jcontains(jget(m, "args"), needle)) return 1;
  }
  return 0;
}

/* An X event for node `node` mentioning op and device, in its own fields or
 * in the names of its process/thread track. */
static int has_node_event(const trace_t* t, const char* node, const char* op, const char* device) {
  for (size_t i = 0; i < t->events->count; ++i) {
    const jval_t* e = t->events->items[i];
    const char* ph = jstr(e, "ph");
    const char* name = jstr(e, "name");
    if (!ph || strcmp(ph, "X") != 0 || !name || !strstr(name, node)) continue;
    int op_ok = jcontains(e, op) || track_named(t, e, op);
    int dev_ok = jcontains(e, device) || track_named(t, e, device);
    if (op_ok && dev_ok) return 1;
  }
  return 0;
}

static const jval_t* find_event(const trace_t* t, const char* name_part) {
  for (size_t i = 0; t->events && i < t->events->count; ++i) {
    const char* name = jstr(t->events->items[i], "name");
    if (name && strstr(name, name_part)) return t->events->items[i];
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */

static axle_runtime_t* g_rt;
static axle_model_t* g_mixed;

static axle_session_t* session(uint32_t flags) {
  const char* devs[2] = {"ref", "cpu"};
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = flags;
  o.devices = devs;
  o.device_count = 2;
  axle_session_t* s = NULL;
  axle_status_t st = axle_session_create(g_rt, g_mixed, &o, &s);
  if (st != AXLE_OK) fprintf(stderr, "\n  session: %s\n", axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return s;
}

static int run_once(axle_session_t* s) {
  static const int64_t shape[4] = {1, 2, 4, 4};
  axle_tensor_t* x = NULL;
  if (axle_tensor_create(AXLE_DTYPE_F32, 4, shape, &x) != AXLE_OK) return 0;
  float* p = (float*)axle_tensor_data(x);
  for (int i = 0; i < 32; ++i) p[i] = (float)(i % 7) - 3.0f;
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_tensor_t* out[1] = {NULL};
  axle_status_t st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  if (st != AXLE_OK) fprintf(stderr, "\n  run: %s\n", axle_status_message());
  axle_tensor_release(out[0]);
  axle_tensor_release(x);
  return st == AXLE_OK;
}

static void test_trace_structure(void) {
  axle_session_t* s = session(AXLE_SESSION_PROFILE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_TRUE(run_once(s));
  CU_ASSERT_TRUE(run_once(s));
  char* json = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_trace_json(s, &json), AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(json);
  trace_t t;
  CU_ASSERT_TRUE(trace_parse(json, &t));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t.events);
  CU_ASSERT_TRUE(count_complete(&t) > 0);

  /* Every node of the model: an event naming it, with its op and device. */
  static const char* const device_of[4] = {"ref", "ref", "cpu", "ref"};
  CU_ASSERT_EQUAL(axle_model_node_count(g_mixed), 4);
  for (uint32_t i = 0; i < axle_model_node_count(g_mixed) && i < 4; ++i) {
    const char* name = NULL;
    const char* op = NULL;
    CU_ASSERT_EQUAL(axle_model_node_info(g_mixed, i, &name, &op), AXLE_OK);
    if (!name || !op) continue;
    int found = has_node_event(&t, name, op, device_of[i]);
    if (!found)
      fprintf(stderr, "\n  no event for node '%s' (%s) on %s\n", name, op, device_of[i]);
    CU_ASSERT_TRUE(found);
  }
  /* The reference plugin's device-level event, reported through host->trace. */
  const jval_t* dev = find_event(&t, "ref execute");
  if (!dev) fprintf(stderr, "\n  no 'ref execute' plugin event in the trace\n");
  CU_ASSERT_PTR_NOT_NULL(dev);
  if (dev) {
    const char* ph = jstr(dev, "ph");
    CU_ASSERT_TRUE(ph && strcmp(ph, "X") == 0);
    CU_ASSERT_TRUE(jcontains(dev, "ref") || track_named(&t, dev, "ref"));
  }
  /* Two runs: at least two of each (the trace accumulates). */
  size_t dev_events = 0;
  for (size_t i = 0; i < t.events->count; ++i) {
    const char* name = jstr(t.events->items[i], "name");
    if (name && strstr(name, "ref execute")) ++dev_events;
  }
  CU_ASSERT_TRUE(dev_events >= 2);
  jfree(t.doc);
  axle_free(json);
  axle_session_release(s);
}

static void test_trace_write_and_clear(void) {
  axle_session_t* s = session(AXLE_SESSION_PROFILE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_TRUE(run_once(s));
  char path[] = "/tmp/axle_trace_XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  close(fd);
  CU_ASSERT_EQUAL(axle_session_trace_write(s, path), AXLE_OK);
  FILE* f = fopen(path, "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = (char*)calloc(1, (size_t)size + 1);
  CU_ASSERT_EQUAL(fread(text, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  unlink(path);
  trace_t t;
  CU_ASSERT_TRUE(trace_parse(text, &t));
  CU_ASSERT_TRUE(count_complete(&t) > 0);
  jfree(t.doc);
  free(text);

  /* Writing where it cannot: an I/O error naming the path. */
  axle_status_t st = axle_session_trace_write(s, "/nonexistent/dir/trace.json");
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "/nonexistent/dir/trace.json"));

  /* Cleared: no complete events left, still valid JSON; new runs record again. */
  axle_session_trace_clear(s);
  char* json = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_trace_json(s, &json), AXLE_OK);
  CU_ASSERT_TRUE(trace_parse(json, &t));
  CU_ASSERT_EQUAL(count_complete(&t), 0);
  jfree(t.doc);
  axle_free(json);
  CU_ASSERT_TRUE(run_once(s));
  json = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_trace_json(s, &json), AXLE_OK);
  CU_ASSERT_TRUE(trace_parse(json, &t));
  CU_ASSERT_TRUE(count_complete(&t) > 0);
  jfree(t.doc);
  axle_free(json);
  axle_session_release(s);
}

static void test_no_profile_flag(void) {
  /* Without the flag nothing is recorded: the call either says profiling is
   * off or returns a trace without complete events. */
  axle_session_t* s = session(0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_TRUE(run_once(s));
  char* json = NULL;
  axle_status_t st = axle_session_trace_json(s, &json);
  if (st == AXLE_OK) {
    trace_t t;
    CU_ASSERT_TRUE(trace_parse(json, &t));
    CU_ASSERT_EQUAL(count_complete(&t), 0);
    jfree(t.doc);
  } else {
    CU_ASSERT_PTR_NULL(json);
    CU_ASSERT_TRUE(axle_status_message()[0] != '\0');
  }
  axle_free(json);
  axle_session_release(s);
}

static void test_json_checker_self(void) {
  /* The checker itself must reject what Perfetto would reject. */
  static const char* const good[] = {"{}", "[]", "{\"a\":[1,-2.5e3,true,null,\"x\\n\\u00e9\"]}",
                                     " {\"traceEvents\":[]} "};
  static const char* const bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.",
                                    "\"\\x\"", "{\"a\" 1}", "[1] [2]", "nul", "\"a\nb\""};
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
    jval_t* v = jparse(good[i], NULL);
    CU_ASSERT_PTR_NOT_NULL(v);
    jfree(v);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    jval_t* v = jparse(bad[i], NULL);
    if (v) fprintf(stderr, "\n  accepted bad JSON: %s\n", bad[i]);
    CU_ASSERT_PTR_NULL(v);
    jfree(v);
  }
}

static int suite_init(void) {
  if (axle_runtime_create(NULL, &g_rt) != AXLE_OK) {
    fprintf(stderr, "runtime: %s\n", axle_status_message());
    return 1;
  }
  char path[4200];
  snprintf(path, sizeof(path), "%s/mixed.onnx", g_models);
  if (axle_model_load_file(path, &g_mixed) != AXLE_OK) {
    fprintf(stderr, "model: %s\n", axle_status_message());
    return 1;
  }
  return 0;
}

static int suite_cleanup(void) {
  axle_model_release(g_mixed);
  axle_runtime_release(g_rt);
  return 0;
}

int main(void) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  if (!src || !getenv("AXLE_PLUGIN_PATH")) {
    fprintf(stderr, "test_profiling: AXLE_SOURCE_DIR and AXLE_PLUGIN_PATH must be set (ctest does)\n");
    return 1;
  }
  snprintf(g_models, sizeof(g_models), "%s/tests/models", src);
  unsetenv("AXLE_REF_DELAY_MS");
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("profiling", suite_init, suite_cleanup);
  if (!s) return 1;
  CU_add_test(s, "the JSON checker rejects bad JSON", test_json_checker_self);
  CU_add_test(s, "trace structure, node and device events", test_trace_structure);
  CU_add_test(s, "trace_write and trace_clear", test_trace_write_and_clear);
  CU_add_test(s, "no events without the profile flag", test_no_profile_flag);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  /* A suite whose init failed runs nothing: count that as failure too. */
  const CU_pRunSummary sum = CU_get_run_summary();
  unsigned inactive = sum ? sum->nSuitesFailed : 0;
  CU_cleanup_registry();
  return (failures || inactive) ? 1 : 0;
}
