/*
 * The emulated KPU, register level. A driver programs it the way the K210 SDK
 * does: configuration registers, then twelve layer-argument words per layer
 * written to layer_argument_fifo. The twelfth word starts the layer; the
 * emulator decodes every field from the words, fetches weights, batch-norm
 * and activation tables over its bus map, reads the input from KPU RAM,
 * computes, writes the output rows back to KPU RAM, streams it to the output
 * FIFO (and the DMA channel wired to it) when send_data_out is set, and
 * raises calc_done in interrupt_raw, which calls the interrupt handler when
 * unmasked.
 *
 * Registers (64-bit, offsets from the KPU base 0x40800000):
 *   0x00 layer_argument_fifo  W   12 words per layer
 *   0x08 interrupt_status     R   raw & ~mask
 *   0x10 interrupt_raw        R   bit0 calc_done, bit1 layer_cfg_almost_empty,
 *                                 bit2 layer_cfg_almost_full
 *   0x18 interrupt_mask       RW  1 = masked (reset: all masked)
 *   0x20 interrupt_clear      W   write 1s to clear raw bits
 *   0x28 fifo_threshold       RW  full[3:0], empty[7:4] (argument words)
 *   0x30 fifo_data_out        R   next 8 output bytes (little-endian)
 *   0x38 fifo_ctrl            W   active-low flushes: bit0 dma (output stream),
 *                                 bit2 cfg (partial layer words)
 *   0x40 eight_bit_mode       RW  bit0; only 8-bit mode is emulated
 *
 * Not thread-safe: one driver thread per KPU.
 */
#ifndef AXLE_K210_KPU_H_
#define AXLE_K210_KPU_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_arith.h"
#include "k210_layer.h"
#include "k210_ram.h"

enum {
  K210_REG_LAYER_ARGUMENT_FIFO = 0x00,
  K210_REG_INTERRUPT_STATUS = 0x08,
  K210_REG_INTERRUPT_RAW = 0x10,
  K210_REG_INTERRUPT_MASK = 0x18,
  K210_REG_INTERRUPT_CLEAR = 0x20,
  K210_REG_FIFO_THRESHOLD = 0x28,
  K210_REG_FIFO_DATA_OUT = 0x30,
  K210_REG_FIFO_CTRL = 0x38,
  K210_REG_EIGHT_BIT_MODE = 0x40
};

enum {
  K210_INT_CALC_DONE = 0x1,
  K210_INT_ALMOST_EMPTY = 0x2,
  K210_INT_ALMOST_FULL = 0x4
};

typedef struct k210_kpu_t k210_kpu_t;

/* Power-on KPU with zeroed RAM; NULL when out of memory. */
k210_kpu_t* k210_kpu_create(void);
void k210_kpu_destroy(k210_kpu_t* kpu);
/* Registers back to power-on values, FIFOs and DMA cleared, error cleared,
 * layer counter zeroed. RAM keeps its contents, as SRAM does. */
void k210_kpu_reset(k210_kpu_t* kpu);

void k210_kpu_write(k210_kpu_t* kpu, uint32_t offset, uint64_t value);
uint64_t k210_kpu_read(k210_kpu_t* kpu, uint32_t offset);

/* The 2 MiB of KPU RAM (the driver uploads inputs and reads results here). */
uint8_t* k210_kpu_ram(k210_kpu_t* kpu);

/* Maps size bytes of host memory at a 32-bit bus address, where layer words
 * point for weights, batch-norm and activation tables. Returns 0 when the
 * map is full (K210_KPU_MAX_REGIONS) or the range wraps. */
#define K210_KPU_MAX_REGIONS 4
int k210_kpu_map(k210_kpu_t* kpu, uint32_t bus_addr, const void* host, uint32_t size);
void k210_kpu_unmap_all(k210_kpu_t* kpu);

/* The interrupt line: called (from inside k210_kpu_write) whenever an
 * unmasked interrupt becomes pending. */
void k210_kpu_set_irq(k210_kpu_t* kpu, void (*handler)(void* ctx), void* ctx);

/* The DMA channel selected for the KPU's output FIFO: the next size bytes
 * the FIFO produces go to dst instead of fifo_data_out. */
void k210_kpu_dma_arm(k210_kpu_t* kpu, void* dst, uint64_t size);
/* Bytes the DMA channel still expects (0 once complete). */
uint64_t k210_kpu_dma_pending(const k210_kpu_t* kpu);

/* Emulation options (not chip registers). */
void k210_kpu_set_rule(k210_kpu_t* kpu, k210_act_rule_t rule);
void k210_kpu_set_simd(k210_kpu_t* kpu, int enabled);

/* What the last layer cost, for profiling. */
typedef struct k210_kpu_stats_t {
  uint64_t layers;    /* executed since reset */
  uint64_t cycles;    /* last layer, from the cycle model */
  uint64_t macs;      /* last layer */
} k210_kpu_stats_t;
void k210_kpu_stats(const k210_kpu_t* kpu, k210_kpu_stats_t* out);

/* The reason the last layer was refused (no interrupt is raised then), or
 * NULL. Sticky until k210_kpu_reset. */
const char* k210_kpu_error(const k210_kpu_t* kpu);

/* The checks the KPU applies to a layer's words before running it (field
 * values it cannot execute, inconsistent geometry, feature maps outside KPU
 * RAM). Returns 1, or 0 with the reason in why. Shared with the kmodel
 * loader so that bad files fail at load time with the same words. */
int k210_layer_check(const k210_layer_t* l, char* why, size_t why_size);

/* Geometry the words give: input and output feature maps in KPU RAM, and
 * the bytes of weights the layer reads. */
k210_fmap_t k210_layer_in_map(const k210_layer_t* l);
k210_fmap_t k210_layer_out_map(const k210_layer_t* l);
uint64_t k210_layer_weight_bytes(const k210_layer_t* l);

#endif /* AXLE_K210_KPU_H_ */
