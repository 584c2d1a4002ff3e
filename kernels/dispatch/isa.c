/* Run-time instruction-set selection. Detection runs once; every caller
 * after that reads a cached value, so dispatch costs one load. */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "cpu_features.h"

/* Whether this CPU (and its OS) can run the kernels of level isa. libgcc's
 * checks include the OS saving YMM, ZMM and opmask state (XGETBV), so a
 * kernel that lacks it never sees AVX2 or AVX-512 here. */
int axle_kernels_cpu_has(axle_isa_t isa) {
  if (isa == AXLE_ISA_SCALAR) return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
  switch (isa) {
    case AXLE_ISA_AVX2_FMA:
      return 1;
    case AXLE_ISA_AVX2_VNNI: {
      /* CPUID.(7, 1):EAX bit 4; clang's __builtin_cpu_supports does not
       * know "avxvnni" (its YMM state is the one AVX2 needs). */
      unsigned a, b, c, d;
      return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
    }
    case AXLE_ISA_AVX512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
    default:
      return 0;
  }
#else
  return 0;
#endif
}

/* The highest level at or below cap that this CPU has. */
static axle_isa_t best_up_to(axle_isa_t cap) {
  for (int isa = (int)cap; isa > (int)AXLE_ISA_SCALAR; --isa)
    if (axle_kernels_cpu_has((axle_isa_t)isa)) return (axle_isa_t)isa;
  return AXLE_ISA_SCALAR;
}

static axle_isa_t detect(void) {
  axle_isa_t cap = AXLE_ISA_AVX512;
  const char* name = getenv("AXLE_KERNELS_ISA");
  if (name && strcmp(name, "scalar") == 0) cap = AXLE_ISA_SCALAR;
  if (name && strcmp(name, "avx2") == 0) cap = AXLE_ISA_AVX2_FMA;
  if (name && strcmp(name, "avx2vnni") == 0) cap = AXLE_ISA_AVX2_VNNI;
  return best_up_to(cap);
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
  __atomic_store_n(&g_cached, (int)best_up_to(isa < best ? isa : best), __ATOMIC_RELAXED);
  return previous;
}
