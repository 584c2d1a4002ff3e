/*
 * Tests of the CPU plugin's thread pool (cpu_threadpool.c) on real threads:
 * every task runs exactly once under a valid thread id, whatever the
 * thread and task counts; participant i starts on the i-th contiguous range
 * of task indices; a participant whose range is done takes over what is
 * left of another's; regions started from several threads at once, or
 * from inside a task, all run every task once.
 *
 * The order tests let tasks sleep so that each participant is surely inside
 * its first task before another could reach it. A worker can still wake
 * late on a loaded machine (its first tasks then go to the others), so
 * those tests retry a few times and fail only if no attempt shows the
 * behaviour; a pool that hands tasks out some other way fails every attempt.
 */
#include <pthread.h>
#include <time.h>

#include "cpu_threadpool.h"
#include "kernel_test.h"

#define MAX_TASKS 1000
#define ATTEMPTS 5

typedef struct record_t {
  uint32_t threads;
  unsigned runs[MAX_TASKS]; /* atomic: times each task ran */
  uint32_t thread_of[MAX_TASKS];
  unsigned order[MAX_TASKS]; /* sequence number of each task's start */
  unsigned started;          /* atomic */
  unsigned bad_thread;       /* atomic: runs with thread >= threads */
  long sleep_us[MAX_TASKS];
} record_t;

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0) {
  }
}

static void record_task(void* arg, size_t task, uint32_t thread) {
  record_t* r = arg;
  r->order[task] = __atomic_fetch_add(&r->started, 1, __ATOMIC_RELAXED);
  r->thread_of[task] = thread;
  if (thread >= r->threads) __atomic_fetch_add(&r->bad_thread, 1, __ATOMIC_RELAXED);
  if (r->sleep_us[task]) sleep_us(r->sleep_us[task]);
  __atomic_fetch_add(&r->runs[task], 1, __ATOMIC_RELAXED);
}

static record_t* run_recorded(uint32_t threads, size_t tasks, const long* sleeps) {
  record_t* r = calloc(1, sizeof *r);
  r->threads = threads;
  for (size_t t = 0; t < tasks; ++t) r->sleep_us[t] = sleeps ? sleeps[t] : 0;
  const axle_parallel_t par = cpu_pool_parallel(threads);
  axle_parallel_run(&par, tasks, record_task, r);
  return r;
}

/* The first task participant `id` started, or -1 if it ran none. */
static long first_task_of(const record_t* r, size_t tasks, uint32_t id) {
  long first = -1;
  for (size_t t = 0; t < tasks; ++t)
    if (r->thread_of[t] == id && (first < 0 || r->order[t] < r->order[first])) first = (long)t;
  return first;
}

static void test_every_task_once(void) {
  static const size_t counts[] = {1, 2, 3, 5, 7, 8, 63, 64, 65, 1000};
  for (uint32_t threads = 1; threads <= 4; ++threads) {
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
      /* Several regions in a row: the ranges are re-armed each time. */
      for (int rep = 0; rep < 3; ++rep) {
        record_t* r = run_recorded(threads, counts[c], NULL);
        size_t wrong = 0;
        for (size_t t = 0; t < counts[c]; ++t) wrong += r->runs[t] != 1;
        if (wrong || r->bad_thread)
          fprintf(stderr, "\n%u threads, %zu tasks: %zu tasks not run once, %u bad ids\n", threads,
                  counts[c], wrong, r->bad_thread);
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT_EQUAL(r->bad_thread, 0);
        CU_ASSERT_EQUAL(r->started, counts[c]);
        free(r);
      }
    }
  }
  /* No tasks: nothing runs, nothing hangs. */
  record_t* r = run_recorded(2, 0, NULL);
  CU_ASSERT_EQUAL(r->started, 0);
  free(r);
}

/* With n participants and 3n equally slow tasks, participant i starts with
 * task 3i (the first of its range). */
static void check_own_ranges(uint32_t threads) {
  const size_t tasks = 3 * (size_t)threads;
  long sleeps[MAX_TASKS];
  for (size_t t = 0; t < tasks; ++t) sleeps[t] = 20000;
  int shown = 0;
  for (int attempt = 0; attempt < ATTEMPTS && !shown; ++attempt) {
    record_t* r = run_recorded(threads, tasks, sleeps);
    /* The caller is never late: its own range always comes first. */
    CU_ASSERT_EQUAL(first_task_of(r, tasks, 0), 0);
    CU_ASSERT_EQUAL(r->thread_of[1], 0);
    shown = 1;
    for (uint32_t id = 1; id < threads; ++id) {
      const long first = first_task_of(r, tasks, id);
      if (first != 3 * (long)id) {
        shown = 0;
        fprintf(stderr, "\n  attempt %d: participant %u started with task %ld, not %u\n", attempt,
                id, first, 3 * id);
      }
    }
    free(r);
  }
  CU_ASSERT_TRUE(shown);
}

static void test_two_threads_start_on_own_ranges(void) { check_own_ranges(2); }
static void test_three_threads_start_on_own_ranges(void) { check_own_ranges(3); }

/* 2 threads, 4 tasks: the caller's two are slow, the worker's two shorter.
 * The worker, done with its range, must take task 1 while the caller is
 * still in task 0. The worker's tasks take time too: instant ones let a
 * worker that was spinning finish its range, and take task 0, before the
 * caller (still waking the pool's sleepers) reached its own first task,
 * which is correct but not what this test is about (seen on a CI-like
 * run: all five attempts ran task 0 on the worker). */
static void test_idle_participant_takes_over(void) {
  const long sleeps[4] = {100000, 100000, 20000, 20000};
  int shown = 0;
  for (int attempt = 0; attempt < ATTEMPTS && !shown; ++attempt) {
    record_t* r = run_recorded(2, 4, sleeps);
    for (size_t t = 0; t < 4; ++t) CU_ASSERT_EQUAL(r->runs[t], 1);
    shown = r->thread_of[0] == 0 && r->thread_of[1] == 1 && r->thread_of[2] == 1 &&
            r->thread_of[3] == 1;
    if (!shown)
      fprintf(stderr, "\n  attempt %d: tasks ran on threads %u %u %u %u\n", attempt,
              r->thread_of[0], r->thread_of[1], r->thread_of[2], r->thread_of[3]);
    free(r);
  }
  CU_ASSERT_TRUE(shown);
}

/* Regions started at once from several application threads (sessions run
 * from several threads share the one pool), and regions started from inside
 * a task: one runs on the pool, the others serially on their callers, and
 * every region still runs each of its tasks once under an id below its
 * thread count. ThreadSanitizer (./run.sh tsan) checks the hand-over. */
#define CALLERS 4
#define CALLER_REGIONS 60

typedef struct nested_t {
  uint32_t threads;
  unsigned inner_runs[8][8]; /* atomic: [outer task][inner task] */
  unsigned bad_thread;       /* atomic */
} nested_t;

static void inner_task(void* arg, size_t task, uint32_t thread) {
  unsigned* runs = arg;
  (void)thread;
  __atomic_fetch_add(&runs[task], 1, __ATOMIC_RELAXED);
}

static void outer_task(void* arg, size_t task, uint32_t thread) {
  nested_t* n = arg;
  if (thread >= n->threads) __atomic_fetch_add(&n->bad_thread, 1, __ATOMIC_RELAXED);
  const axle_parallel_t par = cpu_pool_parallel(n->threads);
  axle_parallel_run(&par, 8, inner_task, n->inner_runs[task]);
}

static void* caller_main(void* arg) {
  static const size_t counts[] = {1, 7, 64, 1000};
  long* wrong = arg;
  for (int i = 0; i < CALLER_REGIONS; ++i) {
    const uint32_t threads = 2 + (uint32_t)i % 3;
    const size_t tasks = counts[i % 4];
    record_t* r = run_recorded(threads, tasks, NULL);
    for (size_t t = 0; t < tasks; ++t) *wrong += r->runs[t] != 1;
    *wrong += r->bad_thread + (r->started != tasks);
    free(r);
    nested_t* n = calloc(1, sizeof *n);
    n->threads = threads;
    const axle_parallel_t par = cpu_pool_parallel(threads);
    axle_parallel_run(&par, 8, outer_task, n);
    for (int o = 0; o < 8; ++o)
      for (int t = 0; t < 8; ++t) *wrong += n->inner_runs[o][t] != 1;
    *wrong += n->bad_thread;
    free(n);
  }
  return NULL;
}

static void test_regions_from_several_callers(void) {
  pthread_t th[CALLERS];
  long wrong[CALLERS] = {0};
  for (int c = 0; c < CALLERS; ++c)
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[c], NULL, caller_main, &wrong[c]), 0);
  for (int c = 0; c < CALLERS; ++c) {
    pthread_join(th[c], NULL);
    if (wrong[c])
      fprintf(stderr, "\n  caller %d: %ld tasks not run once or bad ids\n", c, wrong[c]);
    CU_ASSERT_EQUAL(wrong[c], 0);
  }
}

int main(void) {
  static const kt_entry_t tests[] = {
      {"every task once, ids below threads (1-4 threads, 1-1000 tasks)", test_every_task_once},
      {"2 threads: each starts on its own contiguous range", test_two_threads_start_on_own_ranges},
      {"3 threads: each starts on its own contiguous range",
       test_three_threads_start_on_own_ranges},
      {"a participant done early takes over another's leftovers", test_idle_participant_takes_over},
      {"regions from several threads at once, and from inside a task",
       test_regions_from_several_callers},
  };
  if (cpu_pool_acquire() != 0) return 1;
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("cpu plugin thread pool", tests)) {
    CU_cleanup_registry();
    return 1;
  }
  const int rc = kt_run_all();
  cpu_pool_release();
  return rc;
}
