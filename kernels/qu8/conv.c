/* Prepared quantized convolution: planning, weight packing and the run.
 *
 * GEMM and IM2COL share one driver: the output of each (image, group) is
 * cut into strips of NR pixels; a worker packs a strip of the input (the
 * input itself for pointwise layers, an im2col block otherwise) into the
 * plan's layout (int16 pairs, or u8 quads for VNNI) once, in its own
 * scratch, and runs the micro-kernel over its range of weight panels, so
 * packed weights stream from cache while the strip stays in L1. DEPTHWISE
 * runs plane kernels.
 *
 * Packed layout, per group: the int32 terms bias - x_zero_point * sum w of
 * its output channels (64-byte aligned), then the weights: panels of MR (or
 * C4_MR) rows in the micro-kernel's layout, or for depthwise each channel's
 * taps as int16 (an even count). Both GEMM layouts take 4 bytes per row and
 * K group (a pair of int16 or a quad of s8). */
#include <string.h>

#include "axle_kernels_qu8.h"
#include "requant.h"

enum { MR = AXLE_QU8_GEMM_MR, NR = AXLE_QU8_GEMM_NR, C4_MR = AXLE_QU8_GEMM_C4_MR };

static size_t round64(size_t v) { return (v + 63) / 64 * 64; }
static int64_t volume(const int64_t* d) { return d[0] * d[1] * d[2]; }

static int is_pointwise(const axle_f32_conv_params_t* p) {
  for (int d = 0; d < AXLE_KERNEL_MAX_SPATIAL; ++d)
    if (p->kernel[d] != 1 || p->stride[d] != 1 || p->pad[d] != 0 || p->in[d] != p->out[d]) return 0;
  return 1;
}

void axle_qu8_conv_plan(const axle_f32_conv_params_t* p, int32_t x_zero_point,
                        axle_qu8_conv_plan_t* plan) {
  memset(plan, 0, sizeof *plan);
  plan->p = *p;
  plan->x_zero_point = x_zero_point;
  const int64_t cg = p->in_channels / p->groups;
  plan->m = (size_t)(p->out_channels / p->groups);
  plan->n = (size_t)volume(p->out);
  plan->k = (size_t)(cg * volume(p->kernel));
  if (cg == 1 && p->groups > 1)
    plan->algo = AXLE_QU8_CONV_DEPTHWISE;
  else
    plan->algo = is_pointwise(p) ? AXLE_QU8_CONV_GEMM : AXLE_QU8_CONV_IM2COL;
  /* Quads where VNNI takes them (AVX-VNNI or AVX-512), and for one pixel
   * per image (a fully connected layer) everywhere: its weights stream from
   * memory once per run, and s8 quads are half the bytes of widened pairs. */
  plan->gemm_layout =
      axle_kernels_isa() >= AXLE_ISA_AVX2_VNNI || (plan->algo == AXLE_QU8_CONV_GEMM && plan->n == 1)
          ? AXLE_QU8_GEMM_QUADS
          : AXLE_QU8_GEMM_PAIRS;
}

static int quads(const axle_qu8_conv_plan_t* plan) {
  return plan->gemm_layout == AXLE_QU8_GEMM_QUADS;
}
/* K per group of the GEMM layout (the depthwise taps come in pairs). */
static size_t k_per_group(const axle_qu8_conv_plan_t* plan) { return quads(plan) ? 4 : 2; }
static size_t k_pairs(const axle_qu8_conv_plan_t* plan) { return (plan->k + 1) / 2; }
/* Divides by constants: the driver asks per strip, and a division by
 * k_per_group() was a div instruction there. */
static size_t k_groups(const axle_qu8_conv_plan_t* plan) {
  return quads(plan) ? (plan->k + 3) / 4 : (plan->k + 1) / 2;
}
static size_t panel_rows(const axle_qu8_conv_plan_t* plan) { return quads(plan) ? C4_MR : MR; }
static size_t m_panels(const axle_qu8_conv_plan_t* plan) {
  return (plan->m + panel_rows(plan) - 1) / panel_rows(plan);
}
static size_t panel_bytes(const axle_qu8_conv_plan_t* plan) {
  return k_groups(plan) * panel_rows(plan) * 4;
}
static size_t terms_bytes(const axle_qu8_conv_plan_t* plan) {
  return round64(plan->m * sizeof(int32_t));
}

static size_t group_bytes(const axle_qu8_conv_plan_t* plan) {
  const size_t weights = plan->algo == AXLE_QU8_CONV_DEPTHWISE
                             ? plan->m * k_pairs(plan) * 2 * sizeof(int16_t)
                             : m_panels(plan) * panel_bytes(plan);
  return round64(terms_bytes(plan) + weights);
}

size_t axle_qu8_conv_packed_size(const axle_qu8_conv_plan_t* plan) {
  return group_bytes(plan) * (size_t)plan->p.groups;
}

void axle_qu8_conv_pack(const axle_qu8_conv_plan_t* plan, const int8_t* w, const int32_t* bias,
                        void* packed) {
  const size_t m = plan->m, k = plan->k, kp = k_pairs(plan);
  const size_t mr = panel_rows(plan), kg = k_per_group(plan), kgs = k_groups(plan);
  const int depthwise = plan->algo == AXLE_QU8_CONV_DEPTHWISE, bytes = !depthwise && quads(plan);
  memset(packed, 0, axle_qu8_conv_packed_size(plan));
  for (int64_t g = 0; g < plan->p.groups; ++g) {
    const int8_t* wg = w + (size_t)g * m * k;
    unsigned char* base = (unsigned char*)packed + (size_t)g * group_bytes(plan);
    int32_t* terms = (int32_t*)base;
    unsigned char* dst = base + terms_bytes(plan);
    for (size_t i = 0; i < m; ++i) {
      int64_t sum = 0;
      for (size_t t = 0; t < k; ++t) sum += wg[i * k + t];
      const int64_t b = bias ? bias[(size_t)g * m + i] : 0;
      terms[i] = axle_qu8_wrap(b - (int64_t)plan->x_zero_point * sum);
      for (size_t t = 0; t < k; ++t) {
        const size_t at = depthwise ? i * kp * 2 + t
                                    : ((i / mr * kgs + t / kg) * mr + i % mr) * kg + t % kg;
        if (bytes)
          ((int8_t*)dst)[at] = wg[i * k + t];
        else
          ((int16_t*)dst)[at] = wg[i * k + t];
      }
    }
  }
}

/* ---- GEMM and IM2COL ------------------------------------------------------ */

/* Per-worker scratch: the packed strip, then (IM2COL) the u8 im2col block. */
static size_t strip_bytes(const axle_qu8_conv_plan_t* plan) {
  return round64(k_groups(plan) * NR * 4);
}
/* Strips unfolded per im2col call: the call's index arithmetic (divisions
 * per kernel row) is paid per block, so blocks are as wide as a 64 KB
 * buffer allows (capped at 16 strips, the int8 MobileNetV2's 3x3 stem, K =
 * 27, had taken 196 / 127 us at 1 / 2 threads; with no cap 167 / 88-100). */
static size_t im2col_strips(const axle_qu8_conv_plan_t* plan) {
  const size_t fit = 65536 / ((plan->k ? plan->k : 1) * NR);
  return fit < 1 ? 1 : fit;
}

/* The larger of the two depthwise layouts (per plane, 16 channels a call). */
static size_t dw_tmp_bytes(const axle_f32_conv_params_t* p) {
  const size_t plane = axle_qu8_dwconv_tmp_size(p), group = axle_qu8_dwconv16_tmp_size(p);
  return plane > group ? plane : group;
}

/* Pointwise layers on quads keep room for a second strip: a narrow last
 * strip (at most AXLE_QU8_GEMM_EXTRA_MAX columns) joins the one before it
 * where the AVX-512 tile takes both (axle_qu8_gemm_12x16e4c4__avx512). */
static size_t extra_strips(const axle_qu8_conv_plan_t* plan) {
  return plan->algo == AXLE_QU8_CONV_GEMM && quads(plan) ? 1 : 0;
}

/* Each worker's scratch starts 128 bytes clear of its neighbour's. The
 * strips of small-K layers are a few hundred bytes, rewritten per strip;
 * packed back to back, two workers' strips sat on adjacent cache lines
 * (one 128-byte prefetch pair) and the 1x1 16 -> 96 layer at 112x112 ran
 * no faster on 2 threads than on 1 (Sapphire Rapids; with the gap: 1.13x,
 * and the QDQ MobileNetV2's layers 2.45 -> 2.2-2.3 ms at 2 threads). */
static size_t worker_bytes(const axle_qu8_conv_plan_t* plan) {
  const size_t bytes = plan->algo == AXLE_QU8_CONV_DEPTHWISE
                           ? dw_tmp_bytes(&plan->p)
                           : strip_bytes(plan) + (plan->algo == AXLE_QU8_CONV_IM2COL
                                                      ? round64(plan->k * NR * im2col_strips(plan))
                                                      : extra_strips(plan) * strip_bytes(plan));
  return (bytes + 127) / 128 * 128 + 128;
}

typedef void (*pack_b_fn)(size_t kc, size_t cols, const uint8_t* x, size_t rs, int16_t* packed);
typedef void (*pack_b_c4_fn)(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                             uint8_t* packed);

typedef void (*im2col_fn)(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                          uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                          uint8_t* dst);

typedef struct gemm_run_t {
  const axle_qu8_conv_plan_t* plan;
  const uint8_t* x;
  const unsigned char* packed;
  const axle_qu8_requant_t* rq;
  uint8_t* y;
  unsigned char* scratch;
  /* The plan's layout picks the pair: */
  axle_qu8_gemm_block_fn block; /* AXLE_QU8_GEMM_PAIRS */
  pack_b_fn pack_b;
  axle_qu8_gemm_c4_block_fn block_c4; /* AXLE_QU8_GEMM_QUADS */
  pack_b_c4_fn pack_b_c4;
  /* For a strip of one column (one pixel per image): the tile of that
   * layout that takes the weights as the vector operand, or NULL. */
  axle_qu8_gemm_ukernel_fn column;
  axle_qu8_gemm_c4_ukernel_fn column_c4;
  /* A full strip and a narrow last one together (extra_strips), or NULL. */
  void (*extra_c4)(size_t mr, size_t e, size_t kq, const int8_t* a, const uint8_t* b,
                   const uint8_t* b2, const int32_t* terms, const float* scale,
                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
  im2col_fn im2col;
  size_t n_chunks, m_chunks; /* per (image, group) */
  /* Each thread's private output (private_bytes), or NULL. */
  unsigned char* private_out;
  size_t private_bytes;
} gemm_run_t;

/* r for a run of plan at the current ISA level, one chunk each way. */
static void gemm_run_init(const axle_qu8_conv_plan_t* plan, const uint8_t* x, const void* packed,
                          const axle_qu8_requant_t* rq, uint8_t* y, void* scratch, gemm_run_t* r) {
  const axle_isa_t isa = axle_kernels_isa();
  const int avx2 = isa >= AXLE_ISA_AVX2_FMA, vnni = isa >= AXLE_ISA_AVX512;
  memset(r, 0, sizeof *r);
  r->plan = plan;
  r->x = x;
  r->packed = packed;
  r->rq = rq;
  r->y = y;
  r->scratch = scratch;
  r->im2col = avx2 ? axle_qu8_im2col_block__avx2 : axle_qu8_im2col_block;
  r->n_chunks = r->m_chunks = 1;
  if (quads(plan)) {
    r->block_c4 = vnni                        ? axle_qu8_gemm_12x16c4__avx512
                  : isa == AXLE_ISA_AVX2_VNNI ? axle_qu8_gemm_12x16c4__avxvnni
                                              : axle_qu8_gemm_12x16c4__scalar;
    r->column_c4 = vnni ? axle_qu8_gemm_12x1c4__avx512 : avx2 ? axle_qu8_gemm_12x1c4__avx2 : NULL;
    r->extra_c4 = vnni && extra_strips(plan) ? axle_qu8_gemm_12x16e4c4__avx512 : NULL;
    r->pack_b_c4 = avx2 ? axle_qu8_gemm_pack_b_16c4__avx2 : axle_qu8_gemm_pack_b_16c4__scalar;
  } else {
    r->block = avx2 ? axle_qu8_gemm_6x16__avx2 : axle_qu8_gemm_6x16__scalar;
    r->column = avx2 ? axle_qu8_gemm_6x1__avx2 : NULL;
    r->pack_b = avx2 ? axle_qu8_gemm_pack_b_16__avx2 : axle_qu8_gemm_pack_b_16__scalar;
  }
}

/* [lo, hi) of chunk i when count items are cut into chunks near-equal parts. */
static void chunk_range(size_t count, size_t chunks, size_t i, size_t* lo, size_t* hi) {
  *lo = count * i / chunks;
  *hi = count * (i + 1) / chunks;
}

/* The largest map whose threads split by channels when the plan asks
 * (56x56). */
#define SPLIT_CHANNELS_MAX_PIXELS 3136

/* The chunks a run on `threads` cuts each (image, group) into: about 4
 * tasks per thread in all, over pixel strips first (each strip is packed
 * once per task), then over weight panels when the image has too few
 * strips (7x7 maps). */
static void gemm_chunks(const axle_qu8_conv_plan_t* plan, uint32_t threads, size_t* n_chunks,
                        size_t* m_chunks) {
  *n_chunks = *m_chunks = 1;
  const size_t units = (size_t)(plan->p.batch * plan->p.groups);
  if (threads < 2 || units == 0 || plan->n == 0) return; /* empty runs return early */
  const size_t want = ((size_t)threads * 4 + units - 1) / units;
  const size_t strips = (plan->n + NR - 1) / NR;
  *n_chunks = strips < want ? strips : want;
  const size_t m_want = (want + *n_chunks - 1) / *n_chunks;
  *m_chunks = m_panels(plan) < m_want ? m_panels(plan) : m_want;
  if ((plan->split_channels && plan->n <= SPLIT_CHANNELS_MAX_PIXELS) || strips <= 4) {
    /* One range of weight panels per thread, each packing every strip.
     * Where the plan asks: MobileNetV2's expansions had split by pixels,
     * leaving each thread of the depthwise layer after them half its
     * planes in the other core's cache (int8 model, 2 threads: 1.79 ->
     * 1.69 ms; one range per thread rather than four, which pack each
     * strip four times: 1.65 -> 1.60). Not on larger maps, whose strips
     * (the stem's im2col) would be packed by every thread: with the
     * 112x112 layers split so too, 1.62-1.65 -> 1.70-1.79 ms. And on maps
     * of four strips or fewer (7x7), whose (strip, panel range) tasks
     * each packed their strip: 960 -> 160 alone 19.2 -> 17.3 us, the int8
     * model 1.59 -> 1.54 and 1.57 -> 1.55 ms (both orders). */
    *n_chunks = 1;
    *m_chunks = m_panels(plan) < threads ? m_panels(plan) : threads;
  }
}

/* The narrowest pixel chunk whose tasks write privately. */
#define PRIVATE_MIN_COLS 256

/* Where threads split a map by pixels in chunks of PRIVATE_MIN_COLS or
 * more, a task writes its chunk of every output channel into its thread's
 * private buffer (this many bytes) and copies the rows out at the end, as
 * the depthwise tasks do (dw_private_bytes says why). Int8 MobileNetV2 at
 * 2 threads (Zen 4, alternating pairs): with the cores sharing a cache,
 * fastest runs 1.378-1.388 -> 1.371-1.381 ms over 8 pairs; with the host
 * keeping them apart (320-335 ns a round trip), medians 2.46-2.57 ->
 * 2.29-2.40. Narrower chunks (the 14x14 maps' 32 pixels) copy rows of a
 * fraction of a cache line and measured slower. */
static size_t gemm_private_bytes(const axle_qu8_conv_plan_t* plan, uint32_t threads) {
  size_t n_chunks, m_chunks;
  gemm_chunks(plan, threads, &n_chunks, &m_chunks);
  if (n_chunks < 2 || m_chunks != 1) return 0;
  const size_t strips = (plan->n + NR - 1) / NR;
  const size_t widest = (strips + n_chunks - 1) / n_chunks * NR;
  return widest >= PRIVATE_MIN_COLS ? round64(plan->m * widest) : 0;
}

/* Whether a strip of cols pixels goes through a one-column tile, which
 * reads its column packed dense. */
static int column_strip(const gemm_run_t* r, size_t cols) {
  return cols == 1 && (r->block_c4 ? r->column_c4 != NULL : r->column != NULL);
}

/* Packs cols pixels of the plan's K rows (row stride rs) as a strip: NR
 * wide, or dense where a one-column tile takes it (column_strip). */
static void pack_strip(const gemm_run_t* r, size_t cols, int dense, const uint8_t* src, size_t rs,
                       void* strip) {
  if (r->pack_b_c4)
    dense ? axle_qu8_gemm_pack_b_1c4__scalar(r->plan->k, src, rs, strip)
          : r->pack_b_c4(r->plan->k, cols, src, rs, strip);
  else
    dense ? axle_qu8_gemm_pack_b_1__scalar(r->plan->k, src, rs, strip)
          : r->pack_b(r->plan->k, cols, src, rs, strip);
}

/* The block of m rows (panels from a) by n columns (strips packed NR wide
 * from b, back to back) through the layout's block kernel. */
static void block_tiles(const gemm_run_t* r, size_t m, size_t n, const unsigned char* a,
                        const void* b, const int32_t* terms, const float* scale, uint8_t* y,
                        size_t ldy) {
  const size_t kgs = k_groups(r->plan);
  if (r->block_c4)
    r->block_c4(m, n, kgs, (const int8_t*)a, b, terms, scale, r->rq, y, ldy);
  else
    r->block(m, n, kgs, (const int16_t*)a, b, terms, scale, r->rq, y, ldy);
}

/* Output tiles of weight panels [p0, p1) (a: the group's panels, terms and
 * scale its channels') over a packed strip of cols pixels, into y (row
 * stride ldy, panel p0's first channel). cols past NR: the strip and the
 * next one, packed right after it, through extra_c4. */
static void panel_tiles(const gemm_run_t* r, size_t p0, size_t p1, size_t cols,
                        const unsigned char* a, const void* strip, const int32_t* terms,
                        const float* scale, uint8_t* y, size_t ldy) {
  const axle_qu8_conv_plan_t* plan = r->plan;
  const size_t mr = panel_rows(plan), kgs = k_groups(plan), pb = panel_bytes(plan);
  const int column = column_strip(r, cols);
  if (!column && cols <= NR) {
    const size_t i0 = p0 * mr, i1 = p1 * mr < plan->m ? p1 * mr : plan->m;
    block_tiles(r, i1 - i0, cols, a + p0 * pb, strip, terms + i0, scale + i0, y, ldy);
    return;
  }
  for (size_t pi = p0; pi < p1; ++pi, y += mr * ldy) {
    const size_t i0 = pi * mr, rows = plan->m - i0 < mr ? plan->m - i0 : mr;
    const unsigned char* ap = a + pi * pb;
    if (cols > NR) /* a full strip, then cols - NR columns of the next (extra_c4) */
      r->extra_c4(rows, cols - NR, kgs, (const int8_t*)ap, strip,
                  (const uint8_t*)strip + strip_bytes(plan), terms + i0, scale + i0, r->rq, y, ldy);
    else if (r->block_c4)
      r->column_c4(rows, cols, kgs, (const int8_t*)ap, strip, terms + i0, scale + i0, r->rq, y,
                   ldy);
    else
      r->column(rows, cols, kgs, (const int16_t*)ap, strip, terms + i0, scale + i0, r->rq, y, ldy);
  }
}

static void gemm_task(void* arg, size_t task, uint32_t thread) {
  const gemm_run_t* r = arg;
  const axle_qu8_conv_plan_t* plan = r->plan;
  const axle_f32_conv_params_t* p = &plan->p;
  const size_t m = plan->m, n = plan->n, k = plan->k, mr = panel_rows(plan);
  const size_t mc = task % r->m_chunks, nc = task / r->m_chunks % r->n_chunks;
  const size_t unit = task / (r->m_chunks * r->n_chunks);
  const size_t groups = (size_t)p->groups, g = unit % groups, image = unit / groups;
  const size_t cg = (size_t)p->in_channels / groups;
  const uint8_t* xg = r->x + (image * (size_t)p->in_channels + g * cg) * (size_t)volume(p->in);
  const unsigned char* gp = r->packed + g * group_bytes(plan);
  const int32_t* terms = (const int32_t*)gp;
  const unsigned char* a = gp + terms_bytes(plan);
  const float* scale = r->rq->scale + g * m;
  uint8_t* yg = r->y + (image * (size_t)p->out_channels + g * m) * n;
  unsigned char* ws = r->scratch + (size_t)thread * worker_bytes(plan);
  void* strip = ws;
  uint8_t* cols_buf = ws + strip_bytes(plan);
  size_t s0, s1, p0, p1;
  chunk_range((n + NR - 1) / NR, r->n_chunks, nc, &s0, &s1);
  chunk_range(m_panels(plan), r->m_chunks, mc, &p0, &p1);
  /* Output pixels [c0, c0 + width) of every channel, into yg or the
   * thread's private rows (width apart; m_chunks is 1 there). */
  const size_t c0 = s0 * NR, width = (s1 * NR < n ? s1 * NR : n) - c0;
  uint8_t* const out = r->private_out ? r->private_out + (size_t)thread * r->private_bytes : yg;
  const size_t ldo = r->private_out ? width : n, o0 = r->private_out ? 0 : c0;
  const size_t block = plan->algo == AXLE_QU8_CONV_IM2COL ? im2col_strips(plan) : 0;
  size_t block_j0 = 0, block_cols = 0; /* the im2col block in cols_buf */
  for (size_t s = s0; s < s1; ++s) {
    const size_t j0 = s * NR, cols = n - j0 < NR ? n - j0 : NR;
    const uint8_t* src = xg + j0;
    size_t rs = n;
    if (plan->algo == AXLE_QU8_CONV_IM2COL) {
      if (j0 >= block_j0 + block_cols) {
        block_j0 = j0;
        block_cols = (s1 - s < block ? s1 - s : block) * NR;
        if (block_cols > n - j0) block_cols = n - j0;
        r->im2col(p, xg, (uint8_t)plan->x_zero_point, 0, k, block_j0, block_cols, cols_buf);
      }
      src = cols_buf + (j0 - block_j0);
      rs = block_cols;
    }
    pack_strip(r, cols, column_strip(r, cols), src, rs, strip);
    size_t tile_cols = cols;
    /* The task's narrow last strip joins this one (extra_c4). */
    if (r->extra_c4 && cols == NR && s + 2 == s1 && n - j0 - NR <= AXLE_QU8_GEMM_EXTRA_MAX) {
      tile_cols = n - j0;
      pack_strip(r, tile_cols - NR, 0, src + NR, rs, (unsigned char*)strip + strip_bytes(plan));
      ++s;
    }
    panel_tiles(r, p0, p1, tile_cols, a, strip, terms, scale, out + p0 * mr * ldo + o0 + (j0 - c0),
                ldo);
  }
  if (r->private_out)
    for (size_t i = 0; i < m; ++i) memcpy(yg + i * n + c0, out + i * width, width);
}

/* ---- depthwise -------------------------------------------------------------- */

typedef struct dw_run_t {
  const axle_qu8_conv_plan_t* plan;
  const uint8_t* x;
  const unsigned char* packed;
  const axle_qu8_requant_t* rq;
  uint8_t* y;
  unsigned char* scratch;
  size_t planes, planes_per_task;
  axle_qu8_dwconv_plane_fn plane_fn;
  int group16; /* 16 channels a call (axle_qu8_dwconv16_3x3__avx2) */
  /* Each thread's private output (private_bytes), or NULL. */
  unsigned char* private_out;
  size_t private_bytes;
} dw_run_t;

/* Output channel oc's taps and term in a depthwise plan's packed weights.
 * With multiplier 1 the channels' groups lie group_bytes(plan) apart, so
 * the next channel's taps and term are that many bytes on. */
static void dw_channel(const axle_qu8_conv_plan_t* plan, const unsigned char* packed, size_t oc,
                       const int16_t** w, const int32_t** term) {
  const size_t ic = oc / plan->m, j = oc - ic * plan->m;
  const unsigned char* gp = packed + ic * group_bytes(plan);
  *w = (const int16_t*)(gp + terms_bytes(plan)) + j * k_pairs(plan) * 2;
  *term = (const int32_t*)gp + j;
}

/* The plane kernel a depthwise plan runs at the current ISA level. */
static axle_qu8_dwconv_plane_fn dw_plane_fn(const axle_f32_conv_params_t* p) {
  if (axle_kernels_isa() < AXLE_ISA_AVX2_FMA || !axle_qu8_dwconv_3x3__avx2_supports(p))
    return axle_qu8_dwconv_plane__scalar;
  const axle_isa_t isa = axle_kernels_isa();
  return isa >= AXLE_ISA_AVX512      ? axle_qu8_dwconv_plane_3x3__avx512
         : isa == AXLE_ISA_AVX2_VNNI ? axle_qu8_dwconv_plane_3x3__avxvnni
                                     : axle_qu8_dwconv_plane_3x3__avx2;
}

/* Whether a depthwise plan's small planes go 16 channels a call: at the
 * plain AVX2 level, whose per-plane kernel costs most on them (with VNNI
 * the plane kernels are kept). */
static int dw_group16(const axle_qu8_conv_plan_t* plan) {
  return axle_kernels_isa() == AXLE_ISA_AVX2_FMA && plan->m == 1 &&
         axle_qu8_dwconv16_3x3__avx2_supports(&plan->p);
}

/* Planes per depthwise task: about 8 tasks per thread (planes differ
 * little in cost, and fewer tasks would leave a thread idle when the other
 * is preempted), whole groups of 16 channels where the planes go 16 a
 * call (group16; the scratch is sized for that rounding either way). */
static size_t dw_planes_per_task(const axle_qu8_conv_plan_t* plan, uint32_t threads, int group16) {
  const size_t planes = (size_t)(plan->p.batch * plan->p.out_channels);
  const size_t tasks = threads > 1 ? (size_t)threads * 8 : 1;
  const size_t per = (planes + tasks - 1) / tasks;
  return group16 ? (per + 15) / 16 * 16 : per;
}

/* On 2 threads or more a depthwise task writes its planes into its
 * thread's private buffer and copies them to the output in one memcpy.
 * Written in place, the output's cache lines were mostly still held by
 * the other core, which had read them as the next layer's input (split
 * otherwise), and every store waited for them: 14x14 x 576 took as long
 * on each thread's half as on the whole at 1 thread. The int8 MobileNetV2
 * at 2 threads (Zen 4, 6 alternating pairs): medians 1.46-1.48 ->
 * 1.40-1.42 ms in 5, fastest runs 1.42-1.43 -> 1.38-1.39. The same for the
 * expansion / depthwise pairs' planes measured no gain. */
static size_t dw_private_bytes(const axle_qu8_conv_plan_t* plan, uint32_t threads) {
  if (threads < 2) return 0;
  return round64(dw_planes_per_task(plan, threads, 1) * plan->n);
}

/* A thread's private output of either kind (0: none), placed after the
 * workers' scratch. */
static size_t private_bytes(const axle_qu8_conv_plan_t* plan, uint32_t threads) {
  return plan->algo == AXLE_QU8_CONV_DEPTHWISE ? dw_private_bytes(plan, threads)
                                               : gemm_private_bytes(plan, threads);
}

static void dw_task(void* arg, size_t task, uint32_t thread) {
  const dw_run_t* r = arg;
  const axle_qu8_conv_plan_t* plan = r->plan;
  const axle_f32_conv_params_t* p = &plan->p;
  const size_t in_vol = (size_t)volume(p->in), out_vol = plan->n, mult = plan->m;
  const size_t channels = (size_t)p->out_channels;
  void* tmp = r->scratch + (size_t)thread * worker_bytes(plan);
  size_t begin = task * r->planes_per_task;
  const size_t end =
      begin + r->planes_per_task < r->planes ? begin + r->planes_per_task : r->planes;
  const size_t first = begin;
  /* Plane i's output: the private buffer's (i - first)-th, or its own. */
  uint8_t* const out =
      r->private_out ? r->private_out + (size_t)thread * r->private_bytes : r->y + first * out_vol;
  /* Small planes (7x7) cost little more than this bookkeeping, so the
   * divisions happen once per task and the loop only counts. */
  size_t oc = begin % channels, image = begin / channels;
  while (r->group16 && begin < end) {
    /* Up to 16 channels of one image; depthwise multiplier 1. */
    size_t count = end - begin < 16 ? end - begin : 16;
    if (count > channels - oc) count = channels - oc;
    const int16_t* w;
    const int32_t* term;
    dw_channel(plan, r->packed, oc, &w, &term);
    axle_qu8_dwconv16_3x3__avx2(p, r->x + (image * channels + oc) * in_vol, count,
                                plan->x_zero_point, w, group_bytes(plan) / sizeof(int16_t), term,
                                group_bytes(plan) / sizeof(int32_t), r->rq->scale + oc, r->rq,
                                out + (begin - first) * out_vol, tmp);
    begin += count;
    oc += count;
    if (oc == channels) {
      oc = 0;
      ++image;
    }
  }
  for (size_t plane = begin; plane < end; ++plane) {
    const int16_t* w;
    const int32_t* term;
    dw_channel(plan, r->packed, oc, &w, &term);
    const uint8_t* xp = r->x + (image * (size_t)p->in_channels + oc / mult) * in_vol;
    uint8_t* yp = out + (plane - first) * out_vol;
    r->plane_fn(p, xp, plan->x_zero_point, w, *term, r->rq->scale[oc], r->rq, yp, tmp);
    if (++oc == channels) {
      oc = 0;
      ++image;
    }
  }
  if (r->private_out) memcpy(r->y + first * out_vol, out, (end - first) * out_vol);
}

/* ---- entry points ------------------------------------------------------- */

size_t axle_qu8_conv_scratch_size(const axle_qu8_conv_plan_t* plan, uint32_t threads) {
  if (threads < 1) threads = 1;
  return (worker_bytes(plan) + private_bytes(plan, threads)) * threads;
}

void axle_qu8_conv(const axle_qu8_conv_plan_t* plan, const uint8_t* x, const void* packed,
                   const axle_qu8_requant_t* rq, uint8_t* y, void* scratch,
                   const axle_parallel_t* par) {
  const axle_f32_conv_params_t* p = &plan->p;
  const uint32_t threads = axle_parallel_threads(par);
  if (plan->n == 0 || plan->m == 0 || p->batch == 0) return;
  const size_t private_size = private_bytes(plan, threads);
  unsigned char* const private_out =
      private_size ? (unsigned char*)scratch + (size_t)threads * worker_bytes(plan) : NULL;
  if (plan->algo == AXLE_QU8_CONV_DEPTHWISE) {
    dw_run_t r = {.plan = plan,
                  .x = x,
                  .packed = packed,
                  .rq = rq,
                  .y = y,
                  .scratch = scratch,
                  .planes = (size_t)(p->batch * p->out_channels),
                  .plane_fn = dw_plane_fn(p),
                  .group16 = dw_group16(plan),
                  .private_out = private_out,
                  .private_bytes = private_size};
    r.planes_per_task = dw_planes_per_task(plan, threads, r.group16);
    axle_parallel_run(par, (r.planes + r.planes_per_task - 1) / r.planes_per_task, dw_task, &r);
    return;
  }
  gemm_run_t r;
  gemm_run_init(plan, x, packed, rq, y, scratch, &r);
  const size_t units = (size_t)(p->batch * p->groups);
  gemm_chunks(plan, threads, &r.n_chunks, &r.m_chunks);
  r.private_out = private_out;
  r.private_bytes = private_size;
  axle_parallel_run(par, units * r.n_chunks * r.m_chunks, gemm_task, &r);
}

/* ---- an expansion and its depthwise convolution ------------------------- */

/* The smallest expanded tensor (bytes per image) a pair takes: smaller
 * ones stay in the L2 between the two steps anyway, and there the pair's
 * costs (each thread packing every strip, the depthwise planes a panel at
 * a time) came to +0.4..+2.9 us a pair (int8 MobileNetV2, 1 and 2 threads;
 * the 150 KB ones at 28x28 -0.5..+0.6). The 451 KB and 1.2 MB ones: 2
 * threads -40 (112x112 -> 56x56), -29 (56x56, stride 1), +0.8 (stride 2)
 * us; 1 thread -7.5, -0.7, +0.1. */
#define PAIR_MIN_BYTES (256 * 1024)

int axle_qu8_conv_pair_supports(const axle_qu8_conv_plan_t* pw, const axle_qu8_conv_plan_t* dw) {
  const axle_f32_conv_params_t *a = &pw->p, *b = &dw->p;
  if (pw->algo != AXLE_QU8_CONV_GEMM || a->groups != 1 || dw->algo != AXLE_QU8_CONV_DEPTHWISE ||
      dw->m != 1 || a->batch != b->batch || a->out_channels != b->in_channels)
    return 0;
  for (int d = 0; d < AXLE_KERNEL_MAX_SPATIAL; ++d)
    if (a->out[d] != b->in[d]) return 0;
  return 1;
}

int axle_qu8_conv_pair_pays(const axle_qu8_conv_plan_t* pw, const axle_qu8_conv_plan_t* dw) {
  return axle_qu8_conv_pair_supports(pw, dw) && pw->m * pw->n >= PAIR_MIN_BYTES;
}

static size_t pair_strip_count(const axle_qu8_conv_plan_t* pw) { return (pw->n + NR - 1) / NR; }
/* A thread's scratch: the image it has packed (-1: none yet), its packed
 * strips of that image, its panel of expanded channels, the depthwise
 * kernel's tmp; 128 bytes clear of the next thread's (worker_bytes says
 * why). Every thread packs the strips it reads itself: packed once by
 * shares they had been read half from the other core's cache, and the
 * small maps' pairs ran slower than the two steps. */
enum { PAIR_STRIPS_AT = 64 }; /* after the marker */
static size_t pair_expanded_at(const axle_qu8_conv_pair_t* c) {
  return PAIR_STRIPS_AT + round64(pair_strip_count(c->pw) * strip_bytes(c->pw));
}
static size_t pair_tmp_at(const axle_qu8_conv_pair_t* c) {
  return pair_expanded_at(c) + round64(panel_rows(c->pw) * c->pw->n);
}
static size_t pair_worker_bytes(const axle_qu8_conv_pair_t* c) {
  const size_t bytes = pair_tmp_at(c) + axle_qu8_dwconv_tmp_size(&c->dw->p);
  return (bytes + 127) / 128 * 128 + 128;
}

size_t axle_qu8_conv_pair_scratch_size(const axle_qu8_conv_pair_t* c, uint32_t threads) {
  return pair_worker_bytes(c) * (threads < 1 ? 1 : threads);
}

typedef struct pair_run_t {
  const axle_qu8_conv_pair_t* c;
  gemm_run_t g; /* the expansion; g.x: the image's input */
  axle_qu8_dwconv_plane_fn plane_fn;
  int64_t image;
  uint8_t* y; /* the image's output */
} pair_run_t;

/* Weight panel pi of the expansion over the map, then the depthwise
 * planes of its channels. */
static void pair_panel_task(void* arg, size_t pi, uint32_t thread) {
  const pair_run_t* r = arg;
  const axle_qu8_conv_plan_t *pw = r->c->pw, *dw = r->c->dw;
  const size_t n = pw->n, count = pair_strip_count(pw), sb = strip_bytes(pw);
  const size_t mr = panel_rows(pw), i0 = pi * mr, rows = pw->m - i0 < mr ? pw->m - i0 : mr;
  unsigned char* ws = r->g.scratch + (size_t)thread * pair_worker_bytes(r->c);
  int64_t* packed_image = (int64_t*)(void*)ws;
  unsigned char* strips = ws + PAIR_STRIPS_AT;
  uint8_t* expanded = ws + pair_expanded_at(r->c); /* [rows][n] */
  void* tmp = ws + pair_tmp_at(r->c);
  if (*packed_image != r->image) {
    for (size_t s = 0; s < count; ++s) {
      const size_t cols = n - s * NR < NR ? n - s * NR : NR;
      pack_strip(&r->g, cols, column_strip(&r->g, cols), r->g.x + s * NR, n, strips + s * sb);
    }
    *packed_image = r->image;
  }
  const int32_t* terms = (const int32_t*)r->g.packed;
  const unsigned char* a = r->g.packed + terms_bytes(pw);
  /* The strips packed NR wide as one block, then a last one packed dense. */
  const size_t dense = column_strip(&r->g, n - (count - 1) * NR), wide = count - dense;
  block_tiles(&r->g, rows, dense ? n - 1 : n, a + pi * panel_bytes(pw), strips, terms + i0,
              r->g.rq->scale + i0, expanded, n);
  if (dense)
    panel_tiles(&r->g, pi, pi + 1, 1, a, strips + wide * sb, terms, r->g.rq->scale,
                expanded + wide * NR, n);
  for (size_t i = 0; i < rows; ++i) {
    const int16_t* w;
    const int32_t* term;
    dw_channel(dw, r->c->dw_packed, i0 + i, &w, &term);
    r->plane_fn(&dw->p, expanded + i * n, dw->x_zero_point, w, *term, r->c->dw_rq->scale[i0 + i],
                r->c->dw_rq, r->y + (i0 + i) * dw->n, tmp);
  }
}

void axle_qu8_conv_pair(const axle_qu8_conv_pair_t* c, const uint8_t* x, uint8_t* y, void* scratch,
                        const axle_parallel_t* par) {
  const axle_qu8_conv_plan_t *pw = c->pw, *dw = c->dw;
  if (pw->n == 0 || pw->m == 0 || pw->p.batch == 0) return;
  pair_run_t r;
  r.c = c;
  gemm_run_init(pw, NULL, c->pw_packed, c->pw_rq, NULL, scratch, &r.g);
  r.plane_fn = dw_plane_fn(&dw->p);
  const uint32_t threads = axle_parallel_threads(par);
  for (uint32_t t = 0; t < threads; ++t)
    *(int64_t*)(void*)((unsigned char*)scratch + t * pair_worker_bytes(c)) = -1;
  for (r.image = 0; r.image < pw->p.batch; ++r.image) {
    r.g.x = x + (size_t)r.image * (size_t)pw->p.in_channels * pw->n;
    r.y = y + (size_t)r.image * (size_t)dw->p.out_channels * dw->n;
    axle_parallel_run(par, m_panels(pw), pair_panel_task, &r);
  }
}
