/*
 * The k210 device through Axle's public API (axle/axle.h), as an application
 * uses it: mnist.kmodel as a native model on devices {"k210"}; the digits
 * ONNX model calibrated on training images and placed on {"k210", "cpu"},
 * agreeing with the float CPU result on the held-out digits; the placement
 * report's reasons; profiling with the KPU's cycle counts.
 *
 * Usage: test_k210_api DATA_DIR. Environment: AXLE_PLUGIN_PATH,
 * AXLE_SOURCE_DIR, AXLE_TESTDATA (the mnist part is skipped without it).
 * Exit 77 when the held-out digits cannot be made (no numpy/scikit-learn).
 */
#include <unistd.h>

#include "axle/axle.h"
#include "k210_test.h"

#define PIXELS 64

static char g_data_dir[1024];
static float* g_heldout;
static size_t g_heldout_count;
static float* g_calib;
static size_t g_calib_count;

static axle_runtime_t* runtime(void) {
  axle_runtime_t* rt = NULL;
  CU_ASSERT_EQUAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  return rt;
}

static axle_session_t* session(axle_runtime_t* rt, axle_model_t* m, const char* const* devices,
                               uint32_t device_count, uint32_t flags) {
  axle_tensor_t* calib[64];
  int64_t shape[4] = {1, 1, 8, 8};
  for (size_t i = 0; i < g_calib_count; ++i)
    axle_tensor_wrap(AXLE_DTYPE_F32, 4, shape, g_calib + i * PIXELS, PIXELS * sizeof(float), NULL, NULL, &calib[i]);
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = flags;
  o.devices = devices;
  o.device_count = device_count;
  o.calibration_count = (uint32_t)g_calib_count;
  o.calibration_inputs = calib;
  axle_session_t* s = NULL;
  axle_status_t st = axle_session_create(rt, m, &o, &s);
  if (st != AXLE_OK) fprintf(stderr, "\n  session: %s\n", axle_status_message());
  for (size_t i = 0; i < g_calib_count; ++i) axle_tensor_release(calib[i]);
  return s;
}

static int classify(axle_session_t* s, float* pixels) {
  int64_t shape[4] = {1, 1, 8, 8};
  axle_tensor_t *in = NULL, *out = NULL;
  axle_tensor_wrap(AXLE_DTYPE_F32, 4, shape, pixels, PIXELS * sizeof(float), NULL, NULL, &in);
  const char* name = "image";
  int best = -1;
  if (axle_session_run(s, NULL, &name, &in, 1, NULL, &out, 1) == AXLE_OK) {
    const float* p = (const float*)axle_tensor_data(out);
    best = 0;
    for (int k = 1; k < 10; ++k)
      if (p[k] > p[best]) best = k;
  } else {
    fprintf(stderr, "\n  run: %s\n", axle_status_message());
  }
  axle_tensor_release(in);
  axle_tensor_release(out);
  return best;
}

static void digits_model(char* path, size_t size) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  snprintf(path, size, "%s/examples/digits/digits.onnx", src ? src : ".");
}

static void test_digits_agreement(void) {
  char path[1024];
  digits_model(path, sizeof(path));
  axle_runtime_t* rt = runtime();
  axle_model_t* m = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(path, &m), AXLE_OK);
  static const char* const kpu[] = {"k210", "cpu"};
  static const char* const cpu[] = {"cpu"};
  axle_session_t* sk = session(rt, m, kpu, 2, 0);
  axle_session_t* sc = session(rt, m, cpu, 1, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(sk);
  CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
  axle_session_stats_t stats = {sizeof(stats), 0, 0, 0, 0};
  axle_session_stats(sk, &stats);
  CU_ASSERT_EQUAL(stats.partition_count, 2); /* the KPU layers, then Flatten/Gemm/Softmax */
  size_t agree = 0;
  for (size_t i = 0; i < g_heldout_count; ++i) {
    int a = classify(sk, g_heldout + i * PIXELS), b = classify(sc, g_heldout + i * PIXELS);
    agree += a == b && a >= 0;
  }
  double pct = 100.0 * (double)agree / (double)g_heldout_count;
  fprintf(stderr, "\n  digits.onnx on k210 vs fp32 cpu: %zu of %zu held-out digits agree (%.2f%%)\n", agree,
          g_heldout_count, pct);
  CU_ASSERT_TRUE(pct >= 97.0);
  axle_session_release(sk);
  axle_session_release(sc);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_placement_report(void) {
  char path[1024];
  digits_model(path, sizeof(path));
  axle_runtime_t* rt = runtime();
  axle_model_t* m = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(path, &m), AXLE_OK);
  static const char* const kpu[] = {"k210", "cpu"};
  axle_session_t* s = session(rt, m, kpu, 2, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  char* text = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, AXLE_REPORT_TEXT, &text), AXLE_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "conv1"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "k210: node 'fc' (Gemm): not supported by the KPU"));
  axle_free(text);
  axle_session_release(s);
  /* Strict mode on the KPU alone: the CPU-only nodes make it fail, naming them. */
  static const char* const only[] = {"k210"};
  axle_session_t* strict = session(rt, m, only, 1, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NULL(strict);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "Gemm"));
  axle_session_release(strict);
  /* Without calibration the KPU declines everything: "no calibration data". */
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.devices = kpu;
  o.device_count = 2;
  s = NULL;
  CU_ASSERT_EQUAL(axle_session_create(rt, m, &o, &s), AXLE_OK);
  text = NULL;
  axle_session_placement_report(s, AXLE_REPORT_TEXT, &text);
  CU_ASSERT(text && strstr(text, "no calibration data"));
  axle_free(text);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_mnist_kmodel_native(void) {
  char path[1024], pgm_path[1024];
  const char* kmodel = k210_testdata("k210/mnist.kmodel", path, sizeof(path));
  if (!*kmodel || access(kmodel, R_OK) != 0) {
    fprintf(stderr, "\n  SKIP: %s is not available (AXLE_TESTDATA)\n",
            *kmodel ? kmodel : "$AXLE_TESTDATA/k210/mnist.kmodel");
    return;
  }
  axle_runtime_t* rt = runtime();
  axle_model_t* m = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(path, &m), AXLE_OK);
  static const char* const devices[] = {"k210"};
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = AXLE_SESSION_PROFILE;
  o.devices = devices;
  o.device_count = 1;
  axle_session_t* s = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_create(rt, m, &o, &s), AXLE_OK);
  axle_tensor_info_t info = {sizeof(info), NULL, 0, 0, {0}, {0, 0, NULL, NULL}};
  CU_ASSERT_EQUAL(axle_session_input_info(s, 0, &info), AXLE_OK);
  CU_ASSERT_EQUAL(info.dtype, AXLE_DTYPE_U8);
  CU_ASSERT_EQUAL(info.shape[3], 28);
  static const char* const names[9] = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
  static const int want[9] = {1, 2, 3, 6, 5, 5, 7, 3, 3};
  int64_t shape[4] = {1, 1, 28, 28};
  for (int i = 0; i < 9; ++i) {
    char rel[64];
    snprintf(rel, sizeof(rel), "digits/%s.pgm", names[i]);
    size_t n = 0;
    uint8_t* pgm = k210_read_file(k210_testdata(rel, pgm_path, sizeof(pgm_path)), &n);
    CU_ASSERT_FATAL(pgm && n >= 784);
    uint8_t img[784];
    for (int k = 0; k < 784; ++k) img[k] = (uint8_t)(255 - pgm[n - 784 + k]);
    free(pgm);
    axle_tensor_t *in = NULL, *out = NULL;
    axle_tensor_wrap(AXLE_DTYPE_U8, 4, shape, img, sizeof(img), NULL, NULL, &in);
    const char* input = "input";
    axle_status_t st = axle_session_run(s, NULL, &input, &in, 1, NULL, &out, 1);
    CU_ASSERT_EQUAL(st, AXLE_OK);
    if (st != AXLE_OK) fprintf(stderr, "\n  run: %s\n", axle_status_message());
    const float* p = out ? (const float*)axle_tensor_data(out) : NULL;
    int best = 0;
    for (int k = 1; p && k < 10; ++k)
      if (p[k] > p[best]) best = k;
    CU_ASSERT_EQUAL(best, want[i]);
    axle_tensor_release(in);
    axle_tensor_release(out);
  }
  char* json = NULL;
  CU_ASSERT_EQUAL(axle_session_trace_json(s, &json), AXLE_OK);
  CU_ASSERT(json && strstr(json, "\"layer 0 K210_CONV\""));
  CU_ASSERT(json && strstr(json, "\"cycles\":"));
  axle_free(json);
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static float* read_f32(const char* name, size_t* count) {
  char path[1200];
  snprintf(path, sizeof(path), "%s/%s", g_data_dir, name);
  size_t n = 0;
  float* data = k210_read_file(path, &n);
  *count = n / (PIXELS * sizeof(float));
  return data;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  snprintf(g_data_dir, sizeof(g_data_dir), "%s", argv[1]);
  const char* src = getenv("AXLE_SOURCE_DIR");
  char cmd[2600];
  snprintf(cmd, sizeof(cmd), "python3 '%s/tests/k210/digits_heldout.py' '%s'", src ? src : ".", g_data_dir);
  int rc = system(cmd);
  g_heldout = read_f32("heldout.f32", &g_heldout_count);
  g_calib = read_f32("calib.f32", &g_calib_count);
  if (rc != 0 || !g_heldout || !g_calib || g_calib_count > 64) {
    fprintf(stderr, "SKIP: no held-out digits (needs python3 with numpy and scikit-learn)\n");
    free(g_heldout);
    free(g_calib);
    return K210_TEST_SKIP;
  }
  static const k210_test_t tests[] = {
      {"digits.onnx: k210 agrees with fp32 on >= 97% of held-out digits", test_digits_agreement},
      {"placement report and strict mode", test_placement_report},
      {"mnist.kmodel as a native model, profiled", test_mnist_kmodel_native},
      {NULL, NULL}};
  rc = k210_run_suite("k210_api", tests);
  free(g_heldout);
  free(g_calib);
  return rc;
}
