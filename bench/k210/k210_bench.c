/*
 * axle_bench_k210 [REPS]: figures for the K210 emulator.
 *
 *  1. KPU layer throughput: 3x3 and 1x1 layers pushed through the emulated
 *     KPU's registers on this thread (one host core), in multiply-adds per
 *     second, with the AVX2 kernel and with the scalar reference as the
 *     in-process baseline.
 *  2. Whole programs: emulated chip time (the cycle model at 400 MHz) next to
 *     host time per inference, for $AXLE_TESTDATA/k210/mnist.kmodel and for
 *     examples/digits/digits.onnx compiled for the KPU (through libaxle, with
 *     the digit samples as calibration).
 *
 * Prints figures only; never fails on time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle/axle.h"
#include "k210_kmodel.h"
#include "k210_kpu.h"
#include "k210_run.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define BUS 0x40000000u

/* One layer's words and parameters, ready to push. */
typedef struct bench_layer_t {
  uint64_t words[K210_LAYER_WORDS];
  uint8_t* params; /* weights, then batch norm at bn_at, activation at act_at */
  uint32_t bn_at, act_at;
  uint64_t macs;
} bench_layer_t;

static void make_layer(bench_layer_t* b, uint32_t c, uint32_t oc, uint32_t hw, uint32_t k) {
  k210_layer_t l;
  memset(&l, 0, sizeof(l));
  k210_fmap_t in = k210_fmap_for_shape(0, hw, hw, c);
  k210_fmap_t out = k210_fmap_for_shape(k210_fmap_rows(&in), hw, hw, oc);
  uint32_t per_oc = c * k * k, per_load = 131071 / per_oc < oc ? 131071 / per_oc : oc;
  uint32_t wbytes = oc * per_oc;
  b->bn_at = (wbytes + 7) / 8 * 8;
  b->act_at = (b->bn_at + 8 * oc + 255) / 256 * 256;
  b->params = calloc(1, b->act_at + K210_ACT_TABLE_BYTES);
  for (uint32_t i = 0; i < wbytes; ++i) b->params[i] = (uint8_t)(i * 2654435761u >> 24);
  for (uint32_t o = 0; o < oc; ++o) {
    k210_bn_t bn = {3000 + (int32_t)o, -50, 12};
    k210_bn_encode(&bn, b->params + b->bn_at + 8 * o);
  }
  k210_act_table_t act;
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    act.seg[i] = (k210_act_segment_t){i ? 100 * i : K210_ACT_X_MIN, i ? 700 : 0, 10};
    act.bias[i] = (uint8_t)(12 * i);
  }
  k210_act_encode(&act, b->params + b->act_at);
  l.int_en = 1;
  l.image_src_addr = in.base_row;
  l.image_dst_addr = out.base_row;
  l.i_ch_num = c - 1;
  l.o_ch_num = oc - 1;
  l.o_ch_num_coef = per_load - 1;
  l.i_row_wid = l.i_col_high = l.o_row_wid = l.o_col_high = hw - 1;
  l.kernel_type = k == 3 ? K210_KERNEL_3X3 : K210_KERNEL_1X1;
  l.load_para = 1;
  l.dma_burst_size = 15;
  l.pad_value = 5;
  l.bwsx_base_addr = BUS + b->bn_at;
  l.load_coor = 1;
  l.load_time = (oc + per_load - 1) / per_load - 1;
  l.para_size = per_load * per_oc;
  l.para_start_addr = BUS;
  l.channel_switch_addr = in.channel_switch;
  l.row_switch_addr = in.row_switch;
  l.coef_group = in.groups;
  l.load_act = 1;
  l.active_addr = BUS + b->act_at;
  l.wb_channel_switch_addr = out.channel_switch;
  l.wb_row_switch_addr = out.row_switch;
  l.wb_group = out.groups;
  l.arg_x = -120;
  l.arg_w = -7;
  l.arg_add = (int64_t)k * k * 120 * 7;
  k210_layer_encode(&l, b->words);
  b->macs = (uint64_t)oc * c * k * k * hw * hw;
}

static void layer_throughput(int reps) {
  static const struct {
    uint32_t c, oc, hw, k;
  } shapes[] = {{64, 64, 32, 3}, {32, 32, 64, 3}, {128, 128, 16, 3}, {16, 32, 56, 3}, {3, 16, 112, 3},
                {256, 256, 16, 1}, {64, 128, 32, 1}};
  printf("== KPU layers through the emulated registers (one host core) ==\n");
  printf("%-26s %12s %12s %10s %12s\n", "layer", "AVX2 GMAC/s", "ref GMAC/s", "speedup", "chip GMAC/s");
  k210_kpu_t* kpu = k210_kpu_create();
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    bench_layer_t b;
    make_layer(&b, shapes[i].c, shapes[i].oc, shapes[i].hw, shapes[i].k);
    uint8_t* ram = k210_kpu_ram(kpu);
    for (uint32_t r = 0; r < K210_RAM_BYTES; r += 64) ram[r] = (uint8_t)(r >> 6);
    double rate[2] = {0, 0};
    uint64_t cycles = 0;
    for (int simd = 1; simd >= 0; --simd) {
      k210_kpu_reset(kpu);
      k210_kpu_set_simd(kpu, simd);
      k210_kpu_unmap_all(kpu);
      k210_kpu_map(kpu, BUS, b.params, b.act_at + K210_ACT_TABLE_BYTES);
      k210_kpu_write(kpu, K210_REG_EIGHT_BIT_MODE, 1);
      int n = simd ? reps : (reps + 9) / 10; /* the reference is slow */
      double t0 = now_s();
      for (int r = 0; r <= n; ++r) {
        if (r == 1) t0 = now_s(); /* the first run sizes the scratch */
        for (int w = 0; w < K210_LAYER_WORDS; ++w) k210_kpu_write(kpu, K210_REG_LAYER_ARGUMENT_FIFO, b.words[w]);
      }
      double dt = (now_s() - t0) / n;
      if (k210_kpu_error(kpu)) printf("error: %s\n", k210_kpu_error(kpu));
      rate[simd] = (double)b.macs / dt;
      k210_kpu_stats_t st;
      k210_kpu_stats(kpu, &st);
      cycles = st.cycles;
    }
    char name[64];
    snprintf(name, sizeof(name), "%ux%u %u->%u %ux%u", shapes[i].k, shapes[i].k, shapes[i].c, shapes[i].oc,
             shapes[i].hw, shapes[i].hw);
    printf("%-26s %12.2f %12.2f %9.1fx %12.1f\n", name, rate[1] / 1e9, rate[0] / 1e9, rate[1] / rate[0],
           (double)b.macs / ((double)cycles / 400e6) / 1e9);
    free(b.params);
  }
  k210_kpu_destroy(kpu);
}

static void mnist_program(int reps) {
  const char* root = getenv("AXLE_TESTDATA");
  char path[1024];
  snprintf(path, sizeof(path), "%s/k210/mnist.kmodel", root ? root : "../shared/testdata");
  FILE* f = fopen(path, "rb");
  if (!f) {
    printf("mnist.kmodel: skipped (%s not found; set AXLE_TESTDATA)\n", path);
    return;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* data = malloc((size_t)size);
  size_t got = fread(data, 1, (size_t)size, f);
  fclose(f);
  int32_t st;
  char why[512];
  k210_kmodel_t* m = k210_kmodel_parse(data, got, path, &st, why, sizeof(why));
  free(data);
  if (!m) {
    printf("mnist.kmodel: %s\n", why);
    return;
  }
  k210_chip_t chip;
  k210_chip_init(&chip);
  uint8_t image[784];
  for (int i = 0; i < 784; ++i) image[i] = (uint8_t)(i % 28 > 10 && i % 28 < 17 ? 255 : 0);
  float out[10];
  void* outs[1] = {out};
  uint64_t cycles = 0;
  double t0 = now_s();
  for (int r = 0; r < reps * 10; ++r) k210_run(&chip, m, image, outs, K210_ACT_RULE_V02, NULL, &cycles, why, sizeof(why));
  double host = (now_s() - t0) / (reps * 10);
  printf("mnist.kmodel (11 layers): chip %.1f us (cycle model, 400 MHz), host %.1f us per inference: "
         "emulation runs at %.2fx chip speed\n",
         (double)cycles / 400.0, host * 1e6, ((double)cycles / 400e6) / host);
  k210_chip_free(&chip);
  k210_kmodel_free(m);
}

/* A .npy of 64 float32 (the digit samples), or 0. */
static int read_sample(const char* path, float* out) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t buf[512];
  size_t n = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  if (n < 10 + 256) return 0;
  size_t header = 10 + (size_t)(buf[8] | buf[9] << 8);
  if (header + 256 > n) return 0;
  memcpy(out, buf + header, 256);
  return 1;
}

/* Sums "dur" and the chip_ns argument of every "k210 execute" event. */
static void device_times(const char* json, double* host_us, double* chip_ns, int* events) {
  *host_us = *chip_ns = 0;
  *events = 0;
  for (const char* p = strstr(json, "\"k210 execute\""); p; p = strstr(p + 1, "\"k210 execute\"")) {
    const char* end = strchr(p, '}');
    const char* d = strstr(p, "\"dur\":");
    const char* c = strstr(p, "\"chip_ns\":");
    /* args close one brace before the event does */
    if (end) end = strchr(end + 1, '}');
    if (d && (!end || d < end)) *host_us += atof(d + 6);
    if (c && (!end || c < end)) *chip_ns += atof(c + 10);
    ++*events;
  }
}

static void digits_program(int reps) {
  const char* src = getenv("AXLE_SOURCE_DIR");
  char model_path[1024];
  snprintf(model_path, sizeof(model_path), "%s/examples/digits/digits.onnx", src ? src : ".");
  static const char* const samples[10] = {"0_1206", "1_869", "2_1338", "3_561", "4_714",
                                          "5_1062", "6_1647", "7_634", "8_524", "9_459"};
  float pixels[10][64];
  axle_tensor_t* calib[10];
  int64_t shape[4] = {1, 1, 8, 8};
  for (int i = 0; i < 10; ++i) {
    char p[1200];
    snprintf(p, sizeof(p), "%s/examples/digits/samples/%s.npy", src ? src : ".", samples[i]);
    if (!read_sample(p, pixels[i])) {
      printf("digits.onnx: skipped (cannot read %s; set AXLE_SOURCE_DIR)\n", p);
      return;
    }
    axle_tensor_wrap(AXLE_DTYPE_F32, 4, shape, pixels[i], sizeof(pixels[i]), NULL, NULL, &calib[i]);
  }
  axle_runtime_t* rt = NULL;
  axle_model_t* m = NULL;
  axle_session_t* s = NULL;
  static const char* const devices[] = {"k210", "cpu"};
  axle_session_options_t o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.flags = AXLE_SESSION_PROFILE;
  o.devices = devices;
  o.device_count = 2;
  o.calibration_count = 10;
  o.calibration_inputs = calib;
  if (axle_runtime_create(NULL, &rt) != AXLE_OK || axle_model_load_file(model_path, &m) != AXLE_OK ||
      axle_session_create(rt, m, &o, &s) != AXLE_OK) {
    printf("digits.onnx: skipped (%s)\n", axle_status_message());
  } else {
    const char* name = "image";
    int runs = reps * 10;
    for (int r = 0; r < runs; ++r) {
      axle_tensor_t* out = NULL;
      axle_session_run(s, NULL, &name, &calib[r % 10], 1, NULL, &out, 1);
      axle_tensor_release(out);
    }
    char* json = NULL;
    double host_us, chip_ns;
    int events;
    if (axle_session_trace_json(s, &json) == AXLE_OK) {
      device_times(json, &host_us, &chip_ns, &events);
      if (events)
        printf("digits.onnx compiled for the KPU (2 KPU layers; Flatten/Gemm/Softmax on the cpu device): chip "
               "%.2f us, host %.1f us per inference on the k210 device: emulation runs at %.2fx chip speed\n",
               chip_ns / events / 1e3, host_us / events, (chip_ns / 1e3) / host_us);
      axle_free(json);
    }
  }
  axle_session_release(s);
  axle_model_release(m);
  axle_runtime_release(rt);
  for (int i = 0; i < 10; ++i) axle_tensor_release(calib[i]);
}

int main(int argc, char** argv) {
  /* Figures appear as they are measured, also through a pipe. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  if (reps < 1) reps = 1;
  layer_throughput(reps);
  printf("== whole programs ==\n");
  mnist_program(reps);
  digits_program(reps);
  return 0;
}
