/*
 * k210_ram.c: the KPU RAM row layout for widths <= 16 (4 channels per 64-byte
 * row, 16-byte pitch), <= 32 (2 per row, 32-byte pitch) and > 32 (one channel
 * over ceil(width / 64) rows per line), and the checks on described maps.
 */
#include "k210_ram.h"

#include "k210_test.h"

static void test_layout_by_width(void) {
  static const struct {
    uint32_t width, groups, row_switch;
  } cases[] = {{1, 4, 1}, {16, 4, 1}, {17, 2, 1}, {32, 2, 1}, {33, 1, 1}, {64, 1, 1}, {65, 1, 2}, {200, 1, 4}, {960, 1, 15}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    k210_fmap_t m = k210_fmap_for_shape(10, cases[i].width, 5, 3);
    CU_ASSERT_EQUAL(m.groups, cases[i].groups);
    CU_ASSERT_EQUAL(m.row_switch, cases[i].row_switch);
    CU_ASSERT_EQUAL(m.channel_switch, cases[i].row_switch * 5);
    CU_ASSERT_PTR_NULL(k210_fmap_check(&m));
  }
}

static void test_line_offsets(void) {
  /* width 14, 4 lines, 6 channels: channels 0-3 share rows at 16-byte pitch,
   * 4-5 start channel_switch (4) rows later. */
  k210_fmap_t m = k210_fmap_for_shape(100, 14, 4, 6);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 0, 0), 100 * 64);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 3, 0), 100 * 64 + 48);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 1, 2), 102 * 64 + 16);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 5, 3), 107 * 64 + 16);
  CU_ASSERT_EQUAL(k210_fmap_rows(&m), 8);
  /* width 28: 2 channels per row at 32-byte pitch. */
  m = k210_fmap_for_shape(0, 28, 28, 3);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 1, 27), 27 * 64 + 32);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 2, 0), 28 * 64);
  CU_ASSERT_EQUAL(k210_fmap_rows(&m), 56);
  /* width 100: two rows per line, one channel per group. */
  m = k210_fmap_for_shape(0, 100, 3, 2);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 0, 1), 2 * 64);
  CU_ASSERT_EQUAL(k210_fmap_line(&m, 1, 0), 6 * 64);
  CU_ASSERT_EQUAL(k210_fmap_rows(&m), 12);
}

static void test_store_load_round_trip(void) {
  uint8_t* ram = calloc(1, K210_RAM_BYTES);
  uint32_t widths[] = {3, 16, 20, 32, 50, 130};
  for (size_t k = 0; k < sizeof(widths) / sizeof(widths[0]); ++k) {
    k210_fmap_t m = k210_fmap_for_shape(77, widths[k], 7, 5);
    size_t n = (size_t)5 * 7 * widths[k];
    uint8_t *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; ++i) a[i] = (uint8_t)(i * 31 + k);
    memset(ram, 0xCC, K210_RAM_BYTES);
    k210_fmap_store(ram, &m, a);
    k210_fmap_load(ram, &m, b);
    CU_ASSERT_EQUAL(memcmp(a, b, n), 0);
    /* Bytes of a row past a line stay untouched. */
    if (widths[k] < 64 / m.groups) CU_ASSERT_EQUAL(ram[k210_fmap_line(&m, 0, 0) + widths[k]], 0xCC);
    CU_ASSERT_EQUAL(ram[77 * 64 - 1], 0xCC);
    free(a);
    free(b);
  }
  free(ram);
}

static void test_bad_descriptions(void) {
  k210_fmap_t m = k210_fmap_for_shape(0, 20, 4, 4);
  m.groups = 3;
  CU_ASSERT_PTR_NOT_NULL(k210_fmap_check(&m));
  m = k210_fmap_for_shape(0, 20, 4, 4);
  m.groups = 4; /* 20 bytes do not fit a 16-byte pitch */
  CU_ASSERT_PTR_NOT_NULL(k210_fmap_check(&m));
  m = k210_fmap_for_shape(0, 100, 4, 1);
  m.row_switch = 1; /* 100 bytes in one row */
  m.channel_switch = 4;
  CU_ASSERT_PTR_NOT_NULL(k210_fmap_check(&m));
  m = k210_fmap_for_shape(0, 40, 4, 3);
  m.channel_switch = 2; /* channels overlap */
  CU_ASSERT_PTR_NOT_NULL(k210_fmap_check(&m));
  m = k210_fmap_for_shape(K210_RAM_ROWS - 4, 40, 4, 2);
  CU_ASSERT_PTR_NOT_NULL(k210_fmap_check(&m)); /* past the end */
  m = k210_fmap_for_shape(K210_RAM_ROWS - 8, 40, 4, 2);
  CU_ASSERT_PTR_NULL(k210_fmap_check(&m));      /* exactly to the end */
}

int main(void) {
  static const k210_test_t tests[] = {
      {"layout by width (<=16, <=32, >32)", test_layout_by_width},
      {"line offsets", test_line_offsets},
      {"store/load round trip", test_store_load_round_trip},
      {"bad descriptions refused", test_bad_descriptions},
      {NULL, NULL}};
  return k210_run_suite("k210_ram", tests);
}
