/*
 * The CPU plugin's thread pool: one per process, shared by every executable,
 * persistent between runs. A parallel region hands out task indices to the
 * calling thread and up to threads - 1 workers: participant i of n starts on
 * the i-th of n equal contiguous ranges of indices, in order, then helps
 * with what is left of the others', so kernels that number their tasks in
 * the order of the data keep each part of a tensor on one core from layer
 * to layer. Workers that finish spin briefly for the next region (ops follow
 * each other within microseconds) before sleeping on a condition variable.
 *
 * Lifetime: plugin init() acquires, shutdown() releases; the last release
 * joins the workers, so none outlives the plugin's code.
 * Thread safety: any thread may start a region; one region runs on the pool
 * at a time, and a region started while another runs executes serially on
 * its caller (concurrent submits stay correct, just not parallel).
 */
#ifndef AXLE_CPU_THREADPOOL_H_
#define AXLE_CPU_THREADPOOL_H_

#include <stdint.h>

#include "axle_kernels.h"

/* Reference counting by plugin instances; acquire returns 0 on success. */
int cpu_pool_acquire(void);
void cpu_pool_release(void);

/* Online CPUs (the meaning of threads = 0 in compile options), at least 1. */
uint32_t cpu_pool_default_threads(void);

/* A kernel parallelism description running on the pool with `threads`
 * participants (1: serial). */
axle_parallel_t cpu_pool_parallel(uint32_t threads);

#endif /* AXLE_CPU_THREADPOOL_H_ */
