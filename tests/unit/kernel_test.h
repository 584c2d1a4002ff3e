/*
 * Helpers shared by the kernel test suites (test_kernels_f32.c,
 * test_qu8_kernels.c, test_gemm_avx512_wide.c): deterministic inputs,
 * garbage-filled aligned scratch, tolerance checks, a real-thread
 * axle_parallel_t and CUnit registration. Header-only: each suite is one
 * executable.
 */
#ifndef AXLE_TESTS_UNIT_KERNEL_TEST_H_
#define AXLE_TESTS_UNIT_KERNEL_TEST_H_

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels.h"

/* The includer may set its own seed: a failure reproduces exactly. */
#ifndef KT_SEED
#define KT_SEED 20240611u
#endif
static uint32_t kt_seed = KT_SEED;

/* 24 deterministic bits. */
static inline uint32_t kt_next(void) {
  kt_seed = kt_seed * 1664525u + 1013904223u;
  return kt_seed >> 8;
}

/* Deterministic values in [-1, 1). */
static inline float kt_rand(void) {
  return (float)(kt_next() & 0xffffff) / (float)0x800000 - 1.0f;
}

static inline float* kt_array(size_t n) {
  float* p = aligned_alloc(64, ((n ? n : 1) * sizeof(float) + 63) / 64 * 64);
  for (size_t i = 0; i < n; ++i) p[i] = kt_rand();
  return p;
}

static inline void* kt_scratch(size_t bytes) {
  void* p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  memset(p, 0xA5, (bytes + 63) / 64 * 64 + 64); /* garbage, never zeros */
  return p;
}

/* |got - want| <= atol + rtol * |want| everywhere (equal values, infinities
 * included, pass; NaN must match NaN). */
static inline int kt_close(const char* what, const float* got, const float* want, size_t n,
                           double rtol, double atol) {
  for (size_t i = 0; i < n; ++i) {
    /* Equal values first: equal infinities would read as inf - inf = NaN. */
    if (got[i] == want[i] || (isnan(want[i]) && isnan(got[i]))) continue;
    const double err = fabs((double)got[i] - (double)want[i]);
    if (!(err <= atol + rtol * fabs((double)want[i]))) {
      fprintf(stderr, "\n%s: element %zu: got %.9g want %.9g\n", what, i, (double)got[i],
              (double)want[i]);
      CU_FAIL(what);
      return 0;
    }
  }
  CU_PASS(what);
  return 1;
}

/* A test that cannot run here says so in the log, not just by passing. */
static inline void kt_skip(const char* why) {
  fprintf(stderr, "\n  skipped: %s\n", why);
  CU_PASS(why);
}

/* axle_parallel_t on real threads: `threads` workers (the caller is worker
 * 0) take tasks from a shared counter. */
typedef struct kt_pool_job_t {
  size_t tasks;
  axle_task_fn fn;
  void* arg;
  size_t next; /* atomic */
} kt_pool_job_t;

typedef struct kt_worker_t {
  kt_pool_job_t* job;
  uint32_t id;
} kt_worker_t;

static inline void kt_work(kt_pool_job_t* job, uint32_t id) {
  for (;;) {
    const size_t t = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (t >= job->tasks) return;
    job->fn(job->arg, t, id);
  }
}

static inline void* kt_worker_main(void* p) {
  kt_worker_t* w = p;
  kt_work(w->job, w->id);
  return NULL;
}

static inline void kt_pool_run(void* ctx, size_t tasks, axle_task_fn fn, void* arg) {
  const uint32_t threads = *(const uint32_t*)ctx;
  kt_pool_job_t job = {tasks, fn, arg, 0};
  pthread_t tid[16];
  kt_worker_t w[16];
  for (uint32_t i = 1; i < threads && i < 16; ++i) {
    w[i].job = &job;
    w[i].id = i;
    pthread_create(&tid[i], NULL, kt_worker_main, &w[i]);
  }
  kt_work(&job, 0);
  for (uint32_t i = 1; i < threads && i < 16; ++i) pthread_join(tid[i], NULL);
}

/* A parallel description with `threads` workers (1: NULL, serial). */
static inline const axle_parallel_t* kt_parallel(uint32_t* threads_storage,
                                                 axle_parallel_t* par, uint32_t threads) {
  if (threads <= 1) return NULL;
  *threads_storage = threads;
  par->run = kt_pool_run;
  par->ctx = threads_storage;
  par->threads = threads;
  return par;
}

/* A 2-D convolution of one group: square kernel k, stride s, padding pad
 * on every side; the output size follows. */
static inline void kt_conv2d(axle_f32_conv_params_t* p, int64_t batch, int64_t cin, int64_t cout,
                             int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad) {
  memset(p, 0, sizeof *p);
  p->batch = batch;
  p->groups = 1;
  p->in_channels = cin;
  p->out_channels = cout;
  p->in[0] = p->out[0] = p->kernel[0] = p->stride[0] = 1;
  p->dilation[0] = p->dilation[1] = p->dilation[2] = 1;
  p->in[1] = h;
  p->in[2] = w;
  p->kernel[1] = p->kernel[2] = k;
  p->stride[1] = p->stride[2] = s;
  p->pad[1] = p->pad[2] = pad;
  p->out[1] = (h + 2 * pad - k) / s + 1;
  p->out[2] = (w + 2 * pad - k) / s + 1;
}

typedef struct kt_entry_t {
  const char* name;
  CU_TestFunc fn;
} kt_entry_t;

static inline int kt_add_suite(const char* name, const kt_entry_t* tests, size_t count) {
  CU_pSuite s = CU_add_suite(name, NULL, NULL);
  if (!s) return -1;
  for (size_t i = 0; i < count; ++i)
    if (!CU_add_test(s, tests[i].name, tests[i].fn)) return -1;
  return 0;
}

#define KT_ADD_SUITE(name, arr) kt_add_suite(name, arr, sizeof arr / sizeof arr[0])

static inline int kt_run_all(void) {
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}


#endif /* AXLE_TESTS_UNIT_KERNEL_TEST_H_ */
