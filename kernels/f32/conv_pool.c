/* Convolution -> max pooling (ResNet's stem and its 3x3 stride-2 pooling),
 * run in bands of pooled rows.
 *
 * Why: layer by layer, the convolution writes its whole output (3.2 MB at
 * 64 x 112 x 112) and the pooling reads it back, both beyond the L2; on two
 * threads the pooling alone ran at memory speed (1.05-1.15x one thread's
 * time). In bands, each thread computes the convolution rows a band's
 * windows need into one buffer, reused band after band so its lines stay
 * in the L2, and pools them from there; only the input and the pooled
 * output travel.
 *
 * Per band of pooled rows [q0, q1): the windows cover convolution rows
 * [q0 s - pad, (q1 - 1) s - pad + k) within the image; the rows shared with
 * the previous band (k - s of them, 1 for a 3x3 stride-2 pooling) move to
 * the buffer's top instead of being computed again, axle_f32_conv_rows
 * computes the rest, and the plane kernels pool each channel's rows as a
 * plane of their own (top padding only where the band starts above the
 * image). Each thread takes a contiguous range of pooled rows. */
#include <string.h>

#include "axle_kernels.h"
#include "band_rows.h"

static size_t align16(size_t floats) { return (floats + 15) & ~(size_t)15; }
static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Convolution rows a band of `band` pooled rows needs at most. */
static int64_t rows_for(const axle_f32_pool_params_t* p, int64_t band) {
  return (band - 1) * p->stride[1] + p->kernel[1];
}

typedef struct pool_geom_t {
  int64_t co, h, w; /* convolution output channels and rows, columns */
  int64_t cap;      /* convolution rows the buffer holds */
  size_t b_stride;  /* floats per channel of the buffer */
  size_t b_bytes, tmp_bytes, per_thread;
} pool_geom_t;

static void pool_geom(const axle_f32_conv_pool_t* c, pool_geom_t* g) {
  memset(g, 0, sizeof *g);
  g->co = c->conv->p.out_channels;
  g->h = c->conv->p.out[1];
  g->w = c->conv->p.out[2];
  g->cap = rows_for(&c->pool, c->band);
  if (g->cap > g->h) g->cap = g->h;
  g->b_stride = align16((size_t)(g->cap * g->w));
  g->b_bytes = sizeof(float) * g->b_stride * (size_t)g->co;
  g->tmp_bytes = axle_f32_maxpool_scratch_size(&c->pool, 1);
  g->per_thread = align64(g->b_bytes) + align64(g->tmp_bytes) + align64(c->gemm_bytes);
}

/* The default band: the most pooled rows whose convolution rows fit in a
 * quarter of the L2, leaving room for the GEMM's packed operands and the
 * input rows the band reads. */
static int64_t band_for(const axle_f32_conv_plan_t* conv, const axle_f32_pool_params_t* pool) {
  const int64_t ho = pool->out[1], w = conv->p.out[2], co = conv->p.out_channels;
  const size_t budget = axle_kernels_l2_bytes() / 4;
  int64_t band = 1;
  while (band < ho && sizeof(float) * (size_t)(co * rows_for(pool, band + 1) * w) <= budget) ++band;
  return band;
}

int axle_f32_conv_pool_supports(const axle_f32_conv_plan_t* conv,
                                const axle_f32_pool_params_t* pool) {
  const axle_f32_conv_params_t* p = &conv->p;
  /* A transposed plan has few pixels: its output stays in cache anyway. */
  if (!axle_f32_conv_rows_supports(conv) || conv->transposed || pool->channels != p->out_channels ||
      pool->in[0] != 1 || pool->out[0] != 1 || pool->kernel[0] != 1 || pool->in[1] != p->out[1] ||
      pool->in[2] != p->out[2] || pool->dilation[1] != 1 || pool->dilation[2] != 1 ||
      pool->stride[1] < 1 || pool->pad[1] < 0 || pool->pad[1] >= pool->kernel[1] ||
      (pool->out[1] - 1) * pool->stride[1] - pool->pad[1] >= pool->in[1])
    return 0;
  /* Below half the L2 the output stays in cache anyway, and the bands
   * would only cut the GEMM into smaller calls; so would bands of fewer
   * than 4 pooled rows (a 512 KB L2 gives ResNet's stem 1), as they did
   * the inverted-residual chains (conv_chain.c). */
  const size_t bytes = (size_t)(p->out_channels * p->out[1] * p->out[2]) * sizeof(float);
  return bytes > axle_kernels_l2_bytes() / 2 && band_for(conv, pool) >= 4;
}

void axle_f32_conv_pool_init(axle_f32_conv_pool_t* c, int64_t band) {
  const int64_t ho = c->pool.out[1];
  if (band < 1) band = band_for(c->conv, &c->pool);
  c->band = band > ho ? ho : band;
  pool_geom_t g;
  c->gemm_bytes = 0;
  pool_geom(c, &g);
  /* The scratch size is not monotonic in the rows (column chunking), so
   * every count a band may compute is asked, once, here. */
  size_t most = 0;
  for (int64_t rows = 1; rows <= g.cap; ++rows) {
    const size_t bytes = axle_f32_conv_rows_scratch_size(c->conv, rows);
    if (bytes > most) most = bytes;
  }
  c->gemm_bytes = most;
}

size_t axle_f32_conv_pool_scratch_size(const axle_f32_conv_pool_t* c, uint32_t threads) {
  pool_geom_t g;
  pool_geom(c, &g);
  return g.per_thread * (threads < 1 ? 1 : threads);
}

typedef struct pool_run_t {
  const axle_f32_conv_pool_t* c;
  pool_geom_t g;
  const float* x;
  float* y;
  char* scratch;
  int64_t ranges; /* pooled row ranges per image */
} pool_run_t;

/* Pooled rows [q_begin, q_end) of image n, band by band, in thread's
 * buffer. */
static void pool_task(void* arg, size_t task, uint32_t thread) {
  const pool_run_t* r = arg;
  const axle_f32_conv_pool_t* c = r->c;
  const pool_geom_t* g = &r->g;
  const axle_f32_pool_params_t* pp = &c->pool;
  const int64_t n = (int64_t)task / r->ranges, part = (int64_t)task % r->ranges;
  const int64_t ho = pp->out[1], wo = pp->out[2];
  const int64_t q_begin = part * ho / r->ranges, q_end = (part + 1) * ho / r->ranges;
  char* mine = r->scratch + (size_t)thread * g->per_thread;
  float* buf = (float*)mine;
  float* tmp = (float*)(mine + align64(g->b_bytes));
  void* gscratch = mine + align64(g->b_bytes) + align64(g->tmp_bytes);
  const axle_f32_conv_params_t* cp = &c->conv->p;
  const float* x = r->x + (size_t)n * (size_t)(cp->in_channels * cp->in[1] * cp->in[2]);
  const size_t plane_out = (size_t)(ho * wo);
  float* y = r->y + (size_t)n * (size_t)g->co * plane_out;
  int64_t held0 = 0, held1 = 0; /* convolution rows [held0, held1) are in buf */
  for (int64_t q0 = q_begin; q0 < q_end; q0 += c->band) {
    const int64_t q1 = q0 + c->band < q_end ? q0 + c->band : q_end;
    const int64_t i0 = q0 * pp->stride[1] - pp->pad[1];
    const int64_t i1 = (q1 - 1) * pp->stride[1] - pp->pad[1] + pp->kernel[1];
    const int64_t r0 = i0 < 0 ? 0 : i0, r1 = i1 > g->h ? g->h : i1;
    const int64_t keep = axle_band_keep_rows(buf, g->b_stride, g->co, g->w, held0, held1, r0);
    axle_f32_conv_rows(c->conv, x, c->packed, &c->ep, r0 + keep, r1, buf + (size_t)(keep * g->w),
                       g->b_stride, gscratch);
    held0 = r0;
    held1 = r1;
    /* The band's rows as a plane of their own. */
    axle_f32_pool_params_t q = *pp;
    q.channels = 1;
    q.in[1] = r1 - r0;
    q.pad[1] = r0 - i0;
    q.out[1] = q1 - q0;
    const axle_f32_maxpool_plane_fn plane = axle_f32_maxpool_plane_kernel(&q);
    for (int64_t ch = 0; ch < g->co; ++ch)
      plane(&q, buf + (size_t)ch * g->b_stride, y + (size_t)ch * plane_out + (size_t)(q0 * wo),
            tmp);
  }
}

void axle_f32_conv_pool(const axle_f32_conv_pool_t* c, const float* x, float* y, void* scratch,
                        const axle_parallel_t* par) {
  pool_run_t r;
  r.c = c;
  pool_geom(c, &r.g);
  r.x = x;
  r.y = y;
  r.scratch = scratch;
  const int64_t threads = axle_parallel_threads(par), ho = c->pool.out[1];
  r.ranges = threads < ho ? threads : ho;
  axle_parallel_run(par, (size_t)(c->conv->p.batch * r.ranges), pool_task, &r);
}
