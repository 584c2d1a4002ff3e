/*
 * DRP-AI benchmark (figures only).
 *
 *   axle_bench_drpai EXAMPLES_DIR [RUNS]
 *
 * 1. Round trip of a trivial program (no stage) through the device
 *    interface: START, wait until the descriptor is readable, GET_STATUS. On
 *    a workstation that is the emulated driver; on a board, the real one.
 * 2. The digits example (EXAMPLES_DIR/digits), calibrated on its samples:
 *    one synchronous run on the DRP-AI (emulated: the int8 program is
 *    interpreted on this CPU) against the CPU plugin, plus the time the
 *    emulator's cost model gives the real chip at its default clocks.
 * Plugins are found on AXLE_PLUGIN_PATH as usual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "axle/axle.h"
#include "drpai_dev.h"
#include "drpai_format.h"
#include "drpai_uapi.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double report(const char* label, double* t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp);
  printf("%-44s median %9.2f us  p10 %9.2f us  p90 %9.2f us  (%d runs)\n", label, t[n / 2], t[n / 10],
         t[n * 9 / 10], n);
  return t[n / 2];
}

static int put(drpai_dev_t* dev, uint64_t addr, const void* data, size_t n) {
  drpai_data_t d = {addr, n};
  int rc;
  while ((rc = drpai_dev_ioctl(dev, DRPAI_ASSIGN, &d)) == -ERESTART) {
  }
  return rc ? rc : (drpai_dev_write(dev, data, n) == (ssize_t)n ? 0 : -1);
}

static int round_trip(int runs) {
  drpai_dev_t* dev = NULL;
  if (drpai_dev_open(&dev) != 0) {
    fprintf(stderr, "cannot open the DRP-AI\n");
    return 1;
  }
  drpai_data_t area;
  while (drpai_dev_ioctl(dev, DRPAI_GET_DRPAI_AREA, &area) == -ERESTART) {
  }
  /* drpcfg.mem and drp_desc.bin with no entries: the device starts, finds
   * nothing to do and completes. */
  uint8_t cfg[DRPAI_HEADER_BYTES] = {0}, desc[DRPAI_HEADER_BYTES] = {0};
  memcpy(cfg, DRPAI_MAGIC_DRPCFG, 4);
  memcpy(desc, DRPAI_MAGIC_DRP_DESC, 4);
  drpai_put16(cfg + 4, DRPAI_FORMAT_VERSION);
  drpai_put16(cfg + 6, DRPAI_DRPCFG_ENTRY);
  drpai_put16(desc + 4, DRPAI_FORMAT_VERSION);
  drpai_put16(desc + 6, DRPAI_DRP_DESC_ENTRY);
  if (put(dev, area.address, cfg, sizeof(cfg)) || put(dev, area.address + 64, desc, sizeof(desc))) {
    fprintf(stderr, "cannot place the trivial program\n");
    drpai_dev_close(dev);
    return 1;
  }
  drpai_data_t proc[DRPAI_INDEX_NUM];
  for (int i = 0; i < DRPAI_INDEX_NUM; ++i) proc[i] = (drpai_data_t){area.address + 128, 64};
  proc[DRPAI_INDEX_DRP_CFG] = (drpai_data_t){area.address, sizeof(cfg)};
  proc[DRPAI_INDEX_DRP_DESC] = (drpai_data_t){area.address + 64, sizeof(desc)};
  double* start = (double*)malloc(sizeof(double) * (size_t)runs);
  double* total = (double*)malloc(sizeof(double) * (size_t)runs);
  int fd = drpai_dev_pollfd(dev);
  for (int i = 0; i < runs; ++i) {
    double t0 = now_us();
    if (drpai_dev_ioctl(dev, DRPAI_START, proc) != 0) {
      fprintf(stderr, "START failed\n");
      break;
    }
    double t1 = now_us();
    fd_set rd;
    do {
      FD_ZERO(&rd);
      FD_SET(fd, &rd);
    } while (select(fd + 1, &rd, NULL, NULL, NULL) != 1);
    drpai_status_t st;
    int rc = drpai_dev_ioctl(dev, DRPAI_GET_STATUS, &st);
    double t2 = now_us();
    if (rc != 0) fprintf(stderr, "GET_STATUS: %d\n", rc);
    start[i] = t1 - t0;
    total[i] = t2 - t0;
  }
  printf("device: %s\n", drpai_dev_backend(dev) == DRPAI_BACKEND_EMULATOR ? "emulated DRP-AI" : "driver " DRPAI_DEVICE_PATH);
  report("START ioctl", start, runs);
  report("START -> readable -> GET_STATUS round trip", total, runs);
  free(start);
  free(total);
  drpai_dev_close(dev);
  return 0;
}

/* A digits sample (.npy, float32 [1,1,8,8]). */
static axle_tensor_t* sample(const char* dir, const char* name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/digits/samples/%s.npy", dir, name);
  FILE* f = fopen(path, "rb");
  static const int64_t shape[4] = {1, 1, 8, 8};
  unsigned char head[10];
  axle_tensor_t* t = NULL;
  if (f && fread(head, 1, 10, f) == 10 && axle_tensor_create(AXLE_DTYPE_F32, 4, shape, &t) == AXLE_OK &&
      (fseek(f, 10 + (head[8] | (head[9] << 8)), SEEK_SET) != 0 || fread(axle_tensor_data(t), 4, 64, f) != 64)) {
    axle_tensor_release(t);
    t = NULL;
  }
  if (f) fclose(f);
  return t;
}

static double digits_latency(axle_runtime_t* rt, axle_model_t* m, const char* device, axle_tensor_t** calib,
                             uint32_t ncalib, int runs, char** trace) {
  const char* devs[] = {device};
  axle_session_options_t so = {.struct_size = sizeof so, .flags = AXLE_SESSION_STRICT | (trace ? AXLE_SESSION_PROFILE : 0u),
                               .devices = devs, .device_count = 1, .threads = 1,
                               .calibration_count = ncalib, .calibration_inputs = calib};
  axle_session_t* s = NULL;
  if (axle_session_create(rt, m, &so, &s) != AXLE_OK) {
    fprintf(stderr, "%s session: %s\n", device, axle_status_message());
    return -1;
  }
  const char* name = "image";
  axle_tensor_t* out = NULL;
  axle_session_run(s, NULL, &name, &calib[7], 1, NULL, &out, 1); /* warm-up, allocates out */
  double* t = (double*)malloc(sizeof(double) * (size_t)runs);
  for (int i = 0; i < runs; ++i) {
    double t0 = now_us();
    axle_session_run(s, NULL, &name, &calib[i % ncalib], 1, NULL, &out, 1);
    t[i] = now_us() - t0;
  }
  char label[64];
  snprintf(label, sizeof(label), "digits.onnx on %s (1 thread)", device);
  double median = report(label, t, runs);
  if (trace) axle_session_trace_json(s, trace);
  free(t);
  axle_tensor_release(out);
  axle_session_release(s);
  return median;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s EXAMPLES_DIR [RUNS]\n", argv[0]);
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 2000;
  if (runs < 100) runs = 100;
  printf("== DRP-AI: round trip of a trivial program ==\n");
  if (round_trip(runs)) return 1;

  printf("== DRP-AI: digits example, emulated DRP-AI vs CPU plugin ==\n");
  static const char* names[10] = {"0_1206", "1_869", "2_1338", "3_561", "4_714",
                                  "5_1062", "6_1647", "7_634", "8_524", "9_459"};
  axle_tensor_t* calib[10];
  for (int i = 0; i < 10; ++i)
    if (!(calib[i] = sample(argv[1], names[i]))) {
      fprintf(stderr, "cannot read the digits samples under %s\n", argv[1]);
      return 1;
    }
  char path[1024];
  snprintf(path, sizeof(path), "%s/digits/digits.onnx", argv[1]);
  axle_runtime_t* rt = NULL;
  axle_model_t* m = NULL;
  if (axle_runtime_create(NULL, &rt) != AXLE_OK || axle_model_load_file(path, &m) != AXLE_OK) {
    fprintf(stderr, "%s\n", axle_status_message());
    return 1;
  }
  char* trace = NULL;
  double cpu = digits_latency(rt, m, "cpu", calib, 10, runs, NULL);
  double dpu = digits_latency(rt, m, "drpai", calib, 10, runs, &trace);
  if (cpu > 0 && dpu > 0) printf("%-44s %.2fx the CPU plugin's latency\n", "emulated DRP-AI run:", dpu / cpu);
  /* The plugin reports the cost model's estimate for the real chip. */
  const char* at = trace ? strstr(trace, "\"modelled_us\":") : NULL;
  if (at) printf("%-44s %.3f us (AI-MAC 1 GHz, DRP 420 MHz)\n", "modelled on-chip time:", atof(at + 14));
  axle_free(trace);
  axle_model_release(m);
  axle_runtime_release(rt);
  for (int i = 0; i < 10; ++i) axle_tensor_release(calib[i]);
  return 0;
}
