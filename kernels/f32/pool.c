/* Max and average pooling over planes, split across threads, and global
 * pooling, each dispatching to the best plane / row kernel of this CPU that
 * applies. */
#include "axle_kernels.h"

typedef struct pool_run_t {
  const axle_f32_pool_params_t* p;
  const float* x;
  float* y;
  float* tmp;
  size_t tmp_floats;
  size_t planes, per_task;
  axle_f32_maxpool_plane_fn plane;
} pool_run_t;

/* Per thread: enough for whichever plane kernel dispatch picks, which may
 * change after the caller sized the scratch (axle_kernels_set_isa). */
static size_t tmp_floats(const axle_f32_pool_params_t* p) {
  const size_t a = axle_f32_maxpool2d__avx2_tmp_size(p);
  const size_t b = axle_f32_maxpool2d__avx512_tmp_size(p);
  return ((a > b ? a : b) + 15) / 16 * 16;
}

static size_t avg_tmp_floats(const axle_f32_pool_params_t* p) {
  return (axle_f32_avgpool2d__avx2_tmp_size(p) + 15) / 16 * 16;
}

size_t axle_f32_maxpool_scratch_size(const axle_f32_pool_params_t* p, uint32_t threads) {
  return tmp_floats(p) * (threads ? threads : 1) * sizeof(float);
}

size_t axle_f32_avgpool_scratch_size(const axle_f32_pool_params_t* p, uint32_t threads) {
  return avg_tmp_floats(p) * (threads ? threads : 1) * sizeof(float);
}

/* The references on a one-plane view. */
static void plane_scalar(const axle_f32_pool_params_t* p, const float* x_plane, float* y_plane,
                         float* tmp) {
  (void)tmp;
  axle_f32_pool_params_t one = *p;
  one.channels = 1;
  axle_f32_maxpool_scalar(&one, x_plane, y_plane, NULL);
}

static void avg_plane_scalar(const axle_f32_pool_params_t* p, const float* x_plane, float* y_plane,
                             float* tmp) {
  (void)tmp;
  axle_f32_pool_params_t one = *p;
  one.channels = 1;
  axle_f32_avgpool_scalar(&one, x_plane, y_plane);
}

axle_f32_maxpool_plane_fn axle_f32_maxpool_plane_kernel(const axle_f32_pool_params_t* p) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX512 && axle_f32_maxpool2d__avx512_supports(p))
    return axle_f32_maxpool2d_plane__avx512;
  if (isa >= AXLE_ISA_AVX2_FMA && axle_f32_maxpool2d__avx2_supports(p))
    return axle_f32_maxpool2d_plane__avx2;
  return plane_scalar;
}

static void pool_task(void* arg, size_t task, uint32_t thread) {
  const pool_run_t* r = arg;
  const axle_f32_pool_params_t* p = r->p;
  const size_t in_vol = (size_t)(p->in[0] * p->in[1] * p->in[2]);
  const size_t out_vol = (size_t)(p->out[0] * p->out[1] * p->out[2]);
  float* tmp = r->tmp + (size_t)thread * r->tmp_floats;
  size_t end = (task + 1) * r->per_task;
  if (end > r->planes) end = r->planes;
  for (size_t c = task * r->per_task; c < end; ++c)
    r->plane(p, r->x + c * in_vol, r->y + c * out_vol, tmp);
}

/* The planes of p over par's threads, about 8 tasks per thread. */
static void run_planes(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                       size_t tmp, axle_f32_maxpool_plane_fn plane, const axle_parallel_t* par) {
  const uint32_t threads = axle_parallel_threads(par);
  pool_run_t r = {p, x, y, scratch, tmp, (size_t)p->channels, 1, plane};
  const size_t tasks = threads > 1 ? (size_t)threads * 8 : 1;
  r.per_task = (r.planes + tasks - 1) / tasks;
  if (r.per_task == 0) r.per_task = 1;
  axle_parallel_run(par, (r.planes + r.per_task - 1) / r.per_task, pool_task, &r);
}

void axle_f32_maxpool(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                      const axle_parallel_t* par) {
  run_planes(p, x, y, scratch, tmp_floats(p), axle_f32_maxpool_plane_kernel(p), par);
}

void axle_f32_avgpool(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                      const axle_parallel_t* par) {
  const int vector =
      axle_kernels_isa() >= AXLE_ISA_AVX2_FMA && axle_f32_maxpool2d__avx2_supports(p);
  run_planes(p, x, y, scratch, avg_tmp_floats(p),
             vector ? axle_f32_avgpool2d_plane__avx2 : avg_plane_scalar, par);
}

/* Global pooling over par's threads: one contiguous run of channels each
 * (the layer before, cut by output channels, leaves each thread the rows
 * it wrote), serially below two tasks' worth of elements. */
typedef void (*global_fn)(size_t channels, size_t size, const float* x, float* y);

typedef struct global_run_t {
  global_fn fn;
  size_t channels, size, per_task;
  const float* x;
  float* y;
} global_run_t;

static void global_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const global_run_t* r = arg;
  const size_t c0 = task * r->per_task;
  if (c0 >= r->channels) return;
  const size_t n = r->channels - c0 < r->per_task ? r->channels - c0 : r->per_task;
  r->fn(n, r->size, r->x + c0 * r->size, r->y + c0);
}

static void run_global(global_fn fn, size_t channels, size_t size, const float* x, float* y,
                       const axle_parallel_t* par) {
  const size_t threads = axle_parallel_threads(par);
  if (threads < 2 || channels < 2 || channels * size < 2 * AXLE_PARALLEL_MIN_ELEMENTS) {
    fn(channels, size, x, y);
    return;
  }
  const size_t tasks = threads < channels ? threads : channels;
  global_run_t r = {fn, channels, size, (channels + tasks - 1) / tasks, x, y};
  axle_parallel_run(par, tasks, global_task, &r);
}

void axle_f32_global_avgpool(size_t channels, size_t size, const float* x, float* y,
                             const axle_parallel_t* par) {
  run_global(axle_kernels_isa() >= AXLE_ISA_AVX2_FMA ? axle_f32_global_avgpool__avx2
                                                     : axle_f32_global_avgpool_scalar,
             channels, size, x, y, par);
}

void axle_f32_global_maxpool(size_t channels, size_t size, const float* x, float* y,
                             const axle_parallel_t* par) {
  run_global(axle_kernels_isa() >= AXLE_ISA_AVX2_FMA ? axle_f32_global_maxpool__avx2
                                                     : axle_f32_global_maxpool_scalar,
             channels, size, x, y, par);
}
