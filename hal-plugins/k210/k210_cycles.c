#include "k210_cycles.h"

static uint64_t ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : a; }

uint64_t k210_macs_kpu_layer(const k210_layer_t* l) {
  uint64_t k = l->kernel_type == K210_KERNEL_3X3 ? 9 : 1;
  uint64_t in_ch = l->depth_wise_layer ? 1 : (uint64_t)l->i_ch_num + 1;
  return ((uint64_t)l->o_ch_num + 1) * in_ch * k * ((uint64_t)l->i_row_wid + 1) *
         ((uint64_t)l->i_col_high + 1);
}

uint64_t k210_cycles_kpu_layer(const k210_layer_t* l) {
  uint64_t out_ch = (uint64_t)l->o_ch_num + 1, in_ch = (uint64_t)l->i_ch_num + 1;
  uint64_t k = l->kernel_type == K210_KERNEL_3X3 ? 9 : 1;
  uint64_t groups = l->coef_group ? (uint64_t)l->coef_group : 1;
  uint64_t rows = ((uint64_t)l->i_col_high + 1) * (l->row_switch_addr ? (uint64_t)l->row_switch_addr : 1);
  uint64_t weight_bytes = out_ch * (l->depth_wise_layer ? 1 : in_ch) * k;
  uint64_t setup = 12 + 32;
  uint64_t params = ceil_div(weight_bytes + out_ch * K210_BN_BYTES + K210_ACT_TABLE_BYTES, 8);
  uint64_t compute = l->depth_wise_layer ? ceil_div(out_ch, groups) * rows
                                         : out_ch * ceil_div(in_ch, groups) * rows;
  uint64_t output = l->send_data_out ? ceil_div((uint64_t)l->dma_total_byte + 1, 8) : 0;
  return setup + params + compute + output;
}

uint64_t k210_cycles_cpu(uint64_t float_macs, uint64_t element_ops, uint64_t transcendentals) {
  return 2 * float_macs + 3 * element_ops + 40 * transcendentals;
}
