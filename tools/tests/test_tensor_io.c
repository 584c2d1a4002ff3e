/* CUnit suite for tools/tensor_io.c: .npy read/write, PGM/PPM parsing and the
 * conversion of files to model inputs. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensor_io.h"

static char g_dir[] = "/tmp/axle_tensor_io_XXXXXX";
static char g_err[TIO_ERR_SIZE];

static const char* tmp_path(const char* name) {
  static char buf[256];
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static void write_bytes(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_FATAL(fwrite(data, 1, size, f) == size);
  fclose(f);
}

static long file_size(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* A .npy file with the given header dict, padded as NumPy does. */
static void write_npy(const char* path, int major, const char* dict, const void* data,
                      size_t size) {
  unsigned char buf[4096];
  size_t prefix = major == 1 ? 10 : 12, n = strlen(dict);
  size_t total = (prefix + n + 1 + 63) / 64 * 64, hlen = total - prefix;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  buf[8] = (unsigned char)hlen;
  buf[9] = (unsigned char)(hlen >> 8);
  if (major != 1) buf[10] = buf[11] = 0;
  memcpy(buf + prefix, dict, n);
  memset(buf + prefix + n, ' ', hlen - n - 1);
  buf[total - 1] = '\n';
  memcpy(buf + total, data, size);
  write_bytes(path, buf, total + size);
}

/* ------------------------------------------------------------------------ */

static void test_npy_roundtrip_all_dtypes(void) {
  static const axle_dtype_t dtypes[] = {
      AXLE_DTYPE_F32, AXLE_DTYPE_F64, AXLE_DTYPE_F16, AXLE_DTYPE_U8,  AXLE_DTYPE_I8,
      AXLE_DTYPE_U16, AXLE_DTYPE_I16, AXLE_DTYPE_U32, AXLE_DTYPE_I32, AXLE_DTYPE_U64,
      AXLE_DTYPE_I64, AXLE_DTYPE_BOOL,
  };
  const int64_t shape[2] = {2, 3};
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
    axle_tensor_t* t;
    CU_ASSERT_FATAL(axle_tensor_create(dtypes[k], 2, shape, &t) == AXLE_OK);
    for (size_t i = 0; i < 6; i++) tio_set(axle_tensor_data(t), dtypes[k], i, (double)i);
    const char* path = tmp_path("rt.npy");
    CU_ASSERT_FATAL(tio_write_npy(path, t, g_err, sizeof g_err) == 0);
    /* Data starts on a 64-byte boundary. */
    CU_ASSERT((file_size(path) - (long)axle_tensor_byte_size(t)) % 64 == 0);
    axle_tensor_t* back;
    CU_ASSERT_FATAL(tio_read_npy(path, &back, g_err, sizeof g_err) == 0);
    CU_ASSERT(axle_tensor_dtype(back) == dtypes[k]);
    CU_ASSERT(axle_tensor_rank(back) == 2);
    CU_ASSERT(axle_tensor_shape(back)[0] == 2 && axle_tensor_shape(back)[1] == 3);
    CU_ASSERT(memcmp(axle_tensor_data(back), axle_tensor_data(t), axle_tensor_byte_size(t)) == 0);
    for (size_t i = 0; i < 6; i++) {
      double want = dtypes[k] == AXLE_DTYPE_BOOL ? (i != 0) : (double)i;
      CU_ASSERT_DOUBLE_EQUAL(tio_get(axle_tensor_data(back), dtypes[k], i), want, 0.0);
    }
    axle_tensor_release(back);
    axle_tensor_release(t);
  }
}

static void test_npy_header_shapes(void) {
  /* Rank 0 and rank 1 use the tuple spellings "()" and "(5,)". */
  const int64_t five = 5;
  axle_tensor_t* t;
  CU_ASSERT_FATAL(axle_tensor_create(AXLE_DTYPE_I32, 1, &five, &t) == AXLE_OK);
  const char* path = tmp_path("r1.npy");
  CU_ASSERT_FATAL(tio_write_npy(path, t, g_err, sizeof g_err) == 0);
  axle_tensor_release(t);
  FILE* f = fopen(path, "rb");
  char head[128] = {0};
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT(fread(head, 1, sizeof head - 1, f) > 0);
  fclose(f);
  CU_ASSERT(strstr(head + 10, "'shape': (5,)") != NULL);
  CU_ASSERT(strstr(head + 10, "'descr': '<i4'") != NULL);

  float one = 1.5f;
  write_npy(tmp_path("r0.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
            &one, 4);
  CU_ASSERT_FATAL(tio_read_npy(tmp_path("r0.npy"), &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_rank(t) == 0);
  CU_ASSERT(axle_tensor_element_count(t) == 1);
  CU_ASSERT_DOUBLE_EQUAL(tio_get(axle_tensor_data(t), AXLE_DTYPE_F32, 0), 1.5, 0.0);
  axle_tensor_release(t);
}

static void test_npy_v2_and_variants(void) {
  const int32_t v[3] = {1, -2, 3};
  axle_tensor_t* t;
  write_npy(tmp_path("v2.npy"), 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
            v, sizeof v);
  CU_ASSERT_FATAL(tio_read_npy(tmp_path("v2.npy"), &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_dtype(t) == AXLE_DTYPE_I32);
  CU_ASSERT(memcmp(axle_tensor_data(t), v, sizeof v) == 0);
  axle_tensor_release(t);

  /* Double quotes, no spaces, key order changed: still a Python dict. */
  write_npy(tmp_path("dq.npy"), 1, "{\"shape\":(1,3),\"fortran_order\":False,\"descr\":\"<i4\"}",
            v, sizeof v);
  CU_ASSERT_FATAL(tio_read_npy(tmp_path("dq.npy"), &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_rank(t) == 2 && axle_tensor_shape(t)[1] == 3);
  axle_tensor_release(t);

  /* Byte-sized types are written with '|'. */
  const uint8_t b[2] = {0, 1};
  write_npy(tmp_path("b1.npy"), 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
            b, 2);
  CU_ASSERT_FATAL(tio_read_npy(tmp_path("b1.npy"), &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_dtype(t) == AXLE_DTYPE_BOOL);
  axle_tensor_release(t);
}

static void expect_npy_error(const char* name, int major, const char* dict, size_t data_size,
                             const char* fragment) {
  static const unsigned char zeros[64];
  write_npy(tmp_path(name), major, dict, zeros, data_size);
  axle_tensor_t* t = (axle_tensor_t*)1;
  CU_ASSERT(tio_read_npy(tmp_path(name), &t, g_err, sizeof g_err) == -1);
  CU_ASSERT(t == NULL);
  CU_ASSERT(strstr(g_err, name) != NULL);  /* messages name the file */
  if (!strstr(g_err, fragment)) fprintf(stderr, "\nunexpected message: %s\n", g_err);
  CU_ASSERT(strstr(g_err, fragment) != NULL);
}

static void test_npy_errors(void) {
  expect_npy_error("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
                   "big-endian");
  expect_npy_error("fo.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,2), }", 16,
                   "Fortran");
  expect_npy_error("tr.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 8,
                   "truncated");
  expect_npy_error("st.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                   4, "structured");
  expect_npy_error("c8.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8,
                   "not supported");
  expect_npy_error("v9.npy", 9, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4,
                   "version");
  write_bytes(tmp_path("magic.npy"), "NUMPY not really", 16);
  axle_tensor_t* t;
  CU_ASSERT(tio_read_npy(tmp_path("magic.npy"), &t, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "magic") != NULL);
  CU_ASSERT(tio_read_npy(tmp_path("missing.npy"), &t, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "No such file") != NULL);
}

/* ------------------------------------------------------------------------ */

static void test_pnm_parse(void) {
  /* Comment in the header, maxval 15 rescaled to 0..255. */
  const char pgm[] = "P5\n# made by hand\n2 2\n15\n\x00\x0f\x05\x0a";
  write_bytes(tmp_path("a.pgm"), pgm, sizeof pgm - 1);
  tio_image_t im;
  CU_ASSERT_FATAL(tio_read_pnm(tmp_path("a.pgm"), &im, g_err, sizeof g_err) == 0);
  CU_ASSERT(im.width == 2 && im.height == 2 && im.channels == 1);
  CU_ASSERT(im.pixels[0] == 0 && im.pixels[1] == 255 && im.pixels[2] == 85 &&
            im.pixels[3] == 170);
  tio_image_free(&im);

  const char ppm[] = "P6 2 1 255\n\x01\x02\x03\x04\x05\x06";
  write_bytes(tmp_path("b.ppm"), ppm, sizeof ppm - 1);
  CU_ASSERT_FATAL(tio_read_pnm(tmp_path("b.ppm"), &im, g_err, sizeof g_err) == 0);
  CU_ASSERT(im.width == 2 && im.height == 1 && im.channels == 3);
  CU_ASSERT(im.pixels[5] == 6);
  tio_image_free(&im);

  const char trunc[] = "P5\n4 4\n255\n\x01\x02";
  write_bytes(tmp_path("t.pgm"), trunc, sizeof trunc - 1);
  CU_ASSERT(tio_read_pnm(tmp_path("t.pgm"), &im, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "truncated") != NULL);
  const char ascii[] = "P2\n1 1\n255\n7\n";
  write_bytes(tmp_path("p2.pgm"), ascii, sizeof ascii - 1);
  CU_ASSERT(tio_read_pnm(tmp_path("p2.pgm"), &im, g_err, sizeof g_err) == -1);
  const char deep[] = "P5\n1 1\n65535\n\x00\x01";
  write_bytes(tmp_path("d.pgm"), deep, sizeof deep - 1);
  CU_ASSERT(tio_read_pnm(tmp_path("d.pgm"), &im, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "16-bit") != NULL);
}

static axle_tensor_info_t info(const char* name, axle_dtype_t dtype, uint32_t rank,
                               int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  axle_tensor_info_t t = {.struct_size = sizeof t, .name = name, .dtype = dtype, .rank = rank};
  t.shape[0] = d0;
  t.shape[1] = d1;
  t.shape[2] = d2;
  t.shape[3] = d3;
  return t;
}

static void test_image_to_inputs(void) {
  /* 2x2 grey: 0 51 / 102 255 */
  const char pgm[] = "P5 2 2 255\n\x00\x33\x66\xff";
  write_bytes(tmp_path("g.pgm"), pgm, sizeof pgm - 1);
  const char* g = tmp_path("g.pgm");
  char gpath[256];
  snprintf(gpath, sizeof gpath, "%s", g);
  tio_image_options_t def = TIO_IMAGE_OPTIONS_DEFAULT;
  axle_tensor_t* t;

  axle_tensor_info_t nchw = info("x", AXLE_DTYPE_F32, 4, 1, 1, 2, 2);
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &nchw, NULL, &t, g_err, sizeof g_err) == 0);
  const float* f = axle_tensor_data(t);
  CU_ASSERT_DOUBLE_EQUAL(f[1], 0.2, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(f[3], 1.0, 1e-6);
  axle_tensor_release(t);

  tio_image_options_t inv = {.scale = 1.0, .invert = 1};
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &nchw, &inv, &t, g_err, sizeof g_err) == 0);
  f = axle_tensor_data(t);
  CU_ASSERT_DOUBLE_EQUAL(f[0], 255.0, 0.0);
  CU_ASSERT_DOUBLE_EQUAL(f[3], 0.0, 0.0);
  axle_tensor_release(t);

  /* Grey into a 3-channel NHWC input: repeated per channel, interleaved. */
  axle_tensor_info_t nhwc = info("x", AXLE_DTYPE_F32, 4, 1, 2, 2, 3);
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &nhwc, &def, &t, g_err, sizeof g_err) == 0);
  f = axle_tensor_data(t);
  CU_ASSERT(axle_tensor_shape(t)[3] == 3);
  CU_ASSERT_DOUBLE_EQUAL(f[3], 0.2, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(f[5], 0.2, 1e-6);
  axle_tensor_release(t);

  /* uint8 without quantization: raw pixels, --scale ignored. */
  axle_tensor_info_t u8 = info("x", AXLE_DTYPE_U8, 4, 1, 1, 2, 2);
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &u8, &def, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(((const uint8_t*)axle_tensor_data(t))[3] == 255);
  axle_tensor_release(t);

  /* int8 quantized with scale 1/255, zero point -128: the real value pixel/255
   * quantizes to pixel - 128. */
  float qs = 1.0f / 255.0f;
  int32_t zp = -128;
  axle_tensor_info_t i8 = info("x", AXLE_DTYPE_I8, 4, 1, 1, 2, 2);
  i8.quant = (axle_quant_t){.count = 1, .scales = &qs, .zero_points = &zp};
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &i8, &def, &t, g_err, sizeof g_err) == 0);
  const int8_t* q = axle_tensor_data(t);
  CU_ASSERT(q[0] == -128 && q[1] == -77 && q[3] == 127);
  axle_tensor_release(t);

  /* Symbolic dims take the image's size; rank 2 is HW. */
  axle_tensor_info_t sym = info("x", AXLE_DTYPE_F32, 4, -1, -1, -1, -1);
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &sym, &def, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_shape(t)[0] == 1 && axle_tensor_shape(t)[1] == 1 &&
            axle_tensor_shape(t)[2] == 2 && axle_tensor_shape(t)[3] == 2);
  axle_tensor_release(t);
  axle_tensor_info_t hw = info("x", AXLE_DTYPE_F64, 2, 2, 2, 0, 0);
  CU_ASSERT_FATAL(tio_load_for_input(gpath, &hw, &def, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT_DOUBLE_EQUAL(((const double*)axle_tensor_data(t))[2], 0.4, 1e-12);
  axle_tensor_release(t);

  /* Wrong size and impossible layouts are refused with the input's name. */
  axle_tensor_info_t big = info("pixels", AXLE_DTYPE_F32, 4, 1, 1, 8, 8);
  CU_ASSERT(tio_load_for_input(gpath, &big, &def, &t, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "'pixels'") != NULL && strstr(g_err, "[1, 1, 8, 8]") != NULL);
  axle_tensor_info_t odd = info("x", AXLE_DTYPE_F32, 4, 1, 5, 2, 7);
  CU_ASSERT(tio_load_for_input(gpath, &odd, &def, &t, g_err, sizeof g_err) == -1);
  axle_tensor_info_t batch = info("x", AXLE_DTYPE_F32, 4, 4, 1, 2, 2);
  CU_ASSERT(tio_load_for_input(gpath, &batch, &def, &t, g_err, sizeof g_err) == -1);

  /* Colour into a 1-channel input becomes luma; into CHW stays planar. */
  const char ppm[] = "P6 1 1 255\n\xff\x00\x00";
  write_bytes(tmp_path("c.ppm"), ppm, sizeof ppm - 1);
  axle_tensor_info_t grey = info("x", AXLE_DTYPE_F32, 4, 1, 1, 1, 1);
  CU_ASSERT_FATAL(tio_load_for_input(tmp_path("c.ppm"), &grey, &def, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT_DOUBLE_EQUAL(((const float*)axle_tensor_data(t))[0], 0.299, 1e-6);
  axle_tensor_release(t);
  axle_tensor_info_t chw = info("x", AXLE_DTYPE_U8, 3, 3, 1, 1, 0);
  CU_ASSERT_FATAL(tio_load_for_input(tmp_path("c.ppm"), &chw, &def, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(((const uint8_t*)axle_tensor_data(t))[0] == 255 &&
            ((const uint8_t*)axle_tensor_data(t))[1] == 0);
  axle_tensor_release(t);

  /* No model input: uint8 NCHW as stored. */
  CU_ASSERT_FATAL(tio_load_for_input(tmp_path("c.ppm"), NULL, NULL, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_dtype(t) == AXLE_DTYPE_U8 && axle_tensor_shape(t)[1] == 3);
  axle_tensor_release(t);
}

static void test_npy_to_inputs(void) {
  const double v[4] = {0.25, 0.5, 0.75, 1.0};
  write_npy(tmp_path("d.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
            v, sizeof v);
  char path[256];
  snprintf(path, sizeof path, "%s", tmp_path("d.npy"));
  axle_tensor_t* t;
  /* float64 [2,2] into float32 [1,1,2,2]: cast, reshaped by element count. */
  axle_tensor_info_t want = info("x", AXLE_DTYPE_F32, 4, 1, 1, 2, 2);
  CU_ASSERT_FATAL(tio_load_for_input(path, &want, NULL, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_dtype(t) == AXLE_DTYPE_F32 && axle_tensor_rank(t) == 4);
  CU_ASSERT_DOUBLE_EQUAL(((const float*)axle_tensor_data(t))[2], 0.75, 0.0);
  axle_tensor_release(t);
  /* Symbolic dims take the file's. */
  axle_tensor_info_t sym = info("x", AXLE_DTYPE_F64, 2, -1, 2, 0, 0);
  CU_ASSERT_FATAL(tio_load_for_input(path, &sym, NULL, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(axle_tensor_shape(t)[0] == 2);
  axle_tensor_release(t);
  /* To integers: rounded. */
  axle_tensor_info_t ints = info("x", AXLE_DTYPE_I64, 2, 2, 2, 0, 0);
  CU_ASSERT_FATAL(tio_load_for_input(path, &ints, NULL, &t, g_err, sizeof g_err) == 0);
  CU_ASSERT(((const int64_t*)axle_tensor_data(t))[1] == 1);
  axle_tensor_release(t);
  axle_tensor_info_t wrong = info("x", AXLE_DTYPE_F32, 2, 3, 3, 0, 0);
  CU_ASSERT(tio_load_for_input(path, &wrong, NULL, &t, g_err, sizeof g_err) == -1);
  CU_ASSERT(strstr(g_err, "[2, 2]") != NULL && strstr(g_err, "[3, 3]") != NULL);
  CU_ASSERT(tio_load_for_input("x.jpg", &wrong, NULL, &t, g_err, sizeof g_err) == -1);
}

static void test_element_conversions(void) {
  uint16_t h[1];
  const double cases[][2] = {
      {1.0, 1.0},
      {-2.0, -2.0},
      {0.5, 0.5},
      {65504.0, 65504.0},
      {65520.0, INFINITY},
      {1e-7, 1.1920928955078125e-07}, /* subnormal: 2 x 2^-24 */
      {1.00048828125, 1.0},           /* tie to even */
      /* Just above that tie, rounded once from double (through float it
       * would become the tie and round down). */
      {1.00048828125 + 0x1p-40, 1.0009765625},
      {1e-9, 0.0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tio_set(h, AXLE_DTYPE_F16, 0, cases[i][0]);
    double got = tio_get(h, AXLE_DTYPE_F16, 0);
    if (isinf(cases[i][1])) {
      CU_ASSERT(isinf(got) && got > 0);
    } else {
      CU_ASSERT_DOUBLE_EQUAL(got, cases[i][1], 0.0);
    }
  }
  tio_set(h, AXLE_DTYPE_BF16, 0, 3.0);
  CU_ASSERT_DOUBLE_EQUAL(tio_get(h, AXLE_DTYPE_BF16, 0), 3.0, 0.0);
  tio_set(h, AXLE_DTYPE_BF16, 0, 1.00390625 + 0x1p-40); /* above the tie 1 + 2^-8 */
  CU_ASSERT_DOUBLE_EQUAL(tio_get(h, AXLE_DTYPE_BF16, 0), 1.0078125, 0.0);
  tio_set(h, AXLE_DTYPE_F16, 0, NAN);
  CU_ASSERT(isnan(tio_get(h, AXLE_DTYPE_F16, 0)));

  /* Integers saturate rather than wrap. */
  uint8_t u8;
  tio_set(&u8, AXLE_DTYPE_U8, 0, 300.0);
  CU_ASSERT(u8 == 255);
  tio_set(&u8, AXLE_DTYPE_U8, 0, -3.0);
  CU_ASSERT(u8 == 0);
  int64_t i64;
  tio_set(&i64, AXLE_DTYPE_I64, 0, 1e30);
  CU_ASSERT(i64 == INT64_MAX);
  uint64_t u64;
  tio_set(&u64, AXLE_DTYPE_U64, 0, 1e30);
  CU_ASSERT(u64 == UINT64_MAX);
  CU_ASSERT(tio_kind_from_path("a/b.NPY") == TIO_KIND_NPY);
  CU_ASSERT(tio_kind_from_path("noext") == TIO_KIND_UNKNOWN);
}

static int cleanup_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : 1;
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("tensor_io", NULL, cleanup_dir);
  CU_add_test(s, "npy round trip, every dtype", test_npy_roundtrip_all_dtypes);
  CU_add_test(s, "npy rank 0 and rank 1 headers", test_npy_header_shapes);
  CU_add_test(s, "npy v2 header and dict variants", test_npy_v2_and_variants);
  CU_add_test(s, "npy errors name the file and reason", test_npy_errors);
  CU_add_test(s, "PGM/PPM parsing", test_pnm_parse);
  CU_add_test(s, "images to model inputs", test_image_to_inputs);
  CU_add_test(s, "npy to model inputs", test_npy_to_inputs);
  CU_add_test(s, "f16/bf16 and saturation", test_element_conversions);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
