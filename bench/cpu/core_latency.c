/*
 * Round trip of one cache line between two threads pinned to the first two
 * CPUs this process may run on: a figure that explains a run's 2-thread
 * latencies. Where the two cores share a cache level (one CCD of an AMD
 * EPYC, one Intel socket) it is some tens of ns; where they do not (two
 * CCDs, two sockets, or a VM whose two vCPUs the host placed so) it is
 * several hundred, data passed between the threads crosses slowly, and
 * layers split across the threads lose much of their gain
 * (docs/cpu-performance.md, Figures and What limits). The median of 5
 * measurements of 100000 round trips each.
 *
 *   axle_bench_core_latency     prints "<ns> <cpu a> <cpu b>", or "- -"
 *                               when fewer than two CPUs are allowed
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { TRIPS = 100000, MEASUREMENTS = 5 };

/* The line the two threads hand back and forth: odd values are the pinger's
 * turn done, even ones the ponger's. */
static _Atomic long g_turn __attribute__((aligned(64)));

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void* ponger(void* arg) {
  /* Unpinned if that fails: the pinger waits on this thread either way. */
  (void)pin(*(const int*)arg);
  for (long i = 0; i < MEASUREMENTS * (long)TRIPS; ++i) {
    while (atomic_load_explicit(&g_turn, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&g_turn, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 1;
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  if (found < 2 || pin(cpus[0]) != 0) {
    puts("- -");
    return 0;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, ponger, &cpus[1]) != 0) return 1;
  double ns[MEASUREMENTS];
  long i = 0;
  for (int m = 0; m < MEASUREMENTS; ++m) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long end = i + TRIPS; i < end; ++i) {
      atomic_store_explicit(&g_turn, 2 * i + 1, memory_order_release);
      while (atomic_load_explicit(&g_turn, memory_order_acquire) != 2 * i + 2) {
      }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ns[m] = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / TRIPS;
  }
  pthread_join(t, NULL);
  qsort(ns, MEASUREMENTS, sizeof ns[0], by_value);
  printf("%.0f %d %d\n", ns[MEASUREMENTS / 2], cpus[0], cpus[1]);
  return 0;
}
