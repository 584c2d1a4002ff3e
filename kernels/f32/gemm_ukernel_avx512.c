/* The AVX-512 GEMM micro-kernels: the same 6 x 16 tile as the AVX2 one, one
 * zmm per row, and tiles of up to 12 x 32 over two adjacent A and two
 * adjacent B panels (tile_wide), which the driver prefers where it has them. In the 6 x 16 tile, one
 * B vector per K step and one embedded-broadcast FMA per row ({1to16}
 * straight from the packed A panel, no broadcast uop).
 *
 * Six accumulators alone would leave the FMA units idle: an FMA waits 4
 * cycles on its chain and two issue per cycle, so 8 chains are needed in
 * flight. Even and odd K steps therefore go to separate sets of accumulators
 * (12 chains on a full tile), summed once after the K loop.
 *
 * The body is specialised per number of live rows (1..6), as in the AVX2
 * kernel. Opmasks handle narrow tiles in registers, so no tile goes through
 * the scalar store: row-major rows are stored under a column mask, and
 * transposed tiles (C^T: stored row j = tile column j, `rows` floats) are
 * transposed in registers and stored under a row mask.
 * Compiled for AVX-512 per function; callers reach it only through dispatch. */
#include <immintrin.h>

#include "gemm_avx512.h"
#include "gemm_internal.h"
#include "lanes_avx2.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512dq")))
#define AXLE_AVX512_INLINE \
  __attribute__((target("avx2,fma,avx512f,avx512vl,avx512dq"), always_inline)) static inline

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

/* The full tile's epilogue, a constant in its instances: any (tested at
 * run time), or the common finishes of a row-major store with no leaky
 * slope that overwrite C: bias and clamp, bias, residual and clamp, or a
 * bias per column (a residual row, ldr = 0) and clamp. Tested
 * per tile, the flags and pointers had turned the row stores into branches
 * per row (the compiler merged the tested loops into one): with packed A,
 * bias and ReLU6, 12x32 tiles alone on Zen 5 at K = 16 219-222 -> 235-245
 * GFLOP/s, K = 24 233-241 -> 246-254; MobileNetV2's band chains' pointwise
 * expansions have such K. */
enum { EPI_ANY = 0, EPI_BIAS = 1, EPI_BIAS_RES = 2, EPI_COL_BIAS = 3 };

/* The epilogue as the stores use it, copied once per tile: C is stored
 * through the intrinsics' may-alias vector type, so fields read from *ep
 * after a store were loaded and tested again for every row (the full
 * tile with bias and clamp in L1, K = 64: 164-166 -> 170-171 GFLOP/s). */
typedef struct ep_regs_t {
  __m512 lo, hi, alpha;
  int leaky;
  const float* bias;
  const float* residual;
  size_t ldr;
} ep_regs_t;

AXLE_AVX512_INLINE ep_regs_t ep_regs(const axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_t none;
  if (!ep) {
    axle_f32_epilogue_init(&none);
    ep = &none;
  }
  const ep_regs_t e = {_mm512_set1_ps(ep->min),
                       _mm512_set1_ps(ep->max),
                       _mm512_set1_ps(ep->leaky_alpha),
                       ep->leaky,
                       ep->bias,
                       ep->residual,
                       ep->ldr};
  return e;
}

AXLE_AVX512_INLINE __m512 activate(__m512 v, const ep_regs_t* e) {
  /* max(lo, v) / min(hi, v) return v when v is NaN (second operand). */
  v = _mm512_min_ps(e->hi, _mm512_max_ps(e->lo, v));
  /* Scaled where v < 0, as axle_f32_activate: -0 and NaN are left alone. */
  if (e->leaky)
    v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v,
                           e->alpha);
  return v;
}

/* Row `row` of a row-major tile, its first nr columns (mask m). */
AXLE_AVX512_INLINE void store_row(float* cr, __m512 v, __mmask16 m, uint32_t flags,
                                  const ep_regs_t* e, size_t row, size_t col0) {
  if (flags & AXLE_F32_GEMM_ACCUMULATE) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, cr));
  if (flags & AXLE_F32_GEMM_FINISH) {
    if (e->bias) v = _mm512_add_ps(v, _mm512_set1_ps(e->bias[row]));
    if (e->residual)
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e->residual + row * e->ldr + col0));
    v = activate(v, e);
  }
  _mm512_mask_storeu_ps(cr, m, v);
}

/* Row i of a full wide tile (32 columns at cr) without a leaky slope:
 * accumulate, add the row's bias (bias_i) and residual (res_i, or NULL),
 * clamp, store. acc and fin are constants where the caller can make them. */
AXLE_AVX512_INLINE void put_row(float* cr, __m512 v0, __m512 v1, const int acc, const int fin,
                                const float* bias_i, const float* res_i, const ep_regs_t* e) {
  if (acc) {
    v0 = _mm512_add_ps(v0, _mm512_loadu_ps(cr));
    v1 = _mm512_add_ps(v1, _mm512_loadu_ps(cr + NR));
  }
  if (fin) {
    const __m512 b = _mm512_set1_ps(*bias_i);
    v0 = _mm512_add_ps(v0, b);
    v1 = _mm512_add_ps(v1, b);
    if (res_i) {
      v0 = _mm512_add_ps(v0, _mm512_loadu_ps(res_i));
      v1 = _mm512_add_ps(v1, _mm512_loadu_ps(res_i + NR));
    }
    v0 = _mm512_min_ps(e->hi, _mm512_max_ps(e->lo, v0));
    v1 = _mm512_min_ps(e->hi, _mm512_max_ps(e->lo, v1));
  }
  _mm512_storeu_ps(cr, v0);
  _mm512_storeu_ps(cr + NR, v1);
}

/* Stored row `col` of a transposed tile: its first `rows` floats (mask m).
 * One activation serves both widths: v8 goes through it widened, and the
 * undefined upper lanes are dropped again. */
AXLE_AVX512_INLINE void store_col(float* cr, __m256 v8, __mmask8 m, uint32_t flags,
                                  const ep_regs_t* e, size_t row0, size_t col) {
  if (flags & AXLE_F32_GEMM_ACCUMULATE) v8 = _mm256_add_ps(v8, _mm256_maskz_loadu_ps(m, cr));
  if (flags & AXLE_F32_GEMM_FINISH) {
    if (e->bias) v8 = _mm256_add_ps(v8, _mm256_set1_ps(e->bias[col]));
    if (e->residual)
      v8 = _mm256_add_ps(v8, _mm256_maskz_loadu_ps(m, e->residual + col * e->ldr + row0));
    v8 = _mm512_castps512_ps256(activate(_mm512_castps256_ps512(v8), e));
  }
  _mm256_mask_storeu_ps(cr, m, v8);
}

/* The first nr columns of the tile r0..r5, transposed: column j (rows 0..5
 * and two zeros) becomes 8 floats, of which `rows` are stored at c + j * ldc. */
AXLE_AVX512_INLINE void store_t(float* c, size_t ldc, size_t rows, size_t nr, __m512 r0,
                                __m512 r1, __m512 r2, __m512 r3, __m512 r4, __m512 r5,
                                uint32_t flags, const ep_regs_t* e, size_t row0, size_t col0) {
  /* Within each 128-bit lane L, u[q] holds rows 0..3 of column 4L + q and
   * u[4 + q] rows 4, 5 (then zeros) of the same column. */
  const __m512 z = _mm512_setzero_ps();
  const __m512 t0 = _mm512_unpacklo_ps(r0, r1), t1 = _mm512_unpackhi_ps(r0, r1);
  const __m512 t2 = _mm512_unpacklo_ps(r2, r3), t3 = _mm512_unpackhi_ps(r2, r3);
  const __m512 t4 = _mm512_unpacklo_ps(r4, r5), t5 = _mm512_unpackhi_ps(r4, r5);
  const __m512 u[8] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                       _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE),
                       _mm512_shuffle_ps(t4, z, 0x44),  _mm512_shuffle_ps(t4, z, 0xEE),
                       _mm512_shuffle_ps(t5, z, 0x44),  _mm512_shuffle_ps(t5, z, 0xEE)};
  /* Interleave the lanes of u[q] and u[4 + q]: 256-bit half h of lo holds
   * column 4h + q, of hi column 8 + 4h + q. */
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const __mmask8 m = (__mmask8)((1u << rows) - 1u);
  for (size_t q = 0; q < 4; ++q) {
    const __m512 lo = _mm512_permutex2var_ps(u[q], lo_idx, u[4 + q]);
    const __m512 hi = _mm512_permutex2var_ps(u[q], hi_idx, u[4 + q]);
    const __m256 col[4] = {_mm512_castps512_ps256(lo), _mm512_extractf32x8_ps(lo, 1),
                           _mm512_castps512_ps256(hi), _mm512_extractf32x8_ps(hi, 1)};
    for (size_t h = 0; h < 4; ++h) {
      const size_t j = 4 * h + q;
      if (j < nr) store_col(c + j * ldc, col[h], m, flags, e, row0, col0 + j);
    }
  }
}

/* The tile for R live rows; R is a constant in every instantiation, so the
 * unused accumulators and their FMAs vanish. */
AXLE_AVX512_INLINE void tile(const size_t R, size_t nr, size_t kc, const float* a,
                             const float* b, size_t ldb, float* c, size_t ldc, uint32_t flags,
                             const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
  const int transposed = (flags & AXLE_F32_GEMM_STORE_T) != 0;
  if (!transposed) axle_f32_gemm_prefetch_epilogue(R, nr, c, ldc, flags, ep, row0, col0);
  /* x: even K steps, y: odd ones, summed after the loop. */
  __m512 x[MR], y[MR];
#pragma GCC unroll 6
  for (size_t i = 0; i < MR; ++i) x[i] = y[i] = _mm512_setzero_ps();
  /* Next B panel into L2 at the pace this one is consumed, where the driver
   * asks (AXLE_F32_GEMM_PREFETCH_B; see the AVX2 kernel: pre-packed weights
   * streamed from memory). */
  const size_t next_panel = ldb == NR ? kc * NR : NR;
  /* And the next A panel (PREFETCH_A; the driver packs A panels kc * MR
   * apart): the one-panel tiles of Winograd's per-point products at 7x7
   * stream 1 MB of weights per point for 16 columns (see tile_wide). */
  const size_t next_a = kc * MR;
  const int pf_a = (flags & AXLE_F32_GEMM_PREFETCH_A) != 0;
  const int pf_b = (flags & AXLE_F32_GEMM_PREFETCH_B) != 0;
  axle_f32_gemm_share_t share = axle_f32_gemm_share(flags, kc / 2, 2);
  const float* pf = b + next_panel + share.first * ldb;
  size_t p = 0;
#pragma GCC unroll 2
  for (; p + 2 <= kc; p += 2) {
    if (pf_b && axle_f32_gemm_share_due(&share)) {
      _mm_prefetch((const char*)pf, _MM_HINT_T1);
      _mm_prefetch((const char*)(pf + ldb), _MM_HINT_T1);
      pf += 2 * ldb;
    }
    if (pf_a) _mm_prefetch((const char*)(a + next_a), _MM_HINT_T1);
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + ldb);
#pragma GCC unroll 6
    for (size_t i = 0; i < R; ++i) {
      x[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, x[i]);
      y[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[MR + i]), b1, y[i]);
    }
    a += 2 * MR;
    b += 2 * ldb;
  }
  if (p < kc) {
    const __m512 b0 = _mm512_loadu_ps(b);
#pragma GCC unroll 6
    for (size_t i = 0; i < R; ++i) x[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, x[i]);
  }
#pragma GCC unroll 6
  for (size_t i = 0; i < MR; ++i) x[i] = _mm512_add_ps(x[i], y[i]);

  const ep_regs_t e = ep_regs(ep);
  if (transposed) {
    /* By value, as in tile_wide. */
    store_t(c, ldc, R, nr, x[0], x[1], x[2], x[3], x[4], x[5], flags, &e, row0, col0);
    return;
  }
  const __mmask16 m = (__mmask16)((1u << nr) - 1u);
#pragma GCC unroll 6
  for (size_t i = 0; i < R; ++i) store_row(c + i * ldc, x[i], m, flags, &e, row0 + i, col0);
}

/* R live rows (1..2 MR; rows MR.. from the second A panel, a_next floats
 * on) over two B panels, nr = NR + 1..2 NR. With 6 rows, 12 accumulators
 * are already enough independent FMA chains, so K needs no even/odd split,
 * and each broadcast of A feeds two FMAs (8 loads per 12 FMAs instead of 7
 * per 6 in tile()); with 12 rows, 24 accumulators and 14 loads per 24 FMAs
 * (the 6-row tile measured ~0.75 of the FMA peak in L1, the 12-row one
 * ~0.85, 0.87-0.93 as the full tile's instances below at K = 256). 26 of
 * the 32 zmm registers are live in the loop then. full (12 rows, nr =
 * 2 NR) and the prefetch switches are constants in the full tile's
 * instances: tested in its K loop, or with the second B panel loaded under
 * a mask, it ran 4-8 % slower (L1, K = 27..256, with an epilogue). */
AXLE_AVX512_INLINE void tile_wide(const size_t R, const int full, const int blk, const int pf_a,
                                  const int pf_b, const int epi, size_t nr, size_t kc,
                                  const float* a, size_t a_next, const float* b, size_t ldb,
                                  size_t b_next, float* c, size_t ldc, uint32_t flags,
                                  const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
  const int transposed = (flags & AXLE_F32_GEMM_STORE_T) != 0;
  if (!transposed) axle_f32_gemm_prefetch_epilogue(R, nr, c, ldc, flags, ep, row0, col0);
  /* Masked loads never fault on the lanes left out. */
  const __mmask16 m1 = full ? (__mmask16)0xFFFFu : (__mmask16)((1u << (nr - NR)) - 1u);
  const size_t r0 = R < MR ? R : MR, r1 = R - r0; /* rows from each A panel */
  __m512 x[2 * MR], y[2 * MR];
#pragma GCC unroll 12
  for (size_t i = 0; i < 2 * MR; ++i) x[i] = y[i] = _mm512_setzero_ps();
  const float* a1 = a + a_next;
  const float* b1 = b + b_next;
  /* Where the driver asks: the next pair of B panels (2 b_next further on)
   * into L2, as in tile(), and the next row tile's A panels (2 a_next on):
   * in a network, pre-packed weights come from memory, and the hardware
   * prefetcher alone left ResNet-50's 1x1 layers 10-15 % slower (one line
   * per panel every two K steps covers the 48 bytes they take). */
  const size_t next = 2 * b_next, a_ahead = 2 * a_next;
  axle_f32_gemm_share_t share = axle_f32_gemm_share(flags, kc, 1);
  const float* pf = b + next + share.first * ldb;
  if (blk) {
    /* A read in place, blocked by 16 along K (AXLE_F32_GEMM_A_BLOCKED): K
     * step q of a block holds row i at a[16 i + q], so the 12 rows' values
     * of 16 steps are 12 adjacent lines, as packed, and every broadcast is
     * one displacement off a; blocks lie a_next floats apart. */
    for (size_t p = 0; p < kc; p += 16, a += a_next) {
#pragma GCC unroll 16
      for (size_t q = 0; q < 16; ++q) {
        if (pf_b && axle_f32_gemm_share_due(&share)) {
          _mm_prefetch((const char*)pf, _MM_HINT_T1);
          _mm_prefetch((const char*)(pf + b_next), _MM_HINT_T1);
          pf += ldb;
        }
        const __m512 v0 = _mm512_loadu_ps(b);
        const __m512 v1 = full ? _mm512_loadu_ps(b1) : _mm512_maskz_loadu_ps(m1, b1);
#pragma GCC unroll 12
        for (size_t i = 0; i < R; ++i) {
          const __m512 ai = _mm512_set1_ps(a[16 * i + q]);
          x[i] = _mm512_fmadd_ps(ai, v0, x[i]);
          y[i] = _mm512_fmadd_ps(ai, v1, y[i]);
        }
        b += ldb;
        b1 += ldb;
      }
    }
  } else {
#pragma GCC unroll 2
    for (size_t p = 0; p < kc; ++p) {
      if (pf_b && axle_f32_gemm_share_due(&share)) {
        _mm_prefetch((const char*)pf, _MM_HINT_T1);
        _mm_prefetch((const char*)(pf + b_next), _MM_HINT_T1);
        pf += ldb;
      }
      if (pf_a && p % 2 == 0) {
        _mm_prefetch((const char*)(a + a_ahead), _MM_HINT_T1);
        if (r1) _mm_prefetch((const char*)(a1 + a_ahead), _MM_HINT_T1);
      }
      const __m512 v0 = _mm512_loadu_ps(b);
      const __m512 v1 = full ? _mm512_loadu_ps(b1) : _mm512_maskz_loadu_ps(m1, b1);
#pragma GCC unroll 6
      for (size_t i = 0; i < r0; ++i) {
        const __m512 ai = _mm512_set1_ps(a[i]);
        x[i] = _mm512_fmadd_ps(ai, v0, x[i]);
        y[i] = _mm512_fmadd_ps(ai, v1, y[i]);
      }
#pragma GCC unroll 6
      for (size_t i = 0; i < r1; ++i) {
        const __m512 ai = _mm512_set1_ps(a1[i]);
        x[MR + i] = _mm512_fmadd_ps(ai, v0, x[MR + i]);
        y[MR + i] = _mm512_fmadd_ps(ai, v1, y[MR + i]);
      }
      a += MR;
      a1 += MR;
      b += ldb;
      b1 += ldb;
    }
  }

  const ep_regs_t e = ep_regs(ep);
  if (epi == EPI_COL_BIAS) {
    /* A bias per column (a residual row added to every row: the
     * channels-last chain's expansion), loaded once for the tile. */
    const __m512 r0 = _mm512_loadu_ps(e.residual + col0);
    const __m512 r1 = _mm512_loadu_ps(e.residual + col0 + NR);
#pragma GCC unroll 12
    for (size_t i = 0; i < R; ++i) {
      _mm512_storeu_ps(c + i * ldc,
                       _mm512_min_ps(e.hi, _mm512_max_ps(e.lo, _mm512_add_ps(x[i], r0))));
      _mm512_storeu_ps(c + i * ldc + NR,
                       _mm512_min_ps(e.hi, _mm512_max_ps(e.lo, _mm512_add_ps(y[i], r1))));
    }
    return;
  }
  if (epi != EPI_ANY) {
    /* First, so that no test of the flags or pointers below comes before. */
    const float* res = epi == EPI_BIAS_RES ? e.residual + row0 * e.ldr + col0 : NULL;
#pragma GCC unroll 12
    for (size_t i = 0; i < R; ++i)
      put_row(c + i * ldc, x[i], y[i], 0, 1, e.bias + row0 + i, res ? res + i * e.ldr : NULL, &e);
    return;
  }
  if (transposed) {
    /* Accumulators passed by value: taking their address would keep them
     * in memory through the K loop. */
    store_t(c, ldc, r0, NR, x[0], x[1], x[2], x[3], x[4], x[5], flags, &e, row0, col0);
    store_t(c + NR * ldc, ldc, r0, nr - NR, y[0], y[1], y[2], y[3], y[4], y[5], flags, &e, row0,
            col0 + NR);
    if (r1) {
      store_t(c + MR, ldc, r1, NR, x[6], x[7], x[8], x[9], x[10], x[11], flags, &e, row0 + MR,
              col0);
      store_t(c + MR + NR * ldc, ldc, r1, nr - NR, y[6], y[7], y[8], y[9], y[10], y[11], flags,
              &e, row0 + MR, col0 + NR);
    }
    return;
  }
  /* The full tile's epilogue without a leaky slope, its tests and row
   * addresses taken once: through store_row, in this function's register
   * pressure, each vector tested the flags and pointers again and
   * recomputed its addresses, ~15 instructions, ~80 cycles a tile (a K = 16
   * tile computes in ~190). Tiles alone, bias and ReLU6, with or without a
   * residual: 6-26 ns (5-9 %) less a tile at K = 2-256. */
  if (full && !e.leaky && (!(flags & AXLE_F32_GEMM_FINISH) || e.bias)) {
    /* Accumulating, or blocked A (EPI_ANY instances only). */
    const int acc = (flags & AXLE_F32_GEMM_ACCUMULATE) != 0;
    const int fin = (flags & AXLE_F32_GEMM_FINISH) != 0;
    const float* bias = fin ? e.bias + row0 : NULL;
    const float* res = fin && e.residual ? e.residual + row0 * e.ldr + col0 : NULL;
#pragma GCC unroll 12
    for (size_t i = 0; i < R; ++i)
      put_row(c + i * ldc, x[i], y[i], acc, fin, fin ? bias + i : NULL,
              res ? res + i * e.ldr : NULL, &e);
    return;
  }
#pragma GCC unroll 12
  for (size_t i = 0; i < R; ++i) {
    store_row(c + i * ldc, x[i], (__mmask16)0xFFFF, flags, &e, row0 + i, col0);
    store_row(c + i * ldc + NR, y[i], m1, flags, &e, row0 + i, col0 + NR);
  }
}

/* The full tile's instances, one per prefetch switch pair and epilogue
 * kind, each a function of its own: inlined into one, every change to any
 * of them moved the others' register allocation (an accumulator kept on
 * the stack in one K loop or another) and their large shared frame cost
 * every call. */
typedef void (*full_tile_fn)(size_t kc, const float* a, size_t a_next, const float* b, size_t ldb,
                             size_t b_next, float* c, size_t ldc, uint32_t flags,
                             const axle_f32_epilogue_t* ep, size_t row0, size_t col0);
#define AXLE_FULL_TILE(NAME, BLK, PF_A, PF_B, EPI)                                            \
  AXLE_AVX512 __attribute__((noinline)) static void NAME(                                     \
      size_t kc, const float* a, size_t a_next, const float* b, size_t ldb, size_t b_next,    \
      float* c, size_t ldc, uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,       \
      size_t col0) {                                                                          \
    tile_wide(2 * MR, 1, BLK, PF_A, PF_B, EPI, 2 * NR, kc, a, a_next, b, ldb, b_next, c, ldc, \
              flags, ep, row0, col0);                                                         \
  }
#define AXLE_FULL_TILES(SUFFIX, EPI)                   \
  AXLE_FULL_TILE(full_tile_none##SUFFIX, 0, 0, 0, EPI) \
  AXLE_FULL_TILE(full_tile_a##SUFFIX, 0, 1, 0, EPI)    \
  AXLE_FULL_TILE(full_tile_b##SUFFIX, 0, 0, 1, EPI)    \
  AXLE_FULL_TILE(full_tile_ab##SUFFIX, 0, 1, 1, EPI)
AXLE_FULL_TILES(, EPI_ANY)
AXLE_FULL_TILES(_bias, EPI_BIAS)
AXLE_FULL_TILES(_bias_res, EPI_BIAS_RES)
AXLE_FULL_TILES(_col_bias, EPI_COL_BIAS)
/* [epilogue kind][prefetch A][prefetch B] */
static const full_tile_fn k_full_tiles[4][2][2] = {
    {{full_tile_none, full_tile_b}, {full_tile_a, full_tile_ab}},
    {{full_tile_none_bias, full_tile_b_bias}, {full_tile_a_bias, full_tile_ab_bias}},
    {{full_tile_none_bias_res, full_tile_b_bias_res},
     {full_tile_a_bias_res, full_tile_ab_bias_res}},
    {{full_tile_none_col_bias, full_tile_b_col_bias},
     {full_tile_a_col_bias, full_tile_ab_col_bias}},
};
/* A in place, blocked (no A panels to fetch ahead: the driver's blocked A
 * is a buffer just written, in cache). */
AXLE_FULL_TILE(full_tile_blk, 1, 0, 0, EPI_ANY)
AXLE_FULL_TILE(full_tile_blk_b, 1, 0, 1, EPI_ANY)
#undef AXLE_FULL_TILES
#undef AXLE_FULL_TILE

/* The epilogue kind of a full tile's flags and epilogue. */
static int full_tile_epi(uint32_t flags, const axle_f32_epilogue_t* ep) {
  const uint32_t which = AXLE_F32_GEMM_FINISH | AXLE_F32_GEMM_ACCUMULATE | AXLE_F32_GEMM_STORE_T;
  if ((flags & which) != AXLE_F32_GEMM_FINISH || !ep || ep->leaky) return EPI_ANY;
  if (!ep->bias) return ep->residual && !ep->ldr ? EPI_COL_BIAS : EPI_ANY;
  if (!ep->residual) return EPI_BIAS;
  return ep->ldr ? EPI_BIAS_RES : EPI_ANY;
}

/* The full-tile instance for these flags and epilogue. */
static full_tile_fn full_tile_for(uint32_t flags, const axle_f32_epilogue_t* ep) {
  const int pf_a = (flags & AXLE_F32_GEMM_PREFETCH_A) != 0;
  const int pf_b = (flags & AXLE_F32_GEMM_PREFETCH_B) != 0;
  return k_full_tiles[full_tile_epi(flags, ep)][pf_a][pf_b];
}

/* Tiles short of 12 x 32 over two B panels (R rows, nr = NR + 1..2 NR),
 * A packed (BLK 0) or blocked in place (1): a function each, so that the
 * blocked loops cannot change the packed ones' register allocation. */
#define AXLE_PART_TILE(NAME, BLK)                                                                 \
  AXLE_AVX512 __attribute__((noinline)) static void NAME(                                         \
      size_t mr, size_t nr, size_t kc, const float* a, size_t a_next, const float* b, size_t ldb, \
      size_t b_next, float* c, size_t ldc, uint32_t flags, const axle_f32_epilogue_t* ep,         \
      size_t row0, size_t col0) {                                                                 \
    const int pf_a = !(BLK) && (flags & AXLE_F32_GEMM_PREFETCH_A) != 0;                           \
    const int pf_b = (flags & AXLE_F32_GEMM_PREFETCH_B) != 0;                                     \
    part_rows(mr, BLK, pf_a, pf_b, nr, kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep, row0,    \
              col0);                                                                              \
  }
AXLE_AVX512_INLINE void part_rows(size_t mr, const int blk, int pf_a, int pf_b, size_t nr,
                                  size_t kc, const float* a, size_t a_next, const float* b,
                                  size_t ldb, size_t b_next, float* c, size_t ldc, uint32_t flags,
                                  const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
#define AXLE_WIDE(R)                                                                              \
  tile_wide(R, 0, blk, pf_a, pf_b, EPI_ANY, nr, kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep, \
            row0, col0)
  switch (mr) {
    case 1: AXLE_WIDE(1); break;
    case 2: AXLE_WIDE(2); break;
    case 3: AXLE_WIDE(3); break;
    case 4: AXLE_WIDE(4); break;
    case 5: AXLE_WIDE(5); break;
    case 6: AXLE_WIDE(6); break;
    case 7: AXLE_WIDE(7); break;
    case 8: AXLE_WIDE(8); break;
    case 9: AXLE_WIDE(9); break;
    case 10: AXLE_WIDE(10); break;
    case 11: AXLE_WIDE(11); break;
    default: AXLE_WIDE(12); break;
  }
#undef AXLE_WIDE
}
AXLE_PART_TILE(part_tile, 0)
AXLE_PART_TILE(part_tile_blk, 1)
#undef AXLE_PART_TILE

/* Tiles of at most NARROW_MAX columns: the last column tile of a GEMM
 * whose N leaves a few over a multiple of 16 (1x1 layers at 14x14: 196
 * pixels leave 4; Winograd at 28x28: 49 tiles leave 17, 16 + 1). With the
 * columns in the lanes, as in tile(), such a tile runs all 16 lanes for
 * those few. Here the rows are in the lanes: 0..5 from the first A panel
 * and 6..11 from the second (two masked loads of a K step), each column
 * one accumulator fed by a broadcast of B, so 12 of 16 lanes work whatever
 * nr is. Even and odd K steps go to separate accumulators: 2 nr chains,
 * from nr = 2 the four that 4-cycle FMAs at one zmm a cycle need (Zen 4).
 * Stored transposed, column j is then row j of C^T as it stands;
 * otherwise rows come from transposes in registers. */
enum { NARROW_MAX = 8 };

AXLE_AVX512_INLINE void narrow_tile(const int NC, const int two, size_t mr, size_t kc,
                                    const float* a, size_t a_next, const float* b, size_t ldb,
                                    float* c, size_t ldc, uint32_t flags,
                                    const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
  const __mmask16 rows = (__mmask16)((1u << mr) - 1u);
  const __mmask16 m0 = (__mmask16)(rows & 0x3Fu), m1 = (__mmask16)(rows & ~0x3Fu);
  /* Lane 6 + i of a load here is row i of the second panel. Through
   * uintptr_t: the address lies before that panel. Without a second panel
   * a + a_next may lie past the buffer, so it is not formed. */
  const float* a1 = two ? (const float*)((uintptr_t)(a + a_next) - MR * sizeof(float)) : a;
  __m512 x[NARROW_MAX], y[NARROW_MAX];
#pragma GCC unroll 8
  for (int j = 0; j < NC; ++j) x[j] = y[j] = _mm512_setzero_ps();
  const float* b1 = b + ldb;
  const size_t step = 2 * ldb;
  size_t p = 0;
  for (; p + 2 <= kc; p += 2, a += 2 * MR, a1 += 2 * MR, b += step, b1 += step) {
    __m512 v0 = _mm512_maskz_loadu_ps(m0, a), v1 = _mm512_maskz_loadu_ps(m0, a + MR);
    if (two) {
      v0 = _mm512_mask_loadu_ps(v0, m1, a1);
      v1 = _mm512_mask_loadu_ps(v1, m1, a1 + MR);
    }
#pragma GCC unroll 8
    for (int j = 0; j < NC; ++j) {
      x[j] = _mm512_fmadd_ps(v0, _mm512_set1_ps(b[j]), x[j]);
      y[j] = _mm512_fmadd_ps(v1, _mm512_set1_ps(b1[j]), y[j]);
    }
  }
  if (p < kc) {
    __m512 v0 = _mm512_maskz_loadu_ps(m0, a);
    if (two) v0 = _mm512_mask_loadu_ps(v0, m1, a1);
#pragma GCC unroll 8
    for (int j = 0; j < NC; ++j) x[j] = _mm512_fmadd_ps(v0, _mm512_set1_ps(b[j]), x[j]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < NC; ++j) x[j] = _mm512_add_ps(x[j], y[j]);
  const ep_regs_t e = ep_regs(ep);
  if (flags & AXLE_F32_GEMM_STORE_T) {
    /* Row j of C^T: its bias and residual row are those of column col0 + j. */
#pragma GCC unroll 8
    for (int j = 0; j < NC; ++j) store_row(c + j * ldc, x[j], rows, flags, &e, col0 + j, row0);
    return;
  }
  /* Rows 0..7 and 8..11 as two 8 x 8 transposes of the columns' halves. */
  const __mmask16 cols = (__mmask16)((1u << NC) - 1u);
  for (int h = 0; h < (two && mr > 8 ? 2 : 1); ++h) {
    __m256 r[NARROW_MAX];
#pragma GCC unroll 8
    for (int j = 0; j < NARROW_MAX; ++j)
      if (j >= NC)
        r[j] = _mm256_setzero_ps();
      else
        r[j] = h ? _mm512_extractf32x8_ps(x[j], 1) : _mm512_castps512_ps256(x[j]);
    axle_f32_transpose8__avx(r);
    const size_t end = mr < 8 * (size_t)h + 8 ? mr : 8 * (size_t)h + 8;
    for (size_t i = 8 * (size_t)h; i < end; ++i)
      store_row(c + i * ldc, _mm512_zextps256_ps512(r[i % 8]), cols, flags, &e, row0 + i, col0);
  }
}

/* One function for every narrow tile: nr and whether the second A panel
 * has rows are constants in each case. */
AXLE_AVX512 __attribute__((noinline)) static void narrow(
    size_t mr, size_t nr, size_t kc, const float* a, size_t a_next, const float* b, size_t ldb,
    float* c, size_t ldc, uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
#define AXLE_NARROW(NC)                                                             \
  case NC:                                                                          \
    if (mr > MR)                                                                    \
      narrow_tile(NC, 1, mr, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0); \
    else                                                                            \
      narrow_tile(NC, 0, mr, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0); \
    break
  switch (nr) {
    AXLE_NARROW(1);
    AXLE_NARROW(2);
    AXLE_NARROW(3);
    AXLE_NARROW(4);
    AXLE_NARROW(5);
    AXLE_NARROW(6);
    AXLE_NARROW(7);
    default:
      AXLE_NARROW(8);
  }
#undef AXLE_NARROW
}

/* Up to 2 MR rows of one B panel: the 6 x 16 tile per A panel. */
AXLE_AVX512 static void panel_6x16(size_t mr, size_t nr, size_t kc, const float* a, size_t a_next,
                                   const float* b, size_t ldb, float* c, size_t ldc, uint32_t flags,
                                   const axle_f32_epilogue_t* ep, size_t row0, size_t col0) {
  axle_f32_gemm_6x16__avx512(mr < MR ? mr : MR, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
  if (mr > MR) {
    const size_t c_rs = (flags & AXLE_F32_GEMM_STORE_T) ? 1 : ldc;
    axle_f32_gemm_6x16__avx512(mr - MR, nr, kc, a + a_next, b, ldb, c + MR * c_rs, ldc, flags, ep,
                               row0 + MR, col0);
  }
}

/* Only dispatch: each kind of tile is a function of its own (above). */
AXLE_AVX512 void axle_f32_gemm_12x32__avx512(size_t mr, size_t nr, size_t kc, const float* a,
                                             size_t a_next, const float* b, size_t ldb,
                                             size_t b_next, float* c, size_t ldc, uint32_t flags,
                                             const axle_f32_epilogue_t* ep, size_t row0,
                                             size_t col0) {
  if (flags & AXLE_F32_GEMM_A_BLOCKED) {
    const int pf_b = (flags & AXLE_F32_GEMM_PREFETCH_B) != 0;
    if (mr == 2 * MR && nr == 2 * NR)
      (pf_b ? full_tile_blk_b : full_tile_blk)(kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep,
                                               row0, col0);
    else
      part_tile_blk(mr, nr, kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep, row0, col0);
  } else if (mr == 2 * MR && nr == 2 * NR) {
    /* The full tile, most of any GEMM, without the tests in its K loop. */
    full_tile_for(flags, ep)(kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep, row0, col0);
  } else if (nr > NR + NARROW_MAX) {
    part_tile(mr, nr, kc, a, a_next, b, ldb, b_next, c, ldc, flags, ep, row0, col0);
  } else if (nr > NR) {
    /* A few columns past one panel: the first panel's 6 x 16 tiles and a
     * narrow tile for the rest cost less than a wide tile of 32. */
    panel_6x16(mr, NR, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0);
    const size_t c_cs = (flags & AXLE_F32_GEMM_STORE_T) ? ldc : 1;
    narrow(mr, nr - NR, kc, a, a_next, b + b_next, ldb, c + NR * c_cs, ldc, flags, ep, row0,
           col0 + NR);
  } else if (nr <= NARROW_MAX) {
    narrow(mr, nr, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0);
  } else {
    panel_6x16(mr, nr, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0);
  }
}

AXLE_AVX512 void axle_f32_gemm_12x32_run__avx512(size_t count, size_t kc, const float* a,
                                                 size_t a_next, const float* b, size_t ldb,
                                                 size_t b_next, size_t b_step, float* c, size_t ldc,
                                                 size_t c_step, uint32_t flags,
                                                 const axle_f32_epilogue_t* ep, size_t row0,
                                                 size_t col0) {
  const full_tile_fn full = full_tile_for(flags, ep);
  for (size_t t = 0; t < count; ++t)
    full(kc, a, a_next, b + t * b_step, ldb, b_next, c + t * c_step, ldc, flags, ep, row0,
         col0 + t * 2 * NR);
}

AXLE_AVX512 void axle_f32_gemm_6x16__avx512(size_t mr, size_t nr, size_t kc, const float* a,
                                            const float* b, size_t ldb, float* c, size_t ldc,
                                            uint32_t flags, const axle_f32_epilogue_t* ep,
                                            size_t row0, size_t col0) {
  switch (mr) {
    case 1: tile(1, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
    case 2: tile(2, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
    case 3: tile(3, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
    case 4: tile(4, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
    case 5: tile(5, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
    default: tile(6, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0); break;
  }
}

AXLE_AVX512 void axle_f32_gemm_sum__avx512(size_t cols, float* c, const float* parts,
                                           size_t part_stride, size_t nparts,
                                           const axle_f32_epilogue_t* ep, size_t row) {
  const ep_regs_t e = ep_regs(ep);
  for (size_t q = 0; q < cols; q += NR) {
    const size_t n = cols - q < NR ? cols - q : NR;
    const __mmask16 m = (__mmask16)((1u << n) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, c + q);
    for (size_t p = 0; p < nparts; ++p)
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, parts + p * part_stride + q));
    store_row(c + q, v, m, AXLE_F32_GEMM_FINISH, &e, row, q);
  }
}
