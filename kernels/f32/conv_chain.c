/* Inverted-residual chain: expansion -> depthwise 3x3 -> pointwise
 * projection (MobileNetV2's block, where the expansion is pointwise, and its
 * stem, where it is a 3x3 stride-2 convolution through im2col), run in
 * bands of output rows.
 *
 * Why: run layer by layer, the expansion writes its whole output (4.8 MB
 * at 112x112x96) and the depthwise convolution reads it back; beyond the
 * L2 both stream through memory, which on the machines measured (about 27
 * GB/s per core) takes longer than their arithmetic. In bands, each thread
 * keeps the expanded rows of one band and their depthwise output in two
 * buffers of about half its L2, reused band after band, so neither tensor
 * ever leaves the cache; only the block's input and output travel.
 *
 * Per band of output rows [o0, o1): the expansion computes the input rows
 * the band's 3x3 windows need that the buffer does not hold yet (the rows
 * shared with the previous band move to the buffer's top instead of being
 * computed twice), the depthwise kernel runs on those rows as a plane of
 * its own (padding rows implied at the image's edges), and the projection
 * writes the band's output rows, residual included. Each thread takes a
 * contiguous range of output rows, so threads share no intermediate. */
#include <string.h>

#include "axle_kernels.h"
#include "band_rows.h"

static size_t align16(size_t floats) { return (floats + 15) & ~(size_t)15; }
static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* A pointwise step on a band: C [m channels x n pixels] (channel rows ldc
 * apart) = the packed weights [m x k] times B read in place (k channel rows
 * of n pixels, b_rs apart), with epilogue ep. A transposed plan packed the
 * weights as B: then C^T = B^T W^T, with the pixels on the tile's rows and
 * C stored transposed, which is the same layout. */
static void pointwise(axle_f32_gemm_t* g, const axle_f32_conv_plan_t* plan, size_t m, size_t n,
                      size_t k, const float* packed, const float* b, size_t b_rs, float* c,
                      size_t ldc, const axle_f32_epilogue_t* ep) {
  memset(g, 0, sizeof *g);
  g->k = k;
  g->alpha = 1.0f;
  g->c = c;
  g->ldc = ldc;
  g->ep = ep;
  if (plan->transposed) {
    g->m = n;
    g->n = m;
    g->a.data = b;
    g->a.rs = 1;
    g->a.cs = b_rs;
    g->b.packed = packed;
    g->b.packed_kc = plan->pack_kc;
    g->c_transposed = 1;
  } else {
    g->m = m;
    g->n = n;
    g->a.packed = packed;
    g->b.data = b;
    g->b.rs = b_rs;
    g->b.cs = 1;
  }
}

/* The band walk's geometry, the same for sizing and running. */
typedef struct chain_geom_t {
  int64_t cin, ce, co;  /* block input, expanded, output channels */
  size_t x_plane;       /* floats per channel of the block's input */
  int64_t h, w, ho, wo; /* depthwise input and output sizes */
  int64_t s, pt;        /* depthwise stride and top padding */
  int64_t band, cap;    /* output rows per band; input rows the buffer holds */
  size_t e_stride;      /* floats per channel of the expansion buffer */
  size_t d_stride;      /* floats per channel of the depthwise buffer */
  size_t e_bytes, d_bytes, gemm_bytes, per_thread;
} chain_geom_t;

/* The band of a run whose output rows go to `ranges` threads: each
 * thread's range in one band where range_band allows it, else c->band. */
static int64_t run_band(const axle_f32_conv_chain_t* c, int64_t ranges) {
  const int64_t ho = c->dw->p.out[1];
  if (ranges < 2) return c->band;
  const int64_t rows = (ho + ranges - 1) / ranges;
  return rows > c->band && rows <= c->range_band ? rows : c->band;
}

static void chain_geom(const axle_f32_conv_chain_t* c, int64_t ranges, chain_geom_t* g) {
  const axle_f32_conv_params_t* d = &c->dw->p;
  memset(g, 0, sizeof *g);
  g->cin = c->expand->p.in_channels;
  g->x_plane = (size_t)(c->expand->p.in[1] * c->expand->p.in[2]);
  g->ce = d->out_channels;
  g->co = c->project->p.out_channels;
  g->h = d->in[1];
  g->w = d->in[2];
  g->ho = d->out[1];
  g->wo = d->out[2];
  g->s = d->stride[1];
  g->pt = d->pad[1];
  g->band = run_band(c, ranges);
  g->cap = (g->band - 1) * g->s + 3;
  g->e_stride = align16((size_t)(g->cap * g->w));
  g->d_stride = align16((size_t)(g->band * g->wo));
  g->e_bytes = sizeof(float) * g->e_stride * (size_t)g->ce;
  g->d_bytes = sizeof(float) * g->d_stride * (size_t)g->ce;
  g->gemm_bytes = c->gemm_bytes;
  g->per_thread = align64(g->e_bytes) + align64(g->d_bytes) + align64(g->gemm_bytes);
}

/* Whether the two buffers of bands of b output rows fit in budget bytes. */
static int band_fits(const axle_f32_conv_params_t* d, int64_t b, size_t budget) {
  const int64_t cap = (b - 1) * d->stride[1] + 3;
  return sizeof(float) * (size_t)(d->out_channels * (cap * d->in[2] + b * d->out[2])) <= budget;
}

/* The most output rows, up to `most`, whose two buffers fit in `budget`
 * bytes, a multiple of 4 (the depthwise kernels' row group) from 4 on, so
 * no partial group of rows falls mid-image. */
static int64_t band_within(const axle_f32_conv_params_t* d, size_t budget, int64_t most) {
  int64_t band = 1;
  for (int64_t b = 2; b <= most && band_fits(d, b, budget); ++b) band = b;
  return band > 4 ? band - band % 4 : band;
}

/* The most of the L2 a band's buffers take where half of it gives too few
 * rows: 90 %. */
static size_t l2_most(void) { return axle_kernels_l2_bytes() / 10 * 9; }

/* The default band for depthwise plan dw: the most output rows whose two
 * buffers fit in half the L2; where that is 4-7 rows, 8 if they fit in 90 %
 * of it. Every band calls the GEMM driver twice and the depthwise kernel
 * once per channel, and with 4 rows those calls are short: on Zen 5 (1 MB
 * L2) MobileNetV2's 56x56 blocks took 4-row bands by the half rule, and in
 * 8 their depthwise planes ran 2.93 -> 2.51 ns per 16 outputs (144 planes
 * alone, in L2), the two blocks ~5 % faster in the network. Only there: a
 * 90 % budget for every band, which with a 512 KB L2 (capped at AVX2, as
 * on Zen 3) chains the 56x56 blocks in 4-row bands, ran MobileNetV2 ~1 %
 * slower there; this rule only takes the stem's chain from 4 to 8 rows
 * there, even (5.83 against 5.84 ms). */
static int64_t band_for(const axle_f32_conv_plan_t* dw) {
  const axle_f32_conv_params_t* d = &dw->p;
  const int64_t band = band_within(d, axle_kernels_l2_bytes() / 2, d->out[1]);
  if (band < 4 || band >= 8) return band;
  const int64_t wider = band_within(d, l2_most(), d->out[1] < 8 ? d->out[1] : 8);
  return wider > band ? wider : band;
}

/* Channels-last, below. */
static size_t cl_gemm_bytes(const axle_f32_conv_chain_t* c);
static size_t cl_blocked(const axle_f32_conv_plan_t* dw, const axle_f32_conv_plan_t* project);
static size_t cl_parts(const axle_f32_conv_plan_t* expand, uint32_t threads);

void axle_f32_conv_chain_init(axle_f32_conv_chain_t* c, int64_t band) {
  const int64_t ho = c->dw->p.out[1];
  if (c->channels_last) {
    c->band = ho;
    c->gemm_bytes = cl_gemm_bytes(c);
    return;
  }
  const int default_band = band < 1;
  if (default_band) band = band_for(c->dw);
  c->band = band > ho ? ho : band;
  /* On several threads a range is at most half the rows. With bands of 8
   * (half the L2) MobileNetV2's 28x28 blocks ran 8 + 6 rows a thread at 2
   * threads, their expansions over 9-10 rows of 28 pixels (partial column
   * tiles) and computed twice at the band's edge; in one band of 14 (645
   * KB) the model ran 1.557 -> 1.545 ms (14 rounds alternating, Zen 5). */
  const int64_t half = (ho + 1) / 2;
  c->range_band =
      default_band && half > c->band && band_fits(&c->dw->p, half, l2_most()) ? half : c->band;
  c->gemm_bytes = 0;
  chain_geom_t g;
  chain_geom(c, 2, &g); /* the widest band: range_band */
  /* GEMM scratch for any band of the steps before and after the depthwise
   * one: the size is not monotonic in n (the column chunking changes), so
   * every band height is asked, once here rather than on every run. Only
   * the operand kinds matter, not the pointers. */
  axle_f32_gemm_t gm;
  size_t most = 0;
  for (int64_t rows = 1; rows <= g.band; ++rows) {
    pointwise(&gm, c->project, (size_t)g.co, (size_t)(rows * g.wo), (size_t)g.ce, c->packed[2],
              c->packed[2], g.d_stride, NULL, 0, NULL);
    const size_t bytes = axle_f32_gemm_scratch_size(&gm, 1);
    if (bytes > most) most = bytes;
  }
  for (int64_t rows = 1; rows <= g.cap; ++rows) {
    const size_t bytes = axle_f32_conv_rows_scratch_size(c->expand, rows);
    if (bytes > most) most = bytes;
  }
  c->gemm_bytes = most;
}

static int is_pointwise_gemm(const axle_f32_conv_plan_t* p) {
  return p->algo == AXLE_F32_CONV_GEMM && p->p.groups == 1 && p->p.in[0] == 1 && p->p.out[0] == 1;
}

/* The shapes agree and each stage is of a kind the chain runs: the
 * expansion one axle_f32_conv_rows takes, the depthwise stage 2-D 3x3 of
 * multiplier 1 at stride 1 or 2, the projection pointwise. */
static int chain_shapes(const axle_f32_conv_plan_t* expand, const axle_f32_conv_plan_t* dw,
                        const axle_f32_conv_plan_t* project) {
  const axle_f32_conv_params_t* d = &dw->p;
  if (dw->algo != AXLE_F32_CONV_DEPTHWISE || dw->m != 1 || d->in[0] != 1 || d->out[0] != 1 ||
      d->kernel[1] != 3 || d->kernel[2] != 3 || d->dilation[1] != 1 || d->dilation[2] != 1 ||
      d->stride[1] != d->stride[2] || (d->stride[1] != 1 && d->stride[1] != 2) || d->pad[1] < 0 ||
      d->pad[1] > 2)
    return 0;
  if (!is_pointwise_gemm(project) || project->p.batch != d->batch ||
      project->p.in_channels != d->out_channels || project->p.in[1] != d->out[1] ||
      project->p.in[2] != d->out[2])
    return 0;
  if (!axle_f32_conv_rows_supports(expand) || expand->p.batch != d->batch ||
      expand->p.out_channels != d->in_channels || expand->p.out[1] != d->in[1] ||
      expand->p.out[2] != d->in[2])
    return 0;
  return 1;
}

/* Whether bands chain these plans with an expanded tensor of at least
 * `min_bytes` per image (see axle_f32_conv_chain_supports). */
static int bands_pay(const axle_f32_conv_plan_t* expand, const axle_f32_conv_plan_t* dw,
                     const axle_f32_conv_plan_t* project, size_t min_bytes) {
  if (!chain_shapes(expand, dw, project)) return 0;
  const axle_f32_conv_params_t* d = &dw->p;
  /* An im2col expansion (MobileNetV2's stem) pays too, from AVX2: with
   * AVX-512 the three layers 481-514 us chained against 533-553 apart (1
   * thread, in the network, Sapphire Rapids); capped at AVX2 they first
   * took 766-856 against 745-757, but with the AVX2 depthwise walk of four
   * rows a pass (dwconv_avx2.c) 634-646 against 714-720 (Zen 4). Not
   * measured, so not taken, on the scalar kernels. */
  if (expand->algo != AXLE_F32_CONV_GEMM && axle_kernels_isa() < AXLE_ISA_AVX2_FMA) return 0;
  /* Worth it only where measured to pay (2 MB L2): the expanded tensor of
   * one image past half the L2 and at least 1 MiB (at 28x28x192, 600 KB,
   * the chain was 1.15-1.2x the three layers), and bands of at least 4
   * rows (with 1-3, as a 512 KB L2 gives the 112x112 and 56x56 blocks, the
   * calls get too small: MobileNetV2 15 % slower with chains sized so). */
  const size_t expanded = (size_t)(d->in_channels * d->in[1] * d->in[2]) * sizeof(float);
  return expanded >= min_bytes && band_for(dw) >= 4;
}

int axle_f32_conv_chain_supports(const axle_f32_conv_plan_t* expand, const axle_f32_conv_plan_t* dw,
                                 const axle_f32_conv_plan_t* project) {
  const size_t past_half_l2 = axle_kernels_l2_bytes() / 2 + 1;
  return bands_pay(expand, dw, project,
                   past_half_l2 > ((size_t)1 << 20) ? past_half_l2 : (size_t)1 << 20);
}

int axle_f32_conv_chain_mode(const axle_f32_conv_plan_t* expand, const axle_f32_conv_plan_t* dw,
                             const axle_f32_conv_plan_t* project, uint32_t threads) {
  if (axle_f32_conv_chain_supports(expand, dw, project)) return AXLE_F32_CHAIN_BANDS;
  /* On several threads bands pay from 512 KiB: as layers, the threads
   * meet in five parallel regions per block, every layer cut along its own
   * axis (pixels, channels, K), so each reads part of its input from the
   * other core's cache; a band chain is one region, each thread on its own
   * rows. MobileNetV2's 28x28 blocks (600 KB) at 2 threads, three rounds in
   * each order: 108-116 -> 87-94, 92-100 -> 85-92 and 72-77 -> 68-74 us.
   * Not at 14x14 (300-450 KB): the 384-channel blocks -1..-7 us, the
   * 576-channel ones +6..+7, the stride-2 one +24. */
  if (threads > 1 && bands_pay(expand, dw, project, (size_t)512 << 10)) return AXLE_F32_CHAIN_BANDS;
  /* Channels-last where the expanded map has fewer pixels than channels
   * (14x14 and 7x7 in MobileNetV2), or fits in the L2 (28x28). At 28x28
   * x 192 the block first ran 2-5 % slower on one thread, the
   * projection's packing of its channels-last input outweighing the
   * depthwise gain; with the projection reading it in place, -7, 0 and
   * +6..+7 us for the three blocks with AVX-512, so it was taken only with
   * AVX2, whose per-plane depthwise walk trailed its channels-last one
   * more (28x28: 3.5 against 2.5 ns per 8 outputs; the three blocks
   * 735-750 -> 697-714 us, 1 thread, capped on Zen 4). Since the AVX-512
   * channels-last strips are specialised for their edges (dwconv_nhwc_avx512.c),
   * the three blocks with AVX-512 too: 296-307 -> 288-295 us in all, six
   * rounds alternating (Zen 5, 1 thread). On several threads each thread takes a
   * part of the channels (see cl_part_task), which needs the projection
   * to read the depthwise output in place (cl_blocked: with packing,
   * earlier splits by pixels or rows lost to the three layers). */
  const axle_isa_t isa = axle_kernels_isa();
  const size_t pixels = (size_t)(dw->p.in[1] * dw->p.in[2]);
  const size_t expanded = pixels * (size_t)dw->p.in_channels * sizeof(float);
  const int fits = pixels < (size_t)dw->p.in_channels || expanded <= axle_kernels_l2_bytes();
  if (!chain_shapes(expand, dw, project) || !is_pointwise_gemm(expand) ||
      !axle_f32_dwconv_nhwc_supports(&dw->p) || !fits || isa < AXLE_ISA_AVX2_FMA)
    return AXLE_F32_CHAIN_NONE;
  if (threads == 1 || (cl_blocked(dw, project) && cl_parts(expand, threads) == threads))
    return AXLE_F32_CHAIN_CHANNELS_LAST;
  return AXLE_F32_CHAIN_NONE;
}

/* ---- channels-last: whole images, stage by stage ------------------------
 *
 * For the maps too small for bands to pay (the expanded tensor within half
 * the L2), the stages run one after the other over the whole image, with
 * the intermediates channels-last: the expansion
 * writes [pixels][channels] (its bias, one per stored column there, goes
 * in as a residual row broadcast with ldr = 0), the depthwise stage reads
 * and writes that layout (one load per tap for 16 channels,
 * dwconv_nhwc.c), and the projection reads it and writes the NCHW output.
 * Both GEMMs put the pixels on the tile's rows: so the expanded rows are
 * stored whole, and the projection's packing of its input (a transpose)
 * costs less than reading it as B would (1 thread, in the network, per
 * 14x14 block with 384 channels: expansion 68 against 90 us, projection 78
 * against 87). Where the tiles can read it in place (cl_blocked), the
 * depthwise stage writes its output in blocks of 16 channels instead, the
 * projection's blocked A, and the packing goes: alone, AVX-512, 576 -> 96
 * at 14x14 131-146 -> 115-129 us, 384 -> 64 66-71 -> 57-60, 960 -> 160 at
 * 7x7 96-108 -> 91-93; capped at AVX2 on Zen 4, in MobileNetV2 at 1
 * thread, the projections 1715 -> 1545-1585 us a run and the depthwise
 * stages (their stores now a block's line) 314 -> 278. */

/* The K block a plan's packed weights hold. */
static size_t packed_kc(const axle_f32_conv_plan_t* plan) {
  return plan->pack_kc ? plan->pack_kc : axle_f32_gemm_kc(plan->k);
}

/* The block stride of the depthwise output as the projection's blocked A,
 * or 0 to keep it [pixels][channels]: only where the driver reads it in
 * place (AVX2 or AVX-512, K in whole blocks of 16, tiles all full width:
 * 16 and 32), since anywhere else it would be packed from the blocks,
 * slower than from rows. */
static size_t cl_blocked(const axle_f32_conv_plan_t* dw, const axle_f32_conv_plan_t* project) {
  const axle_f32_conv_params_t* d = &dw->p;
  const size_t k = project->k, n = project->m;
  const axle_isa_t isa = axle_kernels_isa();
  const size_t tile = isa >= AXLE_ISA_AVX512 ? 2 * AXLE_F32_GEMM_NR : AXLE_F32_GEMM_NR;
  if (isa < AXLE_ISA_AVX2_FMA || k % 16 || packed_kc(project) % 16 || n % tile) return 0;
  return 16 * (size_t)(d->out[1] * d->out[2]);
}

/* Where channel part t of `parts` starts: whole blocks of 16 (the
 * depthwise output's blocks, the weights' panels), as even as that allows. */
static size_t cl_part(size_t channels, size_t t, size_t parts) {
  const size_t at = (channels + 15) / 16 * t / parts * 16;
  return at < channels ? at : channels;
}

/* The channel parts of a run on `threads` threads: one per thread, where a
 * part's columns of the packed expansion weights are a packed operand of
 * their own (one K block) and every part gets a block. */
static size_t cl_parts(const axle_f32_conv_plan_t* expand, uint32_t threads) {
  const size_t blocks = (expand->m + 15) / 16;
  if (threads <= 1 || packed_kc(expand) < expand->k) return 1;
  return threads < blocks ? threads : blocks;
}

/* The expansion of channels [c0, c1) of one image, with the pixels on the
 * tile's rows (the plan made channels-last): A = X^T read from the NCHW
 * input, B the part's panels of the packed weights, C the part's own
 * buffer [pixels][c1 - c0], stored row by row. ep: its epilogue (the bias
 * as a residual row, offset to c0 by the caller). */
static void cl_expand_gemm(const axle_f32_conv_chain_t* c, size_t c0, size_t c1, const float* x,
                           float* e, const axle_f32_epilogue_t* ep, axle_f32_gemm_t* g) {
  const axle_f32_conv_plan_t* plan = c->expand;
  memset(g, 0, sizeof *g);
  g->alpha = 1.0f;
  g->m = plan->n;
  g->n = c1 - c0;
  g->k = plan->k;
  g->ep = ep;
  g->a.data = x;
  g->a.rs = 1;
  g->a.cs = plan->n;
  g->b.packed = c->packed[0] + c0 * plan->k; /* panels of 16 columns, kc = k */
  g->b.packed_kc = plan->pack_kc;
  g->c = e;
  g->ldc = c1 - c0;
}

/* The projection of one image: A the depthwise output, [pixels][channels]
 * or blocked (its block stride `blocked`: cl_blocked), C stored transposed
 * into the NCHW output. */
static void cl_project_gemm(const axle_f32_conv_chain_t* c, const float* d, size_t blocked,
                            float* y, const axle_f32_epilogue_t* ep, axle_f32_gemm_t* g) {
  const axle_f32_conv_plan_t* plan = c->project;
  memset(g, 0, sizeof *g);
  g->alpha = 1.0f;
  g->m = plan->n;
  g->n = plan->m;
  g->k = plan->k;
  g->ep = ep;
  g->a.data = d;
  if (blocked) {
    g->a.blocked = blocked;
  } else {
    g->a.rs = plan->k;
    g->a.cs = 1;
  }
  g->b.packed = c->packed[2];
  g->b.packed_kc = plan->pack_kc;
  g->c = y;
  g->ldc = plan->n;
  g->c_transposed = 1;
}

/* Bytes of the two channels-last buffers at the start of the scratch; the
 * threads' expansion scratch (c->gemm_bytes each) follows, then the
 * projection's GEMM scratch, last so that a run needs no size of it. */
typedef struct cl_layout_t {
  size_t e_bytes, d_bytes;
} cl_layout_t;

static void cl_layout(const axle_f32_conv_chain_t* c, cl_layout_t* l) {
  const axle_f32_conv_params_t* d = &c->dw->p;
  l->e_bytes = align64(sizeof(float) * (size_t)(d->in[1] * d->in[2] * d->in_channels));
  l->d_bytes = align64(sizeof(float) * (size_t)(d->out[1] * d->out[2] * d->out_channels));
}

/* The projection's GEMM scratch on `threads` threads for either layout of
 * the depthwise output, whichever the ISA level of the run picks, so that
 * a scratch sized under another level still holds. */
static size_t cl_project_bytes(const axle_f32_conv_chain_t* c, uint32_t threads) {
  const axle_f32_conv_params_t* d = &c->dw->p;
  size_t most = 0;
  for (int blocked = 0; blocked < 2; ++blocked) {
    axle_f32_gemm_t g;
    cl_project_gemm(c, NULL, blocked ? 16 * (size_t)(d->out[1] * d->out[2]) : 0, NULL, NULL, &g);
    const size_t b = axle_f32_gemm_scratch_size(&g, threads);
    if (b > most) most = b;
  }
  return most;
}

/* The serial expansion scratch of any part a run may cut (every width in
 * blocks of 16, and all channels), asked once here rather than on every
 * run. */
static size_t cl_gemm_bytes(const axle_f32_conv_chain_t* c) {
  const size_t channels = c->expand->m;
  size_t most = 0;
  for (size_t w = 16; w < channels + 16; w += 16) {
    axle_f32_gemm_t g;
    cl_expand_gemm(c, 0, w < channels ? w : channels, NULL, NULL, NULL, &g);
    const size_t b = axle_f32_gemm_scratch_size(&g, 1);
    if (b > most) most = b;
  }
  return align64(most);
}

typedef struct cl_run_t {
  const axle_f32_conv_chain_t* c;
  size_t parts;
  axle_f32_dwconv_nhwc_fn dw;
  size_t blocked; /* the depthwise output's layout: cl_blocked */
  axle_f32_epilogue_t ep0;
  const float* x; /* this image's */
  float *e, *d;
  char* gemm_scratch; /* per thread, c->gemm_bytes apart */
} cl_run_t;

/* Part t: the expansion of its channels into its own [pixels][channels]
 * buffer, then the depthwise stage on them, both on this thread, so the
 * depthwise stage reads only what the same core has just written, in one
 * contiguous buffer. (Cut across each pixel's channels of one shared
 * buffer instead, it ran 2.2x slower after the expansion than alone.) */
static void cl_part_task(void* arg, size_t t, uint32_t thread) {
  const cl_run_t* r = arg;
  const axle_f32_conv_params_t* d = &r->c->dw->p;
  const size_t channels = (size_t)d->in_channels, pixels = (size_t)(d->in[1] * d->in[2]);
  const size_t c0 = cl_part(channels, t, r->parts), c1 = cl_part(channels, t + 1, r->parts);
  if (c0 >= c1) return;
  float* e = r->e + c0 * pixels;
  axle_f32_epilogue_t ep0 = r->ep0;
  if (ep0.residual) ep0.residual += c0;
  axle_f32_gemm_t g;
  cl_expand_gemm(r->c, c0, c1, r->x, e, &ep0, &g);
  axle_f32_gemm(&g, r->gemm_scratch + (size_t)thread * r->c->gemm_bytes, NULL);
  /* Channel c of pixel q at e[q (c1 - c0) + c - c0]. */
  const int64_t y_pixel = r->blocked ? 16 : (int64_t)channels;
  const int64_t y_block = r->blocked ? (int64_t)r->blocked : 16;
  r->dw(d, e - c0, (int64_t)(c1 - c0), r->c->packed[1], &r->c->ep[1], 0, d->out[1], (int64_t)c0,
        (int64_t)c1, y_pixel, y_block, r->d);
}

/* Per image the parts (each thread its channels), then the projection,
 * which the GEMM splits itself: over K on several threads where that pays
 * (axle_f32_gemm), i.e. each thread over the channels its part has just
 * written. The parts go to the GEMM as the work that writes its A
 * (k_part_first): where it splits K into exactly the parts, each part runs
 * first in its K part's task, so one parallel region does both; on 2
 * threads that removed one of the three regions per block and the waits
 * at its end (MobileNetV2's ten channels-last blocks). */
static void chain_channels_last(const axle_f32_conv_chain_t* c, const float* x, float* y,
                                void* scratch, const axle_parallel_t* par) {
  const axle_f32_conv_params_t* d = &c->dw->p;
  const uint32_t threads = axle_parallel_threads(par);
  cl_layout_t l;
  cl_layout(c, &l);
  cl_run_t r;
  r.c = c;
  r.parts = cl_parts(c->expand, threads);
  r.dw = axle_f32_dwconv_nhwc_kernel(d);
  r.blocked = cl_blocked(c->dw, c->project);
  r.e = scratch;
  r.d = (float*)((char*)scratch + l.e_bytes);
  r.gemm_scratch = (char*)scratch + l.e_bytes + l.d_bytes;
  char* project_scratch = r.gemm_scratch + c->gemm_bytes * threads;
  const size_t x_image = (size_t)(c->expand->p.in_channels * d->in[1] * d->in[2]);
  const size_t y_plane = (size_t)(d->out[1] * d->out[2]);
  const size_t y_image = (size_t)c->project->p.out_channels * y_plane;
  /* The expansion's bias goes with the channels, which are its stored
   * columns: as a residual row added to every pixel. */
  r.ep0 = c->ep[0];
  r.ep0.residual = r.ep0.bias;
  r.ep0.ldr = 0;
  r.ep0.bias = NULL;
  for (int64_t n = 0; n < d->batch; ++n) {
    r.x = x + (size_t)n * x_image;
    axle_f32_epilogue_t ep2 = c->ep[2];
    if (ep2.residual) {
      ep2.residual += (size_t)n * y_image;
      ep2.ldr = y_plane;
    }
    axle_f32_gemm_t g;
    cl_project_gemm(c, r.d, r.blocked, y + (size_t)n * y_image, &ep2, &g);
    g.k_part_first = cl_part_task;
    g.k_part_ctx = &r;
    g.k_part_count = r.parts;
    g.k_part_align = 16; /* cl_part's blocks */
    axle_f32_gemm(&g, project_scratch, par);
  }
}

size_t axle_f32_conv_chain_scratch_size(const axle_f32_conv_chain_t* c, uint32_t threads) {
  if (threads < 1) threads = 1;
  if (c->channels_last) {
    cl_layout_t l;
    cl_layout(c, &l);
    return l.e_bytes + l.d_bytes + c->gemm_bytes * threads + cl_project_bytes(c, threads);
  }
  chain_geom_t g;
  chain_geom(c, threads < c->dw->p.out[1] ? threads : c->dw->p.out[1], &g);
  return g.per_thread * threads;
}

typedef struct chain_run_t {
  const axle_f32_conv_chain_t* c;
  chain_geom_t g;
  const float* x;
  float* y;
  char* scratch;
  int64_t ranges; /* row ranges per image */
} chain_run_t;

/* Output rows [o_begin, o_end) of image n, band by band, in thread's
 * buffers. */
static void chain_task(void* arg, size_t task, uint32_t thread) {
  const chain_run_t* r = arg;
  const axle_f32_conv_chain_t* c = r->c;
  const chain_geom_t* g = &r->g;
  const int64_t n = (int64_t)task / r->ranges, part = (int64_t)task % r->ranges;
  const int64_t o_begin = part * g->ho / r->ranges, o_end = (part + 1) * g->ho / r->ranges;
  char* mine = r->scratch + (size_t)thread * g->per_thread;
  float* eb = (float*)mine;
  float* db = (float*)(mine + align64(g->e_bytes));
  void* gscratch = mine + align64(g->e_bytes) + align64(g->d_bytes);
  const size_t plane_out = (size_t)(g->ho * g->wo);
  const float* x = r->x + (size_t)n * (size_t)g->cin * g->x_plane;
  float* y = r->y + (size_t)n * (size_t)g->co * plane_out;
  const float* res =
      c->ep[2].residual ? c->ep[2].residual + (size_t)n * (size_t)g->co * plane_out : NULL;
  int64_t held0 = 0, held1 = 0; /* input rows [held0, held1) are in eb */
  for (int64_t o0 = o_begin; o0 < o_end; o0 += g->band) {
    const int64_t o1 = o0 + g->band < o_end ? o0 + g->band : o_end;
    const int64_t i0 = o0 * g->s - g->pt, i1 = (o1 - 1) * g->s - g->pt + 3;
    const int64_t r0 = i0 < 0 ? 0 : i0, r1 = i1 > g->h ? g->h : i1;
    const int64_t keep = axle_band_keep_rows(eb, g->e_stride, g->ce, g->w, held0, held1, r0);
    axle_f32_conv_rows(c->expand, x, c->packed[0], &c->ep[0], r0 + keep, r1,
                       eb + (size_t)(keep * g->w), g->e_stride, gscratch);
    held0 = r0;
    held1 = r1;
    /* The band's rows as a plane of their own: top padding only where the
     * band starts above the image, bottom padding implied by out rows. */
    axle_f32_conv_params_t q = c->dw->p;
    q.batch = 1;
    q.in[1] = r1 - r0;
    q.pad[1] = r0 - i0;
    q.out[1] = o1 - o0;
    axle_f32_dwconv_plane_run(&q, (size_t)g->ce, eb, g->e_stride, c->packed[1], c->ep[1].bias,
                              &c->ep[1], db, g->d_stride);
    axle_f32_epilogue_t ep = c->ep[2];
    if (res) {
      ep.residual = res + (size_t)(o0 * g->wo);
      ep.ldr = plane_out;
    }
    axle_f32_gemm_t gm;
    pointwise(&gm, c->project, (size_t)g->co, (size_t)((o1 - o0) * g->wo), (size_t)g->ce,
              c->packed[2], db, g->d_stride, y + (size_t)(o0 * g->wo), plane_out, &ep);
    axle_f32_gemm(&gm, gscratch, NULL);
  }
}

void axle_f32_conv_chain(const axle_f32_conv_chain_t* c, const float* x, float* y, void* scratch,
                         const axle_parallel_t* par) {
  if (c->channels_last) {
    chain_channels_last(c, x, y, scratch, par);
    return;
  }
  chain_run_t r;
  r.c = c;
  const int64_t threads = axle_parallel_threads(par), ho = c->dw->p.out[1];
  r.ranges = threads < ho ? threads : ho;
  chain_geom(c, r.ranges, &r.g);
  r.x = x;
  r.y = y;
  r.scratch = scratch;
  axle_parallel_run(par, (size_t)(c->dw->p.batch * r.ranges), chain_task, &r);
}
