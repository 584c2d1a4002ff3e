/*
 * Address conversion (driver manual 4.2.5) and the pre-processing patches
 * (4.2.12 PREPOST_CROP with the bounds of 4.3.5, 4.2.13 PREPOST_INADDR) on
 * the emulated driver, with a crop + YUY2->RGB program whose output is
 * checked against the same arithmetic done here.
 *
 * The area is moved below 4 GiB (0x80000000, 256 MiB) so that a program can
 * also run without conversion, as in the manual's case (A), and a "CMA"
 * area at 0x58000000 stands for the camera buffer of the samples.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drpai_emu.h"
#include "drpai_emu_test.h"
#include "drpai_fixture.h"
#include "drpai_uapi.h"

#define AREA 0x80000000ull
#define CMA 0x58000000ull
#define W 64
#define H 32

static uint8_t g_img[W * H * 2];

static void make_image(void) {
  for (int i = 0; i < W * H * 2; ++i) g_img[i] = (uint8_t)((i * 37 + (i >> 7) * 11) & 0xFF);
}

static uint8_t clamp_u8(float v) {
  v = roundf(v);
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The crop window of g_img, converted to RGB: BT.601 full range. */
static void expected_rgb(const uint8_t* img, int iw, int x0, int y0, int w, int h, uint8_t* rgb) {
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* px = img + ((size_t)(y0 + y) * iw + (x0 + x)) * 2;
      const uint8_t* pair = img + ((size_t)(y0 + y) * iw + ((x0 + x) & ~1)) * 2;
      float Y = px[0], U = pair[1] - 128.0f, V = pair[3] - 128.0f;
      uint8_t* o = rgb + ((size_t)y * w + x) * 3;
      o[0] = clamp_u8(Y + 1.402f * V);
      o[1] = clamp_u8(Y - 0.344136f * U - 0.714136f * V);
      o[2] = clamp_u8(Y + 1.772f * U);
    }
  }
}

static drpai_emu_file_t* opn(void) {
  drpai_emu_file_t* f = NULL;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  return f;
}

static int adrconv(drpai_emu_file_t* f, uint32_t org, uint32_t size, uint64_t conv, uint8_t mode) {
  drpai_adrconv_t a = {org, size, conv, mode};
  return drpai_emu_ioctl(f, DRPAI_SET_ADRCONV, &a);
}

/* START, wait, GET_STATUS; returns GET_STATUS's answer. */
static int run(drpai_emu_file_t* f, drpai_data_t* proc) {
  int rc = drpai_emu_ioctl(f, DRPAI_START, proc);
  if (rc) return rc;
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  drpai_status_t st;
  return drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st);
}

static void check_output(drpai_emu_file_t* f, const drpai_data_t* proc, int x, int y, int w, int h) {
  uint8_t* want = (uint8_t*)malloc((size_t)w * h * 3);
  uint8_t* got = (uint8_t*)malloc((size_t)w * h * 3);
  expected_rgb(g_img, W, x, y, w, h, want);
  CU_ASSERT_EQUAL(fx_get(f, proc[DRPAI_INDEX_OUTPUT].address, got, (size_t)w * h * 3), 0);
  CU_ASSERT_EQUAL(memcmp(want, got, (size_t)w * h * 3), 0);
  free(want);
  free(got);
}

/* (A) No conversion: the program sits at its own DRP-AI addresses. */
static void test_without_conversion(void) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop_at(f, (uint32_t)AREA + 0x100000, AREA + 0x100000, W, H, proc, &obj);
  CU_ASSERT_EQUAL(fx_put(f, proc[DRPAI_INDEX_INPUT].address, g_img, sizeof(g_img)), 0);
  CU_ASSERT_EQUAL(run(f, proc), 0);
  check_output(f, proc, 0, 0, W, H);
  drpai_emu_close(f);
}

/* (B) REPLACE: a program translated for 0x00100000 runs anywhere the lower
 * 24 bits agree; DISABLE turns conversion off again. */
static void test_replace_and_disable(void) {
  drpai_emu_file_t* f = opn();
  uint64_t phys = AREA + 0x3100000;
  CU_ASSERT_EQUAL(adrconv(f, 0x00100000, 0xF00000, phys, DRPAI_ADRCONV_MODE_REPLACE), 0);
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop_at(f, 0x00100000, phys, W, H, proc, &obj);
  CU_ASSERT_EQUAL(fx_put(f, proc[DRPAI_INDEX_INPUT].address, g_img, sizeof(g_img)), 0);
  CU_ASSERT_EQUAL(run(f, proc), 0);
  check_output(f, proc, 0, 0, W, H);
  /* Off: the program's addresses are taken as physical, where nothing is. */
  CU_ASSERT_EQUAL(adrconv(f, 0, 0, 0, DRPAI_ADRCONV_MODE_DISABLE), 0);
  CU_ASSERT_EQUAL(run(f, proc), -EIO);
  drpai_emu_close(f);
}

/* Several settings at once (ADD): the object files through one, the camera
 * image in a CMA buffer through another, as the V2H samples do. */
static void test_add_settings(void) {
  drpai_emu_file_t* f = opn();
  uint64_t phys = AREA + 0x5100000;
  CU_ASSERT_EQUAL(adrconv(f, 0x00100000, 0xF00000, phys, DRPAI_ADRCONV_MODE_REPLACE), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0xD0000000, 0x1000000, CMA, DRPAI_ADRCONV_MODE_ADD), 0);
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop_at(f, 0x00100000, phys, W, H, proc, &obj);
  uint8_t* cma = (uint8_t*)drpai_emu_test_phys(CMA + 0x4000, sizeof(g_img));
  CU_ASSERT_PTR_NOT_NULL_FATAL(cma);
  memcpy(cma, g_img, sizeof(g_img));
  drpai_inout_t io;
  memset(&io, 0, sizeof(io));
  strcpy(io.name, "camera_data");
  io.data.address = CMA + 0x4000;
  io.data.size = sizeof(g_img);
  io.obj = obj;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_PREPOST_INADDR, &io), 0);
  /* proc[INPUT] no longer matters (it points at nothing useful now). */
  proc[DRPAI_INDEX_INPUT].address = phys + 0x800000;
  CU_ASSERT_EQUAL(run(f, proc), 0);
  check_output(f, proc, 0, 0, W, H);
  /* A buffer outside both settings cannot be the input. */
  io.data.address = CMA + 0x2000000;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_PREPOST_INADDR, &io), -ENOMEM);
  drpai_emu_close(f);
}

/* The table rules: lower 24 bits, 40-bit destinations, the reserved range,
 * page overlaps (source and destination), REPLACE clearing, modes, and a
 * refused request leaving the table as it was. */
static void test_table_rules(void) {
  drpai_emu_file_t* f = opn();
  CU_ASSERT_EQUAL(adrconv(f, 0x00000040, 0x100, 0x100000080ull, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(adrconv(f, 0x00000040, 0x100, 0xFF00000040ull, DRPAI_ADRCONV_MODE_REPLACE), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x00000040, 0x100, 0x10000000040ull, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(adrconv(f, 0x00000000, 0x2000000, 0xFFFF000000ull, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(adrconv(f, 0xFC000000, 0x1000, 0x1FC000000ull, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(adrconv(f, 0xFB000000, 0x1000001, 0x1FB000000ull, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(adrconv(f, 0xFB000000, 0x1000000, 0x1FB000000ull, DRPAI_ADRCONV_MODE_REPLACE), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x10000000, 0x1000, 0x110000000ull, 2), -EINVAL);
  /* Pages: 0x01xxxxxx -> 0x1_01xxxxxx; then the same source page, and the
   * same destination page from another source, are both refused. */
  CU_ASSERT_EQUAL(adrconv(f, 0x01000000, 0x1000000, 0x101000000ull, DRPAI_ADRCONV_MODE_REPLACE), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x01800000, 0x100, 0x201800000ull, DRPAI_ADRCONV_MODE_ADD), -ENOMEM);
  CU_ASSERT_EQUAL(adrconv(f, 0x02000000, 0x100, 0x101000000ull, DRPAI_ADRCONV_MODE_ADD), -ENOMEM);
  CU_ASSERT_EQUAL(adrconv(f, 0x02000000, 0x100, 0x102000000ull, DRPAI_ADRCONV_MODE_ADD), 0);
  /* A range crossing into a page already converted is refused whole. */
  CU_ASSERT_EQUAL(adrconv(f, 0x03000000, 0x2000000, 0x203000000ull, DRPAI_ADRCONV_MODE_ADD), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x05000000, 0x1000000, 0x203000000ull, DRPAI_ADRCONV_MODE_ADD), -ENOMEM);
  /* REPLACE clears the previous settings. */
  CU_ASSERT_EQUAL(adrconv(f, 0x07000000, 0x1000, 0x107000000ull, DRPAI_ADRCONV_MODE_REPLACE), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x01800000, 0x100, 0x201800000ull, DRPAI_ADRCONV_MODE_ADD), 0);
  /* A refused REPLACE leaves the table: the crop program still runs. */
  uint64_t phys = AREA + 0x7100000;
  CU_ASSERT_EQUAL(adrconv(f, 0x00100000, 0xF00000, phys, DRPAI_ADRCONV_MODE_REPLACE), 0);
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop_at(f, 0x00100000, phys, W, H, proc, &obj);
  CU_ASSERT_EQUAL(fx_put(f, proc[DRPAI_INDEX_INPUT].address, g_img, sizeof(g_img)), 0);
  CU_ASSERT_EQUAL(adrconv(f, 0x00100001, 0x100, phys, DRPAI_ADRCONV_MODE_REPLACE), -EINVAL);
  CU_ASSERT_EQUAL(run(f, proc), 0);
  check_output(f, proc, 0, 0, W, H);
  /* START with conversion on needs every address converted. */
  drpai_data_t moved[DRPAI_INDEX_NUM];
  memcpy(moved, proc, sizeof(moved));
  moved[DRPAI_INDEX_WEIGHT].address = AREA + 0x9000000;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, moved), -ENOMEM);
  drpai_emu_close(f);
}

typedef struct crop_case_t {
  uint16_t w, h, x, y;
  int expect;
} crop_case_t;

/* The bounds of drpai_crop_t (4.3.5) on a 64 x 32 YUY2 image. */
static void test_crop_bounds(void) {
  static const crop_case_t cases[] = {
      {64, 32, 0, 0, 0},        /* the whole image */
      {2, 1, 0, 0, 0},          /* the smallest YUY2 window */
      {2, 1, 62, 31, 0},        /* the last pixels */
      {32, 16, 8, 4, 0},        /* inside */
      {0, 16, 0, 0, -EINVAL},   /* width below 1 */
      {16, 0, 0, 0, -EINVAL},   /* height below 1 */
      {66, 16, 0, 0, -EINVAL},  /* wider than the image */
      {16, 33, 0, 0, -EINVAL},  /* taller than the image */
      {2, 1, 64, 0, -EINVAL},   /* pos_x past width - 1 */
      {2, 1, 0, 32, -EINVAL},   /* pos_y past height - 1 */
      {32, 16, 40, 0, -EINVAL}, /* window leaves the image on the right */
      {32, 20, 0, 20, -EINVAL}, /* ... and at the bottom */
      {16, 16, 3, 0, -EINVAL},  /* odd pos_x splits a YUY2 pixel pair */
      {15, 16, 0, 0, -EINVAL},  /* odd width likewise */
  };
  drpai_emu_file_t* f = opn();
  uint64_t phys = AREA + 0x9100000;
  CU_ASSERT_EQUAL(adrconv(f, 0x00100000, 0xF00000, phys, DRPAI_ADRCONV_MODE_REPLACE), 0);
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop_at(f, 0x00100000, phys, W, H, proc, &obj);
  CU_ASSERT_EQUAL(fx_put(f, proc[DRPAI_INDEX_INPUT].address, g_img, sizeof(g_img)), 0);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const crop_case_t* c = &cases[i];
    drpai_crop_t crop = {c->w, c->h, c->x, c->y, obj};
    int rc = drpai_emu_ioctl(f, DRPAI_PREPOST_CROP, &crop);
    if (rc != c->expect)
      fprintf(stderr, "\n  crop %ux%u at (%u,%u): got %d, want %d", c->w, c->h, c->x, c->y, rc, c->expect);
    CU_ASSERT_EQUAL(rc, c->expect);
    if (rc != 0) continue;
    /* The next stage now converts a w x h image: check every byte. */
    CU_ASSERT_EQUAL(run(f, proc), 0);
    check_output(f, proc, c->x, c->y, c->w, c->h);
  }
  /* drp_param.bin other than the one imported, or no import at all. */
  drpai_crop_t crop = {16, 16, 0, 0, obj};
  crop.obj.size += 64;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_PREPOST_CROP, &crop), -EINVAL);
  drpai_emu_file_t* g = opn();
  crop.obj = obj;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(g, DRPAI_PREPOST_CROP, &crop), -EINVAL);
  drpai_emu_close(g);
  drpai_emu_close(f);
}

int main(void) {
  setenv("AXLE_DRPAI_EMU_AREA", "0x80000000:0x10000000", 1);
  setenv("AXLE_DRPAI_EMU_EXTRA", "0x58000000:0x1000000", 1);
  make_image();
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_adrconv", NULL, NULL);
  CU_add_test(s, "(A) placement without conversion", test_without_conversion);
  CU_add_test(s, "(B) REPLACE, then DISABLE", test_replace_and_disable);
  CU_add_test(s, "ADD: object files and a CMA camera buffer", test_add_settings);
  CU_add_test(s, "table rules: 24 bits, 40 bits, reserved range, overlaps", test_table_rules);
  CU_add_test(s, "PREPOST_CROP bounds and the cropped output", test_crop_bounds);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
