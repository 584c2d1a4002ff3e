/*
 * k210_kpu.c: the KPU through its registers, as a driver sees it: layer
 * words pushed into the FIFO, KPU RAM in and out, interrupts (raw, mask,
 * status, clear), the output FIFO and its DMA channel, refusals, and the
 * cycle model's count.
 */
#include "k210_kpu.h"

#include "k210_conv.h"
#include "k210_cycles.h"
#include "k210_test.h"

#define BUS 0x10000u /* where the test maps its parameter memory */

typedef struct prog_t {
  k210_layer_t l;
  uint8_t mem[8192]; /* weights at 0, batch norm at 4096, activation at 6144 */
  uint8_t in[4 * 8 * 8];
  k210_bn_t bn[4];
  k210_act_table_t act;
} prog_t;

/* A 3x3 layer: in_ch x 8 x 8 at row 0 -> out_ch x (8/s) x (8/s) at row 100. */
static void make_layer(prog_t* p, uint32_t in_ch, uint32_t out_ch, int pool) {
  memset(p, 0, sizeof(*p));
  k210_layer_t* l = &p->l;
  k210_fmap_t in = k210_fmap_for_shape(0, 8, 8, in_ch);
  uint32_t s = k210_pool_stride(pool);
  k210_fmap_t out = k210_fmap_for_shape(100, 8 / s, 8 / s, out_ch);
  l->int_en = 1;
  l->image_src_addr = in.base_row;
  l->image_dst_addr = out.base_row;
  l->i_ch_num = in_ch - 1;
  l->o_ch_num = out_ch - 1;
  l->o_ch_num_coef = out_ch - 1;
  l->i_row_wid = 7;
  l->i_col_high = 7;
  l->o_row_wid = 8 / s - 1;
  l->o_col_high = 8 / s - 1;
  l->kernel_type = K210_KERNEL_3X3;
  l->pool_type = pool;
  l->load_para = 1;
  l->pad_value = 3;
  l->bwsx_base_addr = BUS + 4096;
  l->load_coor = 1;
  l->para_size = in_ch * 9 * out_ch;
  l->para_start_addr = BUS;
  l->channel_switch_addr = in.channel_switch;
  l->row_switch_addr = in.row_switch;
  l->coef_group = in.groups;
  l->load_act = 1;
  l->active_addr = BUS + 6144;
  l->wb_channel_switch_addr = out.channel_switch;
  l->wb_row_switch_addr = out.row_switch;
  l->wb_group = out.groups;
  l->arg_x = -2;
  l->arg_w = -3;
  l->arg_add = 54;
  l->channel_byte_num = (8 / s) * (8 / s) - 1;
  l->dma_total_byte = (8 / s) * (8 / s) * out_ch - 1;
  for (uint32_t i = 0; i < in_ch * 9 * out_ch; ++i) p->mem[i] = (uint8_t)(i * 7 + 1);
  for (uint32_t c = 0; c < out_ch; ++c) {
    p->bn[c] = (k210_bn_t){300 + 50 * (int32_t)c, -20, 6};
    k210_bn_encode(&p->bn[c], p->mem + 4096 + 8 * c);
  }
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    p->act.seg[i] = (k210_act_segment_t){i == 0 ? K210_ACT_X_MIN : 0, i == 0 ? 0 : 3, 2};
    p->act.bias[i] = i == 0 ? 5 : 5;
  }
  k210_act_encode(&p->act, p->mem + 6144);
  for (size_t i = 0; i < sizeof(p->in); ++i) p->in[i] = (uint8_t)(i * 13);
}

/* What the layer must produce, computed without the KPU. */
static void expected(const prog_t* p, uint8_t* out) {
  const k210_layer_t* l = &p->l;
  uint32_t in_ch = (uint32_t)l->i_ch_num + 1, out_ch = (uint32_t)l->o_ch_num + 1;
  k210_conv_geom_t g = {in_ch, out_ch, 8, 8, 3, 0, (uint8_t)l->pad_value};
  k210_acc_args_t a = {l->arg_x, l->arg_w, l->arg_add, 0, 0, in_ch};
  uint8_t pre[4 * 64];
  k210_conv_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  k210_conv_run(&plan, &g, p->mem, &a, p->bn, &p->act, K210_ACT_RULE_V02, 0, p->in, pre);
  k210_conv_plan_free(&plan);
  k210_pool(pre, 8, 8, out_ch, (int)l->pool_type, out);
}

static int g_irqs;
static void on_irq(void* ctx) {
  (void)ctx;
  ++g_irqs;
}

static void push(k210_kpu_t* k, const k210_layer_t* l) {
  uint64_t w[K210_LAYER_WORDS];
  CU_ASSERT_PTR_NULL_FATAL(k210_layer_encode(l, w));
  for (int i = 0; i < K210_LAYER_WORDS; ++i) k210_kpu_write(k, K210_REG_LAYER_ARGUMENT_FIFO, w[i]);
}

static k210_kpu_t* ready(prog_t* p) {
  k210_kpu_t* k = k210_kpu_create();
  k210_kpu_map(k, BUS, p->mem, sizeof(p->mem));
  k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 1);
  k210_kpu_set_irq(k, on_irq, NULL);
  k210_fmap_t in = k210_layer_in_map(&p->l);
  k210_fmap_store(k210_kpu_ram(k), &in, p->in);
  g_irqs = 0;
  return k;
}

static void test_reset_state(void) {
  k210_kpu_t* k = k210_kpu_create();
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_MASK), 7);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_STATUS), 0);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_RAW), 0);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_EIGHT_BIT_MODE), 0);
  k210_kpu_write(k, K210_REG_FIFO_THRESHOLD, 0x1AB);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_FIFO_THRESHOLD), 0xAB);
  CU_ASSERT_EQUAL(k210_kpu_read(k, 0x48), 0); /* unassigned */
  CU_ASSERT_PTR_NULL(k210_kpu_error(k));
  k210_kpu_destroy(k);
}

static void test_layer_through_registers(void) {
  static const int pools[] = {K210_POOL_BYPASS, K210_POOL_MAX_2_S2, K210_POOL_MEAN_4_S4, K210_POOL_RIGHT_TOP_2_S2};
  for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); ++i) {
    prog_t* p = calloc(1, sizeof(*p));
    make_layer(p, 3, 4, pools[i]);
    k210_kpu_t* k = ready(p);
    k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6); /* calc_done unmasked */
    push(k, &p->l);
    CU_ASSERT_PTR_NULL(k210_kpu_error(k));
    CU_ASSERT_EQUAL(g_irqs, 1);
    uint8_t want[4 * 64], got[4 * 64];
    expected(p, want);
    k210_fmap_t out = k210_layer_out_map(&p->l);
    k210_fmap_load(k210_kpu_ram(k), &out, got);
    CU_ASSERT_EQUAL(memcmp(want, got, (size_t)out.channels * out.width * out.height), 0);
    k210_kpu_destroy(k);
    free(p);
  }
}

static void test_interrupt_registers(void) {
  prog_t* p = calloc(1, sizeof(*p));
  make_layer(p, 1, 1, K210_POOL_BYPASS);
  k210_kpu_t* k = ready(p);
  push(k, &p->l); /* masked: raw set, no call */
  CU_ASSERT_EQUAL(g_irqs, 0);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_RAW) & K210_INT_CALC_DONE, K210_INT_CALC_DONE);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_STATUS), 0);
  k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6); /* unmasking a pending one calls */
  CU_ASSERT_EQUAL(g_irqs, 1);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_STATUS), K210_INT_CALC_DONE);
  k210_kpu_write(k, K210_REG_INTERRUPT_CLEAR, K210_INT_CALC_DONE);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_STATUS), 0);
  p->l.int_en = 0; /* no interrupt requested */
  push(k, &p->l);
  CU_ASSERT_EQUAL(g_irqs, 1);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_INTERRUPT_RAW) & K210_INT_CALC_DONE, 0);
  /* almost_empty: the FIFO drains below the threshold after each layer. */
  k210_kpu_write(k, K210_REG_FIFO_THRESHOLD, 1 << 4);
  k210_kpu_write(k, K210_REG_INTERRUPT_CLEAR, 7);
  k210_kpu_write(k, K210_REG_INTERRUPT_MASK, K210_INT_CALC_DONE | K210_INT_ALMOST_FULL);
  g_irqs = 0;
  push(k, &p->l);
  CU_ASSERT_TRUE(g_irqs >= 1);
  CU_ASSERT_TRUE(k210_kpu_read(k, K210_REG_INTERRUPT_RAW) & K210_INT_ALMOST_EMPTY);
  k210_kpu_destroy(k);
  free(p);
}

static void test_output_fifo_and_dma(void) {
  prog_t* p = calloc(1, sizeof(*p));
  make_layer(p, 2, 3, K210_POOL_MAX_2_S2);
  p->l.send_data_out = 1;
  k210_kpu_t* k = ready(p);
  uint8_t want[3 * 16], dma[40];
  expected(p, want);
  memset(dma, 0xEE, sizeof(dma));
  k210_kpu_dma_arm(k, dma, 40); /* 8 bytes fewer than the layer sends */
  push(k, &p->l);
  CU_ASSERT_EQUAL(k210_kpu_dma_pending(k), 0);
  CU_ASSERT_EQUAL(memcmp(dma, want, 40), 0); /* channel after channel, 4x4 each */
  uint64_t rest = k210_kpu_read(k, K210_REG_FIFO_DATA_OUT);
  for (int i = 0; i < 8; ++i) CU_ASSERT_EQUAL((uint8_t)(rest >> (8 * i)), want[40 + i]);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_FIFO_DATA_OUT), 0); /* drained */
  /* Without DMA everything waits in the FIFO; a dma flush drops it. */
  push(k, &p->l);
  uint64_t first = k210_kpu_read(k, K210_REG_FIFO_DATA_OUT);
  CU_ASSERT_EQUAL((uint8_t)first, want[0]);
  k210_kpu_write(k, K210_REG_FIFO_CTRL, ~1ull);
  CU_ASSERT_EQUAL(k210_kpu_read(k, K210_REG_FIFO_DATA_OUT), 0);
  k210_kpu_destroy(k);
  free(p);
}

static void test_refusals(void) {
  prog_t* p = calloc(1, sizeof(*p));
  make_layer(p, 1, 1, K210_POOL_BYPASS);
  k210_kpu_t* k = ready(p);
  k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6);
  k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 0);
  push(k, &p->l);
  CU_ASSERT_EQUAL(g_irqs, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k210_kpu_error(k));
  CU_ASSERT_PTR_NOT_NULL(strstr(k210_kpu_error(k), "16-bit"));
  /* Sticky until reset: a good layer does not run either. */
  k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 1);
  push(k, &p->l);
  CU_ASSERT_EQUAL(g_irqs, 0);
  k210_kpu_reset(k);
  k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 1);
  k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6);
  static const struct {
    size_t field_offset;
    int64_t value;
    const char* says;
  } bad[] = {{offsetof(k210_layer_t, pool_type), 10, "pool_type"},
             {offsetof(k210_layer_t, kernel_type), 2, "kernel_type"},
             {offsetof(k210_layer_t, para_start_addr), BUS + 8192, "weights"},
             {offsetof(k210_layer_t, active_addr), BUS + 8192, "activation"},
             {offsetof(k210_layer_t, image_dst_addr), K210_RAM_ROWS - 1, "output"},
             {offsetof(k210_layer_t, o_row_wid), 3, "does not match"},
             {offsetof(k210_layer_t, para_size), 10, "weight loads"},
             {offsetof(k210_layer_t, bypass_conv), 1, "bypass_conv"},
             {offsetof(k210_layer_t, coef_group), 3, "channels per row"},
             {offsetof(k210_layer_t, bwsx_base_addr), BUS + 4, "aligned"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    prog_t q = *p;
    memcpy((char*)&q.l + bad[i].field_offset, &bad[i].value, sizeof(int64_t));
    k210_kpu_reset(k);
    k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 1);
    k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6);
    g_irqs = 0;
    push(k, &q.l);
    CU_ASSERT_EQUAL(g_irqs, 0);
    const char* e = k210_kpu_error(k);
    CU_ASSERT_TRUE(e && strstr(e, bad[i].says) && strstr(e, "KPU layer 0"));
    if (!e || !strstr(e, bad[i].says)) fprintf(stderr, "\n  case %zu: %s\n", i, e ? e : "(no error)");
  }
  /* A flushed argument FIFO forgets a partial layer. */
  k210_kpu_reset(k);
  k210_kpu_write(k, K210_REG_EIGHT_BIT_MODE, 1);
  k210_kpu_write(k, K210_REG_INTERRUPT_MASK, 6);
  g_irqs = 0;
  k210_kpu_write(k, K210_REG_LAYER_ARGUMENT_FIFO, 12345);
  k210_kpu_write(k, K210_REG_FIFO_CTRL, ~4ull);
  push(k, &p->l);
  CU_ASSERT_EQUAL(g_irqs, 1);
  CU_ASSERT_PTR_NULL(k210_kpu_error(k));
  k210_kpu_destroy(k);
  free(p);
}

static void test_cycle_model(void) {
  prog_t* p = calloc(1, sizeof(*p));
  make_layer(p, 3, 4, K210_POOL_MAX_2_S2);
  p->l.send_data_out = 1;
  k210_kpu_t* k = ready(p);
  k210_kpu_dma_arm(k, p->mem + 7000, 64);
  push(k, &p->l);
  k210_kpu_stats_t st;
  k210_kpu_stats(k, &st);
  /* setup 44 + params ceil((108 + 32 + 144) / 8) = 36 + compute 4 x ceil(3/4)
   * x 8 lines x 1 row = 32 + DMA 64 / 8 = 8 */
  CU_ASSERT_EQUAL(st.cycles, 44 + 36 + 32 + 8);
  CU_ASSERT_EQUAL(st.macs, 4 * 3 * 9 * 64);
  CU_ASSERT_EQUAL(st.layers, 1);
  CU_ASSERT_EQUAL(k210_cycles_to_ns(400), 1000);
  k210_kpu_destroy(k);
  free(p);
}

int main(void) {
  static const k210_test_t tests[] = {
      {"reset state and plain registers", test_reset_state},
      {"layers through the FIFO match direct arithmetic", test_layer_through_registers},
      {"interrupt raw, mask, status, clear", test_interrupt_registers},
      {"output FIFO and DMA", test_output_fifo_and_dma},
      {"refused layers raise nothing and say why", test_refusals},
      {"cycle model", test_cycle_model},
      {NULL, NULL}};
  return k210_run_suite("k210_kpu", tests);
}
