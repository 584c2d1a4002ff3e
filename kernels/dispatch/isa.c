/* Run-time instruction-set selection. Detection runs once; every caller
 * after that reads a cached value, so dispatch costs one load. */
#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"

static axle_isa_t detect(void) {
  axle_isa_t isa = AXLE_ISA_SCALAR;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  /* libgcc's check includes the OS saving YMM state (XGETBV), so a kernel
   * that lacks it never sees AVX2 here. */
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa = AXLE_ISA_AVX2_FMA;
  /* Likewise for ZMM and opmask state. */
  if (isa == AXLE_ISA_AVX2_FMA && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
    isa = AXLE_ISA_AVX512;
#endif
  const char* cap = getenv("AXLE_KERNELS_ISA");
  if (cap && strcmp(cap, "scalar") == 0) isa = AXLE_ISA_SCALAR;
  if (cap && strcmp(cap, "avx2") == 0 && isa > AXLE_ISA_AVX2_FMA) isa = AXLE_ISA_AVX2_FMA;
  return isa;
}

/* -1 until detected; racing first calls compute the same answer. */
static int g_cached = -1;

axle_isa_t axle_kernels_isa(void) {
  int v = __atomic_load_n(&g_cached, __ATOMIC_RELAXED);
  if (v < 0) {
    v = (int)detect();
    __atomic_store_n(&g_cached, v, __ATOMIC_RELAXED);
  }
  return (axle_isa_t)v;
}

axle_isa_t axle_kernels_set_isa(axle_isa_t isa) {
  const axle_isa_t previous = axle_kernels_isa();
  const axle_isa_t best = detect();
  __atomic_store_n(&g_cached, (int)(isa < best ? isa : best), __ATOMIC_RELAXED);
  return previous;
}
