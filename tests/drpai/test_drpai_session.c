/*
 * The DRP-AI device through the public API, against the CPU plugin: the
 * digits example, a model exercising every layer kind and one with Add, Mul
 * and Concat, calibrated by the
 * core, compiled to DRP-AI programs and run on the emulated device; the
 * placement report without calibration; the object-file directory written
 * through AXLE_DRPAI_EMIT_DIR loaded back as a model (with and without the
 * YUY2 pre-processing); profiling events.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <axle/axle.h>

static axle_runtime_t* g_rt;
static char g_src[1024];

static const char* path(const char* rel) {
  static char buf[4][2200];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_src, rel);
  return buf[k];
}

/* A float32 .npy (little-endian, C order) as a tensor of the given shape. */
static axle_tensor_t* load_npy(const char* file, uint32_t rank, const int64_t* shape, size_t skip_elems) {
  FILE* f = fopen(file, "rb");
  if (!f) return NULL;
  unsigned char head[10];
  axle_tensor_t* t = NULL;
  if (fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY", 6) == 0) {
    long header = head[8] | (head[9] << 8);
    if (axle_tensor_create(AXLE_DTYPE_F32, rank, shape, &t) == AXLE_OK &&
        (fseek(f, 10 + header + (long)(skip_elems * 4), SEEK_SET) != 0 ||
         fread(axle_tensor_data(t), 1, axle_tensor_byte_size(t), f) != axle_tensor_byte_size(t))) {
      axle_tensor_release(t);
      t = NULL;
    }
  }
  fclose(f);
  return t;
}

static const char* kDigits[10] = {"0_1206", "1_869", "2_1338", "3_561", "4_714",
                                  "5_1062", "6_1647", "7_634", "8_524", "9_459"};

static axle_tensor_t* digit(int i) {
  char rel[128];
  snprintf(rel, sizeof(rel), "examples/digits/samples/%s.npy", kDigits[i]);
  static const int64_t shape[4] = {1, 1, 8, 8};
  return load_npy(path(rel), 4, shape, 0);
}

static axle_session_t* session(const char* model_path, const char* device, axle_tensor_t** calib, uint32_t ncalib,
                               uint32_t flags) {
  axle_model_t* m = NULL;
  axle_session_t* s = NULL;
  const char* devs[] = {device};
  /* One thread: the comparison does not depend on the CPU plugin's
   * threading, and the machine running the suite is shared. */
  axle_session_options_t so = {.struct_size = sizeof so, .flags = flags, .devices = devs, .device_count = 1,
                               .threads = 1, .calibration_count = ncalib, .calibration_inputs = calib};
  if (axle_model_load_file(model_path, &m) == AXLE_OK && axle_session_create(g_rt, m, &so, &s) != AXLE_OK)
    fprintf(stderr, "\n  session on %s: %s\n", device, axle_status_message());
  axle_model_release(m);
  return s;
}

static axle_tensor_t* run1(axle_session_t* s, axle_tensor_t* in) {
  axle_tensor_t* out = NULL;
  axle_tensor_info_t info = {.struct_size = sizeof info};
  if (axle_session_input_info(s, 0, &info) != AXLE_OK ||
      axle_session_run(s, NULL, &info.name, &in, 1, NULL, &out, 1) != AXLE_OK) {
    fprintf(stderr, "\n  run: %s\n", axle_status_message());
    return NULL;
  }
  return out;
}

static int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

static void test_digits(void) {
  axle_tensor_t* samples[10];
  for (int i = 0; i < 10; ++i) CU_ASSERT_PTR_NOT_NULL_FATAL(samples[i] = digit(i));
  axle_session_t* cpu = session(path("examples/digits/digits.onnx"), "cpu", NULL, 0, 0);
  axle_session_t* dpu = session(path("examples/digits/digits.onnx"), "drpai", samples, 10, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dpu);
  double worst = 0;
  int agree = 0;
  for (int i = 0; i < 10; ++i) {
    axle_tensor_t *a = run1(cpu, samples[i]), *b = run1(dpu, samples[i]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    const float *pa = (const float*)axle_tensor_data(a), *pb = (const float*)axle_tensor_data(b);
    for (int k = 0; k < 10; ++k) worst = fmax(worst, fabs(pa[k] - pb[k]));
    agree += argmax(pa, 10) == argmax(pb, 10) && argmax(pb, 10) == i;
    axle_tensor_release(a);
    axle_tensor_release(b);
  }
  fprintf(stderr, "\n  digits: %d/10 top-1 equal to the CPU and the label, max |p_drpai - p_cpu| = %.4f\n",
          agree, worst);
  CU_ASSERT_EQUAL(agree, 10);
  CU_ASSERT_TRUE(worst < 0.05);
  axle_session_release(cpu);
  axle_session_release(dpu);
  for (int i = 0; i < 10; ++i) axle_tensor_release(samples[i]);
}

static void test_every_layer_kind(void) {
  static const int64_t shape[4] = {1, 2, 12, 12};
  axle_tensor_t* in[4];
  for (int i = 0; i < 4; ++i)
    CU_ASSERT_PTR_NOT_NULL_FATAL(in[i] = load_npy(path("tests/drpai/models/ops_in.npy"), 4, shape, (size_t)i * 288));
  axle_session_t* cpu = session(path("tests/drpai/models/ops.onnx"), "cpu", NULL, 0, 0);
  axle_session_t* dpu = session(path("tests/drpai/models/ops.onnx"), "drpai", in, 4, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dpu);
  /* y (after Softmax) and gm (the Gemm, read on by Tanh): the second is
   * compared in steps of its calibrated scale. */
  double worst = 0, worst_steps = 0;
  axle_tensor_info_t gm = {.struct_size = sizeof gm};
  CU_ASSERT_EQUAL_FATAL(axle_session_output_info(dpu, 1, &gm), AXLE_OK);
  CU_ASSERT_EQUAL_FATAL(gm.quant.count, 1);
  const double step = gm.quant.scales[0];
  const char* name = "x";
  for (int i = 0; i < 4; ++i) {
    axle_tensor_t *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(axle_session_run(cpu, NULL, &name, &in[i], 1, NULL, a, 2), AXLE_OK);
    CU_ASSERT_EQUAL_FATAL(axle_session_run(dpu, NULL, &name, &in[i], 1, NULL, b, 2), AXLE_OK);
    for (int k = 0; k < 4; ++k) {
      worst = fmax(worst, fabs(((const float*)axle_tensor_data(a[0]))[k] - ((const float*)axle_tensor_data(b[0]))[k]));
      double d = fabs(((const float*)axle_tensor_data(a[1]))[k] - ((const float*)axle_tensor_data(b[1]))[k]);
      worst_steps = fmax(worst_steps, d / step);
    }
    for (int k = 0; k < 2; ++k) {
      axle_tensor_release(a[k]);
      axle_tensor_release(b[k]);
    }
  }
  fprintf(stderr, "\n  ops.onnx (14 nodes): max |y_drpai - y_cpu| = %.4f, Gemm output within %.2f steps\n", worst,
          worst_steps);
  CU_ASSERT_TRUE(worst < 0.03);
  CU_ASSERT_TRUE(worst_steps <= 6.0);
  axle_session_release(cpu);
  axle_session_release(dpu);
  for (int i = 0; i < 4; ++i) axle_tensor_release(in[i]);
}

/* Add, Mul (per-channel gate and same-shape) and Concat as AI-MAC layers:
 * the strict session places every node on the DRP-AI, the placement report
 * says so, and both outputs agree with the CPU plugin within a few steps of
 * their calibrated scales. */
static void test_eltwise_concat(void) {
  static const int64_t shape[4] = {1, 2, 12, 12};
  axle_tensor_t* in[4];
  for (int i = 0; i < 4; ++i)
    CU_ASSERT_PTR_NOT_NULL_FATAL(in[i] = load_npy(path("tests/drpai/models/ops_in.npy"), 4, shape, (size_t)i * 288));
  axle_session_t* cpu = session(path("tests/drpai/models/eltwise.onnx"), "cpu", NULL, 0, 0);
  axle_session_t* dpu = session(path("tests/drpai/models/eltwise.onnx"), "drpai", in, 4, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dpu);
  char* report = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_session_placement_report(dpu, AXLE_REPORT_JSON, &report), AXLE_OK);
  static const char* const kNodes[] = {"add", "mul_per_channel", "mul_same_shape", "concat"};
  for (int k = 0; k < 4; ++k) {
    char want[96];
    snprintf(want, sizeof(want), "\"%s\"", kNodes[k]);
    const char* at = strstr(report, want);
    CU_ASSERT_PTR_NOT_NULL(at);
    /* The node's own record names its device before the next record. */
    const char* dev = at ? strstr(at, "\"drpai\"") : NULL;
    const char* next = at ? strchr(at, '}') : NULL;
    CU_ASSERT_TRUE(dev && next && dev < next);
  }
  axle_free(report);
  double worst[2] = {0, 0};
  double step[2];
  for (uint32_t o = 0; o < 2; ++o) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    CU_ASSERT_EQUAL_FATAL(axle_session_output_info(dpu, o, &info), AXLE_OK);
    CU_ASSERT_EQUAL_FATAL(info.quant.count, 1);
    step[o] = info.quant.scales[0];
  }
  const char* name = "x";
  for (int i = 0; i < 4; ++i) {
    axle_tensor_t *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(axle_session_run(cpu, NULL, &name, &in[i], 1, NULL, a, 2), AXLE_OK);
    CU_ASSERT_EQUAL_FATAL(axle_session_run(dpu, NULL, &name, &in[i], 1, NULL, b, 2), AXLE_OK);
    for (int o = 0; o < 2; ++o) {
      size_t n = axle_tensor_byte_size(a[o]) / 4;
      const float *pa = (const float*)axle_tensor_data(a[o]), *pb = (const float*)axle_tensor_data(b[o]);
      for (size_t k = 0; k < n; ++k) worst[o] = fmax(worst[o], fabs(pa[k] - pb[k]) / step[o]);
      axle_tensor_release(a[o]);
      axle_tensor_release(b[o]);
    }
  }
  fprintf(stderr, "\n  eltwise.onnx (Add, 2 Mul, Concat on the AI-MAC): y within %.2f steps, concat within %.2f steps\n",
          worst[0], worst[1]);
  CU_ASSERT_TRUE(worst[0] <= 6.0);
  CU_ASSERT_TRUE(worst[1] <= 6.0);
  axle_session_release(cpu);
  axle_session_release(dpu);
  for (int i = 0; i < 4; ++i) axle_tensor_release(in[i]);
}

/* DRP-AI, CPU, DRP-AI: partition outputs and inputs meet in the arena. */
static void test_split_partitions(void) {
  static const int64_t shape[4] = {1, 2, 12, 12};
  axle_tensor_t* in[4];
  for (int i = 0; i < 4; ++i)
    CU_ASSERT_PTR_NOT_NULL_FATAL(in[i] = load_npy(path("tests/drpai/models/ops_in.npy"), 4, shape, (size_t)i * 288));
  axle_session_t* cpu = session(path("tests/drpai/models/split.onnx"), "cpu", NULL, 0, 0);
  axle_session_t* dpu = session(path("tests/drpai/models/split.onnx"), "drpai", in, 4, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dpu);
  axle_session_stats_t stats = {.struct_size = sizeof stats};
  CU_ASSERT_EQUAL(axle_session_stats(dpu, &stats), AXLE_OK);
  CU_ASSERT_EQUAL(stats.partition_count, 3);
  axle_tensor_info_t info = {.struct_size = sizeof info};
  CU_ASSERT_EQUAL_FATAL(axle_session_output_info(dpu, 0, &info), AXLE_OK);
  CU_ASSERT_EQUAL_FATAL(info.quant.count, 1);
  double worst = 0;
  for (int i = 0; i < 4; ++i) {
    axle_tensor_t *a = run1(cpu, in[i]), *b = run1(dpu, in[i]);
    CU_ASSERT_TRUE_FATAL(a && b);
    for (int k = 0; k < 3; ++k)
      worst = fmax(worst, fabs(((const float*)axle_tensor_data(a))[k] - ((const float*)axle_tensor_data(b))[k]));
    axle_tensor_release(a);
    axle_tensor_release(b);
  }
  fprintf(stderr, "\n  split.onnx (3 partitions): max error %.2f output steps\n", worst / info.quant.scales[0]);
  CU_ASSERT_TRUE(worst / info.quant.scales[0] <= 6.0);
  axle_session_release(cpu);
  axle_session_release(dpu);
  for (int i = 0; i < 4; ++i) axle_tensor_release(in[i]);
}

static void test_no_calibration(void) {
  axle_session_t* s = session(path("examples/digits/digits.onnx"), "drpai", NULL, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  char* report = NULL;
  CU_ASSERT_EQUAL(axle_session_placement_report(s, AXLE_REPORT_TEXT, &report), AXLE_OK);
  CU_ASSERT(report && strstr(report, "no calibration data"));
  axle_free(report);
  axle_session_release(s);
  s = session(path("examples/digits/digits.onnx"), "drpai", NULL, 0, AXLE_SESSION_STRICT);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "no calibration data"));
}

static void remove_dir(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char p[1024];
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
      unlink(p);
    }
  if (d) closedir(d);
  rmdir(dir);
}

/* What the plugin writes is what it runs. */
static void test_emit_and_load(void) {
  char dir[] = "/tmp/axle_drpai_emitXXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  axle_tensor_t* samples[10];
  for (int i = 0; i < 10; ++i) CU_ASSERT_PTR_NOT_NULL_FATAL(samples[i] = digit(i));
  setenv("AXLE_DRPAI_EMIT_DIR", dir, 1);
  axle_session_t* dpu = session(path("examples/digits/digits.onnx"), "drpai", samples, 10, AXLE_SESSION_STRICT);
  unsetenv("AXLE_DRPAI_EMIT_DIR");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dpu);
  axle_session_t* native = session(dir, "drpai", NULL, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(native);
  axle_tensor_info_t info = {.struct_size = sizeof info};
  CU_ASSERT_EQUAL(axle_session_input_info(native, 0, &info), AXLE_OK);
  CU_ASSERT_STRING_EQUAL(info.name, "image");
  CU_ASSERT_EQUAL(info.dtype, AXLE_DTYPE_F32);
  for (int i = 0; i < 10; ++i) {
    axle_tensor_t *a = run1(dpu, samples[i]), *b = run1(native, samples[i]);
    CU_ASSERT_TRUE(a && b && memcmp(axle_tensor_data(a), axle_tensor_data(b), 40) == 0);
    axle_tensor_release(a);
    axle_tensor_release(b);
  }
  axle_session_release(native);
  axle_session_release(dpu);
  for (int i = 0; i < 10; ++i) axle_tensor_release(samples[i]);
  remove_dir(dir);
}

/* A 32 x 48 YUY2 frame with a digit in its middle 32 x 32 (Y = pixel,
 * U = V = 128), and the DRP pre-processing that cuts it back out. */
static const char* kPrepost =
    "input_to_pre:\n  - {name: camera_data, format: YUY2, order: HWC, shape: [32, 48, 2], type: uint8}\n"
    "input_to_body:\n  - {name: image, format: GRAY, order: CHW, shape: [1, 1, 8, 8], type: fp32}\n"
    "preprocess:\n  - src: [camera_data]\n    dest: [image]\n    operations:\n"
    "      - {op: crop, param: {CROP_POS_X: 8, CROP_POS_Y: 0, CROP_WIDTH: 32, CROP_HEIGHT: 32}}\n"
    "      - {op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 2}}\n"
    "      - {op: resize_hwc, param: {RESIZE_ALG: 0, RESIZE_WIDTH: 8, RESIZE_HEIGHT: 8}}\n"
    "      - {op: imagescaler, param: {ADD_ARRAY: [0.0], MUL_ARRAY: [0.0625]}}\n"
    "      - {op: transpose, param: {IS_CHW2HWC: 0}}\n";

static void test_emit_prepost(void) {
  char dir[] = "/tmp/axle_drpai_ppXXXXXX", yaml[1100];
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(yaml, sizeof(yaml), "%s.yaml", dir);
  FILE* f = fopen(yaml, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(kPrepost, f);
  fclose(f);
  axle_tensor_t* samples[10];
  for (int i = 0; i < 10; ++i) CU_ASSERT_PTR_NOT_NULL_FATAL(samples[i] = digit(i));
  setenv("AXLE_DRPAI_EMIT_DIR", dir, 1);
  setenv("AXLE_DRPAI_PREPOST", yaml, 1);
  axle_session_t* dpu = session(path("examples/digits/digits.onnx"), "drpai", samples, 10, AXLE_SESSION_STRICT);
  unsetenv("AXLE_DRPAI_EMIT_DIR");
  unsetenv("AXLE_DRPAI_PREPOST");
  axle_session_release(dpu);
  axle_session_t* native = session(dir, "drpai", NULL, 0, 0);
  axle_session_t* cpu = session(path("examples/digits/digits.onnx"), "cpu", NULL, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(native);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  static const int64_t frame_shape[3] = {32, 48, 2};
  int correct = 0;
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    /* digits' inputs are value/16 with value = 0..16: Y = 16 * value, and the
     * nearest-neighbour resize from 32 to 8 reads every fourth pixel. */
    const float* px = (const float*)axle_tensor_data(samples[i]);
    axle_tensor_t* frame = NULL;
    CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_U8, 3, frame_shape, &frame), AXLE_OK);
    uint8_t* yuy2 = (uint8_t*)axle_tensor_data(frame);
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 48; ++x) {
        int inside = x >= 8 && x < 40;
        float v = inside ? px[(y / 4) * 8 + (x - 8) / 4] : 0.0f;
        yuy2[(y * 48 + x) * 2] = (uint8_t)lroundf(v * 16.0f);
        yuy2[(y * 48 + x) * 2 + 1] = 128;
      }
    axle_tensor_t *a = run1(cpu, samples[i]), *b = run1(native, frame);
    CU_ASSERT_TRUE_FATAL(a && b);
    const float *pa = (const float*)axle_tensor_data(a), *pb = (const float*)axle_tensor_data(b);
    for (int k = 0; k < 10; ++k) worst = fmax(worst, fabs(pa[k] - pb[k]));
    correct += argmax(pb, 10) == i;
    axle_tensor_release(a);
    axle_tensor_release(b);
    axle_tensor_release(frame);
  }
  fprintf(stderr, "\n  YUY2 frames through DRP pre-processing + digits: %d/10 correct, max |p - p_cpu| = %.4f\n",
          correct, worst);
  CU_ASSERT_EQUAL(correct, 10);
  CU_ASSERT_TRUE(worst < 0.05);
  axle_session_release(native);
  axle_session_release(cpu);
  for (int i = 0; i < 10; ++i) axle_tensor_release(samples[i]);
  remove_dir(dir);
  unlink(yaml);
}

static void test_profile_events(void) {
  axle_tensor_t* samples[10];
  for (int i = 0; i < 10; ++i) CU_ASSERT_PTR_NOT_NULL_FATAL(samples[i] = digit(i));
  axle_session_t* s = session(path("examples/digits/digits.onnx"), "drpai", samples, 10,
                              AXLE_SESSION_STRICT | AXLE_SESSION_PROFILE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  axle_tensor_t* out = run1(s, samples[3]);
  axle_tensor_release(out);
  char* json = NULL;
  CU_ASSERT_EQUAL(axle_session_trace_json(s, &json), AXLE_OK);
  CU_ASSERT(json && strstr(json, "\"aimac_macs\""));
  CU_ASSERT(json && strstr(json, "\"modelled_us\""));
  axle_free(json);
  axle_session_release(s);
  for (int i = 0; i < 10; ++i) axle_tensor_release(samples[i]);
}

int main(void) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  snprintf(g_src, sizeof(g_src), "%s", src ? src : ".");
  if (axle_runtime_create(NULL, &g_rt) != AXLE_OK) {
    fprintf(stderr, "runtime: %s\n", axle_status_message());
    return 1;
  }
  uint32_t dev;
  if (axle_runtime_device_find(g_rt, "drpai", &dev) != AXLE_OK) {
    fprintf(stderr, "no drpai device: %s\n", axle_status_message());
    axle_runtime_release(g_rt);
    return 1;
  }
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_session", NULL, NULL);
  CU_add_test(s, "digits on the DRP-AI equals the CPU", test_digits);
  CU_add_test(s, "every layer kind equals the CPU", test_every_layer_kind);
  CU_add_test(s, "Add, Mul and Concat on the AI-MAC equal the CPU", test_eltwise_concat);
  CU_add_test(s, "DRP-AI | CPU | DRP-AI partitions equal the CPU", test_split_partitions);
  CU_add_test(s, "without calibration nodes are declined with the reason", test_no_calibration);
  CU_add_test(s, "AXLE_DRPAI_EMIT_DIR output loads and runs identically", test_emit_and_load);
  CU_add_test(s, "emitted YUY2 pre-processing + digits equals the CPU", test_emit_prepost);
  CU_add_test(s, "profiling reports the device's work", test_profile_events);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  axle_runtime_release(g_rt);
  return failures ? 1 : 0;
}
