/*
 * k210_arith.c and k210_conv.c: the KPU's arithmetic by hand-computed
 * cases (rounding ties, negative values, every activation segment boundary
 * under both published rules, each pool type, 1x1 against 3x3 padding with
 * pad_value, depthwise), and the AVX2 convolution against the scalar
 * reference on random layers.
 */
#include "k210_arith.h"
#include "k210_conv.h"
#include "k210_test.h"

static void test_round_half_even(void) {
  CU_ASSERT_EQUAL(k210_shift_round_even(5, 1), 2);   /* 2.5 -> 2 */
  CU_ASSERT_EQUAL(k210_shift_round_even(7, 1), 4);   /* 3.5 -> 4 */
  CU_ASSERT_EQUAL(k210_shift_round_even(6, 2), 2);   /* 1.5 -> 2 */
  CU_ASSERT_EQUAL(k210_shift_round_even(10, 2), 2);  /* 2.5 -> 2 */
  CU_ASSERT_EQUAL(k210_shift_round_even(11, 2), 3);  /* 2.75 -> 3 */
  CU_ASSERT_EQUAL(k210_shift_round_even(9, 2), 2);   /* 2.25 -> 2 */
  CU_ASSERT_EQUAL(k210_shift_round_even(7, 0), 7);
  /* Negative values, as nncase v0.2 computes them (it steps by the sign). */
  CU_ASSERT_EQUAL(k210_shift_round_even(-6, 2), -2); /* -1.5: floor -2 even */
  CU_ASSERT_EQUAL(k210_shift_round_even(-5, 1), -4); /* -2.5: floor -3 odd, -3 - 1 */
  CU_ASSERT_EQUAL(k210_shift_round_even(-3, 2), -1); /* -0.75: below half: floor */
  CU_ASSERT_EQUAL(k210_shift_round_even(-1, 2), -2); /* -0.25: above half: floor - 1 */
  CU_ASSERT_EQUAL(k210_shift_round_even(INT64_MIN, 63), -1);
  CU_ASSERT_EQUAL(k210_shift_round_even(1000, 200), k210_shift_round_even(1000, 63));
}

static void test_carry_shift(void) {
  CU_ASSERT_EQUAL(k210_shift_carry(5, 1), 3);   /* 2.5 -> 3 */
  CU_ASSERT_EQUAL(k210_shift_carry(4, 1), 2);
  CU_ASSERT_EQUAL(k210_shift_carry(-5, 1), -2); /* -2.5 -> -2 (half up) */
  CU_ASSERT_EQUAL(k210_shift_carry(-6, 2), -1); /* -1.5 -> -1 */
  CU_ASSERT_EQUAL(k210_shift_carry(-7, 2), -2); /* -1.75 -> -2 */
  CU_ASSERT_EQUAL(k210_shift_carry(7, 0), 7);
}

static void test_accumulate_and_batchnorm(void) {
  k210_acc_args_t a = {-3, 5, 7, 1, 2, 3};
  /* 100 + (-30 >> 1) + (100 >> 2) + 7 * 3 = 100 - 15 + 25 + 21 */
  CU_ASSERT_EQUAL(k210_accumulate(&a, 100, 10, 20), 131);
  k210_acc_args_t floor_neg = {-1, 0, 0, 1, 0, 1};
  CU_ASSERT_EQUAL(k210_accumulate(&floor_neg, 0, 3, 0), -2); /* -3 >> 1 floors */
  k210_bn_t bn = {-3, 5, 2};
  CU_ASSERT_EQUAL(k210_batchnorm(&bn, 1000), -745); /* (-3000 >> 2) + 5 */
  k210_bn_t half = {1, 0, 1};
  CU_ASSERT_EQUAL(k210_batchnorm(&half, -7), -4);
  /* Out-of-range programs wrap instead of invoking undefined behaviour. */
  k210_bn_t big = {(1 << 23) - 1, INT32_MAX, 0};
  (void)k210_batchnorm(&big, INT64_MAX);
}

/* Segment i starts at 10i - 50 with y_mul i + 1, shift 1 and bias 10i. */
static void staircase(k210_act_table_t* t) {
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    t->seg[i].x_start = 10 * i - 50;
    t->seg[i].y_mul = i + 1;
    t->seg[i].shift = 1;
    t->bias[i] = (uint8_t)(10 * i);
  }
}

static void test_every_segment_boundary(void) {
  k210_act_table_t t;
  staircase(&t);
  for (int i = 1; i < K210_ACT_SEGMENTS; ++i) {
    int64_t x = t.seg[i].x_start;
    /* v == x_start: v0.2 stays on the segment below (v > x_start fails),
     * v0.1 takes this one (x_start <= v). */
    CU_ASSERT_EQUAL(k210_act_select(&t, x, K210_ACT_RULE_V02), i - 1);
    CU_ASSERT_EQUAL(k210_act_select(&t, x, K210_ACT_RULE_V01), i);
    CU_ASSERT_EQUAL(k210_activate(&t, x, K210_ACT_RULE_V02), 15 * i - 10); /* 10i/2 + 10(i-1) */
    CU_ASSERT_EQUAL(k210_activate(&t, x, K210_ACT_RULE_V01), 10 * i);
    /* One above: both take segment i; (i + 1) / 2 rounds to even or up. */
    CU_ASSERT_EQUAL(k210_act_select(&t, x + 1, K210_ACT_RULE_V02), i);
    CU_ASSERT_EQUAL(k210_act_select(&t, x + 1, K210_ACT_RULE_V01), i);
    int64_t even = (i + 1) / 2 + (((i + 1) % 2) && ((i + 1) / 2) % 2 ? 1 : 0);
    CU_ASSERT_EQUAL(k210_activate(&t, x + 1, K210_ACT_RULE_V02), 10 * i + even);
    CU_ASSERT_EQUAL(k210_activate(&t, x + 1, K210_ACT_RULE_V01), 10 * i + (i + 2) / 2);
  }
  /* Below every segment: segment 0, and the output clamps at 0. */
  CU_ASSERT_EQUAL(k210_act_select(&t, -1000, K210_ACT_RULE_V02), 0);
  CU_ASSERT_EQUAL(k210_activate(&t, -1000, K210_ACT_RULE_V02), 0);
  /* Far above: clamps at 255. */
  CU_ASSERT_EQUAL(k210_activate(&t, 100000, K210_ACT_RULE_V01), 255);
}

static void test_negative_slope_and_unsorted(void) {
  k210_act_table_t t;
  memset(&t, 0, sizeof(t));
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) t.seg[i].x_start = K210_ACT_X_MAX;
  t.seg[0] = (k210_act_segment_t){K210_ACT_X_MIN, 0, 0};
  t.bias[0] = 9;
  t.seg[5] = (k210_act_segment_t){0, -3, 2};
  t.bias[5] = 200;
  t.seg[2] = (k210_act_segment_t){100, 1, 0};
  t.bias[2] = 1;
  /* Not ascending: the highest qualifying index wins, not the nearest start. */
  CU_ASSERT_FALSE(k210_act_ascending(&t));
  CU_ASSERT_EQUAL(k210_act_select(&t, 150, K210_ACT_RULE_V02), 5);
  /* 200 + round_even(-450 / 4 = -112.5): floor -113 odd, nncase steps to -114 */
  CU_ASSERT_EQUAL(k210_activate(&t, 150, K210_ACT_RULE_V02), 86);
  /* 200 + carry(-450 >> 2) = 200 - 112 */
  CU_ASSERT_EQUAL(k210_activate(&t, 150, K210_ACT_RULE_V01), 88);
  CU_ASSERT_EQUAL(k210_activate(&t, -4, K210_ACT_RULE_V02), 9);
}

static void test_ascending_search_matches(void) {
  srand(7);
  for (int trial = 0; trial < 2000; ++trial) {
    k210_act_table_t t;
    int64_t x = K210_ACT_X_MIN + rand() % 3;
    for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
      x += rand() % 4 == 0 ? 0 : rand() % 50; /* duplicates on purpose */
      t.seg[i] = (k210_act_segment_t){x, rand() % 65536 - 32768, (uint8_t)(rand() % 70)};
      t.bias[i] = (uint8_t)rand();
    }
    CU_ASSERT_TRUE(k210_act_ascending(&t));
    int64_t v = t.seg[rand() % 16].x_start + rand() % 5 - 2;
    for (int r = 0; r < 2; ++r)
      CU_ASSERT_EQUAL(k210_act_select_ascending(&t, v, (k210_act_rule_t)r),
                      k210_act_select(&t, v, (k210_act_rule_t)r));
  }
}

static void test_pool_types(void) {
  uint8_t in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = (uint8_t)(i + 1); /* 4x4: 1..16 */
  static const struct {
    int type;
    int n;
    uint8_t want[16];
  } cases[] = {
      {K210_POOL_BYPASS, 16, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
      {K210_POOL_MAX_2_S2, 4, {6, 8, 14, 16}},
      {K210_POOL_MEAN_2_S2, 4, {3, 5, 11, 13}}, /* 3.5, 5.5, 11.5, 13.5 truncate */
      {K210_POOL_MAX_4_S4, 1, {16}},
      {K210_POOL_MEAN_4_S4, 1, {8}},            /* 136 / 16 = 8.5 */
      {K210_POOL_LEFT_TOP_2_S2, 4, {1, 3, 9, 11}},
      {K210_POOL_RIGHT_TOP_2_S2, 4, {2, 4, 10, 12}},
      {K210_POOL_LEFT_TOP_4_S4, 1, {1}},
      /* stride 1: windows past the edge repeat it (mean) or read 0 (max) */
      {K210_POOL_MEAN_2_S1, 16, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 13, 14, 15, 16}},
      {K210_POOL_MAX_2_S1, 16, {6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16, 14, 15, 16, 16}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    memset(out, 0xEE, sizeof(out));
    k210_pool(in, 4, 4, 1, cases[c].type, out);
    CU_ASSERT_EQUAL(memcmp(out, cases[c].want, (size_t)cases[c].n), 0);
    if (memcmp(out, cases[c].want, (size_t)cases[c].n)) fprintf(stderr, "\n  pool type %d differs\n", cases[c].type);
    CU_ASSERT_EQUAL(out[cases[c].n < 16 ? cases[c].n : 15], cases[c].n < 16 ? 0xEE : 16);
  }
  /* Odd sizes lose the last row and column: 5x5 max_2_s2 -> 2x2. */
  uint8_t odd[25];
  for (int i = 0; i < 25; ++i) odd[i] = (uint8_t)i;
  k210_pool(odd, 5, 5, 1, K210_POOL_MAX_2_S2, out);
  CU_ASSERT_EQUAL(out[0], 6);
  CU_ASSERT_EQUAL(out[3], 18);
  CU_ASSERT_EQUAL(k210_pool_window(K210_POOL_MEAN_4_S4), 4);
  CU_ASSERT_EQUAL(k210_pool_stride(K210_POOL_MAX_2_S1), 1);
}

/* Identity activation (v -> clamp(v)) and batch norm (v = acc). */
static void identity(k210_act_table_t* act, k210_bn_t* bn, int channels) {
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    act->seg[i] = (k210_act_segment_t){0, 1, 0};
    act->bias[i] = 0;
  }
  for (int c = 0; c < channels; ++c) bn[c] = (k210_bn_t){1, 0, 0};
}

static void run_both(const k210_conv_geom_t* g, const uint8_t* w, const k210_acc_args_t* a,
                     const uint8_t* in, uint8_t* out) {
  k210_act_table_t act;
  k210_bn_t bn[8];
  identity(&act, bn, 8);
  k210_conv_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  uint8_t other[64];
  CU_ASSERT_TRUE_FATAL(k210_conv_run(&plan, g, w, a, bn, &act, K210_ACT_RULE_V02, 0, in, out));
  CU_ASSERT_TRUE_FATAL(k210_conv_run(&plan, g, w, a, bn, &act, K210_ACT_RULE_V02, 1, in, other));
  CU_ASSERT_EQUAL(memcmp(out, other, (size_t)g->out_ch * g->width * g->height), 0);
  k210_conv_plan_free(&plan);
}

static void test_padding_3x3_vs_1x1(void) {
  const uint8_t in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  uint8_t ones[9], out[9];
  memset(ones, 1, sizeof(ones));
  k210_acc_args_t plain = {0, 0, 0, 0, 0, 1};
  /* 3x3 of ones, pad_value 7: corner 1+2+4+5 + 5 x 7, edge 21 + 3 x 7, centre 45. */
  k210_conv_geom_t g3 = {1, 1, 3, 3, 3, 0, 7};
  run_both(&g3, ones, &plain, in, out);
  CU_ASSERT_EQUAL(out[0], 47);
  CU_ASSERT_EQUAL(out[1], 42);
  CU_ASSERT_EQUAL(out[4], 45);
  CU_ASSERT_EQUAL(out[8], 28 + 35);
  /* Padded taps count in sum_x too: weights 0, arg_x 1 gives the window sums. */
  uint8_t zeros[9] = {0};
  k210_acc_args_t sum_x = {1, 0, 0, 0, 0, 1};
  run_both(&g3, zeros, &sum_x, in, out);
  CU_ASSERT_EQUAL(out[0], 47);
  /* sum_w counts all nine weights whatever the position: arg_w 1, x ignored. */
  k210_acc_args_t sum_w = {0, 1, 0, 0, 0, 1};
  uint8_t w9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  memset(zeros, 0, sizeof(zeros));
  g3.pad_value = 0;
  uint8_t black[9] = {0};
  run_both(&g3, w9, &sum_w, black, out);
  CU_ASSERT_EQUAL(out[0], 45);
  /* 1x1 never reads padding. */
  k210_conv_geom_t g1 = {1, 1, 3, 3, 1, 0, 200};
  uint8_t two = 2;
  run_both(&g1, &two, &plain, in, out);
  for (int i = 0; i < 9; ++i) CU_ASSERT_EQUAL(out[i], 2 * in[i]);
}

static void test_depthwise(void) {
  uint8_t in[18];
  for (int i = 0; i < 9; ++i) in[i] = (uint8_t)(i + 1), in[9 + i] = (uint8_t)(10 + i);
  uint8_t w[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0, 0, 0, 0};
  uint8_t out[18];
  /* g_ic is 1 for depthwise: arg_add 5 adds 5. */
  k210_acc_args_t a = {0, 0, 5, 0, 0, 1};
  k210_conv_geom_t g = {2, 2, 3, 3, 3, 1, 0};
  run_both(&g, w, &a, in, out);
  CU_ASSERT_EQUAL(out[4], 45 + 5);      /* channel 0: window sum */
  CU_ASSERT_EQUAL(out[0], 12 + 5);
  CU_ASSERT_EQUAL(out[9 + 4], 3 * 14 + 5); /* channel 1: 3 x centre */
  CU_ASSERT_EQUAL(out[9 + 0], 3 * 10 + 5);
  /* The same two channels as a normal layer with one output: 5 x 2 added. */
  k210_acc_args_t normal = {0, 0, 5, 0, 0, 2};
  k210_conv_geom_t gn = {2, 1, 3, 3, 3, 0, 0};
  run_both(&gn, w, &normal, in, out);
  CU_ASSERT_EQUAL(out[4], 45 + 3 * 14 + 10);
}

/* Random layers: the AVX2 kernel gives the reference's bytes exactly. */
static void test_simd_matches_reference(void) {
  if (!k210_conv_have_simd()) {
    fprintf(stderr, "\n  no AVX2 on this CPU: only the reference runs\n");
    return;
  }
  srand(11);
  k210_conv_plan_t a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  for (int trial = 0; trial < 40; ++trial) {
    k210_conv_geom_t g;
    g.depthwise = trial % 4 == 3;
    g.ksize = trial % 2 ? 1 : 3;
    g.in_ch = 1 + (uint32_t)(rand() % 37);
    g.out_ch = g.depthwise ? g.in_ch : 1 + (uint32_t)(rand() % 21);
    g.width = 1 + (uint32_t)(rand() % 40);
    g.height = 1 + (uint32_t)(rand() % 9);
    g.pad_value = (uint8_t)rand();
    size_t nin = (size_t)g.in_ch * g.width * g.height, nout = (size_t)g.out_ch * g.width * g.height;
    size_t nw = (size_t)g.out_ch * (g.depthwise ? 1 : g.in_ch) * g.ksize * g.ksize;
    uint8_t *in = malloc(nin), *w = malloc(nw), *o1 = malloc(nout), *o2 = malloc(nout);
    k210_bn_t* bn = malloc(sizeof(k210_bn_t) * g.out_ch);
    for (size_t i = 0; i < nin; ++i) in[i] = (uint8_t)rand();
    for (size_t i = 0; i < nw; ++i) w[i] = (uint8_t)rand();
    for (uint32_t c = 0; c < g.out_ch; ++c) bn[c] = (k210_bn_t){rand() % 20000 - 10000, rand() % 2000 - 1000, (uint8_t)(rand() % 16)};
    k210_act_table_t act;
    int64_t x = -3000000;
    for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
      x += rand() % 400000;
      act.seg[i] = (k210_act_segment_t){trial % 5 == 4 ? -x : x, rand() % 4000 - 1000, (uint8_t)(10 + rand() % 8)};
      act.bias[i] = (uint8_t)rand();
    }
    k210_acc_args_t args = {rand() % 400 - 200, rand() % 400 - 200, rand() % 100000 - 50000,
                            (unsigned)(rand() % 16), (unsigned)(rand() % 16),
                            g.depthwise ? 1 : (int64_t)g.in_ch};
    k210_act_rule_t rule = (k210_act_rule_t)(trial % 2);
    CU_ASSERT_TRUE(k210_conv_run(&a, &g, w, &args, bn, &act, rule, 0, in, o1));
    CU_ASSERT_TRUE(k210_conv_run(&b, &g, w, &args, bn, &act, rule, 1, in, o2));
    CU_ASSERT_EQUAL(memcmp(o1, o2, nout), 0);
    free(in);
    free(w);
    free(o1);
    free(o2);
    free(bn);
  }
  k210_conv_plan_free(&a);
  k210_conv_plan_free(&b);
}

int main(void) {
  static const k210_test_t tests[] = {
      {"round-half-even shift (v0.2), ties and negatives", test_round_half_even},
      {"carry shift (v0.1 / SDK)", test_carry_shift},
      {"accumulator and batch norm", test_accumulate_and_batchnorm},
      {"every activation segment boundary, both rules", test_every_segment_boundary},
      {"negative slope, unsorted table", test_negative_slope_and_unsorted},
      {"ascending search = linear search", test_ascending_search_matches},
      {"the ten pool types", test_pool_types},
      {"3x3 padding with pad_value vs 1x1", test_padding_3x3_vs_1x1},
      {"depthwise", test_depthwise},
      {"AVX2 kernel = scalar reference", test_simd_matches_reference},
      {NULL, NULL}};
  return k210_run_suite("k210_arith", tests);
}
