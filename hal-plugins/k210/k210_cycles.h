/*
 * Axle's cycle model of the K210, so traces can show how long a program
 * would take on the chip next to how long the emulation took. It is a model,
 * not a measurement; docs/k210.md explains it.
 *
 * KPU (400 MHz): the array is 64 lanes of 576 bits. Axle reads that as one
 * 64-byte KPU RAM row entering the array per cycle, each lane holding the
 * 3x3 window around one pixel of that row for one output channel (at most
 * 64 x 9 = 576 multiply-adds a cycle). A layer costs
 *   setup   12 argument words + 32 cycles of pipeline fill
 *   params  weight, batch-norm and activation bytes over a 64-bit bus (8 B/cycle)
 *   compute out_ch x ceil(in_ch / channels per row) x height x rows per line
 *           (depthwise: ceil(out_ch / channels per row) x height x rows per line)
 *   output  with send_data_out, the output bytes over the 64-bit DMA (8 B/cycle)
 * Batch norm, activation, pooling and write-back are pipelined behind the
 * multiply-adds. A 1x1 kernel uses one of the nine multipliers of a lane, so
 * it costs as many cycles per row as a 3x3 one.
 *
 * CPU layers (RV64GC at 400 MHz): 2 cycles per float multiply-add, 3 per
 * other element operation, 40 per exponential or square root.
 */
#ifndef AXLE_K210_CYCLES_H_
#define AXLE_K210_CYCLES_H_

#include <stdint.h>

#include "k210_layer.h"

#define K210_CLOCK_HZ 400000000ull

/* Cycles and multiply-adds of a KPU layer, from its decoded words. */
uint64_t k210_cycles_kpu_layer(const k210_layer_t* l);
uint64_t k210_macs_kpu_layer(const k210_layer_t* l);

/* Estimated cycles of a CPU layer. */
uint64_t k210_cycles_cpu(uint64_t float_macs, uint64_t element_ops, uint64_t transcendentals);

/* Chip nanoseconds for a cycle count. */
static inline uint64_t k210_cycles_to_ns(uint64_t cycles) {
  return cycles * 1000000000ull / K210_CLOCK_HZ;
}

#endif /* AXLE_K210_CYCLES_H_ */
