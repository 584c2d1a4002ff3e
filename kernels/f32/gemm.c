/* Blocked GEMM driver (BLIS loop order). Per task, a block of columns of C:
 *
 *   for each K block (kc)          B block kc x nc packed once   (L2/L3)
 *     for each M block (mc)        A block mc x kc               (L2)
 *       for each NR column panel   B panel kc x NR               (L1)
 *         for each MR row panel    micro-kernel into C
 *
 * kc is chosen so that one B panel plus one A panel fit L1 (Zen 3: 32 KiB)
 * and mc so that the A block fits L2 (512 KiB). With AVX-512 the tiles
 * span pairs of panels on both sides (12 x 32: each broadcast of A feeds
 * two FMAs, each B vector twelve), 32 + 12 KiB at the largest kc, which
 * Sapphire Rapids' 48 KiB L1 holds; kc is not cut for it, since pre-packed
 * weights are blocked by kc. With a short K block, or a B block the driver
 * made itself, the two inner loops swap (see rows_outer); a GEMM that
 * packs both operands then keeps an A pair, not a B pair, in L1, and
 * longer K blocks no longer pay (SGEMM 2048 with 384: 0.99-1.01 x
 * OpenBLAS, with 256: 1.05-1.10; they had while the B pair was the one
 * kept).
 * Work is split over column chunks and/or row chunks (see plan_gemm), or
 * over K with the parts summed afterwards (see k_split_pays). An
 * operand that several tasks would each have to pack (A across column
 * chunks, B across row chunks) is packed once instead, up front and in
 * parallel, into shared scratch: an im2col-generated B costs far more to
 * produce than to read. With few rows of A, B is not packed at all but read
 * in place (b_direct); a single row against pre-packed B takes the
 * row-vector kernels instead of tiles (gemv_applies). */
#include <string.h>

#include "axle_kernels.h"
#include "gemm_avx512.h"
#include "gemm_internal.h"

enum { MR = AXLE_F32_GEMM_MR, NR = AXLE_F32_GEMM_NR };

#ifndef GEMM_KC_MAX
#define GEMM_KC_MAX 256  /* B panel 16 KiB + A panel 6 KiB in L1 */
#endif
/* K blocks where A is blocked and read in place (axle_f32_gemm_kc_in_place):
 * through the channels-last projections' transposed stores each extra K
 * block cost more than B panels from L2 rather than L1 do. Alone, 1
 * thread, in one block instead of 192-256: 576 -> 96 at 14x14 134 -> 129
 * us, 960 -> 160 at 7x7 96 -> 90, 960 -> 320 195 -> 184. */
#define GEMM_KC_IN_PLACE_MAX 1024
#ifndef GEMM_MC_MAX
#define GEMM_MC_MAX 144  /* A block 144 x 256 x 4 = 144 KiB in L2 */
#endif
#ifndef GEMM_NC_MAX
#define GEMM_NC_MAX 1024 /* B block 256 x 1024 x 4 = 1 MiB in L3 */
#endif
#define GEMM_ALIGN_FLOATS 16 /* 64 bytes */

axle_f32_gemm_ukernel_fn axle_f32_gemm_ukernel(void) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX512) return axle_f32_gemm_6x16__avx512;
  if (isa >= AXLE_ISA_AVX2_FMA) return axle_f32_gemm_6x16__avx2_fma;
  return axle_f32_gemm_6x16__scalar;
}

/* Fraction of a tiled m x n product that is real work. */
static double tile_use(size_t m, size_t n) {
  return (double)m / (double)((m + MR - 1) / MR * MR) * (double)n /
         (double)((n + NR - 1) / NR * NR);
}

int axle_f32_gemm_prefers_transposed(size_t m, size_t n) {
  /* Transposed tiles store through shuffles (and a scalar path when
   * narrow) and, in a convolution, gather the input pixels while packing
   * instead of reading them in place, so they must win clearly: 7x7 maps
   * (49 of 64 columns used) gain, 14x14 maps with 64 channels (1.08x
   * better tiles) and 16 or 32 output channels at any size (1.12x) lose. */
  return tile_use(n, m) > 1.15 * tile_use(m, n);
}

/* g computed as C^T = B^T A^T when that tiles better and both operands are
 * still unpacked (a packed panel serves only its own side). Strided data
 * swaps its strides; a generator already yields its operand K-major, which
 * is what either side asks of it. */
static const axle_f32_gemm_t* orient(const axle_f32_gemm_t* g, axle_f32_gemm_t* swapped) {
  if (g->a.packed || g->b.packed || g->a.blocked || !axle_f32_gemm_prefers_transposed(g->m, g->n))
    return g;
  *swapped = *g;
  swapped->m = g->n;
  swapped->n = g->m;
  swapped->a = g->b;
  swapped->b = g->a;
  swapped->a.rs = g->b.cs;
  swapped->a.cs = g->b.rs;
  swapped->b.rs = g->a.cs;
  swapped->b.cs = g->a.rs;
  swapped->c_transposed = !g->c_transposed;
  return swapped;
}

typedef struct gemm_plan_t {
  size_t kc, mc;
  size_t n_panels, m_panels;
  size_t n_chunks, m_chunks;  /* tasks = n_chunks * m_chunks */
  size_t chunk_cols;          /* most columns one chunk holds (multiple of NR) */
  int prepack_a, prepack_b;   /* packed once into the shared area */
  int direct_b;               /* B data read in place, only a partial last panel packed */
  int direct_a;               /* blocked A read in place by the tiles, where they can */
  int gen_b_in_place;         /* generated B read from tmp the same way */
  size_t shared_a, shared_b;  /* floats of the shared packed A and B */
  size_t prepack_rows;        /* rows per task of the A pre-pass (multiple of MR) */
  size_t prepack_cols;        /* columns per task of the B pre-pass (multiple of NR) */
  size_t b_floats, a_floats, tmp_floats; /* per worker */
  size_t worker_floats;
  size_t k_parts;        /* > 1: split over K instead (see k_split_pays) */
  size_t partial_floats; /* one part's C, stored as C is; parts 1.. of k_parts */
  size_t shared_parts;   /* floats of parts 1.. together (0 without the split) */
} gemm_plan_t;

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* First panel of chunk i of `chunks` over `panels` (balanced to +-1). */
static size_t chunk_start(size_t i, size_t chunks, size_t panels) { return i * panels / chunks; }

/* Equal blocks no larger than cap: 300 is 2 x 150, not 256 + 44. */
static size_t kc_for(size_t k, size_t cap) { return k ? div_up(k, div_up(k, cap)) : 0; }

size_t axle_f32_gemm_kc(size_t k) { return kc_for(k, GEMM_KC_MAX); }

size_t axle_f32_gemm_kc_in_place(size_t k) {
  const size_t kc = round_up(kc_for(k, GEMM_KC_IN_PLACE_MAX), 16);
  return kc < k ? kc : k;
}

/* Whether B (contiguous rows) is read in place by the micro-kernel instead
 * of packed. Packing copies every element once and lets the M / MR tiles
 * of a panel read it from a compact, conflict-free buffer; in place, the
 * first tile of each M block fetches K strided rows, which may also share
 * L1 sets. Measured on the MobileNet and ResNet pointwise layers, in place
 * wins when few tiles share the packing, M <= 128, and M <= K (1.4x at
 * M = 24, K = 144; 1.06x at M = K = 128), and loses a little beyond (K = 64,
 * M = 256). */
#define IN_PLACE_MAX_M 128
/* With a short K (pointwise expansions: 16-32 input channels) every tile
 * is short, so packing costs more per tile than the in-place reads save:
 * Zen 5, 1 thread, 12x32 tiles, the expansions 96 x 896 x 16 204 -> 217
 * GFLOP/s and 144 x 896 x 24 223 -> 234 in place, whatever M (192 and 384
 * at K = 32 as fast or faster), and MobileNetV2's band chains' expansions
 * 2.5-4 % faster. Except where B's rows lie a multiple of 8 KiB apart: K
 * rows in the same few L1 sets, 144 x 896 x 24 at 2048 or 4096 floats
 * apart 225-230 packed against 203-208 in place. */
#define IN_PLACE_SHORT_K 32
#define IN_PLACE_SET_ALIAS_BYTES 8192
/* And up to M = 256 (still M <= K) where B's rows do not alias: Zen 5, 1
 * thread, best / mean of 1000-4000 calls, packed against in place: SGEMM
 * 256 247-258 / 242-244 -> 256-260 / 249-252 GFLOP/s, 256 x 784 x 256
 * 250 -> 254, 192 x 1024 x 512 251 -> 253, 200 x 300 x 400 241 -> 247;
 * 256 x 196 x 1024 (ResNet-50's 1024 -> 256 at 14x14) even (238-243
 * against 237-245); with rows 8 KiB apart in place loses (256 x 2048 x
 * 256 249 -> 245, 144 x 4096 x 144 245 -> 236). */
#define IN_PLACE_WIDE_M 256
static int b_direct(const axle_f32_gemm_t* g) {
  if (g->b.packed || !g->b.data || g->b.cs != 1) return 0;
  if (g->m <= IN_PLACE_MAX_M && g->m <= g->k) return 1;
  if ((g->b.rs * sizeof(float)) % IN_PLACE_SET_ALIAS_BYTES == 0) return 0;
  return g->k <= IN_PLACE_SHORT_K || (g->m <= IN_PLACE_WIDE_M && g->m <= g->k);
}

/* A single row of A (a classifier at batch 1) against pre-packed weights
 * goes through the row-vector kernels (axle_f32_gemv_1x16__*) instead of
 * tiles: a 1-row tile walks two panels at a time, two B streams 16 KiB
 * apart, with one FMA chain per panel, and so read MobileNetV2's
 * classifier (1280 x 1000, 5 MB, from memory in the network) at 22-27
 * GB/s, where a single stream reaches 38-42 (1 thread, Zen 4: 0.19-0.21
 * -> 0.12 ms). A is copied (scaled by alpha) into scratch when strided or
 * scaled. */
static int gemv_applies(const axle_f32_gemm_t* g) {
  return g->m == 1 && g->b.packed && !g->a.packed && g->a.data && !g->a.blocked && !g->c_transposed;
}

/* Rows of C as stored (the epilogue's rows: output channels). */
static size_t stored_rows(const axle_f32_gemm_t* g) { return g->c_transposed ? g->n : g->m; }

/* Whether `threads` workers should each take a contiguous share of K over
 * all of C (then sum the shares and apply the epilogue) rather than a share
 * of C's columns. Pointwise projections (few output channels, many input
 * channels, a small map: MobileNetV2's 576 -> 96 at 14x14, 960 -> 160 at
 * 7x7) follow a depthwise layer that the threads split by channels, so a
 * share of K is the part of the input a thread has just written into its
 * own cache, while a share of columns needs every channel of its pixels,
 * half of them from the other core's cache at about L3 speed (~25 GB/s
 * here); the column split also leaves the threads a 16-column panel apart
 * (13 panels at 14x14) and both writing the lines at every row edge. On 2
 * threads, in the network: 576 -> 96 at 14x14 104 -> 89-95 us, 960 -> 160
 * at 7x7 80 -> 60-66, 960 -> 320 at 7x7 135 -> 114-122; MobileNetV2 3.48
 * -> 3.38 ms, ResNet-50 28.9 -> 28.0 (its 2048 -> 512 at 7x7). 96 K rows
 * per share pay since the sum pass runs in vectors (192 -> 64 at 14x14:
 * 28 -> 24 us; in scalar code it had cost 27 -> 30), and past small maps
 * the column split keeps its locality (a 3x3 layer before it splits by
 * rows) while the shares would each write all of a large C. The 3x3
 * stride-2 layers at 14x14 and 7x7, whose im2col is generated per block,
 * gain the same way (ResNet-50's 512-channel one 1.08-1.14 -> 0.97-0.99
 * ms, its 256-channel one 0.95-0.96 -> 0.84-0.88), and the 1024 -> 256
 * layers at 14x14, whose input is packed per block (374-394 -> 366-374
 * us). So: one operand, the weights, is pre-packed and
 * the other read in place, packed or generated per block (each share
 * reads only its K rows), C is at most 256 KB, and K is long next to the
 * output channels. */
#define K_SPLIT_MAX_C_FLOATS (64u * 1024u)
#define K_SPLIT_MIN_K 96
static int k_split_pays(const axle_f32_gemm_t* g, size_t threads) {
  if (threads < 2 || g->accumulate || !g->a.packed == !g->b.packed) return 0;
  const size_t out = stored_rows(g);
  return g->k >= 2 * out && g->k >= K_SPLIT_MIN_K * threads && out * g->ldc <= K_SPLIT_MAX_C_FLOATS;
}

static void plan_gemm(const axle_f32_gemm_t* g, uint32_t threads, gemm_plan_t* pl) {
  memset(pl, 0, sizeof *pl);
  if (threads < 1) threads = 1;
  pl->kc = kc_for(g->k, GEMM_KC_MAX);
  pl->mc = GEMM_MC_MAX;
  if (g->b.packed && g->b.packed_kc) {
    /* B's layout sets the blocks; row blocks are cut so that A blocks the
     * driver packs stay the size they were. */
    pl->kc = g->b.packed_kc;
    if (pl->kc > GEMM_KC_MAX)
      pl->mc = max_size(GEMM_MC_MAX * GEMM_KC_MAX / pl->kc / (2 * MR) * (2 * MR), 2 * MR);
  }
  pl->n_panels = div_up(g->n, NR);
  pl->m_panels = div_up(g->m, MR);
  /* Column chunks bound the B block. With threads, the work is cut along
   * the dimension that divides the larger operand: every column chunk
   * streams all of A again, every row chunk packs all of B again, so the
   * smaller one is the one to repeat. The CPU plugin's pool hands each
   * thread a contiguous run of tasks (cpu_threadpool.h), so the counts are
   * multiples of the threads, which gives every thread an equal share
   * (chunk_start balances chunks to a pair of panels, the wide tile's
   * width: 3136 columns in 4 chunks of 49 panels had ended each in a
   * half-width tile; 1 thread, Zen 5: 64 x 3136 x 64 236 -> 240 GFLOP/s,
   * 144 x 3136 x 24 217 -> 223, ResNet-50 31.5 -> 31.0 ms, means of four
   * alternating rounds): a 112x112 map's 13 chunks of
   * 1024 columns had left one thread a chunk more (14: MobileNetV2's first
   * layers 5-6 % faster on 2 threads). Column chunks come two per thread at
   * least, so a thread slowed by another process leaves the other one to
   * take over; row chunks one per thread, each streaming all of B (an
   * im2col one packed by the pre-pass) once (the 3x3 stride-2 layer at
   * 14x14: 4 % faster on 2 threads than two per thread). A caller may ask
   * for stored rows (split_rows): MobileNetV2's 28x28 expansions, split by
   * pixels, left each depthwise thread half its channels in the other
   * core's cache. */
  size_t n_chunks = div_up(pl->n_panels * NR, GEMM_NC_MAX);
  size_t m_chunks = 1;
  if (threads > 1) {
    if (g->split_rows ? !g->c_transposed : g->m >= g->n)
      m_chunks = threads < pl->m_panels ? threads : pl->m_panels;
    else
      n_chunks = round_up(max_size(n_chunks, 2 * (size_t)threads), threads);
  }
  const size_t pairs = div_up(pl->n_panels, 2);
  if (n_chunks > pairs) n_chunks = pairs;
  pl->n_chunks = n_chunks ? n_chunks : 1;
  pl->m_chunks = m_chunks ? m_chunks : 1;
  pl->direct_b = b_direct(g);
  if (k_split_pays(g, threads)) {
    pl->k_parts = threads;
    pl->n_chunks = pl->m_chunks = 1;
    pl->partial_floats = round_up(stored_rows(g) * g->ldc, GEMM_ALIGN_FLOATS);
    pl->shared_parts = (pl->k_parts - 1) * pl->partial_floats;
  }
  pl->chunk_cols = div_up(pairs, pl->n_chunks) * 2 * NR;
  /* alpha would need a packing pass to apply. Where a blocked A is not
   * read in place, each block packs its own rows: the scratch then does not
   * depend on the ISA level (it may be sized under another). */
  pl->direct_a =
      g->a.data && g->a.blocked && g->alpha == 1.0f && axle_kernels_isa() >= AXLE_ISA_AVX2_FMA;
  pl->prepack_a = !g->a.packed && !g->a.blocked && pl->n_chunks > 1;
  pl->prepack_b = !g->b.packed && !pl->direct_b && pl->m_chunks > 1;
  if (pl->prepack_a)
    pl->shared_a = round_up(axle_f32_gemm_packed_a_size(g->m, g->k), GEMM_ALIGN_FLOATS);
  if (pl->prepack_b)
    pl->shared_b = round_up(axle_f32_gemm_packed_b_size(g->k, g->n), GEMM_ALIGN_FLOATS);
  /* Pre-pass tasks: a few per thread. Generating an im2col operand is a
   * good part of a layer's time; in one task (196 columns of a 14x14 map,
   * 49 rows of a 7x7 one) it ran on one thread while the others waited. */
  const size_t parts = threads > 1 ? (size_t)threads * 4 : 1;
  pl->prepack_rows = round_up(div_up(g->m, parts), MR);
  if (pl->prepack_rows > pl->mc) pl->prepack_rows = pl->mc;
  pl->prepack_cols = round_up(div_up(g->n, parts), NR);
  if (pl->prepack_cols > 16 * NR) pl->prepack_cols = 16 * NR;
  /* A generated B unfolds K-major, as read in place, and then costs no
   * second pass; that wins for the same few-tile products (the 7x7 and
   * 3x3 stems: 1.05-1.07x, a 3x3 stride-2 128-channel layer: 1.04x) and
   * loses 1 % on wider ones. tmp must hold it through the M loop, so A
   * must not need tmp too. */
  pl->gen_b_in_place = !g->b.packed && !g->b.data && !pl->prepack_b &&
                       (g->a.packed || (g->a.data && !g->a.blocked)) && g->m <= IN_PLACE_MAX_M;
  if (pl->direct_b || pl->gen_b_in_place)
    pl->b_floats = round_up(pl->kc * NR, GEMM_ALIGN_FLOATS);
  else if (!g->b.packed && !pl->prepack_b)
    pl->b_floats = round_up(pl->kc * pl->chunk_cols, GEMM_ALIGN_FLOATS);
  if (!g->a.packed && !pl->prepack_a) pl->a_floats = round_up(pl->mc * pl->kc, GEMM_ALIGN_FLOATS);
  /* Generated operands unfold into tmp before packing. */
  size_t tmp = 0;
  if (!g->a.packed && (!g->a.data || g->a.blocked)) tmp = max_size(tmp, pl->kc * pl->mc);
  if (!g->b.packed && !g->b.data)
    tmp = max_size(tmp, pl->kc * (pl->prepack_b ? pl->prepack_cols : pl->chunk_cols));
  pl->tmp_floats = round_up(tmp, GEMM_ALIGN_FLOATS);
  pl->worker_floats = pl->b_floats + pl->a_floats + pl->tmp_floats;
}

size_t axle_f32_gemm_scratch_size(const axle_f32_gemm_t* g, uint32_t threads) {
  if (threads < 1) threads = 1;
  if (gemv_applies(g)) return round_up(g->k, GEMM_ALIGN_FLOATS) * sizeof(float);
  axle_f32_gemm_t swapped;
  g = orient(g, &swapped);
  gemm_plan_t pl;
  plan_gemm(g, threads, &pl);
  return (pl.shared_a + pl.shared_b + pl.shared_parts + pl.worker_floats * threads) *
         sizeof(float);
}

typedef struct gemm_run_t {
  const axle_f32_gemm_t* g;
  const gemm_plan_t* pl;
  const axle_f32_epilogue_t* ep;
  axle_f32_gemm_ukernel_fn ukernel;
  /* Two adjacent A and B panels per call where the ISA has a wide tile
   * (the narrow one is load-bound there), or NULL. */
  axle_f32_gemm_wide_ukernel_fn wide;
  axle_f32_gemm_wide_run_fn wide_run; /* full wide tiles in a row, or NULL */
  /* The NR-wide tile reading a blocked A in place where the ISA has no wide
   * tile but reads blocked A (AVX2), or NULL. */
  axle_f32_gemm_blocked_ukernel_fn blocked;
  float* shared_a; /* A packed by the pre-pass, or NULL */
  float* shared_b; /* B packed by the pre-pass, or NULL */
  float* partials; /* K split: the sums of parts 1.., partial_floats apart */
  axle_f32_gemm_sum_fn sum; /* K split: adds them up */
  float* workers;  /* worker_floats per worker */
} gemm_run_t;

static float* worker_tmp(const gemm_run_t* r, uint32_t thread) {
  return r->workers + (size_t)thread * r->pl->worker_floats + r->pl->b_floats + r->pl->a_floats;
}

/* A block of rows [i0, i0 + mc) and K [p0, p0 + kc), packed into dst. */
static void pack_a_block(const gemm_run_t* r, size_t i0, size_t mc, size_t p0, size_t kc,
                         float* tmp, float* dst) {
  const axle_f32_gemm_t* g = r->g;
  if (g->a.data && g->a.blocked) {
    /* Unfolded K-major as a generated A is (rows of 16 are too short for
     * the packers' vector paths). */
    for (size_t p = p0; p < p0 + kc; ++p) {
      const float* col = g->a.data + p / 16 * g->a.blocked + p % 16;
      for (size_t i = i0; i < i0 + mc; ++i) tmp[(p - p0) * mc + (i - i0)] = col[i * 16];
    }
    axle_f32_gemm_pack_a_block(mc, kc, g->alpha, tmp, 1, mc, dst);
  } else if (g->a.data) {
    axle_f32_gemm_pack_a_block(mc, kc, g->alpha, g->a.data + i0 * g->a.rs + p0 * g->a.cs,
                               g->a.rs, g->a.cs, dst);
  } else {
    /* Generated K-major: row i of A is column i of tmp. */
    g->a.gen(g->a.gen_ctx, p0, kc, i0, mc, tmp);
    axle_f32_gemm_pack_a_block(mc, kc, g->alpha, tmp, 1, mc, dst);
  }
}

/* Columns [j0, j0 + nc) and K [p0, p0 + kc) of B, packed into dst. */
static void pack_b_block(const gemm_run_t* r, size_t j0, size_t nc, size_t p0, size_t kc,
                         float* tmp, float* dst) {
  const axle_f32_gemm_t* g = r->g;
  if (g->b.data) {
    axle_f32_gemm_pack_b_block(kc, nc, g->b.data + p0 * g->b.rs + j0 * g->b.cs, g->b.rs, g->b.cs,
                               dst);
  } else {
    g->b.gen(g->b.gen_ctx, p0, kc, j0, nc, tmp);
    axle_f32_gemm_pack_b_block(kc, nc, tmp, nc, 1, dst);
  }
}

/* Pre-pass tasks: one group of A rows (or B columns) over every K block,
 * into the shared layout of a pre-packed operand. */
static void prepack_a_task(void* arg, size_t task, uint32_t thread) {
  const gemm_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const size_t i0 = task * r->pl->prepack_rows, m_pad = r->pl->m_panels * MR;
  const size_t mc = g->m - i0 < r->pl->prepack_rows ? g->m - i0 : r->pl->prepack_rows;
  for (size_t p0 = 0; p0 < g->k; p0 += r->pl->kc) {
    const size_t kc = g->k - p0 < r->pl->kc ? g->k - p0 : r->pl->kc;
    pack_a_block(r, i0, mc, p0, kc, worker_tmp(r, thread), r->shared_a + p0 * m_pad + i0 * kc);
  }
}

static void prepack_b_task(void* arg, size_t task, uint32_t thread) {
  const gemm_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const size_t j0 = task * r->pl->prepack_cols, n_pad = r->pl->n_panels * NR;
  const size_t nc = g->n - j0 < r->pl->prepack_cols ? g->n - j0 : r->pl->prepack_cols;
  for (size_t p0 = 0; p0 < g->k; p0 += r->pl->kc) {
    const size_t kc = g->k - p0 < r->pl->kc ? g->k - p0 : r->pl->kc;
    pack_b_block(r, j0, nc, p0, kc, worker_tmp(r, thread), r->shared_b + p0 * n_pad + j0 * kc);
  }
}

/* One K block of a task's M block and column chunk, as the tile loops see
 * it. Packed panels are kc * MR (A) and kc * NR (B) floats apart. */
typedef struct block_t {
  const float* ap;    /* packed A block, or a blocked A at (i0, s0) read in place */
  size_t a_blocked;   /* in place: the block stride (AXLE_F32_GEMM_A_BLOCKED); else 0 */
  const float* bp;    /* packed B (chunk start), or NULL */
  const float* b_src; /* B read in place at (p0, n0), rows b_rs apart, or NULL */
  size_t b_rs;
  const float* bbuf;  /* packed partial last panel when read in place */
  size_t i0, mc, n0, n1, kc;
  uint32_t flags;
  size_t a_kc, b_kc; /* K rows per packed A / B panel: kc, or more for a part of a block */
  float* c;          /* C, or a K split part's sum */
  int share_b;       /* B streams from memory under column-outer tiles */
} block_t;

/* The rows of the tile at row i of the block. With the wide tile a last
 * tile of 1-2 rows would be bound by the latency of its 2-4 FMA chains, a
 * third of a full tile's time at K = 960 (Zen 5; 12 rows 2.99 us, 4 rows
 * 1.12, 2 or 1 row 1.03): so the last 13-14 rows go as 6 + 7-8, whose
 * chains keep the FMA pipes busy (each starts at an A panel). The 7x7
 * pointwise layers (49 pixels on the tile rows) so run 12, 12, 12, 6, 7:
 * MobileNetV2 at 1 thread 2.95 -> 2.92 ms (means of six alternating
 * rounds). */
static size_t tile_rows(const gemm_run_t* r, const block_t* k, size_t i) {
  const size_t left = k->i0 + k->mc - i;
  if (!r->wide) return left < MR ? left : MR;
  if (left > 2 * MR && left <= 2 * MR + 2) return MR;
  return left < 2 * MR ? left : 2 * MR;
}

/* How many tiles of the block are full height (tile_rows). */
static size_t full_tiles(const gemm_run_t* r, const block_t* k) {
  const size_t step = r->wide ? 2 * MR : MR, full = k->mc / step;
  return r->wide && full && k->mc % step && k->mc % step <= 2 ? full - 1 : full;
}

/* Where the tile at row i, column j of the block (nr columns) reads and
 * writes: A and B panels with their strides, and C. */
typedef struct tile_at_t {
  const float *a, *b;
  size_t a_next, ldb, b_next;
  float* c;
  size_t c_cs; /* C's stride between columns as stored */
} tile_at_t;

static tile_at_t tile_at(const gemm_run_t* r, const block_t* k, size_t i, size_t j, size_t nr) {
  const axle_f32_gemm_t* g = r->g;
  const size_t a_stride = k->a_kc * MR, b_stride = k->b_kc * NR;
  const size_t c_rs = g->c_transposed ? 1 : g->ldc;
  tile_at_t t;
  t.a = k->a_blocked ? k->ap + (i - k->i0) * 16 : k->ap + (i - k->i0) / MR * a_stride;
  t.a_next = k->a_blocked ? k->a_blocked : a_stride;
  if (k->b_src) {
    t.b = nr >= NR ? k->b_src + (j - k->n0) : k->bbuf;
    t.ldb = nr >= NR ? k->b_rs : NR;
    t.b_next = NR;
  } else {
    t.b = k->bp + (j - k->n0) / NR * b_stride;
    t.ldb = NR;
    t.b_next = b_stride;
  }
  t.c_cs = g->c_transposed ? g->ldc : 1;
  t.c = k->c + i * c_rs + j * t.c_cs;
  return t;
}

/* The flags of the tile at row i, column j of the block. Whichever order
 * the tiles run in, the block's first column of tiles reads each A panel
 * first and its first row of tiles each B panel: they fetch the next ones
 * ahead; the other tiles find them in cache. Except for pre-packed B
 * panels in a column-outer order, which stream from memory while the whole
 * column of tiles reads them: there the column's full-height tiles share
 * the fetch of the next panels, so it runs at the pace of the column, not
 * of its first tile (ResNet-50's 7x7 pointwise layers alone, 1 thread,
 * weights streamed from memory: 770-930 -> 680-780 us; the 3x3 stride-2
 * one at 7x7: 2.04-2.13 -> 1.75-1.77 ms), and for a B read in place that is
 * too large to have stayed in L2 (ResNet-50's 256 -> 64 at 56x56 in the
 * network 735-865 -> 685-747 us; smaller ones lost up to 6 % alone and
 * MobileNetV2 1 % at 2 threads). A short last tile, done quickly, takes no
 * share. */
static uint32_t tile_flags(const gemm_run_t* r, const block_t* k, size_t i, size_t j) {
  uint32_t flags = k->flags;
  if (j == k->n0) flags |= AXLE_F32_GEMM_PREFETCH_A;
  if (k->share_b) {
    /* Full-height tiles, or the first tile of a block shorter than that. */
    const size_t row_step = r->wide ? 2 * MR : MR;
    const size_t full = full_tiles(r, k), shares = full ? full : 1, t = (i - k->i0) / row_step;
    if (t < shares && (i - k->i0) % row_step == 0)
      flags |=
          AXLE_F32_GEMM_PREFETCH_B | (shares > 1 ? AXLE_F32_GEMM_PREFETCH_SHARE(t, shares) : 0u);
  } else if (i == k->i0) {
    flags |= AXLE_F32_GEMM_PREFETCH_B;
  }
  return flags;
}

/* Runs the tile at row i, column j of the block; returns its width. */
static size_t run_tile(const gemm_run_t* r, const block_t* k, size_t i, size_t j) {
  const axle_f32_gemm_t* g = r->g;
  const size_t left = k->n1 - j;
  const size_t width = r->wide && left > NR ? 2 * NR : NR;
  const size_t nr = left < width ? left : width;
  const size_t mr = tile_rows(r, k, i);
  const tile_at_t t = tile_at(r, k, i, j, nr);
  const uint32_t flags = tile_flags(r, k, i, j);
  if (nr > NR || mr > MR)
    r->wide(mr, nr, k->kc, t.a, t.a_next, t.b, t.ldb, t.b_next, t.c, g->ldc, flags, r->ep, i, j);
  else if (k->a_blocked) /* without a wide tile (a_direct: all wide there) */
    r->blocked(mr, k->kc, t.a, t.a_next, t.b, t.ldb, t.c, g->ldc, flags, r->ep, i, j);
  else
    r->ukernel(mr, nr, k->kc, t.a, t.b, t.ldb, t.c, g->ldc, flags, r->ep, i, j);
  return nr;
}

/* From the row's second tile on, the full tiles of row i from column j as
 * one call where the ISA has a run of wide tiles (they share their flags:
 * only a row's first tile fetches A ahead); returns the columns done, 0
 * where run_tile must take the tile. */
static size_t full_run(const gemm_run_t* r, const block_t* k, size_t i, size_t j) {
  const size_t count = (k->n1 - j) / (2 * NR);
  if (!r->wide_run || k->a_blocked || count == 0 || tile_rows(r, k, i) < 2 * MR) return 0;
  const tile_at_t t = tile_at(r, k, i, j, 2 * NR);
  r->wide_run(count, k->kc, t.a, t.a_next, t.b, t.ldb, t.b_next, 2 * t.b_next, t.c, r->g->ldc,
              2 * NR * t.c_cs, tile_flags(r, k, i, j), r->ep, i, j);
  return count * 2 * NR;
}

/* Tile order within a block. Column pairs outer (BLIS) keeps one B pair in
 * L1 across all row tiles, and reads each B pair once. Rows outer keeps one
 * A pair in L1 across the row's tiles, reads the B block once per row of
 * tiles, and writes C as a few long sequential streams, where column-outer
 * writes 128 bytes into each of mc rows in turn, which no prefetcher
 * follows. Rows outer therefore wins with a short K block, where C
 * dominates (ResNet-50 64 -> 256 at 56x56 with a residual, K = 64: 1.13x;
 * MobileNetV2 16 -> 96 at 112x112: 1.09x; 128 -> 512 at 28x28: 1.13x;
 * Sapphire Rapids, 12x32 tiles), and whenever B is the driver's own
 * (packed or generated per block, or pre-packed into scratch), whose block
 * stays in L2: ResNet-50's 3x3 and 14x14 layers 3-6 % faster, the network
 * 1.8 % (1 thread) and 1.2 % (2 threads). With long K and B streamed from
 * memory (pre-packed weights as B at 7x7, activations read in place), each
 * extra pass over B costs: those layers 8-22 % slower rows-outer. So
 * column-outer tiles fetch the C lines they will store
 * (AXLE_F32_GEMM_PREFETCH_C: SGEMM 2048 10 % slower without), rows-outer
 * ones leave them to the prefetchers (ResNet-50's 56x56 pointwise layers
 * 2-7 % faster than with them fetched). */
#define ROWS_OUTER_MAX_KC 128
/* A B read in place past this size comes from beyond the L2 (run_tile). */
#define STREAMED_B_BYTES (2u << 20)
static int rows_outer(size_t kc, int b_own) { return kc <= ROWS_OUTER_MAX_KC || b_own; }

/* Rows [m0, m1) x columns [n0, n1) of C, or of a K split part's sum c,
 * over K rows [s0, s1) of the K block that starts at p0 and is kc long
 * (the length of its packed panels). */
static void run_block(const gemm_run_t* r, uint32_t thread, size_t m0, size_t m1, size_t n0,
                      size_t n1, size_t p0, size_t kc, size_t s0, size_t s1, uint32_t flags,
                      float* c) {
  const axle_f32_gemm_t* g = r->g;
  const gemm_plan_t* pl = r->pl;
  float* bbuf = r->workers + (size_t)thread * pl->worker_floats;
  float* abuf = bbuf + pl->b_floats;
  float* tmp = abuf + pl->a_floats;
  const float* a_packed = r->shared_a ? r->shared_a : g->a.packed;
  const float* b_packed = r->shared_b ? r->shared_b : g->b.packed;
  const size_t skip = s0 - p0, len = s1 - s0;

  const float* bp = NULL;
  const float* b_src = NULL; /* B read in place: (s0, n0), rows b_rs apart */
  size_t b_rs = 0, b_kc = kc;
  if (b_packed) {
    bp = b_packed + p0 * pl->n_panels * NR + (n0 / NR) * kc * NR + skip * NR;
  } else if (pl->direct_b) {
    b_src = g->b.data + s0 * g->b.rs + n0;
    b_rs = g->b.rs;
  } else if (pl->gen_b_in_place) {
    g->b.gen(g->b.gen_ctx, s0, len, n0, n1 - n0, tmp);
    b_src = tmp;
    b_rs = n1 - n0;
  } else {
    pack_b_block(r, n0, n1 - n0, s0, len, tmp, bbuf);
    bp = bbuf;
    b_kc = len;
  }
  /* In place, full panels are read where they are; a partial last one is
   * packed, since the micro-kernel reads all NR columns of every row,
   * unless it is the second panel of a wide tile (read under a mask). */
  const size_t tail = (n1 - n0) % NR;
  const int tail_wide = r->wide && div_up(n1 - n0, NR) % 2 == 0;
  if (b_src && tail && !tail_wide)
    axle_f32_gemm_pack_b_block(len, tail, b_src + (n1 - n0 - tail), b_rs, 1, bbuf);
  const int by_rows = rows_outer(len, !g->b.packed && !pl->direct_b);
  const int share_b =
      !by_rows &&
      (g->b.packed || (pl->direct_b && g->k * g->b.rs * sizeof(float) > STREAMED_B_BYTES));
  /* A blocked A is read in place where every tile is full width (32 with
   * AVX-512, 16 with AVX2) and the K rows come in whole blocks of 16;
   * otherwise it is packed. */
  const int a_direct =
      pl->direct_a && s0 % 16 == 0 && len % 16 == 0 && (n1 - n0) % (r->wide ? 2 * NR : NR) == 0;
  const uint32_t tile_flags =
      flags | (by_rows ? 0u : AXLE_F32_GEMM_PREFETCH_C) | (a_direct ? AXLE_F32_GEMM_A_BLOCKED : 0u);
  for (size_t i0 = m0; i0 < m1; i0 += pl->mc) {
    const size_t mc = m1 - i0 < pl->mc ? m1 - i0 : pl->mc;
    const float* ap;
    size_t a_kc = kc;
    if (a_packed) {
      ap = a_packed + p0 * pl->m_panels * MR + (i0 / MR) * kc * MR + skip * MR;
    } else if (a_direct) {
      ap = g->a.data + s0 / 16 * g->a.blocked + i0 * 16;
    } else {
      pack_a_block(r, i0, mc, s0, len, tmp, abuf);
      ap = abuf;
      a_kc = len;
    }
    const block_t blk = {ap,   a_direct ? g->a.blocked : 0,
                         bp,   b_src,
                         b_rs, bbuf,
                         i0,   mc,
                         n0,   n1,
                         len,  tile_flags,
                         a_kc, b_kc,
                         c,    share_b};
    if (by_rows)
      for (size_t i = i0; i < i0 + mc; i += tile_rows(r, &blk, i))
        for (size_t j = n0; j < n1;) {
          const size_t run = j > n0 ? full_run(r, &blk, i, j) : 0;
          j += run ? run : run_tile(r, &blk, i, j);
        }
    else
      for (size_t j = n0, nr = 0; j < n1; j += nr)
        for (size_t i = i0; i < i0 + mc; i += tile_rows(r, &blk, i)) nr = run_tile(r, &blk, i, j);
  }
}

static void gemm_task(void* arg, size_t task, uint32_t thread) {
  const gemm_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const gemm_plan_t* pl = r->pl;
  const size_t nci = task % pl->n_chunks, mci = task / pl->n_chunks;
  const size_t pairs = div_up(pl->n_panels, 2);
  const size_t n0 = chunk_start(nci, pl->n_chunks, pairs) * 2 * NR;
  size_t n1 = chunk_start(nci + 1, pl->n_chunks, pairs) * 2 * NR;
  if (n1 > g->n) n1 = g->n;
  const size_t m0 = chunk_start(mci, pl->m_chunks, pl->m_panels) * MR;
  size_t m1 = chunk_start(mci + 1, pl->m_chunks, pl->m_panels) * MR;
  if (m1 > g->m) m1 = g->m;
  if (n0 >= n1 || m0 >= m1) return;
  const uint32_t store_t = g->c_transposed ? AXLE_F32_GEMM_STORE_T : 0u;
  size_t p0 = 0;
  do {
    const size_t kc = g->k - p0 < pl->kc ? g->k - p0 : pl->kc;
    uint32_t flags = store_t | ((p0 > 0 || g->accumulate) ? AXLE_F32_GEMM_ACCUMULATE : 0u);
    if (p0 + kc >= g->k) flags |= AXLE_F32_GEMM_FINISH;
    run_block(r, thread, m0, m1, n0, n1, p0, kc, p0, p0 + kc, flags, g->c);
    p0 += kc;
  } while (p0 < g->k);
}

/* Where K part t of `parts` starts: at a multiple of g->k_part_align. */
static size_t k_part_start(const axle_f32_gemm_t* g, size_t t, size_t parts) {
  const size_t align = g->k_part_align ? g->k_part_align : 1;
  const size_t at = div_up(g->k, align) * t / parts * align;
  return at < g->k ? at : g->k;
}

/* Whether the split over K is into exactly the caller's parts, whose work
 * then runs in the split's tasks (k_part_first). */
static int parts_fused(const axle_f32_gemm_t* g, const gemm_plan_t* pl) {
  return g->k_part_first && pl->k_parts > 1 && pl->k_parts == g->k_part_count;
}

/* The caller's parts as a region of their own, where they are not fused. */
static void run_parts_first(const axle_f32_gemm_t* g, const axle_parallel_t* par) {
  if (g->k_part_first) axle_parallel_run(par, g->k_part_count, g->k_part_first, g->k_part_ctx);
}

/* K split, first region: part `task` runs the caller's work for it where
 * fused (parts_fused), then sums its share of K over all of C, into C
 * itself (part 0) or its partial buffer, with no epilogue. */
static void k_part_task(void* arg, size_t task, uint32_t thread) {
  const gemm_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const gemm_plan_t* pl = r->pl;
  if (parts_fused(g, pl)) g->k_part_first(g->k_part_ctx, task, thread);
  const size_t ka = k_part_start(g, task, pl->k_parts), kb = k_part_start(g, task + 1, pl->k_parts);
  float* c = task ? r->partials + (task - 1) * pl->partial_floats : g->c;
  uint32_t flags = g->c_transposed ? AXLE_F32_GEMM_STORE_T : 0u;
  for (size_t p0 = 0; p0 < g->k; p0 += pl->kc) {
    const size_t kc = g->k - p0 < pl->kc ? g->k - p0 : pl->kc;
    const size_t s0 = ka > p0 ? ka : p0, s1 = kb < p0 + kc ? kb : p0 + kc;
    if (s0 >= s1) continue;
    run_block(r, thread, 0, g->m, 0, g->n, p0, kc, s0, s1, flags, c);
    flags |= AXLE_F32_GEMM_ACCUMULATE;
  }
}

/* K split, second region: a share of C's stored rows gets the other parts
 * added and the epilogue applied, in the micro-kernels' order. */
static void k_sum_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const gemm_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const gemm_plan_t* pl = r->pl;
  const size_t rows = stored_rows(g), cols = g->c_transposed ? g->m : g->n;
  const size_t r1 = rows * (task + 1) / pl->k_parts;
  for (size_t row = rows * task / pl->k_parts; row < r1; ++row)
    r->sum(cols, g->c + row * g->ldc, r->partials + row * g->ldc, pl->partial_floats,
           pl->k_parts - 1, r->ep, row);
}

/* The K split's sum pass in vectors: in scalar code it took 2.4 % of
 * MobileNetV2's time on 2 threads. */
static axle_f32_gemm_sum_fn sum_for_isa(void) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX512) return axle_f32_gemm_sum__avx512;
  if (isa >= AXLE_ISA_AVX2_FMA) return axle_f32_gemm_sum__avx2_fma;
  return axle_f32_gemm_sum__scalar;
}

typedef struct gemv_run_t {
  const axle_f32_gemm_t* g;
  const float* x; /* A's row, contiguous and scaled */
  size_t tasks, kc;
  axle_f32_gemv_fn kernel;
  axle_f32_gemm_sum_fn finish; /* the epilogue, as the K split applies it */
} gemv_run_t;

static axle_f32_gemv_fn gemv_for_isa(void) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX512) return axle_f32_gemv_1x16__avx512;
  if (isa >= AXLE_ISA_AVX2_FMA) return axle_f32_gemv_1x16__avx2_fma;
  return axle_f32_gemv_1x16__scalar;
}

/* Task t: a contiguous range of panels (C's columns), over every K block. */
static void gemv_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const gemv_run_t* r = arg;
  const axle_f32_gemm_t* g = r->g;
  const size_t panels = div_up(g->n, NR), n_pad = panels * NR;
  const size_t j0 = chunk_start(task, r->tasks, panels) * NR;
  size_t j1 = chunk_start(task + 1, r->tasks, panels) * NR;
  if (j1 > g->n) j1 = g->n;
  if (j0 >= j1) return;
  size_t p0 = 0;
  do {
    const size_t kb = g->k - p0 < r->kc ? g->k - p0 : r->kc;
    r->kernel(kb, j1 - j0, r->x + p0, g->b.packed + p0 * n_pad + j0 * kb, g->c + j0,
              p0 > 0 || g->accumulate);
    p0 += kb;
  } while (p0 < g->k);
  if (g->ep) {
    axle_f32_epilogue_t ep = *g->ep;
    if (ep.residual) ep.residual += j0;
    r->finish(j1 - j0, g->c + j0, NULL, 0, 0, &ep, 0);
  }
}

static void gemv(const axle_f32_gemm_t* g, float* scratch, const axle_parallel_t* par) {
  gemv_run_t r = {g, g->a.data, 0, 0, gemv_for_isa(), sum_for_isa()};
  if (g->alpha != 1.0f || g->a.cs != 1) {
    for (size_t p = 0; p < g->k; ++p) scratch[p] = g->alpha * g->a.data[p * g->a.cs];
    r.x = scratch;
  }
  r.kc = g->b.packed_kc ? g->b.packed_kc : axle_f32_gemm_kc(g->k);
  const size_t panels = div_up(g->n, NR), threads = axle_parallel_threads(par);
  r.tasks = threads < panels ? threads : panels;
  axle_parallel_run(par, r.tasks, gemv_task, &r);
}

void axle_f32_gemm(const axle_f32_gemm_t* g, void* scratch, const axle_parallel_t* par) {
  if (g->m == 0 || g->n == 0 || gemv_applies(g)) {
    run_parts_first(g, par);
    if (g->m && g->n) gemv(g, scratch, par);
    return;
  }
  axle_f32_gemm_t swapped;
  g = orient(g, &swapped);
  const uint32_t threads = axle_parallel_threads(par);
  const int wide = axle_kernels_isa() >= AXLE_ISA_AVX512;
  gemm_plan_t pl;
  plan_gemm(g, threads, &pl);
  axle_f32_epilogue_t none;
  axle_f32_epilogue_init(&none);
  float* shared = scratch;
  gemm_run_t r = {g,
                  &pl,
                  g->ep ? g->ep : &none,
                  axle_f32_gemm_ukernel(),
                  wide ? axle_f32_gemm_12x32__avx512 : NULL,
                  wide ? axle_f32_gemm_12x32_run__avx512 : NULL,
                  pl.direct_a && !wide ? axle_f32_gemm_6x16_blocked__avx2_fma : NULL,
                  pl.prepack_a ? shared : NULL,
                  pl.prepack_b ? shared + pl.shared_a : NULL,
                  pl.shared_parts ? shared + pl.shared_a + pl.shared_b : NULL,
                  sum_for_isa(),
                  shared + pl.shared_a + pl.shared_b + pl.shared_parts};
  if (!parts_fused(g, &pl)) run_parts_first(g, par);
  if (pl.k_parts > 1) {
    axle_parallel_run(par, pl.k_parts, k_part_task, &r);
    axle_parallel_run(par, pl.k_parts, k_sum_task, &r);
    return;
  }
  if (pl.prepack_a) axle_parallel_run(par, div_up(g->m, pl.prepack_rows), prepack_a_task, &r);
  if (pl.prepack_b) axle_parallel_run(par, div_up(g->n, pl.prepack_cols), prepack_b_task, &r);
  axle_parallel_run(par, pl.n_chunks * pl.m_chunks, gemm_task, &r);
}
