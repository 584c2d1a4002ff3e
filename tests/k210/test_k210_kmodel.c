/*
 * k210_kmodel.c, k210_kmodel_layers.c, k210_kmodel_write.c, k210_run.c: kmodel
 * v3 files built here with the writer are read back, run on the emulated
 * chip and checked against the arithmetic done directly; then corrupted in
 * every way a file can be (truncated, wrong version, offsets and KPU RAM rows
 * out of range, layer counts that lie), each refused with a message naming
 * the file and the layer, never a crash.
 */
#include <math.h>

#include "k210_bytes.h"
#include "k210_conv.h"
#include "k210_kmodel.h"
#include "k210_kmodel_write.h"
#include "k210_kpu.h"
#include "k210_run.h"
#include "k210_test.h"

/* A conv model: image 2x8x8 u8 -> 3x3 conv (3 channels) + max_2_s2 to main
 * memory at 0 (48 bytes) -> DEQUANTIZE to 48 floats at 64 -> SOFTMAX of 48
 * at 256. Output: the softmax. */
typedef struct conv_model_t {
  uint8_t weights[54];
  uint8_t bn[3 * K210_BN_BYTES];
  uint8_t act[K210_ACT_TABLE_BYTES];
  k210_kw_layer_t layers[3];
  uint32_t out_addr, out_size;
  k210_bn_t bnv[3];
  k210_act_table_t actv;
} conv_model_t;

static void conv_words(uint64_t words[K210_LAYER_WORDS]) {
  k210_layer_t l;
  memset(&l, 0, sizeof(l));
  k210_fmap_t in = k210_fmap_for_shape(200, 8, 8, 2), out = k210_fmap_for_shape(300, 4, 4, 3);
  l.image_src_addr = in.base_row;
  l.image_dst_addr = out.base_row;
  l.i_ch_num = 1;
  l.o_ch_num = 2;
  l.o_ch_num_coef = 2;
  l.i_row_wid = l.i_col_high = 7;
  l.o_row_wid = l.o_col_high = 3;
  l.kernel_type = K210_KERNEL_3X3;
  l.pool_type = K210_POOL_MAX_2_S2;
  l.load_para = 1;
  l.dma_burst_size = 15;
  l.pad_value = 4;
  l.load_coor = 1;
  l.para_size = 54;
  l.channel_switch_addr = in.channel_switch;
  l.row_switch_addr = in.row_switch;
  l.coef_group = in.groups;
  l.load_act = 1;
  l.wb_channel_switch_addr = out.channel_switch;
  l.wb_row_switch_addr = out.row_switch;
  l.wb_group = out.groups;
  l.arg_x = -100;
  l.arg_w = -4;
  l.arg_add = 9 * 4 * 100;
  l.channel_byte_num = 15;
  l.dma_total_byte = 47;
  k210_layer_encode(&l, words);
}

static void put_args(k210_kw_layer_t* l, uint32_t type, const uint32_t* args, uint32_t n) {
  l->type = type;
  l->arg_count = n;
  memcpy(l->args, args, 4 * n);
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint8_t* build_conv_model(conv_model_t* m, size_t* size, const k210_io_t* io) {
  memset(m, 0, sizeof(*m));
  for (int i = 0; i < 54; ++i) m->weights[i] = (uint8_t)(90 + (i * 37) % 21);
  for (int c = 0; c < 3; ++c) {
    m->bnv[c] = (k210_bn_t){5000 - 1000 * c, 40 * c, 8};
    k210_bn_encode(&m->bnv[c], m->bn + 8 * c);
  }
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) m->actv.seg[i] = (k210_act_segment_t){i ? -50 : K210_ACT_X_MIN, i ? 1 : 0, 1};
  for (int i = 1; i < K210_ACT_SEGMENTS; ++i) m->actv.bias[i] = 25;
  k210_act_encode(&m->actv, m->act);
  k210_kw_layer_t* l = m->layers;
  l[0].type = K210_KL_K210_CONV;
  l[0].flags = K210_KLF_MAIN_MEM_OUT;
  l[0].main_out = 0;
  conv_words(l[0].words);
  l[0].weights = m->weights;
  l[0].weight_bytes = 54;
  l[0].bn = m->bn;
  l[0].bn_bytes = sizeof(m->bn);
  l[0].act = m->act;
  const uint32_t dq[6] = {0, 0, 64, 48, fbits(0.05f), fbits(-1.0f)};
  put_args(&l[1], K210_KL_DEQUANTIZE, dq, 6);
  const uint32_t sm[4] = {0, 64, 256, 48};
  put_args(&l[2], K210_KL_SOFTMAX, sm, 4);
  m->out_addr = 256;
  m->out_size = 48 * 4;
  k210_kw_model_t km = {200, 448, 1, &m->out_addr, &m->out_size, 3, l, io, io ? 3 : 0};
  uint8_t* bytes = NULL;
  CU_ASSERT_FATAL(k210_kmodel_write(&km, &bytes, size));
  return bytes;
}

/* A float model: FULLY_CONNECTED 4 -> 3 (relu) at 16 -> SOFTMAX at 32. */
static uint8_t* build_fc_model(size_t* size) {
  static uint32_t fc[6 + 12 + 3];
  const uint32_t head[6] = {0, 0, 16, 4, 3, 1};
  memcpy(fc, head, sizeof(head));
  for (int i = 0; i < 12; ++i) fc[6 + i] = fbits((float)(i % 5) - 1.5f);
  for (int i = 0; i < 3; ++i) fc[18 + i] = fbits(0.25f * (float)i);
  k210_kw_layer_t l[2];
  memset(l, 0, sizeof(l));
  l[0].type = K210_KL_FULLY_CONNECTED;
  /* The writer's 8 argument words are too few for the weights: write the FC
   * body by hand after a placeholder. */
  const uint32_t sm[4] = {0, 16, 32, 3};
  put_args(&l[1], K210_KL_SOFTMAX, sm, 4);
  uint32_t out_addr = 32, out_size = 12;
  l[0].arg_count = 0;
  k210_kw_model_t km = {K210_RAM_ROWS, 44, 1, &out_addr, &out_size, 2, l, NULL, 0};
  uint8_t* shell = NULL;
  size_t shell_size = 0;
  CU_ASSERT_FATAL(k210_kmodel_write(&km, &shell, &shell_size));
  /* header 28 + output 8 + layer headers 16 = 52: splice the FC body in. */
  *size = shell_size + sizeof(fc);
  uint8_t* b = malloc(*size);
  memcpy(b, shell, 52);
  k210_put_u32(b + 36 + 4, sizeof(fc));
  memcpy(b + 52, fc, sizeof(fc));
  memcpy(b + 52 + sizeof(fc), shell + 52, shell_size - 52);
  free(shell);
  return b;
}

static k210_kmodel_t* parse(const uint8_t* b, size_t n, int32_t* st, char* why) {
  return k210_kmodel_parse(b, n, "test.kmodel", st, why, 512);
}

static void test_conv_model_runs(void) {
  conv_model_t cm;
  size_t n;
  uint8_t* b = build_conv_model(&cm, &n, NULL);
  int32_t st;
  char why[512];
  k210_kmodel_t* m = parse(b, n, &st, why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->layer_count, 3);
  CU_ASSERT_EQUAL(m->in_dtype, AXLE_HAL_DTYPE_U8);
  CU_ASSERT_EQUAL(m->io[0].rank, 4);
  CU_ASSERT_EQUAL(m->io[0].shape[1], 2);
  CU_ASSERT_EQUAL(m->io[0].shape[3], 8);
  CU_ASSERT_EQUAL(m->out_dtype[0], AXLE_HAL_DTYPE_F32);
  CU_ASSERT_EQUAL(m->io[1].shape[1], 48);
  CU_ASSERT_EQUAL(m->layers[0].conv.send_data_out, 1); /* main-memory output */
  CU_ASSERT_EQUAL(m->layers[0].conv.int_en, 1);

  uint8_t image[128];
  for (int i = 0; i < 128; ++i) image[i] = (uint8_t)(i * 29 + 3);
  float out[48];
  void* outs[1] = {out};
  k210_chip_t chip;
  CU_ASSERT_FATAL(k210_chip_init(&chip));
  uint64_t cycles = 0;
  st = k210_run(&chip, m, image, outs, K210_ACT_RULE_V02, NULL, &cycles, why, sizeof(why));
  CU_ASSERT_EQUAL_FATAL(st, AXLE_HAL_OK);
  CU_ASSERT_TRUE(cycles > 0);
  CU_ASSERT_EQUAL(chip.interrupts, 1);

  /* The same arithmetic without the file, the runner or the registers. */
  k210_conv_geom_t g = {2, 3, 8, 8, 3, 0, 4};
  k210_acc_args_t a = {-100, -4, 3600, 0, 0, 2};
  uint8_t pre[3 * 64], pooled[48];
  k210_conv_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  k210_conv_run(&plan, &g, cm.weights, &a, cm.bnv, &cm.actv, K210_ACT_RULE_V02, 0, image, pre);
  k210_conv_plan_free(&plan);
  k210_pool(pre, 8, 8, 3, K210_POOL_MAX_2_S2, pooled);
  float want[48], sum = 0, max = -1e30f;
  for (int i = 0; i < 48; ++i) max = fmaxf(max, (float)pooled[i] * 0.05f - 1.0f);
  for (int i = 0; i < 48; ++i) sum += (want[i] = expf((float)pooled[i] * 0.05f - 1.0f - max));
  for (int i = 0; i < 48; ++i) CU_ASSERT_DOUBLE_EQUAL(out[i], want[i] / sum, 1e-6);
  k210_chip_free(&chip);
  k210_kmodel_free(m);
  free(b);
}

static void test_fc_model_runs(void) {
  size_t n;
  uint8_t* b = build_fc_model(&n);
  int32_t st;
  char why[512];
  k210_kmodel_t* m = parse(b, n, &st, why);
  if (!m) fprintf(stderr, "\n  %s\n", why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->in_dtype, AXLE_HAL_DTYPE_F32);
  CU_ASSERT_EQUAL(m->io[0].shape[1], 4);
  float x[4] = {1, -2, 0.5f, 3}, y[3];
  void* outs[1] = {y};
  k210_chip_t chip;
  k210_chip_init(&chip);
  uint64_t cycles;
  CU_ASSERT_EQUAL(k210_run(&chip, m, x, outs, K210_ACT_RULE_V02, NULL, &cycles, why, sizeof(why)), AXLE_HAL_OK);
  float h[3], sum = 0;
  for (int o = 0; o < 3; ++o) {
    float s = 0;
    for (int i = 0; i < 4; ++i) s += x[i] * ((float)((o * 4 + i) % 5) - 1.5f);
    s += 0.25f * (float)o;
    h[o] = s > 0 ? s : 0;
  }
  float mx = fmaxf(h[0], fmaxf(h[1], h[2]));
  for (int o = 0; o < 3; ++o) sum += expf(h[o] - mx);
  for (int o = 0; o < 3; ++o) CU_ASSERT_DOUBLE_EQUAL(y[o], expf(h[o] - mx) / sum, 1e-6);
  k210_chip_free(&chip);
  k210_kmodel_free(m);
  free(b);
}

static void test_trailer_round_trip(void) {
  k210_io_t io[2];
  memset(io, 0, sizeof(io));
  snprintf(io[0].name, sizeof(io[0].name), "image");
  io[0].dtype = AXLE_HAL_DTYPE_F32;
  io[0].rank = 4;
  io[0].shape[0] = 1, io[0].shape[1] = 2, io[0].shape[2] = 8, io[0].shape[3] = 8;
  io[0].quantized = 1;
  io[0].scale = 0.5f;
  io[0].zero_point = 7;
  io[0].slot = 1;
  io[0].offset = 64;
  snprintf(io[1].name, sizeof(io[1].name), "probs");
  io[1].dtype = AXLE_HAL_DTYPE_F32;
  io[1].rank = 2;
  io[1].shape[0] = 1, io[1].shape[1] = 48;
  io[1].slot = 2;
  conv_model_t cm;
  size_t n;
  uint8_t* b = build_conv_model(&cm, &n, io);
  int32_t st;
  char why[512];
  k210_kmodel_t* m = parse(b, n, &st, why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->slot_count, 3);
  CU_ASSERT_STRING_EQUAL(m->io[0].name, "image");
  CU_ASSERT_EQUAL(m->io[0].quantized, 1);
  CU_ASSERT_EQUAL(m->io[0].zero_point, 7);
  CU_ASSERT_EQUAL(m->io[0].offset, 64);
  CU_ASSERT_STRING_EQUAL(m->io[1].name, "probs");
  k210_kmodel_free(m);
  /* A trailer that disagrees with the model is refused. */
  io[1].shape[1] = 47;
  free(b);
  b = build_conv_model(&cm, &n, io);
  CU_ASSERT_PTR_NULL(parse(b, n, &st, why));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "trailer"));
  free(b);
}

/* Every prefix of a file is refused with a message, never read past. */
static void check_truncations(const uint8_t* b, size_t n) {
  for (size_t cut = 0; cut < n; ++cut) {
    uint8_t* copy = malloc(cut ? cut : 1);
    memcpy(copy, b, cut);
    int32_t st = 0;
    char why[512] = "";
    k210_kmodel_t* m = parse(copy, cut, &st, why);
    CU_ASSERT_PTR_NULL(m);
    if (m) {
      fprintf(stderr, "\n  a %zu-byte prefix of %zu loaded\n", cut, n);
      k210_kmodel_free(m);
    }
    CU_ASSERT_TRUE(strncmp(why, "test.kmodel: ", 13) == 0);
    free(copy);
  }
}

static void test_truncations(void) {
  conv_model_t cm;
  size_t n;
  uint8_t* b = build_conv_model(&cm, &n, NULL);
  check_truncations(b, n);
  free(b);
  b = build_fc_model(&n);
  check_truncations(b, n);
  free(b);
}

/* Mutates a copy of the conv model, expects refusal with `says` in the
 * message (and the status when given). */
static void refused(const uint8_t* b, size_t n, size_t at, uint32_t value, const char* says, int32_t status) {
  uint8_t* copy = malloc(n);
  memcpy(copy, b, n);
  k210_put_u32(copy + at, value);
  int32_t st = 0;
  char why[512] = "";
  k210_kmodel_t* m = parse(copy, n, &st, why);
  CU_ASSERT_PTR_NULL(m);
  k210_kmodel_free(m);
  CU_ASSERT_TRUE(strstr(why, says) != NULL);
  if (!strstr(why, says)) fprintf(stderr, "\n  offset %zu = %u: wanted '%s', got '%s'\n", at, value, says, why);
  if (status) CU_ASSERT_EQUAL(st, status);
  free(copy);
}

static void test_corruptions(void) {
  conv_model_t cm;
  size_t n;
  uint8_t* b = build_conv_model(&cm, &n, NULL);
  /* header: version, flags, arch, layers, max_start, main_mem, outputs;
   * output {256, 192} at 28; layer headers at 36; conv body at 60. */
  refused(b, n, 0, 4, "version 4", AXLE_HAL_UNSUPPORTED);
  refused(b, n, 0, 2, "version 2", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 0, 0x4C444D4Bu, "KMDL", AXLE_HAL_UNSUPPORTED);
  refused(b, n, 4, 0, "16-bit", AXLE_HAL_UNSUPPORTED);
  refused(b, n, 8, 1, "arch", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 12, 4, "layer count", AXLE_HAL_INVALID_MODEL);  /* claims one more */
  refused(b, n, 12, 2, "layer count", AXLE_HAL_INVALID_MODEL);  /* claims one fewer */
  refused(b, n, 12, 100000, "tables alone", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 24, 1000000, "tables alone", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 20, 100, "outside main memory", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 16, K210_RAM_ROWS + 1, "KPU RAM start row", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 28, 300, "output 0", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 28, 56, "written by no layer", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 36, 77, "layer 0: unknown layer type 77", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 36, K210_KL_MAX_POOL2D, "layer 0: MAX_POOL2D is not supported", AXLE_HAL_UNSUPPORTED);
  refused(b, n, 44 + 4, 10, "body size is wrong", AXLE_HAL_INVALID_MODEL);
  refused(b, n, 40, 12, "body size is wrong", AXLE_HAL_INVALID_MODEL);
  uint32_t conv_at = 60;
  refused(b, n, conv_at + 4, 440, "main-memory output", AXLE_HAL_INVALID_MODEL);
  refused(b, n, conv_at + 8, (uint32_t)n - 8, "layer words at file offset", AXLE_HAL_INVALID_MODEL);
  refused(b, n, conv_at + 12, ((uint32_t)n + 127) / 128 * 128, "run past the end", AXLE_HAL_INVALID_MODEL);
  refused(b, n, conv_at + 12, 8, "aligned", AXLE_HAL_INVALID_MODEL);
  refused(b, n, conv_at + 20, (uint32_t)(n + 256) & ~255u, "run past the end", AXLE_HAL_INVALID_MODEL);
  /* The layer words themselves: KPU RAM rows out of range, bad fields. */
  uint32_t words = k210_get_u32(b + conv_at + 8);
  refused(b, n, words + 8 + 4, K210_RAM_ROWS - 2, "layer 0 (K210_CONV): output", AXLE_HAL_INVALID_MODEL);
  refused(b, n, words + 8, K210_RAM_ROWS - 3, "layer 0 (K210_CONV): input", AXLE_HAL_INVALID_MODEL);
  refused(b, n, words + 32, 0x0f04A1, "pool_type", AXLE_HAL_INVALID_MODEL);
  refused(b, n, words + 88, 0x00100000, "DMA sizes", AXLE_HAL_INVALID_MODEL);
  /* Bodies of other layers pointing outside main memory. */
  uint32_t dq_at = conv_at + k210_get_u32(b + 40);
  refused(b, n, dq_at + 8, 400, "layer 1 (DEQUANTIZE): output", AXLE_HAL_INVALID_MODEL);
  refused(b, n, dq_at + 12, 1u << 30, "layer 1 (DEQUANTIZE)", AXLE_HAL_INVALID_MODEL);
  /* Trailing bytes mean the layer count is wrong. */
  uint8_t* longer = calloc(1, n + 16);
  memcpy(longer, b, n);
  int32_t st;
  char why[512];
  CU_ASSERT_PTR_NULL(parse(longer, n + 16, &st, why));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "layer count"));
  free(longer);
  free(b);
}

/* Random single-byte damage never crashes and, when refused, explains. */
static void test_mutations(void) {
  conv_model_t cm;
  size_t n;
  uint8_t* b = build_conv_model(&cm, &n, NULL);
  uint8_t* copy = malloc(n);
  k210_chip_t chip;
  k210_chip_init(&chip);
  srand(3);
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    memcpy(copy, b, n);
    copy[(size_t)rand() % n] ^= (uint8_t)(1 + rand() % 255);
    int32_t st;
    char why[512] = "";
    k210_kmodel_t* m = parse(copy, n, &st, why);
    if (!m) {
      CU_ASSERT_TRUE(why[0] != '\0');
      continue;
    }
    ++loaded;
    uint8_t image[128] = {0};
    float out[48];
    void* outs[1] = {out};
    uint64_t cycles;
    /* Whatever loads runs to the end on the emulator without faults. */
    CU_ASSERT_EQUAL(k210_run(&chip, m, image, outs, K210_ACT_RULE_V02, NULL, &cycles, why, sizeof(why)), AXLE_HAL_OK);
    k210_kmodel_free(m);
  }
  CU_ASSERT_TRUE(loaded > 0);
  k210_chip_free(&chip);
  free(copy);
  free(b);
}

static void test_recognise(void) {
  uint8_t v3[12] = {3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  uint8_t kmdl[4] = {'K', 'M', 'D', 'L'};
  uint8_t onnx[12] = {0x08, 0x07, 0x12};
  CU_ASSERT_TRUE(k210_kmodel_recognise(v3, sizeof(v3), "x.bin"));
  CU_ASSERT_TRUE(k210_kmodel_recognise(kmdl, sizeof(kmdl), NULL));
  CU_ASSERT_TRUE(k210_kmodel_recognise(onnx, sizeof(onnx), "m.kmodel"));
  CU_ASSERT_FALSE(k210_kmodel_recognise(onnx, sizeof(onnx), "m.onnx"));
  CU_ASSERT_FALSE(k210_kmodel_recognise(NULL, 0, NULL));
}

int main(void) {
  static const k210_test_t tests[] = {
      {"conv model: parse, run, compare", test_conv_model_runs},
      {"float model: FULLY_CONNECTED first", test_fc_model_runs},
      {"Axle trailer round trip", test_trailer_round_trip},
      {"every truncation refused", test_truncations},
      {"corruptions refused with file and layer named", test_corruptions},
      {"random byte damage", test_mutations},
      {"recognising kmodels", test_recognise},
      {NULL, NULL}};
  return k210_run_suite("k210_kmodel", tests);
}
