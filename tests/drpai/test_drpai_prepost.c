/*
 * The prepost YAML and the DRP pre-processing: a YUY2 camera frame through
 * the DRP (crop, conv_yuv2rgb, resize_hwc, imagescaler, transpose) gives the
 * same tensor as the CPU doing the same steps here, also after PREPOST_CROP
 * moved and resized the window at run time; and malformed YAML is refused
 * with a message that names what is wrong.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drpai_compile.h"
#include "drpai_dev.h"
#include "drpai_prepost.h"
#include "drpai_runner.h"

#define PHYS (0x240000000ull + 0x3000000)
#define FW 40
#define FH 24

static uint8_t g_frame[FW * FH * 2];

static const char* kYaml =
    "input_to_pre:\n"
    "  - name: \"camera_data\"\n"
    "    format: \"YUY2\"\n"
    "    order: \"HWC\"\n"
    "    shape: [24, 40, 2]\n"
    "    type: \"uint8\"\n"
    "preprocess:\n"
    "  - src: [\"camera_data\"]\n"
    "    dest: [\"image\"]\n"
    "    operations:\n"
    "      - op: crop\n"
    "        param: {CROP_POS_X: 4, CROP_POS_Y: 2, CROP_WIDTH: 32, CROP_HEIGHT: 20}\n"
    "      - op: conv_yuv2rgb\n"
    "        param: {DOUT_RGB_FORMAT: %d}\n"
    "      - op: resize_hwc\n"
    "        param: {RESIZE_ALG: %d, RESIZE_WIDTH: 16, RESIZE_HEIGHT: 10}\n"
    "      - op: imagescaler\n"
    "        param: {ADD_ARRAY: %s, MUL_ARRAY: %s}\n"
    "      - op: transpose\n"
    "        param: {IS_CHW2HWC: 0}\n";

/* ---- the same steps on the CPU, written from the documented definitions --- */

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

static void cpu_pre(int cx, int cy, int cw, int ch, int fmt, int alg, const float* add, const float* mul,
                    float* out /* [C][10][16] */) {
  int nc = fmt == 2 ? 1 : 3;
  float rgb[FH * FW * 3];
  for (int y = 0; y < ch; ++y)
    for (int x = 0; x < cw; ++x) {
      int sx = cx + x, sy = cy + y;
      float Y = g_frame[(sy * FW + sx) * 2];
      float U = g_frame[(sy * FW + (sx & ~1)) * 2 + 1] - 128.0f, V = g_frame[(sy * FW + (sx | 1)) * 2 + 1] - 128.0f;
      float r = roundf(clampf(Y + 1.402f * V, 0, 255)), g = roundf(clampf(Y - 0.344136f * U - 0.714136f * V, 0, 255));
      float b = roundf(clampf(Y + 1.772f * U, 0, 255));
      float* o = rgb + (y * cw + x) * nc;
      if (fmt == 2) {
        o[0] = Y;
      } else {
        o[0] = fmt == 1 ? b : r;
        o[1] = g;
        o[2] = fmt == 1 ? r : b;
      }
    }
  for (int oy = 0; oy < 10; ++oy)
    for (int ox = 0; ox < 16; ++ox)
      for (int c = 0; c < nc; ++c) {
        float v;
        if (alg == 0) {
          v = rgb[((oy * ch / 10) * cw + ox * cw / 16) * nc + c];
        } else {
          float fx = fmaxf(0.0f, ((float)ox + 0.5f) * ((float)cw / 16.0f) - 0.5f);
          float fy = fmaxf(0.0f, ((float)oy + 0.5f) * ((float)ch / 10.0f) - 0.5f);
          int x0 = (int)fx < cw - 1 ? (int)fx : cw - 1, y0 = (int)fy < ch - 1 ? (int)fy : ch - 1;
          int x1 = x0 + 1 < cw ? x0 + 1 : cw - 1, y1 = y0 + 1 < ch ? y0 + 1 : ch - 1;
          float ax = fx - (float)x0, ay = fy - (float)y0;
          float a = rgb[(y0 * cw + x0) * nc + c], b = rgb[(y0 * cw + x1) * nc + c];
          float cc = rgb[(y1 * cw + x0) * nc + c], d = rgb[(y1 * cw + x1) * nc + c];
          float top = a + (b - a) * ax, bot = cc + (d - cc) * ax;
          v = roundf(clampf(top + (bot - top) * ay, 0, 255));
        }
        out[(c * 10 + oy) * 16 + ox] = (v + add[c]) * mul[c];
      }
}

static drpai_compiled_t g_prog;

static int build(int fmt, int alg, const char* add, const char* mul) {
  char text[2048], err[512];
  snprintf(text, sizeof(text), kYaml, fmt, alg, add, mul);
  drpai_prepost_t pp;
  if (drpai_prepost_parse(text, strlen(text), &pp, err, sizeof(err)) != 0) {
    fprintf(stderr, "\n  %s\n", err);
    return -1;
  }
  if (drpai_compile_pre(&pp, 0, &g_prog, err, sizeof(err)) != AXLE_HAL_OK) {
    fprintf(stderr, "\n  %s\n", err);
    return -1;
  }
  return 0;
}

static double compare(const float* a, const float* b, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
  return worst;
}

static void run_case(int fmt, int alg) {
  static const float add3[3] = {-10.0f, -20.0f, -30.0f}, mul3[3] = {0.5f, 0.25f, 0.125f};
  static const float add1[3] = {-128.0f, 0, 0}, mul1[3] = {0.0078125f, 0, 0};
  int gray = fmt == 2;
  CU_ASSERT_EQUAL_FATAL(build(fmt, alg, gray ? "[-128.0]" : "[-10.0, -20.0, -30.0]",
                              gray ? "[0.0078125]" : "[0.5, 0.25, 0.125]"),
                        0);
  int nc = gray ? 1 : 3, n = nc * 10 * 16;
  CU_ASSERT_EQUAL(drpai_program_io(&g_prog.program, 1, 0)->shape[1], nc);
  float got[3 * 10 * 16], want[3 * 10 * 16];
  drpai_dev_t* dev = NULL;
  CU_ASSERT_EQUAL_FATAL(drpai_dev_open(&dev), 0);
  char why[256];
  int32_t dev_err;
  const void* ins[1] = {g_frame};
  void* outs[1] = {got};
  CU_ASSERT_EQUAL_FATAL(drpai_runner_place(dev, &g_prog.program, PHYS, why, sizeof(why)), 0);
  CU_ASSERT_EQUAL(drpai_runner_run(dev, &g_prog.program, PHYS, ins, outs, NULL, NULL, &dev_err, why, sizeof(why)), 0);
  cpu_pre(4, 2, 32, 20, fmt, alg, gray ? add1 : add3, gray ? mul1 : mul3, want);
  double worst = compare(got, want, n);
  fprintf(stderr, "\n  format %d, %s: max |DRP - CPU| = %g", fmt, alg ? "bilinear" : "nearest", worst);
  CU_ASSERT_TRUE(worst <= 1e-5);
  /* PREPOST_CROP at run time: another window, another size; the resize
   * takes the new size, the output shape stays. */
  const drpai_region_t* pr = &g_prog.program.region[DRPAI_REGION_DRP_PARAM];
  drpai_crop_t crop = {20, 12, 10, 6, {drpai_runner_phys(&g_prog.program, PHYS, pr->addr), pr->size}};
  CU_ASSERT_EQUAL(drpai_dev_ioctl(dev, DRPAI_PREPOST_CROP, &crop), 0);
  CU_ASSERT_EQUAL(drpai_runner_run(dev, &g_prog.program, PHYS, ins, outs, NULL, NULL, &dev_err, why, sizeof(why)), 0);
  cpu_pre(10, 6, 20, 12, fmt, alg, gray ? add1 : add3, gray ? mul1 : mul3, want);
  worst = compare(got, want, n);
  fprintf(stderr, ", after PREPOST_CROP 20x12 at (10,6): %g", worst);
  CU_ASSERT_TRUE(worst <= 1e-5);
  drpai_dev_close(dev);
  drpai_program_free(&g_prog.program);
}

static void test_rgb_bilinear(void) { run_case(0, 1); }
static void test_bgr_nearest(void) { run_case(1, 0); }
static void test_gray_bilinear(void) { run_case(2, 1); }

typedef struct bad_t {
  const char* yaml;
  const char* mentions;
} bad_t;

#define IN_OK "input_to_pre:\n  - {name: cam, format: YUY2, order: HWC, shape: [8, 8, 2], type: uint8}\n"

static void test_bad_yaml(void) {
  static const bad_t cases[] = {
      {"a: [1, 2\n", "line"},
      {"- just a list\n", "mapping"},
      {"preprocess: []\n", "input_to_pre"},
      {"input_to_pre:\n  - {name: cam, format: NV12, order: HWC, shape: [8, 8, 2], type: uint8}\n", "format"},
      {"input_to_pre:\n  - {name: cam, format: YUY2, order: CHW, shape: [8, 8, 2], type: uint8}\n", "order"},
      {"input_to_pre:\n  - {name: cam, format: YUY2, order: HWC, shape: [8, 8, 2], type: fp32}\n", "type"},
      {"input_to_pre:\n  - {name: cam, format: YUY2, order: HWC, shape: [8, 8, 3], type: uint8}\n", "bytes per pixel"},
      {"input_to_pre:\n  - {name: cam, format: YUY2, order: HWC, shape: [8, 7, 2], type: uint8}\n", "even width"},
      {IN_OK "preprocess:\n  - operations:\n      - op: sharpen\n", "sharpen"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: crop}\n      - {op: crop}\n      - {op: transpose}\n",
       "only one crop"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: crop}\n", "followed"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 3}}\n",
       "DOUT_RGB_FORMAT"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: resize_hwc}\n", "RESIZE_WIDTH"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: imagescaler, param: {ADD_ARRAY: [1, 2], MUL_ARRAY: [1]}}\n",
       "differ"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: imagescaler, param: {ADD_ARRAY: [x], MUL_ARRAY: [1]}}\n",
       "not a number"},
      {IN_OK "postprocess:\n  - operations:\n      - {op: crop}\n", "post-processing"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    drpai_prepost_t pp;
    char err[512] = "";
    int rc = drpai_prepost_parse(cases[i].yaml, strlen(cases[i].yaml), &pp, err, sizeof(err));
    if (rc == 0 || !strstr(err, cases[i].mentions))
      fprintf(stderr, "\n  case %zu: rc %d, message '%s' (want it to mention '%s')", i, rc, err, cases[i].mentions);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].mentions));
  }
}

/* Pipelines that parse but cannot feed a model. */
static void test_bad_pipelines(void) {
  static const bad_t cases[] = {
      {IN_OK "preprocess:\n  - operations:\n      - {op: crop, param: {CROP_WIDTH: 4, CROP_HEIGHT: 4}}\n"
             "      - {op: conv_yuv2rgb}\n      - {op: imagescaler, param: {ADD_ARRAY: [0], MUL_ARRAY: [1]}}\n",
       "resize_hwc must follow crop"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: conv_yuv2rgb}\n", "float32"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: resize_hwc, param: {RESIZE_WIDTH: 4, RESIZE_HEIGHT: 4}}\n",
       "convert YUY2 first"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: crop, param: {CROP_POS_X: 1, CROP_WIDTH: 4}}\n"
             "      - {op: conv_yuv2rgb}\n",
       "even"},
      {IN_OK "preprocess:\n  - operations:\n      - {op: conv_yuv2rgb}\n      - {op: transpose, param: {IS_CHW2HWC: 1}}\n",
       "already HWC"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    drpai_prepost_t pp;
    char err[512] = "";
    CU_ASSERT_EQUAL_FATAL(drpai_prepost_parse(cases[i].yaml, strlen(cases[i].yaml), &pp, err, sizeof(err)), 0);
    drpai_compiled_t c;
    int32_t st = drpai_compile_pre(&pp, 0, &c, err, sizeof(err));
    if (st == AXLE_HAL_OK || !strstr(err, cases[i].mentions))
      fprintf(stderr, "\n  case %zu: status %d, message '%s' (want '%s')", i, st, err, cases[i].mentions);
    CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].mentions));
    if (st == AXLE_HAL_OK) drpai_program_free(&c.program);
  }
}

int main(void) {
  for (int i = 0; i < FW * FH * 2; ++i) g_frame[i] = (uint8_t)((i * 73 + (i / 80) * 29 + 17) & 0xFF);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_prepost", NULL, NULL);
  CU_add_test(s, "YUY2 -> crop -> RGB -> bilinear -> scaler -> CHW equals the CPU", test_rgb_bilinear);
  CU_add_test(s, "YUY2 -> crop -> BGR -> nearest -> scaler -> CHW equals the CPU", test_bgr_nearest);
  CU_add_test(s, "YUY2 -> crop -> GRAY -> bilinear -> scaler -> CHW equals the CPU", test_gray_bilinear);
  CU_add_test(s, "malformed prepost YAML is refused with a reason", test_bad_yaml);
  CU_add_test(s, "pipelines that cannot feed a model are refused", test_bad_pipelines);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
