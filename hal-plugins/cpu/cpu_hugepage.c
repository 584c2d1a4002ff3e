/* Transparent huge pages for large blocks (see cpu_hugepage.h). */
#include "cpu_hugepage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static int huge_enabled(void) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const char* env = getenv("AXLE_CPU_HUGE_PAGES");
  return !env || strcmp(env, "0") != 0;
#else
  return 0;
#endif
}

size_t cpu_huge_align(size_t size, size_t align) {
  return size >= CPU_HUGE_BYTES && align < CPU_HUGE_BYTES && huge_enabled() ? CPU_HUGE_BYTES
                                                                              : align;
}

int cpu_huge_advise(void* p, size_t size) {
  if (!p || size < CPU_HUGE_BYTES || !huge_enabled()) return 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t mask = (uintptr_t)CPU_HUGE_BYTES - 1;
  const uintptr_t first = ((uintptr_t)p + mask) & ~mask;
  const uintptr_t end = ((uintptr_t)p + size) & ~mask;
  if (end <= first) return 0;
  return madvise((void*)first, (size_t)(end - first), MADV_HUGEPAGE) == 0;
#else
  return 0;
#endif
}
