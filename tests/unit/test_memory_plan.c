/* Memory planner: liveness-based offset assignment (core/src/memory_plan.c). */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "session.h"

/* No two items alive at the same time may overlap in memory. */
static void assert_valid(const axle_interval_t* it, uint32_t n, uint64_t arena, uint64_t align) {
  for (uint32_t i = 0; i < n; ++i) {
    CU_ASSERT_EQUAL(it[i].offset % align, 0);
    CU_ASSERT(it[i].offset + it[i].size <= arena);
    for (uint32_t j = i + 1; j < n; ++j) {
      int live_together = !(it[i].last < it[j].first || it[j].last < it[i].first);
      int disjoint = it[i].offset + it[i].size <= it[j].offset ||
                     it[j].offset + it[j].size <= it[i].offset;
      if (live_together) CU_ASSERT(disjoint);
    }
  }
}

static void test_chain_reuses(void) {
  /* A chain a->b->c->d: each value dies when the next is made, so two slots
   * suffice. */
  axle_interval_t it[4] = {{1000, 0, 1, 0}, {1000, 1, 2, 0}, {1000, 2, 3, 0}, {1000, 3, 4, 0}};
  uint64_t arena = axle_memory_plan(it, 4, 64);
  assert_valid(it, 4, arena, 64);
  CU_ASSERT_EQUAL(arena, 2 * 1024);
}

static void test_all_live(void) {
  axle_interval_t it[3] = {{100, 0, 9, 0}, {200, 0, 9, 0}, {300, 0, 9, 0}};
  uint64_t arena = axle_memory_plan(it, 3, 64);
  assert_valid(it, 3, arena, 64);
  CU_ASSERT_EQUAL(arena, 128 + 256 + 320);
}

static void test_gap_is_filled(void) {
  /* A small late value fits into the hole a big early one leaves. */
  axle_interval_t it[3] = {{4096, 0, 1, 0}, {4096, 0, 5, 0}, {1024, 3, 5, 0}};
  uint64_t arena = axle_memory_plan(it, 3, 64);
  assert_valid(it, 3, arena, 64);
  CU_ASSERT_EQUAL(arena, 8192);
}

static void test_empty(void) { CU_ASSERT_EQUAL(axle_memory_plan(NULL, 0, 64), 0); }

static void test_random_valid(void) {
  srand(7);
  for (int round = 0; round < 200; ++round) {
    axle_interval_t it[40];
    uint32_t n = (uint32_t)(rand() % 40) + 1;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
      it[i].size = (uint64_t)(rand() % 5000);
      it[i].first = (uint32_t)(rand() % 30);
      it[i].last = it[i].first + (uint32_t)(rand() % 6);
      sum += (it[i].size + 63) / 64 * 64;
    }
    uint64_t arena = axle_memory_plan(it, n, 64);
    assert_valid(it, n, arena, 64);
    CU_ASSERT(arena <= sum);
  }
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("memory_plan", NULL, NULL);
  CU_add_test(s, "chain reuses two slots", test_chain_reuses);
  CU_add_test(s, "all live at once", test_all_live);
  CU_add_test(s, "gap is filled", test_gap_is_filled);
  CU_add_test(s, "empty", test_empty);
  CU_add_test(s, "random intervals never overlap", test_random_valid);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
