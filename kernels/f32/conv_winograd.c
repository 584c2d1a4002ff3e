/* Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution: support test, choice
 * of tile, geometry, weight transform and packing, and the schedule; the
 * input and output transforms are per ISA (conv_winograd_avx2.c,
 * conv_winograd_avx512.c).
 *
 * Each t x t block of outputs ("tile") is computed from the (t + 2)^2 input
 * window under it as Y = A^T [ (G g G^T) . (B^T d B) ] A: the (t + 2)^2
 * products of one tile become as many GEMMs over all tiles, U_e [out x in]
 * times V_e [in x tiles]. Per output and channel pair that is 4 multiplies
 * with F(2x2) and 2.25 with F(4x4), instead of the direct convolution's 9.
 * F(2x2) keeps the transforms to additions only (and halves in G), so its
 * results are as accurate as the direct convolution's (ResNet outputs agree
 * with ORT to 4e-7 of the output scale). F(4x4) multiplies by up to 8 in
 * its transforms and by sixths in G: about 1e-5 of a layer's output scale
 * (measured: 5e-6 at 64 channels, 1e-5 at 512), and it is used only where
 * its tiles fill the GEMMs (axle_f32_conv_winograd_tile).
 *
 * U (the weights) is transformed (in double) and packed once. The input
 * transform writes V for a vector of tiles (deinterleaving by t:
 * neighbouring tiles start t columns apart); the output transform applies
 * the fused epilogue while scattering the tiles back into NCHW. Two
 * schedules:
 *  - blocked (large maps): blocks of whole tile rows, one block per task,
 *    V and M sized to stay near L2, the GEMMs serial inside the task;
 *    every block streams all of U, which is cheap next to its tiles.
 *  - whole image (small maps, where V and M of all tiles fit L3): each phase
 *    is parallel on its own (transforms over channels, the GEMMs one
 *    task each), so U, which is then the bigger operand (16 x 512 x 512
 *    floats on a 7x7 map), is read once rather than once per block. A GEMM
 *    of a 14x14 map is too small to split across threads: one parallel
 *    region per GEMM, with its wake-up and its uneven halves, scaled to 2
 *    threads only 1.6x.
 */
#include <math.h>
#include <string.h>

#include "axle_kernels.h"
#include "gemm_internal.h"
#include "winograd_internal.h"

/* The transformed weights are 16/9 of the originals: beyond 512 channels
 * (2 x 16 MiB per layer) streaming them costs more than the multiplies
 * saved, and below 7x7 outputs there are too few tiles to fill a panel. */
#define WINO_MAX_CHANNELS 512
/* V and M of one block ((t + 2)^2 x (in + out) x tiles floats). */
#define WINO_BLOCK_BYTES (1u << 20)
/* V and M of a whole image at most this: the whole-image schedule. */
#define WINO_IMAGE_BYTES (4u << 20)

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }
/* GEMMs (transform elements) of tiles of tile x tile outputs. */
static size_t elems_of(int tile) { return (size_t)(tile + 2) * (size_t)(tile + 2); }

int axle_f32_conv_winograd_supports(const axle_f32_conv_params_t* p) {
  return p->groups == 1 && p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 &&
         p->kernel[1] == 3 && p->kernel[2] == 3 && p->stride[1] == 1 && p->stride[2] == 1 &&
         p->dilation[1] == 1 && p->dilation[2] == 1 && p->in_channels <= WINO_MAX_CHANNELS &&
         p->out_channels <= WINO_MAX_CHANNELS && p->out[1] >= 7 && p->out[2] >= 7;
}

/* F(4x4) tiles a map needs before its 36 GEMMs beat F(2x2)'s 16: enough
 * to fill the GEMM tile's columns, since the weights are 4x their size and
 * are streamed for each image. ResNet-50's layers, 1 thread: with AVX-512
 * on whole-width FMAs (Sapphire Rapids; 32-wide tiles) at 56x56 0.65
 * against F(2x2)'s 0.90 ms, at 28x28 (49 tiles) 0.59 against 0.82, at
 * 14x14 (16 tiles: half of every tile padding) 1.08 against 0.86-0.90;
 * with AVX2 (16-wide tiles) 0.85-1.08 against 1.23-1.46 at 56x56 and
 * 28x28, 1.10-1.18 against 1.29-1.41 at 14x14 (2 threads 0.64-0.69
 * against 0.68-0.71), and at 7x7 (4 tiles) 3.3 against 1.8. Where 512-bit
 * FMAs run at half rate (Zen 4, axle_kernels_wide_fma), the 16 columns'
 * 6x16 tiles keep the FMAs as busy as the 32-wide ones (their 7 loads per
 * 6 FMAs fit two loads a cycle at one FMA a cycle), so AVX2's rule holds:
 * 256 channels at 14x14 alone 1.07 -> 0.80 ms, weights streamed (8
 * layers) 1.09 -> 0.88-0.91 ms a layer; in ResNet-50 1.17-1.28 -> 0.94-1.07. */
int axle_f32_conv_winograd_tile(const axle_f32_conv_params_t* p, axle_isa_t isa) {
  const size_t tiles = div_up((size_t)p->out[1], 4) * div_up((size_t)p->out[2], 4);
  return tiles >= (axle_f32_gemm_double_rate(isa) ? 48u : 16u) ? 4 : 2;
}

static void gemm_for_block(const wino_geom_t* g, axle_f32_gemm_t* gm) {
  memset(gm, 0, sizeof *gm);
  gm->m = g->m;
  gm->n = g->tb;
  gm->k = g->c;
  gm->alpha = 1.0f;
  gm->a.packed = (const float*)g; /* any non-NULL: only the kinds matter here */
  gm->b.data = (const float*)g;
  gm->b.rs = g->ld;
  gm->b.cs = 1;
  gm->ldc = g->ld;
}

static void geometry(const axle_f32_conv_params_t* p, int tile, uint32_t threads, wino_geom_t* g) {
  memset(g, 0, sizeof *g);
  if (threads < 1) threads = 1;
  g->elems = elems_of(tile);
  g->c = (size_t)p->in_channels;
  g->m = (size_t)p->out_channels;
  g->th = div_up((size_t)p->out[1], (size_t)tile);
  g->tw = div_up((size_t)p->out[2], (size_t)tile);
  g->whole = g->elems * sizeof(float) * (g->c + g->m) * g->th * g->tw <= WINO_IMAGE_BYTES;
  if (g->whole) {
    g->rows = g->th;
  } else {
    size_t cap = WINO_BLOCK_BYTES / (g->elems * sizeof(float) * (g->c + g->m)) / g->tw;
    if (cap < 1) cap = 1;
    if (cap > g->th) cap = g->th;
    /* Tile rows per block: full pairs of 16-tile GEMM panels (the AVX-512
     * tiles' width) and an even split of the tile rows over the threads;
     * on a tie the better split, then bigger blocks. 64 channels at 56x56
     * on 2 threads: 14 blocks of 2 rows, 14 rows a thread; counted by
     * blocks, 10 blocks of 3 rows looked as even but left one thread 15
     * rows and the other 13 (ResNet-50's three such layers 3-5 % slower
     * on 2 threads). */
    double best = -1.0, best_balance = -1.0;
    for (size_t r = 1; r <= cap; ++r) {
      const size_t tb = r * g->tw, blocks = div_up(g->th, r);
      const double use = (double)tb / (double)round_up(tb, 32);
      /* Thread t runs blocks [blocks t / threads, blocks (t + 1) / threads)
       * (the pool's contiguous ranges); the last block may be short. */
      size_t most = 0;
      for (size_t t = 0; t < threads; ++t) {
        const size_t b0 = blocks * t / threads, b1 = blocks * (t + 1) / threads;
        const size_t y1 = b1 * r < g->th ? b1 * r : g->th;
        if (y1 > b0 * r && y1 - b0 * r > most) most = y1 - b0 * r;
      }
      const double balance = (double)g->th / (double)threads / (double)most;
      if (use * balance > best || (use * balance == best && balance >= best_balance)) {
        best = use * balance;
        best_balance = balance;
        g->rows = r;
      }
    }
  }
  g->blocks = div_up(g->th, g->rows);
  g->tb = g->rows * g->tw;
  g->ld = round_up(g->tb + 8, 16);
  /* One cache line between consecutive elements' matrices: c * ld is a
   * multiple of 4 KiB for 64 channels and up, which put the 16 streams a
   * transform writes (or reads) in one L1 set, more than its ways. */
  g->v_e = g->c * g->ld + 16;
  g->m_e = g->m * g->ld + 16;
  g->v_floats = g->elems * g->v_e;
  g->m_floats = g->elems * g->m_e;
  if (tile == 2) {
    /* The AVX2 input transform's padded copy of a tile row's 4 input rows. */
    g->groups = div_up(g->tw, 8);
    g->cols = g->groups * 16 + 2 + 16;
    g->row_floats = round_up(4 * g->cols, 16);
  }
  axle_f32_gemm_t gm;
  gemm_for_block(g, &gm);
  g->gemm_floats = round_up(axle_f32_gemm_scratch_size(&gm, 1) / sizeof(float) + 1, 16);
  if (g->whole) {
    /* Shared V and M; GEMM scratch and a row buffer per worker. */
    g->scratch_floats = g->v_floats + g->m_floats + (g->gemm_floats + g->row_floats) * threads;
  } else {
    g->worker_floats = g->v_floats + g->m_floats + g->row_floats + g->gemm_floats;
    g->scratch_floats = g->worker_floats * threads;
  }
}

size_t axle_f32_conv_winograd_packed_size(const axle_f32_conv_params_t* p, int tile) {
  return elems_of(tile) *
         axle_f32_gemm_packed_a_size((size_t)p->out_channels, (size_t)p->in_channels);
}

size_t axle_f32_conv_winograd_scratch_size(const axle_f32_conv_params_t* p, int tile,
                                           uint32_t threads) {
  wino_geom_t g;
  geometry(p, tile, threads, &g);
  return g.scratch_floats * sizeof(float);
}

/* G of F(2x2, 3x3) and of F(4x4, 3x3) (interpolation points 0, +-1, +-2,
 * infinity), by rows. */
static const double k_g2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
static const double k_g4[6][3] = {{1. / 4, 0, 0},
                                  {-1. / 6, -1. / 6, -1. / 6},
                                  {-1. / 6, 1. / 6, -1. / 6},
                                  {1. / 24, 1. / 12, 1. / 6},
                                  {1. / 24, -1. / 12, 1. / 6},
                                  {0, 0, 1}};

void axle_f32_conv_winograd_pack(const axle_f32_conv_params_t* p, int tile, const float* w,
                                 float* packed) {
  const size_t m = (size_t)p->out_channels, c = (size_t)p->in_channels;
  const size_t one = axle_f32_gemm_packed_a_size(m, c);
  const int a = tile + 2;
  const double(*gm)[3] = tile == 2 ? k_g2 : k_g4;
  memset(packed, 0, elems_of(tile) * one * sizeof(float)); /* the panels' padding rows */
  for (size_t o = 0; o < m; ++o) {
    for (size_t i = 0; i < c; ++i) {
      /* U = G g G^T in double, rounded once. */
      const float* k = w + (o * c + i) * 9;
      double gg[6][3];
      for (int r = 0; r < a; ++r)
        for (int col = 0; col < 3; ++col)
          gg[r][col] = gm[r][0] * k[col] + gm[r][1] * k[3 + col] + gm[r][2] * k[6 + col];
      const size_t at = axle_f32_gemm_packed_a_index(m, c, o, i);
      for (int r = 0; r < a; ++r)
        for (int col = 0; col < a; ++col)
          packed[(size_t)(r * a + col) * one + at] =
              (float)(gm[col][0] * gg[r][0] + gm[col][1] * gg[r][1] + gm[col][2] * gg[r][2]);
    }
  }
}

static void wino_task(void* arg, size_t task, uint32_t thread) {
  const wino_run_t* r = arg;
  const axle_f32_conv_params_t* p = r->p;
  const wino_geom_t* g = r->g;
  const size_t image = task / g->blocks, blk = task % g->blocks;
  const size_t ty0 = blk * g->rows;
  const size_t rows = g->th - ty0 < g->rows ? g->th - ty0 : g->rows;
  float* v = r->scratch + (size_t)thread * g->worker_floats;
  float* mbuf = v + g->v_floats;
  float* buf = mbuf + g->m_floats;
  float* gemm_scratch = buf + g->row_floats;
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  const float* x = r->x + image * g->c * in_vol;
  for (size_t c = 0; c < g->c; ++c)
    r->input(r, x + c * in_vol, ty0, rows, v + c * g->ld, buf);
  axle_f32_gemm_t gm;
  gemm_for_block(g, &gm);
  gm.n = rows * g->tw; /* a last, partial block: only the tiles it has */
  for (size_t e = 0; e < g->elems; ++e) {
    gm.a.packed = r->u + e * r->u_stride;
    gm.b.data = v + e * g->v_e;
    gm.c = mbuf + e * g->m_e;
    axle_f32_gemm(&gm, gemm_scratch, NULL);
  }
  float* y = r->y + image * g->m * out_vol;
  const float* res = r->ep->residual ? r->ep->residual + image * g->m * out_vol : NULL;
  for (size_t o = 0; o < g->m; ++o)
    r->output(r, mbuf, o, ty0, rows, y + o * out_vol, res ? res + o * out_vol : NULL);
}

/* Whole-image schedule: phase tasks over channels, a run of channels per
 * task. One channel of a 7x7 or 14x14 map transforms in well under a
 * microsecond, about what taking a task costs when the threads bounce its
 * counter between cores: one task per channel kept the transform phases of
 * the 7x7 layers 30 % idle with 2 threads. */
typedef struct wino_phase_t {
  const wino_run_t* r;
  const float* x;      /* this image */
  float* y;
  const float* res;
  float *v, *m, *bufs, *gemm_scratch;
  size_t in_per_task, out_per_task; /* channels */
} wino_phase_t;

static void input_phase(void* arg, size_t task, uint32_t thread) {
  const wino_phase_t* ph = arg;
  const wino_geom_t* g = ph->r->g;
  const size_t in_vol = (size_t)(ph->r->p->in[1] * ph->r->p->in[2]);
  const size_t c0 = task * ph->in_per_task;
  const size_t c1 = g->c - c0 < ph->in_per_task ? g->c : c0 + ph->in_per_task;
  for (size_t c = c0; c < c1; ++c)
    ph->r->input(ph->r, ph->x + c * in_vol, 0, g->th, ph->v + c * g->ld,
                 ph->bufs + (size_t)thread * g->row_floats);
}

static void gemm_phase(void* arg, size_t e, uint32_t thread) {
  const wino_phase_t* ph = arg;
  const wino_geom_t* g = ph->r->g;
  axle_f32_gemm_t gm;
  gemm_for_block(g, &gm);
  gm.a.packed = ph->r->u + e * ph->r->u_stride;
  gm.b.data = ph->v + e * g->v_e;
  gm.c = ph->m + e * g->m_e;
  axle_f32_gemm(&gm, ph->gemm_scratch + (size_t)thread * g->gemm_floats, NULL);
}

static void output_phase(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const wino_phase_t* ph = arg;
  const size_t out_vol = (size_t)(ph->r->p->out[1] * ph->r->p->out[2]);
  const size_t m = ph->r->g->m, o0 = task * ph->out_per_task;
  const size_t o1 = m - o0 < ph->out_per_task ? m : o0 + ph->out_per_task;
  for (size_t o = o0; o < o1; ++o)
    ph->r->output(ph->r, ph->m, o, 0, ph->r->g->th, ph->y + o * out_vol,
                  ph->res ? ph->res + o * out_vol : NULL);
}

void axle_f32_conv_winograd_run(const axle_f32_conv_params_t* p, const float* x,
                                const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                void* scratch, const axle_parallel_t* par, int tile,
                                wino_input_fn input, wino_output_fn output) {
  wino_geom_t g;
  geometry(p, tile, axle_parallel_threads(par), &g);
  wino_run_t r = {p, &g, x, packed,
                  axle_f32_gemm_packed_a_size((size_t)p->out_channels, (size_t)p->in_channels),
                  ep, y, scratch, input, output};
  if (!g.whole) {
    axle_parallel_run(par, (size_t)p->batch * g.blocks, wino_task, &r);
    return;
  }
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  float* v = scratch;
  float* m = v + g.v_floats;
  float* bufs = m + g.m_floats;
  const size_t threads = axle_parallel_threads(par);
  float* gemm_scratch = bufs + g.row_floats * threads;
  /* 8 tasks per thread, as for the depthwise planes: equal channels, with
   * room for a thread that is held up. */
  const size_t parts = threads > 1 ? threads * 8 : 1;
  for (int64_t image = 0; image < p->batch; ++image) {
    wino_phase_t ph = {&r, x + (size_t)image * g.c * in_vol, y + (size_t)image * g.m * out_vol,
                       ep->residual ? ep->residual + (size_t)image * g.m * out_vol : NULL,
                       v, m, bufs, gemm_scratch, div_up(g.c, parts), div_up(g.m, parts)};
    axle_parallel_run(par, div_up(g.c, ph.in_per_task), input_phase, &ph);
    axle_parallel_run(par, g.elems, gemm_phase, &ph);
    axle_parallel_run(par, div_up(g.m, ph.out_per_task), output_phase, &ph);
  }
}
