/* Softmax and log-softmax entry points: the variant for axle_kernels_isa(),
 * over par's
 * threads in contiguous runs of whole rows (outer indices), each computed as
 * the serial call computes it, so results do not depend on the split. */
#include "axle_kernels.h"

typedef void (*softmax_fn)(size_t outer, size_t axis, size_t inner, const float* x, float* y);

typedef struct softmax_split_t {
  softmax_fn fn;
  size_t outer, axis, inner, rows;
  const float* x;
  float* y;
} softmax_split_t;

static void softmax_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const softmax_split_t* s = arg;
  const size_t o = task * s->rows, rows = s->outer - o < s->rows ? s->outer - o : s->rows;
  const size_t at = o * s->axis * s->inner;
  s->fn(rows, s->axis, s->inner, s->x + at, s->y + at);
}

static void run(softmax_fn fn, size_t outer, size_t axis, size_t inner, const float* x, float* y,
                const axle_parallel_t* par) {
  const size_t threads = axle_parallel_threads(par), row = axis * inner;
  /* As the elementwise split: tasks of AXLE_PARALLEL_MIN_ELEMENTS or more,
   * 4 per thread at most. */
  size_t tasks = row ? outer * row / AXLE_PARALLEL_MIN_ELEMENTS : 0;
  if (tasks > 4 * threads) tasks = 4 * threads;
  if (tasks > outer) tasks = outer;
  if (threads < 2 || tasks < 2) {
    fn(outer, axis, inner, x, y);
    return;
  }
  softmax_split_t s = {fn, outer, axis, inner, (outer + tasks - 1) / tasks, x, y};
  axle_parallel_run(par, (outer + s.rows - 1) / s.rows, softmax_task, &s);
}

/* The variant axle_kernels_isa() runs. */
static softmax_fn pick(softmax_fn avx512, softmax_fn avx2, softmax_fn scalar) {
  const axle_isa_t isa = axle_kernels_isa();
  return isa >= AXLE_ISA_AVX512 ? avx512 : isa >= AXLE_ISA_AVX2_FMA ? avx2 : scalar;
}

void axle_f32_softmax(size_t outer, size_t axis, size_t inner, const float* x, float* y,
                      const axle_parallel_t* par) {
  run(pick(axle_f32_softmax__avx512, axle_f32_softmax__avx2, axle_f32_softmax_scalar), outer, axis,
      inner, x, y, par);
}

void axle_f32_logsoftmax(size_t outer, size_t axis, size_t inner, const float* x, float* y,
                         const axle_parallel_t* par) {
  run(pick(axle_f32_logsoftmax__avx512, axle_f32_logsoftmax__avx2, axle_f32_logsoftmax_scalar),
      outer, axis, inner, x, y, par);
}
