/* The AVX2/FMA GEMM micro-kernel: a 6 x 16 tile held in 12 ymm accumulators.
 * Per k step it loads two vectors of B and broadcasts one value of A per row,
 * so 12 FMAs share 8 loads, which keeps Zen 3's two FMA pipes busy from L1.
 *
 * The body is specialised per number of live rows (1..6): a 1-row tile (a
 * fully connected layer at batch 1) issues 2 FMAs per k step instead of 12,
 * and edge rows are never computed. Full-width tiles store from registers
 * with the epilogue applied there, row-major or transposed (C^T: 16 stored
 * rows of `rows` floats, the 6 x 8 halves transposed in registers); only
 * tiles narrower than 16 columns spill to the shared scalar store.
 * Compiled for AVX2 per function; callers reach it only through dispatch. */
#include <immintrin.h>
#include <math.h>

#include "gemm_internal.h"
#include "lanes_avx2.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

/* The epilogue as the stores use it, copied once per tile (see the AVX-512
 * kernel: fields read from *ep after a store through the intrinsics'
 * may-alias types are loaded again for every row). */
typedef struct ep_regs_t {
  __m256 lo, hi, alpha;
  int leaky;
  const float* bias;
  const float* residual;
  size_t ldr;
} ep_regs_t;

AXLE_AVX2_INLINE ep_regs_t ep_regs(const axle_f32_epilogue_t* ep) {
  axle_f32_epilogue_t none;
  if (!ep) {
    axle_f32_epilogue_init(&none);
    ep = &none;
  }
  const ep_regs_t e = {_mm256_set1_ps(ep->min),
                       _mm256_set1_ps(ep->max),
                       _mm256_set1_ps(ep->leaky_alpha),
                       ep->leaky,
                       ep->bias,
                       ep->residual,
                       ep->ldr};
  return e;
}

AXLE_AVX2_INLINE __m256 activate(__m256 v, const ep_regs_t* e) {
  /* max(lo, v) / min(hi, v) return v when v is NaN (second operand). */
  v = _mm256_min_ps(e->hi, _mm256_max_ps(e->lo, v));
  if (e->leaky) v = _mm256_blendv_ps(v, _mm256_mul_ps(v, e->alpha), v);
  return v;
}

/* Row r of a full-width row-major tile: accumulate, epilogue, store. */
AXLE_AVX2_INLINE void store_row(float* cr, __m256 v0, __m256 v1, uint32_t flags,
                                const ep_regs_t* e, size_t row, size_t col0) {
  if (flags & AXLE_F32_GEMM_ACCUMULATE) {
    v0 = _mm256_add_ps(v0, _mm256_loadu_ps(cr));
    v1 = _mm256_add_ps(v1, _mm256_loadu_ps(cr + 8));
  }
  if (flags & AXLE_F32_GEMM_FINISH) {
    if (e->bias) {
      const __m256 vb = _mm256_broadcast_ss(e->bias + row);
      v0 = _mm256_add_ps(v0, vb);
      v1 = _mm256_add_ps(v1, vb);
    }
    if (e->residual) {
      const float* rr = e->residual + row * e->ldr + col0;
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(rr));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(rr + 8));
    }
    v0 = activate(v0, e);
    v1 = activate(v1, e);
  }
  _mm256_storeu_ps(cr, v0);
  _mm256_storeu_ps(cr + 8, v1);
}

/* First `rows` (<= 6) floats of v at p, and the reverse. */
AXLE_AVX2_INLINE void store_part(float* p, __m256 v, size_t rows) {
  if (rows == 6) {
    _mm_storeu_ps(p, _mm256_castps256_ps128(v));
    _mm_storel_pi((__m64*)(p + 4), _mm256_extractf128_ps(v, 1));
  } else {
    float t[8] __attribute__((aligned(32)));
    _mm256_store_ps(t, v);
    for (size_t i = 0; i < rows; ++i) p[i] = t[i];
  }
}

AXLE_AVX2_INLINE __m256 load_part(const float* p, size_t rows) {
  if (rows == 6)
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)),
                                _mm_loadl_pi(_mm_setzero_ps(), (const __m64*)(p + 4)), 1);
  float t[8] __attribute__((aligned(32))) = {0};
  for (size_t i = 0; i < rows; ++i) t[i] = p[i];
  return _mm256_load_ps(t);
}

/* One half (8 columns) of a transposed tile: column j of the six row
 * vectors becomes stored row col0 + j, `rows` floats long. */
AXLE_AVX2_INLINE void store_half_t(float* c, size_t ldc, size_t rows, __m256 r0, __m256 r1,
                                   __m256 r2, __m256 r3, __m256 r4, __m256 r5, uint32_t flags,
                                   const ep_regs_t* e, size_t row0, size_t col0) {
  const __m256 z = _mm256_setzero_ps();
  __m256 col[8] = {r0, r1, r2, r3, r4, r5, z, z};
  axle_f32_transpose8__avx(col);
  for (size_t j = 0; j < 8; ++j) {
    float* cr = c + j * ldc;
    __m256 v = col[j];
    if (flags & AXLE_F32_GEMM_ACCUMULATE) v = _mm256_add_ps(v, load_part(cr, rows));
    if (flags & AXLE_F32_GEMM_FINISH) {
      if (e->bias) v = _mm256_add_ps(v, _mm256_broadcast_ss(e->bias + col0 + j));
      if (e->residual)
        v = _mm256_add_ps(v, load_part(e->residual + (col0 + j) * e->ldr + row0, rows));
      v = activate(v, e);
    }
    store_part(cr, v, rows);
  }
}

/* The tile for R live rows; R is a constant in every instantiation, so the
 * unused accumulators and their FMAs vanish. So is `shared` (a prefetch
 * share in flags): this kernel prefetches on every tile, and counting a
 * share's steps in every K loop, or even keeping a separate prefetch
 * pointer, cost 3-5 % of SGEMM (256: 118-119 -> 112-115 GFLOP/s). And so
 * is `blk`: A read in place, blocked by 16 along K (see
 * axle_f32_gemm_6x16_blocked__avx2_fma; its blocks a_next floats apart). */
AXLE_AVX2_INLINE void tile(const size_t R, const int shared, const int blk, size_t nr, size_t kc,
                           const float* a, size_t a_next, const float* b, size_t ldb, float* c,
                           size_t ldc, uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                           size_t col0) {
  const int transposed = (flags & AXLE_F32_GEMM_STORE_T) != 0;
  if (!transposed) axle_f32_gemm_prefetch_epilogue(R, nr, c, ldc, flags, ep, row0, col0);
  /* Row i's accumulators: x[i] columns 0..7, y[i] columns 8..15 (in the
   * half-width tile below: even and odd K steps of columns 0..7). */
  __m256 x[MR], y[MR];
#pragma GCC unroll 6
  for (size_t i = 0; i < MR; ++i) x[i] = y[i] = _mm256_setzero_ps();
  /* The driver's next B panel starts right after this one when packed, or
   * NR floats on in every row when B is read in place. When B is pre-packed
   * weights streamed from memory (few-pixel layers), hardware prefetch
   * restarts at every 4 KiB page; pulling the next panel into L2 at the
   * pace this one is consumed hides that. A prefetch past the end of the
   * buffer is harmless (no fault). */
  const size_t next_panel = ldb == NR ? kc * NR : NR;
  /* The same for A: the driver packs its panels kc * MR apart, and
   * pre-packed weights on the A side (most layers) come from memory too. */
  const size_t next_a = kc * MR;
  if (blk) {
    /* K step q of a block holds row i at a[16 i + q]: the six rows' values
     * of 16 steps are six adjacent lines, as packed would be. */
    for (size_t p = 0; p < kc; p += 16, a += a_next) {
#pragma GCC unroll 16
      for (size_t q = 0; q < 16; ++q) {
        if (!shared) _mm_prefetch((const char*)(b + next_panel), _MM_HINT_T1);
        const __m256 b0 = _mm256_loadu_ps(b);
        const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (size_t i = 0; i < R; ++i) {
          const __m256 av = _mm256_broadcast_ss(a + 16 * i + q);
          x[i] = _mm256_fmadd_ps(av, b0, x[i]);
          y[i] = _mm256_fmadd_ps(av, b1, y[i]);
        }
        b += ldb;
      }
    }
  } else if (nr <= NR / 2) {
    axle_f32_gemm_share_t share = axle_f32_gemm_share(flags, kc / 2, 2);
    const float* pf = b + next_panel + share.first * ldb;
    /* Half-width tile (the last panel of 196 or 49 columns): the second B
     * vector would only multiply zero padding, at the full tile's cost.
     * Odd K steps go to the idle second accumulators, so each chain waits
     * on its FMA every other step only. */
    size_t p = 0;
#pragma GCC unroll 2
    for (; p + 2 <= kc; p += 2) {
      if (!shared) {
        _mm_prefetch((const char*)(b + next_panel), _MM_HINT_T1);
        _mm_prefetch((const char*)(b + ldb + next_panel), _MM_HINT_T1);
      } else if (axle_f32_gemm_share_due(&share)) {
        _mm_prefetch((const char*)pf, _MM_HINT_T1);
        _mm_prefetch((const char*)(pf + ldb), _MM_HINT_T1);
        pf += 2 * ldb;
      }
      _mm_prefetch((const char*)(a + next_a), _MM_HINT_T1);
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + ldb);
#pragma GCC unroll 6
      for (size_t i = 0; i < R; ++i) {
        x[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i), b0, x[i]);
        y[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + MR + i), b1, y[i]);
      }
      a += 2 * MR;
      b += 2 * ldb;
    }
    if (p < kc) {
      const __m256 b0 = _mm256_loadu_ps(b);
#pragma GCC unroll 6
      for (size_t i = 0; i < R; ++i) x[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i), b0, x[i]);
    }
#pragma GCC unroll 6
    for (size_t i = 0; i < MR; ++i) x[i] = _mm256_add_ps(x[i], y[i]);
  } else {
    axle_f32_gemm_share_t share = axle_f32_gemm_share(flags, kc, 1);
    const float* pf = b + next_panel + share.first * ldb;
#pragma GCC unroll 4
    for (size_t p = 0; p < kc; ++p) {
      if (!shared) {
        _mm_prefetch((const char*)(b + next_panel), _MM_HINT_T1);
      } else if (axle_f32_gemm_share_due(&share)) {
        _mm_prefetch((const char*)pf, _MM_HINT_T1);
        pf += ldb;
      }
      if (p % 2 == 0) _mm_prefetch((const char*)(a + next_a), _MM_HINT_T1);
      const __m256 b0 = _mm256_loadu_ps(b);
      const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
      for (size_t i = 0; i < R; ++i) {
        const __m256 av = _mm256_broadcast_ss(a + i);
        x[i] = _mm256_fmadd_ps(av, b0, x[i]);
        y[i] = _mm256_fmadd_ps(av, b1, y[i]);
      }
      a += MR;
      b += ldb;
    }
  }
  if (nr == NR) {
    const ep_regs_t e = ep_regs(ep);
    if (transposed) {
      /* Accumulators by value: their address would keep them in memory. */
      store_half_t(c, ldc, R, x[0], x[1], x[2], x[3], x[4], x[5], flags, &e, row0, col0);
      store_half_t(c + 8 * ldc, ldc, R, y[0], y[1], y[2], y[3], y[4], y[5], flags, &e, row0,
                   col0 + 8);
      return;
    }
#pragma GCC unroll 6
    for (size_t i = 0; i < R; ++i) store_row(c + i * ldc, x[i], y[i], flags, &e, row0 + i, col0);
    return;
  }
  /* Narrow tile: spill and let the shared store write the valid corner. */
  float acc[MR * NR] __attribute__((aligned(32)));
#pragma GCC unroll 6
  for (size_t i = 0; i < MR; ++i) {
    _mm256_store_ps(acc + i * NR, x[i]);
    _mm256_store_ps(acc + i * NR + 8, y[i]);
  }
  axle_f32_gemm_tile_store(R, nr, acc, c, ldc, flags, ep, row0, col0);
}

/* Tiles of at most NARROW_MAX columns (1x1 layers at 14x14 leave 4 of 196
 * pixels over whole panels, Winograd at 28x28 1 of 49 tiles): even the
 * half-width tile above issues 6 FMAs per K step for them, each on 8
 * columns. Here the rows are in the lanes instead (a masked load of a K
 * step of the A panel, 6 of 8 lanes) and each column is one FMA with a
 * broadcast of B, so a K step costs nr FMAs; `sets` accumulators per
 * column (K steps dealt round) keep 8 chains in flight where nr is small.
 * The few results go through the shared store, as rows of the 8 x 8
 * transpose. */
enum { NARROW_MAX = 4 };
AXLE_AVX2_INLINE void narrow_tile(const int NC, const int sets, size_t mr, size_t kc,
                                  const float* a, const float* b, size_t ldb, float* c, size_t ldc,
                                  uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                  size_t col0) {
  const __m256i live = axle_f32_first_lanes__avx2(mr);
  __m256 x[4][NARROW_MAX];
#pragma GCC unroll 4
  for (int s = 0; s < sets; ++s)
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) x[s][j] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + (size_t)sets <= kc; p += (size_t)sets, a += sets * MR, b += sets * ldb) {
#pragma GCC unroll 4
    for (int s = 0; s < sets; ++s) {
      const __m256 v = _mm256_maskload_ps(a + s * MR, live);
#pragma GCC unroll 4
      for (int j = 0; j < NC; ++j)
        x[s][j] = _mm256_fmadd_ps(v, _mm256_broadcast_ss(b + s * ldb + j), x[s][j]);
    }
  }
  for (; p < kc; ++p, a += MR, b += ldb) {
    const __m256 v = _mm256_maskload_ps(a, live);
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) x[0][j] = _mm256_fmadd_ps(v, _mm256_broadcast_ss(b + j), x[0][j]);
  }
  /* Column j's sum in r[j]; transposed, r[i] holds row i's columns. */
  __m256 r[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = j < NC ? x[0][j] : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int s = 1; s < sets && j < NC; ++s) r[j] = _mm256_add_ps(r[j], x[s][j]);
  }
  axle_f32_transpose8__avx(r);
  float acc[MR * NR];
  for (size_t i = 0; i < mr; ++i) _mm256_storeu_ps(acc + i * NR, r[i]);
  axle_f32_gemm_tile_store(mr, (size_t)NC, acc, c, ldc, flags, ep, row0, col0);
}

AXLE_AVX2 __attribute__((noinline)) static void narrow(size_t mr, size_t nr, size_t kc,
                                                       const float* a, const float* b, size_t ldb,
                                                       float* c, size_t ldc, uint32_t flags,
                                                       const axle_f32_epilogue_t* ep, size_t row0,
                                                       size_t col0) {
  switch (nr) {
    case 1:
      narrow_tile(1, 4, mr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
      break;
    case 2:
      narrow_tile(2, 4, mr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
      break;
    case 3:
      narrow_tile(3, 2, mr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
      break;
    default:
      narrow_tile(4, 2, mr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
      break;
  }
}

AXLE_AVX2 void axle_f32_gemm_6x16__avx2_fma(size_t mr, size_t nr, size_t kc, const float* a,
                                            const float* b, size_t ldb, float* c, size_t ldc,
                                            uint32_t flags, const axle_f32_epilogue_t* ep,
                                            size_t row0, size_t col0) {
  if (nr <= NARROW_MAX) {
    narrow(mr, nr, kc, a, b, ldb, c, ldc, flags, ep, row0, col0);
    return;
  }
  const int shared = axle_f32_gemm_share(flags, 1, 1).every > 1;
#define AXLE_TILE(R)                                                    \
  if (shared)                                                           \
    tile(R, 1, 0, nr, kc, a, 0, b, ldb, c, ldc, flags, ep, row0, col0); \
  else                                                                  \
    tile(R, 0, 0, nr, kc, a, 0, b, ldb, c, ldc, flags, ep, row0, col0)
  switch (mr) {
    case 1:
      AXLE_TILE(1);
      break;
    case 2:
      AXLE_TILE(2);
      break;
    case 3:
      AXLE_TILE(3);
      break;
    case 4:
      AXLE_TILE(4);
      break;
    case 5:
      AXLE_TILE(5);
      break;
    default:
      AXLE_TILE(6);
      break;
  }
#undef AXLE_TILE
}

AXLE_AVX2 void axle_f32_gemm_6x16_blocked__avx2_fma(size_t mr, size_t kc, const float* a,
                                                    size_t a_next, const float* b, size_t ldb,
                                                    float* c, size_t ldc, uint32_t flags,
                                                    const axle_f32_epilogue_t* ep, size_t row0,
                                                    size_t col0) {
  /* The blocked tiles are those of the channels-last projections, whose
   * B is pre-packed weights: no prefetch shares (see tile()). */
#define AXLE_TILE(R) tile(R, 0, 1, NR, kc, a, a_next, b, ldb, c, ldc, flags, ep, row0, col0)
  switch (mr) {
    case 1: AXLE_TILE(1); break;
    case 2: AXLE_TILE(2); break;
    case 3: AXLE_TILE(3); break;
    case 4: AXLE_TILE(4); break;
    case 5: AXLE_TILE(5); break;
    default: AXLE_TILE(6); break;
  }
#undef AXLE_TILE
}

AXLE_AVX2 void axle_f32_gemm_sum__avx2_fma(size_t cols, float* c, const float* parts,
                                           size_t part_stride, size_t nparts,
                                           const axle_f32_epilogue_t* ep, size_t row) {
  const ep_regs_t e = ep_regs(ep);
  const float* res = e.residual ? e.residual + row * e.ldr : NULL;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (size_t q = 0; q < cols; q += 8) {
    const size_t n = cols - q < 8 ? cols - q : 8;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
    __m256 v = _mm256_maskload_ps(c + q, m);
    for (size_t p = 0; p < nparts; ++p)
      v = _mm256_add_ps(v, _mm256_maskload_ps(parts + p * part_stride + q, m));
    if (e.bias) v = _mm256_add_ps(v, _mm256_broadcast_ss(e.bias + row));
    if (res) v = _mm256_add_ps(v, _mm256_maskload_ps(res + q, m));
    _mm256_maskstore_ps(c + q, m, activate(v, &e));
  }
}
