/* Prepared convolution: planning, weight packing and the run, on top of the
 * blocked GEMM (pointwise and im2col algorithms) and the depthwise plane
 * kernels. See axle_kernels.h for the algorithms and when each is chosen. */
#include <math.h>
#include <string.h>

#include "axle_kernels.h"
#include "gemm_internal.h"

static int64_t volume(const int64_t* d) { return d[0] * d[1] * d[2]; }

static int is_pointwise(const axle_f32_conv_params_t* p) {
  for (int d = 0; d < AXLE_KERNEL_MAX_SPATIAL; ++d)
    if (p->kernel[d] != 1 || p->stride[d] != 1 || p->pad[d] != 0 || p->in[d] != p->out[d])
      return 0;
  return 1;
}

/* Winograd's transformed weights are 16/9 the size of the plain ones. A map
 * of at most 16 F(2x2) tiles (8x8 and smaller) fills one GEMM column panel,
 * so each transformed weight serves that one panel, and when they do not
 * fit the L2 they are streamed at more bytes per multiply than im2col's
 * GEMM reads over the map's pixels. Where AVX-512 multiplies at twice
 * AVX2's rate (whole-width 512-bit FMAs: Sapphire Rapids) that costs more
 * than the multiplies saved: ResNet-50's 512-channel 3x3 layers at 7x7 (16
 * MB transformed), 1 thread, weights streamed: 1.99 ms against im2col's
 * 1.61 (in cache 1.18 against 1.52); 256 channels (4 MB): 0.52 against
 * 0.42; 128 channels (1 MB) 0.09 against 0.12. With AVX2's, at half the
 * multiply rate, Winograd stays ahead (512 channels 2.04-2.16 against 2.47,
 * 256 0.55 against 0.65), and so with AVX-512 at half rate (Zen 4,
 * axle_kernels_wide_fma): 512 channels 1.25 against 2.24 ms alone, 1.28
 * against 2.30 a layer streamed (8 layers); ResNet-18 22.2-22.4 -> 18.9-19.1
 * ms, ResNet-50 64.4-66.1 -> 62.3-62.9 at 1 thread. */
#define WINO_STREAMED_BYTES (2u << 20)

static int winograd_pays(const axle_f32_conv_params_t* p, axle_isa_t isa) {
  const size_t tiles = (size_t)((p->out[1] + 1) / 2) * (size_t)((p->out[2] + 1) / 2);
  return !axle_f32_gemm_double_rate(isa) || tiles > AXLE_F32_GEMM_NR ||
         axle_f32_conv_winograd_packed_size(p, 2) * sizeof(float) <= WINO_STREAMED_BYTES;
}

#define TRANSPOSED_ONE_BLOCK_K 512

void axle_f32_conv_plan(const axle_f32_conv_params_t* p, axle_f32_conv_plan_t* plan) {
  memset(plan, 0, sizeof *plan);
  plan->p = *p;
  const int64_t cg = p->in_channels / p->groups;
  plan->m = (size_t)(p->out_channels / p->groups);
  plan->n = (size_t)volume(p->out);
  plan->k = (size_t)(cg * volume(p->kernel));
  if (cg == 1 && p->groups > 1) {
    plan->algo = AXLE_F32_CONV_DEPTHWISE;
    plan->group_floats = plan->m * plan->k;
    return;
  }
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX2_FMA && axle_f32_conv_winograd_supports(p) && winograd_pays(p, isa)) {
    plan->algo = AXLE_F32_CONV_WINOGRAD;
    plan->wino_tile = axle_f32_conv_winograd_tile(p, isa);
    plan->group_floats = axle_f32_conv_winograd_packed_size(p, plan->wino_tile);
    return;
  }
  plan->algo = is_pointwise(p) ? AXLE_F32_CONV_GEMM : AXLE_F32_CONV_IM2COL;
  plan->transposed = axle_f32_gemm_prefers_transposed(plan->m, plan->n);
  plan->group_floats = plan->transposed ? axle_f32_gemm_packed_b_size(plan->k, plan->m)
                                        : axle_f32_gemm_packed_a_size(plan->m, plan->k);
  /* Transposed tiles store C^T through transposes, and every K block past
   * the first stores and reloads it so: a pointwise layer of up to 512
   * input channels takes K in one block (its weights packed so). Alone,
   * 1 thread: 320 -> 1280 at 7x7 245-276 -> 236-264 us, 512 -> 2048
   * 661-673 -> 564-663. */
  if (plan->transposed && plan->algo == AXLE_F32_CONV_GEMM && plan->k <= TRANSPOSED_ONE_BLOCK_K)
    plan->pack_kc = axle_f32_gemm_kc_in_place(plan->k);
}

void axle_f32_conv_plan_channels_last(axle_f32_conv_plan_t* plan) {
  if (plan->algo == AXLE_F32_CONV_GEMM) {
    plan->transposed = 1;
    plan->group_floats = axle_f32_gemm_packed_b_size(plan->k, plan->m);
    /* With AVX2 and AVX-512 the projection reads its A in place
     * (conv_chain.c), in that case's K blocks; packed B follows them. */
    if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA) plan->pack_kc = axle_f32_gemm_kc_in_place(plan->k);
  } else if (plan->algo == AXLE_F32_CONV_DEPTHWISE && plan->m == 1) {
    plan->transposed = 1;
  }
}

size_t axle_f32_conv_packed_size(const axle_f32_conv_plan_t* plan) {
  return plan->group_floats * (size_t)plan->p.groups;
}

void axle_f32_conv_pack(const axle_f32_conv_plan_t* plan, const float* w, float* packed) {
  const size_t m = plan->m, k = plan->k;
  if (plan->algo == AXLE_F32_CONV_WINOGRAD) {
    axle_f32_conv_winograd_pack(&plan->p, plan->wino_tile, w, packed);
    return;
  }
  if (plan->algo == AXLE_F32_CONV_DEPTHWISE && plan->transposed) {
    /* Channels-last: tap-major, [kernel volume][channels]. */
    const size_t channels = (size_t)plan->p.groups;
    for (size_t c = 0; c < channels; ++c)
      for (size_t t = 0; t < k; ++t) packed[t * channels + c] = w[c * k + t];
    return;
  }
  for (int64_t g = 0; g < plan->p.groups; ++g) {
    const float* wg = w + (size_t)g * m * k;
    float* dst = packed + (size_t)g * plan->group_floats;
    if (plan->algo == AXLE_F32_CONV_DEPTHWISE)
      memcpy(dst, wg, m * k * sizeof(float));
    else if (plan->transposed && plan->pack_kc)
      axle_f32_gemm_pack_b_kc(k, m, plan->pack_kc, wg, 1, k, dst); /* B = W^T */
    else if (plan->transposed)
      axle_f32_gemm_pack_b(k, m, wg, 1, k, dst);
    else
      axle_f32_gemm_pack_a(m, k, 1.0f, wg, k, 1, dst);
  }
}

/* The GEMM one (image, group) runs, without its per-call pointers. */
static void group_gemm(const axle_f32_conv_plan_t* plan, axle_f32_gemm_t* g) {
  memset(g, 0, sizeof *g);
  g->alpha = 1.0f;
  g->k = plan->k;
  g->ldc = plan->n;
  g->split_rows = plan->split_channels;
  if (plan->transposed) {
    g->m = plan->n;
    g->n = plan->m;
    g->c_transposed = 1;
  } else {
    g->m = plan->m;
    g->n = plan->n;
  }
}

typedef struct im2col_ctx_t {
  const axle_f32_conv_params_t* p;
  const float* x_group;
  axle_f32_im2col_block_fn block;
  size_t col0; /* the GEMM's column 0 is this output pixel */
} im2col_ctx_t;

static axle_f32_im2col_block_fn im2col_kernel(void) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa >= AXLE_ISA_AVX512) return axle_f32_im2col_block__avx512;
  if (isa >= AXLE_ISA_AVX2_FMA) return axle_f32_im2col_block__avx2;
  return axle_f32_im2col_block;
}

static void im2col_gen(const void* ctx, size_t k0, size_t kc, size_t c0, size_t cols,
                       float* dst) {
  const im2col_ctx_t* c = ctx;
  c->block(c->p, c->x_group, k0, kc, c->col0 + c0, cols, dst);
}

/* Fills the input operand of g for one image and group (data or generator)
 * and its packed weights. */
static void bind_operands(const axle_f32_conv_plan_t* plan, axle_f32_gemm_t* g,
                          const float* x_group, const float* w_packed, im2col_ctx_t* ctx) {
  axle_f32_gemm_operand_t* in = plan->transposed ? &g->a : &g->b;
  axle_f32_gemm_operand_t* w = plan->transposed ? &g->b : &g->a;
  w->packed = w_packed;
  if (plan->transposed) w->packed_kc = plan->pack_kc;
  if (plan->algo == AXLE_F32_CONV_GEMM) {
    /* X is [cg, pixels]: B(p, j) = x[p * n + j]; A = X^T: A(i, p) = x[p * n + i]. */
    in->data = x_group;
    in->rs = plan->transposed ? 1 : plan->n;
    in->cs = plan->transposed ? plan->n : 1;
  } else {
    ctx->x_group = x_group;
    in->gen = im2col_gen;
    in->gen_ctx = ctx;
  }
}

/* ---- depthwise ---------------------------------------------------------- */

axle_f32_dwconv_plane_fn axle_f32_dwconv_plane_kernel(const axle_f32_conv_params_t* p) {
  const axle_isa_t isa = axle_kernels_isa();
  if (isa < AXLE_ISA_AVX2_FMA || !axle_f32_dwconv_3x3__avx2_fma_supports(p))
    return axle_f32_dwconv_plane__scalar;
  if (isa >= AXLE_ISA_AVX512) return axle_f32_dwconv_plane_3x3__avx512;
  return axle_f32_dwconv_plane_3x3__avx2_fma;
}

void axle_f32_dwconv_plane_run(const axle_f32_conv_params_t* p, size_t planes, const float* x,
                               size_t x_stride, const float* w, const float* bias,
                               const axle_f32_epilogue_t* ep, float* y, size_t y_stride) {
  const axle_f32_dwconv_plane_fn plane = axle_f32_dwconv_plane_kernel(p);
  if (plane == axle_f32_dwconv_plane_3x3__avx512) {
    axle_f32_dwconv_plane_run_3x3__avx512(p, planes, x, x_stride, w, bias, ep, y, y_stride);
    return;
  }
  if (plane == axle_f32_dwconv_plane_3x3__avx2_fma) {
    axle_f32_dwconv_plane_run_3x3__avx2_fma(p, planes, x, x_stride, w, bias, ep, y, y_stride);
    return;
  }
  for (size_t i = 0; i < planes; ++i)
    plane(p, x + i * x_stride, w + 9 * i, bias ? bias[i] : 0.0f, NULL, ep, y + i * y_stride);
}

typedef struct dw_run_t {
  const axle_f32_conv_plan_t* plan;
  const float* x;
  const float* w;
  const axle_f32_epilogue_t* ep;
  float* y;
  size_t planes, planes_per_task;
  axle_f32_dwconv_plane_fn plane_fn;
  int multi; /* runs of planes go to axle_f32_dwconv_planes_3x3__avx512 */
} dw_run_t;

static void dw_task(void* arg, size_t task, uint32_t thread) {
  (void)thread;
  const dw_run_t* r = arg;
  const axle_f32_conv_params_t* p = &r->plan->p;
  const size_t in_vol = (size_t)volume(p->in), out_vol = (size_t)volume(p->out);
  const size_t mult = r->plan->m, ksize = r->plan->k;
  size_t end = (task + 1) * r->planes_per_task;
  if (end > r->planes) end = r->planes;
  if (r->multi) {
    /* Multiplier 1: input plane = output plane; a run stops at the end of
     * an image, where the bias starts over. */
    const size_t channels = (size_t)p->out_channels;
    for (size_t plane = task * r->planes_per_task; plane < end;) {
      const size_t oc = plane % channels;
      const size_t run = channels - oc < end - plane ? channels - oc : end - plane;
      axle_f32_dwconv_planes_3x3__avx512(
          p, run, r->x + plane * in_vol, r->w + oc * ksize, r->ep->bias ? r->ep->bias + oc : NULL,
          r->ep->residual ? r->ep->residual + plane * out_vol : NULL, r->ep,
          r->y + plane * out_vol);
      plane += run;
    }
    return;
  }
  for (size_t plane = task * r->planes_per_task; plane < end; ++plane) {
    const size_t oc = plane % (size_t)p->out_channels, n = plane / (size_t)p->out_channels;
    const size_t ic = oc / mult;
    const float* xp = r->x + (n * (size_t)p->in_channels + ic) * in_vol;
    const float* res = r->ep->residual ? r->ep->residual + plane * out_vol : NULL;
    const float b = r->ep->bias ? r->ep->bias[oc] : 0.0f;
    r->plane_fn(p, xp, r->w + oc * ksize, b, res, r->ep, r->y + plane * out_vol);
  }
}

/* ---- entry points ------------------------------------------------------- */

size_t axle_f32_conv_scratch_size(const axle_f32_conv_plan_t* plan, uint32_t threads) {
  if (threads < 1) threads = 1;
  if (plan->algo == AXLE_F32_CONV_DEPTHWISE) return 0;
  if (plan->algo == AXLE_F32_CONV_WINOGRAD)
    return axle_f32_conv_winograd_scratch_size(&plan->p, plan->wino_tile, threads);
  axle_f32_gemm_t g;
  group_gemm(plan, &g);
  im2col_ctx_t ctx = {&plan->p, NULL, NULL, 0};
  /* Any non-NULL pointer: only the operand kinds matter for the size. */
  bind_operands(plan, &g, (const float*)plan, (const float*)plan, &ctx);
  return axle_f32_gemm_scratch_size(&g, threads);
}

/* Whether plan runs as the direct 3x3 stride-2 kernel (see
 * axle_f32_conv3x3s2_supports). */
static int direct_3x3s2(const axle_f32_conv_plan_t* plan, const axle_f32_epilogue_t* ep) {
  return axle_kernels_isa() >= AXLE_ISA_AVX512 && axle_f32_conv3x3s2_supports(plan, ep);
}

typedef struct direct_run_t {
  const axle_f32_conv_plan_t* plan;
  const float* x;
  const float* packed;
  const axle_f32_epilogue_t* ep;
  float* y;
  int64_t parts; /* row ranges per image */
} direct_run_t;

/* Row range t % parts of image t / parts. */
static void direct_task(void* arg, size_t t, uint32_t thread) {
  (void)thread;
  const direct_run_t* r = arg;
  const axle_f32_conv_params_t* p = &r->plan->p;
  const int64_t n = (int64_t)t / r->parts, part = (int64_t)t % r->parts, oh = p->out[1];
  const int64_t r0 = part * oh / r->parts, r1 = (part + 1) * oh / r->parts;
  const size_t in_image = (size_t)(p->in_channels * p->in[1] * p->in[2]);
  const size_t out_plane = r->plan->n;
  axle_f32_conv3x3s2_rows_8x32__avx512(
      r->plan, r->x + (size_t)n * in_image, r->packed, r->ep, r0, r1,
      r->y + (size_t)n * (size_t)p->out_channels * out_plane + (size_t)(r0 * p->out[2]), out_plane);
}

void axle_f32_conv(const axle_f32_conv_plan_t* plan, const float* x, const float* packed,
                   const axle_f32_epilogue_t* ep, float* y, void* scratch,
                   const axle_parallel_t* par) {
  const axle_f32_conv_params_t* p = &plan->p;
  axle_f32_epilogue_t none;
  if (!ep) {
    axle_f32_epilogue_init(&none);
    ep = &none;
  }
  if (plan->algo == AXLE_F32_CONV_DEPTHWISE) {
    const uint32_t threads = axle_parallel_threads(par);
    dw_run_t r = {plan, x, packed, ep, y, 0, 1, axle_f32_dwconv_plane_kernel(p), 0};
    r.multi = plan->m == 1 && axle_kernels_isa() >= AXLE_ISA_AVX512 &&
              axle_f32_dwconv_planes_3x3__avx512_supports(p);
    r.planes = (size_t)(p->batch * p->out_channels);
    /* About 8 tasks per thread: planes differ little in cost, and fewer
     * tasks would leave a thread idle when the other is preempted. */
    const size_t tasks = threads > 1 ? (size_t)threads * 8 : 1;
    r.planes_per_task = (r.planes + tasks - 1) / tasks;
    if (r.planes_per_task == 0) r.planes_per_task = 1;
    axle_parallel_run(par, (r.planes + r.planes_per_task - 1) / r.planes_per_task, dw_task, &r);
    return;
  }
  if (plan->algo == AXLE_F32_CONV_WINOGRAD) {
    if (plan->wino_tile == 4 && axle_kernels_isa() >= AXLE_ISA_AVX512)
      axle_f32_conv_winograd4__avx512(p, x, packed, ep, y, scratch, par);
    else if (plan->wino_tile == 4)
      axle_f32_conv_winograd4__avx2_fma(p, x, packed, ep, y, scratch, par);
    else if (axle_kernels_isa() >= AXLE_ISA_AVX512)
      axle_f32_conv_winograd__avx512(p, x, packed, ep, y, scratch, par);
    else
      axle_f32_conv_winograd__avx2_fma(p, x, packed, ep, y, scratch, par);
    return;
  }
  if (direct_3x3s2(plan, ep)) {
    /* Contiguous row ranges, a few per thread (rows at the edges cost less). */
    const uint32_t threads = axle_parallel_threads(par);
    direct_run_t r = {plan, x, packed, ep, y, threads > 1 ? (int64_t)threads * 4 : 1};
    if (r.parts > p->out[1]) r.parts = p->out[1];
    axle_parallel_run(par, (size_t)(p->batch * r.parts), direct_task, &r);
    return;
  }
  const size_t in_vol = (size_t)volume(p->in), out_vol = plan->n;
  const size_t cg = (size_t)(p->in_channels / p->groups);
  for (int64_t n = 0; n < p->batch; ++n) {
    for (int64_t gi = 0; gi < p->groups; ++gi) {
      axle_f32_gemm_t g;
      group_gemm(plan, &g);
      im2col_ctx_t ctx = {p, NULL, im2col_kernel(), 0};
      const size_t first_out = (size_t)(n * p->out_channels + gi * (int64_t)plan->m);
      bind_operands(plan, &g, x + ((size_t)n * (size_t)p->in_channels + (size_t)gi * cg) * in_vol,
                    packed + (size_t)gi * plan->group_floats, &ctx);
      g.c = y + first_out * out_vol;
      axle_f32_epilogue_t gep = *ep;
      if (gep.bias) gep.bias += (size_t)gi * plan->m;
      if (gep.residual) gep.residual += first_out * out_vol;
      gep.ldr = out_vol;
      g.ep = &gep;
      axle_f32_gemm(&g, scratch, par);
    }
  }
}

/* ---- a band of output rows ---------------------------------------------- */

int axle_f32_conv_rows_supports(const axle_f32_conv_plan_t* plan) {
  const axle_f32_conv_params_t* p = &plan->p;
  return (plan->algo == AXLE_F32_CONV_GEMM || plan->algo == AXLE_F32_CONV_IM2COL) &&
         p->groups == 1 && p->in[0] == 1 && p->out[0] == 1;
}

/* The GEMM of output rows [r0, r1): the plan's GEMM over the pixels of
 * those rows, C's channel rows ldc apart. */
static void rows_gemm(const axle_f32_conv_plan_t* plan, const float* x, const float* packed,
                      int64_t r0, int64_t r1, float* y, size_t ldc, im2col_ctx_t* ctx,
                      axle_f32_gemm_t* g) {
  const size_t w = (size_t)plan->p.out[2];
  group_gemm(plan, g);
  *(plan->transposed ? &g->m : &g->n) = (size_t)(r1 - r0) * w;
  g->ldc = ldc;
  bind_operands(plan, g, x, packed, ctx);
  if (plan->algo == AXLE_F32_CONV_GEMM) /* a pointwise input's rows are its output's */
    (plan->transposed ? &g->a : &g->b)->data = x + (size_t)r0 * w;
  ctx->col0 = (size_t)r0 * w;
  g->c = y;
}

size_t axle_f32_conv_rows_scratch_size(const axle_f32_conv_plan_t* plan, int64_t rows) {
  axle_f32_gemm_t g;
  im2col_ctx_t ctx = {&plan->p, NULL, NULL, 0};
  /* Any non-NULL pointer: only the operand kinds matter for the size. */
  rows_gemm(plan, (const float*)plan, (const float*)plan, 0, rows, (float*)plan,
            (size_t)(rows * plan->p.out[2]), &ctx, &g);
  return axle_f32_gemm_scratch_size(&g, 1);
}

void axle_f32_conv_rows(const axle_f32_conv_plan_t* plan, const float* x, const float* packed,
                        const axle_f32_epilogue_t* ep, int64_t r0, int64_t r1, float* y,
                        size_t y_stride, void* scratch) {
  if (r1 <= r0) return;
  if (direct_3x3s2(plan, ep)) {
    axle_f32_conv3x3s2_rows_8x32__avx512(plan, x, packed, ep, r0, r1, y, y_stride);
    return;
  }
  axle_f32_gemm_t g;
  im2col_ctx_t ctx = {&plan->p, NULL, im2col_kernel(), 0};
  rows_gemm(plan, x, packed, r0, r1, y, y_stride, &ctx, &g);
  g.ep = ep;
  axle_f32_gemm(&g, scratch, NULL);
}

/* ---- im2col blocks ------------------------------------------------------- */

void axle_f32_im2col_block(const axle_f32_conv_params_t* p, const float* x_group, size_t k0,
                           size_t kc, size_t n0, size_t nc, float* dst) {
  const int64_t in_vol = volume(p->in);
  const int64_t kvol = volume(p->kernel);
  const int64_t out1 = p->out[1], out2 = p->out[2];
  for (size_t kk = 0; kk < kc; ++kk) {
    const int64_t k = (int64_t)(k0 + kk);
    const int64_t c = k / kvol, tap = k % kvol;
    const int64_t t0 = tap / (p->kernel[1] * p->kernel[2]);
    const int64_t t1 = tap / p->kernel[2] % p->kernel[1];
    const int64_t t2 = tap % p->kernel[2];
    const float* xc = x_group + c * in_vol;
    /* Output columns o2 whose tap lands inside the row: [lo, hi). */
    const int64_t start2 = t2 * p->dilation[2] - p->pad[2], s2 = p->stride[2];
    int64_t lo = start2 >= 0 ? 0 : (-start2 + s2 - 1) / s2;
    int64_t hi = start2 > p->in[2] - 1 ? 0 : (p->in[2] - 1 - start2) / s2 + 1;
    if (hi > out2) hi = out2;
    if (lo > hi) lo = hi;
    float* d = dst + kk * nc;
    int64_t pix = (int64_t)n0;
    int64_t left = (int64_t)nc;
    /* Divisions once per row of dst, not per output row: at 7x7 a division
     * pair per 7 floats cost more than the copy. */
    int64_t o2 = pix % out2, o1 = pix / out2 % out1, o0 = pix / out2 / out1;
    while (left > 0) {
      const int64_t run = out2 - o2 < left ? out2 - o2 : left;
      const int64_t i0 = o0 * p->stride[0] - p->pad[0] + t0 * p->dilation[0];
      const int64_t i1 = o1 * p->stride[1] - p->pad[1] + t1 * p->dilation[1];
      if (i0 < 0 || i0 >= p->in[0] || i1 < 0 || i1 >= p->in[1]) {
        for (int64_t j = 0; j < run; ++j) d[j] = 0.0f;
      } else {
        const float* xrow = xc + (i0 * p->in[1] + i1) * p->in[2] + start2;
        int64_t a = lo > o2 ? lo : o2;
        const int64_t b = hi < o2 + run ? hi : o2 + run;
        /* A window may end before the row's first inside column: the
         * leading zeros must stop at its end too. */
        if (a > b) a = b;
        int64_t j = o2;
        for (; j < a; ++j) d[j - o2] = 0.0f;
        /* Constant strides vectorise (stride 2: loads and shuffles); the
         * general loop copies one float at a time. */
        if (s2 == 1) {
          for (; j < b; ++j) d[j - o2] = xrow[j];
        } else if (s2 == 2) {
          for (; j < b; ++j) d[j - o2] = xrow[2 * j];
        } else {
          for (; j < b; ++j) d[j - o2] = xrow[j * s2];
        }
        for (; j < o2 + run; ++j) d[j - o2] = 0.0f;
      }
      d += run;
      left -= run;
      o2 = 0;
      if (++o1 == out1) {
        o1 = 0;
        ++o0;
      }
    }
  }
}
