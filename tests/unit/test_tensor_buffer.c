/* Tensors and device buffers through the public API: shapes, wrapping caller
 * memory without a copy, quantization, device memory allocate/map/import, and
 * runs whose inputs live in device memory. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"

static axle_runtime_t* rt;

static int setup(void) { return axle_runtime_create(NULL, &rt) != AXLE_OK; }
static int teardown(void) {
  axle_runtime_release(rt);
  return 0;
}

static uint32_t device(const char* name) {
  uint32_t index = UINT32_MAX;
  CU_ASSERT_EQUAL(axle_runtime_device_find(rt, name, &index), AXLE_OK);
  return index;
}

static void test_create_shape(void) {
  const int64_t shape[3] = {2, 3, 4};
  axle_tensor_t* t = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_I16, 3, shape, &t), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_dtype(t), AXLE_DTYPE_I16);
  CU_ASSERT_EQUAL(axle_tensor_rank(t), 3);
  CU_ASSERT_EQUAL(axle_tensor_shape(t)[2], 4);
  CU_ASSERT_EQUAL(axle_tensor_element_count(t), 24);
  CU_ASSERT_EQUAL(axle_tensor_byte_size(t), 48);
  const int16_t* d = (const int16_t*)axle_tensor_data(t);
  int zero = 1;
  for (int i = 0; i < 24; ++i) zero &= d[i] == 0;
  CU_ASSERT(zero);
  axle_tensor_retain(t);
  axle_tensor_release(t);
  CU_ASSERT_EQUAL(axle_tensor_rank(t), 3); /* still alive: one reference left */
  axle_tensor_release(t);

  /* Scalars and empty tensors are tensors too. */
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 0, NULL, &t), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_element_count(t), 1);
  axle_tensor_release(t);
  const int64_t empty[2] = {0, 5};
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 2, empty, &t), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_byte_size(t), 0);
  axle_tensor_release(t);
}

static void test_create_errors(void) {
  axle_tensor_t* t = (axle_tensor_t*)&t;
  const int64_t neg[2] = {2, -1};
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 2, neg, &t), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(t);
  const int64_t huge[3] = {1ll << 40, 1ll << 40, 1ll << 40};
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 3, huge, &t), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NOT_NULL(strstr(axle_status_message(), "overflow"));
  const int64_t one[1] = {1};
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_STRING, 1, one, &t), AXLE_STATUS_UNSUPPORTED);
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 9, one, &t), AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_EQUAL(axle_tensor_create(AXLE_DTYPE_F32, 1, one, NULL), AXLE_STATUS_INVALID_ARGUMENT);
}

static int released;
static void on_release(void* user) { released += *(int*)user; }

static void test_wrap_no_copy(void) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  int weight = 7;
  axle_tensor_t* t = NULL;
  released = 0;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_wrap(AXLE_DTYPE_F32, 2, shape, data, sizeof data, on_release,
                                         &weight, &t),
                        AXLE_OK);
  CU_ASSERT_PTR_EQUAL(axle_tensor_data(t), data);
  axle_tensor_release(t);
  CU_ASSERT_EQUAL(released, 7);
  /* Too little memory for the shape is refused, and nothing is released. */
  CU_ASSERT_EQUAL(axle_tensor_wrap(AXLE_DTYPE_F32, 2, shape, data, sizeof data - 1, on_release,
                                   &weight, &t),
                  AXLE_STATUS_INVALID_ARGUMENT);
  CU_ASSERT_PTR_NULL(t);
  CU_ASSERT_EQUAL(released, 7);
}

static void test_quant(void) {
  const int64_t shape[2] = {3, 2};
  axle_tensor_t* t = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create(AXLE_DTYPE_U8, 2, shape, &t), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_quant(t).count, 0);
  float scales[3] = {0.5f, 0.25f, 0.125f};
  int32_t zps[3] = {128, 0, 7};
  axle_quant_t q = {3, 0, scales, zps};
  CU_ASSERT_EQUAL(axle_tensor_set_quant(t, &q), AXLE_OK);
  scales[0] = 99.0f; /* the tensor keeps its own copy */
  axle_quant_t got = axle_tensor_quant(t);
  CU_ASSERT_EQUAL(got.count, 3);
  CU_ASSERT_EQUAL(got.axis, 0);
  CU_ASSERT_EQUAL(got.scales[0], 0.5f);
  CU_ASSERT_EQUAL(got.zero_points[2], 7);
  /* Per-channel along an axis whose size differs from the count. */
  axle_quant_t bad = {3, 1, scales, zps};
  CU_ASSERT_EQUAL(axle_tensor_set_quant(t, &bad), AXLE_STATUS_INVALID_ARGUMENT);
  axle_quant_t per_tensor = {1, 0, scales + 1, zps + 1};
  CU_ASSERT_EQUAL(axle_tensor_set_quant(t, &per_tensor), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_quant(t).count, 1);
  CU_ASSERT_EQUAL(axle_tensor_quant(t).scales[0], 0.25f);
  axle_tensor_release(t);
}

static void test_buffer_allocate_map(void) {
  const char* names[] = {"cpu", "ref"};
  for (int k = 0; k < 2; ++k) {
    axle_buffer_t* b = NULL;
    CU_ASSERT_EQUAL_FATAL(axle_buffer_allocate(rt, device(names[k]), 4096, &b), AXLE_OK);
    CU_ASSERT_EQUAL(axle_buffer_size(b), 4096);
    void* p = NULL;
    CU_ASSERT_EQUAL_FATAL(axle_buffer_map(b, &p), AXLE_OK);
    memset(p, 0x5a, 4096);
    void* again = NULL;
    CU_ASSERT_EQUAL(axle_buffer_map(b, &again), AXLE_OK); /* maps nest */
    CU_ASSERT_PTR_EQUAL(again, p);
    axle_buffer_unmap(b);
    axle_buffer_unmap(b);
    CU_ASSERT_EQUAL(axle_buffer_map(b, &p), AXLE_OK);
    CU_ASSERT_EQUAL(((unsigned char*)p)[4095], 0x5a); /* contents survive unmap */
    axle_buffer_unmap(b);
    axle_buffer_release(b);
  }
  axle_buffer_t* b = (axle_buffer_t*)&b;
  CU_ASSERT_EQUAL(axle_buffer_allocate(rt, 999, 16, &b), AXLE_STATUS_NOT_FOUND);
  CU_ASSERT_PTR_NULL(b);
  axle_buffer_release(NULL);
}

static void test_buffer_import(void) {
  static float host[256];
  axle_buffer_t* b = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_buffer_import(rt, device("cpu"), host, sizeof host, &b), AXLE_OK);
  void* p = NULL;
  CU_ASSERT_EQUAL(axle_buffer_map(b, &p), AXLE_OK);
  CU_ASSERT_PTR_EQUAL(p, host); /* the CPU uses the caller's memory itself */
  axle_buffer_unmap(b);
  axle_buffer_release(b);
  CU_ASSERT_EQUAL(axle_buffer_import(rt, device("cpu"), NULL, 16, &b), AXLE_STATUS_INVALID_ARGUMENT);
}

/* A run whose input lives in the reference device's memory, at an offset. */
static void test_run_from_device_buffer(void) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/models/add.onnx", getenv("AXLE_SOURCE_DIR"));
  axle_model_t* m = NULL;
  axle_session_t* s = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_model_load_file(path, &m), AXLE_OK);
  const char* devs[] = {"ref"};
  axle_session_options_t o = {.struct_size = sizeof(o), .devices = devs, .device_count = 1};
  CU_ASSERT_EQUAL_FATAL(axle_session_create(rt, m, &o, &s), AXLE_OK);

  axle_buffer_t* b = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_buffer_allocate(rt, device("ref"), 64 + 2 * 4000, &b), AXLE_OK);
  const int64_t shape[2] = {1, 1000};
  axle_tensor_t *a = NULL, *c = NULL, *out = NULL;
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create_on_buffer(b, 64, AXLE_DTYPE_F32, 2, shape, &a), AXLE_OK);
  CU_ASSERT_EQUAL_FATAL(axle_tensor_create_on_buffer(b, 64 + 4000, AXLE_DTYPE_F32, 2, shape, &c),
                        AXLE_OK);
  axle_buffer_release(b); /* the tensors keep it alive */
  float* pa = (float*)axle_tensor_data(a);
  float* pc = (float*)axle_tensor_data(c);
  for (int i = 0; i < 1000; ++i) {
    pa[i] = (float)i;
    pc[i] = 0.5f;
  }
  const char* in[] = {"a", "b"};
  axle_tensor_t* inputs[] = {a, c};
  CU_ASSERT_EQUAL(axle_session_run(s, NULL, in, inputs, 2, NULL, &out, 1), AXLE_OK);
  const float* y = (const float*)axle_tensor_data(out);
  int ok = 1;
  for (int i = 0; i < 1000; ++i) ok &= y[i] == (float)i + 0.5f;
  CU_ASSERT(ok);
  /* A tensor that does not fit its buffer is refused. */
  axle_tensor_t* big = NULL;
  CU_ASSERT_EQUAL(axle_buffer_allocate(rt, device("ref"), 100, &b), AXLE_OK);
  CU_ASSERT_EQUAL(axle_tensor_create_on_buffer(b, 0, AXLE_DTYPE_F32, 2, shape, &big),
                  AXLE_STATUS_INVALID_ARGUMENT);
  axle_buffer_release(b);
  axle_tensor_release(out);
  axle_tensor_release(a);
  axle_tensor_release(c);
  axle_session_release(s);
  axle_model_release(m);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("tensor_buffer", setup, teardown);
  CU_add_test(s, "create, shape, refcount", test_create_shape);
  CU_add_test(s, "create errors", test_create_errors);
  CU_add_test(s, "wrap caller memory without a copy", test_wrap_no_copy);
  CU_add_test(s, "quantization parameters", test_quant);
  CU_add_test(s, "buffer allocate and map", test_buffer_allocate_map);
  CU_add_test(s, "buffer import", test_buffer_import);
  CU_add_test(s, "run with inputs in device memory", test_run_from_device_buffer);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
