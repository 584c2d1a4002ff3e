/*
 * The KPU's layer program format: the twelve 64-bit layer-argument words a
 * driver pushes into layer_argument_fifo, and the parameter tables they point
 * to (batch normalization, activation). Field positions are those of the
 * public kpu.h (kendryte-standalone-sdk); DESIGN.md section 6 lists them.
 *
 * k210_layer_t holds every field as a plain integer (signed fields already
 * sign-extended, dimension fields still "value - 1" as in the words), so the
 * decoder and encoder are driven by one table and round-trip exactly.
 */
#ifndef AXLE_K210_LAYER_H_
#define AXLE_K210_LAYER_H_

#include <stddef.h>
#include <stdint.h>

#define K210_LAYER_WORDS 12
#define K210_LAYER_BYTES (K210_LAYER_WORDS * 8)
#define K210_ACT_SEGMENTS 16
#define K210_ACT_TABLE_BYTES 144 /* 16 segment words + 16 bias bytes */
#define K210_BN_BYTES 8          /* one word per output channel */

/* kernel_type */
enum { K210_KERNEL_1X1 = 0, K210_KERNEL_3X3 = 1 };

/* pool_type */
enum {
  K210_POOL_BYPASS = 0,
  K210_POOL_MAX_2_S2 = 1,
  K210_POOL_MEAN_2_S2 = 2,
  K210_POOL_MAX_4_S4 = 3,
  K210_POOL_MEAN_4_S4 = 4,
  K210_POOL_LEFT_TOP_2_S2 = 5,
  K210_POOL_RIGHT_TOP_2_S2 = 6,
  K210_POOL_LEFT_TOP_4_S4 = 7,
  K210_POOL_MEAN_2_S1 = 8,
  K210_POOL_MAX_2_S1 = 9,
  K210_POOL_COUNT = 10
};

typedef struct k210_layer_t {
  /* word 0: interrupt_enabe */
  int64_t int_en, ram_flag, full_add, depth_wise_layer;
  /* word 1: image_addr (64-byte rows of KPU RAM) */
  int64_t image_src_addr, image_dst_addr;
  /* word 2: image_channel_num */
  int64_t i_ch_num, o_ch_num, o_ch_num_coef;
  /* word 3: image_size */
  int64_t i_row_wid, i_col_high, o_row_wid, o_col_high;
  /* word 4: kernel_pool_type_cfg */
  int64_t kernel_type, pad_type, pool_type, first_stride, bypass_conv, load_para,
      dma_burst_size, pad_value, bwsx_base_addr;
  /* word 5: kernel_load_cfg */
  int64_t load_coor, load_time, para_size, para_start_addr;
  /* word 6: kernel_offset */
  int64_t coef_column_offset, coef_row_offset;
  /* word 7: kernel_calc_type_cfg */
  int64_t channel_switch_addr, row_switch_addr, coef_size, coef_group, load_act, active_addr;
  /* word 8: write_back_cfg */
  int64_t wb_channel_switch_addr, wb_row_switch_addr, wb_group;
  /* word 9: conv_value (arg_w, arg_x signed 24-bit) */
  int64_t shr_w, shr_x, arg_w, arg_x;
  /* word 10: conv_value2 (arg_add signed 40-bit) */
  int64_t arg_add;
  /* word 11: dma_parameter */
  int64_t send_data_out, channel_byte_num, dma_total_byte;
} k210_layer_t;

/* One bit field of the layer words. */
typedef struct k210_field_t {
  const char* name;   /* kpu.h spelling */
  uint8_t word;       /* 0..11 */
  uint8_t lsb;
  uint8_t width;      /* bits */
  uint8_t is_signed;  /* two's complement, sign-extended on decode */
  size_t offset;      /* offsetof(k210_layer_t, field) */
} k210_field_t;

extern const k210_field_t k210_layer_fields[];
extern const size_t k210_layer_field_count;

/* Value of field f in l. */
int64_t k210_field_get(const k210_layer_t* l, const k210_field_t* f);
void k210_field_set(k210_layer_t* l, const k210_field_t* f, int64_t value);
/* Smallest and largest value field f can hold. */
int64_t k210_field_min(const k210_field_t* f);
int64_t k210_field_max(const k210_field_t* f);

/* Every field from the words; reserved bits are ignored. */
void k210_layer_decode(const uint64_t words[K210_LAYER_WORDS], k210_layer_t* out);
/* The words for l. Returns NULL, or the name of the first field whose value
 * does not fit its bits (then words are unspecified). */
const char* k210_layer_encode(const k210_layer_t* l, uint64_t words[K210_LAYER_WORDS]);
/* Reads/writes the words as they lie in memory (little-endian). */
void k210_layer_load(const uint8_t bytes[K210_LAYER_BYTES], uint64_t words[K210_LAYER_WORDS]);
void k210_layer_store(const uint64_t words[K210_LAYER_WORDS], uint8_t bytes[K210_LAYER_BYTES]);

/* Batch normalization of one output channel: v = ((acc * mul) >> shift) + add.
 * Word: mul[23:0] signed, add[55:24] signed, shift[59:56]. */
typedef struct k210_bn_t {
  int32_t mul;
  int32_t add;
  uint8_t shift;
} k210_bn_t;

void k210_bn_decode(const uint8_t bytes[K210_BN_BYTES], k210_bn_t* out);
/* Returns 0 when a value does not fit its field. */
int k210_bn_encode(const k210_bn_t* bn, uint8_t bytes[K210_BN_BYTES]);

/* Activation: 16 segments {shift[7:0], y_mul[23:8] signed, x_start[59:24]
 * signed 36-bit}, then 16 u8 biases. */
typedef struct k210_act_segment_t {
  int64_t x_start;
  int32_t y_mul;
  uint8_t shift;
} k210_act_segment_t;

typedef struct k210_act_table_t {
  k210_act_segment_t seg[K210_ACT_SEGMENTS];
  uint8_t bias[K210_ACT_SEGMENTS];
} k210_act_table_t;

#define K210_ACT_X_MIN (-(INT64_C(1) << 35))
#define K210_ACT_X_MAX ((INT64_C(1) << 35) - 1)

void k210_act_decode(const uint8_t bytes[K210_ACT_TABLE_BYTES], k210_act_table_t* out);
int k210_act_encode(const k210_act_table_t* t, uint8_t bytes[K210_ACT_TABLE_BYTES]);

#endif /* AXLE_K210_LAYER_H_ */
