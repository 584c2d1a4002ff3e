/*
 * DRP-AI programs below the session layer: the compiler on a small graph
 * built here (checked against a float reference within int8 tolerance), the
 * object-file directory and the AXDS container (round trips, every
 * truncation, damaged address maps), the emulated hardware fed damaged
 * object files (it must report DRP/AI-MAC errors, never crash: run this under
 * ASan), and the plugin's artifact entry points through its HAL table.
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "axle/hal.h"
#include "drpai_compile.h"
#include "drpai_dev.h"
#include "drpai_program.h"
#include "drpai_runner.h"

#define PHYS (0x240000000ull + 0x1000000) /* a 16 MiB page in the default area */

/* ---- a small graph: Conv 3x3 -> Relu -> MaxPool 2x2 -> Flatten -> Gemm --- */

enum { T_X, T_W, T_B, T_C, T_R, T_P, T_F, T_G, T_GB, T_Y, T_COUNT };
#define CI 2
#define HW 6
#define CO 3
#define NOUT 4

typedef struct net_t {
  axle_hal_tensor_t t[T_COUNT];
  axle_hal_node_t n[5];
  int32_t io[5][4];
  axle_hal_attr_t conv_attrs[2], pool_attrs[2], gemm_attrs[1];
  int64_t pads[4], k3[2], k2[2], s2[2];
  float w[CO * CI * 9], b[CO], gw[NOUT * CO * 9], gb[NOUT];
  float scale[T_COUNT];
  int32_t zp[T_COUNT];
  axle_hal_graph_t g;
} net_t;

static void tensor(net_t* m, int i, const char* name, uint32_t rank, const int64_t* shape, const void* data) {
  axle_hal_tensor_t* t = &m->t[i];
  t->name = name;
  t->dtype = AXLE_HAL_DTYPE_F32;
  t->rank = rank;
  memcpy(t->shape, shape, rank * sizeof(int64_t));
  t->data = data;
  t->flags = data ? AXLE_HAL_TENSOR_CONSTANT : 0;
  t->size_bytes = (uint64_t)axle_hal_tensor_elements(t) * 4;
}

static void node(net_t* m, int i, const char* name, const char* op, int nin, const int32_t* ins, int32_t out,
                 uint32_t nattr, const axle_hal_attr_t* attrs) {
  axle_hal_node_t* n = &m->n[i];
  memcpy(m->io[i], ins, nin * sizeof(int32_t));
  m->io[i][nin] = out;
  n->name = name;
  n->op_type = op;
  n->domain = "";
  n->input_count = (uint32_t)nin;
  n->inputs = m->io[i];
  n->output_count = 1;
  n->outputs = &m->io[i][nin];
  n->attr_count = nattr;
  n->attrs = attrs;
}

static axle_hal_attr_t ints_attr(const char* name, uint32_t count, const int64_t* v) {
  axle_hal_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = name;
  a.type = AXLE_HAL_ATTR_INTS;
  a.count = count;
  a.ints = v;
  a.tensor = -1;
  return a;
}

static void build_net(net_t* m) {
  memset(m, 0, sizeof(*m));
  unsigned s = 7;
  for (size_t i = 0; i < sizeof(m->w) / 4; ++i) m->w[i] = ((s = s * 1103515245u + 12345u) >> 16) % 200 / 100.0f - 1.0f;
  for (size_t i = 0; i < sizeof(m->gw) / 4; ++i) m->gw[i] = ((s = s * 1103515245u + 12345u) >> 16) % 200 / 200.0f - 0.5f;
  for (int i = 0; i < CO; ++i) m->b[i] = 0.1f * (float)i - 0.1f;
  for (int i = 0; i < NOUT; ++i) m->gb[i] = 0.05f * (float)i;
  const int64_t sx[4] = {1, CI, HW, HW}, sw[4] = {CO, CI, 3, 3}, sb[1] = {CO}, sc[4] = {1, CO, HW, HW};
  const int64_t sp[4] = {1, CO, HW / 2, HW / 2}, sf[2] = {1, CO * 9}, sgw[2] = {NOUT, CO * 9}, sgb[1] = {NOUT};
  const int64_t sy[2] = {1, NOUT};
  tensor(m, T_X, "x", 4, sx, NULL);
  tensor(m, T_W, "w", 4, sw, m->w);
  tensor(m, T_B, "b", 1, sb, m->b);
  tensor(m, T_C, "conv", 4, sc, NULL);
  tensor(m, T_R, "relu", 4, sc, NULL);
  tensor(m, T_P, "pool", 4, sp, NULL);
  tensor(m, T_F, "flat", 2, sf, NULL);
  tensor(m, T_G, "gw", 2, sgw, m->gw);
  tensor(m, T_GB, "gb", 1, sgb, m->gb);
  tensor(m, T_Y, "y", 2, sy, NULL);
  m->t[T_X].flags |= AXLE_HAL_TENSOR_GRAPH_INPUT;
  m->t[T_Y].flags |= AXLE_HAL_TENSOR_GRAPH_OUTPUT;
  for (int i = 0; i < 4; ++i) m->pads[i] = 1;
  m->k2[0] = m->k2[1] = m->s2[0] = m->s2[1] = 2;
  m->conv_attrs[0] = ints_attr("pads", 4, m->pads);
  m->pool_attrs[0] = ints_attr("kernel_shape", 2, m->k2);
  m->pool_attrs[1] = ints_attr("strides", 2, m->s2);
  memset(&m->gemm_attrs[0], 0, sizeof(axle_hal_attr_t));
  m->gemm_attrs[0].name = "transB";
  m->gemm_attrs[0].type = AXLE_HAL_ATTR_INT;
  m->gemm_attrs[0].i = 1;
  m->gemm_attrs[0].tensor = -1;
  node(m, 0, "conv", "Conv", 3, (const int32_t[]){T_X, T_W, T_B}, T_C, 1, m->conv_attrs);
  node(m, 1, "relu", "Relu", 1, (const int32_t[]){T_C}, T_R, 0, NULL);
  node(m, 2, "pool", "MaxPool", 1, (const int32_t[]){T_R}, T_P, 2, m->pool_attrs);
  node(m, 3, "flatten", "Flatten", 1, (const int32_t[]){T_P}, T_F, 0, NULL);
  node(m, 4, "fc", "Gemm", 3, (const int32_t[]){T_F, T_G, T_GB}, T_Y, 1, m->gemm_attrs);
  m->g.struct_size = sizeof(m->g);
  m->g.opset = 13;
  m->g.tensor_count = T_COUNT;
  m->g.tensors = m->t;
  m->g.node_count = 5;
  m->g.nodes = m->n;
}

/* The float model; every activation recorded for calibration. */
static void reference(const net_t* m, const float* x, float* act[T_COUNT]) {
  memcpy(act[T_X], x, sizeof(float) * CI * HW * HW);
  for (int o = 0; o < CO; ++o)
    for (int y = 0; y < HW; ++y)
      for (int xx = 0; xx < HW; ++xx) {
        float acc = m->b[o];
        for (int c = 0; c < CI; ++c)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int iy = y + ky - 1, ix = xx + kx - 1;
              if (iy >= 0 && iy < HW && ix >= 0 && ix < HW)
                acc += x[(c * HW + iy) * HW + ix] * m->w[((o * CI + c) * 3 + ky) * 3 + kx];
            }
        act[T_C][(o * HW + y) * HW + xx] = acc;
        act[T_R][(o * HW + y) * HW + xx] = acc > 0 ? acc : 0;
      }
  for (int o = 0; o < CO; ++o)
    for (int y = 0; y < HW / 2; ++y)
      for (int xx = 0; xx < HW / 2; ++xx) {
        float mx = -INFINITY;
        for (int k = 0; k < 4; ++k) mx = fmaxf(mx, act[T_R][(o * HW + 2 * y + k / 2) * HW + 2 * xx + k % 2]);
        act[T_P][(o * 3 + y) * 3 + xx] = act[T_F][(o * 3 + y) * 3 + xx] = mx;
      }
  for (int j = 0; j < NOUT; ++j) {
    float acc = m->gb[j];
    for (int k = 0; k < CO * 9; ++k) acc += act[T_F][k] * m->gw[j * CO * 9 + k];
    act[T_Y][j] = acc;
  }
}

static void input(int sample, float* x) {
  for (int i = 0; i < CI * HW * HW; ++i) x[i] = sinf(0.37f * (float)i + (float)sample) * 0.8f + 0.1f * (float)sample;
}

/* Calibration as the core does it: asymmetric uint8 over [min(lo,0), max(hi,0)]. */
static void calibrate(net_t* m) {
  static const int acts[] = {T_X, T_C, T_R, T_P, T_F, T_Y};
  float lo[T_COUNT], hi[T_COUNT], x[CI * HW * HW], buf[T_COUNT][CI * HW * HW + CO * HW * HW];
  float* act[T_COUNT];
  for (int i = 0; i < T_COUNT; ++i) {
    act[i] = buf[i];
    lo[i] = hi[i] = 0.0f;
  }
  for (int s = 0; s < 4; ++s) {
    input(s, x);
    reference(m, x, act);
    for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); ++k) {
      int t = acts[k];
      for (int64_t e = 0; e < axle_hal_tensor_elements(&m->t[t]); ++e) {
        lo[t] = fminf(lo[t], act[t][e]);
        hi[t] = fmaxf(hi[t], act[t][e]);
      }
    }
  }
  for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); ++k) {
    int t = acts[k];
    m->scale[t] = (hi[t] - lo[t]) / 255.0f;
    m->zp[t] = (int32_t)lroundf(-lo[t] / m->scale[t]);
    m->t[t].quant.count = 1;
    m->t[t].quant.scales = &m->scale[t];
    m->t[t].quant.zero_points = &m->zp[t];
  }
}

static const uint32_t kNodes[] = {0, 1, 2, 3, 4};
static net_t g_net;

static int run_program(const drpai_program_t* p, const void* in, void* out, int32_t* dev_err) {
  drpai_dev_t* dev = NULL;
  if (drpai_dev_open(&dev) != 0) return -1;
  char why[256];
  int rc = drpai_runner_place(dev, p, PHYS + (p->org_base & 0xFFFFFF), why, sizeof(why));
  const void* ins[1] = {in};
  void* outs[1] = {out};
  if (rc == 0) rc = drpai_runner_run(dev, p, PHYS + (p->org_base & 0xFFFFFF), ins, outs, NULL, NULL, dev_err, why,
                                     sizeof(why));
  drpai_dev_close(dev);
  return rc;
}

static void test_compile_matches_float(void) {
  drpai_compiled_t c;
  char err[256];
  CU_ASSERT_EQUAL_FATAL(drpai_compile(&g_net.g, kNodes, 5, NULL, 0, &c, err, sizeof(err)), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(c.input_count, 1);
  CU_ASSERT_EQUAL(c.output_count, 1);
  CU_ASSERT_EQUAL(c.inputs[0], T_X);
  CU_ASSERT_EQUAL(c.outputs[0], T_Y);
  float x[CI * HW * HW], y[NOUT], buf[T_COUNT][CI * HW * HW + CO * HW * HW];
  float* act[T_COUNT];
  for (int i = 0; i < T_COUNT; ++i) act[i] = buf[i];
  double worst = 0;
  for (int s = 0; s < 4; ++s) {
    input(s, x);
    reference(&g_net, x, act);
    int32_t dev_err;
    CU_ASSERT_EQUAL(run_program(&c.program, x, y, &dev_err), 0);
    for (int j = 0; j < NOUT; ++j) worst = fmax(worst, fabs(y[j] - act[T_Y][j]) / g_net.scale[T_Y]);
  }
  fprintf(stderr, "\n  worst error %.2f output steps (scale %.4f)\n", worst, (double)g_net.scale[T_Y]);
  CU_ASSERT_TRUE(worst <= 4.0);
  drpai_program_free(&c.program);
  /* Without calibration every node is declined, with the reason. */
  net_t raw = g_net;
  raw.t[T_C].quant.count = 0;
  raw.g.tensors = raw.t;
  raw.g.nodes = raw.n;
  char reason[256];
  CU_ASSERT_EQUAL(drpai_check_node(&raw.g, 0, reason, sizeof(reason)), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "no calibration data"));
}

static void test_container(void) {
  drpai_compiled_t c;
  char err[256];
  CU_ASSERT_EQUAL_FATAL(drpai_compile(&g_net.g, kNodes, 5, NULL, 0x1000, &c, err, sizeof(err)), AXLE_HAL_OK);
  uint8_t* blob;
  size_t size;
  CU_ASSERT_EQUAL_FATAL(drpai_program_pack(&c.program, &blob, &size), 0);
  drpai_program_t back;
  CU_ASSERT_EQUAL(drpai_program_unpack(blob, size, &back, err, sizeof(err)), 0);
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    CU_ASSERT_EQUAL(back.file[f].size, c.program.file[f].size);
    CU_ASSERT_EQUAL(memcmp(back.file[f].data, c.program.file[f].data, c.program.file[f].size), 0);
  }
  CU_ASSERT_EQUAL(back.org_base, 0x1000);
  drpai_program_free(&back);
  /* Every truncation is refused, in an exact-size copy (ASan sees overreads). */
  int accepted = 0;
  for (size_t n = 0; n < size; ++n) {
    uint8_t* cut = (uint8_t*)malloc(n ? n : 1);
    memcpy(cut, blob, n);
    if (drpai_program_unpack(cut, n, &back, err, sizeof(err)) == 0) {
      ++accepted;
      drpai_program_free(&back);
    }
    free(cut);
  }
  CU_ASSERT_EQUAL(accepted, 0);
  /* A newer container version is "unsupported", not "damaged". */
  blob[4] = 2;
  CU_ASSERT_EQUAL(drpai_program_unpack(blob, size, &back, err, sizeof(err)), 2);
  free(blob);
  drpai_program_free(&c.program);
}

static int write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

static void test_directory(void) {
  char dir[] = "/tmp/axle_drpai_dirXXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  drpai_compiled_t c;
  char err[256], path[512];
  drpai_program_t back;
  CU_ASSERT_EQUAL(drpai_program_read_dir(dir, &back, err, sizeof(err)), 1); /* empty: not ours */
  CU_ASSERT_EQUAL_FATAL(drpai_compile(&g_net.g, kNodes, 5, NULL, 0, &c, err, sizeof(err)), AXLE_HAL_OK);
  CU_ASSERT_EQUAL_FATAL(drpai_program_write_dir(&c.program, dir, err, sizeof(err)), 0);
  CU_ASSERT_EQUAL(drpai_program_read_dir(dir, &back, err, sizeof(err)), 0);
  CU_ASSERT_EQUAL(back.total, c.program.total);
  drpai_program_free(&back);
  /* Damaged address maps: each refused with a message. */
  static const char* maps[] = {
      "data_in 0x0 0x100\n",                                  /* regions missing */
      "data_in 0x8 0x100\n",                                  /* misaligned */
      "data_in 0xFC000000 0x100\n",                           /* reserved range */
      "weight 0x0 0x1\n",                                     /* size differs from the file */
  };
  char* good = drpai_program_addr_map(&c.program);
  snprintf(path, sizeof(path), "%s/addr_map.txt", dir);
  for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); ++i) {
    char text[2048];
    snprintf(text, sizeof(text), "%s%s", good, maps[i]); /* a later line repeats or breaks one */
    if (i == 0) snprintf(text, sizeof(text), "%s", maps[0]);
    CU_ASSERT_EQUAL(write_text(path, text), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(drpai_program_read_dir(dir, &back, err, sizeof(err)), -1);
    CU_ASSERT_TRUE(err[0] != '\0');
  }
  /* Regions that overlap. */
  char text[2048];
  snprintf(text, sizeof(text), "%s", good);
  char* work = strstr(text, "work ");
  CU_ASSERT_PTR_NOT_NULL_FATAL(work);
  memcpy(work, "work 0x00000000", 15);
  CU_ASSERT_EQUAL(write_text(path, text), 0);
  CU_ASSERT_EQUAL(drpai_program_read_dir(dir, &back, err, sizeof(err)), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "overlap"));
  free(good);
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    snprintf(path, sizeof(path), "%s/%s", dir, drpai_file_names[f]);
    unlink(path);
  }
  snprintf(path, sizeof(path), "%s/addr_map.txt", dir);
  unlink(path);
  rmdir(dir);
  drpai_program_free(&c.program);
}

/* The hardware model is fed damaged descriptors and parameters: it must end
 * each run with a status, and never touch memory it was not given. */
static void test_engine_survives_damage(void) {
  drpai_compiled_t c;
  char err[256];
  CU_ASSERT_EQUAL_FATAL(drpai_compile(&g_net.g, kNodes, 5, NULL, 0, &c, err, sizeof(err)), AXLE_HAL_OK);
  static const int files[] = {DRPAI_FILE_DRP_DESC, DRPAI_FILE_DRP_PARAM, DRPAI_FILE_AIMAC_DESC,
                              DRPAI_FILE_AIMAC_CMD, DRPAI_FILE_AIMAC_PARAM_DESC, DRPAI_FILE_AIMAC_PARAM_CMD,
                              DRPAI_FILE_DRPCFG};
  float x[CI * HW * HW], y[NOUT];
  input(0, x);
  unsigned s = 99;
  int ok = 0, errors = 0, other = 0;
  for (int round = 0; round < 400; ++round) {
    int f = files[round % (int)(sizeof(files) / sizeof(files[0]))];
    drpai_blob_t* b = &c.program.file[f];
    uint8_t* saved = (uint8_t*)malloc(b->size);
    memcpy(saved, b->data, b->size);
    for (int k = 0; k < 1 + round % 3; ++k) {
      s = s * 1103515245u + 12345u;
      uint32_t at = (s >> 8) % b->size;
      b->data[at] ^= (uint8_t)(1u << ((s >> 4) % 8));
    }
    int32_t dev_err = 0;
    int rc = run_program(&c.program, x, y, &dev_err);
    if (rc == 0) ++ok;
    else if (rc == -EIO && (dev_err == -1 || dev_err == -2)) ++errors;
    else ++other;
    memcpy(b->data, saved, b->size);
    free(saved);
  }
  fprintf(stderr, "\n  400 damaged programs: %d ran, %d device errors, %d other\n", ok, errors, other);
  CU_ASSERT_TRUE(errors > 0);
  CU_ASSERT_EQUAL(other, 0);
  drpai_program_free(&c.program);
}

/* ---- the plugin's artifact entry points ---------------------------------- */

static char g_msg[512];
static int32_t host_status(int32_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof(g_msg), fmt, ap);
  va_end(ap);
  return code;
}
static void* host_alloc(size_t size, size_t align) { return aligned_alloc(align, (size + align - 1) & ~(align - 1)); }
static void host_free(void* p) { free(p); }
static void host_log(int level, const char* plugin, const char* message) { (void)level, (void)plugin, (void)message; }
static int32_t g_done = -1;
static void host_complete(void* completion, int32_t status) { (void)completion, g_done = status; }
static void host_trace(void* ctx, const axle_hal_trace_event_t* ev) { (void)ctx, (void)ev; }
static uint64_t host_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_plugin_artifacts(void) {
  const char* dir = getenv("AXLE_PLUGIN_PATH");
  char path[1024];
  snprintf(path, sizeof(path), "%s/axle_plugin_drpai.so", dir ? dir : ".");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
  axle_hal_entry_fn entry;
  *(void**)&entry = dlsym(lib, AXLE_HAL_ENTRY_NAME);
  static const axle_hal_host_t host = {sizeof(axle_hal_host_t), AXLE_HAL_ABI_VERSION, host_alloc, host_free,
                                       host_status, host_log, host_complete, host_trace, host_now};
  const axle_hal_plugin_t* t = entry(AXLE_HAL_ABI_VERSION, &host);
  axle_hal_plugin_state_t* st = NULL;
  axle_hal_device_t* dev = NULL;
  CU_ASSERT_EQUAL_FATAL(t->init(&host, &st), AXLE_HAL_OK);
  CU_ASSERT_EQUAL_FATAL(t->device_open(st, 0, &dev), AXLE_HAL_OK);
  drpai_compiled_t c;
  char err[256];
  CU_ASSERT_EQUAL_FATAL(drpai_compile(&g_net.g, kNodes, 5, NULL, 0, &c, err, sizeof(err)), AXLE_HAL_OK);
  uint8_t* blob;
  size_t size;
  CU_ASSERT_EQUAL_FATAL(drpai_program_pack(&c.program, &blob, &size), 0);
  /* A container in a file: load, describe, run, serialize. */
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(t->artifact_load(dev, "prog.axds", blob, size, &exe), AXLE_HAL_OK);
  axle_hal_native_info_t info = {sizeof(info), 0, 0, NULL, 0};
  CU_ASSERT_EQUAL(t->executable_describe(exe, &info), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(info.input_count, 1);
  CU_ASSERT_EQUAL(info.output_count, 1);
  CU_ASSERT_STRING_EQUAL(info.io[0].name, "x");
  CU_ASSERT_EQUAL(info.io[1].shape[1], NOUT);
  float x[CI * HW * HW], y[NOUT], buf[T_COUNT][CI * HW * HW + CO * HW * HW];
  float* act[T_COUNT];
  for (int i = 0; i < T_COUNT; ++i) act[i] = buf[i];
  input(1, x);
  reference(&g_net, x, act);
  axle_hal_binding_t bind[3] = {{NULL, 0, NULL}, {NULL, 0, x}, {NULL, 0, y}};
  axle_hal_submit_info_t si = {sizeof(si), exe, 3, bind, &g_done, NULL, 0, NULL};
  CU_ASSERT_EQUAL(t->submit(dev, &si), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(g_done, AXLE_HAL_OK);
  for (int j = 0; j < NOUT; ++j) CU_ASSERT_TRUE(fabsf(y[j] - act[T_Y][j]) <= 4 * g_net.scale[T_Y]);
  void* again = NULL;
  size_t again_size = 0;
  CU_ASSERT_EQUAL_FATAL(t->executable_serialize(exe, &again, &again_size), AXLE_HAL_OK);
  t->executable_release(exe);
  /* The same container comes back, with the bindings trailer after it;
   * executable_load restores those bindings (here: the native ones). */
  CU_ASSERT_TRUE(again_size > size && memcmp(again, blob, size) == 0);
  exe = NULL;
  CU_ASSERT_EQUAL_FATAL(t->executable_load(dev, again, again_size, &exe), AXLE_HAL_OK);
  memset(y, 0, sizeof(y));
  g_done = -1;
  si.executable = exe;
  CU_ASSERT_EQUAL(t->submit(dev, &si), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(g_done, AXLE_HAL_OK);
  for (int j = 0; j < NOUT; ++j) CU_ASSERT_TRUE(fabsf(y[j] - act[T_Y][j]) <= 4 * g_net.scale[T_Y]);
  t->executable_release(exe);
  /* Damage is refused with a message naming the problem: a cut blob, the
   * container without its trailer, a trailer that names other slots. */
  size_t cuts[3] = {again_size - 1, size, size - 1};
  for (int i = 0; i < 3; ++i) {
    g_msg[0] = '\0';
    exe = NULL;
    CU_ASSERT_EQUAL(t->executable_load(dev, again, cuts[i], &exe), AXLE_HAL_INVALID_MODEL);
    CU_ASSERT_PTR_NULL(exe);
    CU_ASSERT_TRUE(g_msg[0] != '\0');
  }
  ((uint8_t*)again)[size] = 0xFF; /* the first input's slot */
  g_msg[0] = '\0';
  CU_ASSERT_EQUAL(t->executable_load(dev, again, again_size, &exe), AXLE_HAL_INVALID_MODEL);
  CU_ASSERT_PTR_NULL(exe);
  CU_ASSERT_PTR_NOT_NULL(strstr(g_msg, "binding"));
  free(again);
  /* artifact_load: a directory of ours loads; anything else is quietly
   * "not mine". */
  char tmp[] = "/tmp/axle_drpai_artXXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmp));
  g_msg[0] = '\0';
  CU_ASSERT_EQUAL(t->artifact_load(dev, tmp, NULL, 0, &exe), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT_EQUAL(t->artifact_load(dev, "/tmp/x.kmodel", "KPU\0", 4, &exe), AXLE_HAL_UNSUPPORTED);
  CU_ASSERT_EQUAL(g_msg[0], '\0');
  CU_ASSERT_EQUAL(drpai_program_write_dir(&c.program, tmp, err, sizeof(err)), 0);
  CU_ASSERT_EQUAL(t->artifact_load(dev, tmp, NULL, 0, &exe), AXLE_HAL_OK);
  t->executable_release(exe);
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    snprintf(path, sizeof(path), "%s/%s", tmp, drpai_file_names[f]);
    unlink(path);
  }
  snprintf(path, sizeof(path), "%s/addr_map.txt", tmp);
  unlink(path);
  rmdir(tmp);
  free(blob);
  drpai_program_free(&c.program);
  t->device_close(dev);
  t->shutdown(st);
  dlclose(lib);
}

int main(void) {
  build_net(&g_net);
  calibrate(&g_net);
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_program", NULL, NULL);
  CU_add_test(s, "compiled int8 program matches the float model", test_compile_matches_float);
  CU_add_test(s, "AXDS container: round trip, truncations, versions", test_container);
  CU_add_test(s, "object-file directory and damaged address maps", test_directory);
  CU_add_test(s, "the hardware model survives damaged object files", test_engine_survives_damage);
  CU_add_test(s, "plugin: executable_load/describe/submit/serialize, artifact_load", test_plugin_artifacts);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
