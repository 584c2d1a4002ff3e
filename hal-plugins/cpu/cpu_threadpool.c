/* Thread pool of the CPU plugin (see cpu_threadpool.h for the contract). */
#include "cpu_threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() sched_yield()
#endif

#define POOL_MAX_WORKERS 63
/* How long an idle worker (or a caller waiting for the others) spins before
 * sleeping. Between two ops of one run the gap is mostly a few
 * microseconds, but a serial stretch or an uneven region can last a few
 * hundred: at 100 us, ResNet-50's helper (2 threads) started its regions
 * 119 us late in all per run, 15-17 us where it had gone to sleep, and the
 * runs were 0.8-1.6 % slower than at 400 us (plugins alternating, both
 * orders). An idle pool then burns at most 0.4 ms of a core after a run. */
#define POOL_SPIN_NS 400000ull

typedef struct pool_job_t {
  axle_task_fn fn;
  void* arg;
} pool_job_t;

/* Participant i of n owns tasks [tasks * i / n, tasks * (i + 1) / n) and
 * takes them in order before helping with the others' (from their next
 * task on). A shared counter handed the two threads alternate tasks
 * instead, so a layer's thread read most of its input from the other core,
 * which had written it in the layer before: kernels cut their tasks in
 * the order of the data (columns or rows of the image, planes), and
 * consecutive layers cut alike keep each half of a map on one core. 2
 * threads: MobileNetV2 3.24 -> 3.13 ms, ResNet-18 9.75 -> 9.34, ResNet-50
 * 26.9 -> 26.2, the int8 MobileNetV2 1.73 -> 1.60 (see
 * docs/cpu-performance.md). One cache line per range: the counters are
 * written by different threads. */
typedef struct pool_range_t {
  size_t next; /* atomic; may run past end by the number of takers */
  size_t end;
} __attribute__((aligned(64))) pool_range_t;

/* A region's ticket: sequence number above, helper count (workers 1..n take
 * part) in the low byte. One atomic word, so a worker learns whether it is
 * needed without reading the job, which only helpers may touch: the next
 * region cannot rewrite it before every helper has finished. */
#define TICKET_HELPERS(t) ((t) & 0xFFu)
#define TICKET_STEP 0x100u

typedef struct pool_t {
  pthread_mutex_t lock;       /* guards everything below except the atomics */
  pthread_cond_t wake;        /* workers: a new ticket was issued, or quit */
  pthread_cond_t done;        /* caller: the last helper finished */
  pthread_mutex_t region;     /* held by the thread running a region */
  pthread_t threads[POOL_MAX_WORKERS];
  uint32_t worker_count;
  int refs;
  int quit;
  pool_job_t job;
  uint32_t ticket;            /* atomic: see TICKET_HELPERS */
  pool_range_t ranges[POOL_MAX_WORKERS + 1]; /* the job's, one per participant */
  uint32_t pending;           /* atomic: helpers still working */
  uint32_t sleepers_done;     /* caller sleeping on `done` */
} pool_t;

static pool_t g_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .region = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Participant id's own range, then the others' leftovers in turn; n:
 * the region's participants (its ticket's helpers + 1). */
static void run_tasks(pool_t* p, uint32_t id, uint32_t n) {
  const pool_job_t* job = &p->job; /* stable while this thread is counted */
  for (uint32_t k = 0; k < n; ++k) {
    pool_range_t* r = &p->ranges[(id + k) % n];
    for (;;) {
      const size_t t = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
      if (t >= r->end) break;
      job->fn(job->arg, t, id);
    }
  }
}

/* A worker's start argument: its id, and the ticket current when it was
 * created. Reading the ticket in the new thread instead could already see
 * the region it was created for, and the worker would wait past it. */
#define WORKER_ARG(id, ticket) ((void*)(uintptr_t)(((uint64_t)(ticket) << 8) | (id)))

static void* worker_main(void* arg) {
  pool_t* p = &g_pool;
  const uint32_t id = (uint32_t)((uintptr_t)arg & 0xFFu);
  uint32_t seen = (uint32_t)((uint64_t)(uintptr_t)arg >> 8);
  for (;;) {
    /* Spin, then sleep, until a new ticket (or quit). */
    uint32_t t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
    if (t == seen) {
      const uint64_t until = now_ns() + POOL_SPIN_NS;
      for (unsigned i = 1; t == seen; ++i) {
        CPU_RELAX();
        t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
        if ((i & 255) == 0 && now_ns() > until) break;
      }
      if (t == seen) {
        pthread_mutex_lock(&p->lock);
        while (!p->quit && (t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE)) == seen)
          pthread_cond_wait(&p->wake, &p->lock);
        const int quit = p->quit;
        pthread_mutex_unlock(&p->lock);
        if (quit) return NULL;
      }
    }
    seen = t;
    if (id > TICKET_HELPERS(t)) continue; /* not needed this time */
    run_tasks(p, id, TICKET_HELPERS(t) + 1);
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&p->lock);
      if (p->sleepers_done) pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

int cpu_pool_acquire(void) {
  pthread_mutex_lock(&g_pool.lock);
  ++g_pool.refs;
  pthread_mutex_unlock(&g_pool.lock);
  return 0;
}

void cpu_pool_release(void) {
  pool_t* p = &g_pool;
  pthread_mutex_lock(&p->lock);
  const int last = --p->refs == 0;
  uint32_t n = 0;
  if (last) {
    p->quit = 1;
    n = p->worker_count;
    pthread_cond_broadcast(&p->wake);
  }
  pthread_mutex_unlock(&p->lock);
  if (!last) return;
  for (uint32_t i = 0; i < n; ++i) pthread_join(p->threads[i], NULL);
  pthread_mutex_lock(&p->lock);
  p->worker_count = 0;
  p->quit = 0;
  pthread_mutex_unlock(&p->lock);
}

uint32_t cpu_pool_default_threads(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : n > POOL_MAX_WORKERS + 1 ? POOL_MAX_WORKERS + 1 : (uint32_t)n;
}

/* Starts workers until there are `want`; returns how many exist. Called
 * with `region` held, so only one thread grows the pool. */
static uint32_t ensure_workers(pool_t* p, uint32_t want) {
  if (want > POOL_MAX_WORKERS) want = POOL_MAX_WORKERS;
  pthread_mutex_lock(&p->lock);
  while (p->worker_count < want && !p->quit && p->refs > 0) {
    const uint32_t id = p->worker_count + 1;
    const uint32_t ticket = __atomic_load_n(&p->ticket, __ATOMIC_RELAXED);
    if (pthread_create(&p->threads[p->worker_count], NULL, worker_main, WORKER_ARG(id, ticket)) !=
        0)
      break;
    ++p->worker_count;
  }
  const uint32_t have = p->worker_count;
  pthread_mutex_unlock(&p->lock);
  return have;
}

static void pool_run(void* ctx, size_t tasks, axle_task_fn fn, void* arg) {
  pool_t* p = &g_pool;
  const uint32_t threads = (uint32_t)(uintptr_t)ctx;
  uint32_t helpers = threads - 1;
  if ((size_t)helpers > tasks - 1) helpers = (uint32_t)(tasks - 1);
  if (helpers == 0 || pthread_mutex_trylock(&p->region) != 0) {
    for (size_t t = 0; t < tasks; ++t) fn(arg, t, 0);
    return;
  }
  const uint32_t have = ensure_workers(p, helpers);
  if (helpers > have) helpers = have;
  p->job.fn = fn;
  p->job.arg = arg;
  for (uint32_t i = 0; i <= helpers; ++i) {
    p->ranges[i].end = tasks * (i + 1) / (helpers + 1);
    __atomic_store_n(&p->ranges[i].next, tasks * i / (helpers + 1), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&p->pending, helpers, __ATOMIC_RELAXED);
  /* The job is published by the release of the new ticket; sleepers are
   * woken under the lock so none misses it. */
  pthread_mutex_lock(&p->lock);
  const uint32_t seq = (__atomic_load_n(&p->ticket, __ATOMIC_RELAXED) & ~0xFFu) + TICKET_STEP;
  __atomic_store_n(&p->ticket, seq | helpers, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);

  run_tasks(p, 0, helpers + 1);

  if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0) {
    const uint64_t until = now_ns() + POOL_SPIN_NS;
    for (unsigned i = 1; __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0; ++i) {
      CPU_RELAX();
      if ((i & 255) == 0 && now_ns() > until) {
        pthread_mutex_lock(&p->lock);
        ++p->sleepers_done;
        while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0)
          pthread_cond_wait(&p->done, &p->lock);
        --p->sleepers_done;
        pthread_mutex_unlock(&p->lock);
        break;
      }
    }
  }
  pthread_mutex_unlock(&p->region);
}

axle_parallel_t cpu_pool_parallel(uint32_t threads) {
  axle_parallel_t par;
  par.run = pool_run;
  par.ctx = (void*)(uintptr_t)(threads ? threads : 1);
  par.threads = threads ? threads : 1;
  return par;
}
