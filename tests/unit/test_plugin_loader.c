/*
 * Plugin loading through the public API: every deliberately broken plugin in
 * tests/fake-plugins is refused with the right status and a message naming the
 * file and the reason, the runtime keeps working after each refusal, discovery
 * records diagnostics without failing, duplicate plugins are refused, and the
 * two fakes that do load (a device whose submit fails, a device whose compiler
 * fails) produce a clear DEVICE_ERROR and a CPU fallback respectively.
 *
 * Environment: AXLE_PLUGIN_PATH (build plugin dir), AXLE_FAKE_PLUGIN_DIR,
 * AXLE_SOURCE_DIR.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"
#include "axle/hal.h" /* only for the size fake_short_struct reports */

static char g_plugin_dir[4096];
static char g_fake_dir[4096];
static char g_models[4096];

static void plugin_file(char* buf, size_t size, const char* name) {
  snprintf(buf, size, "%s/axle_plugin_%s.so", g_plugin_dir, name);
}
static void fake_file(char* buf, size_t size, const char* name) {
  snprintf(buf, size, "%s/axle_plugin_%s.so", g_fake_dir, name);
}

/* 1 when needle occurs in msg outside the occurrences of path: checks that
 * the reason is stated, not merely that the file name contains the word. */
static int mentions_besides(const char* msg, const char* path, const char* needle) {
  char copy[4096];
  snprintf(copy, sizeof(copy), "%s", msg);
  size_t plen = strlen(path);
  for (char* p = strstr(copy, path); p && plen; p = strstr(p + plen, path)) memset(p, ' ', plen);
  return strstr(copy, needle) != NULL;
}

/* A runtime with only the CPU plugin, loaded by path. */
static axle_runtime_t* runtime_cpu_only(void) {
  axle_runtime_options_t o = {sizeof(o), AXLE_RUNTIME_NO_DISCOVERY, NULL};
  axle_runtime_t* rt = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(&o, &rt), AXLE_OK);
  char path[4200];
  plugin_file(path, sizeof(path), "cpu");
  axle_status_t st = axle_runtime_load_plugin(rt, path);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  return rt;
}

static axle_model_t* load_model(const char* file) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/%s", g_models, file);
  axle_model_t* m = NULL;
  axle_status_t st = axle_model_load_file(path, &m);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_OK);
  return m;
}

static axle_session_t* make_session(axle_runtime_t* rt, axle_model_t* m, const char* dev0,
                                    const char* dev1, uint32_t flags, axle_status_t* out_st) {
  const char* devs[2] = {dev0, dev1};
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = flags;
  o.devices = devs;
  o.device_count = dev1 ? 2 : 1;
  axle_session_t* s = NULL;
  *out_st = axle_session_create(rt, m, &o, &s);
  return s;
}

/* add.onnx on the CPU, result checked: "the runtime still works". */
static int cpu_still_works(axle_runtime_t* rt) {
  axle_model_t* m = load_model("add.onnx");
  if (!m) return 0;
  axle_status_t st;
  axle_session_t* s = make_session(rt, m, "cpu", NULL, 0, &st);
  int ok = st == AXLE_OK;
  if (ok) {
    static const int64_t shape[2] = {1, 1000};
    axle_tensor_t *a = NULL, *b = NULL;
    axle_tensor_create(AXLE_DTYPE_F32, 2, shape, &a);
    axle_tensor_create(AXLE_DTYPE_F32, 2, shape, &b);
    float* pa = (float*)axle_tensor_data(a);
    float* pb = (float*)axle_tensor_data(b);
    for (int i = 0; i < 1000; ++i) {
      pa[i] = (float)i * 0.5f;
      pb[i] = 3.0f - (float)i;
    }
    const char* names[2] = {"a", "b"};
    axle_tensor_t* in[2] = {a, b};
    axle_tensor_t* out[1] = {NULL};
    ok = axle_session_run(s, NULL, names, in, 2, NULL, out, 1) == AXLE_OK && out[0];
    if (ok) {
      const float* pc = (const float*)axle_tensor_data(out[0]);
      for (int i = 0; i < 1000; ++i)
        if (!(pc[i] == pa[i] + pb[i])) ok = 0;
    }
    axle_tensor_release(out[0]);
    axle_tensor_release(a);
    axle_tensor_release(b);
  } else {
    fprintf(stderr, "\n  cpu session: %s\n", axle_status_message());
  }
  axle_session_release(s);
  axle_model_release(m);
  return ok;
}

/* ------------------------------------------------------------------------ */

typedef struct {
  const char* file;
  axle_status_t status;
  const char* reason;     /* must appear in the message besides the path */
} fake_case_t;

static void test_fakes_refused(void) {
  char short_size[32];
  snprintf(short_size, sizeof(short_size), "%zu", offsetof(axle_hal_plugin_t, device_count));
  const fake_case_t cases[] = {
      {"fake_wrong_abi", AXLE_STATUS_ABI_MISMATCH, "99"},
      {"fake_no_entry", AXLE_STATUS_ABI_MISMATCH, AXLE_HAL_ENTRY_NAME},
      {"fake_short_struct", AXLE_STATUS_ABI_MISMATCH, short_size},
      {"fake_init_fails", AXLE_STATUS_DEVICE_ERROR, "firmware image 'fake.bin' not found"},
      {"fake_null_entry", AXLE_STATUS_ABI_MISMATCH, "version"},
      {"fake_bad_name", AXLE_STATUS_ABI_MISMATCH, "name"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    axle_runtime_t* rt = runtime_cpu_only();
    uint32_t plugins = axle_runtime_plugin_count(rt);
    uint32_t devices = axle_runtime_device_count(rt);
    char path[4200];
    fake_file(path, sizeof(path), cases[i].file);
    axle_status_t st = axle_runtime_load_plugin(rt, path);
    const char* msg = axle_status_message();
    fprintf(stderr, "\n  %s -> %s: %s", cases[i].file, axle_status_string(st), msg);
    CU_ASSERT_EQUAL(st, cases[i].status);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, path));
    CU_ASSERT_TRUE(mentions_besides(msg, path, cases[i].reason));
    /* Refused means not half-loaded. */
    CU_ASSERT_EQUAL(axle_runtime_plugin_count(rt), plugins);
    CU_ASSERT_EQUAL(axle_runtime_device_count(rt), devices);
    CU_ASSERT_TRUE(cpu_still_works(rt));
    axle_runtime_release(rt);
  }
  fprintf(stderr, "\n");
}

static void test_bad_paths(void) {
  axle_runtime_t* rt = runtime_cpu_only();
  const char* missing = "/nonexistent/dir/axle_plugin_nothing.so";
  axle_status_t st = axle_runtime_load_plugin(rt, missing);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), missing));
  /* A file that exists but is not a shared library. */
  char model[4200];
  snprintf(model, sizeof(model), "%s/add.onnx", g_models);
  st = axle_runtime_load_plugin(rt, model);
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), model));
  CU_ASSERT_EQUAL(axle_runtime_load_plugin(rt, NULL), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_runtime_load_plugin(rt, ""), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_runtime_load_plugin(NULL, missing), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_runtime_plugin_count(rt), 1);
  CU_ASSERT_TRUE(cpu_still_works(rt));
  axle_runtime_release(rt);
}

static int has_device(axle_runtime_t* rt, const char* name) {
  uint32_t idx;
  return axle_runtime_device_find(rt, name, &idx) == AXLE_OK;
}

static void check_discovery(axle_runtime_t* rt) {
  uint32_t n = axle_runtime_diagnostic_count(rt);
  CU_ASSERT_TRUE(n >= 6);
  static const char* const refused[] = {"fake_wrong_abi", "fake_no_entry", "fake_short_struct",
                                        "fake_init_fails", "fake_null_entry", "fake_bad_name"};
  for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); ++k) {
    int found = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const char* d = axle_runtime_diagnostic(rt, i);
      CU_ASSERT_PTR_NOT_NULL(d);
      if (d && strstr(d, refused[k])) found = 1;
    }
    if (!found) fprintf(stderr, "\n  no diagnostic names %s\n", refused[k]);
    CU_ASSERT_TRUE(found);
  }
  CU_ASSERT_PTR_NULL(axle_runtime_diagnostic(rt, n));
  /* The good plugins, and the fakes that are well-formed, are loaded. */
  CU_ASSERT_TRUE(has_device(rt, "cpu"));
  CU_ASSERT_TRUE(has_device(rt, "ref"));
  CU_ASSERT_TRUE(has_device(rt, "fakefail"));
  CU_ASSERT_TRUE(has_device(rt, "fakecomp"));
  int saw_reference = 0;
  for (uint32_t i = 0; i < axle_runtime_plugin_count(rt); ++i) {
    axle_plugin_info_t info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    CU_ASSERT_EQUAL(axle_runtime_plugin_info(rt, i, &info), AXLE_OK);
    CU_ASSERT_PTR_NOT_NULL(info.name);
    CU_ASSERT_PTR_NOT_NULL(info.path);
    CU_ASSERT_EQUAL(info.abi_version, 1);
    if (info.name && strcmp(info.name, "reference") == 0) {
      saw_reference = 1;
      CU_ASSERT_TRUE(info.features & AXLE_HAL_FEATURE_ASYNC);
      CU_ASSERT_TRUE(info.features & AXLE_HAL_FEATURE_PROFILING);
      CU_ASSERT_TRUE(info.path && strstr(info.path, "axle_plugin_reference") != NULL);
    }
  }
  CU_ASSERT_TRUE(saw_reference);
  CU_ASSERT_TRUE(cpu_still_works(rt));
}

static void test_discovery_diagnostics(void) {
  char search[8400];
  snprintf(search, sizeof(search), "%s:%s", g_fake_dir, g_plugin_dir);
  /* Through the options... */
  axle_runtime_options_t o = {sizeof(o), 0, search};
  axle_runtime_t* rt = NULL;
  axle_status_t st = axle_runtime_create(&o, &rt);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  check_discovery(rt);
  axle_runtime_release(rt);
  /* ...and through AXLE_PLUGIN_PATH. */
  char saved[4096];
  snprintf(saved, sizeof(saved), "%s", getenv("AXLE_PLUGIN_PATH"));
  setenv("AXLE_PLUGIN_PATH", search, 1);
  rt = NULL;
  st = axle_runtime_create(NULL, &rt);
  setenv("AXLE_PLUGIN_PATH", saved, 1);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  check_discovery(rt);
  axle_runtime_release(rt);
  /* A directory that does not exist on the path is not an error either. */
  snprintf(search, sizeof(search), "/nonexistent/axle/plugins:%s", g_plugin_dir);
  axle_runtime_options_t o2 = {sizeof(o2), 0, search};
  rt = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(&o2, &rt), AXLE_OK);
  CU_ASSERT_TRUE(has_device(rt, "cpu"));
  axle_runtime_release(rt);
}

static void test_duplicate_plugin(void) {
  axle_runtime_t* rt = runtime_cpu_only();
  char path[4200];
  plugin_file(path, sizeof(path), "reference");
  CU_ASSERT_EQUAL(axle_runtime_load_plugin(rt, path), AXLE_OK);
  uint32_t plugins = axle_runtime_plugin_count(rt);
  uint32_t devices = axle_runtime_device_count(rt);
  CU_ASSERT_EQUAL(plugins, 2);
  axle_status_t st = axle_runtime_load_plugin(rt, path);
  fprintf(stderr, "\n  second load -> %s: %s\n", axle_status_string(st), axle_status_message());
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "reference"));
  CU_ASSERT_EQUAL(axle_runtime_plugin_count(rt), plugins);
  CU_ASSERT_EQUAL(axle_runtime_device_count(rt), devices);
  CU_ASSERT_TRUE(cpu_still_works(rt));
  axle_runtime_release(rt);
  /* Discovery already loaded cpu: loading it by path again is a duplicate. */
  rt = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  plugins = axle_runtime_plugin_count(rt);
  plugin_file(path, sizeof(path), "cpu");
  CU_ASSERT_NOT_EQUAL(axle_runtime_load_plugin(rt, path), AXLE_OK);
  CU_ASSERT_EQUAL(axle_runtime_plugin_count(rt), plugins);
  axle_runtime_release(rt);
}

static void test_submit_fails(void) {
  axle_runtime_t* rt = runtime_cpu_only();
  char path[4200];
  fake_file(path, sizeof(path), "fake_submit_fails");
  axle_status_t st = axle_runtime_load_plugin(rt, path);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  axle_session_t* s = make_session(rt, m, "fakefail", "cpu", 0, &st);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  char* report = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, AXLE_REPORT_TEXT, &report), AXLE_OK);
  if (report) CU_ASSERT_PTR_NOT_NULL(strstr(report, "fakefail"));
  axle_free(report);

  static const int64_t shape[2] = {1, 1000};
  axle_tensor_t* x = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 2, shape, &x), AXLE_OK);
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_tensor_t* out[1] = {NULL};
  st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  fprintf(stderr, "\n  run -> %s: %s\n", axle_status_string(st), axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_STATUS_DEVICE_ERROR);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "command queue hung"));
  CU_ASSERT_PTR_NULL(out[0]);
  /* Asynchronously: the error arrives through submit or through the event. */
  axle_event_t* ev = NULL;
  st = axle_session_submit(s, NULL, names, in, 1, NULL, 1, &ev);
  if (st == AXLE_OK) {
    CU_ASSERT_EQUAL(axle_event_wait(ev, 20000), AXLE_STATUS_DEVICE_ERROR);
    CU_ASSERT_EQUAL(axle_event_query(ev), AXLE_STATUS_DEVICE_ERROR);
  } else {
    CU_ASSERT_EQUAL(st, AXLE_STATUS_DEVICE_ERROR);
    CU_ASSERT_PTR_NULL(ev);
  }
  axle_event_release(ev);
  /* Repeated failures do not wedge the session or the runtime. */
  st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_DEVICE_ERROR);
  CU_ASSERT_TRUE(cpu_still_works(rt));
  axle_tensor_release(x);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_cannot_compile(void) {
  axle_runtime_t* rt = runtime_cpu_only();
  char path[4200];
  fake_file(path, sizeof(path), "fake_cannot_compile");
  axle_status_t st = axle_runtime_load_plugin(rt, path);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  axle_model_t* m = load_model("relu_chain.onnx");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);

  /* Not strict: the Relu nodes the device claimed fall back to the CPU, and
   * the report says why. */
  axle_session_t* s = make_session(rt, m, "fakecomp", "cpu", 0, &st);
  if (st != AXLE_OK) fprintf(stderr, "\n  %s\n", axle_status_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  char* report = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, AXLE_REPORT_TEXT, &report), AXLE_OK);
  if (report) {
    CU_ASSERT_PTR_NOT_NULL(strstr(report, "fakecomp"));
    CU_ASSERT_PTR_NOT_NULL(strstr(report, "out of tiles"));
  }
  axle_free(report);
  axle_session_t* cpu = make_session(rt, m, "cpu", NULL, 0, &st);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  static const int64_t shape[2] = {1, 1000};
  axle_tensor_t* x = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 2, shape, &x), AXLE_OK);
  float* px = (float*)axle_tensor_data(x);
  for (int i = 0; i < 1000; ++i) px[i] = (float)(i % 17) - 8.0f;
  const char* names[1] = {"x"};
  axle_tensor_t* in[1] = {x};
  axle_tensor_t* y1[1] = {NULL};
  axle_tensor_t* y2[1] = {NULL};
  CU_ASSERT_EQUAL(axle_session_run(s, NULL, names, in, 1, NULL, y1, 1), AXLE_OK);
  CU_ASSERT_EQUAL(axle_session_run(cpu, NULL, names, in, 1, NULL, y2, 1), AXLE_OK);
  if (y1[0] && y2[0])
    CU_ASSERT_EQUAL(memcmp(axle_tensor_data(y1[0]), axle_tensor_data(y2[0]), 4000), 0);
  axle_tensor_release(y1[0]);
  axle_tensor_release(y2[0]);
  axle_session_release(cpu);
  axle_session_release(s);

  /* Strict: no fallback, so the compile failure is the session's failure.
   * cpu is listed (it takes Mul and Add by preference, which strict allows);
   * only the Relu nodes depend on fakecomp's compiler. */
  s = make_session(rt, m, "fakecomp", "cpu", AXLE_SESSION_STRICT, &st);
  fprintf(stderr, "\n  strict -> %s: %s\n", axle_status_string(st), axle_status_message());
  CU_ASSERT_EQUAL(st, AXLE_STATUS_UNSUPPORTED);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "fakecomp"));
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "out of tiles"));
  axle_session_release(s);
  axle_tensor_release(x);
  axle_model_release(m);
  axle_runtime_release(rt);
}

/* ------------------------------------------------------------------------ */

int main(void) {
  const char* plugins = getenv("AXLE_PLUGIN_PATH");
  const char* fakes = getenv("AXLE_FAKE_PLUGIN_DIR");
  const char* src = getenv("AXLE_SOURCE_DIR");
  if (!plugins || !fakes || !src) {
    fprintf(stderr,
            "test_plugin_loader: AXLE_PLUGIN_PATH, AXLE_FAKE_PLUGIN_DIR and AXLE_SOURCE_DIR must "
            "be set (ctest does)\n");
    return 1;
  }
  /* The first directory of the search path is the build's plugin dir. */
  snprintf(g_plugin_dir, sizeof(g_plugin_dir), "%s", plugins);
  char* colon = strchr(g_plugin_dir, ':');
  if (colon) *colon = '\0';
  snprintf(g_fake_dir, sizeof(g_fake_dir), "%s", fakes);
  snprintf(g_models, sizeof(g_models), "%s/tests/models", src);

  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("plugin_loader", NULL, NULL);
  if (!s) return 1;
  CU_add_test(s, "each broken plugin is refused, runtime keeps working", test_fakes_refused);
  CU_add_test(s, "missing file, not a library, NULL path", test_bad_paths);
  CU_add_test(s, "discovery records diagnostics and loads the good plugins",
              test_discovery_diagnostics);
  CU_add_test(s, "duplicate plugin name", test_duplicate_plugin);
  CU_add_test(s, "submit failure surfaces as DEVICE_ERROR", test_submit_fails);
  CU_add_test(s, "compile failure falls back, strict fails", test_cannot_compile);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
