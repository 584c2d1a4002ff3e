/*
 * Status codes and per-thread messages through the public API: every status
 * has a distinct, meaningful name; a failing call leaves a message that says
 * what failed; messages are per thread (two threads failing at once each read
 * their own); release functions accept NULL; out-parameters are cleared.
 *
 * Environment: AXLE_PLUGIN_PATH, AXLE_SOURCE_DIR.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"

static char g_models[4096];

static void test_status_strings(void) {
  /* Each code, and a word its name must contain (matched on the lower-cased
   * name; alternatives separated by '|'). */
  static const struct {
    axle_status_t code;
    const char* word;
  } k[] = {
      {AXLE_OK, "ok"},
      {AXLE_STATUS_INVALID_ARGUMENT, "invalid"},
      {AXLE_STATUS_NOT_FOUND, "not found"},
      {AXLE_STATUS_UNSUPPORTED, "unsupported"},
      {AXLE_STATUS_OUT_OF_MEMORY, "memory"},
      {AXLE_STATUS_IO_ERROR, "i/o|io"},
      {AXLE_STATUS_INVALID_MODEL, "model"},
      {AXLE_STATUS_DEVICE_ERROR, "device"},
      {AXLE_STATUS_TIMEOUT, "time"},
      {AXLE_STATUS_CANCELLED, "cancel"},
      {AXLE_STATUS_BUSY, "busy"},
      {AXLE_STATUS_ABI_MISMATCH, "abi"},
      {AXLE_STATUS_INTERNAL, "internal"},
      {AXLE_STATUS_PENDING, "pending"},
      {AXLE_STATUS_RESOURCE_EXHAUSTED, "exhausted"},
  };
  const size_t n = sizeof(k) / sizeof(k[0]);
  /* The enum is append-only: this list must cover every value 0..n-1. */
  for (size_t i = 0; i < n; ++i) CU_ASSERT_EQUAL((size_t)k[i].code, i);
  const char* seen[32] = {0};
  for (size_t i = 0; i < n; ++i) {
    const char* s = axle_status_string(k[i].code);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_TRUE(s[0] != '\0');
    char lower[64];
    size_t j = 0;
    for (; s[j] && j < sizeof(lower) - 1; ++j)
      lower[j] = (char)((s[j] >= 'A' && s[j] <= 'Z') ? s[j] + 32 : s[j]);
    lower[j] = '\0';
    int mentions = 0;
    char words[64];
    snprintf(words, sizeof(words), "%s", k[i].word);
    for (char* w = strtok(words, "|"); w; w = strtok(NULL, "|"))
      if (strstr(lower, w)) mentions = 1;
    if (!mentions)
      fprintf(stderr, "\n  status %zu is called '%s' (expected to mention '%s')\n", i, s, k[i].word);
    CU_ASSERT_TRUE(mentions);
    CU_ASSERT_PTR_NULL(strstr(lower, "unknown"));
    for (size_t p = 0; p < i; ++p) CU_ASSERT_STRING_NOT_EQUAL(s, seen[p]);
    seen[i] = s;
    /* Constant strings: asking again gives the same text. */
    CU_ASSERT_STRING_EQUAL(axle_status_string(k[i].code), s);
  }
  /* Values outside the enum still give a string (a newer library's code). */
  const char* unknown = axle_status_string((axle_status_t)9999);
  CU_ASSERT_PTR_NOT_NULL(unknown);
  const char* negative = axle_status_string((axle_status_t)-1);
  CU_ASSERT_PTR_NOT_NULL(negative);
}

static void test_dtype_names(void) {
  CU_ASSERT_STRING_EQUAL(axle_dtype_name(AXLE_DTYPE_F32), "float32");
  CU_ASSERT_STRING_EQUAL(axle_dtype_name(AXLE_DTYPE_U8), "uint8");
  CU_ASSERT_EQUAL(axle_dtype_size(AXLE_DTYPE_F32), 4);
  CU_ASSERT_EQUAL(axle_dtype_size(AXLE_DTYPE_I64), 8);
  CU_ASSERT_EQUAL(axle_dtype_size(AXLE_DTYPE_F16), 2);
  CU_ASSERT_EQUAL(axle_dtype_size(AXLE_DTYPE_UNDEFINED), 0);
  CU_ASSERT_PTR_NOT_NULL(axle_dtype_name((axle_dtype_t)77));
}

static void test_version(void) {
  CU_ASSERT_EQUAL(axle_version_number(), AXLE_VERSION_NUMBER);
  CU_ASSERT_STRING_EQUAL(axle_version_string(), AXLE_VERSION_STRING);
}

static void* fresh_thread_message(void* out) {
  const char* m = axle_status_message();
  *(int*)out = m != NULL && m[0] == '\0';
  return NULL;
}

static void test_message_initially_empty(void) {
  /* A thread that never called Axle has an empty (not NULL) message. */
  pthread_t t;
  int empty = 0;
  pthread_create(&t, NULL, fresh_thread_message, &empty);
  pthread_join(t, NULL);
  CU_ASSERT_TRUE(empty);
}

static void test_message_for_failing_calls(void) {
  /* Model load: the file name. */
  axle_model_t* m = (axle_model_t*)(uintptr_t)1;
  axle_status_t st = axle_model_load_file("/no/such/dir/status_test_model.onnx", &m);
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_PTR_NULL(m); /* cleared before anything else */
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "status_test_model.onnx"));

  char path[4200];
  snprintf(path, sizeof(path), "%s/bad_garbage.onnx", g_models);
  st = axle_model_load_file(path, &m);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_MODEL);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "bad_garbage.onnx"));

  /* Device lookup: the name asked for and the names that exist. */
  axle_runtime_t* rt = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  uint32_t idx = 12345;
  st = axle_runtime_device_find(rt, "flux_capacitor", &idx);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "flux_capacitor"));
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "cpu"));

  /* Index out of range. */
  axle_device_info_t di;
  memset(&di, 0, sizeof(di));
  di.struct_size = sizeof(di);
  st = axle_runtime_device_info(rt, 999, &di);
  CU_ASSERT_NOT_EQUAL(st, AXLE_OK);
  CU_ASSERT_TRUE(axle_status_message()[0] != '\0');
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "999"));

  /* Tensor creation with a bad shape says which dimension. */
  axle_tensor_t* t = (axle_tensor_t*)(uintptr_t)1;
  static const int64_t bad_shape[2] = {3, -2};
  st = axle_tensor_create(AXLE_DTYPE_F32, 2, bad_shape, &t);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(t);
  /* Names the dimension by index or by value. */
  CU_ASSERT_TRUE(strstr(axle_status_message(), "-2") || strstr(axle_status_message(), "1"));
  axle_runtime_release(rt);
}

static void test_null_arguments(void) {
  /* Bad input is a status, never a crash. */
  CU_ASSERT_EQUAL(axle_runtime_create(NULL, NULL), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_TRUE(axle_status_message()[0] != '\0');
  axle_model_t* m = NULL;
  CU_ASSERT_EQUAL(axle_model_load_file(NULL, &m), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_model_load_memory(NULL, 10, &m), AXLE_STATUS_INVALID_ARGUMENT);
  axle_session_t* s = NULL;
  CU_ASSERT_EQUAL(axle_session_create(NULL, NULL, NULL, &s), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(s);
  axle_tensor_t* out[1] = {NULL};
  CU_ASSERT_EQUAL(axle_session_run(NULL, NULL, NULL, NULL, 0, NULL, out, 1),
                  AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_event_wait(NULL, 0), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_event_query(NULL), AXLE_STATUS_INVALID_ARGUMENT);
  int fd = 7;
  CU_ASSERT_EQUAL(axle_event_fd(NULL, &fd), AXLE_STATUS_INVALID_ARGUMENT);
  char* report = (char*)(uintptr_t)1;
  CU_ASSERT_EQUAL(axle_session_placement_report(NULL, AXLE_REPORT_TEXT, &report),
                  AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(report);
  /* Release functions accept NULL. */
  axle_runtime_release(NULL);
  axle_model_release(NULL);
  axle_session_release(NULL);
  axle_tensor_release(NULL);
  axle_buffer_release(NULL);
  axle_event_release(NULL);
  axle_free(NULL);
}

/* Two threads fail at the same time with different messages; each reads its
 * own afterwards. A barrier forces the interleaving fail A, fail B, read A. */
typedef struct {
  pthread_barrier_t* barrier;
  const char* path;
  char got[1024];
  axle_status_t status;
} msg_arg_t;

static void* fail_and_read(void* p) {
  msg_arg_t* a = (msg_arg_t*)p;
  axle_model_t* m = NULL;
  a->status = axle_model_load_file(a->path, &m);
  pthread_barrier_wait(a->barrier); /* both have failed */
  pthread_barrier_wait(a->barrier); /* ...and neither has read yet */
  snprintf(a->got, sizeof(a->got), "%s", axle_status_message());
  return NULL;
}

static void test_message_per_thread(void) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  msg_arg_t a = {&barrier, "/no/such/AAAA_model.onnx", "", AXLE_OK};
  msg_arg_t b = {&barrier, "/no/such/BBBB_model.onnx", "", AXLE_OK};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, fail_and_read, &a);
  pthread_create(&tb, NULL, fail_and_read, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  CU_ASSERT_NOT_EQUAL(a.status, AXLE_OK);
  CU_ASSERT_NOT_EQUAL(b.status, AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(a.got, "AAAA_model"));
  CU_ASSERT_PTR_NULL(strstr(a.got, "BBBB_model"));
  CU_ASSERT_PTR_NOT_NULL(strstr(b.got, "BBBB_model"));
  CU_ASSERT_PTR_NULL(strstr(b.got, "AAAA_model"));
  /* And the main thread's own message is untouched by either. */
  axle_model_t* m = NULL;
  axle_model_load_file("/no/such/MAIN_model.onnx", &m);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "MAIN_model"));
}

/* Many threads failing in a loop: the message never mixes two failures. */
static void* hammer(void* p) {
  long id = (long)(intptr_t)p;
  char path[64], want[64];
  snprintf(path, sizeof(path), "/no/such/thread%ld.onnx", id);
  snprintf(want, sizeof(want), "thread%ld.onnx", id);
  long bad = 0;
  for (int i = 0; i < 2000; ++i) {
    axle_model_t* m = NULL;
    axle_model_load_file(path, &m);
    if (!strstr(axle_status_message(), want)) ++bad;
  }
  return (void*)(intptr_t)bad;
}

static void test_message_hammer(void) {
  pthread_t t[8];
  for (long i = 0; i < 8; ++i) pthread_create(&t[i], NULL, hammer, (void*)(intptr_t)i);
  long bad = 0;
  for (int i = 0; i < 8; ++i) {
    void* r = NULL;
    pthread_join(t[i], &r);
    bad += (long)(intptr_t)r;
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void test_run_failure_message(void) {
  /* A failing run names the session input involved. */
  axle_runtime_t* rt = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  char path[4200];
  snprintf(path, sizeof(path), "%s/add.onnx", g_models);
  axle_model_t* m = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(path, &m), AXLE_OK);
  axle_session_t* s = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_create(rt, m, NULL, &s), AXLE_OK);
  static const int64_t shape[2] = {1, 1000};
  axle_tensor_t* a = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 2, shape, &a), AXLE_OK);
  const char* names[1] = {"a"};
  axle_tensor_t* in[1] = {a};
  axle_tensor_t* out[1] = {NULL};
  axle_status_t st = axle_session_run(s, NULL, names, in, 1, NULL, out, 1);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_INVALID_ARGUMENT);
  const char* msg = axle_status_message();
  int names_b = strstr(msg, "'b'") || strstr(msg, "\"b\"") || strstr(msg, " b ");
  if (!names_b) fprintf(stderr, "\n  message does not name input b: %s\n", msg);
  CU_ASSERT_TRUE(names_b);
  axle_tensor_release(a);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

int main(void) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  if (!src || !getenv("AXLE_PLUGIN_PATH")) {
    fprintf(stderr, "test_status: AXLE_SOURCE_DIR and AXLE_PLUGIN_PATH must be set (ctest does)\n");
    return 1;
  }
  snprintf(g_models, sizeof(g_models), "%s/tests/models", src);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("status", NULL, NULL);
  if (!s) return 1;
  CU_add_test(s, "every status has a distinct meaningful name", test_status_strings);
  CU_add_test(s, "dtype names and sizes", test_dtype_names);
  CU_add_test(s, "version macros match the library", test_version);
  CU_add_test(s, "fresh thread: empty message", test_message_initially_empty);
  CU_add_test(s, "failing calls say what failed", test_message_for_failing_calls);
  CU_add_test(s, "NULL arguments and NULL releases", test_null_arguments);
  CU_add_test(s, "two threads keep their own messages", test_message_per_thread);
  CU_add_test(s, "eight threads hammering", test_message_hammer);
  CU_add_test(s, "run failure names the input", test_run_failure_message);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
