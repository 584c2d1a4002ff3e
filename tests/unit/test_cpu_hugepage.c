/*
 * Tests of the CPU plugin's huge-page placement (cpu_hugepage.c): which
 * blocks get 2 MiB alignment, the AXLE_CPU_HUGE_PAGES=0 switch, and that the
 * advice covers exactly the whole 2 MiB ranges inside a block (read back
 * from the kernel's own record, /proc/self/smaps), leaving its contents and
 * the memory around it alone.
 */
#include <stdint.h>

#include "cpu_hugepage.h"
#include "kernel_test.h"

static const size_t MiB = (size_t)1 << 20;

/* A test that cannot run here says so in the log, not just by passing. */
static void skip(const char* why) {
  fprintf(stderr, "\n  skipped: %s\n", why);
  CU_PASS(why);
}

/* Whether the mapping holding `addr` carries the huge-page advice ("hg" in
 * its VmFlags): 1 or 0, -1 when smaps cannot tell. */
static int advised(const void* addr) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int inside = 0, found = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
      continue;
    }
    if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      found = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return found;
}

static int thp_supported(void) {
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return 0;
  fclose(f);
  return 1;
}

static void test_alignment_policy(void) {
  unsetenv("AXLE_CPU_HUGE_PAGES");
  CU_ASSERT_EQUAL(cpu_huge_align(64, 64), 64);
  CU_ASSERT_EQUAL(cpu_huge_align(CPU_HUGE_BYTES - 1, 64), 64);
  CU_ASSERT_EQUAL(cpu_huge_align(3 * MiB, 4096), (size_t)2 * MiB);
  CU_ASSERT_EQUAL(cpu_huge_align(8 * MiB, 4 * MiB), (size_t)4 * MiB); /* never lowered */
  setenv("AXLE_CPU_HUGE_PAGES", "0", 1);
  CU_ASSERT_EQUAL(cpu_huge_align(3 * MiB, 64), 64);
  unsetenv("AXLE_CPU_HUGE_PAGES");
}

static void test_advice_rejected(void) {
  char small[256];
  CU_ASSERT_EQUAL(cpu_huge_advise(NULL, 4 * MiB), 0);
  CU_ASSERT_EQUAL(cpu_huge_advise(small, sizeof small), 0);
  void* p = NULL;
  CU_ASSERT_FATAL(posix_memalign(&p, 2 * MiB, 4 * MiB) == 0);
  /* No whole 2 MiB range inside: one byte short of it. */
  CU_ASSERT_EQUAL(cpu_huge_advise(p, 2 * MiB - 1), 0);
  setenv("AXLE_CPU_HUGE_PAGES", "0", 1);
  CU_ASSERT_EQUAL(cpu_huge_advise(p, 4 * MiB), 0);
  unsetenv("AXLE_CPU_HUGE_PAGES");
  free(p);
}

static void test_advice_range(void) {
  if (!thp_supported()) {
    skip("this kernel has no transparent huge pages");
    return;
  }
  /* A block that starts 4 KiB past a 2 MiB boundary and ends 4 KiB past
   * the next-but-one: only the 2 MiB in between is whole. */
  unsigned char* base = NULL;
  CU_ASSERT_FATAL(posix_memalign((void**)&base, 2 * MiB, 6 * MiB) == 0);
  unsigned char* p = base + 4096;
  const size_t size = 4 * MiB;
  CU_ASSERT_EQUAL(cpu_huge_advise(p, size), 1);
  for (size_t i = 0; i < size; ++i) p[i] = (unsigned char)(i * 7u);
  const int head = advised(base), mid = advised(base + 2 * MiB), tail = advised(base + 4 * MiB);
  if (head < 0 || mid < 0 || tail < 0) {
    skip("/proc/self/smaps does not show VmFlags");
  } else {
    CU_ASSERT_EQUAL(head, 0);
    CU_ASSERT_EQUAL(mid, 1);
    CU_ASSERT_EQUAL(tail, 0);
  }
  size_t bad = 0;
  for (size_t i = 0; i < size; ++i) bad += p[i] != (unsigned char)(i * 7u);
  CU_ASSERT_EQUAL(bad, 0);
  free(base);
}

int main(void) {
  static const kt_entry_t tests[] = {
      {"alignment: 2 MiB from 2 MiB up, never lowered, off switch", test_alignment_policy},
      {"advice refused: NULL, small, no whole range, switched off", test_advice_rejected},
      {"advice covers the whole 2 MiB ranges only", test_advice_range},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("cpu plugin huge pages", tests)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
