/*
 * One CPU session run from several application threads at once, on whole
 * networks: MobileNetV2 (fp32: band and channels-last chains, GEMMs split
 * over threads) and its int8 QDQ form (the integer kernels, the expansion /
 * depthwise pairs). The session asks for 2 threads, so while one run's
 * parallel regions hold the plugin's one pool, the others' regions run
 * serially on their callers, each run in a run context of its own. Every
 * concurrent run must give the bits its input gave when run alone.
 *
 * The models are written by make_cnn_models.py (a ctest fixture) into
 * AXLE_CNN_MODELS. In the ThreadSanitizer build (./run.sh tsan) this is the
 * test of the plugin's threads on real networks.
 */
#include "axle/axle.h"
#include "kernel_test.h"

#define CALLERS 3
#define RUNS_PER_CALLER 3

static const int64_t k_shape[4] = {1, 3, 224, 224};

typedef struct caller_t {
  axle_session_t* session;
  const char* input_name;
  axle_tensor_t* x;
  axle_tensor_t* want; /* the output of x run alone */
  int wrong;           /* runs that failed or gave other bits */
  axle_status_t last_error;
} caller_t;

/* Each call draws new values (kernel_test.h's generator, main thread only). */
static axle_tensor_t* input_tensor(void) {
  axle_tensor_t* t = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_F32, 4, k_shape, &t), AXLE_OK);
  float* p = (float*)axle_tensor_data(t);
  for (int64_t i = 0; i < axle_tensor_element_count(t); ++i) p[i] = 2.0f * kt_rand();
  return t;
}

static axle_tensor_t* run_once(const caller_t* c, axle_status_t* out_st) {
  axle_tensor_t* out[1] = {NULL};
  const char* names[1] = {c->input_name};
  axle_tensor_t* in[1] = {c->x};
  *out_st = axle_session_run(c->session, NULL, names, in, 1, NULL, out, 1);
  return out[0];
}

static int same_bits(axle_tensor_t* a, axle_tensor_t* b) {
  return a && b && axle_tensor_byte_size(a) == axle_tensor_byte_size(b) &&
         memcmp(axle_tensor_data(a), axle_tensor_data(b), axle_tensor_byte_size(a)) == 0;
}

/* Thread body: no CUnit calls (not thread-safe); counts what went wrong. */
static void* caller_main(void* arg) {
  caller_t* c = arg;
  for (int r = 0; r < RUNS_PER_CALLER; ++r) {
    axle_status_t st;
    axle_tensor_t* y = run_once(c, &st);
    if (st != AXLE_OK) c->last_error = st;
    if (st != AXLE_OK || !same_bits(y, c->want)) ++c->wrong;
    axle_tensor_release(y);
  }
  return NULL;
}

static void check_model(const char* file) {
  const char* dir = getenv("AXLE_CNN_MODELS");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* s = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  if (axle_model_load_file(path, &model) != AXLE_OK)
    fprintf(stderr, "\n  %s: %s\n", path, axle_status_message());
  CU_ASSERT_PTR_NOT_NULL_FATAL(model);
  const char* devices[1] = {"cpu"};
  axle_session_options_t o = {.struct_size = sizeof o,
                              .flags = AXLE_SESSION_STRICT,
                              .devices = devices,
                              .device_count = 1,
                              .threads = 2};
  if (axle_session_create(rt, model, &o, &s) != AXLE_OK)
    fprintf(stderr, "\n  session on %s: %s\n", file, axle_status_message());
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_info_t info = {.struct_size = sizeof info};
  CU_ASSERT_EQUAL_FATAL(axle_session_input_info(s, 0, &info), AXLE_OK);

  caller_t callers[CALLERS];
  for (int i = 0; i < CALLERS; ++i) {
    callers[i] = (caller_t){.session = s, .input_name = info.name, .x = input_tensor()};
    axle_status_t st;
    callers[i].want = run_once(&callers[i], &st);
    if (st != AXLE_OK) fprintf(stderr, "\n  %s alone: %s\n", file, axle_status_message());
    CU_ASSERT_EQUAL_FATAL(st, AXLE_OK);
  }
  /* Different inputs give different outputs, so a run that read or wrote
   * another's data cannot pass by chance. */
  CU_ASSERT_FALSE(same_bits(callers[0].want, callers[1].want));

  pthread_t th[CALLERS];
  for (int i = 0; i < CALLERS; ++i)
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, caller_main, &callers[i]), 0);
  for (int i = 0; i < CALLERS; ++i) {
    pthread_join(th[i], NULL);
    if (callers[i].wrong)
      fprintf(stderr, "\n  %s, caller %d: %d of %d runs failed or differ (last status %d)\n", file,
              i, callers[i].wrong, RUNS_PER_CALLER, callers[i].last_error);
    CU_ASSERT_EQUAL(callers[i].wrong, 0);
    axle_tensor_release(callers[i].x);
    axle_tensor_release(callers[i].want);
  }
  axle_session_release(s);
  axle_model_release(model);
  axle_runtime_release(rt);
}

static void test_fp32_network(void) { check_model("mobilenet_v2.onnx"); }
static void test_int8_network(void) { check_model("mobilenet_v2_qdq.onnx"); }

int main(void) {
  static const kt_entry_t tests[] = {
      {"MobileNetV2 fp32, 2 threads a run, 3 callers", test_fp32_network},
      {"MobileNetV2 int8 QDQ, 2 threads a run, 3 callers", test_int8_network},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("cpu plugin: one session, runs from several threads", tests)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
