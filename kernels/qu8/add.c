/* Quantized addition (axle_kernels_qu8.h): the portable variant and the
 * dispatching, threaded entry point. This directory is compiled with
 * -ffp-contract=off, so the multiplies and the add below stay separately
 * rounded as the unfused QDQ graph computes them. */
#include "axle_kernels_qu8.h"
#include "requant.h"

void axle_qu8_add__scalar(size_t n, const uint8_t* a, const uint8_t* b,
                          const axle_qu8_add_params_t* q, uint8_t* y) {
  for (size_t i = 0; i < n; ++i) {
    const float va = (float)(a[i] - q->a_zero_point) * q->a_scale;
    const float vb = (float)(b[i] - q->b_zero_point) * q->b_scale;
    y[i] = axle_qu8_round_clamp((va + vb) / q->y_scale, q->y_zero_point, q->min, q->max);
  }
}

typedef struct add_run_t {
  size_t n, per_task;
  const uint8_t *a, *b;
  const axle_qu8_add_params_t* q;
  uint8_t* y;
  void (*fn)(size_t, const uint8_t*, const uint8_t*, const axle_qu8_add_params_t*, uint8_t*);
} add_run_t;

static void add_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const add_run_t* r = arg;
  const size_t lo = task * r->per_task;
  const size_t count = r->n - lo < r->per_task ? r->n - lo : r->per_task;
  r->fn(count, r->a + lo, r->b + lo, r->q, r->y + lo);
}

void axle_qu8_add(size_t n, const uint8_t* a, const uint8_t* b, const axle_qu8_add_params_t* q,
                  uint8_t* y, const axle_parallel_t* par) {
  if (n == 0) return;
  add_run_t r = {
      n,
      n,
      a,
      b,
      q,
      y,
      axle_kernels_isa() >= AXLE_ISA_AVX2_FMA ? axle_qu8_add__avx2 : axle_qu8_add__scalar};
  /* Split only when each thread gets enough to cover the hand-off (a
   * MobileNetV2 residual at 56x56x24 is 75 KB); slices stay 64-byte
   * multiples so no two threads write one cache line. */
  const size_t threads = axle_parallel_threads(par);
  if (threads > 1 && n >= 16384) r.per_task = (n / threads + 63) / 64 * 64;
  axle_parallel_run(par, (n + r.per_task - 1) / r.per_task, add_task, &r);
}
