/* Elementwise work over a kernel parallelism description: the output's flat
 * element range cut into equal contiguous shares, one task each, so every
 * thread writes whole cache lines of its own (shares are multiples of 64
 * elements) and reads the matching part of its inputs. Small tensors run
 * serially (AXLE_PARALLEL_MIN_ELEMENTS). */
#include "axle_kernels_elementwise.h"

#define SHARE_ALIGN 64

/* Tasks for total elements on par: 4 per thread at most (a slowed thread
 * leaves the others something to take over), none under the floor, and a
 * multiple of the thread count where there are that many: 3 tasks on 2
 * threads left one thread two thirds of the work. */
static size_t task_count(const axle_parallel_t* par, int64_t total) {
  const size_t threads = axle_parallel_threads(par);
  if (threads < 2 || total < 2 * AXLE_PARALLEL_MIN_ELEMENTS) return 1;
  size_t tasks = (size_t)(total / AXLE_PARALLEL_MIN_ELEMENTS);
  if (tasks > 4 * threads) tasks = 4 * threads;
  if (tasks > threads) tasks -= tasks % threads;
  return tasks;
}

static int64_t share_of(int64_t total, size_t tasks) {
  const int64_t share = (total + (int64_t)tasks - 1) / (int64_t)tasks;
  return (share + SHARE_ALIGN - 1) / SHARE_ALIGN * SHARE_ALIGN;
}

int64_t axle_parallel_share(const axle_parallel_t* par, int64_t total) {
  const size_t tasks = task_count(par, total);
  return tasks < 2 ? total : share_of(total, tasks);
}

/* The iterator at inner run o (row-major over every axis but the last). */
static void iter_seek(const axle_nd_t* nd, axle_nd_iter_t* it, int64_t o) {
  axle_nd_iter_init(it);
  for (int d = (int)nd->rank - 2; d >= 0; --d) {
    it->idx[d] = o % nd->shape[d];
    o /= nd->shape[d];
    for (uint32_t k = 0; k < nd->ops; ++k) it->off[k] += it->idx[d] * nd->stride[k][d];
  }
}

typedef struct binary_split_t {
  const axle_nd_t* nd;
  axle_binary_fn fn;
  char* y;
  const char* a;
  const char* b;
  size_t ys, as, bs;
  int64_t total, share;
} binary_split_t;

static void binary_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const binary_split_t* s = arg;
  const axle_nd_t* nd = s->nd;
  const uint32_t last = nd->rank - 1;
  const int64_t n = nd->shape[last];
  int64_t e = (int64_t)task * s->share;
  const int64_t end = e + s->share < s->total ? e + s->share : s->total;
  int64_t i = e % n;
  axle_nd_iter_t it;
  iter_seek(nd, &it, e / n);
  while (e < end) {
    const int64_t len = n - i < end - e ? n - i : end - e;
    s->fn(s->a + (it.off[1] + i * nd->stride[1][last]) * (ptrdiff_t)s->as,
          (ptrdiff_t)nd->stride[1][last],
          s->b + (it.off[2] + i * nd->stride[2][last]) * (ptrdiff_t)s->bs,
          (ptrdiff_t)nd->stride[2][last],
          s->y + (it.off[0] + i * nd->stride[0][last]) * (ptrdiff_t)s->ys, (size_t)len);
    e += len;
    i = 0;
    axle_nd_iter_next(nd, &it);
  }
}

void axle_nd_binary_parallel(const axle_nd_t* nd, axle_binary_fn fn, void* y, size_t ys,
                             const void* a, size_t as, const void* b, size_t bs,
                             const axle_parallel_t* par) {
  const int64_t total = axle_nd_count(nd);
  const size_t tasks = task_count(par, total);
  if (tasks < 2) {
    axle_nd_binary_scalar(nd, fn, y, ys, a, as, b, bs);
    return;
  }
  binary_split_t s = {nd, fn, y, a, b, ys, as, bs, total, share_of(total, tasks)};
  axle_parallel_run(par, (size_t)((total + s.share - 1) / s.share), binary_task, &s);
}

typedef struct unary_split_t {
  axle_unary_fn fn;
  const char* x;
  char* y;
  size_t es;
  const void* p;
  int64_t total, share;
} unary_split_t;

static void unary_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const unary_split_t* s = arg;
  const int64_t e = (int64_t)task * s->share;
  const int64_t len = s->total - e < s->share ? s->total - e : s->share;
  s->fn(s->x + e * (ptrdiff_t)s->es, s->y + e * (ptrdiff_t)s->es, (size_t)len, s->p);
}

void axle_unary_parallel(axle_unary_fn fn, const void* x, void* y, size_t n, size_t es,
                         const void* p, const axle_parallel_t* par) {
  const size_t tasks = task_count(par, (int64_t)n);
  if (tasks < 2) {
    fn(x, y, n, p);
    return;
  }
  unary_split_t s = {fn, x, y, es, p, (int64_t)n, share_of((int64_t)n, tasks)};
  axle_parallel_run(par, (size_t)(((int64_t)n + s.share - 1) / s.share), unary_task, &s);
}
