/*
 * Sessions through the public API only: synchronous and asynchronous runs on
 * the CPU and on the reference device "ref", input validation, strict
 * placement, events (wait, query, fd, cancel, timeouts), concurrent runs of
 * one session and a leak soak (meaningful in the ASan build).
 *
 * Timing tests use the reference plugin's AXLE_REF_DELAY_MS (each step
 * sleeps that long), so "still running" is a certainty, not a race.
 *
 * Environment: AXLE_PLUGIN_PATH (build plugin dir), AXLE_SOURCE_DIR.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle/axle.h"

#define REF_DELAY_MS "100"  /* relu_chain has 5 nodes: a delayed run takes ~500 ms */

static char g_models[4096];

static const char* model_path(const char* file, char* buf, size_t size) {
  snprintf(buf, size, "%s/%s", g_models, file);
  return buf;
}

static axle_model_t* load_model(const char* file) {
  char path[4200];
  axle_model_t* m = NULL;
  axle_status_t st = axle_model_load_file(model_path(file, path, sizeof(path)), &m);
  if (st != AXLE_OK) fprintf(stderr, "\n  load %s: %s\n", path, axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return m;
}

/* A runtime with discovery on AXLE_PLUGIN_PATH: cpu + reference. */
static axle_runtime_t* runtime_default(void) {
  axle_runtime_t* rt = NULL;
  axle_status_t st = axle_runtime_create(NULL, &rt);
  if (st != AXLE_OK) fprintf(stderr, "\n  runtime: %s\n", axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return rt;
}

/* AXLE_REF_DELAY_MS is read when the reference device is opened, which may be
 * at runtime or at session creation: keep it set until delayed_end(). */
static axle_runtime_t* delayed_begin(void) {
  setenv("AXLE_REF_DELAY_MS", REF_DELAY_MS, 1);
  return runtime_default();
}
static void delayed_end(void) { unsetenv("AXLE_REF_DELAY_MS"); }

static axle_session_t* session_on(axle_runtime_t* rt, axle_model_t* m, const char* dev0,
                                  const char* dev1, uint32_t flags, axle_status_t* out_st) {
  const char* devs[2] = {dev0, dev1};
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = flags;
  o.devices = devs;
  o.device_count = dev1 ? 2 : 1;
  axle_session_t* s = NULL;
  axle_status_t st = axle_session_create(rt, m, &o, &s);
  if (out_st) *out_st = st;
  return s;
}

static axle_session_t* session_ok(axle_runtime_t* rt, axle_model_t* m, const char* dev0,
                                  const char* dev1, uint32_t flags) {
  axle_status_t st;
  axle_session_t* s = session_on(rt, m, dev0, dev1, flags, &st);
  if (st != AXLE_OK) fprintf(stderr, "\n  session on %s%s%s: %s\n", dev0, dev1 ? "," : "",
                             dev1 ? dev1 : "", axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return s;
}

static float lcg_float(uint32_t* x) {
  *x = *x * 1664525u + 1013904223u;
  return ((float)(*x >> 8) / 16777216.0f) * 8.0f - 4.0f; /* [-4, 4) */
}

static axle_tensor_t* tensor_f32(uint32_t rank, const int64_t* shape, uint32_t seed) {
  axle_tensor_t* t = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, rank, shape, &t), AXLE_OK);
  float* p = (float*)axle_tensor_data(t);
  uint32_t x = seed * 2654435761u + 1u;
  for (int64_t i = 0; i < axle_tensor_element_count(t); ++i) p[i] = lcg_float(&x);
  return t;
}

static const int64_t k_add_shape[2] = {1, 1000};
static const int64_t k_mixed_shape[4] = {1, 2, 4, 4};

/* Runs add.onnx on s and checks c == a + b exactly. Thread-safe (no CUnit):
 * returns 1 when correct. */
static int add_run_check(axle_session_t* s, uint32_t seed, axle_status_t* out_st) {
  axle_tensor_t* a = NULL;
  axle_tensor_t* b = NULL;
  axle_tensor_create(AXLE_DTYPE_F32, 2, k_add_shape, &a);
  axle_tensor_create(AXLE_DTYPE_F32, 2, k_add_shape, &b);
  if (!a || !b) {
    axle_tensor_release(a);
    axle_tensor_release(b);
    return 0;
  }
  float* pa = (float*)axle_tensor_data(a);
  float* pb = (float*)axle_tensor_data(b);
  uint32_t x = seed * 2654435761u + 7u;
  for (int i = 0; i < 1000; ++i) {
    pa[i] = lcg_float(&x);
    pb[i] = lcg_float(&x);
  }
  const char* names[2] = {"a", "b"};
  axle_tensor_t* in[2] = {a, b};
  axle_tensor_t* out[1] = {NULL};
  axle_status_t st = axle_session_run(s, NULL, names, in, 2, NULL, out, 1);
  if (out_st) *out_st = st;
  int ok = st == AXLE_OK && out[0] && axle_tensor_dtype(out[0]) == AXLE_DTYPE_F32 &&
           axle_tensor_element_count(out[0]) == 1000;
  if (ok) {
    const float* pc = (const float*)axle_tensor_data(out[0]);
    for (int i = 0; i < 1000; ++i)
      if (!(pc[i] == pa[i] + pb[i])) ok = 0;
  }
  axle_tensor_release(out[0]);
  axle_tensor_release(a);
  axle_tensor_release(b);
  return ok;
}

/* Runs a one-input model ("x") and returns its only output (caller releases). */
static axle_tensor_t* run_x(axle_session_t* s, axle_tensor_t* x, axle_status_t* out_st) {
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_tensor_t* out[1] = {NULL};
  axle_status_t st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  if (out_st) *out_st = st;
  return out[0];
}

static int same_bits(axle_tensor_t* a, axle_tensor_t* b) {
  if (!a || !b) return 0;
  if (axle_tensor_byte_size(a) != axle_tensor_byte_size(b)) return 0;
  return memcmp(axle_tensor_data(a), axle_tensor_data(b), axle_tensor_byte_size(a)) == 0;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------------ */

static void test_devices_present(void) {
  axle_runtime_t* rt = runtime_default();
  CU_ASSERT_PTR_NOT_NULL_FATAL(rt);
  uint32_t idx = 99;
  CU_ASSERT_EQUAL(axle_runtime_device_find(rt, "cpu", &idx), AXLE_OK);
  CU_ASSERT_EQUAL(axle_runtime_device_find(rt, "ref", &idx), AXLE_OK);
  axle_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CU_ASSERT_EQUAL(axle_runtime_device_info(rt, idx, &info), AXLE_OK);
  CU_ASSERT_STRING_EQUAL(info.name, "ref");
  CU_ASSERT_STRING_EQUAL(info.plugin, "reference");
  CU_ASSERT_EQUAL(info.kind, AXLE_DEVICE_OTHER);
  CU_ASSERT_EQUAL(info.emulated, 1);
  CU_ASSERT_TRUE(info.dtype_mask & (1ull << AXLE_DTYPE_F32));
  axle_runtime_release(rt);
}

static void test_run_cpu(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(rt);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "cpu", NULL, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(axle_session_input_count(s), 2);
  CU_ASSERT_EQUAL(axle_session_output_count(s), 1);
  axle_tensor_info_t ti;
  memset(&ti, 0, sizeof(ti));
  ti.struct_size = sizeof(ti);
  CU_ASSERT_EQUAL(axle_session_output_info(s, 0, &ti), AXLE_OK);
  CU_ASSERT_STRING_EQUAL(ti.name, "c");
  CU_ASSERT_EQUAL(ti.rank, 2);
  CU_ASSERT_EQUAL(ti.shape[1], 1000);
  for (uint32_t i = 0; i < 3; ++i) CU_ASSERT_TRUE(add_run_check(s, i, NULL));
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_run_ref(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(rt);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  /* Strict: the node must really run on ref, not fall back. */
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  for (uint32_t i = 0; i < 3; ++i) CU_ASSERT_TRUE(add_run_check(s, 10 + i, NULL));
  char* report = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, AXLE_REPORT_TEXT, &report), AXLE_OK);
  if (report) {
    CU_ASSERT_PTR_NOT_NULL(strstr(report, "add0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(report, "ref"));
  }
  axle_free(report);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_ref_matches_cpu(void) {
  /* relu_chain runs wholly on ref (constants included), mixed splits across
   * ref and cpu: both must equal the CPU-only result bit for bit (Add, Mul
   * and Relu are exact in IEEE float32). */
  axle_runtime_t* rt = runtime_default();
  CU_ASSERT_PTR_NOT_NULL_FATAL(rt);
  const char* files[2] = {"relu_chain.onnx", "mixed.onnx"};
  for (int f = 0; f < 2; ++f) {
    axle_model_t* m = load_model(files[f]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    axle_session_t* cpu = session_ok(rt, m, "cpu", NULL, 0);
    axle_session_t* ref = session_ok(rt, m, "ref", "cpu", f == 0 ? AXLE_SESSION_STRICT : 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    axle_session_stats_t stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    CU_ASSERT_EQUAL(axle_session_stats(ref, &stats), AXLE_OK);
    /* mixed: ref [Add, Relu] -> cpu [Conv] -> ref [Mul]. */
    if (f == 1) CU_ASSERT_TRUE(stats.partition_count >= 3);
    if (f == 0) CU_ASSERT_EQUAL(stats.partition_count, 1);
    char* report = NULL;
    CU_ASSERT_EQUAL(axle_session_placement_report(ref, AXLE_REPORT_TEXT, &report), AXLE_OK);
    if (report && f == 1) {
      CU_ASSERT_PTR_NOT_NULL(strstr(report, "conv"));
      CU_ASSERT_PTR_NOT_NULL(strstr(report, "cpu"));
      CU_ASSERT_PTR_NOT_NULL(strstr(report, "ref"));
      /* Why Conv is not on ref: the plugin's reason. */
      CU_ASSERT_PTR_NOT_NULL(strstr(report, "op not supported"));
    }
    axle_free(report);
    for (uint32_t seed = 0; seed < 3; ++seed) {
      axle_tensor_t* x = f == 0 ? tensor_f32(2, k_add_shape, seed) : tensor_f32(4, k_mixed_shape, seed);
      axle_status_t st1, st2;
      axle_tensor_t* y1 = run_x(cpu, x, &st1);
      axle_tensor_t* y2 = run_x(ref, x, &st2);
      CU_ASSERT_EQUAL(st1, AXLE_OK);
      CU_ASSERT_EQUAL(st2, AXLE_OK);
      if (st2 != AXLE_OK) fprintf(stderr, "\n  %s on ref: %s\n", files[f], axle_status_message());
      CU_ASSERT_TRUE(same_bits(y1, y2));
      axle_tensor_release(y1);
      axle_tensor_release(y2);
      axle_tensor_release(x);
    }
    axle_session_release(ref);
    axle_session_release(cpu);
    axle_model_release(m);
  }
  axle_runtime_release(rt);
}

static void test_output_in_place(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* a = tensor_f32(2, k_add_shape, 1);
  axle_tensor_t* b = tensor_f32(2, k_add_shape, 2);
  axle_tensor_t* c = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 2, k_add_shape, &c), AXLE_OK);
  axle_tensor_t* keep = c;
  const char* names[2] = {"a", "b"};
  axle_tensor_t* in[2] = {a, b};
  const char* out_names[1] = {"c"};
  axle_tensor_t* out[1] = {c};
  CU_ASSERT_EQUAL(axle_session_run(s, NULL, names, in, 2, out_names, out, 1), AXLE_OK);
  CU_ASSERT_PTR_EQUAL(out[0], keep); /* written in place, not replaced */
  const float* pa = (const float*)axle_tensor_data(a);
  const float* pb = (const float*)axle_tensor_data(b);
  const float* pc = (const float*)axle_tensor_data(c);
  int ok = 1;
  for (int i = 0; i < 1000; ++i)
    if (!(pc[i] == pa[i] + pb[i])) ok = 0;
  CU_ASSERT_TRUE(ok);
  /* A preallocated output of the wrong shape is refused. */
  static const int64_t wrong[2] = {1, 999};
  axle_tensor_t* bad = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 2, wrong, &bad), AXLE_OK);
  out[0] = bad;
  axle_status_t st = axle_session_run(s, NULL, names, in, 2, out_names, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "c"));
  axle_tensor_release(bad);
  /* An output name the model does not have. */
  const char* no_such[1] = {"nope"};
  out[0] = NULL;
  st = axle_session_run(s, NULL, names, in, 2, no_such, out, 1);
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "nope"));
  CU_ASSERT_PTR_NULL(out[0]);
  axle_tensor_release(c);
  axle_tensor_release(a);
  axle_tensor_release(b);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_bad_inputs(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "cpu", NULL, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* a = tensor_f32(2, k_add_shape, 1);
  axle_tensor_t* b = tensor_f32(2, k_add_shape, 2);
  axle_tensor_t* out[1] = {NULL};
  axle_status_t st;

  /* Wrong name. */
  const char* wrong_names[2] = {"a", "zzz_not_an_input"};
  axle_tensor_t* in[2] = {a, b};
  st = axle_session_run(s, NULL, wrong_names, in, 2, NULL, out, 1);
  CU_ASSERT_TRUE(st == AXLE_STATUS_INVALID_ARGUMENT || st == AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "zzz_not_an_input"));
  CU_ASSERT_PTR_NULL(out[0]);

  /* Wrong shape. */
  static const int64_t small[2] = {1, 999};
  axle_tensor_t* a_small = tensor_f32(2, small, 3);
  const char* names[2] = {"a", "b"};
  in[0] = a_small;
  st = axle_session_run(s, NULL, names, in, 2, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "999")); /* says what it got */
  CU_ASSERT_PTR_NULL(out[0]);

  /* Wrong dtype. */
  axle_tensor_t* a_int = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_I32, 2, k_add_shape, &a_int), AXLE_OK);
  in[0] = a_int;
  st = axle_session_run(s, NULL, names, in, 2, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "int32"));
  CU_ASSERT_PTR_NULL(out[0]);

  /* Missing input. */
  in[0] = a;
  st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "b"));
  CU_ASSERT_PTR_NULL(out[0]);

  /* The same input twice. */
  const char* twice[2] = {"a", "a"};
  st = axle_session_run(s, NULL, twice, in, 2, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(out[0]);

  /* NULL tensor, wrong output count. */
  axle_tensor_t* nulls[2] = {a, NULL};
  CU_ASSERT_EQUAL(axle_session_run(s, NULL, names, nulls, 2, NULL, out, 1), AXLE_STATUS_INVALID_ARGUMENT);
  in[1] = b;
  axle_tensor_t* out2[2] = {NULL, NULL};
  CU_ASSERT_EQUAL(axle_session_run(s, NULL, names, in, 2, NULL, out2, 2), AXLE_STATUS_INVALID_ARGUMENT);

  /* After all that, the session still works. */
  CU_ASSERT_TRUE(add_run_check(s, 5, NULL));
  axle_tensor_release(a_int);
  axle_tensor_release(a_small);
  axle_tensor_release(a);
  axle_tensor_release(b);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_unknown_device(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_status_t st;
  axle_session_t* s = session_on(rt, m, "warp9", NULL, 0, &st);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NULL(s);
  const char* msg = axle_status_message();
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "warp9"));
  /* The message lists what exists. */
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "cpu"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "ref"));
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_strict_unsupported(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("mixed.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_status_t st;
  axle_session_t* s = session_on(rt, m, "ref", NULL, AXLE_SESSION_STRICT, &st);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_UNSUPPORTED);
  CU_ASSERT_PTR_NULL(s);
  const char* msg = axle_status_message();
  /* Names the node that could not be placed, and not the ones that could. */
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "conv"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Conv"));
  CU_ASSERT_PTR_NULL(strstr(msg, "add_bias"));
  axle_session_release(s);
  /* Same model, no strict: falls back and works. */
  s = session_ok(rt, m, "ref", NULL, 0);
  CU_ASSERT_PTR_NOT_NULL(s);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_unsupported_op_model(void) {
  /* An op nobody implements: either the model or the session refuses it,
   * naming the op. */
  char path[4200];
  axle_model_t* m = NULL;
  axle_status_t st = axle_model_load_file(model_path("unsupported_op.onnx", path, sizeof(path)), &m);
  if (st != AXLE_OK) {
    CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "AxleNoSuchOp"));
    return;
  }
  axle_runtime_t* rt = runtime_default();
  axle_session_t* s = session_on(rt, m, "ref", "cpu", 0, &st);
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "AxleNoSuchOp"));
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "mystery"));
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_bad_models(void) {
  const char* files[3] = {"bad_truncated.onnx", "bad_garbage.onnx", "bad_dangling.onnx"};
  for (int i = 0; i < 3; ++i) {
    char path[4200];
    axle_model_t* m = (axle_model_t*)(uintptr_t)1; /* out-params are cleared first */
    axle_status_t st = axle_model_load_file(model_path(files[i], path, sizeof(path)), &m);
    CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_MODEL);
    CU_ASSERT_PTR_NULL(m);
    CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), files[i]));
    if (i == 2) CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "ghost"));
    axle_model_release(m);
  }
  axle_model_t* m = NULL;
  axle_status_t st = axle_model_load_file("/nonexistent/axle/model.onnx", &m);
  CU_ASSERT_TRUE(st == AXLE_STATUS_IO_ERROR || st == AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "/nonexistent/axle/model.onnx"));
  /* From memory: garbage is refused too. */
  static const unsigned char junk[7] = {0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03};
  st = axle_model_load_memory(junk, sizeof(junk), &m);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NULL(m);
}

/* ------------------------------------------------------------------------ */
/* Asynchronous runs.                                                        */
/* ------------------------------------------------------------------------ */

static axle_event_t* submit_x(axle_session_t* s, axle_tensor_t* x, const axle_run_options_t* ro) {
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_event_t* ev = NULL;
  axle_status_t st = axle_session_submit(s, ro, names, in, 1, NULL, 1, &ev);
  if (st != AXLE_OK) fprintf(stderr, "\n  submit: %s\n", axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return ev;
}

static void test_submit_wait(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* m = load_model("add.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* a = tensor_f32(2, k_add_shape, 21);
  axle_tensor_t* b = tensor_f32(2, k_add_shape, 22);
  const char* names[2] = {"a", "b"};
  axle_tensor_t* in[2] = {a, b};
  axle_event_t* ev = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_submit(s, NULL, names, in, 2, NULL, 1, &ev), AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  CU_ASSERT_EQUAL(axle_event_wait(ev, -1), AXLE_OK);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_OK);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 0), AXLE_OK); /* waiting again is fine */
  axle_tensor_t* c = NULL;
  CU_ASSERT_EQUAL(axle_event_output(ev, 0, &c), AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const float* pa = (const float*)axle_tensor_data(a);
  const float* pb = (const float*)axle_tensor_data(b);
  const float* pc = (const float*)axle_tensor_data(c);
  int ok = 1;
  for (int i = 0; i < 1000; ++i)
    if (!(pc[i] == pa[i] + pb[i])) ok = 0;
  CU_ASSERT_TRUE(ok);
  axle_tensor_t* none = NULL;
  CU_ASSERT_NOT_EQUAL(axle_event_output(ev, 1, &none), AXLE_OK);
  CU_ASSERT_PTR_NULL(none);
  axle_tensor_release(c);
  axle_event_release(ev);
  /* Inputs released by the caller right after submit: the event holds them. */
  axle_tensor_t* a2 = tensor_f32(2, k_add_shape, 23);
  axle_tensor_t* b2 = tensor_f32(2, k_add_shape, 24);
  float expect0 = ((const float*)axle_tensor_data(a2))[0] + ((const float*)axle_tensor_data(b2))[0];
  axle_tensor_t* in2[2] = {a2, b2};
  CU_ASSERT_EQUAL_FATAL(axle_session_submit(s, NULL, names, in2, 2, NULL, 1, &ev), AXLE_OK);
  axle_tensor_release(a2);
  axle_tensor_release(b2);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 10000), AXLE_OK);
  c = NULL;
  CU_ASSERT_EQUAL(axle_event_output(ev, 0, &c), AXLE_OK);
  if (c) CU_ASSERT_TRUE(((const float*)axle_tensor_data(c))[0] == expect0);
  axle_tensor_release(c);
  axle_event_release(ev);
  axle_tensor_release(a);
  axle_tensor_release(b);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_pending_then_done(void) {
  axle_runtime_t* rt = delayed_begin();
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* x = tensor_f32(2, k_add_shape, 3);
  axle_event_t* ev = submit_x(s, x, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_PENDING);
  axle_tensor_t* early = NULL;
  CU_ASSERT_NOT_EQUAL(axle_event_output(ev, 0, &early), AXLE_OK); /* not done yet */
  CU_ASSERT_PTR_NULL(early);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_OK);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_OK);
  axle_tensor_t* y = NULL;
  CU_ASSERT_EQUAL(axle_event_output(ev, 0, &y), AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(y);
  axle_tensor_release(y);
  axle_event_release(ev);
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  delayed_end();
}

static void test_event_fd_poll(void) {
  axle_runtime_t* rt = delayed_begin();
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* x = tensor_f32(2, k_add_shape, 4);
  axle_event_t* ev = submit_x(s, x, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  int fd = -1;
  CU_ASSERT_EQUAL(axle_event_fd(ev, &fd), AXLE_OK);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  struct pollfd p = {fd, POLLIN, 0};
  CU_ASSERT_EQUAL(poll(&p, 1, 0), 0); /* still running: not readable */
  p.revents = 0;
  int n = poll(&p, 1, 20000);
  CU_ASSERT_EQUAL(n, 1);
  CU_ASSERT_TRUE(p.revents & POLLIN);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_OK);
  /* Stays readable (level-triggered) once complete. */
  p.revents = 0;
  CU_ASSERT_EQUAL(poll(&p, 1, 0), 1);
  int fd2 = -1;
  CU_ASSERT_EQUAL(axle_event_fd(ev, &fd2), AXLE_OK);
  CU_ASSERT_EQUAL(fd2, fd);
  axle_event_release(ev);
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  delayed_end();
}

static void test_wait_timeout_expires(void) {
  axle_runtime_t* rt = delayed_begin();
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* x = tensor_f32(2, k_add_shape, 5);
  axle_event_t* ev = submit_x(s, x, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  uint64_t t0 = now_ms();
  CU_ASSERT_EQUAL(axle_event_wait(ev, 50), AXLE_STATUS_TIMEOUT);
  uint64_t waited = now_ms() - t0;
  CU_ASSERT_TRUE(waited >= 45);
  /* The wait timing out does not end the run. */
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_PENDING);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_OK);
  axle_event_release(ev);
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  delayed_end();
}

static void test_cancel_pending(void) {
  axle_runtime_t* rt = delayed_begin();
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* x = tensor_f32(2, k_add_shape, 6);
  axle_event_t* ev = submit_x(s, x, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_PENDING);
  uint64_t t0 = now_ms();
  CU_ASSERT_EQUAL(axle_event_cancel(ev), AXLE_OK);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_STATUS_CANCELLED);
  /* Cancelled promptly, not after the whole run. */
  CU_ASSERT_TRUE(now_ms() - t0 < 450);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_CANCELLED);
  axle_tensor_t* y = NULL;
  CU_ASSERT_NOT_EQUAL(axle_event_output(ev, 0, &y), AXLE_OK);
  CU_ASSERT_PTR_NULL(y);
  /* Cancelling a finished event changes nothing. */
  axle_event_cancel(ev);
  CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_CANCELLED);
  axle_event_release(ev);
  /* Releasing a pending event cancels it and waits: must be quick and clean. */
  ev = submit_x(s, x, NULL);
  t0 = now_ms();
  axle_event_release(ev);
  CU_ASSERT_TRUE(now_ms() - t0 < 450);
  /* The session is fine afterwards. */
  ev = submit_x(s, x, NULL);
  CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_OK);
  axle_event_release(ev);
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  delayed_end();
}

static void test_run_timeout(void) {
  axle_runtime_t* rt = delayed_begin();
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = session_ok(rt, m, "ref", NULL, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* x = tensor_f32(2, k_add_shape, 7);
  axle_run_options_t ro = {sizeof(ro), 50};
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_tensor_t* out[1] = {NULL};
  /* Leave an unrelated message behind first: the timeout must replace it,
   * not report it. */
  uint32_t idx;
  CU_ASSERT_EQUAL(axle_runtime_device_find(rt, "stale_zzz", &idx), AXLE_STATUS_NOT_FOUND);
  uint64_t t0 = now_ms();
  axle_status_t st = axle_session_run(s, &ro, names, in, 1, NULL, out, 1);
  uint64_t took = now_ms() - t0;
  CU_ASSERT_EQUAL(st, AXLE_STATUS_TIMEOUT);
  CU_ASSERT_TRUE(took < 450);
  CU_ASSERT_PTR_NULL(out[0]);
  const char* msg = axle_status_message();
  if (strstr(msg, "stale_zzz")) fprintf(stderr, "\n  timeout reported a stale message: %s\n", msg);
  CU_ASSERT_PTR_NULL(strstr(msg, "stale_zzz"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "ref"));
  /* Same through submit. */
  axle_event_t* ev = submit_x(s, x, &ro);
  if (ev) CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_STATUS_TIMEOUT);
  axle_event_release(ev);
  /* A generous timeout lets it finish. */
  ro.timeout_ms = 20000;
  st = axle_session_run(s, &ro, names, in, 1, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_OK);
  axle_tensor_release(out[0]);
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  delayed_end();
}

/* ------------------------------------------------------------------------ */
/* One session, many threads.                                                */
/* ------------------------------------------------------------------------ */

#define THREADS 8
#define RUNS_PER_THREAD 25

typedef struct {
  axle_session_t* add_cpu;
  axle_session_t* add_ref;
  axle_session_t* mixed;
  axle_tensor_t* mixed_x[THREADS];
  axle_tensor_t* mixed_want[THREADS];
  int id;
  int failures;
  axle_status_t last_error;
} thread_arg_t;

static void* session_thread(void* p) {
  thread_arg_t* a = (thread_arg_t*)p;
  for (int i = 0; i < RUNS_PER_THREAD; ++i) {
    axle_status_t st = AXLE_OK;
    if (!add_run_check(a->add_cpu, (uint32_t)(a->id * 1000 + i), &st)) ++a->failures;
    if (!add_run_check(a->add_ref, (uint32_t)(a->id * 1000 + i + 500), &st)) ++a->failures;
    axle_tensor_t* y = run_x(a->mixed, a->mixed_x[a->id], &st);
    if (st != AXLE_OK || !same_bits(y, a->mixed_want[a->id])) ++a->failures;
    if (st != AXLE_OK) a->last_error = st;
    axle_tensor_release(y);
  }
  return NULL;
}

static void test_threads_share_session(void) {
  axle_runtime_t* rt = runtime_default();
  axle_model_t* add = load_model("add.onnx");
  axle_model_t* mixed = load_model("mixed.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(add);
  CU_ASSERT_PTR_NOT_NULL_FATAL(mixed);
  thread_arg_t shared;
  memset(&shared, 0, sizeof(shared));
  shared.add_cpu = session_ok(rt, add, "cpu", NULL, 0);
  shared.add_ref = session_ok(rt, add, "ref", NULL, AXLE_SESSION_STRICT);
  shared.mixed = session_ok(rt, mixed, "ref", "cpu", 0);
  axle_session_t* mixed_cpu = session_ok(rt, mixed, "cpu", NULL, 0);
  CU_ASSERT_FATAL(shared.add_cpu && shared.add_ref && shared.mixed && mixed_cpu);
  /* Expected mixed outputs, computed one at a time on the CPU. */
  for (int t = 0; t < THREADS; ++t) {
    shared.mixed_x[t] = tensor_f32(4, k_mixed_shape, 100 + (uint32_t)t);
    axle_status_t st;
    shared.mixed_want[t] = run_x(mixed_cpu, shared.mixed_x[t], &st);
    CU_ASSERT_EQUAL(st, AXLE_OK);
  }
  pthread_t th[THREADS];
  thread_arg_t args[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    args[t] = shared;
    args[t].id = t;
    pthread_create(&th[t], NULL, session_thread, &args[t]);
  }
  int failures = 0;
  for (int t = 0; t < THREADS; ++t) {
    pthread_join(th[t], NULL);
    failures += args[t].failures;
    if (args[t].failures)
      fprintf(stderr, "\n  thread %d: %d wrong or failed runs (last status %d)\n", t,
              args[t].failures, args[t].last_error);
  }
  CU_ASSERT_EQUAL(failures, 0);
  for (int t = 0; t < THREADS; ++t) {
    axle_tensor_release(shared.mixed_x[t]);
    axle_tensor_release(shared.mixed_want[t]);
  }
  axle_session_release(mixed_cpu);
  axle_session_release(shared.mixed);
  axle_session_release(shared.add_ref);
  axle_session_release(shared.add_cpu);
  axle_model_release(mixed);
  axle_model_release(add);
  axle_runtime_release(rt);
}

static void test_many_runs_no_leak(void) {
  /* A soak: LeakSanitizer (ASan build) reports anything a run leaves
   * behind when the process exits, which fails the test executable. */
  axle_runtime_t* rt = runtime_default();
  axle_model_t* add = load_model("add.onnx");
  axle_model_t* mixed = load_model("mixed.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(add);
  CU_ASSERT_PTR_NOT_NULL_FATAL(mixed);
  axle_session_t* s = session_ok(rt, add, "ref", NULL, AXLE_SESSION_STRICT);
  axle_session_t* mx = session_ok(rt, mixed, "ref", "cpu", 0);
  CU_ASSERT_FATAL(s && mx);
  int bad = 0;
  for (uint32_t i = 0; i < 300; ++i)
    if (!add_run_check(s, i, NULL)) ++bad;
  axle_tensor_t* x = tensor_f32(4, k_mixed_shape, 9);
  for (int i = 0; i < 100; ++i) {
    axle_status_t st;
    axle_tensor_release(run_x(mx, x, &st));
    if (st != AXLE_OK) ++bad;
    axle_event_t* ev = NULL;
    const char* names[1] = {"x"};
    axle_tensor_t* in[1] = {x};
    if (axle_session_submit(mx, NULL, names, in, 1, NULL, 1, &ev) != AXLE_OK) {
      ++bad;
      continue;
    }
    if (axle_event_wait(ev, 20000) != AXLE_OK) ++bad;
    axle_tensor_t* y = NULL;
    if (i % 2 == 0 && axle_event_output(ev, 0, &y) != AXLE_OK) ++bad;
    axle_tensor_release(y);
    axle_event_release(ev);
  }
  CU_ASSERT_EQUAL(bad, 0);
  axle_tensor_release(x);
  axle_session_release(mx);
  axle_session_release(s);
  /* Sessions created and dropped repeatedly. */
  for (int i = 0; i < 20; ++i) {
    axle_session_t* t = session_ok(rt, mixed, "ref", "cpu", AXLE_SESSION_PROFILE);
    axle_session_release(t);
  }
  axle_model_release(mixed);
  axle_model_release(add);
  axle_runtime_release(rt);
}

/* ------------------------------------------------------------------------ */

int main(void) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  if (!src || !getenv("AXLE_PLUGIN_PATH")) {
    fprintf(stderr, "test_session: AXLE_SOURCE_DIR and AXLE_PLUGIN_PATH must be set (ctest does)\n");
    return 1;
  }
  snprintf(g_models, sizeof(g_models), "%s/tests/models", src);
  unsetenv("AXLE_REF_DELAY_MS");
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("session", NULL, NULL);
  if (!s) return 1;
  CU_add_test(s, "cpu and ref devices present", test_devices_present);
  CU_add_test(s, "run add on cpu", test_run_cpu);
  CU_add_test(s, "run add on ref (strict)", test_run_ref);
  CU_add_test(s, "ref and ref+cpu match cpu exactly", test_ref_matches_cpu);
  CU_add_test(s, "preallocated outputs", test_output_in_place);
  CU_add_test(s, "wrong name/shape/dtype, missing input", test_bad_inputs);
  CU_add_test(s, "unknown device name", test_unknown_device);
  CU_add_test(s, "strict mode lists unplaced nodes", test_strict_unsupported);
  CU_add_test(s, "model with an unknown op", test_unsupported_op_model);
  CU_add_test(s, "bad model files", test_bad_models);
  CU_add_test(s, "submit and wait", test_submit_wait);
  CU_add_test(s, "query PENDING then done", test_pending_then_done);
  CU_add_test(s, "event fd becomes readable", test_event_fd_poll);
  CU_add_test(s, "wait timeout expires", test_wait_timeout_expires);
  CU_add_test(s, "cancel a pending run", test_cancel_pending);
  CU_add_test(s, "run timeout", test_run_timeout);
  CU_add_test(s, "threads share one session", test_threads_share_session);
  CU_add_test(s, "many runs, no leaks", test_many_runs_no_leak);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
