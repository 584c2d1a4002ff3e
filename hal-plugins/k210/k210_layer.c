/*
 * Layer-argument words and parameter tables: one field table drives both
 * directions, so a field can only be placed wrongly once, and the round-trip
 * tests walk the same table.
 */
#include "k210_layer.h"

#include <string.h>

#include "k210_bytes.h"

#define F(name, word, lsb, width, sgn) \
  { #name, word, lsb, width, sgn, offsetof(k210_layer_t, name) }

const k210_field_t k210_layer_fields[] = {
    F(int_en, 0, 0, 1, 0),
    F(ram_flag, 0, 1, 1, 0),
    F(full_add, 0, 2, 1, 0),
    F(depth_wise_layer, 0, 3, 1, 0),
    F(image_src_addr, 1, 0, 15, 0),
    F(image_dst_addr, 1, 32, 15, 0),
    F(i_ch_num, 2, 0, 10, 0),
    F(o_ch_num, 2, 32, 10, 0),
    F(o_ch_num_coef, 2, 48, 10, 0),
    F(i_row_wid, 3, 0, 10, 0),
    F(i_col_high, 3, 10, 9, 0),
    F(o_row_wid, 3, 32, 10, 0),
    F(o_col_high, 3, 42, 9, 0),
    F(kernel_type, 4, 0, 3, 0),
    F(pad_type, 4, 3, 1, 0),
    F(pool_type, 4, 4, 4, 0),
    F(first_stride, 4, 8, 1, 0),
    F(bypass_conv, 4, 9, 1, 0),
    F(load_para, 4, 10, 1, 0),
    F(dma_burst_size, 4, 16, 8, 0),
    F(pad_value, 4, 24, 8, 0),
    F(bwsx_base_addr, 4, 32, 32, 0),
    F(load_coor, 5, 0, 1, 0),
    F(load_time, 5, 1, 6, 0),
    F(para_size, 5, 15, 17, 0),
    F(para_start_addr, 5, 32, 32, 0),
    F(coef_column_offset, 6, 0, 4, 0),
    F(coef_row_offset, 6, 4, 12, 0),
    F(channel_switch_addr, 7, 0, 15, 0),
    F(row_switch_addr, 7, 16, 4, 0),
    F(coef_size, 7, 20, 8, 0),
    F(coef_group, 7, 28, 3, 0),
    F(load_act, 7, 31, 1, 0),
    F(active_addr, 7, 32, 32, 0),
    F(wb_channel_switch_addr, 8, 0, 15, 0),
    F(wb_row_switch_addr, 8, 16, 4, 0),
    F(wb_group, 8, 20, 3, 0),
    F(shr_w, 9, 0, 4, 0),
    F(shr_x, 9, 4, 4, 0),
    F(arg_w, 9, 8, 24, 1),
    F(arg_x, 9, 32, 24, 1),
    F(arg_add, 10, 0, 40, 1),
    F(send_data_out, 11, 0, 1, 0),
    F(channel_byte_num, 11, 16, 16, 0),
    F(dma_total_byte, 11, 32, 32, 0),
};
#undef F

const size_t k210_layer_field_count = sizeof(k210_layer_fields) / sizeof(k210_layer_fields[0]);

int64_t k210_field_get(const k210_layer_t* l, const k210_field_t* f) {
  int64_t v;
  memcpy(&v, (const char*)l + f->offset, sizeof(v));
  return v;
}

void k210_field_set(k210_layer_t* l, const k210_field_t* f, int64_t value) {
  memcpy((char*)l + f->offset, &value, sizeof(value));
}

int64_t k210_field_min(const k210_field_t* f) {
  return f->is_signed ? -(INT64_C(1) << (f->width - 1)) : 0;
}

int64_t k210_field_max(const k210_field_t* f) {
  return f->is_signed ? (INT64_C(1) << (f->width - 1)) - 1 : (INT64_C(1) << f->width) - 1;
}

static uint64_t bits_of(uint64_t word, unsigned lsb, unsigned width) {
  return (word >> lsb) & ((1ull << width) - 1);
}

void k210_layer_decode(const uint64_t words[K210_LAYER_WORDS], k210_layer_t* out) {
  for (size_t i = 0; i < k210_layer_field_count; ++i) {
    const k210_field_t* f = &k210_layer_fields[i];
    uint64_t raw = bits_of(words[f->word], f->lsb, f->width);
    k210_field_set(out, f, f->is_signed ? k210_sign_extend(raw, f->width) : (int64_t)raw);
  }
}

const char* k210_layer_encode(const k210_layer_t* l, uint64_t words[K210_LAYER_WORDS]) {
  memset(words, 0, sizeof(uint64_t) * K210_LAYER_WORDS);
  for (size_t i = 0; i < k210_layer_field_count; ++i) {
    const k210_field_t* f = &k210_layer_fields[i];
    int64_t v = k210_field_get(l, f);
    if (v < k210_field_min(f) || v > k210_field_max(f)) return f->name;
    words[f->word] |= ((uint64_t)v & ((1ull << f->width) - 1)) << f->lsb;
  }
  return NULL;
}

void k210_layer_load(const uint8_t bytes[K210_LAYER_BYTES], uint64_t words[K210_LAYER_WORDS]) {
  for (int i = 0; i < K210_LAYER_WORDS; ++i) words[i] = k210_get_u64(bytes + 8 * i);
}

void k210_layer_store(const uint64_t words[K210_LAYER_WORDS], uint8_t bytes[K210_LAYER_BYTES]) {
  for (int i = 0; i < K210_LAYER_WORDS; ++i) k210_put_u64(bytes + 8 * i, words[i]);
}

static int fits_signed(int64_t v, unsigned bits) {
  return v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1));
}

void k210_bn_decode(const uint8_t bytes[K210_BN_BYTES], k210_bn_t* out) {
  uint64_t w = k210_get_u64(bytes);
  out->mul = (int32_t)k210_sign_extend(bits_of(w, 0, 24), 24);
  out->add = (int32_t)k210_sign_extend(bits_of(w, 24, 32), 32);
  out->shift = (uint8_t)bits_of(w, 56, 4);
}

int k210_bn_encode(const k210_bn_t* bn, uint8_t bytes[K210_BN_BYTES]) {
  if (!fits_signed(bn->mul, 24) || bn->shift > 15) return 0;
  uint64_t w = ((uint64_t)(int64_t)bn->mul & 0xFFFFFFull) |
               ((uint64_t)(uint32_t)bn->add << 24) | ((uint64_t)bn->shift << 56);
  k210_put_u64(bytes, w);
  return 1;
}

void k210_act_decode(const uint8_t bytes[K210_ACT_TABLE_BYTES], k210_act_table_t* out) {
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    uint64_t w = k210_get_u64(bytes + 8 * i);
    out->seg[i].shift = (uint8_t)bits_of(w, 0, 8);
    out->seg[i].y_mul = (int32_t)k210_sign_extend(bits_of(w, 8, 16), 16);
    out->seg[i].x_start = k210_sign_extend(bits_of(w, 24, 36), 36);
  }
  memcpy(out->bias, bytes + 8 * K210_ACT_SEGMENTS, K210_ACT_SEGMENTS);
}

int k210_act_encode(const k210_act_table_t* t, uint8_t bytes[K210_ACT_TABLE_BYTES]) {
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    const k210_act_segment_t* s = &t->seg[i];
    if (!fits_signed(s->y_mul, 16) || !fits_signed(s->x_start, 36)) return 0;
    uint64_t w = (uint64_t)s->shift | ((uint64_t)(int64_t)s->y_mul & 0xFFFFull) << 8 |
                 ((uint64_t)s->x_start & ((1ull << 36) - 1)) << 24;
    k210_put_u64(bytes + 8 * i, w);
  }
  memcpy(bytes + 8 * K210_ACT_SEGMENTS, t->bias, K210_ACT_SEGMENTS);
  return 1;
}
