/*
 * Real kmodels through the plugin's HAL table: mnist.kmodel on the nine
 * digit images gives the reference classes under both activation rules,
 * iris.kmodel prints what the board printed, serialize/load round-trips,
 * profiling reports every layer with its cycle count, cancel and deadlines
 * stop a run, and damaged copies of the files are refused with the path in
 * the message.
 *
 * Usage: test_k210_models PLUGIN.so. Needs $AXLE_TESTDATA (else exit 77).
 */
#include <math.h>

#include "k210_plugin_test.h"

static k210_plugin_t g_plugin;
static const char* g_plugin_path;
static char g_mnist_path[1024], g_iris_path[1024];
static uint8_t* g_mnist;
static size_t g_mnist_size;

static const char* const k_digits[9] = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
static const int k_expected[9] = {1, 2, 3, 6, 5, 5, 7, 3, 3};

/* The nine PGMs, inverted as the vendor's sample feeds the camera image. */
static int load_digit(int i, uint8_t img[784]) {
  char rel[64], path[1024];
  snprintf(rel, sizeof(rel), "digits/%s.pgm", k_digits[i]);
  size_t n = 0;
  uint8_t* pgm = k210_read_file(k210_testdata(rel, path, sizeof(path)), &n);
  if (!pgm || n < 784) {
    free(pgm);
    return 0;
  }
  for (int k = 0; k < 784; ++k) img[k] = (uint8_t)(255 - pgm[n - 784 + k]);
  free(pgm);
  return 1;
}

static axle_hal_executable_t* load_path(const char* path, int32_t* st) {
  size_t n = 0;
  void* data = k210_read_file(path, &n);
  axle_hal_executable_t* exe = NULL;
  *st = g_plugin.t->artifact_load(g_plugin.dev, path, data, n, &exe);
  free(data);
  return exe;
}

static int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

static void mnist_classes(k210_plugin_t* p, axle_hal_executable_t* exe, int* classes) {
  for (int i = 0; i < 9; ++i) {
    uint8_t img[784];
    float out[10];
    CU_ASSERT_FATAL(load_digit(i, img));
    void* slots[3] = {NULL, img, out};
    cts_token_t tok;
    cts_token_init(&tok);
    CU_ASSERT_EQUAL(k210_plugin_run(p, exe, slots, 3, NULL, 0, NULL, &tok), AXLE_HAL_OK);
    cts_token_destroy(&tok);
    classes[i] = argmax(out, 10);
  }
}

static void test_mnist_describe(void) {
  int32_t st;
  axle_hal_executable_t* exe = load_path(g_mnist_path, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
  axle_hal_native_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CU_ASSERT_EQUAL(g_plugin.t->executable_describe(exe, &info), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(info.input_count, 1);
  CU_ASSERT_EQUAL(info.output_count, 1);
  CU_ASSERT_EQUAL(info.io[0].dtype, AXLE_HAL_DTYPE_U8);
  CU_ASSERT_EQUAL(info.io[0].rank, 4);
  CU_ASSERT_EQUAL(info.io[0].shape[1], 1);
  CU_ASSERT_EQUAL(info.io[0].shape[2], 28);
  CU_ASSERT_EQUAL(info.io[0].shape[3], 28);
  CU_ASSERT_EQUAL(info.io[1].dtype, AXLE_HAL_DTYPE_F32);
  CU_ASSERT_EQUAL(info.io[1].shape[1], 10);
  g_plugin.t->executable_release(exe);
}

static void test_mnist_classes_both_rules(void) {
  const char* rules[2] = {"v0.2", "v0.1"};
  for (int r = 0; r < 2; ++r) {
    /* The rounding rule is read when a device opens. */
    setenv("AXLE_K210_ROUNDING", rules[r], 1);
    k210_plugin_t p;
    CU_ASSERT_FATAL(k210_plugin_open(&p, g_plugin_path));
    int32_t st;
    size_t n = 0;
    void* data = k210_read_file(g_mnist_path, &n);
    axle_hal_executable_t* exe = NULL;
    st = p.t->artifact_load(p.dev, g_mnist_path, data, n, &exe);
    free(data);
    CU_ASSERT_EQUAL_FATAL(st, AXLE_HAL_OK);
    int classes[9];
    mnist_classes(&p, exe, classes);
    fprintf(stderr, "\n  mnist.kmodel, rule %s: classes", rules[r]);
    for (int i = 0; i < 9; ++i) fprintf(stderr, " %d", classes[i]);
    CU_ASSERT_EQUAL(memcmp(classes, k_expected, sizeof(classes)), 0);
    p.t->executable_release(exe);
    k210_plugin_close(&p);
  }
  unsetenv("AXLE_K210_ROUNDING");
  fprintf(stderr, "\n");
}

static void test_iris_board_output(void) {
  int32_t st;
  axle_hal_executable_t* exe = load_path(g_iris_path, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
  float x[4] = {5.1f, 3.8f, 1.9f, 0.4f}, y[3];
  void* slots[3] = {NULL, x, y};
  cts_token_t tok;
  cts_token_init(&tok);
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, slots, 3, NULL, 0, NULL, &tok), AXLE_HAL_OK);
  cts_token_destroy(&tok);
  /* The board printed %f: six decimals. */
  char printed[64];
  snprintf(printed, sizeof(printed), "%f, %f, %f", y[0], y[1], y[2]);
  fprintf(stderr, "\n  iris.kmodel: %s\n", printed);
  CU_ASSERT_STRING_EQUAL(printed, "16.077795, 5.607656, -2.071745");
  g_plugin.t->executable_release(exe);
}

static void test_serialize_load(void) {
  int32_t st;
  axle_hal_executable_t* exe = load_path(g_mnist_path, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
  void* data = NULL;
  size_t size = 0;
  CU_ASSERT_EQUAL_FATAL(g_plugin.t->executable_serialize(exe, &data, &size), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(size, g_mnist_size);
  CU_ASSERT_EQUAL(memcmp(data, g_mnist, size), 0); /* the file itself */
  g_plugin.t->executable_release(exe);
  axle_hal_executable_t* again = NULL;
  CU_ASSERT_EQUAL_FATAL(g_plugin.t->executable_load(g_plugin.dev, data, size, &again), AXLE_HAL_OK);
  cts_host()->free(data);
  int classes[9];
  mnist_classes(&g_plugin, again, classes);
  CU_ASSERT_EQUAL(memcmp(classes, k_expected, sizeof(classes)), 0);
  g_plugin.t->executable_release(again);
}

static void test_profiling(void) {
  int32_t st;
  axle_hal_executable_t* exe = load_path(g_mnist_path, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
  uint8_t img[784];
  float out[10];
  CU_ASSERT_FATAL(load_digit(6, img));
  void* slots[3] = {NULL, img, out};
  cts_token_t tok;
  cts_trace_t* tr = calloc(1, sizeof(*tr));
  cts_token_init(&tok);
  cts_trace_init(tr, &tok);
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, slots, 3, NULL, 0, tr, &tok), AXLE_HAL_OK);
  int kpu = 0, cpu = 0, device = 0;
  for (int i = 0; i < tr->count; ++i) {
    cts_trace_event_t* e = &tr->events[i];
    CU_ASSERT_FALSE(e->after_complete);
    CU_ASSERT_TRUE(cts_json_valid(e->args, 1));
    if (e->track == 1) {
      ++kpu;
      CU_ASSERT_PTR_NOT_NULL(strstr(e->args, "\"cycles\":"));
      CU_ASSERT_PTR_NOT_NULL(strstr(e->args, "\"macs\":"));
      CU_ASSERT_PTR_NOT_NULL(strstr(e->args, "\"host_ns\":"));
      CU_ASSERT_STRING_EQUAL(e->category, "kpu");
    } else if (e->track == 2) {
      ++cpu;
    } else {
      ++device;
      CU_ASSERT_PTR_NOT_NULL(strstr(e->args, "\"chip_ns\":"));
    }
  }
  CU_ASSERT_EQUAL(kpu, 3);
  CU_ASSERT_EQUAL(cpu, 8);
  CU_ASSERT_EQUAL(device, 1);
  cts_trace_destroy(tr);
  cts_token_destroy(&tok);
  free(tr);
  g_plugin.t->executable_release(exe);
}

static void test_cancel_and_deadline(void) {
  int32_t st;
  axle_hal_executable_t* exe = load_path(g_mnist_path, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
  uint8_t img[784] = {0};
  float out[10];
  void* slots[3] = {NULL, img, out};
  volatile int32_t cancel = 1;
  cts_token_t tok;
  cts_token_init(&tok);
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, slots, 3, &cancel, 0, NULL, &tok), AXLE_HAL_CANCELLED);
  CU_ASSERT_EQUAL(cts_token_count(&tok), 1);
  cts_token_destroy(&tok);
  cts_token_init(&tok);
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, slots, 3, NULL, 1, NULL, &tok), AXLE_HAL_TIMEOUT);
  cts_token_destroy(&tok);
  /* A missing binding fails the submit itself, with a message. */
  void* short_slots[3] = {NULL, img, NULL};
  cts_token_init(&tok);
  cts_message_clear();
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, short_slots, 3, NULL, 0, NULL, &tok), AXLE_HAL_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(cts_message(), "output0"));
  CU_ASSERT_EQUAL(cts_token_count(&tok), 0);
  cts_token_destroy(&tok);
  g_plugin.t->executable_release(exe);
}

/* artifact_load of a damaged copy: refused, path and reason in the message. */
static void expect_refused(const uint8_t* data, size_t n, const char* says) {
  uint8_t* copy = malloc(n ? n : 1);
  memcpy(copy, data, n);
  axle_hal_executable_t* exe = NULL;
  cts_message_clear();
  int32_t st = g_plugin.t->artifact_load(g_plugin.dev, "damaged.kmodel", copy, n, &exe);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_UNSUPPORTED); /* a kmodel: "mine, but broken" */
  if (exe) g_plugin.t->executable_release(exe);
  CU_ASSERT_PTR_NOT_NULL(strstr(cts_message(), "damaged.kmodel"));
  if (says) {
    CU_ASSERT_PTR_NOT_NULL(strstr(cts_message(), says));
    if (!strstr(cts_message(), says)) fprintf(stderr, "\n  wanted '%s': %s\n", says, cts_message());
  }
  free(copy);
}

static void test_damaged_files(void) {
  uint8_t* b = g_mnist;
  size_t n = g_mnist_size;
  /* Truncations: the header, every table, into bodies, weights, the end. */
  for (size_t cut = 0; cut < n; cut += cut < 200 ? 1 : 997) expect_refused(b, cut, NULL);
  expect_refused(b, n - 1, NULL);
  uint8_t* m = malloc(n);
#define MUTATE(at, value, says)        \
  do {                                 \
    memcpy(m, b, n);                   \
    memcpy(m + (at), &(uint32_t){value}, 4); \
    expect_refused(m, n, says);        \
  } while (0)
  MUTATE(0, 4, "version 4");
  MUTATE(0, 2, "version 2");
  MUTATE(12, 12, "layer count");
  MUTATE(12, 10, "layer count");
  MUTATE(20, 100, "main memory");
  /* layer 0's body at 124: main_mem_out, layer words offset, weights offset */
  MUTATE(124 + 8, (uint32_t)n, "layer 0 (K210_CONV): layer words");
  MUTATE(124 + 12, ((uint32_t)n + 127) / 128 * 128, "layer 0 (K210_CONV)");
  /* The first layer's destination row past the end of KPU RAM (word 1). */
  MUTATE(152 + 8 + 4, 0x7ff0, "layer 0 (K210_CONV): output");
  /* layer 2 (DEQUANTIZE) body at 912 + 5376: its output beyond main memory */
  MUTATE(912 + 5376 + 8, 14000, "layer 2 (DEQUANTIZE)");
#undef MUTATE
  /* Not a kmodel at all: "not mine", without a message. */
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL(g_plugin.t->artifact_load(g_plugin.dev, "model.onnx", "\x08\x07\x12\x00", 4, &exe), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT_PTR_NULL(exe);
  free(m);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  g_plugin_path = argv[1];
  k210_testdata("k210/mnist.kmodel", g_mnist_path, sizeof(g_mnist_path));
  k210_testdata("k210/iris.kmodel", g_iris_path, sizeof(g_iris_path));
  uint8_t probe[784];
  g_mnist = k210_read_file(g_mnist_path, &g_mnist_size);
  size_t iris_size;
  void* iris = k210_read_file(g_iris_path, &iris_size);
  if (!g_mnist || !iris || !load_digit(0, probe)) {
    fprintf(stderr, "SKIP: $AXLE_TESTDATA (k210/mnist.kmodel, k210/iris.kmodel, digits/*.pgm) is not available\n");
    free(g_mnist);
    free(iris);
    return K210_TEST_SKIP;
  }
  free(iris);
  if (!k210_plugin_open(&g_plugin, g_plugin_path)) return 1;
  static const k210_test_t tests[] = {
      {"mnist.kmodel described as u8 [1,1,28,28] -> float [1,10]", test_mnist_describe},
      {"mnist.kmodel classes 1,2,3,6,5,5,7,3,3 under both rules", test_mnist_classes_both_rules},
      {"iris.kmodel prints what the board printed", test_iris_board_output},
      {"serialize gives the file; load runs it", test_serialize_load},
      {"every layer traced with its cycles", test_profiling},
      {"cancel, deadline, bad bindings", test_cancel_and_deadline},
      {"damaged files refused with path and layer", test_damaged_files},
      {NULL, NULL}};
  int rc = k210_run_suite("k210_models", tests);
  k210_plugin_close(&g_plugin);
  if (cts_alloc_outstanding()) {
    fprintf(stderr, "%llu host allocations leaked\n", (unsigned long long)cts_alloc_outstanding());
    rc = 1;
  }
  free(g_mnist);
  return rc;
}
