/*
 * An unmodified board program on a workstation: `axle drpai-translate`
 * writes the digits model with its YUY2 pre-processing as DRP-AI object
 * files; drpai_uapi_app (its own UAPI header, no Axle code) runs them with
 * the driver manual's sequence under LD_PRELOAD=libaxle_drpai_shim.so; its
 * outputs must match the CPU plugin's within int8 tolerance.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <axle/axle.h>

extern char** environ;

static char g_tmp[] = "/tmp/axle_drpai_uapiXXXXXX";
static char g_dir[1100], g_yaml[1100], g_in[1100], g_out[1100];
static const char* g_src;

static const char* kPrepost =
    "input_to_pre:\n  - {name: camera_data, format: YUY2, order: HWC, shape: [32, 48, 2], type: uint8}\n"
    "input_to_body:\n  - {name: image, format: GRAY, order: CHW, shape: [1, 1, 8, 8], type: fp32}\n"
    "preprocess:\n  - src: [camera_data]\n    dest: [image]\n    operations:\n"
    "      - {op: crop, param: {CROP_POS_X: 8, CROP_POS_Y: 0, CROP_WIDTH: 32, CROP_HEIGHT: 32}}\n"
    "      - {op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 2}}\n"
    "      - {op: resize_hwc, param: {RESIZE_ALG: 0, RESIZE_WIDTH: 8, RESIZE_HEIGHT: 8}}\n"
    "      - {op: imagescaler, param: {ADD_ARRAY: [0.0], MUL_ARRAY: [0.0625]}}\n"
    "      - {op: transpose, param: {IS_CHW2HWC: 0}}\n";

/* Runs argv with extra NAME=VALUE settings; returns the exit status. */
static int run(char* const* argv, const char* const* extra, int quiet) {
  size_t n = 0, k = 0;
  while (environ[n]) ++n;
  while (extra && extra[k]) ++k;
  char** env = (char**)calloc(n + k + 1, sizeof(char*));
  for (size_t i = 0; i < n; ++i) env[i] = environ[i];
  for (size_t i = 0; i < k; ++i) env[n + i] = (char*)extra[i];
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
  pid_t pid;
  int status = -1;
  if (posix_spawn(&pid, argv[0], &fa, NULL, argv, env) == 0 && waitpid(pid, &status, 0) == pid)
    status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  return status;
}

static char* src_path(const char* rel) {
  static char buf[8][1100];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_src, rel);
  return buf[k];
}

static const char* kDigits[10] = {"0_1206", "1_869", "2_1338", "3_561", "4_714",
                                  "5_1062", "6_1647", "7_634", "8_524", "9_459"};

static axle_tensor_t* digit(int i) {
  char rel[128];
  snprintf(rel, sizeof(rel), "examples/digits/samples/%s.npy", kDigits[i]);
  FILE* f = fopen(src_path(rel), "rb");
  static const int64_t shape[4] = {1, 1, 8, 8};
  axle_tensor_t* t = NULL;
  unsigned char head[10];
  if (f && fread(head, 1, 10, f) == 10 && axle_tensor_create(AXLE_DTYPE_F32, 4, shape, &t) == AXLE_OK &&
      (fseek(f, 10 + (head[8] | (head[9] << 8)), SEEK_SET) != 0 || fread(axle_tensor_data(t), 4, 64, f) != 64)) {
    axle_tensor_release(t);
    t = NULL;
  }
  if (f) fclose(f);
  return t;
}

static void test_translate(void) {
  FILE* f = fopen(g_yaml, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(kPrepost, f);
  fclose(f);
  char* cli = getenv("AXLE_CLI");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cli);
  char* argv[] = {cli, "drpai-translate", src_path("examples/digits/digits.onnx"), "--calibrate",
                  src_path("examples/digits/samples"), "--prepost", g_yaml, "-o", g_dir, NULL};
  int rc = run(argv, NULL, 0);
  if (rc == 2) {
    /* A tool without the command: the plugin's documented emission path. */
    fprintf(stderr, "\n  'axle drpai-translate' unavailable; emitting with AXLE_DRPAI_EMIT_DIR\n");
    char emit[1200], pp[1200];
    snprintf(emit, sizeof(emit), "AXLE_DRPAI_EMIT_DIR=%s", g_dir);
    snprintf(pp, sizeof(pp), "AXLE_DRPAI_PREPOST=%s", g_yaml);
    const char* extra[] = {emit, pp, NULL};
    char* run_argv[] = {cli, "run", src_path("examples/digits/digits.onnx"), "-d", "drpai", "--strict",
                        "--calibrate", src_path("examples/digits/samples"), "-i",
                        src_path("examples/digits/samples/0_1206.npy"), NULL};
    rc = run(run_argv, extra, 1);
  }
  CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* The digit drawn into a 32 x 48 YUY2 frame at column x0 (4 x 4 pixels per
 * digit pixel, Y = 16 * value, neutral chroma). */
static void write_frame(const float* px, int x0) {
  static uint8_t yuy2[32 * 48 * 2];
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 48; ++x) {
      int inside = x >= x0 && x < x0 + 32;
      yuy2[(y * 48 + x) * 2] = (uint8_t)(inside ? lroundf(px[(y / 4) * 8 + (x - x0) / 4] * 16.0f) : 0);
      yuy2[(y * 48 + x) * 2 + 1] = 128;
    }
  FILE* f = fopen(g_in, "wb");
  fwrite(yuy2, 1, sizeof(yuy2), f);
  fclose(f);
}

/* Runs the program (with --dup-fork when dup_fork) on g_in; its 10 scores. */
static int app(const char* crop[4], int dup_fork, float* out) {
  char preload[2200], *asan = getenv("AXLE_DRPAI_ASAN_RUNTIME"), *shim = getenv("AXLE_DRPAI_SHIM");
  if (!shim) return -1;
  snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan && *asan ? asan : "", asan && *asan ? ":" : "", shim);
  const char* extra[] = {preload, NULL};
  char* argv[10] = {getenv("AXLE_DRPAI_UAPI_APP")};
  int a = 1;
  if (dup_fork) argv[a++] = "--dup-fork";
  argv[a++] = g_dir;
  argv[a++] = g_in;
  argv[a++] = g_out;
  for (int i = 0; crop && i < 4; ++i) argv[a++] = (char*)crop[i];
  int rc = run(argv, extra, 0);
  if (rc != 0) return rc;
  FILE* f = fopen(g_out, "rb");
  size_t n = f ? fread(out, 4, 10, f) : 0;
  if (f) fclose(f);
  return n == 10 ? 0 : -1;
}

static int argmax(const float* v) {
  int b = 0;
  for (int i = 1; i < 10; ++i)
    if (v[i] > v[b]) b = i;
  return b;
}

/* Every digit, plain and cropped, through the program against the CPU
 * plugin; dup_fork runs it with --dup-fork. */
static void check_app(int dup_fork) {
  axle_runtime_t* rt = NULL;
  axle_model_t* m = NULL;
  axle_session_t* cpu = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_runtime_create(NULL, &rt), AXLE_OK);
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(src_path("examples/digits/digits.onnx"), &m), AXLE_OK);
  axle_session_options_t so = {.struct_size = sizeof so, .threads = 1};
  CU_ASSERT_EQUAL_FATAL(axle_session_create(rt, m, &so, &cpu), AXLE_OK);
  double worst = 0;
  int correct = 0, cropped = 0;
  for (int i = 0; i < 10; ++i) {
    axle_tensor_t* in = digit(i);
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    axle_tensor_t* ref = NULL;
    const char* name = "image";
    CU_ASSERT_EQUAL_FATAL(axle_session_run(cpu, NULL, &name, &in, 1, NULL, &ref, 1), AXLE_OK);
    const float* pc = (const float*)axle_tensor_data(ref);
    float got[10];
    write_frame((const float*)axle_tensor_data(in), 8);
    CU_ASSERT_EQUAL_FATAL(app(NULL, dup_fork, got), 0);
    for (int k = 0; k < 10; ++k) worst = fmax(worst, fabs(got[k] - pc[k]));
    correct += argmax(got) == argmax(pc) && argmax(got) == i;
    /* The digit elsewhere in the frame, found again with PREPOST_CROP. */
    static const char* crop[4] = {"32", "32", "16", "0"};
    write_frame((const float*)axle_tensor_data(in), 16);
    CU_ASSERT_EQUAL_FATAL(app(crop, dup_fork, got), 0);
    for (int k = 0; k < 10; ++k) worst = fmax(worst, fabs(got[k] - pc[k]));
    cropped += argmax(got) == i;
    axle_tensor_release(ref);
    axle_tensor_release(in);
  }
  fprintf(stderr, "\n  UAPI program under the shim%s: %d/10 equal top-1, %d/10 after PREPOST_CROP, "
                  "max |p_app - p_cpu| = %.4f\n", dup_fork ? " (dup'ed and fork-inherited descriptors)" : "",
          correct, cropped, worst);
  CU_ASSERT_EQUAL(correct, 10);
  CU_ASSERT_EQUAL(cropped, 10);
  CU_ASSERT_TRUE(worst < 0.05);
  axle_session_release(cpu);
  axle_model_release(m);
  axle_runtime_release(rt);
}

static void test_app_matches_cpu(void) { check_app(0); }
static void test_app_dup_fork(void) { check_app(1); }

/* The plugin's driver backend, unmodified, against the shim: the same
 * ioctls it would issue on a board. */
static void test_plugin_driver_backend(void) {
  char preload[2200], out[1200], *asan = getenv("AXLE_DRPAI_ASAN_RUNTIME"), *shim = getenv("AXLE_DRPAI_SHIM");
  CU_ASSERT_PTR_NOT_NULL_FATAL(shim);
  snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan && *asan ? asan : "", asan && *asan ? ":" : "", shim);
  snprintf(out, sizeof(out), "%s/run_out", g_tmp);
  const char* extra[] = {preload, "AXLE_DRPAI_BACKEND=driver", NULL};
  char* argv[] = {getenv("AXLE_CLI"), "run", src_path("examples/digits/digits.onnx"), "-d", "drpai", "--strict",
                  "-t", "1", "--calibrate", src_path("examples/digits/samples"), "-i",
                  src_path("examples/digits/samples/7_634.npy"), "-o", out, NULL};
  CU_ASSERT_EQUAL_FATAL(run(argv, extra, 1), 0);
  char scores[1300];
  snprintf(scores, sizeof(scores), "%s/scores.npy", out);
  FILE* f = fopen(scores, "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  unsigned char head[10];
  float p[10];
  CU_ASSERT_EQUAL(fread(head, 1, 10, f), 10);
  CU_ASSERT_EQUAL(fseek(f, 10 + (head[8] | (head[9] << 8)), SEEK_SET), 0);
  CU_ASSERT_EQUAL(fread(p, 4, 10, f), 10);
  fclose(f);
  CU_ASSERT_EQUAL(argmax(p), 7);
}

int main(void) {
  g_src = getenv("AXLE_SOURCE_DIR");
  if (!g_src || !mkdtemp(g_tmp)) return 1;
  snprintf(g_dir, sizeof(g_dir), "%s/digits_drpai", g_tmp);
  snprintf(g_yaml, sizeof(g_yaml), "%s/prepost.yaml", g_tmp);
  snprintf(g_in, sizeof(g_in), "%s/frame.bin", g_tmp);
  snprintf(g_out, sizeof(g_out), "%s/scores.bin", g_tmp);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_uapi", NULL, NULL);
  CU_add_test(s, "axle drpai-translate writes the object files", test_translate);
  CU_add_test(s, "UAPI program through the shim matches the CPU plugin", test_app_matches_cpu);
  CU_add_test(s, "the same on dup'ed and fork-inherited descriptors", test_app_dup_fork);
  CU_add_test(s, "the plugin's driver backend through the shim", test_plugin_driver_backend);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
  return failures ? 1 : 0;
}
