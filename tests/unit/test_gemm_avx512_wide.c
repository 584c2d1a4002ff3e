/*
 * The AVX-512 wide GEMM tile (axle_f32_gemm_12x32__avx512, two adjacent A
 * and B panels per call): the kernel against the scalar 6x16 kernel applied
 * to each quarter, on every partial tile, flag and epilogue, with B packed and
 * read in place; then the driver that uses it, end to end against the
 * scalar ISA level on shapes whose columns end at every kind of pair.
 */

#include "../../kernels/f32/gemm_avx512.h"

#define KT_SEED 20251125u
#include "kernel_test.h"

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

static int have_avx512(void) { return axle_kernels_isa() >= AXLE_ISA_AVX512; }

static int skipped(void) {
  if (have_avx512()) return 0;
  fprintf(stderr, "\n  skipped: no AVX-512 on this machine (or AXLE_KERNELS_ISA caps it)\n");
  CU_PASS("skipped");
  return 1;
}

/* Epilogue number e: a bias (bit 0), a residual (bit 1) and an activation
 * (e / 4: none, ReLU, a clip, a leaky slope), every combination. */
static void make_ep(int e, const float* bias, const float* res, size_t ldr,
                    axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_init(ep);
  ep->bias = e & 1 ? bias : NULL;
  ep->residual = e & 2 ? res : NULL;
  ep->ldr = ldr;
  switch (e / 4) {
    case 1: ep->min = 0.0f; break;
    case 2: ep->min = 0.0f; ep->max = 0.25f; break;
    case 3: ep->leaky = 1; ep->leaky_alpha = 0.1f; break;
    default: break;
  }
}
enum { EP_COUNT = 16 };

/* One wide call. ldb == NR: two packed B panels, kc * NR apart; otherwise B
 * is read in place, rows ldb apart and the second panel NR columns on. A is
 * two packed panels, kc * MR apart (plus a gap, so a stray read of the
 * first panel's end would show). */
static void wide_case(size_t mr, size_t nr, size_t kc, size_t ldb, uint32_t flags, int e) {
  const int packed = ldb == NR;
  const size_t b_next = packed ? kc * NR : NR;
  const size_t a_next = kc * MR + 7;
  /* The scalar reference reads all NR columns of the second panel. */
  float* b = kt_array(packed ? 2 * kc * NR : kc * ldb + NR);
  float* a = kt_array(a_next + kc * MR);
  const size_t ldc = 2 * NR + 5; /* wider than the tile, so strays would show */
  const int t = (flags & AXLE_F32_GEMM_STORE_T) != 0;
  const size_t rows = t ? 2 * NR : 2 * MR;
  float* c = kt_array(rows * ldc);
  float* want = malloc(rows * ldc * sizeof(float));
  memcpy(want, c, rows * ldc * sizeof(float));
  float* bias = kt_array(48);
  float* res = kt_array(48 * 48);
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, 48, &ep);
  const size_t row0 = 3, col0 = 5;
  /* The reference: the scalar MR x NR kernel on each quarter. */
  for (size_t h = 0; h * MR < mr; ++h) {
    const size_t mh = mr - h * MR < MR ? mr - h * MR : MR;
    const size_t ch = h * MR * (t ? 1 : ldc);
    for (size_t q = 0; q * NR < nr; ++q) {
      const size_t nq = nr - q * NR < NR ? nr - q * NR : NR;
      axle_f32_gemm_6x16__scalar(mh, nq, kc, a + h * a_next, b + q * b_next, ldb,
                                 want + ch + q * NR * (t ? ldc : 1), ldc, flags, &ep,
                                 row0 + h * MR, col0 + q * NR);
    }
  }
  axle_f32_gemm_12x32__avx512(mr, nr, kc, a, a_next, b, ldb, b_next, c, ldc, flags, &ep, row0,
                              col0);
  char what[160];
  snprintf(what, sizeof what, "12x32 mr=%zu nr=%zu kc=%zu ldb=%zu flags=%u ep=%d", mr, nr, kc,
           ldb, flags, e);
  kt_close(what, c, want, rows * ldc, 1e-5, 1e-5 * (double)(kc + 1));
  free(a);
  free(b);
  free(c);
  free(want);
  free(bias);
  free(res);
}

static void test_wide_ukernel(void) {
  if (skipped()) return;
  static const uint32_t flag_sets[] = {
      0, AXLE_F32_GEMM_ACCUMULATE, AXLE_F32_GEMM_FINISH,
      AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH,
      AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T,
      AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_STORE_T};
  static const size_t kcs[] = {0, 1, 2, 3, 8, 17};
  /* Packed, and in place with a row stride of exactly two panels and one
   * that is no multiple of the vector. */
  static const size_t ldbs[] = {NR, 2 * NR, 2 * NR + 5};
  /* Each flag set meets every epilogue on each tile shape's 18 K and B
   * cases (counted by blk). */
  size_t blk = 0;
  for (size_t mr = 1; mr <= 2 * MR; ++mr)
    for (size_t nr = 1; nr <= 2 * NR; ++nr)
      for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ++ki)
        for (size_t li = 0; li < sizeof ldbs / sizeof ldbs[0]; ++li, ++blk)
          for (size_t fi = 0; fi < sizeof flag_sets / sizeof flag_sets[0]; ++fi)
            wide_case(mr, nr, kcs[ki], ldbs[li], flag_sets[fi], (int)((blk + fi) % EP_COUNT));
}

/* A generated B served from a row-major k x n matrix. */
typedef struct rows_t {
  const float* data;
  size_t ld;
} rows_t;

static void rows_gen(const void* ctx, size_t k0, size_t kc, size_t c0, size_t cols, float* dst) {
  const rows_t* r = ctx;
  for (size_t p = 0; p < kc; ++p)
    memcpy(dst + p * cols, r->data + (k0 + p) * r->ld + c0, cols * sizeof(float));
}

/* Runs the tasks in order on the calling thread, as `threads` workers
 * would split them: the column chunks (and so the pairs) start where they
 * would on real threads, without any timing in the test. */
static void serial_run(void* ctx, size_t tasks, axle_task_fn fn, void* arg) {
  const uint32_t threads = *(const uint32_t*)ctx;
  for (size_t i = 0; i < tasks; ++i) fn(arg, i, (uint32_t)(i % threads));
}

enum { B_ROW = 0, B_PACKED, B_GEN, B_COL, B_FORMS };

/* C = A B under `isa`, A row-major or packed, B in form bf. */
static void run_gemm(axle_isa_t isa, size_t m, size_t n, size_t k, int a_packed, int bf, int c_t,
                     int accumulate, const axle_f32_epilogue_t* ep, uint32_t threads,
                     const float* a, const float* b, const float* bt, float* c, size_t ldc) {
  const axle_isa_t prev = axle_kernels_set_isa(isa);
  axle_f32_gemm_t g;
  memset(&g, 0, sizeof g);
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 1.0f;
  float* ap = NULL;
  float* bp = NULL;
  rows_t rb = {b, n};
  if (a_packed) {
    ap = malloc((axle_f32_gemm_packed_a_size(m, k) + 1) * sizeof(float));
    axle_f32_gemm_pack_a(m, k, 1.0f, a, k, 1, ap);
    g.a.packed = ap;
  } else {
    g.a.data = a;
    g.a.rs = k;
    g.a.cs = 1;
  }
  switch (bf) {
    case B_ROW: g.b.data = b; g.b.rs = n; g.b.cs = 1; break;
    case B_COL: g.b.data = bt; g.b.rs = 1; g.b.cs = k; break;
    case B_PACKED:
      bp = malloc((axle_f32_gemm_packed_b_size(k, n) + 1) * sizeof(float));
      axle_f32_gemm_pack_b(k, n, b, n, 1, bp);
      g.b.packed = bp;
      break;
    default: g.b.gen = rows_gen; g.b.gen_ctx = &rb; break;
  }
  g.c = c;
  g.ldc = ldc;
  g.c_transposed = c_t;
  g.accumulate = accumulate;
  g.ep = ep;
  uint32_t tctx = threads;
  const axle_parallel_t par = {serial_run, &tctx, threads};
  void* scratch = malloc(axle_f32_gemm_scratch_size(&g, threads) + 64);
  axle_f32_gemm(&g, scratch, threads > 1 ? &par : NULL);
  free(scratch);
  free(ap);
  free(bp);
  axle_kernels_set_isa(prev);
}

static void driver_case(size_t m, size_t n, size_t k, int a_packed, int bf, int c_t, int e,
                        uint32_t threads) {
  float* a = kt_array(m * k);
  float* b = kt_array(k * n);
  float* bt = malloc((k * n + 1) * sizeof(float));
  for (size_t p = 0; p < k; ++p)
    for (size_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
  const size_t rows = c_t ? n : m, cols = c_t ? m : n, ldc = cols + 3;
  float* c = kt_array(rows * ldc);
  float* want = malloc(rows * ldc * sizeof(float));
  memcpy(want, c, rows * ldc * sizeof(float));
  float* bias = kt_array(rows);
  float* res = kt_array(rows * (cols + 1));
  axle_f32_epilogue_t ep;
  make_ep(e, bias, res, cols + 1, &ep);
  const int accumulate = e % 3 == 0;
  run_gemm(AXLE_ISA_SCALAR, m, n, k, a_packed, bf, c_t, accumulate, &ep, threads, a, b, bt, want,
           ldc);
  run_gemm(AXLE_ISA_AVX512, m, n, k, a_packed, bf, c_t, accumulate, &ep, threads, a, b, bt, c,
           ldc);
  char what[160];
  snprintf(what, sizeof what, "gemm %zux%zux%zu Apacked=%d B%d ct=%d ep=%d threads=%u", m, n, k,
           a_packed, bf, c_t, e, threads);
  kt_close(what, c, want, rows * ldc, 1e-5, 2e-6 * (double)(k + 4));
  free(a);
  free(b);
  free(bt);
  free(c);
  free(want);
  free(bias);
  free(res);
}

static void test_wide_driver(void) {
  if (skipped()) return;
  /* Columns ending on a full pair, a partial second panel, a lone full or
   * partial panel; rows few (B read in place) and many (B packed); K in
   * one block and in several (ACCUMULATE between blocks). */
  static const size_t ns[] = {17, 20, 31, 32, 33, 47, 48, 63, 64, 65, 100};
  static const size_t mk[][2] = {{1, 9}, {5, 40}, {7, 7}, {13, 300}, {130, 33}, {24, 17}, {150, 260}};
  int e = 0;
  for (size_t s = 0; s < sizeof mk / sizeof mk[0]; ++s)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ++ni)
      for (int bf = 0; bf < B_FORMS; ++bf)
        for (uint32_t threads = 1; threads <= 2; ++threads) {
          driver_case(mk[s][0], ns[ni], mk[s][1], (int)((ni + threads) % 2), bf,
                      (int)((s + ni + (size_t)bf) % 2), e % EP_COUNT, threads);
          ++e;
        }
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("f32 GEMM, AVX-512 wide tile", NULL, NULL);
  if (!s || !CU_add_test(s, "12x32 kernel vs scalar 6x16 quarters", test_wide_ukernel) ||
      !CU_add_test(s, "driver at AVX-512 vs scalar", test_wide_driver)) {
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
