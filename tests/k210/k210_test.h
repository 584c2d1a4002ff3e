/*
 * Helpers shared by the K210 test suites: files, the test data directory and
 * CUnit's run-and-exit boilerplate.
 */
#ifndef AXLE_K210_TEST_H_
#define AXLE_K210_TEST_H_

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status CTest reads as "skipped" (SKIP_RETURN_CODE). */
#define K210_TEST_SKIP 77

/* $AXLE_TESTDATA/rel, or "" when AXLE_TESTDATA is unset. */
static inline const char* k210_testdata(const char* rel, char* buf, size_t size) {
  const char* root = getenv("AXLE_TESTDATA");
  if (!root || !*root) return "";
  snprintf(buf, size, "%s/%s", root, rel);
  return buf;
}

/* Whole file in malloc'd memory, or NULL. */
static inline void* k210_read_file(const char* path, size_t* size) {
  FILE* f = path && *path ? fopen(path, "rb") : NULL;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = n >= 0 ? malloc(n ? (size_t)n : 1) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  if (data) *size = (size_t)n;
  return data;
}

/* Registers the suite's tests and runs them; returns the process status. */
typedef struct k210_test_t {
  const char* name;
  void (*fn)(void);
} k210_test_t;

static inline int k210_run_suite(const char* suite, const k210_test_t* tests) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite(suite, NULL, NULL);
  for (const k210_test_t* t = tests; s && t->name; ++t) CU_add_test(s, t->name, t->fn);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}

#endif /* AXLE_K210_TEST_H_ */
