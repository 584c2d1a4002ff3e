/* Placement: capability queries, preference order, CPU fallback, strict mode,
 * the placement report, and cross-device partitions giving the same numbers
 * as a CPU-only session. Uses tests/models/mixed.onnx (Add -> Relu -> Conv ->
 * Mul) with the reference plugin's device "ref" (Add/Mul/Relu only). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"

static axle_runtime_t* rt;
static axle_model_t* mixed;

static int setup(void) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/models/mixed.onnx", getenv("AXLE_SOURCE_DIR"));
  if (axle_runtime_create(NULL, &rt) != AXLE_OK) return 1;
  if (axle_model_load_file(path, &mixed) != AXLE_OK) return 1;
  return 0;
}

static int teardown(void) {
  axle_model_release(mixed);
  axle_runtime_release(rt);
  return 0;
}

static axle_session_t* make(const char* const* devices, uint32_t n, uint32_t flags,
                            axle_status_t* st) {
  axle_session_options_t o = {.struct_size = sizeof(o)};
  o.devices = devices;
  o.device_count = n;
  o.flags = flags;
  axle_session_t* s = NULL;
  *st = axle_session_create(rt, mixed, &o, &s);
  return s;
}

/* Runs s on a fixed input and returns the output (caller releases). */
static axle_tensor_t* run(axle_session_t* s) {
  int64_t shape[4] = {1, 2, 4, 4};
  axle_tensor_t* x = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 4, shape, &x), AXLE_OK);
  float* d = (float*)axle_tensor_data(x);
  for (int i = 0; i < 32; ++i) d[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
  const char* names[] = {"x"};
  axle_tensor_t* out = NULL;
  axle_status_t st = axle_session_run(s, NULL, names, &x, 1, NULL, &out, 1);
  CU_ASSERT_EQUAL(st, AXLE_OK);
  if (st != AXLE_OK) fprintf(stderr, "run: %s\n", axle_status_message());
  axle_tensor_release(x);
  return out;
}

/* The report in *text (the caller's variable: GCC 12 wrongly warns of a
 * dangling pointer when a helper returns a string it received through the
 * address of its own local). */
static void report(axle_session_t* s, int format, char** text) {
  *text = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, format, text), AXLE_OK);
}

/* The JSON object of node `name` in a report, as a NUL-terminated copy. */
static void node_json(const char* json, const char* name, char* out, size_t n) {
  char key[128];
  snprintf(key, sizeof(key), "{\"name\":\"%s\"", name);
  const char* at = strstr(json, key);
  out[0] = '\0';
  if (!at) return;
  const char* end = strchr(at, '}');
  size_t len = end ? (size_t)(end - at + 1) : strlen(at);
  if (len >= n) len = n - 1;
  memcpy(out, at, len);
  out[len] = '\0';
}

static void test_ref_with_fallback(void) {
  static const char* const devs[] = {"ref"};
  axle_status_t st;
  axle_session_t* s = make(devs, 1, 0, &st);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  char* json;
  report(s, AXLE_REPORT_JSON, &json);
  char node[1024];
  node_json(json, "add_bias", node, sizeof(node));
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "\"device\":\"ref\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "\"state\":\"placed\""));
  node_json(json, "conv", node, sizeof(node));
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "\"device\":\"cpu\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "\"state\":\"fallback\""));
  /* The report says why the preferred device declined. */
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "ref: "));
  node_json(json, "mul_scale", node, sizeof(node));
  CU_ASSERT_PTR_NOT_NULL(strstr(node, "\"device\":\"ref\""));
  axle_free(json);

  axle_session_stats_t stats = {.struct_size = sizeof(stats)};
  CU_ASSERT_EQUAL(axle_session_stats(s, &stats), AXLE_OK);
  CU_ASSERT_EQUAL(stats.partition_count, 3); /* ref, cpu, ref */
  CU_ASSERT_EQUAL(stats.node_count, 4);
  CU_ASSERT(stats.planned_peak_bytes <= stats.unplanned_bytes + 4 * 64);

  char* text;
  report(s, AXLE_REPORT_TEXT, &text);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "conv"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "fallback"));
  axle_free(text);

  /* Crossing devices twice must not change a single bit. */
  static const char* const cpu[] = {"cpu"};
  axle_session_t* c = make(cpu, 1, 0, &st);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  axle_tensor_t* a = run(s);
  axle_tensor_t* b = run(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(memcmp(axle_tensor_data(a), axle_tensor_data(b), axle_tensor_byte_size(a)), 0);
  axle_tensor_release(a);
  axle_tensor_release(b);
  axle_session_release(c);
  axle_session_release(s);
}

static void test_cpu_only(void) {
  static const char* const devs[] = {"cpu"};
  axle_status_t st;
  axle_session_t* s = make(devs, 1, AXLE_SESSION_STRICT, &st);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  axle_session_stats_t stats = {.struct_size = sizeof(stats)};
  axle_session_stats(s, &stats);
  CU_ASSERT_EQUAL(stats.partition_count, 1);
  axle_session_release(s);
}

static void test_strict_lists_nodes(void) {
  static const char* const devs[] = {"ref"};
  axle_status_t st;
  axle_session_t* s = make(devs, 1, AXLE_SESSION_STRICT, &st);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_UNSUPPORTED);
  const char* msg = axle_status_message();
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'conv'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "strict"));
  CU_ASSERT_PTR_NULL(strstr(msg, "'relu'"));
}

static void test_unknown_device(void) {
  static const char* const devs[] = {"tpu9000"};
  axle_status_t st;
  axle_session_t* s = make(devs, 1, 0, &st);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(st, AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "tpu9000"));
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "cpu"));
}

static void test_order_matters(void) {
  /* cpu first: it takes every node, ref is never asked to run anything. */
  static const char* const devs[] = {"cpu", "ref"};
  axle_status_t st;
  axle_session_t* s = make(devs, 2, 0, &st);
  CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  char* json;
  report(s, AXLE_REPORT_JSON, &json);
  CU_ASSERT_PTR_NULL(strstr(json, "\"device\":\"ref\""));
  axle_free(json);
  axle_session_release(s);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("placement", setup, teardown);
  CU_add_test(s, "preferred device with CPU fallback", test_ref_with_fallback);
  CU_add_test(s, "cpu only", test_cpu_only);
  CU_add_test(s, "strict mode lists unplaced nodes", test_strict_lists_nodes);
  CU_add_test(s, "unknown device", test_unknown_device);
  CU_add_test(s, "preference order", test_order_matters);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
