/*
 * axle_cts: the Axle HAL plugin conformance suite.
 *
 *   axle_cts PLUGIN.so [--strict-cancel]
 *
 * It dlopens the plugin itself and acts as a minimal host (cts_host.c), so it
 * checks the plugin against hal.h alone, not against whatever libaxle happens
 * to tolerate. Compute checks build tiny float32 graphs ([2,3,4] Relu, Add,
 * Mul) in C. A plugin that declines the plain probe is asked again with the
 * probe quantized as the core would after calibration (per-tensor uint8,
 * also as a [1,2,3,4] NCHW image): int8 devices (K210, DRP-AI) accept only
 * that. Exact probes are compared bit for bit; quantized ones within a
 * tolerance derived from the quantization steps. A plugin that supports none
 * of the probes must say why, and its compute checks are reported as skipped
 * (exit status 77), never as passed.
 *
 * --strict-cancel: the plugin is run with work slow enough (for the reference
 * plugin: AXLE_REF_DELAY_MS) that a preset cancel flag, a cancel() right after
 * submit and a past deadline must end in CANCELLED / TIMEOUT rather than OK.
 *
 * Exit status: 0 all passed, 1 a check failed, 77 compute checks skipped.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle/hal.h"
#include "cts_host.h"

#define CTS_MAX_DEVICES 16
#define CTS_N 24               /* elements of every probe tensor: [2,3,4] or [1,2,3,4] */
#define CTS_BYTES (CTS_N * 4)
#define CTS_WAIT_MS 20000      /* generous: sanitizer builds and slow emulators */
#define CTS_CANARY 0xA5

/* How a probe graph is built. hal.h has no status for "needs calibration"
 * (the reason is free text), so every refusal of the plain float32 probe is
 * retried with the next form: quantized, then quantized as a batch-1 NCHW
 * image, which is the only layout the K210's KPU takes. */
typedef struct cts_form_t {
  int quantized;
  uint32_t rank;               /* 3: [2,3,4]; 4: [1,2,3,4] */
  const char* text;
} cts_form_t;

static const cts_form_t k_forms[] = {
    {0, 3, "float32 [2,3,4]"},
    {1, 3, "quantized float32 [2,3,4]"},
    {1, 4, "quantized float32 [1,2,3,4]"},
};
#define CTS_FORMS ((int)(sizeof(k_forms) / sizeof(k_forms[0])))

/* Calibration covers probe_inputs() variants 0 .. CTS_VARIANTS - 1: every
 * variant a check runs (the largest: submit_thread's 3 * 10 + 3). */
#define CTS_VARIANTS 34

typedef struct cts_dev_t {
  axle_hal_device_t* dev;
  axle_hal_device_info_t info;
  int32_t probe_status[3];     /* node_supported() per probe op */
  int form[3];                 /* k_forms index of the probe it answered last */
} cts_dev_t;

static const char* const k_probe_ops[3] = {"Relu", "Add", "Mul"};

static struct {
  const char* path;
  int strict_cancel;
  void* lib;
  axle_hal_entry_fn entry;
  const axle_hal_plugin_t* t;
  axle_hal_plugin_state_t* state;
  uint32_t dev_count;
  cts_dev_t devs[CTS_MAX_DEVICES];
  int probed;
  int can_run;                 /* the functions compute checks need are present */
  int skipped;
  int warnings;
} G;

static void cts_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void cts_warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "\n  WARNING: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  ++G.warnings;
}

static void cts_skip(const char* test) {
  fprintf(stderr,
          "\n  SKIP: %s: the plugin supports none of the probe ops (Relu/Add/Mul, float32 or "
          "quantized)\n",
          test);
  G.skipped = 1;
}

/* The table field f is present (inside struct_size) and non-NULL. */
#define HAS(f) \
  (G.t->header.struct_size >= offsetof(axle_hal_plugin_t, f) + sizeof(void*) && G.t->f != NULL)

static int op_inputs(const char* op) { return strcmp(op, "Relu") == 0 ? 1 : 2; }

static void op_ref(const char* op, const float* a, const float* b, float* y) {
  for (int i = 0; i < CTS_N; ++i) {
    if (strcmp(op, "Relu") == 0)
      y[i] = a[i] > 0.0f ? a[i] : 0.0f;
    else if (strcmp(op, "Add") == 0)
      y[i] = a[i] + b[i];
    else
      y[i] = a[i] * b[i];
  }
}

static void probe_inputs(float* a, float* b, int variant) {
  for (int i = 0; i < CTS_N; ++i) {
    a[i] = (float)(i - 11 + variant) * 0.375f + 0.125f;
    b[i] = 1.5f - (float)(i + variant) * 0.25f;
  }
}

/* ------------------------------------------------------------------------ */
/* Tiny graphs built in C.                                                   */
/* ------------------------------------------------------------------------ */

/* Tensors: 0 a (input), 1 b (input or constant), 2 y (output), 3 t (chain
 * intermediate). Nodes: n0 = op(a[,b]) -> y, or for a chain n0 -> t, n1 =
 * op(t[,b]) -> y. The graph must outlive executables compiled from it. */
typedef struct cts_graph_t {
  axle_hal_tensor_t tensors[4];
  axle_hal_node_t nodes[2];
  int32_t in[2][2];
  int32_t out[2][1];
  uint32_t order[2];
  axle_hal_graph_t g;
  float b_const[CTS_N];
  const char* op;
  int chain, const_b, inputs;
  float scale[4];              /* per tensor, quantized forms only */
  int32_t zero_point[4];
  double tolerance;            /* allowed |y - reference|; 0: bit-exact */
  char names[2][32];
} cts_graph_t;

/* The float reference; t receives the first node's output in a chain. */
static void graph_eval(const cts_graph_t* g, const float* a, const float* b, float* t, float* y) {
  if (g->const_b) b = g->b_const;
  op_ref(g->op, a, b, g->chain ? t : y);
  if (g->chain) op_ref(g->op, t, b, y);
}

/* What core/src/calibrate.c derives from the range a tensor showed:
 * asymmetric uint8 over [min(lo, 0), max(hi, 0)], so that zero is exact. */
static void quant_from_range(float lo, float hi, float* scale, int32_t* zero_point) {
  float a = lo < 0.0f ? lo : 0.0f, b = hi > 0.0f ? hi : 0.0f;
  *scale = b > a ? (b - a) / 255.0f : 1.0f;
  long z = lroundf(-a / *scale);
  *zero_point = (int32_t)(z < 0 ? 0 : z > 255 ? 255 : z);
}

/* Bound on the error of op's output when its inputs, |x| <= mx and
 * |b| <= mb, are each off by at most ex and eb. */
static double op_error(const char* op, double ex, double mx, double eb, double mb) {
  if (strcmp(op, "Relu") == 0) return ex;
  if (strcmp(op, "Add") == 0) return ex + eb;
  return mx * eb + mb * ex + ex * eb;
}

/* Requantizing a node's output costs half a step of rounding plus whatever
 * the device's fixed-point multiplier and shift lose: allow two steps. */
#define CTS_OUTPUT_STEPS 2.0

/* Quantizes g as the core would after calibrating on every probe variant,
 * and derives the tolerance: graph inputs are off by half a step, the error
 * goes through each node, and each node output adds CTS_OUTPUT_STEPS of its
 * own steps. */
static void graph_quantize(cts_graph_t* g) {
  int used[4] = {1, g->inputs == 2, 1, g->chain};
  float lo[4], hi[4];
  for (int i = 0; i < 4; ++i) {
    lo[i] = INFINITY;
    hi[i] = -INFINITY;
  }
  for (int v = 0; v < CTS_VARIANTS; ++v) {
    float x[4][CTS_N];
    probe_inputs(x[0], x[1], v);
    if (g->const_b) memcpy(x[1], g->b_const, sizeof(x[1]));
    graph_eval(g, x[0], x[1], x[3], x[2]);
    for (int i = 0; i < 4; ++i)
      for (int e = 0; used[i] && e < CTS_N; ++e) {
        lo[i] = fminf(lo[i], x[i][e]);
        hi[i] = fmaxf(hi[i], x[i][e]);
      }
  }
  double m[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    if (!used[i]) continue;
    quant_from_range(lo[i], hi[i], &g->scale[i], &g->zero_point[i]);
    m[i] = fmax(fabs((double)lo[i]), fabs((double)hi[i]));
    /* The core quantizes activations only; a constant stays float. */
    if (i != 1 || !g->const_b)
      g->tensors[i].quant = (axle_hal_quant_t){1, 0, &g->scale[i], &g->zero_point[i]};
  }
  /* A plugin quantizing a constant operand itself gets the same half step. */
  double eb = g->scale[1] / 2.0;
  int first_out = g->chain ? 3 : 2;
  double e = op_error(g->op, g->scale[0] / 2.0, m[0], eb, m[1]) +
             CTS_OUTPUT_STEPS * g->scale[first_out];
  if (g->chain) e = op_error(g->op, e, m[3], eb, m[1]) + CTS_OUTPUT_STEPS * g->scale[2];
  g->tolerance = e;
}

static void graph_mode(const cts_graph_t* g, char* buf, size_t size) {
  if (g->tensors[0].quant.count)
    snprintf(buf, size, "quantized, tolerance %.4g", g->tolerance);
  else
    snprintf(buf, size, "exact");
}

static void tensor_init(axle_hal_tensor_t* t, const char* name, uint32_t flags, uint32_t rank) {
  static const int64_t dims[4] = {1, 2, 3, 4};
  memset(t, 0, sizeof(*t));
  t->name = name;
  t->dtype = AXLE_HAL_DTYPE_F32;
  t->rank = rank;
  memcpy(t->shape, dims + 4 - rank, rank * sizeof(int64_t));
  t->flags = flags;
  t->size_bytes = CTS_BYTES;
}

/* A probe graph of op in k_forms[form]. */
static cts_graph_t* graph_new(const char* op, int form, int chain, int const_b) {
  cts_graph_t* g = (cts_graph_t*)calloc(1, sizeof(*g));
  if (!g) return NULL;
  const cts_form_t* f = &k_forms[form];
  g->op = op;
  g->chain = chain;
  g->inputs = op_inputs(op);
  g->const_b = const_b && g->inputs == 2;
  tensor_init(&g->tensors[0], "a", AXLE_HAL_TENSOR_GRAPH_INPUT, f->rank);
  tensor_init(&g->tensors[1], "b", g->const_b ? AXLE_HAL_TENSOR_CONSTANT : AXLE_HAL_TENSOR_GRAPH_INPUT,
              f->rank);
  tensor_init(&g->tensors[2], "y", AXLE_HAL_TENSOR_GRAPH_OUTPUT, f->rank);
  tensor_init(&g->tensors[3], "t", 0, f->rank);
  if (g->const_b) {
    float a[CTS_N];
    probe_inputs(a, g->b_const, 7);
    g->tensors[1].data = g->b_const;
  }
  uint32_t node_count = chain ? 2 : 1;
  for (uint32_t n = 0; n < node_count; ++n) {
    snprintf(g->names[n], sizeof(g->names[n]), "cts_%s_%u", op, n);
    g->in[n][0] = n == 0 ? 0 : 3;
    g->in[n][1] = 1;
    g->out[n][0] = (chain && n == 0) ? 3 : 2;
    axle_hal_node_t* node = &g->nodes[n];
    node->name = g->names[n];
    node->op_type = op;
    node->domain = "";
    node->input_count = (uint32_t)g->inputs;
    node->inputs = g->in[n];
    node->output_count = 1;
    node->outputs = g->out[n];
    node->attr_count = 0;
    node->attrs = NULL;
    g->order[n] = n;
  }
  g->g.struct_size = sizeof(g->g);
  g->g.opset = 13;
  g->g.tensor_count = 4;
  g->g.tensors = g->tensors;
  g->g.node_count = node_count;
  g->g.nodes = g->nodes;
  if (f->quantized) graph_quantize(g);
  return g;
}

/* Probe op k on d, in the form d answered its capability probe with. */
static cts_graph_t* probe_graph(const cts_dev_t* d, int k, int chain, int const_b) {
  return graph_new(k_probe_ops[k], d->form[k], chain, const_b);
}

/* Slot layout, chosen so that a plugin ignoring any part of {binding offset,
 * location offset, slot} writes to the wrong place and is caught:
 *   slot 0 (arena):   t at 32;                      binding offset 0
 *   slot 1 (inputs):  a at 0, b at 128;             binding offset 32
 *   slot 2 (outputs): y at 64;                      binding offset 16 */
enum { SLOT_ARENA = 0, SLOT_IN = 1, SLOT_OUT = 2, SLOTS = 3 };
static const uint64_t k_slot_size[SLOTS] = {256, 512, 512};
static const uint64_t k_bind_offset[SLOTS] = {0, 32, 16};
#define OFF_T 32u
#define OFF_A 0u
#define OFF_B 128u
#define OFF_Y 64u

/* Fills loc with the locations for graph g; returns the count. */
static uint32_t graph_locations(const cts_graph_t* g, axle_hal_tensor_location_t* loc) {
  uint32_t n = 0;
  loc[n++] = (axle_hal_tensor_location_t){0, SLOT_IN, OFF_A};
  if (g->inputs == 2 && !g->const_b) loc[n++] = (axle_hal_tensor_location_t){1, SLOT_IN, OFF_B};
  loc[n++] = (axle_hal_tensor_location_t){2, SLOT_OUT, OFF_Y};
  if (g->chain) loc[n++] = (axle_hal_tensor_location_t){3, SLOT_ARENA, OFF_T};
  return n;
}

/* Compiles g on d. omit_location drops one location (error-path test). The
 * subgraph arrays are scribbled over afterwards: hal.h lets the plugin keep
 * only the graph, not the subgraph description. */
static int32_t graph_compile(cts_dev_t* d, cts_graph_t* g, int omit_location,
                             axle_hal_executable_t** exe) {
  axle_hal_tensor_location_t loc[4];
  uint32_t nloc = graph_locations(g, loc);
  if (omit_location) {
    loc[0] = loc[nloc - 1];
    --nloc;
  }
  uint32_t nodes[2] = {0, 1};
  axle_hal_subgraph_t sg;
  memset(&sg, 0, sizeof(sg));
  sg.struct_size = sizeof(sg);
  sg.graph = &g->g;
  sg.node_count = g->g.node_count;
  sg.nodes = nodes;
  sg.location_count = nloc;
  sg.locations = loc;
  sg.slot_count = SLOTS;
  axle_hal_compile_options_t opt = {sizeof(opt), 1, 0};
  *exe = NULL;
  cts_message_clear();
  int32_t st = G.t->compile(d->dev, &sg, &opt, exe);
  memset(loc, 0xEE, sizeof(loc));
  memset(nodes, 0xEE, sizeof(nodes));
  memset(&sg, 0xEE, sizeof(sg));
  return st;
}

/* ------------------------------------------------------------------------ */
/* Runs: memory per slot, submit, wait, verify.                              */
/* ------------------------------------------------------------------------ */

typedef struct cts_run_t {
  cts_dev_t* d;
  axle_hal_memory_t* mem[SLOTS];
  uint8_t* imported;           /* host buffer behind slot 1 when imported */
  float a[CTS_N], b[CTS_N];
  cts_token_t token;
  int token_live;
} cts_run_t;

static void run_free(cts_run_t* r) {
  for (int s = 0; s < SLOTS; ++s)
    if (r->mem[s]) G.t->memory_free(r->d->dev, r->mem[s]);
  free(r->imported);
  if (r->token_live) cts_token_destroy(&r->token);
  memset(r->mem, 0, sizeof(r->mem));
  r->imported = NULL;
  r->token_live = 0;
}

/* Allocates and fills the slots (canaries everywhere, inputs at their
 * locations). Returns 0 on failure (already reported). */
static int run_prepare(cts_run_t* r, cts_dev_t* d, int variant, int use_import) {
  memset(r, 0, sizeof(*r));
  r->d = d;
  probe_inputs(r->a, r->b, variant);
  for (int s = 0; s < SLOTS; ++s) {
    int32_t st;
    if (s == SLOT_IN && use_import) {
      r->imported = (uint8_t*)aligned_alloc(64, (size_t)k_slot_size[s]);
      if (!r->imported) return 0;
      st = G.t->memory_import(d->dev, r->imported, k_slot_size[s], &r->mem[s]);
    } else {
      st = G.t->memory_allocate(d->dev, k_slot_size[s], 64, &r->mem[s]);
    }
    CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
    if (st != AXLE_HAL_OK || !r->mem[s]) {
      fprintf(stderr, "\n  slot %d memory: status %d: %s\n", s, st, cts_message());
      run_free(r);
      return 0;
    }
    void* p = NULL;
    st = G.t->memory_map(d->dev, r->mem[s], &p);
    CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
    CU_ASSERT_PTR_NOT_NULL(p);
    if (st != AXLE_HAL_OK || !p) {
      run_free(r);
      return 0;
    }
    memset(p, CTS_CANARY, (size_t)k_slot_size[s]);
    if (s == SLOT_IN) {
      memcpy((uint8_t*)p + k_bind_offset[s] + OFF_A, r->a, CTS_BYTES);
      memcpy((uint8_t*)p + k_bind_offset[s] + OFF_B, r->b, CTS_BYTES);
    }
    if (HAS(memory_unmap)) G.t->memory_unmap(d->dev, r->mem[s]);
  }
  cts_token_init(&r->token);
  r->token_live = 1;
  return 1;
}

static int32_t run_submit(cts_run_t* r, axle_hal_executable_t* exe, const volatile int32_t* cancel,
                          uint64_t deadline_ns, void* trace_ctx, uint32_t binding_count) {
  axle_hal_binding_t bind[SLOTS];
  for (int s = 0; s < SLOTS; ++s) {
    bind[s].memory = r->mem[s];
    bind[s].offset = k_bind_offset[s];
    bind[s].host_ptr = NULL;
  }
  axle_hal_submit_info_t si;
  memset(&si, 0, sizeof(si));
  si.struct_size = sizeof(si);
  si.executable = exe;
  si.binding_count = binding_count;
  si.bindings = bind;
  si.completion = &r->token;
  si.cancel_flag = cancel;
  si.deadline_ns = deadline_ns;
  si.trace_ctx = trace_ctx;
  cts_message_clear();
  int32_t st = G.t->submit(r->d->dev, &si);
  /* The bindings are only valid during submit(): an async plugin that reads
   * them later now sees garbage. */
  memset(bind, 0xEE, sizeof(bind));
  memset(&si, 0xEE, sizeof(si));
  return st;
}

/* Waits for the completion; returns its status, or -1 when it never came. */
static int32_t run_wait(cts_run_t* r) {
  if (!cts_token_wait(&r->token, CTS_WAIT_MS)) {
    CU_FAIL("submit succeeded but complete() was not called within the time limit");
    return -1;
  }
  return r->token.status;
}

/* y against the reference for inputs (a, b), within g->tolerance: at 0 that
 * is bit-exactness, and NaN never passes. */
static int output_ok(const cts_graph_t* g, const float* a, const float* b, const float* y) {
  float t[CTS_N], want[CTS_N];
  graph_eval(g, a, b, t, want);
  for (int i = 0; i < CTS_N; ++i) {
    if (!(fabs((double)y[i] - (double)want[i]) <= g->tolerance)) {
      char mode[64];
      graph_mode(g, mode, sizeof(mode));
      fprintf(stderr, "\n  %s: y[%d] = %.9g, expected %.9g (%s)\n", g->op, i, (double)y[i],
              (double)want[i], mode);
      return 0;
    }
  }
  return 1;
}

/* Verifies the output of g and that nothing outside y was written in slots
 * 1 and 2. */
static int run_verify(cts_run_t* r, const cts_graph_t* g) {
  int ok = 1;
  for (int s = SLOT_IN; s <= SLOT_OUT; ++s) {
    void* p = NULL;
    if (G.t->memory_map(r->d->dev, r->mem[s], &p) != AXLE_HAL_OK || !p) {
      CU_FAIL("memory_map after the run failed");
      return 0;
    }
    const uint8_t* m = (const uint8_t*)p;
    uint64_t y0 = k_bind_offset[SLOT_OUT] + OFF_Y;
    for (uint64_t i = 0; i < k_slot_size[s]; ++i) {
      int in_y = s == SLOT_OUT && i >= y0 && i < y0 + CTS_BYTES;
      int in_ab = s == SLOT_IN && i >= k_bind_offset[s] &&
                  ((i >= k_bind_offset[s] + OFF_A && i < k_bind_offset[s] + OFF_A + CTS_BYTES) ||
                   (i >= k_bind_offset[s] + OFF_B && i < k_bind_offset[s] + OFF_B + CTS_BYTES));
      if (!in_y && !in_ab && m[i] != CTS_CANARY) {
        fprintf(stderr, "\n  slot %d byte %llu outside every tensor was written (0x%02x)\n", s,
                (unsigned long long)i, m[i]);
        ok = 0;
        break;
      }
    }
    if (s == SLOT_IN) {
      if (memcmp(m + k_bind_offset[s] + OFF_A, r->a, CTS_BYTES) ||
          memcmp(m + k_bind_offset[s] + OFF_B, r->b, CTS_BYTES)) {
        fprintf(stderr, "\n  the run modified its inputs\n");
        ok = 0;
      }
    }
    if (s == SLOT_OUT) {
      float y[CTS_N];
      memcpy(y, m + y0, CTS_BYTES);
      if (!output_ok(g, r->a, r->b, y)) ok = 0;
    }
    if (HAS(memory_unmap)) G.t->memory_unmap(r->d->dev, r->mem[s]);
  }
  CU_ASSERT_TRUE(ok);
  return ok;
}

/* Complete run: prepare, submit, wait, check exactly-once, verify. */
static int run_once(cts_dev_t* d, const cts_graph_t* g, axle_hal_executable_t* exe, int variant,
                    int use_import) {
  cts_run_t r;
  if (!run_prepare(&r, d, variant, use_import)) return 0;
  int32_t st = run_submit(&r, exe, NULL, 0, NULL, SLOTS);
  CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
  int ok = 0;
  if (st == AXLE_HAL_OK) {
    int32_t cs = run_wait(&r);
    CU_ASSERT_EQUAL(cs, AXLE_HAL_OK);
    if (cs == AXLE_HAL_OK) ok = run_verify(&r, g);
  } else {
    fprintf(stderr, "\n  %s: submit of %s failed: %d: %s\n", d->info.name, g->op, st,
            cts_message());
  }
  run_free(&r);
  return ok;
}

/* The first device and op (k_probe_ops index) that passed the capability
 * probe. */
static cts_dev_t* compute_target(int* op, const char* test) {
  if (!G.can_run) return NULL; /* already failed in "header sanity" */
  for (uint32_t i = 0; i < G.dev_count; ++i)
    for (int k = 0; k < 3; ++k)
      if (G.probed && G.devs[i].probe_status[k] == AXLE_HAL_OK) {
        *op = k;
        return &G.devs[i];
      }
  cts_skip(test);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Suite: entry point and header.                                            */
/* ------------------------------------------------------------------------ */

static void test_entry_symbol(void) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(G.entry);
  /* Exactly one entry symbol; the loader looks up nothing else. */
  CU_ASSERT_STRING_EQUAL(AXLE_HAL_ENTRY_NAME, "axle_hal_plugin_entry");
}

static int printable(const char* s, size_t max) {
  size_t n = 0;
  for (; s[n]; ++n)
    if (n >= max || (unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e) return 0;
  return n > 0;
}

static void test_header(void) {
  const axle_hal_plugin_t* t = G.entry(AXLE_HAL_ABI_VERSION, cts_host());
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  const axle_hal_plugin_header_t* h = &t->header;
  CU_ASSERT_EQUAL(h->abi_version, AXLE_HAL_ABI_VERSION);
  /* The core refuses tables that stop before compile (plugin_loader.c). */
  CU_ASSERT_TRUE(h->struct_size >= offsetof(axle_hal_plugin_t, compile) + sizeof(void*));
  CU_ASSERT_PTR_NOT_NULL_FATAL(h->name);
  CU_ASSERT_TRUE(printable(h->name, 63));
  CU_ASSERT_PTR_NOT_NULL(h->description);
  CU_ASSERT_EQUAL(h->features & ~(uint64_t)(AXLE_HAL_FEATURE_ASYNC | AXLE_HAL_FEATURE_SERIALIZE |
                                            AXLE_HAL_FEATURE_PROFILING),
                  0);
  for (int i = 0; i < 4; ++i) CU_ASSERT_EQUAL(h->reserved[i], 0);
  /* What the CTS (and any useful host) needs. */
  CU_ASSERT_PTR_NOT_NULL(t->init);
  CU_ASSERT_PTR_NOT_NULL(t->device_count);
  CU_ASSERT_PTR_NOT_NULL(t->device_info);
  CU_ASSERT_PTR_NOT_NULL(t->device_open);
  CU_ASSERT_PTR_NOT_NULL(t->device_close);
  CU_ASSERT_PTR_NOT_NULL(t->memory_allocate);
  CU_ASSERT_PTR_NOT_NULL(t->memory_free);
  CU_ASSERT_PTR_NOT_NULL(t->memory_map);
  CU_ASSERT_PTR_NOT_NULL(t->node_supported);
  CU_ASSERT_PTR_NOT_NULL(t->compile);
  CU_ASSERT_PTR_NOT_NULL(t->executable_release);
  if (h->struct_size >= offsetof(axle_hal_plugin_t, submit) + sizeof(void*))
    CU_ASSERT_PTR_NOT_NULL(t->submit);
  /* A plugin claiming native artifacts must implement both directions. */
  if (h->features & AXLE_HAL_FEATURE_SERIALIZE) {
    CU_ASSERT_TRUE(h->struct_size >= offsetof(axle_hal_plugin_t, executable_load) + sizeof(void*));
    CU_ASSERT_PTR_NOT_NULL(t->executable_serialize);
    CU_ASSERT_PTR_NOT_NULL(t->executable_load);
  }
  /* The answer is stable: asking twice gives the same header. */
  const axle_hal_plugin_t* again = G.entry(AXLE_HAL_ABI_VERSION, cts_host());
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(again->header.abi_version, h->abi_version);
  CU_ASSERT_EQUAL(again->header.struct_size, h->struct_size);
  CU_ASSERT_STRING_EQUAL(again->header.name, h->name);
}

static void test_abi_older_core(void) {
  /* ABI 0 never existed: the plugin can speak nothing <= 0 and must decline,
   * ideally saying why. */
  CU_ASSERT_PTR_NOT_NULL_FATAL(G.entry);
  cts_message_clear();
  const axle_hal_plugin_t* t = G.entry(0, cts_host());
  CU_ASSERT_PTR_NULL(t);
  if (!t && !cts_message()[0])
    cts_warn("entry(0) returned NULL without calling host->status_make (hal.h: it should)");
}

static void test_abi_newer_core(void) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(G.entry);
  const axle_hal_host_t* host = cts_host_newer();
  const axle_hal_plugin_t* t = G.entry(host->abi_version, host);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_TRUE(t->header.abi_version >= 1 && t->header.abi_version <= host->abi_version);
  if (t->header.abi_version != AXLE_HAL_ABI_VERSION) return; /* a later CTS tests that */
  axle_hal_plugin_state_t* st = NULL;
  CU_ASSERT_EQUAL_FATAL(t->init(host, &st), AXLE_HAL_OK);
  uint32_t n = 0;
  CU_ASSERT_EQUAL(t->device_count(st, &n), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(n, G.dev_count);
  if (t->shutdown) t->shutdown(st);
}

static void test_init_twice(void) {
  /* Two runtimes in one process each init the plugin: states are independent. */
  CU_ASSERT_PTR_NOT_NULL_FATAL(G.t);
  axle_hal_plugin_state_t* s1 = NULL;
  axle_hal_plugin_state_t* s2 = NULL;
  CU_ASSERT_EQUAL_FATAL(G.t->init(cts_host(), &s1), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(G.t->init(cts_host(), &s2), AXLE_HAL_OK);
  uint32_t n1 = 0, n2 = 0;
  CU_ASSERT_EQUAL(G.t->device_count(s1, &n1), AXLE_HAL_OK);
  if (s2) CU_ASSERT_EQUAL(G.t->device_count(s2, &n2), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(n1, n2);
  if (G.t->shutdown) {
    G.t->shutdown(s2);
    G.t->shutdown(s1);
  }
}

/* ------------------------------------------------------------------------ */
/* Suite: devices.                                                           */
/* ------------------------------------------------------------------------ */

static void test_device_enumeration(void) {
  CU_ASSERT_TRUE(G.dev_count >= 1);
  for (uint32_t i = 0; i < G.dev_count; ++i) {
    const axle_hal_device_info_t* in = &G.devs[i].info;
    CU_ASSERT_TRUE(memchr(in->name, '\0', sizeof(in->name)) != NULL);
    CU_ASSERT_TRUE(printable(in->name, sizeof(in->name) - 1));
    CU_ASSERT_TRUE(memchr(in->description, '\0', sizeof(in->description)) != NULL);
    CU_ASSERT_TRUE(in->kind >= AXLE_HAL_DEVICE_CPU && in->kind <= AXLE_HAL_DEVICE_OTHER);
    CU_ASSERT_TRUE(in->emulated == 0 || in->emulated == 1);
    CU_ASSERT_NOT_EQUAL(in->dtype_mask, 0);
    CU_ASSERT_EQUAL(in->flags & ~(uint32_t)AXLE_HAL_DEVICE_FLAG_HOST_ACCESS, 0);
    for (uint32_t j = 0; j < i; ++j) CU_ASSERT_STRING_NOT_EQUAL(in->name, G.devs[j].info.name);
  }
  axle_hal_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  cts_message_clear();
  int32_t st = G.t->device_info(G.state, G.dev_count, &info);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  CU_ASSERT_TRUE(cts_message()[0] != '\0');
}

static void test_device_info_struct_size(void) {
  /* An older caller's struct ends before `kind`: the plugin either refuses it
   * or writes only the covered fields. */
  unsigned char buf[sizeof(axle_hal_device_info_t)];
  memset(buf, 0x5C, sizeof(buf));
  axle_hal_device_info_t* info = (axle_hal_device_info_t*)(void*)buf;
  uint32_t short_size = (uint32_t)offsetof(axle_hal_device_info_t, kind);
  info->struct_size = short_size;
  int32_t st = G.t->device_info(G.state, 0, info);
  if (st != AXLE_HAL_OK) return;
  CU_ASSERT_EQUAL(info->struct_size, short_size);
  CU_ASSERT_STRING_EQUAL(info->name, G.devs[0].info.name);
  int intact = 1;
  for (size_t i = short_size; i < sizeof(buf); ++i)
    if (buf[i] != 0x5C) intact = 0;
  if (!intact) fprintf(stderr, "\n  device_info wrote past the caller's struct_size\n");
  CU_ASSERT_TRUE(intact);
}

static void test_device_open_again(void) {
  /* A second open of the same device (a second runtime) either works or says
   * BUSY; it must not disturb the first. */
  axle_hal_device_t* dev = NULL;
  cts_message_clear();
  int32_t st = G.t->device_open(G.state, 0, &dev);
  CU_ASSERT_TRUE(st == AXLE_HAL_OK || st == AXLE_HAL_BUSY);
  if (st == AXLE_HAL_OK) {
    CU_ASSERT_PTR_NOT_NULL(dev);
    if (HAS(device_close)) G.t->device_close(dev);
  } else {
    CU_ASSERT_PTR_NULL(dev);
    CU_ASSERT_TRUE(cts_message()[0] != '\0');
  }
  /* Out of range. */
  dev = NULL;
  st = G.t->device_open(G.state, G.dev_count, &dev);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  CU_ASSERT_PTR_NULL(dev);
}

/* ------------------------------------------------------------------------ */
/* Suite: memory.                                                            */
/* ------------------------------------------------------------------------ */

static void fill_pattern(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)(i * 7u + seed * 13u + 3u);
}
static int check_pattern(const uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (uint8_t)(i * 7u + seed * 13u + 3u)) return 0;
  return 1;
}

static void test_memory_allocate_map(void) {
  if (!G.can_run) return; /* memory functions missing: failed in "header sanity" */
  static const uint64_t sizes[] = {1, 64, 4096, 1u << 20};
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    axle_hal_device_t* dev = G.devs[d].dev;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
      axle_hal_memory_t* m = NULL;
      int32_t st = G.t->memory_allocate(dev, sizes[k], 64, &m);
      CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
      if (st != AXLE_HAL_OK) continue;
      void* p = NULL;
      CU_ASSERT_EQUAL(G.t->memory_map(dev, m, &p), AXLE_HAL_OK);
      CU_ASSERT_PTR_NOT_NULL(p);
      if (p) {
        /* On an emulator the mapping is the memory, so alignment shows. */
        if (G.devs[d].info.emulated) CU_ASSERT_EQUAL((uintptr_t)p % 64, 0);
        fill_pattern((uint8_t*)p, (size_t)sizes[k], (unsigned)k);
        if (HAS(memory_unmap)) G.t->memory_unmap(dev, m);
        p = NULL;
        CU_ASSERT_EQUAL(G.t->memory_map(dev, m, &p), AXLE_HAL_OK);
        if (p) CU_ASSERT_TRUE(check_pattern((const uint8_t*)p, (size_t)sizes[k], (unsigned)k));
        if (HAS(memory_unmap)) G.t->memory_unmap(dev, m);
      }
      G.t->memory_free(dev, m);
    }
    /* Zero bytes: either refused with a message or a valid (empty) memory. */
    axle_hal_memory_t* z = NULL;
    cts_message_clear();
    int32_t st = G.t->memory_allocate(dev, 0, 64, &z);
    if (st == AXLE_HAL_OK)
      G.t->memory_free(dev, z);
    else
      CU_ASSERT_TRUE(cts_message()[0] != '\0');
    /* Many live allocations, freed out of order. */
    axle_hal_memory_t* many[64] = {0};
    for (int i = 0; i < 64; ++i) {
      CU_ASSERT_EQUAL(G.t->memory_allocate(dev, (uint64_t)(i + 1) * 96, 16, &many[i]), AXLE_HAL_OK);
    }
    for (int i = 0; i < 64; i += 2) G.t->memory_free(dev, many[i]);
    for (int i = 63; i > 0; i -= 2) G.t->memory_free(dev, many[i]);
  }
}

static void test_memory_copy(void) {
  if (!G.can_run) return; /* memory functions missing: failed in "header sanity" */
  if (!HAS(memory_copy)) {
    fprintf(stderr, "\n  memory_copy not implemented (NULL): the core copies through map\n");
    return;
  }
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    axle_hal_device_t* dev = G.devs[d].dev;
    axle_hal_memory_t *src = NULL, *dst = NULL;
    CU_ASSERT_EQUAL_FATAL(G.t->memory_allocate(dev, 4096, 64, &src), AXLE_HAL_OK);
    CU_ASSERT_EQUAL_FATAL(G.t->memory_allocate(dev, 4096, 64, &dst), AXLE_HAL_OK);
    void *ps = NULL, *pd = NULL;
    G.t->memory_map(dev, src, &ps);
    G.t->memory_map(dev, dst, &pd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pd);
    fill_pattern((uint8_t*)ps, 4096, 5);
    memset(pd, 0, 4096);
    if (HAS(memory_unmap)) {
      G.t->memory_unmap(dev, src);
      G.t->memory_unmap(dev, dst);
    }
    CU_ASSERT_EQUAL(G.t->memory_copy(dev, dst, 17, src, 5, 100), AXLE_HAL_OK);
    CU_ASSERT_EQUAL(G.t->memory_copy(dev, dst, 4000, src, 3996, 96), AXLE_HAL_OK); /* to the end */
    CU_ASSERT_EQUAL(G.t->memory_copy(dev, dst, 0, src, 0, 0), AXLE_HAL_OK);       /* empty */
    G.t->memory_map(dev, dst, &pd);
    G.t->memory_map(dev, src, &ps);
    if (pd && ps) {
      const uint8_t* D = (const uint8_t*)pd;
      const uint8_t* S = (const uint8_t*)ps;
      int ok = 1;
      for (int i = 0; i < 4096; ++i) {
        uint8_t want = 0;
        if (i >= 17 && i < 117) want = S[i - 17 + 5];
        if (i >= 4000) want = S[i - 4000 + 3996];
        if (D[i] != want) ok = 0;
      }
      CU_ASSERT_TRUE(ok);
    }
    if (HAS(memory_unmap)) {
      G.t->memory_unmap(dev, src);
      G.t->memory_unmap(dev, dst);
    }
    /* Bounds: every one of these must be refused with a message, including
     * offsets chosen so that a naive offset + size wraps around. */
    struct {
      uint64_t doff, soff, size;
    } bad[] = {{0, 0, 4097}, {4090, 0, 10}, {0, 4090, 10}, {UINT64_MAX - 2, 0, 5},
               {0, UINT64_MAX - 2, 5}, {1, 1, UINT64_MAX}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); ++k) {
      cts_message_clear();
      int32_t st = G.t->memory_copy(dev, dst, bad[k].doff, src, bad[k].soff, bad[k].size);
      CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
      if (st != AXLE_HAL_OK) CU_ASSERT_TRUE(cts_message()[0] != '\0');
    }
    G.t->memory_free(dev, src);
    G.t->memory_free(dev, dst);
  }
}

static void test_memory_import(void) {
  if (!G.can_run) return; /* memory functions missing: failed in "header sanity" */
  if (!HAS(memory_import)) {
    fprintf(stderr, "\n  memory_import not implemented (NULL): the core stages host memory\n");
    return;
  }
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    axle_hal_device_t* dev = G.devs[d].dev;
    uint8_t* host = (uint8_t*)aligned_alloc(64, 4096);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    fill_pattern(host, 4096, 9);
    axle_hal_memory_t* m = NULL;
    int32_t st = G.t->memory_import(dev, host, 4096, &m);
    CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
    if (st == AXLE_HAL_OK) {
      void* p = NULL;
      CU_ASSERT_EQUAL(G.t->memory_map(dev, m, &p), AXLE_HAL_OK);
      if (p) {
        CU_ASSERT_TRUE(check_pattern((const uint8_t*)p, 4096, 9));
        ((uint8_t*)p)[100] = 0x42; /* writes through the mapping reach the caller */
        if (HAS(memory_unmap)) G.t->memory_unmap(dev, m);
        CU_ASSERT_EQUAL(host[100], 0x42);
        host[100] = (uint8_t)(100 * 7u + 9 * 13u + 3u);
      }
      if (HAS(memory_copy)) {
        axle_hal_memory_t* a = NULL;
        CU_ASSERT_EQUAL(G.t->memory_allocate(dev, 4096, 64, &a), AXLE_HAL_OK);
        if (a) {
          CU_ASSERT_EQUAL(G.t->memory_copy(dev, a, 0, m, 0, 4096), AXLE_HAL_OK);
          void* pa = NULL;
          G.t->memory_map(dev, a, &pa);
          if (pa) CU_ASSERT_TRUE(check_pattern((const uint8_t*)pa, 4096, 9));
          if (HAS(memory_unmap)) G.t->memory_unmap(dev, a);
          G.t->memory_free(dev, a);
        }
      }
      G.t->memory_free(dev, m);
      /* Freeing an import must not free the caller's memory. */
      CU_ASSERT_TRUE(check_pattern(host, 4096, 9));
    }
    free(host);
  }
}

/* ------------------------------------------------------------------------ */
/* Suite: capability query.                                                  */
/* ------------------------------------------------------------------------ */

static void test_probe_ops(void) {
  int any = 0;
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    cts_dev_t* dev = &G.devs[d];
    for (int k = 0; k < 3; ++k) {
      int32_t st = AXLE_HAL_UNSUPPORTED;
      for (int f = 0; f < CTS_FORMS && st != AXLE_HAL_OK; ++f) {
        cts_graph_t* g = graph_new(k_probe_ops[k], f, 0, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        char reason[256], mode[64];
        memset(reason, 0, sizeof(reason));
        st = G.t->node_supported(dev->dev, &g->g, 0, reason, sizeof(reason));
        dev->form[k] = f;
        graph_mode(g, mode, sizeof(mode));
        if (st == AXLE_HAL_OK) {
          /* A plugin may say how well it carries the op even when it accepts. */
          fprintf(stderr, "\n  %s: %s %s: supported, %s%s%s", dev->info.name, k_probe_ops[k],
                  k_forms[f].text, mode, reason[0] ? "; " : "", reason);
          any = 1;
        } else {
          fprintf(stderr, "\n  %s: %s %s: declined: %s", dev->info.name, k_probe_ops[k],
                  k_forms[f].text, reason);
          /* Declining is fine; declining without a reason is not. */
          CU_ASSERT_TRUE(reason[0] != '\0');
          CU_ASSERT_TRUE(memchr(reason, '\0', sizeof(reason)) != NULL);
        }
        free(g);
      }
      dev->probe_status[k] = st;
    }
  }
  fprintf(stderr, "\n");
  G.probed = 1;
  if (!any) cts_skip("compute checks");
}

static void test_unknown_op_declined(void) {
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    /* In the form the device takes, so that only the op or domain is wrong. */
    cts_graph_t* g = probe_graph(&G.devs[d], 0, 0, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    g->nodes[0].op_type = "AxleCtsNoSuchOp";
    char reason[256] = "";
    CU_ASSERT_NOT_EQUAL(G.t->node_supported(G.devs[d].dev, &g->g, 0, reason, sizeof(reason)),
                        AXLE_HAL_OK);
    CU_ASSERT_TRUE(reason[0] != '\0');
    /* Same op name in a foreign domain is a different op. */
    g->nodes[0].op_type = "Relu";
    g->nodes[0].domain = "com.example.axle_cts";
    reason[0] = '\0';
    int32_t st = G.t->node_supported(G.devs[d].dev, &g->g, 0, reason, sizeof(reason));
    if (st == AXLE_HAL_OK)
      fprintf(stderr, "\n  %s accepts Relu from domain com.example.axle_cts\n", G.devs[d].info.name);
    CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
    free(g);
  }
}

static void test_reason_buffer_small(void) {
  /* The reason is truncated to reason_size, always NUL-terminated. */
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    /* In the form the device takes, so that only the op or domain is wrong. */
    cts_graph_t* g = probe_graph(&G.devs[d], 0, 0, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    g->nodes[0].op_type = "AxleCtsNoSuchOp";
    char buf[32];
    memset(buf, 0x7F, sizeof(buf));
    CU_ASSERT_NOT_EQUAL(G.t->node_supported(G.devs[d].dev, &g->g, 0, buf, 8), AXLE_HAL_OK);
    CU_ASSERT_TRUE(memchr(buf, '\0', 8) != NULL);
    for (int i = 8; i < 32; ++i) CU_ASSERT_EQUAL(buf[i], 0x7F);
    free(g);
  }
}

/* ------------------------------------------------------------------------ */
/* Suite: compile and submit.                                                */
/* ------------------------------------------------------------------------ */

static void test_run_each_op(void) {
  if (!G.can_run) return;
  int ran = 0;
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    for (int k = 0; k < 3; ++k) {
      if (G.devs[d].probe_status[k] != AXLE_HAL_OK) continue;
      cts_graph_t* g = probe_graph(&G.devs[d], k, 0, 0);
      axle_hal_executable_t* exe = NULL;
      int32_t st = graph_compile(&G.devs[d], g, 0, &exe);
      if (st != AXLE_HAL_OK)
        fprintf(stderr, "\n  %s: compile %s: %d: %s\n", G.devs[d].info.name, g->op, st,
                cts_message());
      CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
      if (st == AXLE_HAL_OK) {
        CU_ASSERT_PTR_NOT_NULL(exe);
        /* The same executable, three runs, different data each time. */
        for (int v = 0; v < 3; ++v) CU_ASSERT_TRUE(run_once(&G.devs[d], g, exe, v * 5, 0));
        G.t->executable_release(exe);
        ++ran;
      }
      free(g);
    }
  }
  if (!ran) cts_skip("test_run_each_op");
}

static void test_run_imported_input(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_run_imported_input");
  if (!d) return;
  if (!HAS(memory_import)) return;
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  CU_ASSERT_TRUE(run_once(d, g, exe, 2, 1));
  G.t->executable_release(exe);
  free(g);
}

static void test_run_host_ptr_bindings(void) {
  if (!G.can_run) return;
  /* Devices that read host memory directly (AXLE_HAL_DEVICE_FLAG_HOST_ACCESS)
   * must accept {memory NULL, offset, host_ptr} bindings. */
  int ran = 0;
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    cts_dev_t* dev = &G.devs[d];
    if (!(dev->info.flags & AXLE_HAL_DEVICE_FLAG_HOST_ACCESS)) continue;
    for (int k = 0; k < 3; ++k) {
      if (dev->probe_status[k] != AXLE_HAL_OK) continue;
      cts_graph_t* g = probe_graph(dev, k, 1, 0);
      axle_hal_executable_t* exe = NULL;
      CU_ASSERT_EQUAL_FATAL(graph_compile(dev, g, 0, &exe), AXLE_HAL_OK);
      cts_run_t r;
      memset(&r, 0, sizeof(r));
      r.d = dev;
      probe_inputs(r.a, r.b, 9);
      uint8_t* host[SLOTS];
      for (int s = 0; s < SLOTS; ++s) {
        host[s] = (uint8_t*)aligned_alloc(64, (size_t)k_slot_size[s]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(host[s]);
        memset(host[s], CTS_CANARY, (size_t)k_slot_size[s]);
      }
      memcpy(host[SLOT_IN] + k_bind_offset[SLOT_IN] + OFF_A, r.a, CTS_BYTES);
      memcpy(host[SLOT_IN] + k_bind_offset[SLOT_IN] + OFF_B, r.b, CTS_BYTES);
      axle_hal_binding_t bind[SLOTS];
      for (int s = 0; s < SLOTS; ++s) bind[s] = (axle_hal_binding_t){NULL, k_bind_offset[s], host[s]};
      cts_token_init(&r.token);
      r.token_live = 1;
      axle_hal_submit_info_t si = {sizeof(si), exe, SLOTS, bind, &r.token, NULL, 0, NULL};
      cts_message_clear();
      int32_t st = G.t->submit(dev->dev, &si);
      if (st != AXLE_HAL_OK) fprintf(stderr, "\n  host_ptr submit: %d: %s\n", st, cts_message());
      CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
      if (st == AXLE_HAL_OK) {
        CU_ASSERT_EQUAL(run_wait(&r), AXLE_HAL_OK);
        float y[CTS_N];
        memcpy(y, host[SLOT_OUT] + k_bind_offset[SLOT_OUT] + OFF_Y, CTS_BYTES);
        CU_ASSERT_TRUE(output_ok(g, r.a, r.b, y));
        CU_ASSERT_EQUAL(host[SLOT_OUT][0], CTS_CANARY);
        CU_ASSERT_EQUAL(host[SLOT_OUT][k_bind_offset[SLOT_OUT] + OFF_Y - 1], CTS_CANARY);
        CU_ASSERT_EQUAL(host[SLOT_OUT][k_bind_offset[SLOT_OUT] + OFF_Y + CTS_BYTES], CTS_CANARY);
        ++ran;
      }
      run_free(&r);
      for (int s = 0; s < SLOTS; ++s) free(host[s]);
      G.t->executable_release(exe);
      free(g);
    }
  }
  if (!ran) fprintf(stderr, "\n  no device with HOST_ACCESS: host_ptr bindings not exercised\n");
}

static void test_run_constant_operand(void) {
  if (!G.can_run) return;
  int ran = 0, binary = 0;
  for (uint32_t d = 0; d < G.dev_count; ++d) {
    for (int k = 1; k < 3; ++k) { /* binary ops only */
      if (G.devs[d].probe_status[k] != AXLE_HAL_OK) continue;
      ++binary;
      cts_graph_t* g = probe_graph(&G.devs[d], k, 0, 1);
      char reason[256] = "";
      if (G.t->node_supported(G.devs[d].dev, &g->g, 0, reason, sizeof(reason)) != AXLE_HAL_OK) {
        fprintf(stderr, "\n  %s: %s with a constant operand declined: %s\n", G.devs[d].info.name,
                g->op, reason);
        free(g);
        continue;
      }
      axle_hal_executable_t* exe = NULL;
      int32_t st = graph_compile(&G.devs[d], g, 0, &exe);
      CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
      if (st == AXLE_HAL_OK) {
        CU_ASSERT_TRUE(run_once(&G.devs[d], g, exe, 1, 0));
        G.t->executable_release(exe);
        ++ran;
      }
      free(g);
    }
  }
  if (!binary)
    fprintf(stderr, "\n  no binary probe op (Add/Mul) supported: constant operands not run\n");
  else if (!ran)
    fprintf(stderr, "\n  every binary probe op declined a constant operand (above): not run\n");
}

static void test_run_chain(void) {
  /* Two nodes in one executable: the intermediate lives in slot 0. */
  int op;
  cts_dev_t* d = compute_target(&op, "test_run_chain");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, 0);
  axle_hal_executable_t* exe = NULL;
  int32_t st = graph_compile(d, g, 0, &exe);
  if (st != AXLE_HAL_OK) fprintf(stderr, "\n  compile chain: %d: %s\n", st, cts_message());
  CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK) {
    CU_ASSERT_TRUE(run_once(d, g, exe, 3, 0));
    G.t->executable_release(exe);
  }
  free(g);
}

#define CTS_INFLIGHT 8

static void test_many_in_flight(void) {
  /* submit() may be called again before earlier work completes; each
   * completion arrives exactly once with its own results. */
  int op;
  cts_dev_t* d = compute_target(&op, "test_many_in_flight");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  cts_run_t* runs = (cts_run_t*)calloc(CTS_INFLIGHT, sizeof(cts_run_t));
  int prepared[CTS_INFLIGHT] = {0}, submitted[CTS_INFLIGHT] = {0};
  for (int i = 0; i < CTS_INFLIGHT; ++i) {
    prepared[i] = run_prepare(&runs[i], d, i, 0);
    if (prepared[i]) submitted[i] = run_submit(&runs[i], exe, NULL, 0, NULL, SLOTS) == AXLE_HAL_OK;
    CU_ASSERT_TRUE(submitted[i]);
  }
  for (int i = 0; i < CTS_INFLIGHT; ++i) {
    if (!submitted[i]) continue;
    CU_ASSERT_EQUAL(run_wait(&runs[i]), AXLE_HAL_OK);
    run_verify(&runs[i], g);
  }
  struct timespec ts = {0, 20 * 1000000L};
  nanosleep(&ts, NULL);
  for (int i = 0; i < CTS_INFLIGHT; ++i) {
    if (submitted[i]) CU_ASSERT_EQUAL(cts_token_count(&runs[i].token), 1);
    if (prepared[i]) run_free(&runs[i]);
  }
  free(runs);
  G.t->executable_release(exe);
  free(g);
}

typedef struct {
  cts_dev_t* d;
  const cts_graph_t* g;
  axle_hal_executable_t* exe;
  int id;
  int failures;
} cts_thread_arg_t;

/* CUnit assertions are not thread-safe: workers count failures and the main
 * thread asserts on the count. */
static void* submit_thread(void* p) {
  cts_thread_arg_t* a = (cts_thread_arg_t*)p;
  for (int i = 0; i < 4; ++i) {
    cts_run_t r;
    memset(&r, 0, sizeof(r));
    r.d = a->d;
    probe_inputs(r.a, r.b, a->id * 10 + i);
    int ok = 1;
    for (int s = 0; s < SLOTS && ok; ++s) {
      void* m = NULL;
      ok = G.t->memory_allocate(a->d->dev, k_slot_size[s], 64, &r.mem[s]) == AXLE_HAL_OK &&
           G.t->memory_map(a->d->dev, r.mem[s], &m) == AXLE_HAL_OK && m;
      if (!ok) break;
      memset(m, CTS_CANARY, (size_t)k_slot_size[s]);
      if (s == SLOT_IN) {
        memcpy((uint8_t*)m + k_bind_offset[s] + OFF_A, r.a, CTS_BYTES);
        memcpy((uint8_t*)m + k_bind_offset[s] + OFF_B, r.b, CTS_BYTES);
      }
      if (HAS(memory_unmap)) G.t->memory_unmap(a->d->dev, r.mem[s]);
    }
    cts_token_init(&r.token);
    r.token_live = 1;
    axle_hal_binding_t bind[SLOTS];
    for (int s = 0; s < SLOTS; ++s) bind[s] = (axle_hal_binding_t){r.mem[s], k_bind_offset[s], NULL};
    axle_hal_submit_info_t si = {sizeof(si), a->exe, SLOTS, bind, &r.token, NULL, 0, NULL};
    if (ok) ok = G.t->submit(a->d->dev, &si) == AXLE_HAL_OK;
    if (ok) ok = cts_token_wait(&r.token, CTS_WAIT_MS) && r.token.status == AXLE_HAL_OK;
    if (ok) {
      float y[CTS_N];
      void* m = NULL;
      ok = G.t->memory_map(a->d->dev, r.mem[SLOT_OUT], &m) == AXLE_HAL_OK && m;
      if (ok) {
        memcpy(y, (uint8_t*)m + k_bind_offset[SLOT_OUT] + OFF_Y, CTS_BYTES);
        ok = output_ok(a->g, r.a, r.b, y);
        if (HAS(memory_unmap)) G.t->memory_unmap(a->d->dev, r.mem[SLOT_OUT]);
      }
    }
    if (!ok) ++a->failures;
    run_free(&r);
  }
  return NULL;
}

static void test_submit_from_threads(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_submit_from_threads");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  pthread_t th[4];
  cts_thread_arg_t args[4];
  for (int i = 0; i < 4; ++i) {
    args[i] = (cts_thread_arg_t){d, g, exe, i, 0};
    pthread_create(&th[i], NULL, submit_thread, &args[i]);
  }
  int failures = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  CU_ASSERT_EQUAL(failures, 0);
  G.t->executable_release(exe);
  free(g);
}

static int names_plugin_or_device(const char* msg, const cts_dev_t* d) {
  return strstr(msg, d->info.name) || strstr(msg, G.t->header.name);
}

static void test_compile_errors(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_compile_errors");
  if (!d) return;
  /* A tensor without a location cannot be placed: compile must say so. */
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  int32_t st = graph_compile(d, g, 1, &exe);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK) {
    G.t->executable_release(exe);
  } else {
    CU_ASSERT_PTR_NULL(exe);
    CU_ASSERT_TRUE(cts_message()[0] != '\0');
    if (!names_plugin_or_device(cts_message(), d))
      cts_warn("compile error message does not name the plugin or device: '%s'", cts_message());
  }
  free(g);
  /* An op the plugin declined must not compile either. */
  g = probe_graph(d, op, 0, 0);
  g->nodes[0].op_type = "AxleCtsNoSuchOp";
  exe = NULL;
  st = graph_compile(d, g, 0, &exe);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK)
    G.t->executable_release(exe);
  else
    CU_ASSERT_TRUE(cts_message()[0] != '\0');
  free(g);
}

static void test_submit_errors(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_submit_errors");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  cts_run_t r;
  if (run_prepare(&r, d, 0, 0)) {
    /* Fewer bindings than slots: refused synchronously, with a message, and
     * complete() is never called for a failed submit. */
    int32_t st = run_submit(&r, exe, NULL, 0, NULL, 1);
    CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
    if (st != AXLE_HAL_OK) {
      CU_ASSERT_TRUE(cts_message()[0] != '\0');
      CU_ASSERT_FALSE(cts_token_wait(&r.token, 50));
    } else {
      cts_token_wait(&r.token, CTS_WAIT_MS);
    }
    run_free(&r);
  }
  G.t->executable_release(exe);
  free(g);
}

/* ------------------------------------------------------------------------ */
/* Suite: cancel, deadline, reset, status.                                   */
/* ------------------------------------------------------------------------ */

/* Submits one run with the given controls and returns its final status
 * (submit failures count as the status returned by submit). */
static int32_t controlled_run(cts_dev_t* d, const cts_graph_t* g, axle_hal_executable_t* exe,
                              volatile int32_t* flag, uint64_t deadline, int call_cancel) {
  cts_run_t r;
  if (!run_prepare(&r, d, 4, 0)) return -1;
  int32_t st = run_submit(&r, exe, flag, deadline, NULL, SLOTS);
  if (st == AXLE_HAL_OK) {
    if (call_cancel && HAS(cancel)) {
      int32_t cs = G.t->cancel(d->dev, &r.token);
      CU_ASSERT_TRUE(cs == AXLE_HAL_OK || cs == AXLE_HAL_NOT_FOUND);
    }
    st = run_wait(&r);
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    CU_ASSERT_EQUAL(cts_token_count(&r.token), 1);
    if (st == AXLE_HAL_OK) run_verify(&r, g); /* not cancelled in time: then it must be right */
  }
  run_free(&r);
  return st;
}

static void test_cancel_flag_preset(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_cancel_flag_preset");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  volatile int32_t flag = 1;
  int32_t st = controlled_run(d, g, exe, &flag, 0, 0);
  fprintf(stderr, "\n  preset cancel flag -> %d\n", st);
  if (G.strict_cancel) {
    CU_ASSERT_EQUAL(st, AXLE_HAL_CANCELLED);
  } else {
    CU_ASSERT_TRUE(st == AXLE_HAL_CANCELLED || st == AXLE_HAL_OK);
  }
  G.t->executable_release(exe);
  free(g);
}

static void test_cancel_call(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_cancel_call");
  if (!d) return;
  if (!HAS(cancel)) {
    fprintf(stderr, "\n  cancel() not implemented (NULL): the core relies on cancel_flag\n");
    return;
  }
  cts_graph_t* g = probe_graph(d, op, 1, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  volatile int32_t flag = 0;
  int32_t st = controlled_run(d, g, exe, &flag, 0, 1);
  fprintf(stderr, "\n  cancel() right after submit -> %d\n", st);
  if (G.strict_cancel) {
    CU_ASSERT_EQUAL(st, AXLE_HAL_CANCELLED);
  } else {
    CU_ASSERT_TRUE(st == AXLE_HAL_CANCELLED || st == AXLE_HAL_OK);
  }
  /* A token the plugin never saw (or that finished long ago). */
  cts_token_t stranger;
  cts_token_init(&stranger);
  int32_t cs = G.t->cancel(d->dev, &stranger);
  CU_ASSERT_TRUE(cs == AXLE_HAL_OK || cs == AXLE_HAL_NOT_FOUND);
  CU_ASSERT_EQUAL(cts_token_count(&stranger), 0);
  cts_token_destroy(&stranger);
  /* The device still works afterwards. */
  CU_ASSERT_TRUE(run_once(d, g, exe, 8, 0));
  G.t->executable_release(exe);
  free(g);
}

static void test_deadline_past(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_deadline_past");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  int32_t st = controlled_run(d, g, exe, NULL, cts_now_ns() > 1 ? cts_now_ns() - 1 : 1, 0);
  fprintf(stderr, "\n  deadline in the past -> %d\n", st);
  if (G.strict_cancel) {
    CU_ASSERT_EQUAL(st, AXLE_HAL_TIMEOUT);
  } else {
    CU_ASSERT_TRUE(st == AXLE_HAL_TIMEOUT || st == AXLE_HAL_OK);
  }
  /* A far deadline changes nothing. */
  st = controlled_run(d, g, exe, NULL, cts_now_ns() + 3600ull * 1000000000ull, 0);
  CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
  G.t->executable_release(exe);
  free(g);
}

static void test_reset_and_status(void) {
  for (uint32_t i = 0; i < G.dev_count; ++i) {
    if (HAS(device_status)) CU_ASSERT_EQUAL(G.t->device_status(G.devs[i].dev), AXLE_HAL_OK);
    if (HAS(reset)) CU_ASSERT_EQUAL(G.t->reset(G.devs[i].dev), AXLE_HAL_OK);
    if (HAS(device_status)) CU_ASSERT_EQUAL(G.t->device_status(G.devs[i].dev), AXLE_HAL_OK);
  }
  int op;
  cts_dev_t* d = compute_target(&op, "test_reset_and_status");
  if (!d) return;
  /* An executable compiled before reset keeps working after it. */
  cts_graph_t* g = probe_graph(d, op, 0, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  CU_ASSERT_TRUE(run_once(d, g, exe, 1, 0));
  if (HAS(reset)) CU_ASSERT_EQUAL(G.t->reset(d->dev), AXLE_HAL_OK);
  CU_ASSERT_TRUE(run_once(d, g, exe, 2, 0));
  if (HAS(device_status)) CU_ASSERT_EQUAL(G.t->device_status(d->dev), AXLE_HAL_OK);
  G.t->executable_release(exe);
  free(g);
}

/* ------------------------------------------------------------------------ */
/* Suite: profiling.                                                         */
/* ------------------------------------------------------------------------ */

static void test_trace_events(void) {
  int op;
  cts_dev_t* d = compute_target(&op, "test_trace_events");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, 0);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  cts_run_t r;
  if (!run_prepare(&r, d, 6, 0)) {
    G.t->executable_release(exe);
    free(g);
    return;
  }
  cts_trace_t* tr = (cts_trace_t*)calloc(1, sizeof(*tr));
  cts_trace_init(tr, &r.token);
  uint64_t t_submit = cts_now_ns();
  CU_ASSERT_EQUAL(run_submit(&r, exe, NULL, 0, tr, SLOTS), AXLE_HAL_OK);
  CU_ASSERT_EQUAL(run_wait(&r), AXLE_HAL_OK);
  uint64_t t_done = r.token.completed_ns;
  int profiling = (G.t->header.features & AXLE_HAL_FEATURE_PROFILING) != 0;
  fprintf(stderr, "\n  %d trace event(s)%s\n", tr->count, profiling ? "" : " (no PROFILING feature)");
  if (profiling) CU_ASSERT_TRUE(tr->count >= 1);
  int node_events = 0;
  for (int i = 0; i < tr->count; ++i) {
    const cts_trace_event_t* e = &tr->events[i];
    CU_ASSERT_TRUE(e->struct_size >= offsetof(axle_hal_trace_event_t, track) + sizeof(int32_t));
    CU_ASSERT_TRUE(e->name[0] != '\0');
    /* Events describe this run: inside [submit, complete] on host->now_ns. */
    CU_ASSERT_TRUE(e->start_ns >= t_submit);
    CU_ASSERT_TRUE(e->start_ns + e->duration_ns <= t_done);
    CU_ASSERT_TRUE(e->track >= 0);
    /* trace_ctx belongs to the run: nothing may be recorded after complete(). */
    CU_ASSERT_FALSE(e->after_complete);
    if (e->has_args) {
      int ok = cts_json_valid(e->args, 1);
      if (!ok) fprintf(stderr, "\n  args_json is not a JSON object: %s\n", e->args);
      CU_ASSERT_TRUE(ok);
    }
    for (uint32_t n = 0; n < g->g.node_count; ++n)
      if (strcmp(e->name, g->names[n]) == 0) ++node_events;
  }
  if (profiling && node_events == 0)
    cts_warn("no trace event is named after a node ('%s', '%s')", g->names[0], g->names[1]);
  CU_ASSERT_EQUAL(tr->dropped, 0);
  cts_trace_destroy(tr);
  free(tr);
  run_free(&r);
  G.t->executable_release(exe);
  free(g);
}

/* ------------------------------------------------------------------------ */
/* Suite: native artifacts.                                                  */
/* ------------------------------------------------------------------------ */

static int has_artifacts(void) { return HAS(executable_serialize) && HAS(executable_load); }

static void test_serialize_roundtrip(void) {
  if (!has_artifacts()) {
    fprintf(stderr, "\n  executable_serialize/load not implemented\n");
    return;
  }
  int op;
  cts_dev_t* d = compute_target(&op, "test_serialize_roundtrip");
  if (!d) return;
  int binary = op_inputs(k_probe_ops[op]) == 2;
  cts_graph_t* g = probe_graph(d, op, 1, binary); /* chain + constant: every operand kind */
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  void* data = NULL;
  size_t size = 0;
  int32_t st = G.t->executable_serialize(exe, &data, &size);
  CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK) {
    CU_ASSERT_PTR_NOT_NULL(data);
    CU_ASSERT_TRUE(size > 0);
    /* The artifact is freed with host->free: it must come from host->alloc. */
    uint64_t bad = cts_bad_frees();
    /* Load it twice: once while the original lives, once after. */
    axle_hal_executable_t* loaded = NULL;
    st = G.t->executable_load(d->dev, data, size, &loaded);
    CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
    G.t->executable_release(exe);
    exe = NULL;
    if (st == AXLE_HAL_OK) {
      CU_ASSERT_TRUE(run_once(d, g, loaded, 2, 0));
      G.t->executable_release(loaded);
    }
    /* A copy in a fresh buffer, original scribbled: load must not keep
     * pointers into the caller's bytes. */
    void* copy = malloc(size);
    memcpy(copy, data, size);
    cts_host()->free(data);
    CU_ASSERT_EQUAL(cts_bad_frees(), bad);
    loaded = NULL;
    st = G.t->executable_load(d->dev, copy, size, &loaded);
    CU_ASSERT_EQUAL(st, AXLE_HAL_OK);
    memset(copy, 0xEE, size);
    free(copy);
    if (st == AXLE_HAL_OK) {
      CU_ASSERT_TRUE(run_once(d, g, loaded, 3, 0));
      G.t->executable_release(loaded);
    }
  }
  if (exe) G.t->executable_release(exe);
  free(g);
}

static void test_load_rejects_garbage(void) {
  if (!has_artifacts()) return;
  int op;
  cts_dev_t* d = compute_target(&op, "test_load_rejects_garbage");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, op_inputs(k_probe_ops[op]) == 2);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  void* data = NULL;
  size_t size = 0;
  CU_ASSERT_EQUAL_FATAL(G.t->executable_serialize(exe, &data, &size), AXLE_HAL_OK);
  G.t->executable_release(exe);

  /* Every truncation is an error: a loader that runs a partial artifact
   * would read garbage as weights or offsets. Copies are exact-size heap
   * blocks so ASan catches any read past the given size. */
  size_t limit = size < 4096 ? size : 4096;
  int accepted_truncations = 0;
  for (size_t n = 0; n < limit; ++n) {
    uint8_t* cut = (uint8_t*)malloc(n ? n : 1);
    memcpy(cut, data, n);
    axle_hal_executable_t* l = NULL;
    cts_message_clear();
    int32_t st = G.t->executable_load(d->dev, cut, n, &l);
    if (st == AXLE_HAL_OK) {
      ++accepted_truncations;
      G.t->executable_release(l);
    } else if (!cts_message()[0]) {
      CU_FAIL("executable_load failed without a message");
    }
    free(cut);
  }
  if (accepted_truncations)
    fprintf(stderr, "\n  %d truncated artifacts were accepted\n", accepted_truncations);
  CU_ASSERT_EQUAL(accepted_truncations, 0);

  /* Noise of the same size, and a damaged first byte (magic). */
  uint8_t* noise = (uint8_t*)malloc(size);
  uint32_t x = 12345u;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1103515245u + 12345u;
    noise[i] = (uint8_t)(x >> 16);
  }
  axle_hal_executable_t* l = NULL;
  int32_t st = G.t->executable_load(d->dev, noise, size, &l);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK) G.t->executable_release(l);
  memcpy(noise, data, size);
  noise[0] ^= 0xFF;
  l = NULL;
  st = G.t->executable_load(d->dev, noise, size, &l);
  CU_ASSERT_NOT_EQUAL(st, AXLE_HAL_OK);
  if (st == AXLE_HAL_OK) G.t->executable_release(l);
  free(noise);
  cts_host()->free(data);
  free(g);
}

static void test_load_mutations(void) {
  /* Every single-byte corruption of the first bytes either loads or is
   * refused; none may crash or read out of bounds (run under ASan). */
  if (!has_artifacts()) return;
  int op;
  cts_dev_t* d = compute_target(&op, "test_load_mutations");
  if (!d) return;
  cts_graph_t* g = probe_graph(d, op, 1, op_inputs(k_probe_ops[op]) == 2);
  axle_hal_executable_t* exe = NULL;
  CU_ASSERT_EQUAL_FATAL(graph_compile(d, g, 0, &exe), AXLE_HAL_OK);
  void* data = NULL;
  size_t size = 0;
  CU_ASSERT_EQUAL_FATAL(G.t->executable_serialize(exe, &data, &size), AXLE_HAL_OK);
  G.t->executable_release(exe);
  uint8_t* m = (uint8_t*)malloc(size);
  size_t limit = size < 1024 ? size : 1024;
  static const uint8_t flips[] = {0x01, 0x80, 0xFF};
  int accepted = 0, refused = 0;
  for (size_t i = 0; i < limit; ++i) {
    for (size_t f = 0; f < sizeof(flips); ++f) {
      memcpy(m, data, size);
      m[i] ^= flips[f];
      axle_hal_executable_t* l = NULL;
      if (G.t->executable_load(d->dev, m, size, &l) == AXLE_HAL_OK) {
        ++accepted;
        G.t->executable_release(l);
      } else {
        ++refused;
      }
    }
  }
  fprintf(stderr, "\n  %zu-byte artifact, %d mutations refused, %d accepted\n", size, refused,
          accepted);
  CU_ASSERT_TRUE(refused > 0);
  free(m);
  cts_host()->free(data);
  free(g);
}

/* ------------------------------------------------------------------------ */
/* Suite: teardown (runs last).                                              */
/* ------------------------------------------------------------------------ */

static void test_shutdown_no_leaks(void) {
  for (uint32_t i = 0; i < G.dev_count; ++i)
    if (HAS(device_close)) G.t->device_close(G.devs[i].dev);
  G.dev_count = 0;
  if (G.t->shutdown) G.t->shutdown(G.state);
  G.state = NULL;
  uint64_t left = cts_alloc_outstanding();
  if (left) fprintf(stderr, "\n  %llu host->alloc block(s) never freed\n", (unsigned long long)left);
  CU_ASSERT_EQUAL(left, 0);
  uint64_t bad = cts_bad_frees();
  if (bad)
    fprintf(stderr, "\n  %llu host->free call(s) on memory host->alloc did not return\n",
            (unsigned long long)bad);
  CU_ASSERT_EQUAL(bad, 0);
}

/* ------------------------------------------------------------------------ */

static int open_plugin(void) {
  G.lib = dlopen(G.path, RTLD_NOW | RTLD_LOCAL);
  if (!G.lib) {
    fprintf(stderr, "axle_cts: cannot load %s: %s\n", G.path, dlerror());
    return 0;
  }
  *(void**)&G.entry = dlsym(G.lib, AXLE_HAL_ENTRY_NAME);
  if (!G.entry) {
    fprintf(stderr, "axle_cts: %s: no '%s' symbol\n", G.path, AXLE_HAL_ENTRY_NAME);
    return 1; /* reported as a failure by test_entry_symbol */
  }
  G.t = G.entry(AXLE_HAL_ABI_VERSION, cts_host());
  if (!G.t) {
    fprintf(stderr, "axle_cts: %s: entry point declined ABI %u: %s\n", G.path,
            AXLE_HAL_ABI_VERSION, cts_message());
    return 1;
  }
  cts_message_clear();
  int32_t st = G.t->init ? G.t->init(cts_host(), &G.state) : AXLE_HAL_UNSUPPORTED;
  if (st != AXLE_HAL_OK) {
    fprintf(stderr, "axle_cts: %s: init failed: %d: %s\n", G.path, st, cts_message());
    G.t = NULL;
    return 1;
  }
  G.can_run = HAS(memory_allocate) && HAS(memory_free) && HAS(memory_map) &&
              HAS(executable_release) && HAS(submit) && HAS(device_close);
  uint32_t n = 0;
  if (G.t->device_count(G.state, &n) != AXLE_HAL_OK) n = 0;
  if (n > CTS_MAX_DEVICES) n = CTS_MAX_DEVICES;
  for (uint32_t i = 0; i < n; ++i) {
    cts_dev_t* d = &G.devs[G.dev_count];
    d->info.struct_size = sizeof(d->info);
    cts_message_clear();
    if (G.t->device_info(G.state, i, &d->info) != AXLE_HAL_OK ||
        G.t->device_open(G.state, i, &d->dev) != AXLE_HAL_OK) {
      fprintf(stderr, "axle_cts: device %u: %s\n", i, cts_message());
      continue;
    }
    for (int k = 0; k < 3; ++k) d->probe_status[k] = AXLE_HAL_UNSUPPORTED;
    ++G.dev_count;
  }
  fprintf(stderr, "axle_cts: %s: plugin '%s' (ABI %u, %u bytes, features 0x%llx), %u device(s)\n",
          G.path, G.t->header.name, G.t->header.abi_version, G.t->header.struct_size,
          (unsigned long long)G.t->header.features, G.dev_count);
  return 1;
}

typedef struct {
  const char* name;
  CU_TestFunc fn;
} cts_test_t;

static int add_suite(const char* name, const cts_test_t* tests, size_t n) {
  CU_pSuite s = CU_add_suite(name, NULL, NULL);
  if (!s) return 0;
  for (size_t i = 0; i < n; ++i)
    if (!CU_add_test(s, tests[i].name, tests[i].fn)) return 0;
  return 1;
}

#define SUITE(name, arr) add_suite(name, arr, sizeof(arr) / sizeof(arr[0]))

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so [--strict-cancel]\n", argv[0]);
    return 2;
  }
  G.path = argv[1];
  for (int i = 2; i < argc; ++i)
    if (strcmp(argv[i], "--strict-cancel") == 0) G.strict_cancel = 1;
  if (!open_plugin()) return 1;

  static const cts_test_t entry_tests[] = {
      {"entry symbol", test_entry_symbol},
      {"header sanity", test_header},
      {"ABI: older core declined", test_abi_older_core},
      {"ABI: newer core accepted", test_abi_newer_core},
      {"init twice, independent states", test_init_twice},
  };
  static const cts_test_t device_tests[] = {
      {"enumeration and info", test_device_enumeration},
      {"device_info honours struct_size", test_device_info_struct_size},
      {"open again / out of range", test_device_open_again},
  };
  static const cts_test_t memory_tests[] = {
      {"allocate, map, pattern", test_memory_allocate_map},
      {"copy and bounds", test_memory_copy},
      {"import", test_memory_import},
  };
  static const cts_test_t capability_tests[] = {
      {"probe Relu/Add/Mul", test_probe_ops},
      {"unknown op and foreign domain declined", test_unknown_op_declined},
      {"reason truncated to reason_size", test_reason_buffer_small},
  };
  static const cts_test_t compute_tests[] = {
      {"each supported op, locations honoured", test_run_each_op},
      {"imported input memory", test_run_imported_input},
      {"host_ptr bindings (HOST_ACCESS devices)", test_run_host_ptr_bindings},
      {"constant operand", test_run_constant_operand},
      {"two-node chain through slot 0", test_run_chain},
      {"many submissions in flight", test_many_in_flight},
      {"submit from several threads", test_submit_from_threads},
      {"compile errors carry messages", test_compile_errors},
      {"submit errors carry messages, no completion", test_submit_errors},
  };
  static const cts_test_t control_tests[] = {
      {"preset cancel flag", test_cancel_flag_preset},
      {"cancel() after submit", test_cancel_call},
      {"deadline", test_deadline_past},
      {"reset and device_status", test_reset_and_status},
  };
  static const cts_test_t profiling_tests[] = {
      {"trace events", test_trace_events},
  };
  static const cts_test_t artifact_tests[] = {
      {"serialize/load round trip", test_serialize_roundtrip},
      {"load rejects truncation and noise", test_load_rejects_garbage},
      {"load survives mutations", test_load_mutations},
  };
  static const cts_test_t teardown_tests[] = {
      {"close, shutdown, no leaked host memory", test_shutdown_no_leaks},
  };

  /* Decided before the run: the teardown suite clears G.state. */
  int init_failed = !G.t || !G.state;
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  int ok = SUITE("entry", entry_tests);
  if (G.t && G.state) {
    ok = ok && SUITE("devices", device_tests) && SUITE("memory", memory_tests) &&
         SUITE("capability", capability_tests) && SUITE("compute", compute_tests) &&
         SUITE("control", control_tests) && SUITE("profiling", profiling_tests) &&
         SUITE("artifact", artifact_tests) && SUITE("teardown", teardown_tests);
  }
  if (!ok) {
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  unsigned failed_tests = CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  if (G.state) { /* teardown did not run */
    for (uint32_t i = 0; i < G.dev_count; ++i)
      if (HAS(device_close)) G.t->device_close(G.devs[i].dev);
    if (G.t->shutdown) G.t->shutdown(G.state);
  }
  /* Keep the library mapped under ASan so leak reports can name its frames. */
#if !defined(__SANITIZE_ADDRESS__)
  if (G.lib) dlclose(G.lib);
#endif
  fprintf(stderr, "axle_cts: %s: %u failed assertion(s) in %u test(s), %d warning(s)%s\n", G.path,
          failures, failed_tests, G.warnings, G.skipped ? ", compute checks SKIPPED" : "");
  if (failures || init_failed) return 1;
  return G.skipped ? 77 : 0;
}
