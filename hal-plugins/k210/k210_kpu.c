#include "k210_kpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k210_bytes.h"
#include "k210_conv.h"
#include "k210_cycles.h"
#include "k210_scratch.h"

typedef struct region_t {
  uint32_t bus, size;
  const uint8_t* host;
} region_t;

struct k210_kpu_t {
  uint8_t* ram;
  /* registers */
  uint64_t interrupt_raw, interrupt_mask, fifo_threshold, eight_bit_mode;
  uint64_t fifo[K210_LAYER_WORDS];
  uint32_t fifo_count;
  /* output FIFO: the last streamed layer's bytes not yet read */
  uint8_t* stream;
  size_t stream_len, stream_pos, stream_cap;
  /* the DMA channel draining the output FIFO */
  uint8_t* dma_dst;
  uint64_t dma_left;
  region_t regions[K210_KPU_MAX_REGIONS];
  uint32_t region_count;
  void (*irq)(void*);
  void* irq_ctx;
  k210_act_rule_t rule;
  int simd;
  k210_kpu_stats_t stats;
  char error[320];
  /* per-layer scratch, grown to the largest layer seen */
  k210_conv_plan_t plan;
  uint8_t *in, *pre, *post;
  size_t cap_in, cap_pre, cap_post;
};

k210_kpu_t* k210_kpu_create(void) {
  k210_kpu_t* k = (k210_kpu_t*)calloc(1, sizeof(*k));
  if (!k) return NULL;
  k->ram = (uint8_t*)calloc(1, K210_RAM_BYTES);
  if (!k->ram) {
    free(k);
    return NULL;
  }
  k->simd = 1;
  k210_kpu_reset(k);
  return k;
}

void k210_kpu_destroy(k210_kpu_t* k) {
  if (!k) return;
  k210_conv_plan_free(&k->plan);
  free(k->in);
  free(k->pre);
  free(k->post);
  free(k->stream);
  free(k->ram);
  free(k);
}

void k210_kpu_reset(k210_kpu_t* k) {
  k->interrupt_raw = 0;
  k->interrupt_mask = K210_INT_CALC_DONE | K210_INT_ALMOST_EMPTY | K210_INT_ALMOST_FULL;
  k->fifo_threshold = 0;
  k->eight_bit_mode = 0;
  k->fifo_count = 0;
  k->stream_len = k->stream_pos = 0;
  k->dma_dst = NULL;
  k->dma_left = 0;
  memset(&k->stats, 0, sizeof(k->stats));
  k->error[0] = '\0';
}

uint8_t* k210_kpu_ram(k210_kpu_t* k) { return k->ram; }

int k210_kpu_map(k210_kpu_t* k, uint32_t bus_addr, const void* host, uint32_t size) {
  if (k->region_count == K210_KPU_MAX_REGIONS || !k210_range_ok(bus_addr, size, 1ull << 32))
    return 0;
  k->regions[k->region_count++] = (region_t){bus_addr, size, (const uint8_t*)host};
  return 1;
}

void k210_kpu_unmap_all(k210_kpu_t* k) { k->region_count = 0; }

void k210_kpu_set_irq(k210_kpu_t* k, void (*handler)(void*), void* ctx) {
  k->irq = handler;
  k->irq_ctx = ctx;
}

void k210_kpu_dma_arm(k210_kpu_t* k, void* dst, uint64_t size) {
  k->dma_dst = (uint8_t*)dst;
  k->dma_left = dst ? size : 0;
}

uint64_t k210_kpu_dma_pending(const k210_kpu_t* k) { return k->dma_left; }

void k210_kpu_set_rule(k210_kpu_t* k, k210_act_rule_t rule) { k->rule = rule; }
void k210_kpu_set_simd(k210_kpu_t* k, int enabled) { k->simd = enabled; }
void k210_kpu_stats(const k210_kpu_t* k, k210_kpu_stats_t* out) { *out = k->stats; }
const char* k210_kpu_error(const k210_kpu_t* k) { return k->error[0] ? k->error : NULL; }

/* ------------------------------------------------------------------------ */
/* Interrupts.                                                               */
/* ------------------------------------------------------------------------ */

static uint64_t pending(const k210_kpu_t* k) { return k->interrupt_raw & ~k->interrupt_mask & 7; }

static void raise_irq(k210_kpu_t* k, uint64_t bits) {
  uint64_t before = pending(k);
  k->interrupt_raw |= bits;
  if (pending(k) && pending(k) != before && k->irq) k->irq(k->irq_ctx);
}

/* Argument-FIFO fill against fifo_threshold (in argument words). */
static void fifo_level_irqs(k210_kpu_t* k) {
  uint32_t full = (uint32_t)(k->fifo_threshold & 0xF), empty = (uint32_t)(k->fifo_threshold >> 4 & 0xF);
  if (full && k->fifo_count >= full) raise_irq(k, K210_INT_ALMOST_FULL);
  if (k->fifo_count <= empty) raise_irq(k, K210_INT_ALMOST_EMPTY);
}

/* ------------------------------------------------------------------------ */
/* Layer geometry and checks.                                                */
/* ------------------------------------------------------------------------ */

k210_fmap_t k210_layer_in_map(const k210_layer_t* l) {
  k210_fmap_t m = {(uint32_t)l->image_src_addr, (uint32_t)l->channel_switch_addr,
                   (uint32_t)l->row_switch_addr, (uint32_t)l->coef_group,
                   (uint32_t)l->i_row_wid + 1, (uint32_t)l->i_col_high + 1,
                   (uint32_t)l->i_ch_num + 1};
  return m;
}

k210_fmap_t k210_layer_out_map(const k210_layer_t* l) {
  k210_fmap_t m = {(uint32_t)l->image_dst_addr, (uint32_t)l->wb_channel_switch_addr,
                   (uint32_t)l->wb_row_switch_addr, (uint32_t)l->wb_group,
                   (uint32_t)l->o_row_wid + 1, (uint32_t)l->o_col_high + 1,
                   (uint32_t)l->o_ch_num + 1};
  return m;
}

uint64_t k210_layer_weight_bytes(const k210_layer_t* l) {
  uint64_t k = l->kernel_type == K210_KERNEL_3X3 ? 9 : 1;
  return ((uint64_t)l->o_ch_num + 1) * (l->depth_wise_layer ? 1 : (uint64_t)l->i_ch_num + 1) * k;
}

static int why_fail(char* why, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_fail(char* why, size_t size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return 0;
}

int k210_layer_check(const k210_layer_t* l, char* why, size_t n) {
  /* Fields whose effect the public sources do not define are refused rather
   * than guessed. */
  if (l->kernel_type > K210_KERNEL_3X3)
    return why_fail(why, n, "kernel_type %lld is not 1x1 (0) or 3x3 (1)", (long long)l->kernel_type);
  if (l->pool_type >= K210_POOL_COUNT)
    return why_fail(why, n, "pool_type %lld is not one of the ten pool types", (long long)l->pool_type);
  if (l->first_stride || l->bypass_conv || l->full_add || l->coef_column_offset || l->coef_row_offset)
    return why_fail(why, n, "first_stride, bypass_conv, full_add and kernel_offset must be 0 "
                            "(their effect is not published, so the emulator does not guess)");
  if (!l->load_para || !l->load_act)
    return why_fail(why, n, "load_para and load_act must be 1 (every layer loads its own "
                            "batch-norm and activation tables)");
  if (l->depth_wise_layer && l->i_ch_num != l->o_ch_num)
    return why_fail(why, n, "depthwise layer with %lld input and %lld output channels",
                    (long long)l->i_ch_num + 1, (long long)l->o_ch_num + 1);
  k210_fmap_t in = k210_layer_in_map(l), out = k210_layer_out_map(l);
  const char* bad = k210_fmap_check(&in);
  if (bad) return why_fail(why, n, "input %ux%ux%u at row %u: %s", in.channels, in.height, in.width, in.base_row, bad);
  uint32_t s = k210_pool_stride((int)l->pool_type);
  if (out.width != in.width / s || out.height != in.height / s)
    return why_fail(why, n, "output %ux%u does not match input %ux%u pooled with stride %u",
                    out.height, out.width, in.height, in.width, s);
  bad = k210_fmap_check(&out);
  if (bad) return why_fail(why, n, "output %ux%ux%u at row %u: %s", out.channels, out.height, out.width, out.base_row, bad);
  /* Weights stream in load_time + 1 loads of o_ch_num_coef + 1 channels. */
  uint64_t per_oc = k210_layer_weight_bytes(l) / out.channels, per_load = (uint64_t)l->o_ch_num_coef + 1;
  if (per_load > out.channels || (uint64_t)l->para_size != per_load * per_oc ||
      (uint64_t)l->load_time + 1 != (out.channels + per_load - 1) / per_load)
    return why_fail(why, n, "weight loads (load_time %lld, para_size %lld, o_ch_num_coef %lld) do "
                            "not cover %u channels of %llu bytes",
                    (long long)l->load_time, (long long)l->para_size, (long long)l->o_ch_num_coef,
                    out.channels, (unsigned long long)per_oc);
  if (l->para_start_addr % 128 || l->bwsx_base_addr % 8 || l->active_addr % 256)
    return why_fail(why, n, "parameter addresses must be aligned (weights 128, batch norm 8, "
                            "activation 256 bytes)");
  if (l->send_data_out) {
    uint64_t plane = (uint64_t)out.width * out.height;
    if ((uint64_t)l->channel_byte_num + 1 != plane || (uint64_t)l->dma_total_byte + 1 != plane * out.channels)
      return why_fail(why, n, "DMA sizes (channel %lld, total %lld bytes) do not match a %ux%ux%u output",
                      (long long)l->channel_byte_num + 1, (long long)l->dma_total_byte + 1,
                      out.channels, out.height, out.width);
  }
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Execution.                                                                */
/* ------------------------------------------------------------------------ */

static int fail(k210_kpu_t* k, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(k210_kpu_t* k, const char* fmt, ...) {
  int at = snprintf(k->error, sizeof(k->error), "KPU layer %llu: ",
                    (unsigned long long)k->stats.layers);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->error + at, sizeof(k->error) - (size_t)at, fmt, ap);
  va_end(ap);
  return 0;
}

/* Host pointer for [addr, addr + size) on the bus, or NULL. */
static const uint8_t* bus(const k210_kpu_t* k, uint64_t addr, uint64_t size) {
  for (uint32_t i = 0; i < k->region_count; ++i) {
    const region_t* r = &k->regions[i];
    if (addr >= r->bus && k210_range_ok(addr - r->bus, size, r->size)) return r->host + (addr - r->bus);
  }
  return NULL;
}

static void stream_out(k210_kpu_t* k, const uint8_t* data, size_t len) {
  size_t to_dma = k->dma_left < len ? (size_t)k->dma_left : len;
  if (to_dma) {
    memcpy(k->dma_dst, data, to_dma);
    k->dma_dst += to_dma;
    k->dma_left -= to_dma;
  }
  /* What the DMA does not take waits in the FIFO for fifo_data_out reads. */
  k->stream_len = k->stream_pos = 0;
  len -= to_dma;
  uint8_t* s = (uint8_t*)k210_grow(k->stream, &k->stream_cap, len);
  k->stream = s;
  if (s && len) {
    memcpy(s, data + to_dma, len);
    k->stream_len = len;
  }
}

static int execute(k210_kpu_t* k, const uint64_t words[K210_LAYER_WORDS]) {
  k210_layer_t l;
  char why[256];
  k210_layer_decode(words, &l);
  if (!k210_layer_check(&l, why, sizeof(why))) return fail(k, "%s", why);
  if (!(k->eight_bit_mode & 1))
    return fail(k, "16-bit mode (eight_bit_mode = 0) is not emulated");
  k210_fmap_t in = k210_layer_in_map(&l), out = k210_layer_out_map(&l);
  uint64_t wbytes = k210_layer_weight_bytes(&l);
  const uint8_t* weights = bus(k, (uint64_t)l.para_start_addr, wbytes);
  const uint8_t* bn_bytes = bus(k, (uint64_t)l.bwsx_base_addr, (uint64_t)out.channels * K210_BN_BYTES);
  const uint8_t* act_bytes = bus(k, (uint64_t)l.active_addr, K210_ACT_TABLE_BYTES);
  if (!weights || !bn_bytes || !act_bytes)
    return fail(k, "%s at 0x%08llx is outside the mapped memory",
                !weights ? "weights" : !bn_bytes ? "batch-norm table" : "activation table",
                (unsigned long long)(!weights ? l.para_start_addr : !bn_bytes ? l.bwsx_base_addr : l.active_addr));
  size_t in_bytes = (size_t)in.channels * in.height * in.width;
  size_t pre_bytes = (size_t)out.channels * in.height * in.width;
  size_t post_bytes = (size_t)out.channels * out.height * out.width;
  k->in = (uint8_t*)k210_grow(k->in, &k->cap_in, in_bytes);
  k->pre = (uint8_t*)k210_grow(k->pre, &k->cap_pre, pre_bytes);
  k->post = (uint8_t*)k210_grow(k->post, &k->cap_post, post_bytes);
  k210_bn_t* bn = (k210_bn_t*)malloc(sizeof(k210_bn_t) * out.channels);
  if (!k->in || !k->pre || !k->post || !bn) {
    free(bn);
    return fail(k, "out of host memory");
  }
  for (uint32_t c = 0; c < out.channels; ++c) k210_bn_decode(bn_bytes + (size_t)c * K210_BN_BYTES, &bn[c]);
  k210_act_table_t act;
  k210_act_decode(act_bytes, &act);

  /* The whole input is read before any output row is written, so a layer
   * whose output rows overlap its input still sees its own input. */
  k210_fmap_load(k->ram, &in, k->in);
  k210_conv_geom_t g = {in.channels, out.channels, in.width, in.height,
                        l.kernel_type == K210_KERNEL_3X3 ? 3u : 1u, (int)l.depth_wise_layer,
                        (uint8_t)l.pad_value};
  k210_acc_args_t acc = {l.arg_x, l.arg_w, l.arg_add, (unsigned)l.shr_x, (unsigned)l.shr_w,
                         l.depth_wise_layer ? 1 : (int64_t)in.channels};
  int ok = k210_conv_run(&k->plan, &g, weights, &acc, bn, &act, k->rule, k->simd, k->in, k->pre);
  free(bn);
  if (!ok) return fail(k, "out of host memory");
  k210_pool(k->pre, in.width, in.height, out.channels, (int)l.pool_type, k->post);
  k210_fmap_store(k->ram, &out, k->post);
  if (l.send_data_out) stream_out(k, k->post, post_bytes);

  k->stats.layers++;
  k->stats.cycles = k210_cycles_kpu_layer(&l);
  k->stats.macs = k210_macs_kpu_layer(&l);
  if (l.int_en) raise_irq(k, K210_INT_CALC_DONE);
  return 1;
}

void k210_kpu_write(k210_kpu_t* k, uint32_t offset, uint64_t value) {
  switch (offset) {
    case K210_REG_LAYER_ARGUMENT_FIFO:
      k->fifo[k->fifo_count++] = value;
      fifo_level_irqs(k);
      if (k->fifo_count == K210_LAYER_WORDS) {
        uint64_t words[K210_LAYER_WORDS];
        memcpy(words, k->fifo, sizeof(words));
        k->fifo_count = 0;
        /* A refused layer leaves its reason in error and raises nothing; the
         * driver sees no calc_done. */
        if (!k->error[0]) execute(k, words);
        fifo_level_irqs(k);
      }
      break;
    case K210_REG_INTERRUPT_MASK: {
      uint64_t before = pending(k);
      k->interrupt_mask = value & 7;
      if (pending(k) && pending(k) != before && k->irq) k->irq(k->irq_ctx);
      break;
    }
    case K210_REG_INTERRUPT_CLEAR: k->interrupt_raw &= ~value; break;
    case K210_REG_FIFO_THRESHOLD: k->fifo_threshold = value & 0xFF; break;
    case K210_REG_FIFO_CTRL:
      if (!(value & 0x4)) k->fifo_count = 0;
      if (!(value & 0x1)) k->stream_len = k->stream_pos = 0;
      break;
    case K210_REG_EIGHT_BIT_MODE: k->eight_bit_mode = value & 1; break;
    default: break; /* read-only or unassigned */
  }
}

uint64_t k210_kpu_read(k210_kpu_t* k, uint32_t offset) {
  switch (offset) {
    case K210_REG_INTERRUPT_STATUS: return pending(k);
    case K210_REG_INTERRUPT_RAW: return k->interrupt_raw;
    case K210_REG_INTERRUPT_MASK: return k->interrupt_mask;
    case K210_REG_FIFO_THRESHOLD: return k->fifo_threshold;
    case K210_REG_EIGHT_BIT_MODE: return k->eight_bit_mode;
    case K210_REG_FIFO_DATA_OUT: {
      uint8_t b[8] = {0};
      size_t n = k->stream_len - k->stream_pos;
      if (n > 8) n = 8;
      if (n) memcpy(b, k->stream + k->stream_pos, n);
      k->stream_pos += n;
      return k210_get_u64(b);
    }
    default: return 0;
  }
}
