/*
 * k210_layer.c: every field of the twelve layer words at its limits, signed
 * fields sign-extended, the words of a real model decoded field by field,
 * and the batch-norm and activation tables.
 */
#include "k210_layer.h"

#include "k210_test.h"

/* Each field alone at its minimum, maximum and a middle value survives
 * encode -> decode, lands in its word at its bits and nowhere else. */
static void test_every_field_at_limits(void) {
  for (size_t i = 0; i < k210_layer_field_count; ++i) {
    const k210_field_t* f = &k210_layer_fields[i];
    int64_t values[3] = {k210_field_min(f), k210_field_max(f), k210_field_max(f) / 3};
    for (int v = 0; v < 3; ++v) {
      k210_layer_t l;
      memset(&l, 0, sizeof(l));
      k210_field_set(&l, f, values[v]);
      uint64_t words[K210_LAYER_WORDS];
      CU_ASSERT_PTR_NULL_FATAL(k210_layer_encode(&l, words));
      for (int w = 0; w < K210_LAYER_WORDS; ++w) {
        uint64_t mask = ((f->width == 64 ? 0 : 1ull << f->width) - 1) << f->lsb;
        CU_ASSERT_EQUAL(words[w] & (w == f->word ? ~mask : ~0ull), 0);
      }
      k210_layer_t back;
      k210_layer_decode(words, &back);
      CU_ASSERT_EQUAL(memcmp(&l, &back, sizeof(l)), 0);
      if (memcmp(&l, &back, sizeof(l)) != 0) fprintf(stderr, "\n  field %s value %lld\n", f->name, (long long)values[v]);
    }
  }
}

/* One past the limits does not encode, and names the field. */
static void test_out_of_range_refused(void) {
  for (size_t i = 0; i < k210_layer_field_count; ++i) {
    const k210_field_t* f = &k210_layer_fields[i];
    k210_layer_t l;
    uint64_t words[K210_LAYER_WORDS];
    memset(&l, 0, sizeof(l));
    k210_field_set(&l, f, k210_field_max(f) + 1);
    const char* bad = k210_layer_encode(&l, words);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    CU_ASSERT_STRING_EQUAL(bad, f->name);
    k210_field_set(&l, f, k210_field_min(f) - 1);
    CU_ASSERT_PTR_NOT_NULL(k210_layer_encode(&l, words));
  }
}

/* Fields are disjoint and inside their words: all fields at their maximum
 * together still decode to themselves. */
static void test_all_fields_at_once(void) {
  k210_layer_t l, back;
  for (size_t i = 0; i < k210_layer_field_count; ++i)
    k210_field_set(&l, &k210_layer_fields[i], k210_field_max(&k210_layer_fields[i]));
  uint64_t words[K210_LAYER_WORDS];
  CU_ASSERT_PTR_NULL_FATAL(k210_layer_encode(&l, words));
  k210_layer_decode(words, &back);
  CU_ASSERT_EQUAL(memcmp(&l, &back, sizeof(l)), 0);
  uint8_t bytes[K210_LAYER_BYTES];
  uint64_t again[K210_LAYER_WORDS];
  k210_layer_store(words, bytes);
  k210_layer_load(bytes, again);
  CU_ASSERT_EQUAL(memcmp(words, again, sizeof(words)), 0);
  CU_ASSERT_EQUAL(bytes[0], words[0] & 0xFF); /* little-endian */
}

/* arg_x, arg_w (24 bits) and arg_add (40 bits) are two's complement. */
static void test_sign_extension(void) {
  uint64_t words[K210_LAYER_WORDS] = {0};
  words[9] = 0x00FFFFFFull << 32 | 0x800000ull << 8; /* arg_x = -1, arg_w = -2^23 */
  words[10] = 0xFFFFFFFFFFull;                        /* arg_add = -1 */
  k210_layer_t l;
  k210_layer_decode(words, &l);
  CU_ASSERT_EQUAL(l.arg_x, -1);
  CU_ASSERT_EQUAL(l.arg_w, -(1 << 23));
  CU_ASSERT_EQUAL(l.arg_add, -1);
  words[9] = 0x007FFFFFull << 32;
  words[10] = 0x7FFFFFFFFFull | 0xFFFFFF0000000000ull; /* reserved bits ignored */
  k210_layer_decode(words, &l);
  CU_ASSERT_EQUAL(l.arg_x, (1 << 23) - 1);
  CU_ASSERT_EQUAL(l.arg_add, (INT64_C(1) << 39) - 1);
}

/* The first layer of mnist.kmodel, decoded by hand from the hex words. */
static void test_decode_real_words(void) {
  const uint64_t w[K210_LAYER_WORDS] = {
      0x0000000000000000, 0x00007fac00007fe4, 0x000f000f00000000, 0x0000340d00006c1b,
      0x00000000000f0411, 0x0000000000480001, 0x0000000000000000, 0x00000000a001001c,
      0x000000000041000e, 0x00c40000000000f0, 0x0000000000000000, 0x00000c3f00c30000};
  k210_layer_t l;
  k210_layer_decode(w, &l);
  CU_ASSERT_EQUAL(l.image_src_addr, 0x7fe4);
  CU_ASSERT_EQUAL(l.image_dst_addr, 0x7fac);
  CU_ASSERT_EQUAL(l.i_ch_num, 0);
  CU_ASSERT_EQUAL(l.o_ch_num, 15);
  CU_ASSERT_EQUAL(l.o_ch_num_coef, 15);
  CU_ASSERT_EQUAL(l.i_row_wid, 27);
  CU_ASSERT_EQUAL(l.i_col_high, 27);
  CU_ASSERT_EQUAL(l.o_row_wid, 13);
  CU_ASSERT_EQUAL(l.o_col_high, 13);
  CU_ASSERT_EQUAL(l.kernel_type, K210_KERNEL_3X3);
  CU_ASSERT_EQUAL(l.pool_type, K210_POOL_MAX_2_S2);
  CU_ASSERT_EQUAL(l.load_para, 1);
  CU_ASSERT_EQUAL(l.dma_burst_size, 15);
  CU_ASSERT_EQUAL(l.load_coor, 1);
  CU_ASSERT_EQUAL(l.para_size, 144);
  CU_ASSERT_EQUAL(l.channel_switch_addr, 28);
  CU_ASSERT_EQUAL(l.row_switch_addr, 1);
  CU_ASSERT_EQUAL(l.coef_group, 2);
  CU_ASSERT_EQUAL(l.load_act, 1);
  CU_ASSERT_EQUAL(l.wb_channel_switch_addr, 14);
  CU_ASSERT_EQUAL(l.wb_row_switch_addr, 1);
  CU_ASSERT_EQUAL(l.wb_group, 4);
  CU_ASSERT_EQUAL(l.shr_x, 15);
  CU_ASSERT_EQUAL(l.arg_x, 0xc40000 - (1 << 24));
  CU_ASSERT_EQUAL(l.arg_w, 0);
  CU_ASSERT_EQUAL(l.channel_byte_num, 195);
  CU_ASSERT_EQUAL(l.dma_total_byte, 3135);
  uint64_t again[K210_LAYER_WORDS];
  CU_ASSERT_PTR_NULL(k210_layer_encode(&l, again));
  CU_ASSERT_EQUAL(memcmp(w, again, sizeof(again)), 0);
}

static void test_batchnorm_word(void) {
  k210_bn_t cases[] = {{-(1 << 23), INT32_MIN, 15}, {(1 << 23) - 1, INT32_MAX, 0}, {-1, -1, 7}, {0, 0, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    uint8_t b[K210_BN_BYTES];
    k210_bn_t back;
    CU_ASSERT_TRUE_FATAL(k210_bn_encode(&cases[i], b));
    k210_bn_decode(b, &back);
    CU_ASSERT_EQUAL(back.mul, cases[i].mul);
    CU_ASSERT_EQUAL(back.add, cases[i].add);
    CU_ASSERT_EQUAL(back.shift, cases[i].shift);
  }
  /* mul[23:0], add[55:24], shift[59:56]: mul -1, add 1, shift 3. */
  uint8_t b[K210_BN_BYTES] = {0xFF, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x03};
  k210_bn_t bn;
  k210_bn_decode(b, &bn);
  CU_ASSERT_EQUAL(bn.mul, -1);
  CU_ASSERT_EQUAL(bn.add, 1);
  CU_ASSERT_EQUAL(bn.shift, 3);
  k210_bn_t too_big = {1 << 23, 0, 0}, bad_shift = {0, 0, 16};
  CU_ASSERT_FALSE(k210_bn_encode(&too_big, b));
  CU_ASSERT_FALSE(k210_bn_encode(&bad_shift, b));
}

static void test_activation_table(void) {
  k210_act_table_t t, back;
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    t.seg[i].x_start = i % 2 ? K210_ACT_X_MIN + i : K210_ACT_X_MAX - i;
    t.seg[i].y_mul = i % 3 ? -32768 + i : 32767 - i;
    t.seg[i].shift = (uint8_t)(i * 17);
    t.bias[i] = (uint8_t)(255 - i);
  }
  uint8_t bytes[K210_ACT_TABLE_BYTES];
  CU_ASSERT_TRUE_FATAL(k210_act_encode(&t, bytes));
  k210_act_decode(bytes, &back);
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    CU_ASSERT_EQUAL(back.seg[i].x_start, t.seg[i].x_start);
    CU_ASSERT_EQUAL(back.seg[i].y_mul, t.seg[i].y_mul);
    CU_ASSERT_EQUAL(back.seg[i].shift, t.seg[i].shift);
    CU_ASSERT_EQUAL(back.bias[i], t.bias[i]);
  }
  /* shift[7:0], y_mul[23:8], x_start[59:24]: shift 2, y_mul -2, x_start -3. */
  uint64_t word = 2 | (uint64_t)0xFFFE << 8 | ((uint64_t)-3 & 0xFFFFFFFFFull) << 24;
  for (int i = 0; i < 8; ++i) bytes[i] = (uint8_t)(word >> (8 * i));
  k210_act_decode(bytes, &back);
  CU_ASSERT_EQUAL(back.seg[0].shift, 2);
  CU_ASSERT_EQUAL(back.seg[0].y_mul, -2);
  CU_ASSERT_EQUAL(back.seg[0].x_start, -3);
  t.seg[3].x_start = K210_ACT_X_MAX + 1;
  CU_ASSERT_FALSE(k210_act_encode(&t, bytes));
}

int main(void) {
  static const k210_test_t tests[] = {
      {"every field at its limits round-trips", test_every_field_at_limits},
      {"values outside a field are refused", test_out_of_range_refused},
      {"all fields at once", test_all_fields_at_once},
      {"signed fields are sign-extended", test_sign_extension},
      {"mnist.kmodel layer words decode", test_decode_real_words},
      {"batch-norm word", test_batchnorm_word},
      {"activation table", test_activation_table},
      {NULL, NULL}};
  return k210_run_suite("k210_layer", tests);
}
