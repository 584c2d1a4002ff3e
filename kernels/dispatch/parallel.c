/* The serial fallback of axle_parallel_t: kernels call these instead of
 * testing for a thread pool themselves. */
#include "axle_kernels.h"

void axle_parallel_run(const axle_parallel_t* par, size_t tasks, axle_task_fn fn, void* arg) {
  if (par && par->run && par->threads > 1 && tasks > 1) {
    par->run(par->ctx, tasks, fn, arg);
    return;
  }
  for (size_t t = 0; t < tasks; ++t) fn(arg, t, 0);
}

uint32_t axle_parallel_threads(const axle_parallel_t* par) {
  return par && par->run && par->threads > 1 ? par->threads : 1;
}
