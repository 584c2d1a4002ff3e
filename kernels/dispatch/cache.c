/* Cache geometry for kernels that size their working set to it. Queried
 * once; every caller after that reads a cached value. */
#include <stdlib.h>
#include <unistd.h>

#include "axle_kernels.h"

static size_t detect(void) {
  /* AXLE_KERNELS_L2_BYTES overrides the system's answer (tests shrink it to
   * exercise many bands on small tensors; tuning may try other sizes). */
  const char* env = getenv("AXLE_KERNELS_L2_BYTES");
  long bytes = env ? strtol(env, NULL, 10) : -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  /* Unknown, or implausible for one core's L2: assume a small one. */
  return bytes >= 4096 && bytes <= 64L * 1024 * 1024 ? (size_t)bytes : 512 * 1024;
}

/* 0 until queried; racing first calls compute the same answer. */
static size_t g_l2;

size_t axle_kernels_l2_bytes(void) {
  size_t v = __atomic_load_n(&g_l2, __ATOMIC_RELAXED);
  if (!v) {
    v = detect();
    __atomic_store_n(&g_l2, v, __ATOMIC_RELAXED);
  }
  return v;
}
