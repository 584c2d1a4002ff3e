#include "k210_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k210_cycles.h"
#include "k210_kmodel_layers.h"
#include "k210_scratch.h"

int k210_chip_init(k210_chip_t* chip) {
  memset(chip, 0, sizeof(*chip));
  chip->kpu = k210_kpu_create();
  return chip->kpu != NULL;
}

void k210_chip_free(k210_chip_t* chip) {
  k210_kpu_destroy(chip->kpu);
  free(chip->main);
  memset(chip, 0, sizeof(*chip));
}

/* The SDK's interrupt handler: acknowledge calc_done, let the program go on. */
static void on_interrupt(void* ctx) {
  k210_chip_t* chip = (k210_chip_t*)ctx;
  if (k210_kpu_read(chip->kpu, K210_REG_INTERRUPT_STATUS) & K210_INT_CALC_DONE) {
    k210_kpu_write(chip->kpu, K210_REG_INTERRUPT_CLEAR, K210_INT_CALC_DONE);
    chip->interrupts++;
  }
}

/* Programs one K210_CONV and waits for its interrupt (and DMA). */
static int32_t run_conv(k210_chip_t* chip, const k210_kl_t* l, uint32_t index, char* why, size_t n) {
  k210_kpu_t* kpu = chip->kpu;
  int main_out = (l->a.flags & K210_KLF_MAIN_MEM_OUT) != 0;
  if (main_out) k210_kpu_dma_arm(kpu, chip->main + l->a.out, (uint64_t)l->conv.dma_total_byte + 1);
  uint32_t before = chip->interrupts;
  for (int w = 0; w < K210_LAYER_WORDS; ++w) k210_kpu_write(kpu, K210_REG_LAYER_ARGUMENT_FIFO, l->words[w]);
  const char* err = k210_kpu_error(kpu);
  if (chip->interrupts == before || (main_out && k210_kpu_dma_pending(kpu))) {
    snprintf(why, n, "layer %u (K210_CONV): %s", index,
             err ? err : chip->interrupts == before ? "the KPU raised no interrupt" : "the output DMA did not complete");
    return AXLE_HAL_DEVICE_ERROR;
  }
  return AXLE_HAL_OK;
}

int32_t k210_run(k210_chip_t* chip, const k210_kmodel_t* m, const void* input, void* const* outputs,
                 k210_act_rule_t rule, const k210_run_hooks_t* hooks, uint64_t* cycles, char* why,
                 size_t why_size) {
  k210_kpu_t* kpu = chip->kpu;
  *cycles = 0;
  chip->main = (uint8_t*)k210_grow(chip->main, &chip->main_cap, m->main_mem_usage);
  if (!chip->main) {
    snprintf(why, why_size, "cannot allocate %u bytes of main memory", m->main_mem_usage);
    return AXLE_HAL_OUT_OF_MEMORY;
  }
  memset(chip->main, 0, m->main_mem_usage);

  /* As kpu_run_kmodel sets the chip up. */
  k210_kpu_reset(kpu);
  k210_kpu_set_rule(kpu, rule);
  k210_kpu_unmap_all(kpu);
  k210_kpu_map(kpu, K210_MODEL_BUS_BASE, m->data, (uint32_t)m->size);
  k210_kpu_set_irq(kpu, on_interrupt, chip);
  k210_kpu_write(kpu, K210_REG_INTERRUPT_CLEAR, K210_INT_CALC_DONE | K210_INT_ALMOST_EMPTY | K210_INT_ALMOST_FULL);
  k210_kpu_write(kpu, K210_REG_FIFO_THRESHOLD, 1u << 4 | 10u);
  k210_kpu_write(kpu, K210_REG_EIGHT_BIT_MODE, m->flags & K210_KMODEL_FLAG_8BIT);
  k210_kpu_write(kpu, K210_REG_INTERRUPT_MASK, K210_INT_ALMOST_EMPTY | K210_INT_ALMOST_FULL);

  if (m->in_dtype == AXLE_HAL_DTYPE_U8)
    k210_fmap_store(k210_kpu_ram(kpu), &m->in_map, (const uint8_t*)input);
  else
    memcpy(chip->main + m->in_addr, input, (size_t)m->in_count * sizeof(float));

  for (uint32_t i = 0; i < m->layer_count; ++i) {
    int32_t st = hooks && hooks->should_stop ? hooks->should_stop(hooks->ctx) : AXLE_HAL_OK;
    if (st != AXLE_HAL_OK) {
      snprintf(why, why_size, "stopped before layer %u", i);
      return st;
    }
    const k210_kl_t* l = &m->layers[i];
    k210_layer_report_t r = {i, l->type, l->type == K210_KL_K210_CONV, 0, 0, 0, 0, NULL};
    r.start_ns = hooks && hooks->now_ns ? hooks->now_ns() : 0;
    if (r.on_kpu) {
      st = run_conv(chip, l, i, why, why_size);
      if (st != AXLE_HAL_OK) return st;
      k210_kpu_stats_t stats;
      k210_kpu_stats(kpu, &stats);
      r.cycles = stats.cycles;
      r.macs = stats.macs;
      r.words = &l->conv;
    } else {
      k210_kl_find(l->type)->run(l, chip->main, k210_kpu_ram(kpu));
      r.cycles = k210_cycles_cpu(l->float_macs, l->element_ops, l->transcendentals);
    }
    r.end_ns = hooks && hooks->now_ns ? hooks->now_ns() : 0;
    *cycles += r.cycles;
    if (hooks && hooks->layer_done) hooks->layer_done(hooks->ctx, &r);
  }
  for (uint32_t i = 0; i < m->output_count; ++i)
    memcpy(outputs[i], chip->main + m->out_addr[i], m->out_size[i]);
  return AXLE_HAL_OK;
}
