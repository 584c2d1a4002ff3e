/*
 * k210_ops.c, k210_quant.c, k210_compile.c through the plugin's HAL table:
 * graphs built here (with the per-tensor quantization calibration would put
 * on them) are checked, compiled to kmodels, run on the emulated KPU and
 * compared with the float computation; nodes the KPU cannot run are declined
 * with a precise reason; programs that outgrow KPU RAM fail to compile.
 *
 * Usage: test_k210_compile PLUGIN.so
 */
#include <math.h>

#include "k210_plugin_test.h"

static k210_plugin_t g_plugin;

/* ------------------------------------------------------------------------ */
/* A small graph builder.                                                    */
/* ------------------------------------------------------------------------ */

#define MAX_T 16
#define MAX_N 8

typedef struct gb_t {
  axle_hal_tensor_t t[MAX_T];
  axle_hal_node_t n[MAX_N];
  axle_hal_attr_t attrs[MAX_N][6];
  int64_t ints[MAX_N][6][4];
  int32_t ins[MAX_N][5], outs[MAX_N][1];
  float scale[MAX_T];
  int32_t zp[MAX_T];
  float* data[MAX_T];      /* float values: constants, or what the reference computed */
  uint64_t arena_at[MAX_T]; /* where compile() put intermediates */
  uint64_t arena_bytes;
  axle_hal_graph_t g;
} gb_t;

static int gb_tensor(gb_t* b, const char* name, int64_t n, int64_t c, int64_t h, int64_t w, int rank) {
  int i = (int)b->g.tensor_count++;
  axle_hal_tensor_t* t = &b->t[i];
  t->name = name;
  t->dtype = AXLE_HAL_DTYPE_F32;
  t->rank = (uint32_t)rank;
  int64_t dims[4] = {n, c, h, w};
  for (int d = 0; d < rank; ++d) t->shape[d] = dims[d];
  t->size_bytes = 4 * (uint64_t)axle_hal_tensor_elements(t);
  b->data[i] = calloc((size_t)axle_hal_tensor_elements(t), sizeof(float));
  return i;
}

static int gb_const(gb_t* b, const char* name, int64_t n, int64_t c, int64_t h, int64_t w, int rank,
                    float (*fill)(int)) {
  int i = gb_tensor(b, name, n, c, h, w, rank);
  for (int64_t k = 0; k < axle_hal_tensor_elements(&b->t[i]); ++k) b->data[i][k] = fill((int)k);
  b->t[i].flags = AXLE_HAL_TENSOR_CONSTANT;
  b->t[i].data = b->data[i];
  return i;
}

static axle_hal_node_t* gb_node(gb_t* b, const char* op, const char* name, int in0, int in1, int in2, int out) {
  int i = (int)b->g.node_count++;
  axle_hal_node_t* n = &b->n[i];
  n->name = name;
  n->op_type = op;
  n->domain = "";
  b->ins[i][0] = in0, b->ins[i][1] = in1, b->ins[i][2] = in2;
  n->input_count = in2 >= 0 ? 3 : in1 >= 0 ? 2 : 1;
  n->inputs = b->ins[i];
  b->outs[i][0] = out;
  n->output_count = 1;
  n->outputs = b->outs[i];
  n->attrs = b->attrs[i];
  return n;
}

static void gb_ints(gb_t* b, axle_hal_node_t* n, const char* name, int count, int64_t a, int64_t c, int64_t d, int64_t e) {
  int i = (int)(n - b->n), k = (int)n->attr_count++;
  int64_t v[4] = {a, c, d, e};
  memcpy(b->ints[i][k], v, sizeof(v));
  b->attrs[i][k] = (axle_hal_attr_t){name, AXLE_HAL_ATTR_INTS, (uint32_t)count, 0, 0, NULL, b->ints[i][k], NULL, NULL, -1};
}

static void gb_int(gb_t* b, axle_hal_node_t* n, const char* name, int64_t v) {
  b->attrs[n - b->n][n->attr_count++] = (axle_hal_attr_t){name, AXLE_HAL_ATTR_INT, 0, v, 0, NULL, NULL, NULL, NULL, -1};
}

static void gb_float(gb_t* b, axle_hal_node_t* n, const char* name, float v) {
  b->attrs[n - b->n][n->attr_count++] = (axle_hal_attr_t){name, AXLE_HAL_ATTR_FLOAT, 0, 0, v, NULL, NULL, NULL, NULL, -1};
}

static void gb_finish(gb_t* b) {
  b->g.struct_size = sizeof(b->g);
  b->g.opset = 13;
  b->g.tensors = b->t;
  b->g.nodes = b->n;
}

/* What calibration records: asymmetric u8 over [min(lo, 0), max(hi, 0)]. */
static void gb_calibrate(gb_t* b, int t) {
  float lo = 0, hi = 0;
  for (int64_t k = 0; k < axle_hal_tensor_elements(&b->t[t]); ++k) {
    lo = fminf(lo, b->data[t][k]);
    hi = fmaxf(hi, b->data[t][k]);
  }
  b->scale[t] = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  long z = lroundf(-lo / b->scale[t]);
  b->zp[t] = (int32_t)(z < 0 ? 0 : z > 255 ? 255 : z);
  b->t[t].quant = (axle_hal_quant_t){1, 0, &b->scale[t], &b->zp[t]};
}

static void gb_free(gb_t* b) {
  for (uint32_t i = 0; i < b->g.tensor_count; ++i) free(b->data[i]);
}

/* ------------------------------------------------------------------------ */
/* Float reference.                                                          */
/* ------------------------------------------------------------------------ */

static void ref_conv(const gb_t* b, int x, int w, int bias, int y, int stride, int pad, int group) {
  const int64_t *xs = b->t[x].shape, *ws = b->t[w].shape, *ys = b->t[y].shape;
  int64_t cin_g = ws[1], cout_g = ws[0] / group;
  for (int64_t oc = 0; oc < ys[1]; ++oc)
    for (int64_t oy = 0; oy < ys[2]; ++oy)
      for (int64_t ox = 0; ox < ys[3]; ++ox) {
        double s = bias >= 0 ? b->data[bias][oc] : 0;
        int64_t g = oc / cout_g;
        for (int64_t ic = 0; ic < cin_g; ++ic)
          for (int64_t ky = 0; ky < ws[2]; ++ky)
            for (int64_t kx = 0; kx < ws[3]; ++kx) {
              int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
              s += (double)b->data[x][((g * cin_g + ic) * xs[2] + iy) * xs[3] + ix] *
                   b->data[w][((oc * cin_g + ic) * ws[2] + ky) * ws[3] + kx];
            }
        b->data[y][(oc * ys[2] + oy) * ys[3] + ox] = (float)s;
      }
}

static void ref_map(const gb_t* b, int x, int y, float (*f)(float)) {
  for (int64_t k = 0; k < axle_hal_tensor_elements(&b->t[x]); ++k) b->data[y][k] = f(b->data[x][k]);
}

static void ref_pool(const gb_t* b, int x, int y, int k, int max) {
  const int64_t *xs = b->t[x].shape, *ys = b->t[y].shape;
  for (int64_t c = 0; c < ys[1]; ++c)
    for (int64_t oy = 0; oy < ys[2]; ++oy)
      for (int64_t ox = 0; ox < ys[3]; ++ox) {
        float acc = max ? -INFINITY : 0;
        for (int ky = 0; ky < k; ++ky)
          for (int kx = 0; kx < k; ++kx) {
            float v = b->data[x][(c * xs[2] + oy * k + ky) * xs[3] + ox * k + kx];
            acc = max ? fmaxf(acc, v) : acc + v / (float)(k * k);
          }
        b->data[y][(c * ys[2] + oy) * ys[3] + ox] = acc;
      }
}

static float relu(float v) { return v > 0 ? v : 0; }
static float relu6(float v) { return v < 0 ? 0 : v > 6 ? 6 : v; }
static float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
static float wave(int k) { return sinf((float)k * 0.37f) * 0.5f; }
static float small(int k) { return cosf((float)k * 1.3f) * 0.2f; }
static float positive(int k) { return 0.5f + 0.1f * (float)(k % 7); }
static float image(int k) { return 0.5f + 0.5f * sinf((float)k * 0.11f); }

/* ------------------------------------------------------------------------ */
/* Compile and run.                                                          */
/* ------------------------------------------------------------------------ */

/* Compiles every node of b as one subgraph: input tensor `in` in slot 1,
 * output `out` in slot 2, intermediates in the arena (slot 0). */
static int32_t compile_with(gb_t* b, int in, int out, uint32_t flags, axle_hal_executable_t** exe) {
  uint32_t nodes[MAX_N];
  axle_hal_tensor_location_t locs[MAX_T];
  uint32_t nl = 0;
  uint64_t arena = 0;
  for (uint32_t i = 0; i < b->g.node_count; ++i) nodes[i] = i;
  for (uint32_t t = 0; t < b->g.tensor_count; ++t) {
    if (b->t[t].flags & AXLE_HAL_TENSOR_CONSTANT) continue;
    locs[nl] = (axle_hal_tensor_location_t){(int32_t)t, t == (uint32_t)in ? 1u : t == (uint32_t)out ? 2u : 0u, 0};
    if (locs[nl].slot == 0) {
      locs[nl].offset = b->arena_at[t] = arena;
      arena += b->t[t].size_bytes;
    }
    ++nl;
  }
  b->arena_bytes = arena;
  b->t[in].flags |= AXLE_HAL_TENSOR_GRAPH_INPUT;
  b->t[out].flags |= AXLE_HAL_TENSOR_GRAPH_OUTPUT;
  axle_hal_subgraph_t sg = {sizeof(sg), &b->g, b->g.node_count, nodes, nl, locs, 3};
  axle_hal_compile_options_t opt = {sizeof(opt), 0, flags};
  cts_message_clear();
  return g_plugin.t->compile(g_plugin.dev, &sg, &opt, exe);
}

static int32_t compile(gb_t* b, int in, int out, axle_hal_executable_t** exe) {
  return compile_with(b, in, out, 0, exe);
}

/* Runs exe on b's input values; returns the largest error against the float
 * reference in output LSBs, and the mean in *mean. */
static double run_and_compare(gb_t* b, axle_hal_executable_t* exe, int in, int out, double* mean) {
  size_t n = (size_t)axle_hal_tensor_elements(&b->t[out]);
  float* y = calloc(n, sizeof(float));
  uint8_t arena[64];
  void* slots[3] = {arena, b->data[in], y};
  cts_token_t tok;
  cts_token_init(&tok);
  int32_t st = k210_plugin_run(&g_plugin, exe, slots, 3, NULL, 0, NULL, &tok);
  cts_token_destroy(&tok);
  CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
  double worst = 0, sum = 0;
  for (size_t k = 0; k < n; ++k) {
    double e = fabs(y[k] - b->data[out][k]) / b->scale[out];
    worst = e > worst ? e : worst;
    sum += e;
  }
  *mean = sum / (double)n;
  free(y);
  return worst;
}

/* ------------------------------------------------------------------------ */
/* Tests.                                                                    */
/* ------------------------------------------------------------------------ */

/* Conv 3x3 8->16 + BatchNormalization + Relu + MaxPool 2x2, fused. */
static void test_fused_layer(void) {
  gb_t* b = calloc(1, sizeof(*b));
  int x = gb_tensor(b, "x", 1, 8, 16, 16, 4);
  for (int k = 0; k < 8 * 256; ++k) b->data[x][k] = image(k);
  int w = gb_const(b, "w", 16, 8, 3, 3, 4, small), bias = gb_const(b, "b", 16, 1, 1, 1, 1, small);
  int sc = gb_const(b, "scale", 16, 1, 1, 1, 1, positive), bb = gb_const(b, "bnb", 16, 1, 1, 1, 1, wave);
  int mean = gb_const(b, "mean", 16, 1, 1, 1, 1, small), var = gb_const(b, "var", 16, 1, 1, 1, 1, positive);
  int c = gb_tensor(b, "c", 1, 16, 16, 16, 4), bn = gb_tensor(b, "bn", 1, 16, 16, 16, 4);
  int r = gb_tensor(b, "r", 1, 16, 16, 16, 4), p = gb_tensor(b, "p", 1, 16, 8, 8, 4);
  axle_hal_node_t* conv = gb_node(b, "Conv", "conv", x, w, bias, c);
  gb_ints(b, conv, "pads", 4, 1, 1, 1, 1);
  axle_hal_node_t* bnn = gb_node(b, "BatchNormalization", "bn", c, sc, bb, bn);
  bnn->input_count = 5;
  b->ins[1][3] = mean;
  b->ins[1][4] = var;
  gb_node(b, "Relu", "relu", bn, -1, -1, r);
  axle_hal_node_t* pool = gb_node(b, "MaxPool", "pool", r, -1, -1, p);
  gb_ints(b, pool, "kernel_shape", 2, 2, 2, 0, 0);
  gb_ints(b, pool, "strides", 2, 2, 2, 0, 0);
  gb_finish(b);
  ref_conv(b, x, w, bias, c, 1, 1, 1);
  for (int ch = 0; ch < 16; ++ch)
    for (int k = 0; k < 256; ++k) {
      float a = b->data[sc][ch] / sqrtf(b->data[var][ch] + 1e-5f);
      b->data[bn][ch * 256 + k] = (b->data[c][ch * 256 + k] - b->data[mean][ch]) * a + b->data[bb][ch];
    }
  ref_map(b, bn, r, relu);
  ref_pool(b, r, p, 2, 1);
  for (int t = 0; t < (int)b->g.tensor_count; ++t)
    if (!(b->t[t].flags & AXLE_HAL_TENSOR_CONSTANT)) gb_calibrate(b, t);
  char reason[256];
  for (uint32_t n = 0; n < b->g.node_count; ++n)
    CU_ASSERT_EQUAL(g_plugin.t->node_supported(g_plugin.dev, &b->g, n, reason, sizeof(reason)), AXLE_HAL_OK);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(compile(b, x, p, &exe), AXLE_HAL_OK);
  double avg, worst = run_and_compare(b, exe, x, p, &avg);
  fprintf(stderr, "\n  conv+bn+relu+maxpool: max error %.2f LSB, mean %.3f LSB\n", worst, avg);
  CU_ASSERT_TRUE(worst <= 3.0);
  CU_ASSERT_TRUE(avg <= 0.6);

  /* The program is a kmodel: serialized, loaded back, it runs the same. */
  void* data = NULL;
  size_t size = 0;
  CU_ASSERT_EQUAL_FATAL(g_plugin.t->executable_serialize(exe, &data, &size), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(((uint8_t*)data)[0], 3); /* version 3 */
  axle_hal_executable_t* again = NULL;
  CU_ASSERT_EQUAL_FATAL(g_plugin.t->executable_load(g_plugin.dev, data, size, &again), AXLE_HAL_OK);
  double avg2, worst2 = run_and_compare(b, again, x, p, &avg2);
  CU_ASSERT_DOUBLE_EQUAL(worst2, worst, 1e-9);
  g_plugin.t->executable_release(again);
  /* As a user's file it binds natively and describes the float tensors. */
  CU_ASSERT_EQUAL_FATAL(g_plugin.t->artifact_load(g_plugin.dev, "saved.kmodel", data, size, &again), AXLE_HAL_OK);
  axle_hal_native_info_t info = {sizeof(info), 0, 0, NULL, 0};
  CU_ASSERT_EQUAL(g_plugin.t->executable_describe(again, &info), AXLE_HAL_OK);
  CU_ASSERT_STRING_EQUAL(info.io[0].name, "x");
  CU_ASSERT_EQUAL(info.io[0].dtype, AXLE_HAL_DTYPE_F32);
  CU_ASSERT_EQUAL(info.io[0].quant.count, 1);
  CU_ASSERT_STRING_EQUAL(info.io[1].name, "p");
  CU_ASSERT_EQUAL(info.io[1].shape[2], 8);
  g_plugin.t->executable_release(again);
  cts_host()->free(data);
  g_plugin.t->executable_release(exe);
  gb_free(b);
  free(b);
}

/* Calibration compiles with KEEP_INTERMEDIATES: then nothing fuses and the
 * conv's output is written to its arena place too. */
static void test_keep_intermediates(void) {
  gb_t* b = calloc(1, sizeof(*b));
  int x = gb_tensor(b, "x", 1, 3, 8, 8, 4);
  for (int k = 0; k < 3 * 64; ++k) b->data[x][k] = image(k);
  int w = gb_const(b, "w", 4, 3, 3, 3, 4, wave);
  int c = gb_tensor(b, "c", 1, 4, 8, 8, 4), y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  axle_hal_node_t* conv = gb_node(b, "Conv", "conv", x, w, -1, c);
  gb_ints(b, conv, "pads", 4, 1, 1, 1, 1);
  gb_node(b, "Relu", "relu", c, -1, -1, y);
  gb_finish(b);
  ref_conv(b, x, w, -1, c, 1, 1, 1);
  ref_map(b, c, y, relu);
  for (int t = 0; t < (int)b->g.tensor_count; ++t)
    if (!(b->t[t].flags & AXLE_HAL_TENSOR_CONSTANT)) gb_calibrate(b, t);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(compile_with(b, x, y, AXLE_HAL_COMPILE_KEEP_INTERMEDIATES, &exe), AXLE_HAL_OK);
  float* arena = calloc(1, b->arena_bytes);
  float out[4 * 64];
  void* slots[3] = {arena, b->data[x], out};
  cts_token_t tok;
  cts_token_init(&tok);
  CU_ASSERT_EQUAL(k210_plugin_run(&g_plugin, exe, slots, 3, NULL, 0, NULL, &tok), AXLE_HAL_OK);
  cts_token_destroy(&tok);
  double worst = 0;
  const float* kept = arena + b->arena_at[c] / sizeof(float);
  for (int k = 0; k < 4 * 64; ++k) {
    double e = fabs(kept[k] - b->data[c][k]) / b->scale[c];
    worst = e > worst ? e : worst;
  }
  fprintf(stderr, "\n  kept intermediate 'c': max error %.2f LSB\n", worst);
  CU_ASSERT_TRUE(worst <= 2.0);
  free(arena);
  g_plugin.t->executable_release(exe);
  gb_free(b);
  free(b);
}

/* Single-node layers: depthwise + Clip(0, 6), a stride-2 conv, Sigmoid and
 * AveragePool alone. */
static void check_single(const char* label, gb_t* b, int x, int y, double max_lsb) {
  for (int t = 0; t < (int)b->g.tensor_count; ++t)
    if (!(b->t[t].flags & AXLE_HAL_TENSOR_CONSTANT)) gb_calibrate(b, t);
  axle_hal_executable_t* exe = NULL;
  int32_t st = compile(b, x, y, &exe);
  if (st != AXLE_HAL_OK) fprintf(stderr, "\n  %s: %s\n", label, cts_message());
  CU_ASSERT_EQUAL_FATAL(st, AXLE_HAL_OK);
  double avg, worst = run_and_compare(b, exe, x, y, &avg);
  fprintf(stderr, "\n  %s: max error %.2f LSB, mean %.3f LSB", label, worst, avg);
  CU_ASSERT_TRUE(worst <= max_lsb);
  g_plugin.t->executable_release(exe);
}

static void test_single_layers(void) {
  gb_t* b = calloc(1, sizeof(*b));
  int x = gb_tensor(b, "x", 1, 6, 12, 12, 4);
  for (int k = 0; k < 6 * 144; ++k) b->data[x][k] = 3 * wave(k) + 1;
  int w = gb_const(b, "w", 6, 1, 3, 3, 4, wave), c = gb_tensor(b, "c", 1, 6, 12, 12, 4);
  int y = gb_tensor(b, "y", 1, 6, 12, 12, 4);
  axle_hal_node_t* n = gb_node(b, "Conv", "dw", x, w, -1, c);
  gb_int(b, n, "group", 6);
  gb_ints(b, n, "pads", 4, 1, 1, 1, 1);
  n = gb_node(b, "Clip", "relu6", c, -1, -1, y);
  gb_float(b, n, "min", 0);
  gb_float(b, n, "max", 6);
  b->g.opset = 6;
  gb_finish(b);
  b->g.opset = 6;
  ref_conv(b, x, w, -1, c, 1, 1, 6);
  ref_map(b, c, y, relu6);
  check_single("depthwise 3x3 + Clip(0,6)", b, x, y, 3.0);
  gb_free(b);

  memset(b, 0, sizeof(*b));
  x = gb_tensor(b, "x", 1, 4, 16, 16, 4);
  for (int k = 0; k < 4 * 256; ++k) b->data[x][k] = image(k);
  w = gb_const(b, "w", 8, 4, 3, 3, 4, small);
  y = gb_tensor(b, "y", 1, 8, 8, 8, 4);
  n = gb_node(b, "Conv", "s2", x, w, -1, y);
  gb_ints(b, n, "pads", 4, 1, 1, 1, 1);
  gb_ints(b, n, "strides", 2, 2, 2, 0, 0);
  gb_finish(b);
  ref_conv(b, x, w, -1, y, 2, 1, 1);
  check_single("3x3 stride 2 (left-top pick)", b, x, y, 3.0);
  gb_free(b);

  memset(b, 0, sizeof(*b));
  x = gb_tensor(b, "x", 1, 3, 8, 40, 4);
  for (int k = 0; k < 3 * 320; ++k) b->data[x][k] = 8 * wave(k);
  y = gb_tensor(b, "y", 1, 3, 8, 40, 4);
  gb_node(b, "Sigmoid", "sig", x, -1, -1, y);
  gb_finish(b);
  /* Inputs the u8 grid holds exactly, so what remains is the table's fit
   * plus the output's rounding. */
  gb_calibrate(b, x);
  for (int k = 0; k < 3 * 320; ++k)
    b->data[x][k] = b->scale[x] * (rintf(b->data[x][k] / b->scale[x]) + (float)b->zp[x]) - b->scale[x] * (float)b->zp[x];
  ref_map(b, x, y, sigmoid);
  check_single("Sigmoid (16-segment fit)", b, x, y, 1.2);
  gb_free(b);

  memset(b, 0, sizeof(*b));
  x = gb_tensor(b, "x", 1, 5, 8, 8, 4);
  for (int k = 0; k < 5 * 64; ++k) b->data[x][k] = image(k);
  y = gb_tensor(b, "y", 1, 5, 4, 4, 4);
  n = gb_node(b, "AveragePool", "avg", x, -1, -1, y);
  gb_ints(b, n, "kernel_shape", 2, 2, 2, 0, 0);
  gb_ints(b, n, "strides", 2, 2, 2, 0, 0);
  gb_finish(b);
  ref_pool(b, x, y, 2, 0);
  check_single("AveragePool 2x2 alone", b, x, y, 2.0);
  fprintf(stderr, "\n");
  gb_free(b);
  free(b);
}

/* One node, then node_supported's answer must contain `says`. */
static void expect_declined(gb_t* b, const char* says) {
  gb_finish(b);
  for (int t = 0; t < (int)b->g.tensor_count; ++t)
    if (!(b->t[t].flags & AXLE_HAL_TENSOR_CONSTANT) && strcmp(b->t[t].name, "raw")) gb_calibrate(b, t);
  char reason[400] = "";
  int32_t st = g_plugin.t->node_supported(g_plugin.dev, &b->g, 0, reason, sizeof(reason));
  CU_ASSERT_EQUAL(st, AXLE_HAL_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, says));
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "k210: node 'n' ("));
  if (!strstr(reason, says)) fprintf(stderr, "\n  wanted '%s', got '%s'\n", says, reason);
  gb_free(b);
  memset(b, 0, sizeof(*b));
}

static void test_declined_with_reasons(void) {
  gb_t* b = calloc(1, sizeof(*b));
  int x, w, y;
  axle_hal_node_t* n;
#define CONV(cin, cout, k, hw, oh)                                 \
  x = gb_tensor(b, "x", 1, cin, hw, hw, 4);                        \
  w = gb_const(b, "w", cout, cin, k, k, 4, small);                 \
  y = gb_tensor(b, "y", 1, cout, oh, oh, 4);                       \
  n = gb_node(b, "Conv", "n", x, w, -1, y)
  CONV(2, 2, 5, 8, 8);
  gb_ints(b, n, "pads", 4, 2, 2, 2, 2);
  expect_declined(b, "5x5 kernels are not supported by the KPU");
  CONV(2, 2, 3, 9, 3);
  gb_ints(b, n, "pads", 4, 1, 1, 1, 1);
  gb_ints(b, n, "strides", 2, 3, 3, 0, 0);
  expect_declined(b, "strides [3,3]");
  CONV(2, 2, 3, 8, 6);
  expect_declined(b, "padded by 1 on every side");
  CONV(2, 2, 3, 9, 5);
  gb_ints(b, n, "pads", 4, 1, 1, 1, 1);
  gb_ints(b, n, "strides", 2, 2, 2, 0, 0);
  expect_declined(b, "divides by the stride");
  CONV(1100, 4, 1, 2, 2);
  expect_declined(b, "1100 channels; the KPU takes at most 1024");
  CONV(4, 4, 3, 8, 8);
  gb_ints(b, n, "pads", 4, 1, 1, 1, 1);
  gb_ints(b, n, "dilations", 2, 2, 2, 0, 0);
  expect_declined(b, "dilated");
  x = gb_tensor(b, "x", 1, 4, 8, 8, 4);
  w = gb_const(b, "w", 4, 2, 1, 1, 4, small);
  y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  n = gb_node(b, "Conv", "n", x, w, -1, y);
  gb_int(b, n, "group", 2);
  expect_declined(b, "group 2");
  x = gb_tensor(b, "raw", 1, 4, 8, 8, 4);
  y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  gb_node(b, "Relu", "n", x, -1, -1, y);
  expect_declined(b, "no calibration data");
  x = gb_tensor(b, "x", 1, 4, 9, 9, 4);
  y = gb_tensor(b, "y", 1, 4, 3, 3, 4);
  n = gb_node(b, "MaxPool", "n", x, -1, -1, y);
  gb_ints(b, n, "kernel_shape", 2, 3, 3, 0, 0);
  gb_ints(b, n, "strides", 2, 3, 3, 0, 0);
  expect_declined(b, "is not a KPU pool");
  x = gb_tensor(b, "x", 1, 4, 8, 8, 4);
  y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  n = gb_node(b, "LeakyRelu", "n", x, -1, -1, y);
  gb_float(b, n, "alpha", -0.5f);
  expect_declined(b, "non-monotonic");
  x = gb_tensor(b, "x", 1, 4, 8, 8, 4);
  y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  gb_node(b, "Add", "n", x, x, -1, y);
  expect_declined(b, "not supported by the KPU");
  x = gb_tensor(b, "x", 1, 4, 600, 8, 4);
  y = gb_tensor(b, "y", 1, 4, 600, 8, 4);
  gb_node(b, "Relu", "n", x, -1, -1, y);
  expect_declined(b, "at most 512 lines");
  x = gb_tensor(b, "x", 2, 4, 8, 8, 4);
  y = gb_tensor(b, "y", 2, 4, 8, 8, 4);
  gb_node(b, "Relu", "n", x, -1, -1, y);
  expect_declined(b, "batch 1");
#undef CONV
  /* Accepted activations say how well they fit. */
  x = gb_tensor(b, "x", 1, 4, 8, 8, 4);
  y = gb_tensor(b, "y", 1, 4, 8, 8, 4);
  for (int k = 0; k < 256; ++k) b->data[x][k] = 6 * wave(k);
  gb_node(b, "Tanh", "n", x, -1, -1, y);
  gb_finish(b);
  for (int k = 0; k < 256; ++k) b->data[y][k] = tanhf(b->data[x][k]);
  gb_calibrate(b, x);
  gb_calibrate(b, y);
  char reason[400];
  CU_ASSERT_EQUAL(g_plugin.t->node_supported(g_plugin.dev, &b->g, 0, reason, sizeof(reason)), AXLE_HAL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "16-segment fit, max error"));
  fprintf(stderr, "\n  %s\n", reason);
  gb_free(b);
  free(b);
}

/* Each map fits the KPU's 2 MiB; input and output of one layer together do
 * not: compile fails with the reason (the core then uses the CPU). */
static void test_ram_limit(void) {
  gb_t* b = calloc(1, sizeof(*b));
  int x = gb_tensor(b, "x", 1, 900, 33, 33, 4);
  int w = gb_const(b, "w", 900, 900, 1, 1, 4, small);
  int y = gb_tensor(b, "y", 1, 900, 33, 33, 4);
  gb_node(b, "Conv", "big", x, w, -1, y);
  gb_finish(b);
  gb_calibrate(b, x);
  b->data[y][0] = 1;
  gb_calibrate(b, y);
  char reason[400];
  CU_ASSERT_EQUAL(g_plugin.t->node_supported(g_plugin.dev, &b->g, 0, reason, sizeof(reason)), AXLE_HAL_OK);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL(compile(b, x, y, &exe), AXLE_HAL_RESOURCE_EXHAUSTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(cts_message(), "KPU RAM"));
  CU_ASSERT_PTR_NOT_NULL(strstr(cts_message(), "'big'"));
  fprintf(stderr, "\n  %s\n", cts_message());
  gb_free(b);
  free(b);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  if (!k210_plugin_open(&g_plugin, argv[1])) return 1;
  static const k210_test_t tests[] = {
      {"conv+bn+relu+maxpool fused, compared with float; kmodel round trip", test_fused_layer},
      {"depthwise, stride 2, sigmoid, average pool", test_single_layers},
      {"KEEP_INTERMEDIATES writes every located tensor", test_keep_intermediates},
      {"declined nodes say why", test_declined_with_reasons},
      {"KPU RAM limit", test_ram_limit},
      {NULL, NULL}};
  int rc = k210_run_suite("k210_compile", tests);
  k210_plugin_close(&g_plugin);
  if (cts_alloc_outstanding()) {
    fprintf(stderr, "%llu host allocations leaked\n", (unsigned long long)cts_alloc_outstanding());
    rc = 1;
  }
  return rc;
}
