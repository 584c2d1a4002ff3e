/*
 * The 4D data mover kernels (kernels/copy/datamover.c) against seed 004's
 * worked example (A[10][7][8] and its four descriptors, each element order
 * spelled out by the seed's loop nest), against a naive element-by-element
 * walk for every element size and stride pattern (burst and not, zero and
 * two's-complement negative strides), and on bad descriptors: out of the
 * buffer, a stream too short, malformed buffers, overflowing counts, where
 * nothing may be moved.
 */
#include "axle_kernels_copy.h"
#include "kernel_test.h"

/* Seed 004: A[10][7][8], bias 0, Z stride 56, Y stride 8, X stride 1. */
static const uint64_t k_seed_buffer[] = {4,                              /* descriptors */
                                         0, 1,  8,  8, 7, 56, 10, 0, 1,  /* X Y Z */
                                         0, 8,  7,  1, 8, 56, 10, 0, 1,  /* Y X Z */
                                         0, 56, 10, 8, 7, 1,  8,  0, 1,  /* Z Y X */
                                         4, 1,  4,  8, 3, 56, 2,  0, 1}; /* a 2x3x4 box at x 4 */

/* The element order the seed writes out for each descriptor. */
static size_t seed_expected(uint32_t* out) {
  size_t n = 0;
  for (uint32_t z = 0; z < 10; ++z)
    for (uint32_t y = 0; y < 7; ++y)
      for (uint32_t x = 0; x < 8; ++x) out[n++] = z * 56 + y * 8 + x;
  for (uint32_t z = 0; z < 10; ++z)
    for (uint32_t x = 0; x < 8; ++x)
      for (uint32_t y = 0; y < 7; ++y) out[n++] = z * 56 + x + y * 8;
  for (uint32_t x = 0; x < 8; ++x)
    for (uint32_t y = 0; y < 7; ++y)
      for (uint32_t z = 0; z < 10; ++z) out[n++] = x + y * 8 + z * 56;
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 4; ++x) out[n++] = 4 + z * 56 + y * 8 + x;
  return n;
}

static void test_seed_example(void) {
  axle_dm4d_desc_t d[4];
  size_t n = 0;
  CU_ASSERT_EQUAL_FATAL(axle_dm4d_parse(k_seed_buffer, sizeof k_seed_buffer / 8, d, 4, &n), 0);
  CU_ASSERT_EQUAL_FATAL(n, 4);
  CU_ASSERT_EQUAL(axle_dm4d_elements(d, n), 560 * 3 + 24);
  uint32_t a[560], want[1704], got[1704 + 4];
  for (uint32_t i = 0; i < 560; ++i) a[i] = i; /* each element holds its address */
  CU_ASSERT_EQUAL(seed_expected(want), 1704);
  memset(got, 0xEE, sizeof got);
  CU_ASSERT_EQUAL(axle_dm4d_read(d, n, a, 560, got, 1704, sizeof(uint32_t)), 0);
  CU_ASSERT(memcmp(got, want, sizeof want) == 0);
  CU_ASSERT_EQUAL(got[1704], 0xEEEEEEEEu); /* nothing past the stream */
  /* Writing the Z-Y-X stream back through the same descriptor restores A. */
  uint32_t back[560 + 1];
  memset(back, 0, sizeof back);
  back[560] = 0xABCDu;
  CU_ASSERT_EQUAL(axle_dm4d_write(&d[2], 1, want + 1120, 560, back, 560, sizeof(uint32_t)), 0);
  CU_ASSERT(memcmp(back, a, sizeof a) == 0);
  CU_ASSERT_EQUAL(back[560], 0xABCDu);
}

/* A naive walk of one descriptor in the spec's loop order, signed strides. */
static size_t naive_read(const axle_dm4d_desc_t* d, const unsigned char* buf, unsigned char* out,
                         size_t es) {
  size_t n = 0;
  for (uint64_t d4 = 0; d4 < d->size[3]; ++d4)
    for (uint64_t d3 = 0; d3 < d->size[2]; ++d3)
      for (uint64_t d2 = 0; d2 < d->size[1]; ++d2)
        for (uint64_t d1 = 0; d1 < d->size[0]; ++d1) {
          const int64_t at = (int64_t)d->bias + (int64_t)d4 * (int64_t)d->stride[3] +
                             (int64_t)d3 * (int64_t)d->stride[2] +
                             (int64_t)d2 * (int64_t)d->stride[1] +
                             (int64_t)d1 * (int64_t)d->stride[0];
          memcpy(out + n++ * es, buf + (size_t)at * es, es);
        }
  return n;
}

static axle_dm4d_desc_t desc(uint64_t bias, int64_t s1, uint64_t n1, int64_t s2, uint64_t n2,
                             int64_t s3, uint64_t n3, int64_t s4, uint64_t n4) {
  axle_dm4d_desc_t d = {
      bias, {(uint64_t)s1, (uint64_t)s2, (uint64_t)s3, (uint64_t)s4}, {n1, n2, n3, n4}};
  return d;
}

static void test_patterns_every_width(void) {
  /* A 4-D box [3][4][5][6] (strides 120, 30, 6, 1) read in several orders:
   * bursts, a transpose, a reversed row (stride -1), a broadcast (stride 0),
   * a box with steps, all four dimensions used. */
  const axle_dm4d_desc_t d[] = {
      desc(0, 1, 6, 6, 5, 30, 4, 120, 3),   desc(0, 6, 5, 1, 6, 30, 4, 120, 3),
      desc(5, -1, 6, 6, 5, 30, 4, 120, 3),  desc(7, 0, 9, 1, 3, 0, 1, 0, 1),
      desc(31, 2, 2, 12, 2, 60, 2, 120, 2), desc(359, -1, 6, -6, 5, -30, 4, -120, 3),
      desc(0, 120, 3, 30, 4, 6, 5, 1, 6)};
  const size_t count = sizeof d / sizeof d[0];
  static const size_t widths[] = {1, 2, 4, 8, 16, 32, 64};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
    const size_t es = widths[w], elems = 360;
    unsigned char* buf = malloc(elems * es);
    for (size_t i = 0; i < elems * es; ++i) buf[i] = (unsigned char)(i * 131 + i / 7);
    const uint64_t total = axle_dm4d_elements(d, count);
    unsigned char* want = malloc(total * es);
    unsigned char* got = malloc(total * es + 64);
    size_t at = 0;
    for (size_t i = 0; i < count; ++i) at += naive_read(&d[i], buf, want + at * es, es);
    CU_ASSERT_EQUAL(at, total);
    memset(got, 0x5A, total * es + 64);
    CU_ASSERT_EQUAL(axle_dm4d_read(d, count, buf, elems, got, total, es), 0);
    if (memcmp(got, want, total * es) != 0) {
      fprintf(stderr, "\nread differs at element size %zu\n", es);
      CU_FAIL("read");
    }
    CU_ASSERT_EQUAL(got[total * es], 0x5A);
    /* Write: each descriptor scattering its part of the stream back (the
     * broadcast one writes one element nine times, the last value wins). */
    unsigned char* back = malloc(elems * es);
    for (size_t i = 0; i < count; ++i) {
      memset(back, 0, elems * es);
      unsigned char* expect = calloc(elems, es);
      size_t off = 0;
      for (size_t j = 0; j < i; ++j) off += axle_dm4d_elements(&d[j], 1);
      CU_ASSERT_EQUAL(
          axle_dm4d_write(&d[i], 1, want + off * es, axle_dm4d_elements(&d[i], 1), back, elems, es),
          0);
      /* The naive scatter, in the same order. */
      size_t k = 0;
      for (uint64_t d4 = 0; d4 < d[i].size[3]; ++d4)
        for (uint64_t d3 = 0; d3 < d[i].size[2]; ++d3)
          for (uint64_t d2 = 0; d2 < d[i].size[1]; ++d2)
            for (uint64_t d1 = 0; d1 < d[i].size[0]; ++d1, ++k) {
              const int64_t a = (int64_t)d[i].bias + (int64_t)d4 * (int64_t)d[i].stride[3] +
                                (int64_t)d3 * (int64_t)d[i].stride[2] +
                                (int64_t)d2 * (int64_t)d[i].stride[1] +
                                (int64_t)d1 * (int64_t)d[i].stride[0];
              memcpy(expect + (size_t)a * es, want + (off + k) * es, es);
            }
      if (memcmp(back, expect, elems * es) != 0) {
        fprintf(stderr, "\nwrite of descriptor %zu differs at element size %zu\n", i, es);
        CU_FAIL("write");
      }
      free(expect);
    }
    free(back);
    free(buf);
    free(want);
    free(got);
  }
}

/* Refusals: -1 and not a byte moved. */
static void test_refusals(void) {
  uint32_t buf[64], stream[160]; /* room for every case: only the buffer bound refuses */
  for (uint32_t i = 0; i < 64; ++i) buf[i] = i;
  memset(stream, 0x77, sizeof stream);
  const uint32_t untouched = 0x77777777u;
  const axle_dm4d_desc_t ok = desc(0, 1, 8, 8, 8, 0, 1, 0, 1);
  const axle_dm4d_desc_t bad[] = {
      desc(0, 1, 8, 8, 9, 0, 1, 0, 1),                     /* one row past the end */
      desc(64, 1, 1, 0, 1, 0, 1, 0, 1),                    /* bias past the end */
      desc(57, 1, 8, 0, 1, 0, 1, 0, 1),                    /* the last element one past the end */
      desc(3, -1, 5, 0, 1, 0, 1, 0, 1),                    /* walks backwards past 0 */
      desc(0, (int64_t)(1ull << 62), 3, 0, 1, 0, 1, 0, 1), /* a span past 2^63 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    const axle_dm4d_desc_t two[2] = {ok, bad[i]}; /* the good one must not run either */
    CU_ASSERT_EQUAL(axle_dm4d_read(two, 2, buf, 64, stream, 160, 4), -1);
    CU_ASSERT_EQUAL(stream[0], untouched);
    CU_ASSERT_EQUAL(axle_dm4d_write(two, 2, stream, 160, buf, 64, 4), -1);
    CU_ASSERT_EQUAL(buf[0], 0u);
  }
  /* A stream too short for what the descriptors address. */
  CU_ASSERT_EQUAL(axle_dm4d_read(&ok, 1, buf, 64, stream, 63, 4), -1);
  CU_ASSERT_EQUAL(stream[0], untouched);
  CU_ASSERT_EQUAL(axle_dm4d_write(&ok, 1, stream, 63, buf, 64, 4), -1);
  CU_ASSERT_EQUAL(buf[1], 1u);
  /* Element counts that overflow 64 bits. */
  const axle_dm4d_desc_t huge = desc(0, 0, UINT64_MAX / 2, 0, 3, 0, 1, 0, 1);
  CU_ASSERT_EQUAL(axle_dm4d_elements(&huge, 1), UINT64_MAX);
  CU_ASSERT_EQUAL(axle_dm4d_read(&huge, 1, buf, 64, stream, 64, 4), -1);
  /* An empty descriptor moves nothing and is fine anywhere. */
  const axle_dm4d_desc_t empty = desc(1000, 1, 0, 1, 5, 1, 5, 1, 5);
  CU_ASSERT_EQUAL(axle_dm4d_read(&empty, 1, buf, 64, stream, 0, 4), 0);
  CU_ASSERT_EQUAL(stream[0], untouched);
  /* Malformed descriptor buffers. */
  axle_dm4d_desc_t out[4];
  size_t n = 99;
  const uint64_t short_buf[] = {2, 0, 1, 1, 0, 1, 0, 1, 0, 1};
  CU_ASSERT_EQUAL(axle_dm4d_parse(short_buf, 10, out, 4, &n), -1);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(axle_dm4d_parse(k_seed_buffer, sizeof k_seed_buffer / 8 - 1, out, 4, &n), -1);
  const uint64_t long_buf[] = {0, 7};
  CU_ASSERT_EQUAL(axle_dm4d_parse(long_buf, 2, out, 4, &n), -1);
  CU_ASSERT_EQUAL(axle_dm4d_parse(k_seed_buffer, sizeof k_seed_buffer / 8, out, 3, &n), -1);
  const uint64_t many[] = {UINT64_MAX};
  CU_ASSERT_EQUAL(axle_dm4d_parse(many, 1, out, 4, &n), -1);
  CU_ASSERT_EQUAL(axle_dm4d_parse(NULL, 0, out, 4, &n), -1);
  const uint64_t none[] = {0};
  CU_ASSERT_EQUAL(axle_dm4d_parse(none, 1, out, 4, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  static const kt_entry_t tests[] = {
      {"seed 004's worked example", test_seed_example},
      {"every pattern and element size against a naive walk", test_patterns_every_width},
      {"bad descriptors move nothing", test_refusals},
  };
  if (KT_ADD_SUITE("4D data mover", tests) != 0) return 1;
  return kt_run_all();
}
