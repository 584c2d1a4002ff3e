/*
 * Runs a kmodel v3 on the emulated chip the way the K210 SDK's runtime does
 * (kpu_run_kmodel / ai_step): the input is uploaded to KPU RAM (or copied to
 * main memory), then layer by layer the CPU layers run on the host and every
 * K210_CONV is programmed into the KPU's registers; the KPU's calc_done
 * interrupt (and its DMA for main-memory outputs) is what moves the program
 * to the next layer. Outputs are read from main memory at the end.
 */
#ifndef AXLE_K210_RUN_H_
#define AXLE_K210_RUN_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_kmodel.h"
#include "k210_kpu.h"

/* The emulated chip a device owns: its KPU and the SRAM holding the model's
 * main memory. One thread at a time. */
typedef struct k210_chip_t {
  k210_kpu_t* kpu;
  uint8_t* main;
  size_t main_cap;
  uint32_t interrupts;     /* calc_done interrupts taken */
} k210_chip_t;

/* 1, or 0 when out of memory. */
int k210_chip_init(k210_chip_t* chip);
void k210_chip_free(k210_chip_t* chip);

/* One finished layer, for profiling. */
typedef struct k210_layer_report_t {
  uint32_t index;
  uint32_t type;           /* K210_KL_* */
  int on_kpu;
  uint64_t start_ns, end_ns;  /* host clock */
  uint64_t cycles;         /* chip cycles: KPU cycle model, or CPU estimate */
  uint64_t macs;           /* KPU layers */
  const k210_layer_t* words; /* KPU layers: the decoded words */
} k210_layer_report_t;

typedef struct k210_run_hooks_t {
  void* ctx;
  uint64_t (*now_ns)(void);
  /* Between layers: AXLE_HAL_OK to go on, else the status to stop with. */
  int32_t (*should_stop)(void* ctx);
  /* After every layer; NULL when nobody profiles. */
  void (*layer_done)(void* ctx, const k210_layer_report_t* report);
} k210_run_hooks_t;

/* input: the model's input in its own dtype (k210_kmodel_t.in_dtype);
 * outputs[i]: out_size[i] bytes each. Returns an AXLE_HAL_* status with the
 * reason in why on failure; *cycles gets the program's chip cycles. */
int32_t k210_run(k210_chip_t* chip, const k210_kmodel_t* m, const void* input, void* const* outputs,
                 k210_act_rule_t rule, const k210_run_hooks_t* hooks, uint64_t* cycles, char* why,
                 size_t why_size);

#endif /* AXLE_K210_RUN_H_ */
