/*
 * Tests of the optimised fp32 kernels: every ISA variant against the scalar
 * variant and against references computed here in double precision, on edge
 * shapes (partial tiles, K = 0, single rows/columns, few output pixels), in
 * every operand form the GEMM driver takes, with every epilogue, serially and
 * on real threads. Convolutions are checked against the reference kernels of
 * kernels/f32 (conv_direct_scalar, im2col_scalar), under each ISA in turn.
 */

#include "../../kernels/f32/gemm_internal.h"
#include "kernel_test.h"

/* ------------------------------------------------------------------------ */
/* References                                                                */
/* ------------------------------------------------------------------------ */

typedef struct ref_ep_t {
  int bias, residual, act; /* act: 0 none, 1 relu, 2 relu6, 3 leaky */
} ref_ep_t;

static const ref_ep_t k_eps[] = {{0, 0, 0}, {1, 0, 1}, {1, 1, 0}, {0, 1, 2}, {1, 1, 3}};

static void make_ep(const ref_ep_t* e, const float* bias, const float* res, size_t ldr,
                    axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_init(ep);
  ep->bias = e->bias ? bias : NULL;
  ep->residual = e->residual ? res : NULL;
  ep->ldr = ldr;
  if (e->act == 1) ep->min = 0.0f;
  if (e->act == 2) {
    ep->min = 0.0f;
    ep->max = 0.25f; /* tight, so that both bounds bite on these values */
  }
  if (e->act == 3) {
    ep->leaky = 1;
    ep->leaky_alpha = 0.1f;
  }
}

static float ref_act(double v, const axle_f32_epilogue_t* ep) {
  float f = (float)v;
  if (f < ep->min) f = ep->min;
  if (f > ep->max) f = ep->max;
  if (ep->leaky && f < 0.0f) f *= ep->leaky_alpha;
  return f;
}

/* ------------------------------------------------------------------------ */
/* GEMM micro-kernels and packing                                            */
/* ------------------------------------------------------------------------ */

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

static int have_avx2(void) { return axle_kernels_isa() >= AXLE_ISA_AVX2_FMA; }
static int have_avx512(void) { return axle_kernels_isa() >= AXLE_ISA_AVX512; }

/* One micro-kernel call against the double reference and, for an ISA
 * variant, against the scalar variant on the same C; B rows ldb floats apart
 * (NR: packed; more: read in place). */
static void ukernel_case(axle_f32_gemm_ukernel_fn uk, const char* name, size_t mr, size_t nr,
                         size_t kc, size_t ldb, uint32_t flags, const ref_ep_t* e) {
  float* a = kt_array(kc * MR);
  float* b = kt_array(kc * ldb);
  const size_t ldc = 19; /* wider than any tile, so strays would show */
  const size_t rows = (flags & AXLE_F32_GEMM_STORE_T) ? NR : MR;
  float* c = kt_array(rows * ldc);
  float* want = malloc(rows * ldc * sizeof(float));
  memcpy(want, c, rows * ldc * sizeof(float));
  float* bias = kt_array(40);
  float* res = kt_array(40 * 40);
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, 40, &ep);
  const size_t row0 = 3, col0 = 5;
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = 0; j < nr; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < kc; ++p) acc += (double)a[p * MR + i] * b[p * ldb + j];
      const int t = (flags & AXLE_F32_GEMM_STORE_T) != 0;
      float* w = t ? &want[j * ldc + i] : &want[i * ldc + j];
      if (flags & AXLE_F32_GEMM_ACCUMULATE) acc += *w;
      if (flags & AXLE_F32_GEMM_FINISH) {
        const size_t br = t ? col0 + j : row0 + i, bc = t ? row0 + i : col0 + j;
        if (ep.bias) acc += bias[br];
        if (ep.residual) acc += res[br * 40 + bc];
        *w = ref_act(acc, &ep);
      } else {
        *w = (float)acc;
      }
    }
  }
  float* scalar = malloc(rows * ldc * sizeof(float));
  memcpy(scalar, c, rows * ldc * sizeof(float));
  axle_f32_gemm_6x16__scalar(mr, nr, kc, a, b, ldb, scalar, ldc, flags, &ep, row0, col0);
  uk(mr, nr, kc, a, b, ldb, c, ldc, flags, &ep, row0, col0);
  char what[160];
  snprintf(what, sizeof what, "%s mr=%zu nr=%zu kc=%zu ldb=%zu flags=%u ep=%d%d%d", name, mr, nr,
           kc, ldb, flags, e->bias, e->residual, e->act);
  kt_close(what, c, want, rows * ldc, 1e-5, 1e-5 * (double)(kc + 1));
  if (uk != axle_f32_gemm_6x16__scalar) {
    strncat(what, " vs scalar", sizeof what - strlen(what) - 1);
    kt_close(what, c, scalar, rows * ldc, 1e-5, 1e-5 * (double)(kc + 1));
  }
  free(scalar);
  free(a);
  free(b);
  free(c);
  free(want);
  free(bias);
  free(res);
}

static void ukernel_all(axle_f32_gemm_ukernel_fn uk, const char* name) {
  static const uint32_t flag_sets[] = {
      0, AXLE_F32_GEMM_ACCUMULATE, AXLE_F32_GEMM_FINISH,
      AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH,
      AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T,
      AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T};
  /* K: empty, shorter than one unrolled step, odd and even remainders. */
  static const size_t kcs[] = {0, 1, 2, 3, 4, 5, 7, 33};
  for (size_t mr = 1; mr <= MR; ++mr)
    for (size_t nr = 1; nr <= NR; ++nr)
      for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ++ki)
        for (size_t fi = 0; fi < sizeof flag_sets / sizeof flag_sets[0]; ++fi)
          ukernel_case(uk, name, mr, nr, kcs[ki], NR, flag_sets[fi],
                       &k_eps[(mr + nr + ki + fi) % (sizeof k_eps / sizeof k_eps[0])]);
  /* Every epilogue on a full tile (the AVX2 kernel's register path) and a
   * narrow one (AVX-512: under a mask), with B packed and read in place (a
   * row stride that is no multiple of the vector). */
  for (size_t e = 0; e < sizeof k_eps / sizeof k_eps[0]; ++e)
    for (size_t ldb = NR; ldb <= NR + 5; ldb += 5)
      for (size_t fi = 0; fi < sizeof flag_sets / sizeof flag_sets[0]; ++fi)
        for (size_t nr = NR - 5; nr <= NR; nr += 5)
          ukernel_case(uk, name, MR - e % 2, nr, 17, ldb, flag_sets[fi], &k_eps[e]);
}

static void test_ukernel_scalar(void) { ukernel_all(axle_f32_gemm_6x16__scalar, "scalar"); }

static void test_ukernel_avx2(void) {
  if (!have_avx2()) {
    kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
    return;
  }
  ukernel_all(axle_f32_gemm_6x16__avx2_fma, "avx2_fma");
}

/* The AVX2 tile reading a blocked A in place (axle_f32_gemm_6x16_blocked__
 * avx2_fma) against the packed-A kernel on the same values, bit for bit
 * (the same FMAs in the same order), and the scalar one: every row count,
 * one to three K blocks, B packed and read in place, each flag set and
 * epilogue. The blocks lie apart with NaN between them, so a read past a
 * block's rows shows. */
static void blocked_case(size_t mr, size_t kc, size_t ldb, uint32_t flags, const ref_ep_t* e) {
  const size_t a_next = 16 * MR + 7;
  float* a = kt_array(kc * MR);
  float* blk = malloc((kc / 16 * a_next + 16 * MR) * sizeof(float));
  for (size_t i = 0; i < kc / 16 * a_next + 16 * MR; ++i) blk[i] = NAN;
  for (size_t p = 0; p < kc; ++p)
    for (size_t i = 0; i < MR; ++i) blk[p / 16 * a_next + 16 * i + p % 16] = a[p * MR + i];
  float* b = kt_array(kc * ldb);
  const size_t ldc = 19;
  const size_t rows = (flags & AXLE_F32_GEMM_STORE_T) ? NR : MR;
  float* c = kt_array(rows * ldc);
  float* packed = malloc(rows * ldc * sizeof(float));
  float* scalar = malloc(rows * ldc * sizeof(float));
  memcpy(packed, c, rows * ldc * sizeof(float));
  memcpy(scalar, c, rows * ldc * sizeof(float));
  float* bias = kt_array(40);
  float* res = kt_array(40 * 40);
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, 40, &ep);
  axle_f32_gemm_6x16__avx2_fma(mr, NR, kc, a, b, ldb, packed, ldc, flags, &ep, 3, 5);
  axle_f32_gemm_6x16__scalar(mr, NR, kc, a, b, ldb, scalar, ldc, flags, &ep, 3, 5);
  axle_f32_gemm_6x16_blocked__avx2_fma(mr, kc, blk, a_next, b, ldb, c, ldc, flags, &ep, 3, 5);
  char what[160];
  snprintf(what, sizeof what, "6x16 blocked avx2 mr=%zu kc=%zu ldb=%zu flags=%u ep=%d%d%d", mr, kc,
           ldb, flags, e->bias, e->residual, e->act);
  kt_close(what, c, packed, rows * ldc, 0.0, 0.0);
  kt_close(what, c, scalar, rows * ldc, 1e-5, 1e-5 * (double)(kc + 1));
  free(a);
  free(blk);
  free(b);
  free(c);
  free(packed);
  free(scalar);
  free(bias);
  free(res);
}

static void test_ukernel_avx2_blocked(void) {
  if (!have_avx2()) {
    kt_skip("no AVX2/FMA on this machine (or AXLE_KERNELS_ISA caps it)");
    return;
  }
  static const uint32_t flag_sets[] = {
      0, AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH, AXLE_F32_GEMM_FINISH,
      AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T,
      AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T};
  for (size_t mr = 1; mr <= MR; ++mr)
    for (size_t kc = 16; kc <= 48; kc += 16)
      for (size_t ldb = NR; ldb <= NR + 5; ldb += 5)
        for (size_t fi = 0; fi < sizeof flag_sets / sizeof flag_sets[0]; ++fi)
          blocked_case(mr, kc, ldb, flag_sets[fi],
                       &k_eps[(mr + kc / 16 + fi) % (sizeof k_eps / sizeof k_eps[0])]);
}

static void test_ukernel_avx512(void) {
  if (!have_avx512()) {
    kt_skip("no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)");
    return;
  }
  ukernel_all(axle_f32_gemm_6x16__avx512, "avx512");
}

/* The row-vector kernels (the driver's M = 1 path): every variant gives the
 * scalar one's bits, which match a double reference within rounding, on K
 * lengths around the four-way split and column counts around the panels,
 * storing and accumulating (four panels at a time and one: 64, 79, 1000);
 * columns past n stay untouched. */
static void gemv_case(axle_f32_gemv_fn fn, const char* name, size_t kb, size_t n, int acc) {
  const size_t panels = (n + NR - 1) / NR, width = panels * NR + 3;
  float* x = kt_array(kb);
  float* b = kt_array(kb * panels * NR);
  float* y = kt_array(width);
  float* ref = malloc(width * sizeof(float));
  float* want = malloc(width * sizeof(float));
  memcpy(ref, y, width * sizeof(float));
  memcpy(want, y, width * sizeof(float));
  for (size_t j = 0; j < n; ++j) {
    double v = acc ? want[j] : 0.0;
    for (size_t p = 0; p < kb; ++p) v += (double)x[p] * b[(j / NR) * kb * NR + p * NR + j % NR];
    want[j] = (float)v;
  }
  axle_f32_gemv_1x16__scalar(kb, n, x, b, ref, acc);
  fn(kb, n, x, b, y, acc);
  char what[120];
  snprintf(what, sizeof what, "gemv %s kb=%zu n=%zu acc=%d", name, kb, n, acc);
  kt_close(what, ref, want, width, 1e-5, 1e-6 * (double)(kb + 4));
  strncat(what, " vs scalar", sizeof what - strlen(what) - 1);
  kt_close(what, y, ref, width, 0.0, 0.0);
  free(x);
  free(b);
  free(y);
  free(ref);
  free(want);
}

static void test_gemv_variants(void) {
  static const size_t kbs[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256};
  static const size_t ns[] = {1, 15, 16, 17, 33, 64, 79, 1000};
  const struct {
    axle_f32_gemv_fn fn;
    const char* name;
    int (*usable)(void);
  } variants[] = {{axle_f32_gemv_1x16__scalar, "scalar", NULL},
                  {axle_f32_gemv_1x16__avx2_fma, "avx2_fma", have_avx2},
                  {axle_f32_gemv_1x16__avx512, "avx512", have_avx512}};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    if (variants[v].usable && !variants[v].usable()) {
      char why[120];
      snprintf(why, sizeof why, "gemv %s: not on this machine (or AXLE_KERNELS_ISA caps it)",
               variants[v].name);
      kt_skip(why);
      continue;
    }
    for (size_t k = 0; k < sizeof kbs / sizeof kbs[0]; ++k)
      for (size_t j = 0; j < sizeof ns / sizeof ns[0]; ++j)
        for (int acc = 0; acc <= 1; ++acc)
          gemv_case(variants[v].fn, variants[v].name, kbs[k], ns[j], acc);
  }
}

/* The tiles of a column taking shares of the next panels' prefetches
 * (AXLE_F32_GEMM_PREFETCH_SHARE) between them fetch every row a K loop
 * covers once, whatever the loop's length and rows per step; without a
 * share, one tile fetches them all in order. */
static void test_prefetch_shares(void) {
  int* seen = calloc(2 * 300 + 2 * 24 * 2, sizeof(int));
  for (size_t rows = 1; rows <= 2; ++rows)
    for (size_t count = 0; count <= 24; ++count)
      for (size_t steps = 0; steps <= 300; ++steps) {
        const size_t tiles = count > 1 ? count : 1, span = steps * rows;
        memset(seen, 0, (2 * 300 + 2 * 24 * 2) * sizeof(int));
        int order_ok = 1;
        for (size_t t = 0; t < tiles; ++t) {
          const uint32_t flags = AXLE_F32_GEMM_PREFETCH_B | AXLE_F32_GEMM_FINISH |
                                 (count ? AXLE_F32_GEMM_PREFETCH_SHARE(t, count) : 0u);
          axle_f32_gemm_share_t sh = axle_f32_gemm_share(flags, steps, rows);
          size_t row = sh.first;
          for (size_t p = 0; p < steps; ++p)
            if (axle_f32_gemm_share_due(&sh)) {
              if (count <= 1 && row != p * rows) order_ok = 0;
              for (size_t q = row; q < row + rows; ++q) seen[q]++;
              row += rows;
            }
        }
        size_t missed = 0, twice = 0;
        for (size_t q = 0; q < span; ++q) missed += seen[q] == 0, twice += seen[q] > 1;
        if (missed || twice || !order_ok) {
          fprintf(stderr, "\n  rows %zu count %zu steps %zu: %zu missed %zu twice%s\n", rows, count,
                  steps, missed, twice, order_ok ? "" : ", out of order");
          CU_FAIL_FATAL("prefetch shares");
        }
      }
  free(seen);
  /* The share bits leave the product alone (the kernels only prefetch), in
   * each ISA's kernel this CPU has (AVX2's tiles are instantiated apart for
   * shares). */
  const struct {
    axle_f32_gemm_ukernel_fn fn;
    int have;
  } kernels[] = {{axle_f32_gemm_6x16__avx2_fma, have_avx2()},
                 {axle_f32_gemm_6x16__avx512, have_avx512()}};
  for (size_t i = 0; i < 2; ++i) {
    if (!kernels[i].have) continue;
    ukernel_case(
        kernels[i].fn, "with a share", MR, NR, 33, NR,
        AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_PREFETCH_B | AXLE_F32_GEMM_PREFETCH_SHARE(2, 3),
        &k_eps[1]);
    ukernel_case(kernels[i].fn, "with a share, half width", MR - 1, NR / 2, 33, NR + 5,
                 AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_PREFETCH_B | AXLE_F32_GEMM_PREFETCH_A |
                     AXLE_F32_GEMM_PREFETCH_SHARE(4, 5),
                 &k_eps[2]);
  }
}

static void test_ukernel_nan_passes(void) {
  /* ReLU/Clip of NaN is NaN in ONNX: the clamp must not swallow it. */
  axle_f32_gemm_ukernel_fn uks[3] = {axle_f32_gemm_6x16__scalar, axle_f32_gemm_6x16__avx2_fma,
                                     axle_f32_gemm_6x16__avx512};
  for (int v = 0; v < 1 + have_avx2() + have_avx512(); ++v) {
    float a[MR] = {NAN, 1, 1, 1, 1, 1}, b[NR];
    for (int j = 0; j < NR; ++j) b[j] = 1.0f;
    float c[MR * NR];
    axle_f32_epilogue_t ep;
    axle_f32_epilogue_init(&ep);
    ep.min = 0.0f;
    ep.max = 6.0f;
    uks[v](MR, NR, 1, a, b, NR, c, NR, AXLE_F32_GEMM_FINISH, &ep, 0, 0);
    CU_ASSERT(isnan(c[0]));
    CU_ASSERT_EQUAL(c[NR], 1.0f);
  }
}

static void test_pack_b_variants(void) {
  if (!have_avx2()) {
    CU_PASS("no AVX2 on this machine");
    return;
  }
  for (size_t n = 1; n <= 40; n += 3) {
    for (size_t k = 1; k <= 21; k += 4) {
      for (int trans = 0; trans < 2; ++trans) {
        float* b = kt_array(k * n);
        const size_t sz = axle_f32_gemm_packed_b_size(k, n);
        float* x = kt_array(sz);
        float* y = kt_array(sz);
        const size_t rs = trans ? 1 : n, cs = trans ? k : 1;
        axle_f32_gemm_pack_b__scalar(k, n, b, rs, cs, x);
        axle_f32_gemm_pack_b__avx2(k, n, b, rs, cs, y);
        CU_ASSERT_EQUAL(memcmp(x, y, sz * sizeof(float)), 0);
        free(b);
        free(x);
        free(y);
      }
    }
  }
}

static void test_pack_a_variants(void) {
  /* The AVX2 packer must produce exactly the scalar packer's bytes. */
  if (!have_avx2()) {
    CU_PASS("no AVX2 on this machine");
    return;
  }
  for (size_t m = 1; m <= 14; ++m) {
    for (size_t k = 1; k <= 19; k += 3) {
      for (int trans = 0; trans < 2; ++trans) {
        float* a = kt_array(m * k);
        const size_t n = axle_f32_gemm_packed_a_size(m, k);
        float* x = kt_array(n);
        float* y = kt_array(n);
        const size_t rs = trans ? 1 : k, cs = trans ? m : 1;
        axle_f32_gemm_pack_a__scalar(m, k, 0.5f, a, rs, cs, x);
        axle_f32_gemm_pack_a__avx2(m, k, 0.5f, a, rs, cs, y);
        CU_ASSERT_EQUAL(memcmp(x, y, n * sizeof(float)), 0);
        free(a);
        free(x);
        free(y);
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* GEMM driver                                                               */
/* ------------------------------------------------------------------------ */

/* A generated operand served from a K-major matrix. */
typedef struct kmajor_t {
  const float* data;
  size_t ld;
} kmajor_t;

static void kmajor_gen(const void* ctx, size_t k0, size_t kc, size_t c0, size_t cols,
                       float* dst) {
  const kmajor_t* km = ctx;
  for (size_t p = 0; p < kc; ++p)
    memcpy(dst + p * cols, km->data + (k0 + p) * km->ld + c0, cols * sizeof(float));
}

/* FORM_BLOCKED: A only (axle_f32_gemm_operand_t.blocked). */
enum { FORM_ROW = 0, FORM_COL, FORM_PACKED, FORM_GEN, FORM_BLOCKED, FORM_COUNT };

/* A blocked by 16 along K (see axle_f32_gemm_operand_t), its blocks `bs`
 * floats apart, the padding between them NaN: a read past a block's rows
 * shows in C. */
static float* blocked_a(const float* a, size_t m, size_t k, size_t bs) {
  const size_t blocks = (k + 15) / 16, n = blocks * bs + 16 * m;
  float* blk = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) blk[i] = NAN;
  for (size_t i = 0; i < m; ++i)
    for (size_t p = 0; p < k; ++p) blk[p / 16 * bs + i * 16 + p % 16] = a[i * k + p];
  return blk;
}

/* C (m x n) = alpha A B with A and B in the given forms. */
/* ISA level to size the driver's scratch under, or -1: the running one. */
static int g_scratch_isa = -1;
/* Residual rows 0 apart (ldr = 0): one row added to every stored row. */
static int g_residual_row = 0;
/* A blocked A scaled by alpha (which makes the driver pack it). */
static int g_blocked_alpha = 0;
/* axle_f32_gemm_t.split_rows for every case. */
static int g_split_rows = 0;
/* A packed B in the K blocks of axle_f32_gemm_kc_in_place (packed_kc). */
static int g_packed_kc = 0;
/* With A read from rows or columns: its K rows written by the caller's
 * work in this many parts (k_part_first), from NaN until then; 0: none. */
static size_t g_k_parts = 0;
enum { K_PART_ALIGN = 16 };

/* A's live storage (A(i, p) at a[i * rs + p * cs]) and the values its
 * parts copy in. */
typedef struct k_parts_ctx_t {
  float* a;
  const float* src;
  size_t m, k, rs, cs;
} k_parts_ctx_t;

/* Part `part` of g_k_parts: A's K rows from the part-th multiple of
 * K_PART_ALIGN, cut as evenly as that allows (the contract of
 * k_part_align), computed here independently of the driver. */
static size_t k_part_at(size_t k, size_t part) {
  const size_t at = (k + K_PART_ALIGN - 1) / K_PART_ALIGN * part / g_k_parts * K_PART_ALIGN;
  return at < k ? at : k;
}

static void k_part_copy(void* arg, size_t part, uint32_t thread) {
  (void)thread;
  const k_parts_ctx_t* x = arg;
  for (size_t p = k_part_at(x->k, part); p < k_part_at(x->k, part + 1); ++p)
    for (size_t i = 0; i < x->m; ++i) x->a[i * x->rs + p * x->cs] = x->src[i * x->rs + p * x->cs];
}

static void driver_case(size_t m, size_t n, size_t k, int a_form, int b_form, int c_t,
                        int accumulate, const ref_ep_t* e, uint32_t threads) {
  float* a = kt_array(m * k);   /* row-major A */
  float* at = kt_array(m * k);  /* A^T, K-major */
  float* b = kt_array(k * n);   /* row-major B (K-major already) */
  float* bt = kt_array(k * n);  /* B^T */
  for (size_t i = 0; i < m; ++i)
    for (size_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
  for (size_t p = 0; p < k; ++p)
    for (size_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
  /* A blocked A is read in place only without an alpha to apply. */
  const float alpha =
      a_form == FORM_PACKED || (a_form == FORM_BLOCKED && !g_blocked_alpha) ? 1.0f : 0.75f;
  const size_t rows = c_t ? n : m, cols = c_t ? m : n, ldc = cols + 3;
  float* c = kt_array(rows * ldc);
  float* want = malloc(rows * ldc * sizeof(float));
  memcpy(want, c, rows * ldc * sizeof(float));
  float* bias = kt_array(rows);
  float* res = kt_array(rows * (cols + 1));
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, g_residual_row ? 0 : cols + 1, &ep);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += (double)a[i * k + p] * b[p * n + j];
      acc *= alpha;
      const size_t sr = c_t ? j : i, sc = c_t ? i : j;
      if (accumulate) acc += want[sr * ldc + sc];
      if (ep.bias) acc += bias[sr];
      if (ep.residual) acc += res[(g_residual_row ? 0 : sr) * (cols + 1) + sc];
      want[sr * ldc + sc] = ref_act(acc, &ep);
    }
  }
  axle_f32_gemm_t g;
  memset(&g, 0, sizeof g);
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  float* ap = NULL;
  float* bp = NULL;
  kmajor_t ka = {at, m}, kb = {b, n};
  switch (a_form) {
    case FORM_ROW: g.a.data = a; g.a.rs = k; g.a.cs = 1; break;
    case FORM_COL: g.a.data = at; g.a.rs = 1; g.a.cs = m; break;
    case FORM_PACKED:
      ap = kt_array(axle_f32_gemm_packed_a_size(m, k));
      axle_f32_gemm_pack_a(m, k, 1.0f, a, k, 1, ap);
      g.a.packed = ap;
      break;
    case FORM_BLOCKED:
      /* A block stride past the rows, and not a multiple of 16 rows. */
      ap = blocked_a(a, m, k, 16 * m + 48);
      g.a.data = ap;
      g.a.blocked = 16 * m + 48;
      break;
    default: g.a.gen = kmajor_gen; g.a.gen_ctx = &ka; break;
  }
  switch (b_form) {
    case FORM_ROW: g.b.data = b; g.b.rs = n; g.b.cs = 1; break;
    case FORM_COL: g.b.data = bt; g.b.rs = 1; g.b.cs = k; break;
    case FORM_PACKED:
      bp = kt_array(axle_f32_gemm_packed_b_size(k, n));
      if (g_packed_kc) {
        g.b.packed_kc = axle_f32_gemm_kc_in_place(k);
        axle_f32_gemm_pack_b_kc(k, n, g.b.packed_kc, b, n, 1, bp);
      } else {
        axle_f32_gemm_pack_b(k, n, b, n, 1, bp);
      }
      g.b.packed = bp;
      break;
    default: g.b.gen = kmajor_gen; g.b.gen_ctx = &kb; break;
  }
  g.c = c;
  g.ldc = ldc;
  g.c_transposed = c_t;
  g.accumulate = accumulate;
  g.ep = &ep;
  g.split_rows = g_split_rows;
  k_parts_ctx_t parts = {NULL, NULL, m, k, 0, 0};
  float* a_src = NULL;
  if (g_k_parts && (a_form == FORM_ROW || a_form == FORM_COL)) {
    parts.a = (float*)g.a.data;
    parts.rs = g.a.rs;
    parts.cs = g.a.cs;
    a_src = malloc(m * k * sizeof(float) + 1);
    memcpy(a_src, parts.a, m * k * sizeof(float));
    for (size_t q = 0; q < m * k; ++q) parts.a[q] = NAN;
    parts.src = a_src;
    g.k_part_first = k_part_copy;
    g.k_part_ctx = &parts;
    g.k_part_count = g_k_parts;
    g.k_part_align = K_PART_ALIGN;
  }
  uint32_t tstore;
  axle_parallel_t par;
  const axle_parallel_t* pp = kt_parallel(&tstore, &par, threads);
  /* Scratch sized under g_scratch_isa when set, as a plan made before
   * dispatch was raised would be; run under the current level. */
  const axle_isa_t run_isa = axle_kernels_isa();
  if (g_scratch_isa >= 0) axle_kernels_set_isa((axle_isa_t)g_scratch_isa);
  void* scratch = kt_scratch(axle_f32_gemm_scratch_size(&g, threads));
  axle_kernels_set_isa(run_isa);
  axle_f32_gemm(&g, scratch, pp);
  char what[200];
  snprintf(what, sizeof what,
           "gemm %zux%zux%zu A%d B%d ct=%d acc=%d ep=%d%d%d%s threads=%u k_parts=%zu", m, n, k,
           a_form, b_form, c_t, accumulate, e->bias, e->residual, e->act,
           g_residual_row ? " (residual ldr 0)" : "", threads, parts.a ? g_k_parts : 0);
  kt_close(what, c, want, rows * ldc, 1e-5, 2e-6 * (double)(k + 4));
  free(scratch);
  free(a);
  free(at);
  free(b);
  free(bt);
  free(c);
  free(want);
  free(bias);
  free(res);
  free(ap);
  free(bp);
  free(a_src);
}

static void driver_shapes(uint32_t threads) {
  /* K up to 900: four blocks of 225. 5000 columns: five column chunks,
   * rounded up to a multiple of the threads. 200 x 70 x 260: B read in
   * place past 128 rows of A (b_direct), with a partial last panel. */
  static const size_t shapes[][3] = {{1, 1, 1},    {1, 1000, 64},   {7, 5, 0},     {6, 16, 3},
                                     {13, 33, 65}, {5, 17, 300},    {49, 70, 530}, {150, 40, 20},
                                     {2, 1100, 9}, {300, 3, 17},    {20, 50, 900}, {7, 5000, 20},
                                     {1, 45, 600}, {1, 1000, 1280}, {1, 20, 0},    {200, 70, 260}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
    for (int af = 0; af < FORM_COUNT; ++af)
      for (int bf = 0; bf < FORM_BLOCKED; ++bf)
        driver_case(shapes[s][0], shapes[s][1], shapes[s][2], af, bf, (int)((s + af) % 2),
                    (int)((s + bf) % 3 == 0), &k_eps[(s + af + bf) % 5], threads);
}

/* Products the driver splits over K on several threads (pointwise
 * projections: few output channels, long K, a small map), in both stored
 * orientations, with K cut mid-block and unevenly between the parts; and
 * the same with accumulate, which keeps the column split. */
static void test_driver_k_split(void) {
  static const struct {
    size_t m, n, k;
    int a_form, b_form, c_t;
  } cases[] = {
      {96, 196, 576, FORM_PACKED, FORM_ROW, 0}, /* MobileNetV2 576 -> 96 at 14x14 */
      {64, 196, 385, FORM_PACKED, FORM_ROW, 0}, /* odd K: parts of 192 + 193 */
      {49, 160, 960, FORM_COL, FORM_PACKED, 1}, /* 960 -> 160 at 7x7, stored transposed */
      {49, 320, 961, FORM_COL, FORM_PACKED, 1},
      {30, 100, 700, FORM_ROW, FORM_PACKED, 0},   /* weights on the B side, C not transposed */
      {120, 100, 1000, FORM_PACKED, FORM_GEN, 0}, /* im2col-generated input, rows >= columns */
      {49, 200, 1001, FORM_GEN, FORM_PACKED, 1},  /* generated, transposed (3x3 stride 2 at 7x7) */
      {300, 196, 1024, FORM_PACKED, FORM_ROW, 0}, /* B packed per block (past b_direct) */
      {256, 196, 1024, FORM_PACKED, FORM_ROW, 0}, /* B in place (1024 -> 256 at 14x14) */
      {40, 60, 800, FORM_PACKED, FORM_COL, 1},    /* strided B, packed per block */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    for (uint32_t threads = 2; threads <= 4; ++threads)
      for (size_t e = 0; e < 5; ++e)
        driver_case(cases[i].m, cases[i].n, cases[i].k, cases[i].a_form, cases[i].b_form,
                    cases[i].c_t, (int)(e == 4), &k_eps[e], threads);
}

static void test_driver_serial(void) { driver_shapes(1); }
/* Threads given C's stored rows whatever the shape (both orientations,
 * wide products that would split columns, the K split beside it). */
static void test_driver_split_rows(void) {
  g_split_rows = 1;
  driver_shapes(2);
  driver_shapes(3);
  test_driver_k_split();
  g_split_rows = 0;
}
/* The caller's work for A's K rows handed to the driver (k_part_first):
 * run in the K split's tasks where the split is into exactly its parts
 * (2 parts on 2 threads, 3 on 3), as a region of its own otherwise (one
 * thread, other part counts, no split, a single row of A: the row-vector
 * path), A NaN until its part has run. */
static void test_driver_k_part_first(void) {
  g_k_parts = 2;
  driver_shapes(1);
  test_driver_k_split();
  g_k_parts = 3;
  test_driver_k_split();
  g_k_parts = 0;
}

static void test_driver_threads(void) {
  driver_shapes(2);
  driver_shapes(3);
}

/* Runs fn under every ISA level below the best one (which the other tests
 * use), saying which levels this CPU cannot reach. */
static void below_best_isa(void (*fn)(void)) {
  const axle_isa_t best = axle_kernels_isa();
  static const axle_isa_t levels[] = {AXLE_ISA_SCALAR, AXLE_ISA_AVX2_FMA};
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; ++i) {
    if (levels[i] >= best) {
      char why[80];
      snprintf(why, sizeof why, "ISA level %d: not below this CPU's best (%d)", (int)levels[i],
               (int)best);
      kt_skip(why);
      continue;
    }
    axle_kernels_set_isa(levels[i]);
    fn();
  }
  axle_kernels_set_isa(best);
}

static void driver_isa_run(void) { driver_shapes(2); }

/* A residual with ldr = 0 (a bias per stored column, as the channels-last
 * chain gives its expansion), on every shape and form, split over K too,
 * at each ISA level. */
static void residual_row_run(void) {
  driver_shapes(1);
  driver_shapes(2);
  test_driver_k_split();
}
static void test_driver_residual_row(void) {
  g_residual_row = 1;
  residual_row_run();
  below_best_isa(residual_row_run);
  g_residual_row = 0;
}

/* Scratch sized with dispatch capped at AVX2, then run at the best level,
 * as with a plan made before dispatch was raised: the size must not
 * depend on the level (an overrun shows under ASan and in the results). */
static void test_driver_scratch_isa(void) {
  if (axle_kernels_isa() < AXLE_ISA_AVX512) {
    kt_skip("this CPU lacks AVX-512: no level above AVX2 to raise dispatch to");
    return;
  }
  g_scratch_isa = AXLE_ISA_AVX2_FMA;
  driver_shapes(1);
  driver_shapes(2);
  g_scratch_isa = -1;
}
static void test_driver_isas(void) {
  /* The dispatching driver end to end on each lower level's micro-kernel. */
  below_best_isa(driver_isa_run);
}
static void test_driver_k_split_isas(void) {
  /* The sum pass has a variant per ISA level too. */
  below_best_isa(test_driver_k_split);
}

/* A blocked A read in place (tiles all full width: 32 with AVX-512, 16
 * with AVX2; K in blocks of 16) on MobileNetV2's channels-last projections and on every row count
 * of the last tile, beside the cases that pack it instead: a K or a column chunk not in whole
 * blocks, an alpha, and (below_best_isa) the narrower ISAs; the packed forms of B, C stored either
 * way, each epilogue, split over threads and over K. */
static void blocked_a_run(void) {
  static const size_t shapes[][3] = {
      {196, 96, 576}, {196, 64, 384}, {49, 160, 960}, {49, 320, 960}, /* MobileNetV2 */
      {12, 32, 16},   {1, 32, 16},    {13, 64, 48},   {23, 32, 32},   {200, 64, 384},
      {150, 96, 96},  {30, 96, 20},   {25, 40, 32},   {7, 16, 48},    {40, 64, 400}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
    for (int ct = 0; ct < 2; ++ct)
      for (uint32_t threads = 1; threads <= 3; ++threads)
        driver_case(shapes[s][0], shapes[s][1], shapes[s][2], FORM_BLOCKED,
                    threads == 2 ? FORM_ROW : FORM_PACKED, ct, (int)((s + threads) % 4 == 0),
                    &k_eps[(s + ct + threads) % 5], threads);
}
static void test_driver_blocked_a(void) {
  blocked_a_run();
  g_blocked_alpha = 1;
  blocked_a_run();
  g_blocked_alpha = 0;
  below_best_isa(blocked_a_run);
  /* And B packed in the K blocks such products take (one block to 1024). */
  g_packed_kc = 1;
  blocked_a_run();
  below_best_isa(blocked_a_run);
  g_packed_kc = 0;
}

/* ------------------------------------------------------------------------ */
/* Convolution                                                               */
/* ------------------------------------------------------------------------ */

typedef struct conv_shape_t {
  int64_t batch, groups, cin, cout;
  int64_t in[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
} conv_shape_t;

static void conv_fill(const conv_shape_t* s, axle_f32_conv_params_t* p) {
  memset(p, 0, sizeof *p);
  p->batch = s->batch;
  p->groups = s->groups;
  p->in_channels = s->cin;
  p->out_channels = s->cout;
  for (int d = 0; d < 3; ++d) {
    p->in[d] = s->in[d];
    p->kernel[d] = s->kernel[d] ? s->kernel[d] : 1;
    p->stride[d] = s->stride[d] ? s->stride[d] : 1;
    p->dilation[d] = s->dilation[d] ? s->dilation[d] : 1;
    p->pad[d] = s->pad[d];
    const int64_t span = (p->kernel[d] - 1) * p->dilation[d] + 1;
    p->out[d] = (p->in[d] + s->pad[d] + s->pad_end[d] - span) / p->stride[d] + 1;
  }
}

static void conv_case(const conv_shape_t* s, const ref_ep_t* e, uint32_t threads) {
  axle_f32_conv_params_t p;
  conv_fill(s, &p);
  const size_t in_n = (size_t)(p.batch * p.in_channels * p.in[0] * p.in[1] * p.in[2]);
  const size_t out_vol = (size_t)(p.out[0] * p.out[1] * p.out[2]);
  const size_t out_n = (size_t)(p.batch * p.out_channels) * out_vol;
  const size_t w_n = (size_t)(p.out_channels * (p.in_channels / p.groups) * p.kernel[0] *
                              p.kernel[1] * p.kernel[2]);
  float* x = kt_array(in_n);
  float* w = kt_array(w_n);
  float* bias = kt_array((size_t)p.out_channels);
  float* res = kt_array(out_n);
  float* want = kt_array(out_n);
  float* y = kt_array(out_n);
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, 0, &ep);
  axle_f32_conv_direct_scalar(&p, x, w, ep.bias, want);
  for (size_t i = 0; i < out_n; ++i) {
    double v = want[i];
    if (ep.residual) v += res[i];
    want[i] = ref_act(v, &ep);
  }
  axle_f32_conv_plan_t plan;
  axle_f32_conv_plan(&p, &plan);
  float* packed = kt_array(axle_f32_conv_packed_size(&plan));
  axle_f32_conv_pack(&plan, w, packed);
  uint32_t tstore;
  axle_parallel_t par;
  const axle_parallel_t* pp = kt_parallel(&tstore, &par, threads);
  void* scratch = kt_scratch(axle_f32_conv_scratch_size(&plan, threads));
  axle_f32_conv(&plan, x, packed, &ep, y, scratch, pp);
  char what[200];
  snprintf(what, sizeof what,
           "conv n%lld g%lld %lld->%lld in %lldx%lldx%lld k %lldx%lldx%lld s%lld algo %d t%d "
           "ep=%d%d%d threads=%u isa=%d",
           (long long)p.batch, (long long)p.groups, (long long)p.in_channels,
           (long long)p.out_channels, (long long)p.in[0], (long long)p.in[1],
           (long long)p.in[2], (long long)p.kernel[0], (long long)p.kernel[1],
           (long long)p.kernel[2], (long long)p.stride[2], plan.algo, plan.transposed, e->bias,
           e->residual, e->act, threads, (int)axle_kernels_isa());
  kt_close(what, y, want, out_n, 1e-5, 2e-6 * (double)(plan.k + 4));
  free(x);
  free(w);
  free(bias);
  free(res);
  free(want);
  free(y);
  free(packed);
  free(scratch);
}

/* batch, groups, cin, cout, in, kernel, stride, dilation, pad, pad_end */
static const conv_shape_t k_convs[] = {
    {1, 1, 16, 24, {1, 20, 20}, {1, 1, 1}, {0}, {0}, {0}, {0}}, /* pointwise */
    {2, 1, 7, 13, {1, 9, 11}, {1, 1, 1}, {0}, {0}, {0}, {0}},   /* pointwise, batch */
    {1, 1, 64, 40, {1, 7, 7}, {1, 1, 1}, {0}, {0}, {0}, {0}},   /* transposed */
    {2, 1, 320, 96, {1, 7, 7}, {1, 1, 1}, {0}, {0}, {0}, {0}},  /* transposed, K in one block */
    {2, 1, 40, 16, {1, 11, 13}, {1, 1, 1}, {0}, {0}, {0}, {0}}, /* B in place */
    {1, 1, 8, 16, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 1, 32, 64, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 1, 3, 16, {1, 23, 23}, {1, 7, 7}, {1, 2, 2}, {0}, {0, 3, 3}, {0, 3, 3}},
    {1, 1, 12, 20, {1, 15, 15}, {1, 1, 1}, {1, 2, 2}, {0}, {0}, {0}}, /* 1x1 stride 2 */
    {1, 2, 8, 6, {1, 10, 9}, {1, 3, 3}, {1, 2, 1}, {0}, {0, 1, 0}, {0, 0, 2}},
    {1, 1, 5, 7, {1, 12, 12}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}},
    {1, 1, 3, 4, {1, 1, 30}, {1, 1, 5}, {1, 1, 2}, {0}, {0, 0, 2}, {0, 0, 1}}, /* 1-D */
    {1, 1, 3, 4, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {0}, {1, 1, 1}, {1, 1, 1}},  /* 3-D */
    /* Winograd F(2x2, 3x3) under AVX2: odd sizes, padding 0/1/2, batch */
    {1, 1, 16, 24, {1, 16, 16}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {2, 1, 13, 7, {1, 19, 23}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 1, 32, 40, {1, 11, 37}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 0, 0}, {0, 0, 0}},
    {1, 1, 8, 9, {1, 9, 8}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 2, 1}, {0, 0, 2}},
    {1, 1, 128, 128, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    /* ... and a map large enough for the blocked schedule (partial blocks) */
    {1, 1, 48, 40, {1, 59, 61}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    /* depthwise: stride 1 and 2, odd sizes, multiplier, no padding, big pad */
    {1, 16, 16, 16, {1, 13, 11}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {2, 9, 9, 9, {1, 14, 15}, {1, 3, 3}, {1, 2, 2}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 4, 4, 8, {1, 9, 9}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 5, 5, 5, {1, 7, 20}, {1, 3, 3}, {1, 2, 2}, {0}, {0}, {0}},
    {1, 3, 3, 3, {1, 6, 6}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 2, 2}, {0, 2, 2}},
    {1, 6, 6, 6, {1, 16, 16}, {1, 5, 5}, {1, 1, 1}, {0}, {0, 2, 2}, {0, 2, 2}}, /* 5x5 */
    {1, 4, 4, 4, {1, 1, 3}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    /* ... rows wide enough for interior column groups between masked ones,
     * odd row counts, no padding (stride 1 row by row), end-only padding at
     * stride 2 */
    {1, 2, 2, 2, {1, 11, 37}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 2, 2}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 2, 2, 2, {1, 8, 33}, {1, 3, 3}, {1, 1, 1}, {0}, {0}, {0}},
    {1, 2, 2, 2, {1, 8, 50}, {1, 3, 3}, {1, 2, 2}, {0}, {0}, {0, 1, 1}},
    /* ... as wide as the input with uneven padding (the flat stride-1 walk) */
    {1, 3, 3, 3, {1, 9, 21}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 0, 1}, {0, 2, 1}},
    {1, 3, 3, 3, {1, 10, 27}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 2, 2}, {0, 0, 0}},
};

static void conv_all(uint32_t threads) {
  const size_t n = sizeof k_convs / sizeof k_convs[0];
  for (size_t i = 0; i < n; ++i)
    for (size_t e = 0; e < 5; e += (threads > 1 ? 2 : 1)) conv_case(&k_convs[i], &k_eps[e], threads);
}

static void test_conv_serial(void) { conv_all(1); }
static void test_conv_threads(void) { conv_all(2); }

static void conv_isa_run(void) {
  conv_all(1);
  conv_all(3);
}
static void test_conv_isas(void) { below_best_isa(conv_isa_run); }

/* One Winograd convolution through the AVX2 variant and, where the CPU has
 * it, the AVX-512 one, each against the direct reference (F(2x2) within the
 * prepared conv test's tolerance, F(4x4) within 3e-5 of the output's scale:
 * it is measured at about 1e-5 of it) and against each other bit for bit
 * (same operations per lane in the same order), 32 floats past the output
 * included (the AVX-512 stores are masked; the AVX2 ones spill only inside
 * the scratch). */
static void wino_case(const conv_shape_t* s, const ref_ep_t* e, uint32_t threads, int tile) {
  axle_f32_conv_params_t p;
  conv_fill(s, &p);
  CU_ASSERT_FATAL(axle_f32_conv_winograd_supports(&p));
  const size_t in_n = (size_t)(p.batch * p.in_channels * p.in[1] * p.in[2]);
  const size_t out_n = (size_t)(p.batch * p.out_channels * p.out[1] * p.out[2]);
  float* x = kt_array(in_n);
  float* w = kt_array((size_t)(p.out_channels * p.in_channels * 9));
  float* bias = kt_array((size_t)p.out_channels);
  float* res = kt_array(out_n);
  float* want = kt_array(out_n);
  float* before = kt_array(out_n + 32);
  float* y2 = malloc((out_n + 32) * sizeof(float));
  float* y5 = malloc((out_n + 32) * sizeof(float));
  memcpy(y2, before, (out_n + 32) * sizeof(float));
  memcpy(y5, before, (out_n + 32) * sizeof(float));
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, 0, &ep);
  axle_f32_conv_direct_scalar(&p, x, w, ep.bias, want);
  double scale = 0.0; /* of the convolution, before the activation's clamp */
  for (size_t i = 0; i < out_n; ++i) {
    if (fabs((double)want[i]) > scale) scale = fabs((double)want[i]);
    want[i] = ref_act((double)want[i] + (ep.residual ? res[i] : 0.0), &ep);
  }
  const double atol = tile == 2 ? 2e-6 * (double)(p.in_channels * 9 + 4) : 3e-5 * scale;
  const double rtol = tile == 2 ? 1e-5 : 0.0;
  float* packed = kt_array(axle_f32_conv_winograd_packed_size(&p, tile)); /* floats */
  axle_f32_conv_winograd_pack(&p, tile, w, packed);
  uint32_t tstore;
  axle_parallel_t par;
  const axle_parallel_t* pp = kt_parallel(&tstore, &par, threads);
  /* Each variant on its own garbage scratch. */
  void* scratch2 = kt_scratch(axle_f32_conv_winograd_scratch_size(&p, tile, threads));
  void* scratch5 = kt_scratch(axle_f32_conv_winograd_scratch_size(&p, tile, threads));
  char what2[176], what5[176];
  for (int v = 0; v < 2; ++v)
    snprintf(v ? what5 : what2, sizeof what2,
             "winograd F(%dx%d) %s n%lld %lld->%lld in %lldx%lld pad %lld,%lld/%lld,%lld "
             "ep=%d%d%d threads=%u",
             tile, tile, v ? "avx512" : "avx2", (long long)p.batch, (long long)p.in_channels,
             (long long)p.out_channels, (long long)p.in[1], (long long)p.in[2],
             (long long)s->pad[1], (long long)s->pad[2], (long long)s->pad_end[1],
             (long long)s->pad_end[2], e->bias, e->residual, e->act, threads);
  (tile == 2 ? axle_f32_conv_winograd__avx2_fma : axle_f32_conv_winograd4__avx2_fma)(
      &p, x, packed, &ep, y2, scratch2, pp);
  kt_close(what2, y2, want, out_n, rtol, atol);
  if (memcmp(y2 + out_n, before + out_n, 32 * sizeof(float)) != 0) {
    fprintf(stderr, "\n%s: wrote past the output\n", what2);
    CU_FAIL(what2);
  }
  if (have_avx512()) {
    (tile == 2 ? axle_f32_conv_winograd__avx512 : axle_f32_conv_winograd4__avx512)(
        &p, x, packed, &ep, y5, scratch5, pp);
    kt_close(what5, y5, want, out_n, rtol, atol);
    if (memcmp(y5, y2, (out_n + 32) * sizeof(float)) != 0) {
      fprintf(stderr, "\n%s: differs from the avx2 variant\n", what5);
      CU_FAIL(what5);
    }
  }
  free(x);
  free(w);
  free(bias);
  free(res);
  free(want);
  free(before);
  free(y2);
  free(y5);
  free(packed);
  free(scratch2);
  free(scratch5);
}

/* Every combination of output height, output width and padding (1 on both
 * sides, none, and on one side only), batch 1 and 2, channels and epilogues
 * and 1 or 2 threads varied along. */
static void wino_sweep(const int64_t* heights, size_t nh, const int64_t* widths, size_t nw,
                       int tile) {
  static const int64_t pads[][2] = {{1, 1}, {0, 0}, {1, 0}, {0, 1}};
  for (size_t pi = 0; pi < sizeof pads / sizeof pads[0]; ++pi)
    for (size_t hi = 0; hi < nh; ++hi)
      for (size_t wi = 0; wi < nw; ++wi) {
        const int64_t pb = pads[pi][0], pe = pads[pi][1];
        const int64_t h = heights[hi] + 2 - pb - pe, wd = widths[wi] + 2 - pb - pe;
        const conv_shape_t shape = {1 + (int64_t)(wi % 2), 1, 3 + (int64_t)(hi % 3), 5,
                                    {1, h, wd}, {1, 3, 3}, {1, 1, 1}, {0}, {0, pb, pb},
                                    {0, pe, pe}};
        const size_t e = (pi + hi + wi) % 5;
        wino_case(&shape, &k_eps[e], 1 + (uint32_t)((hi + wi) % 2), tile);
      }
}

/* Each shape with every epilogue, on 1 and 2 threads. */
static void wino_shapes(const conv_shape_t* shapes, size_t n, int tile) {
  for (size_t i = 0; i < n; ++i)
    for (uint32_t threads = 1; threads <= 2; ++threads)
      for (size_t e = 0; e < 5; ++e) wino_case(&shapes[i], &k_eps[e], threads, tile);
}

static void test_winograd2(void) {
  if (!have_avx2()) {
    kt_skip("winograd F(2x2): no AVX2 on this CPU");
    return;
  }
  /* Output widths 7..17 (4..9 tiles in one partial 16-lane group) and
   * 31..34 (one full group, then none or a second of 1 tile), odd and even
   * heights; all small enough for the whole-image schedule. */
  static const int64_t heights[] = {7, 10, 13, 17};
  static const int64_t widths[] = {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33, 34};
  wino_sweep(heights, sizeof heights / sizeof heights[0], widths, sizeof widths / sizeof widths[0],
             2);
  /* ResNet's 56x56 map: 8 channels stay whole-image, 64 are blocked (V and
   * M of the image past WINO_IMAGE_BYTES), as is an odd 57x45 map with a
   * partial last block. */
  static const conv_shape_t big[] = {
      {1, 1, 8, 8, {1, 56, 56}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
      {1, 1, 64, 64, {1, 56, 56}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
      {1, 1, 64, 72, {1, 59, 47}, {1, 3, 3}, {1, 1, 1}, {0}, {0}, {0}},
  };
  wino_shapes(big, sizeof big / sizeof big[0], 2);
}

static void test_winograd4(void) {
  if (!have_avx2()) {
    kt_skip("winograd F(4x4): no AVX2 on this CPU");
    return;
  }
  /* Output heights with every remainder by 4; widths of 2..4 tiles (one
   * partial group of lanes, the last tile partial or not), 13..17 tiles
   * (a full AVX-512 group and a partial one) and 32..33 (two full groups,
   * then none or a third of 1 tile); all small enough for the whole-image
   * schedule. */
  static const int64_t heights[] = {8, 9, 10, 31};
  static const int64_t widths[] = {7, 8, 13, 16, 50, 57, 65, 68, 127, 132};
  wino_sweep(heights, sizeof heights / sizeof heights[0], widths, sizeof widths / sizeof widths[0],
             4);
  /* The prepared convolution takes F(4x4) where its tiles fill the GEMM
   * tiles: with AVX-512 on whole-width FMAs (32 wide) from 48 (ResNet's
   * 28x28 map), not 16 (14x14); with AVX2 (16 wide), and AVX-512 at half
   * rate, from 16, not 4 (7x7). */
  static const int64_t maps[] = {28, 14, 7};
  static const int want_wide[] = {4, 2, 2}, want_avx2[] = {4, 4, 2};
  const int wide = axle_kernels_wide_fma();
  for (size_t i = 0; i < 3; ++i) {
    axle_f32_conv_params_t p;
    const conv_shape_t at = {1,         1,         8,   8,         {1, maps[i], maps[i]},
                             {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}};
    conv_fill(&at, &p);
    axle_kernels_set_wide_fma(1);
    CU_ASSERT_EQUAL(axle_f32_conv_winograd_tile(&p, AXLE_ISA_AVX512), want_wide[i]);
    CU_ASSERT_EQUAL(axle_f32_conv_winograd_tile(&p, AXLE_ISA_AVX2_FMA), want_avx2[i]);
    axle_kernels_set_wide_fma(0);
    CU_ASSERT_EQUAL(axle_f32_conv_winograd_tile(&p, AXLE_ISA_AVX512), want_avx2[i]);
    CU_ASSERT_EQUAL(axle_f32_conv_winograd_tile(&p, AXLE_ISA_AVX2_FMA), want_avx2[i]);
  }
  axle_kernels_set_wide_fma(wide);
  /* ResNet's 28x28 map with its 128 channels, and maps whose V and M pass
   * WINO_IMAGE_BYTES (blocked, the second with a partial last block). */
  static const conv_shape_t big[] = {
      {1, 1, 128, 128, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
      {1, 1, 24, 24, {1, 112, 112}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
      {1, 1, 40, 36, {1, 93, 71}, {1, 3, 3}, {1, 1, 1}, {0}, {0}, {0}},
  };
  wino_shapes(big, sizeof big / sizeof big[0], 4);
}

/* With AVX-512 on whole-width FMAs, the prepared convolution leaves
 * Winograd for im2col on maps of at most 16 F(2x2) tiles whose transformed
 * weights pass 2 MB (streamed, they cost more than they save): ResNet's 7x7
 * layers at 256 and 512 channels, not at 128 (1 MB), nor a 9x9 map (25
 * tiles) or a 14x14 one at 512. With AVX2, and with AVX-512 at half rate
 * (axle_kernels_wide_fma 0), it keeps Winograd for all of them. */
static void test_winograd_choice(void) {
  static const struct {
    int64_t map, channels;
    int32_t want;
  } cases[] = {{7, 512, AXLE_F32_CONV_IM2COL},   {7, 256, AXLE_F32_CONV_IM2COL},
               {8, 256, AXLE_F32_CONV_IM2COL},   {7, 128, AXLE_F32_CONV_WINOGRAD},
               {9, 512, AXLE_F32_CONV_WINOGRAD}, {14, 512, AXLE_F32_CONV_WINOGRAD}};
  /* AVX-512 whole-width, AVX-512 at half rate, AVX2. */
  const int levels[] = {have_avx512(), have_avx512(), have_avx2()};
  const axle_isa_t isas[] = {AXLE_ISA_AVX512, AXLE_ISA_AVX512, AXLE_ISA_AVX2_FMA};
  const int wide = axle_kernels_wide_fma();
  for (size_t l = 0; l < 3; ++l) {
    if (!levels[l]) {
      kt_skip(l == 2 ? "winograd: no AVX2 on this CPU" : "winograd: no AVX-512 on this CPU");
      continue;
    }
    const axle_isa_t prev = axle_kernels_set_isa(isas[l]);
    axle_kernels_set_wide_fma(l == 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      const int64_t m = cases[i].map, c = cases[i].channels;
      const conv_shape_t at = {1,         1,         c,   c,         {1, m, m},
                               {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}};
      axle_f32_conv_params_t p;
      conv_fill(&at, &p);
      axle_f32_conv_plan_t plan;
      axle_f32_conv_plan(&p, &plan);
      CU_ASSERT_EQUAL(plan.algo, l ? AXLE_F32_CONV_WINOGRAD : cases[i].want);
    }
    axle_kernels_set_isa(prev);
  }
  axle_kernels_set_wide_fma(wide);
}

/* The probe behind those choices: 0 without AVX-512F whatever the timing,
 * 0 or 1 with it (the measured answer is printed: 0 on Zen 4, 1 on
 * Sapphire Rapids), and the setter hands back the answer it replaces. */
static void test_wide_fma_probe(void) {
  const int wide = axle_kernels_wide_fma();
  printf("(512-bit FMAs %s) ", wide ? "at whole width" : "at half rate or absent");
  CU_ASSERT(wide == 0 || wide == 1);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) CU_ASSERT_EQUAL(wide, 0);
#endif
  CU_ASSERT_EQUAL(axle_kernels_wide_fma(), wide); /* cached */
  CU_ASSERT_EQUAL(axle_kernels_set_wide_fma(!wide), wide);
  CU_ASSERT_EQUAL(axle_kernels_wide_fma(), !wide);
  CU_ASSERT_EQUAL(axle_kernels_set_wide_fma(wide), !wide);
  CU_ASSERT_EQUAL(axle_kernels_wide_fma(), wide);
}

typedef struct dw_variant_t {
  const char* what;
  axle_f32_dwconv_plane_fn fn;
  int (*available)(void);
} dw_variant_t;

static const dw_variant_t k_dw_variants[] = {
    {"dwconv 3x3 avx2 vs scalar", axle_f32_dwconv_plane_3x3__avx2_fma, have_avx2},
    {"dwconv 3x3 avx512 vs scalar", axle_f32_dwconv_plane_3x3__avx512, have_avx512},
};

/* One plane through v against the scalar kernel, every epilogue; nan: one
 * input is NaN, which must reach exactly the outputs whose window holds it
 * (a masked-off lane must not pick it up, the clamp must not swallow it). */
static void dw_check(const dw_variant_t* v, const axle_f32_conv_params_t* p, int nan) {
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  for (size_t e = 0; e < 5; ++e) {
    float* x = kt_array(in_vol);
    if (nan) x[in_vol * 2 / 3] = NAN;
    float* w = kt_array(9);
    float* res = kt_array(out_vol);
    /* + 16: a masked tail (up to 16 lanes) must not write past the plane. */
    float* y0 = kt_array(out_vol + 16);
    float* y1 = kt_array(out_vol + 16);
    memcpy(y1, y0, (out_vol + 16) * sizeof(float));
    axle_f32_epilogue_t ep;
    make_ep(&k_eps[e], NULL, NULL, 0, &ep);
    const float* r = k_eps[e].residual ? res : NULL;
    axle_f32_dwconv_plane__scalar(p, x, w, 0.25f, r, &ep, y0);
    v->fn(p, x, w, 0.25f, r, &ep, y1);
    if (!kt_close(v->what, y1, y0, out_vol + 16, 1e-6, 1e-6))
      fprintf(stderr, "plane %lldx%lld stride %lld pad %lld,%lld out %lldx%lld ep %zu nan %d\n",
              (long long)p->in[1], (long long)p->in[2], (long long)p->stride[2],
              (long long)p->pad[1], (long long)p->pad[2], (long long)p->out[1],
              (long long)p->out[2], e, nan);
    free(x);
    free(w);
    free(res);
    free(y0);
    free(y1);
  }
}

static void test_dwconv_variants(void) {
  /* The vector plane kernels against the scalar one on the conv shapes. */
  for (size_t vi = 0; vi < sizeof k_dw_variants / sizeof k_dw_variants[0]; ++vi) {
    if (!k_dw_variants[vi].available()) {
      CU_PASS("variant not available on this machine");
      continue;
    }
    for (size_t i = 0; i < sizeof k_convs / sizeof k_convs[0]; ++i) {
      axle_f32_conv_params_t p;
      conv_fill(&k_convs[i], &p);
      if (axle_f32_dwconv_3x3__avx2_fma_supports(&p)) dw_check(&k_dw_variants[vi], &p, 0);
    }
  }
}

static void test_dwconv_planes(void) {
  /* Every plane from 1x1 to 20x20 and the widths around two and three
   * 16-lane vectors, stride 1 and 2; padding 1 on both sides (the flat
   * stride-1 walk, and from 32 wide the AVX-512 slide; also as 2 + 0 and
   * 0 + 2), none, uneven and wider than the kernel (row by row); with and
   * without a NaN in the input. */
  static const int64_t widths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                   14, 15, 16, 17, 18, 19, 20, 31, 32, 33, 47, 48, 49};
  static const int64_t pads[][2] = {{1, 1}, {2, 0}, {0, 2}, {0, 0}, {1, 0}, {2, 2}};
  for (size_t vi = 0; vi < sizeof k_dw_variants / sizeof k_dw_variants[0]; ++vi) {
    if (!k_dw_variants[vi].available()) {
      CU_PASS("variant not available on this machine");
      continue;
    }
    for (int64_t s = 1; s <= 2; ++s)
      for (size_t pi = 0; pi < sizeof pads / sizeof pads[0]; ++pi)
        for (int64_t h = 1; h <= 20; ++h)
          for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
            const int64_t pb = pads[pi][0], pe = pads[pi][1], w = widths[wi];
            if (h + pb + pe < 3 || w + pb + pe < 3) continue;
            const conv_shape_t shape = {1,         1,         1,   1,           {1, h, w},
                                        {1, 3, 3}, {1, s, s}, {0}, {0, pb, pb}, {0, pe, pe}};
            axle_f32_conv_params_t p;
            conv_fill(&shape, &p);
            for (int nan = 0; nan <= 1; ++nan) dw_check(&k_dw_variants[vi], &p, nan);
          }
  }
}

static void test_im2col_block(void) {
  /* Any block of the unfolded matrix equals the same block of the full
   * reference unfold. */
  for (size_t i = 0; i < sizeof k_convs / sizeof k_convs[0]; ++i) {
    axle_f32_conv_params_t p;
    conv_fill(&k_convs[i], &p);
    const int64_t cg = p.in_channels / p.groups;
    const size_t rows = (size_t)(cg * p.kernel[0] * p.kernel[1] * p.kernel[2]);
    const size_t cols = (size_t)(p.out[0] * p.out[1] * p.out[2]);
    float* x = kt_array((size_t)(cg * p.in[0] * p.in[1] * p.in[2]));
    float* full = kt_array(rows * cols);
    axle_f32_im2col_scalar(&p, x, cg, full);
    const size_t k0 = rows / 3, kc = rows - k0 > 5 ? 5 : rows - k0;
    const size_t n0 = cols / 2 - cols / 5, nc = cols - n0 > 37 ? 37 : cols - n0;
    float* blk = kt_array(kc * nc);
    float* want = kt_array(kc * nc);
    for (size_t r = 0; r < kc; ++r) memcpy(want + r * nc, full + (k0 + r) * cols + n0, nc * 4);
    axle_f32_im2col_block(&p, x, k0, kc, n0, nc, blk);
    kt_close("im2col block", blk, want, kc * nc, 0.0, 0.0);
    free(x);
    free(full);
    free(blk);
    free(want);
  }
}

typedef struct im2col_variant_t {
  const char* what;
  axle_f32_im2col_block_fn fn;
  int (*available)(void);
} im2col_variant_t;

static const im2col_variant_t k_im2col_variants[] = {
    {"im2col block avx2 vs scalar", axle_f32_im2col_block__avx2, have_avx2},
    {"im2col block avx512 vs scalar", axle_f32_im2col_block__avx512, have_avx512},
};

/* Blocks too wide for the move lists of all their taps at once: a 7x7
 * stride-2 stem (taps in groups over whole rows) and maps 2 columns wide
 * (one tap at a time over windows of the columns). */
static const conv_shape_t k_im2col_wide[] = {
    {1, 1, 3, 1, {1, 60, 230}, {1, 7, 7}, {1, 2, 2}, {0}, {0, 3, 3}, {0, 3, 3}},
    {1, 1, 2, 1, {1, 1100, 2}, {1, 3, 3}, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}},
    {1, 1, 2, 1, {1, 2200, 3}, {1, 3, 3}, {1, 2, 2}, {0}, {0, 1, 1}, {0, 1, 1}},
};

/* Blocks of p's unfolded matrix through v against the reference, bit for
 * bit: all of it, windows whose first and last pixels fall mid-row, the
 * last pixel of a row alone, one column; + 16 floats past each block must
 * stay untouched (a masked tail may not write beyond it). */
static void im2col_check(const im2col_variant_t* v, const axle_f32_conv_params_t* p) {
  const int64_t cg = p->in_channels / p->groups;
  const size_t rows = (size_t)(cg * p->kernel[0] * p->kernel[1] * p->kernel[2]);
  const size_t cols = (size_t)(p->out[0] * p->out[1] * p->out[2]);
  const size_t out2 = (size_t)p->out[2];
  const size_t wins[][4] = {
      {0, rows, 0, cols},
      {rows / 3, rows - rows / 3 - rows / 4, cols / 3, cols - cols / 3 - cols / 4},
      {rows - 1, 1, out2 - 1, cols - (out2 - 1)},
      {1 % rows, rows - 1 % rows, cols - 1, 1},
      {0, rows, out2 / 2, cols - out2 / 2 > out2 + 1 ? out2 + 1 : cols - out2 / 2},
  };
  /* The input ends where its allocation does: the sanitizer build catches
   * an unmasked read past it. */
  const size_t xn = (size_t)(cg * p->in[0] * p->in[1] * p->in[2]), xpad = (xn + 15) / 16 * 16;
  float* xbuf = kt_array(xpad);
  const float* x = xbuf + (xpad - xn);
  for (size_t w = 0; w < sizeof wins / sizeof wins[0]; ++w) {
    const size_t k0 = wins[w][0], kc = wins[w][1], n0 = wins[w][2], nc = wins[w][3];
    if (kc == 0 || nc == 0) continue;
    float* want = kt_array(kc * nc + 16);
    float* got = kt_array(kc * nc + 16);
    memcpy(got, want, (kc * nc + 16) * sizeof(float));
    axle_f32_im2col_block(p, x, k0, kc, n0, nc, want);
    v->fn(p, x, k0, kc, n0, nc, got);
    if (!kt_close(v->what, got, want, kc * nc + 16, 0.0, 0.0))
      fprintf(stderr,
              "in %lldx%lldx%lld k %lldx%lldx%lld s %lld,%lld d %lld pad %lld,%lld out "
              "%lldx%lldx%lld rows [%zu, +%zu) cols [%zu, +%zu)\n",
              (long long)p->in[0], (long long)p->in[1], (long long)p->in[2],
              (long long)p->kernel[0], (long long)p->kernel[1], (long long)p->kernel[2],
              (long long)p->stride[1], (long long)p->stride[2], (long long)p->dilation[2],
              (long long)p->pad[1], (long long)p->pad[2], (long long)p->out[0],
              (long long)p->out[1], (long long)p->out[2], k0, kc, n0, nc);
    free(want);
    free(got);
  }
  free(xbuf);
}

static void test_im2col_variants(void) {
  /* Square kernels 1, 3, 5, 7 at strides 1, 2, 3 (also unequal), dilation
   * 1 and 2, padding none, "same", wider than the kernel and uneven; maps
   * 1..17 wide (under one vector, and its tail) and a few wider ones (a
   * full vector before the tail), 1 to 9 rows; and the conv shapes. */
  static const int64_t widths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                   13, 14, 15, 16, 17, 31, 33, 40, 57};
  static const int64_t heights[] = {1, 4, 9};
  static const int64_t strides[][2] = {{1, 1}, {2, 2}, {3, 3}, {1, 2}, {2, 1}};
  for (size_t vi = 0; vi < sizeof k_im2col_variants / sizeof k_im2col_variants[0]; ++vi) {
    const im2col_variant_t* v = &k_im2col_variants[vi];
    if (!v->available()) {
      CU_PASS("variant not available on this machine");
      continue;
    }
    for (int64_t k = 1; k <= 7; k += 2)
      for (size_t si = 0; si < sizeof strides / sizeof strides[0]; ++si)
        for (int64_t dil = 1; dil <= 2; ++dil)
          for (int pi = 0; pi < 4; ++pi)
            for (size_t hi = 0; hi < sizeof heights / sizeof heights[0]; ++hi)
              for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
                const int64_t span = (k - 1) * dil + 1, h = heights[hi], w = widths[wi];
                const int64_t pads[4][2] = {{0, 0}, {span / 2, span / 2}, {span, span},
                                            {span / 2 + 1, 0}};
                const int64_t pb = pads[pi][0], pe = pads[pi][1];
                if (h + pb + pe < span || w + pb + pe < span) continue;
                const conv_shape_t shape = {1,
                                            1,
                                            2,
                                            1,
                                            {1, h, w},
                                            {1, k, k},
                                            {1, strides[si][0], strides[si][1]},
                                            {1, dil, dil},
                                            {0, pb, pb},
                                            {0, pe, pe}};
                axle_f32_conv_params_t p;
                conv_fill(&shape, &p);
                im2col_check(v, &p);
              }
    for (size_t i = 0; i < sizeof k_convs / sizeof k_convs[0]; ++i) {
      axle_f32_conv_params_t p;
      conv_fill(&k_convs[i], &p);
      im2col_check(v, &p);
    }
    for (size_t i = 0; i < sizeof k_im2col_wide / sizeof k_im2col_wide[0]; ++i) {
      axle_f32_conv_params_t p;
      conv_fill(&k_im2col_wide[i], &p);
      im2col_check(v, &p);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Max pooling                                                               */
/* ------------------------------------------------------------------------ */

typedef struct pool_shape_t {
  int64_t channels, in[3], kernel[3], stride[3], pad[3], out[3];
} pool_shape_t;

/* out given explicitly: ceil-mode windows reach into the trailing padding. */
static const pool_shape_t k_pools[] = {
    {5, {1, 20, 20}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 10, 10}},  /* ResNet stem */
    {3, {1, 9, 13}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 9, 13}},
    {4, {1, 7, 7}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}, {1, 4, 4}},      /* ceil mode */
    {2, {1, 11, 17}, {1, 5, 4}, {1, 2, 2}, {0, 2, 1}, {1, 6, 8}},
    {3, {1, 1, 30}, {1, 1, 3}, {1, 1, 2}, {0, 0, 1}, {1, 1, 15}},    /* 1-D */
    {2, {4, 5, 6}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {3, 4, 5}},      /* 3-D: reference */
    {1, {1, 16, 16}, {1, 3, 3}, {1, 3, 3}, {0, 0, 0}, {1, 5, 5}},    /* stride 3: ref */
};

static void maxpool_all(uint32_t threads) {
  for (size_t i = 0; i < sizeof k_pools / sizeof k_pools[0]; ++i) {
    const pool_shape_t* s = &k_pools[i];
    axle_f32_pool_params_t p;
    memset(&p, 0, sizeof p);
    p.channels = s->channels;
    for (int d = 0; d < 3; ++d) {
      p.in[d] = s->in[d];
      p.out[d] = s->out[d];
      p.kernel[d] = s->kernel[d];
      p.stride[d] = s->stride[d];
      p.dilation[d] = 1;
      p.pad[d] = s->pad[d];
    }
    const size_t in_n = (size_t)(p.channels * p.in[0] * p.in[1] * p.in[2]);
    const size_t out_n = (size_t)(p.channels * p.out[0] * p.out[1] * p.out[2]);
    float* x = kt_array(in_n);
    x[in_n / 3] = NAN; /* skipped by both, as in the reference */
    float* want = kt_array(out_n);
    float* y = kt_array(out_n);
    axle_f32_maxpool_scalar(&p, x, want, NULL);
    uint32_t tstore;
    axle_parallel_t par;
    const axle_parallel_t* pp = kt_parallel(&tstore, &par, threads);
    void* scratch = kt_scratch(axle_f32_maxpool_scratch_size(&p, threads));
    axle_f32_maxpool(&p, x, y, scratch, pp);
    char what[96];
    snprintf(what, sizeof what, "maxpool shape %zu threads %u isa %d", i, threads,
             (int)axle_kernels_isa());
    kt_close(what, y, want, out_n, 0.0, 0.0);
    free(x);
    free(want);
    free(y);
    free(scratch);
  }
}

static void test_maxpool(void) {
  maxpool_all(1);
  maxpool_all(2);
  const axle_isa_t prev = axle_kernels_set_isa(AXLE_ISA_SCALAR);
  maxpool_all(2);
  axle_kernels_set_isa(prev);
}

int main(void) {
  static const kt_entry_t gemm[] = {
      {"micro-kernel 6x16 scalar", test_ukernel_scalar},
      {"micro-kernel 6x16 avx2_fma", test_ukernel_avx2},
      {"micro-kernel 6x16 avx2_fma, blocked A in place", test_ukernel_avx2_blocked},
      {"micro-kernel 6x16 avx512", test_ukernel_avx512},
      {"NaN through the clamp", test_ukernel_nan_passes},
      {"prefetch shares cover the next panels once", test_prefetch_shares},
      {"row-vector kernels avx2/avx512 = scalar", test_gemv_variants},
      {"pack_a avx2 = scalar", test_pack_a_variants},
      {"pack_b avx2 = scalar", test_pack_b_variants},
      {"driver, serial", test_driver_serial},
      {"driver, threads", test_driver_threads},
      {"driver, split over K on 2-4 threads", test_driver_k_split},
      {"driver, split over K on each lower ISA level", test_driver_k_split_isas},
      {"driver, A blocked by 16 along K (read in place or packed)", test_driver_blocked_a},
      {"driver, threads split by stored rows (split_rows)", test_driver_split_rows},
      {"driver, the caller's work for A's K parts (k_part_first)", test_driver_k_part_first},
      {"driver, lower ISAs", test_driver_isas},
      {"driver, residual rows 0 apart (a bias per column), each ISA", test_driver_residual_row},
      {"driver, scratch sized under AVX2, run under AVX-512", test_driver_scratch_isa},
  };
  static const kt_entry_t conv[] = {
      {"prepared conv, serial", test_conv_serial},
      {"prepared conv, threads", test_conv_threads},
      {"prepared conv, lower ISAs", test_conv_isas},
      {"winograd F(2x2) avx2/avx512 = direct, same bits", test_winograd2},
      {"winograd F(4x4) avx2/avx512 = direct, same bits", test_winograd4},
      {"winograd left for im2col where its weights stream", test_winograd_choice},
      {"wide-FMA probe: 0 or 1, 0 without AVX-512, settable", test_wide_fma_probe},
      {"depthwise 3x3 avx2/avx512 = scalar", test_dwconv_variants},
      {"depthwise 3x3 avx2/avx512 = scalar, planes 1..20 x 1..33", test_dwconv_planes},
      {"im2col blocks", test_im2col_block},
  };
  static const kt_entry_t im2col[] = {
      {"im2col block avx2/avx512 = scalar, maps 1..17 wide, windows", test_im2col_variants},
  };
  static const kt_entry_t pool[] = {
      {"max pooling, every variant and thread count", test_maxpool},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("f32 gemm", gemm) || KT_ADD_SUITE("f32 conv", conv) ||
      KT_ADD_SUITE("f32 im2col", im2col) || KT_ADD_SUITE("f32 pool", pool)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
