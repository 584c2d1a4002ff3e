/* Max pooling over planes, split across threads, dispatching to the AVX2
 * plane kernel where it applies. */
#include "axle_kernels.h"

typedef struct pool_run_t {
  const axle_f32_pool_params_t* p;
  const float* x;
  float* y;
  float* tmp;
  size_t tmp_floats;
  size_t planes, per_task;
  int avx2;
} pool_run_t;

static size_t tmp_floats(const axle_f32_pool_params_t* p) {
  return (axle_f32_maxpool2d_tmp_size(p) + 15) / 16 * 16;
}

size_t axle_f32_maxpool_scratch_size(const axle_f32_pool_params_t* p, uint32_t threads) {
  return tmp_floats(p) * (threads ? threads : 1) * sizeof(float);
}

static void pool_task(void* arg, size_t task, uint32_t thread) {
  const pool_run_t* r = arg;
  const axle_f32_pool_params_t* p = r->p;
  const size_t in_vol = (size_t)(p->in[0] * p->in[1] * p->in[2]);
  const size_t out_vol = (size_t)(p->out[0] * p->out[1] * p->out[2]);
  size_t end = (task + 1) * r->per_task;
  if (end > r->planes) end = r->planes;
  for (size_t c = task * r->per_task; c < end; ++c) {
    if (r->avx2) {
      axle_f32_maxpool2d_plane__avx2(p, r->x + c * in_vol, r->y + c * out_vol,
                                     r->tmp + (size_t)thread * r->tmp_floats);
    } else {
      /* The reference on a one-plane view. */
      axle_f32_pool_params_t one = *p;
      one.channels = 1;
      axle_f32_maxpool_scalar(&one, r->x + c * in_vol, r->y + c * out_vol, NULL);
    }
  }
}

void axle_f32_maxpool(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                      const axle_parallel_t* par) {
  const uint32_t threads = axle_parallel_threads(par);
  pool_run_t r = {p, x, y, scratch, tmp_floats(p), (size_t)p->channels, 1, 0};
  r.avx2 = axle_kernels_isa() >= AXLE_ISA_AVX2_FMA && axle_f32_maxpool2d__avx2_supports(p);
  const size_t tasks = threads > 1 ? (size_t)threads * 8 : 1;
  r.per_task = (r.planes + tasks - 1) / tasks;
  if (r.per_task == 0) r.per_task = 1;
  axle_parallel_run(par, (r.planes + r.per_task - 1) / r.per_task, pool_task, &r);
}
