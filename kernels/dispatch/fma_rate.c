/* Whether 512-bit FMAs issue as fast as 256-bit ones (see axle_kernels.h).
 * No CPUID bit says so: Sapphire Rapids has two 512-bit FMA units, Zen 4
 * runs each 512-bit FMA as two 256-bit halves, and Xeons of the same
 * family differ in how many 512-bit units they have. So it is measured
 * once, by timing the same number of independent FMAs on ymm and on zmm
 * registers. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The loops are assembly: in C the accumulators stay in registers only as
 * the optimiser pleases (at -O0, or -O2 without unrolling, they were in
 * memory, and both loops timed the store forwarding instead). Twelve
 * chains: more than the 2 pipes x 4-5 cycles of FMA latency of any of
 * these CPUs keep in flight, so the loops time throughput, not latency.
 * All operands are zeros (no denormal assists). */
#define AXLE_FMA_LOOP(R)                                 \
  ".irp r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12\n\t" \
  "vxorps %%xmm\\r, %%xmm\\r, %%xmm\\r\n\t"              \
  ".endr\n\t"                                            \
  "1:\n\t"                                               \
  ".irp r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11\n\t"     \
  "vfmadd231ps %%" R "12, %%" R "12, %%" R               \
  "\\r\n\t"                                              \
  ".endr\n\t"                                            \
  "dec %0\n\tjnz 1b\n\tvzeroupper\n\t"
#define AXLE_FMA_CLOBBERS                                                                  \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "cc"

enum { STEPS = 1024 }; /* x 12 FMAs */

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One timed loop, on zmm registers (only on a CPU with AVX-512F) or ymm. */
static double loop_ns(int zmm) {
  long n = STEPS;
  const double t0 = now_ns();
  if (zmm)
    __asm__ volatile(AXLE_FMA_LOOP("zmm") : "+r"(n) : : AXLE_FMA_CLOBBERS);
  else
    __asm__ volatile(AXLE_FMA_LOOP("ymm") : "+r"(n) : : AXLE_FMA_CLOBBERS);
  return now_ns() - t0;
}

/* ~12 K FMAs per timing, 2-4 us on Zen 4; the best of 7 of each, alternating, so
 * that an interruption or a slower moment hits both. Some Intel cores
 * first run 512-bit code at a reduced rate while its upper lanes power up
 * (tens of microseconds), hence the untimed zmm passes before. The halves
 * take twice as long as the ymm loop, whole-width units about as long. */
static int measure(void) {
  if (!axle_kernels_cpu_has(AXLE_ISA_AVX512)) return 0;
  for (int i = 0; i < 16; ++i) loop_ns(1);
  double y = 1e30, z = 1e30;
  for (int i = 0; i < 7; ++i) {
    const double ty = loop_ns(0), tz = loop_ns(1);
    if (ty < y) y = ty;
    if (tz < z) z = tz;
  }
  return z < 1.5 * y;
}
#else
static int measure(void) { return 0; }
#endif

static int detect(void) {
  const char* env = getenv("AXLE_KERNELS_WIDE_FMA");
  if (env && strcmp(env, "0") == 0) return 0;
  if (env && strcmp(env, "1") == 0) return 1;
  return measure();
}

/* -1 until known. Racing first calls may measure differently; the first
 * stored answer is the one every caller gets. */
static int g_wide = -1;

int axle_kernels_wide_fma(void) {
  int v = __atomic_load_n(&g_wide, __ATOMIC_ACQUIRE);
  if (v < 0) {
    int expected = -1;
    const int mine = detect();
    if (__atomic_compare_exchange_n(&g_wide, &expected, mine, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      v = mine;
    else
      v = expected;
  }
  return v;
}

int axle_kernels_set_wide_fma(int wide) {
  const int previous = axle_kernels_wide_fma();
  __atomic_store_n(&g_wide, wide ? 1 : 0, __ATOMIC_RELEASE);
  return previous;
}
