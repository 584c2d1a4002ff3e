/*
 * Axle compute kernels (static library axle_kernels).
 *
 * Naming follows XNNPACK: axle_<dtype>_<op>_<isa>. The scalar variants are
 * the reference every ISA-specific variant is tested against; they are plain
 * C11 with no dependency on the core or the HAL, so they can be unit-tested
 * and benchmarked on their own.
 *
 * Conventions: tensors are dense row-major (NCHW / NCDHW for spatial ops).
 * Spatial ops take up to AXLE_KERNEL_MAX_SPATIAL spatial dimensions; callers
 * with fewer pad the leading dimensions with size 1 (kernel 1, stride 1,
 * dilation 1, no padding), which costs nothing in the loops and lets one
 * kernel serve 1-D, 2-D and 3-D. Kernels never allocate: memory they need
 * beyond their operands comes in as a caller-provided scratch buffer whose
 * size the matching *_scratch_size() function reports.
 *
 * Thread safety: every kernel is reentrant; parameters are read-only.
 */
#ifndef AXLE_KERNELS_H_
#define AXLE_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AXLE_KERNEL_MAX_SPATIAL 3

/* ---------------------------------------------------------------------- */
/* Instruction sets and parallelism                                        */
/* ---------------------------------------------------------------------- */

/* Variants are named axle_<dtype>_<op>_<tile>__<isa> (XNNPACK style): the
 * portable C one ends in __scalar, the others in the ISA they need
 * (__avx2_fma). Public entry points without an ISA suffix dispatch at run
 * time on axle_kernels_isa(). */
typedef enum axle_isa_t {
  AXLE_ISA_SCALAR = 0,    /* portable C: every machine */
  AXLE_ISA_AVX2_FMA = 1,  /* x86-64 with AVX2 and FMA3 */
  AXLE_ISA_AVX2_VNNI = 2, /* AVX2_FMA plus AVX-VNNI (VEX vpdpbusd: Alder Lake, Sierra Forest) */
  AXLE_ISA_AVX512 = 3     /* AVX2_FMA plus AVX-512 F, BW, DQ, VL and VNNI */
} axle_isa_t;

/* The best instruction set of this CPU, detected once; callers test with
 * >=. Each level implies the ones below it, with one exception: a CPU at
 * AXLE_ISA_AVX512 need not have AVX-VNNI (Ice Lake, Cascade Lake do not),
 * so a kernel written for AXLE_ISA_AVX2_VNNI is chosen only at exactly
 * that level; AXLE_ISA_AVX512 has its EVEX forms. The environment variable
 * AXLE_KERNELS_ISA=scalar, =avx2 or =avx2vnni caps it, so every path can be
 * run end to end on a machine that has more. */
axle_isa_t axle_kernels_isa(void);
/* Caps dispatch at isa and returns the previous setting: the highest level
 * at or below isa that this CPU has (AXLE_ISA_AVX2_VNNI falls to
 * AXLE_ISA_AVX2_FMA without AVX-VNNI) and AXLE_KERNELS_ISA allows; for
 * tests and benchmarks that compare variants end to end. Not synchronised
 * with kernels running at the same time. */
axle_isa_t axle_kernels_set_isa(axle_isa_t isa);
/* Whether this CPU issues 512-bit FMAs at the rate of its 256-bit ones,
 * twice the lanes a cycle (Sapphire Rapids), rather than as two 256-bit
 * halves (Zen 4) or on one 512-bit unit beside two 256-bit ones: 0 without
 * AVX-512. Where it is 0, AVX-512 multiplies no faster than AVX2, and the
 * choices that trade multiplies for memory traffic (Winograd's, see
 * axle_f32_conv_plan) follow AVX2's. Measured at the first call (~0.1 ms
 * of timed FMA loops), then cached; AXLE_KERNELS_WIDE_FMA=0 or =1 sets it
 * instead. Thread-safe: every caller gets the first answer stored. */
int axle_kernels_wide_fma(void);
/* Sets that answer (0 or 1) and returns the previous one, so that tests
 * can check both sets of choices on any machine. Not synchronised with
 * plans being made at the same time. */
int axle_kernels_set_wide_fma(int wide);
/* Bytes of one core's L2 cache, for kernels that size their working set to
 * it: AXLE_KERNELS_L2_BYTES if set, else sysconf, else 512 KiB. Thread-safe. */
size_t axle_kernels_l2_bytes(void);

/* Runs fn(arg, task, thread) for every task in [0, tasks), each exactly once;
 * thread < threads names the worker running it, so a kernel can give each
 * worker its own slice of scratch. */
typedef void (*axle_task_fn)(void* arg, size_t task, uint32_t thread);
typedef struct axle_parallel_t {
  void (*run)(void* ctx, size_t tasks, axle_task_fn fn, void* arg);
  void* ctx;
  uint32_t threads;  /* at most this many tasks run at once (>= 1) */
} axle_parallel_t;

/* The fewest elements worth a task of their own where memory-light work
 * (elementwise ops, activations, softmax, global pooling) is split over
 * threads: 16 K, 64 KB of float32, ~2-15 us for the vector kernels, against
 * ~1 us for a parallel region's hand-off. Below two such tasks a step runs
 * serially. */
#define AXLE_PARALLEL_MIN_ELEMENTS 16384

/* par->run, or a serial loop on the calling thread when par is NULL. */
void axle_parallel_run(const axle_parallel_t* par, size_t tasks, axle_task_fn fn, void* arg);
/* 1 for NULL, else par->threads (at least 1). */
uint32_t axle_parallel_threads(const axle_parallel_t* par);

/* ---------------------------------------------------------------------- */
/* GEMM                                                                    */
/* ---------------------------------------------------------------------- */

/* C[i,j] = alpha * sum_p A(i,p) * B(p,j) + beta * C[i,j]
 * with A(i,p) = a[i*a_rs + p*a_cs] and B(p,j) = b[p*b_rs + j*b_cs], so a
 * transposed operand is just swapped strides. C is row-major with row stride
 * ldc. beta == 0 writes C without reading it (stale NaNs must not leak in,
 * as BLAS specifies). k == 0 yields beta * C. */
void axle_f32_gemm_scalar(size_t m, size_t n, size_t k, float alpha,
                          const float* a, size_t a_rs, size_t a_cs,
                          const float* b, size_t b_rs, size_t b_cs,
                          float beta, float* c, size_t ldc);

/* Fused epilogue of GEMM-based and depthwise kernels, applied to each output
 * element once its sum is complete, in this order:
 *   y = act(acc + bias[row] + residual[row, col])
 * act clamps to [min, max] (ReLU: 0, +inf; ReLU6: 0, 6; none: -inf, +inf),
 * then, when leaky is set, multiplies negative values by leaky_alpha. */
typedef struct axle_f32_epilogue_t {
  const float* bias;     /* one per row of C (output channel), or NULL */
  const float* residual; /* same shape as C, row stride ldr, or NULL */
  size_t ldr;            /* 0: one row added to every row (a bias per column) */
  float min, max;
  float leaky_alpha;
  int32_t leaky;
} axle_f32_epilogue_t;

/* An epilogue that adds and clamps nothing. */
void axle_f32_epilogue_init(axle_f32_epilogue_t* ep);

/* Register tile of the GEMM micro-kernels: MR rows of A by NR columns of B.
 * Packed operands are laid out for it (see axle_f32_gemm_pack_a/b). */
#define AXLE_F32_GEMM_MR 6
#define AXLE_F32_GEMM_NR 16

/* Micro-kernel flags: add into C instead of overwriting it (every K block
 * after the first); apply the epilogue (the last K block); C is stored
 * transposed (tile element (i, j) goes to c[j * ldc + i], and the epilogue's
 * bias and residual follow C as stored: bias per stored row = tile column). */
#define AXLE_F32_GEMM_ACCUMULATE 1u
#define AXLE_F32_GEMM_FINISH 2u
#define AXLE_F32_GEMM_STORE_T 4u
/* Hints: while the tile runs, pull the next row tile's A panels
 * (PREFETCH_A) or the next column panels of B (PREFETCH_B) into L2, at the
 * pace the tile consumes its own. The driver sets them on the tiles that
 * first touch each panel (or, for B streamed under column-outer tiles, on
 * every tile of the column, with a share, below), for operands streamed
 * from beyond L2 (pre-packed weights, B read in place); on data already in
 * cache the prefetches only take load slots (the AVX-512 12x32 tile in L1:
 * up to 6 % slower). A kernel may prefetch regardless (the AVX2 one does:
 * no cost measured). */
#define AXLE_F32_GEMM_PREFETCH_A 8u
#define AXLE_F32_GEMM_PREFETCH_B 16u
/* With PREFETCH_B: this tile is number `index` of `count` (1..255) tiles that
 * read the same B panels in turn, and fetches only its share of the next
 * ones, so that they arrive at an even pace over all of them. One tile
 * fetching them all at its own pace asks memory for a pair of lines every
 * few nanoseconds, more than the line fill buffers carry, and then nothing
 * for the rest of the column: ResNet-50's 7x7 pointwise layers, whose
 * pre-packed weights stream from memory, ran 15-25 % slower that way
 * (Sapphire Rapids). */
#define AXLE_F32_GEMM_PREFETCH_SHARE(index, count) \
  ((((uint32_t)(count) & 255u) << 16) | (((uint32_t)(index) & 255u) << 24))

/* How a kernel takes its share: a K loop of `steps` steps that fetch `rows`
 * K rows of the next panels each fetches a contiguous run of them, from row
 * `first`, every `every` steps, a stream the hardware prefetchers follow
 * (every count-th row instead, interleaved with the other tiles', was as
 * slow as no sharing with 4 tiles and ~10 % faster with 5). The count
 * tiles' runs cover rows [0, steps * rows) once. Without a share: every
 * step, from row 0. */
typedef struct axle_f32_gemm_share_t {
  size_t every, wait, first;
} axle_f32_gemm_share_t;

static inline axle_f32_gemm_share_t axle_f32_gemm_share(uint32_t flags, size_t steps, size_t rows) {
  const size_t count = (flags >> 16) & 255u, index = (flags >> 24) & 255u;
  axle_f32_gemm_share_t s = {1, 1, 0};
  if (count > 1) {
    s.every = count;
    s.first = index * rows * ((steps + count - 1) / count);
  }
  return s;
}

/* Counts a step; true on the steps whose rows the tile fetches. */
static inline int axle_f32_gemm_share_due(axle_f32_gemm_share_t* s) {
  if (--s->wait) return 0;
  s->wait = s->every;
  return 1;
}

/* And: fetch the tile's C lines before its K loop even when they are only
 * stored (lines the epilogue loads, C's when accumulating and the
 * residual's, are fetched regardless). For tile orders that leave C's
 * rows to no hardware prefetcher. */
#define AXLE_F32_GEMM_PREFETCH_C 32u

/* One tile: C[0..mr, 0..nr) (row stride ldc) = sum over kc of a * b, where a
 * is kc groups of MR floats (one per row), as packing lays them out, and b
 * kc rows of NR floats (one per column), ldb floats apart: NR for a packed
 * panel, or the row stride of an operand read in place (all NR floats of
 * every row must be readable, even when nr < NR). c points at the tile's
 * first element as stored. With FINISH, ep (never NULL then) applies, its
 * bias and residual taken at tile position (row0, col0) of the GEMM. */
typedef void (*axle_f32_gemm_ukernel_fn)(size_t mr, size_t nr, size_t kc, const float* a,
                                         const float* b, size_t ldb, float* c, size_t ldc,
                                         uint32_t flags, const axle_f32_epilogue_t* ep,
                                         size_t row0, size_t col0);
void axle_f32_gemm_6x16__scalar(size_t mr, size_t nr, size_t kc, const float* a,
                                const float* b, size_t ldb, float* c, size_t ldc,
                                uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                size_t col0);
void axle_f32_gemm_6x16__avx2_fma(size_t mr, size_t nr, size_t kc, const float* a,
                                  const float* b, size_t ldb, float* c, size_t ldc,
                                  uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                  size_t col0);
void axle_f32_gemm_6x16__avx512(size_t mr, size_t nr, size_t kc, const float* a,
                                const float* b, size_t ldb, float* c, size_t ldc,
                                uint32_t flags, const axle_f32_epilogue_t* ep, size_t row0,
                                size_t col0);
/* The micro-kernel for axle_kernels_isa(). */
axle_f32_gemm_ukernel_fn axle_f32_gemm_ukernel(void);

/* A row vector times packed B, the driver's path for M = 1 against
 * pre-packed weights (a classifier at batch 1): y[0..n) = x[0..kb) * B
 * (with accumulate, y += that), B being the ceil(n / NR) panels of one K
 * block as axle_f32_gemm_pack_b lays them out (panel q at b + q * kb * NR,
 * all NR columns readable; only n columns of y are written). The panels
 * are read one after the other, a single sequential stream, which the
 * hardware prefetchers follow at memory speed. K goes into four partial
 * sums by p mod 4, each with fused multiply-adds, added as (s0 + s1) +
 * (s2 + s3): every variant gives the scalar one's bits. */
typedef void (*axle_f32_gemv_fn)(size_t kb, size_t n, const float* x, const float* b, float* y,
                                 int accumulate);
void axle_f32_gemv_1x16__scalar(size_t kb, size_t n, const float* x, const float* b, float* y,
                                int accumulate);
void axle_f32_gemv_1x16__avx2_fma(size_t kb, size_t n, const float* x, const float* b, float* y,
                                  int accumulate);
void axle_f32_gemv_1x16__avx512(size_t kb, size_t n, const float* x, const float* b, float* y,
                                int accumulate);

/* Packing. A [m x k] (A(i,p) = a[i*a_rs + p*a_cs]) becomes panels of MR
 * rows, each scaled by alpha; B [k x n] becomes panels of NR columns. Both
 * are blocked along K exactly as the driver walks it (axle_f32_gemm_kc):
 * K block [p0, p0 + kc) starts at p0 * round_up(m, MR) (or n, NR) floats and
 * holds its panels one after the other, kc x MR (kc x NR) floats each, so a
 * pre-packed operand streams through memory in the order it is consumed.
 * Rows/columns past the edge are zero. Sizes in floats. */
size_t axle_f32_gemm_packed_a_size(size_t m, size_t k);
size_t axle_f32_gemm_packed_b_size(size_t k, size_t n);
void axle_f32_gemm_pack_a(size_t m, size_t k, float alpha, const float* a, size_t a_rs,
                          size_t a_cs, float* packed);
void axle_f32_gemm_pack_b(size_t k, size_t n, const float* b, size_t b_rs, size_t b_cs,
                          float* packed);
/* The K block size the driver uses for an inner dimension k (0 for k = 0). */
size_t axle_f32_gemm_kc(size_t k);
/* The K block for products whose A is blocked and read in place
 * (axle_f32_gemm_operand_t.blocked; A then streams from L2 whatever the
 * block, and every K block past the first stores C and loads it back):
 * up to 1024, a multiple of 16 (or k). For a B pre-packed to meet such an
 * A (axle_f32_gemm_pack_b_kc, packed_kc). */
size_t axle_f32_gemm_kc_in_place(size_t k);
/* axle_f32_gemm_pack_b in K blocks of kc instead of axle_f32_gemm_kc(k). */
void axle_f32_gemm_pack_b_kc(size_t k, size_t n, size_t kc, const float* b, size_t b_rs,
                             size_t b_cs, float* packed);
/* The variants behind axle_f32_gemm_pack_a/b, each packing one K block (k
 * is that block's size; identical output). */
void axle_f32_gemm_pack_a__scalar(size_t m, size_t k, float alpha, const float* a, size_t a_rs,
                                  size_t a_cs, float* packed);
void axle_f32_gemm_pack_a__avx2(size_t m, size_t k, float alpha, const float* a, size_t a_rs,
                                size_t a_cs, float* packed);
void axle_f32_gemm_pack_b__scalar(size_t k, size_t n, const float* b, size_t b_rs, size_t b_cs,
                                  float* packed);
void axle_f32_gemm_pack_b__avx2(size_t k, size_t n, const float* b, size_t b_rs, size_t b_cs,
                                float* packed);

/* Generates an operand that exists only implicitly (convolution input
 * unfolded by im2col): rows [k0, k0 + kc) of the K dimension and columns
 * [c0, c0 + cols) of the other one, written K-major into dst (element (p, j)
 * at dst[(p - k0) * cols + (j - c0)]). For B that is B itself; for A it is
 * A transposed. */
typedef void (*axle_f32_gemm_gen_fn)(const void* ctx, size_t k0, size_t kc, size_t c0,
                                     size_t cols, float* dst);

/* One GEMM operand: the first non-NULL of packed (all of it, as packed by
 * axle_f32_gemm_pack_a/b), data (strided, or for A blocked), gen
 * (generated). A blocked A (blocked != 0; rs and cs unused) is laid out in
 * blocks of 16 columns (K), `blocked` floats apart, each row-major with
 * rows of 16: element (row, col) at data[(col / 16) * blocked + row * 16 +
 * col % 16]. That is how a channels-last kernel writing 16 channels per
 * vector can leave a tensor for the AVX2 and AVX-512 tiles to read in
 * place, with no packing pass (axle_f32_conv_chain's projections);
 * elsewhere it is packed like any operand. */
typedef struct axle_f32_gemm_operand_t {
  const float* packed;
  const float* data;
  size_t rs, cs;             /* element (row, col) at data[row * rs + col * cs] */
  axle_f32_gemm_gen_fn gen;
  const void* gen_ctx;
  size_t blocked;   /* A only: 0, or the block stride above */
  size_t packed_kc; /* B only: the K block `packed` holds (pack_b_kc), or 0 */
} axle_f32_gemm_operand_t;

/* C = alpha * A * B (or C += ...), blocked for the caches, tiled on the
 * micro-kernel of axle_kernels_isa() and split over par's threads. alpha is
 * applied while packing A at run time; a pre-packed A has it already. */
typedef struct axle_f32_gemm_t {
  size_t m, n, k;
  axle_f32_gemm_operand_t a, b;
  float alpha;
  float* c;
  size_t ldc;
  int32_t c_transposed;   /* C stored transposed: (i, j) at c[j * ldc + i] */
  int32_t accumulate;     /* C += A * B (BLAS beta = 1) */
  const axle_f32_epilogue_t* ep; /* or NULL; indexed as C is stored */
  /* With threads, give each a range of C's stored rows (output channels)
   * whatever the shape would choose: for a caller whose next step reads C
   * a row range per thread (a depthwise convolution, split by channels),
   * so that each thread finds its rows in its own cache. 0: by shape. */
  int32_t split_rows;
  /* The caller's own work that writes A's K rows in k_part_count parts
   * (part p: rows from the p-th multiple of k_part_align, cut as evenly as
   * that allows), run as k_part_first(k_part_ctx, part, thread) for every
   * part before the product reads them. Where the product is split over K
   * into exactly those parts, each part's task runs it first, so one
   * parallel region does both and a part's rows are read on the core that
   * wrote them; otherwise the parts run as a region of their own first.
   * NULL: none. */
  void (*k_part_first)(void* ctx, size_t part, uint32_t thread);
  void* k_part_ctx;
  size_t k_part_count, k_part_align;
} axle_f32_gemm_t;

/* Whether an m x n product wastes clearly less of its tiles computed as
 * C^T = B^T A^T (n on the MR side): the driver swaps unpacked operands by
 * itself; callers that pre-pack (convolution weights) ask before packing. */
int axle_f32_gemm_prefers_transposed(size_t m, size_t n);

/* Bytes of scratch axle_f32_gemm needs for g when par->threads is `threads`
 * (the split depends on it, so the two must agree). */
size_t axle_f32_gemm_scratch_size(const axle_f32_gemm_t* g, uint32_t threads);
/* scratch: that many bytes, 64-byte aligned. par: NULL runs serially. */
void axle_f32_gemm(const axle_f32_gemm_t* g, void* scratch, const axle_parallel_t* par);

/* ---------------------------------------------------------------------- */
/* Convolution                                                             */
/* ---------------------------------------------------------------------- */

typedef struct axle_f32_conv_params_t {
  int64_t batch;
  int64_t groups;
  int64_t in_channels;                       /* total, = groups * per-group */
  int64_t out_channels;                      /* total */
  int64_t in[AXLE_KERNEL_MAX_SPATIAL];       /* input spatial sizes */
  int64_t out[AXLE_KERNEL_MAX_SPATIAL];      /* output spatial sizes */
  int64_t kernel[AXLE_KERNEL_MAX_SPATIAL];
  int64_t stride[AXLE_KERNEL_MAX_SPATIAL];
  int64_t dilation[AXLE_KERNEL_MAX_SPATIAL];
  int64_t pad[AXLE_KERNEL_MAX_SPATIAL];      /* leading padding per dimension */
} axle_f32_conv_params_t;

/* Direct convolution. x: [batch, in_channels, in...], w: [out_channels,
 * in_channels/groups, kernel...], bias: [out_channels] or NULL,
 * y: [batch, out_channels, out...]. Best for depthwise convolutions, where
 * im2col would only copy. Trailing padding is implied by out[]. */
void axle_f32_conv_direct_scalar(const axle_f32_conv_params_t* p, const float* x,
                                 const float* w, const float* bias, float* y);

/* Unfolds one image's channels [c0, c0 + channels) into col, laid out as
 * [channels * kernel volume][out volume]; padded taps are 0. */
void axle_f32_im2col_scalar(const axle_f32_conv_params_t* p, const float* x_image,
                            int64_t channels, float* col);

/* Convolution as im2col + GEMM per (image, group). Same operands as the
 * direct kernel; scratch needs axle_f32_conv_gemm_scratch_size(p) bytes
 * (0 for pointwise convolutions, which multiply the input in place). */
size_t axle_f32_conv_gemm_scratch_size(const axle_f32_conv_params_t* p);
void axle_f32_conv_gemm_scalar(const axle_f32_conv_params_t* p, const float* x,
                               const float* w, const float* bias, float* y,
                               void* scratch);

/* Prepared convolution (the fast path; the kernels above are its
 * reference). Planning picks the algorithm from the shape:
 *   GEMM       pointwise, stride 1, no padding: the input is B as it is
 *   IM2COL     any other grouped/full convolution: B is unfolded block by
 *              block into per-worker scratch, never as a whole
 *   DEPTHWISE  one input channel per group (any channel multiplier): direct
 *              per-plane kernels, AVX2 / AVX-512 for 2-D 3x3 (stride 1 or
 *              2); with AVX-512, runs of small planes (multiplier 1) per call
 *   WINOGRAD   2-D 3x3, stride 1, dilation 1, one group, up to 512 channels
 *              in and out, output at least 7x7, with AVX2 (with AVX-512 on
 *              whole-width FMAs, axle_kernels_wide_fma, not on maps of at
 *              most 16 F(2x2) tiles whose transformed weights pass 2 MB:
 *              streamed, they cost more than they save; see conv.c):
 *              F(2x2, 3x3), 16
 *              GEMMs with 2.25x fewer multiplies, or, where it pays
 *              (axle_f32_conv_winograd_tile), F(4x4, 3x3), 36 GEMMs with
 *              4x fewer (see conv_winograd.c)
 * and, for GEMM/IM2COL, the orientation: when the output has few pixels
 * (7x7 maps fill half-empty 16-wide tiles) it computes Y^T = X^T W^T, with
 * pixels on the 6-row side of the tile, and stores the result transposed. */
enum {
  AXLE_F32_CONV_GEMM = 0,
  AXLE_F32_CONV_IM2COL = 1,
  AXLE_F32_CONV_DEPTHWISE = 2,
  AXLE_F32_CONV_WINOGRAD = 3
};

typedef struct axle_f32_conv_plan_t {
  axle_f32_conv_params_t p;
  int32_t algo;          /* AXLE_F32_CONV_* */
  int32_t transposed;    /* GEMM/IM2COL: computes Y^T */
  int32_t wino_tile;     /* WINOGRAD: outputs per tile side, 2 or 4 */
  size_t m, n, k;        /* per group: output channels, output pixels, cg x kernel volume */
  size_t group_floats;   /* packed weights per group */
  /* GEMM/IM2COL with threads: split by output channels (the GEMM's
   * split_rows), for a caller whose next step reads the output a channel
   * range per thread. 0 from axle_f32_conv_plan; the caller may set it. */
  int32_t split_channels;
  /* Transposed GEMM plans: the K block of the packed weights (the GEMM's
   * B), 0 for axle_f32_gemm_kc. axle_f32_conv_plan sets one block for
   * pointwise plans of up to 512 input channels, and
   * axle_f32_conv_plan_channels_last where the chain's projection reads
   * its A in place; code building its own GEMM on the packed weights
   * passes it on (axle_f32_gemm_operand_t.packed_kc). */
  size_t pack_kc;
} axle_f32_conv_plan_t;

void axle_f32_conv_plan(const axle_f32_conv_params_t* p, axle_f32_conv_plan_t* plan);
/* Readies a plan for the channels-last chain (axle_f32_conv_chain): a
 * pointwise GEMM plan computes with the pixels on the tile's rows
 * (transposed = 1, its weights packed as the GEMM's B), a depthwise plan
 * of multiplier 1 packs its weights tap-major ([kernel volume][channels],
 * transposed = 1); other plans are left as they are. Call before packing.
 * A depthwise plan so made serves only the chain, not axle_f32_conv. */
void axle_f32_conv_plan_channels_last(axle_f32_conv_plan_t* plan);
/* Floats of packed weights, and the packing itself (once, at compile time).
 * w: [out_channels, in_channels / groups, kernel...], any folding (batch
 * norm) already applied. */
size_t axle_f32_conv_packed_size(const axle_f32_conv_plan_t* plan);
void axle_f32_conv_pack(const axle_f32_conv_plan_t* plan, const float* w, float* packed);
/* Scratch bytes for a run whose par->threads is `threads`. */
size_t axle_f32_conv_scratch_size(const axle_f32_conv_plan_t* plan, uint32_t threads);
/* y = epilogue(conv(x, w)). ep (may be NULL) indexes bias by output channel
 * and residual as a tensor shaped like y (its ldr is ignored). */
void axle_f32_conv(const axle_f32_conv_plan_t* plan, const float* x, const float* packed,
                   const axle_f32_epilogue_t* ep, float* y, void* scratch,
                   const axle_parallel_t* par);

/* A band of output rows, for steps that consume a convolution's output a
 * band at a time (conv_pool.c, conv_chain.c): rows [r0, r1) of one image x
 * of a plan that axle_f32_conv_rows_supports (GEMM or IM2COL, either
 * orientation, one group, 2-D), into y (row r0 first, channel planes y_stride floats apart), with
 * ep as in axle_f32_conv (its residual, if any, laid out like y). Runs on
 * the calling thread; scratch: axle_f32_conv_rows_scratch_size(plan, r1 -
 * r0) bytes, 64-byte aligned. The values of axle_f32_conv up to the order
 * of the sums where the band's columns fall into other GEMM tiles. */
int axle_f32_conv_rows_supports(const axle_f32_conv_plan_t* plan);
size_t axle_f32_conv_rows_scratch_size(const axle_f32_conv_plan_t* plan, int64_t rows);
void axle_f32_conv_rows(const axle_f32_conv_plan_t* plan, const float* x, const float* packed,
                        const axle_f32_epilogue_t* ep, int64_t r0, int64_t r1, float* y,
                        size_t y_stride, void* scratch);

/* Direct 3x3 stride-2 convolution of at most 4 input channels with AVX-512
 * (conv3x3s2_avx512.c; the stems of MobileNet-style networks), instead of
 * im2col and the GEMM: output rows [r0, r1) of one image, as
 * axle_f32_conv_rows computes them (same operands, the plan's packed
 * weights), tiles of 8 channels x 32 pixels of a row, the epilogue's
 * bias, clamp and leaky (no residual); y: row r0 first, channel rows
 * y_stride floats apart. x is read in place (never past its image);
 * ep may be NULL. Supported: an IM2COL plan, not
 * transposed, of one group and one K block, left padding 0-2, any top
 * padding. axle_f32_conv and axle_f32_conv_rows take it where supported
 * while dispatch is at AXLE_ISA_AVX512; their im2col GEMM (and
 * axle_f32_conv_direct_scalar) is its reference. Runs on the calling
 * thread; stack only. */
int axle_f32_conv3x3s2_supports(const axle_f32_conv_plan_t* plan, const axle_f32_epilogue_t* ep);
void axle_f32_conv3x3s2_rows_8x32__avx512(const axle_f32_conv_plan_t* plan, const float* x,
                                          const float* packed, const axle_f32_epilogue_t* ep,
                                          int64_t r0, int64_t r1, float* y, size_t y_stride);

/* Winograd pieces behind AXLE_F32_CONV_WINOGRAD (AVX2 and up; the reference
 * is axle_f32_conv_direct_scalar). tile: 2 for F(2x2, 3x3), 4 for F(4x4,
 * 3x3). For either, the AVX2 and AVX-512 variants take the same packed
 * weights and scratch and give the same bits. F(4x4)'s transforms multiply
 * by up to 8 and its weights carry sixths and 24ths: its results differ
 * from the direct convolution's by about 1e-5 of the output scale, where
 * F(2x2) stays within 1e-6. */
int axle_f32_conv_winograd_supports(const axle_f32_conv_params_t* p);
/* The tile for a supported shape at the given ISA level: 4 where the larger
 * tiles pay (enough of them to fill the GEMM tiles of that ISA: AVX-512's
 * 32 columns where its FMAs are whole-width, axle_kernels_wide_fma, else
 * AVX2's 16), else 2. */
int axle_f32_conv_winograd_tile(const axle_f32_conv_params_t* p, axle_isa_t isa);
size_t axle_f32_conv_winograd_packed_size(const axle_f32_conv_params_t* p, int tile);
void axle_f32_conv_winograd_pack(const axle_f32_conv_params_t* p, int tile, const float* w,
                                 float* packed);
size_t axle_f32_conv_winograd_scratch_size(const axle_f32_conv_params_t* p, int tile,
                                           uint32_t threads);
void axle_f32_conv_winograd__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                      const float* packed, const axle_f32_epilogue_t* ep,
                                      float* y, void* scratch, const axle_parallel_t* par);
void axle_f32_conv_winograd__avx512(const axle_f32_conv_params_t* p, const float* x,
                                    const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                    void* scratch, const axle_parallel_t* par);
void axle_f32_conv_winograd4__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                       const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                       void* scratch, const axle_parallel_t* par);
void axle_f32_conv_winograd4__avx512(const axle_f32_conv_params_t* p, const float* x,
                                     const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                     void* scratch, const axle_parallel_t* par);

/* Unfolds the block of the im2col matrix of one image and group with rows
 * [k0, k0 + kc) (channel x kernel tap) and columns [n0, n0 + nc) (output
 * pixels) into dst, row-major with row stride nc; padded taps are 0.
 * x_group: the group's first input channel. */
void axle_f32_im2col_block(const axle_f32_conv_params_t* p, const float* x_group, size_t k0,
                           size_t kc, size_t n0, size_t nc, float* dst);
/* The same blocks from vector moves worked out once per kernel tap and
 * replayed for every channel (im2col_moves.c), at strides 1 and 2 (others
 * go to the reference). The prepared convolution picks the one for
 * axle_kernels_isa(). */
typedef void (*axle_f32_im2col_block_fn)(const axle_f32_conv_params_t* p, const float* x_group,
                                         size_t k0, size_t kc, size_t n0, size_t nc,
                                         float* dst);
void axle_f32_im2col_block__avx2(const axle_f32_conv_params_t* p, const float* x_group,
                                 size_t k0, size_t kc, size_t n0, size_t nc, float* dst);
void axle_f32_im2col_block__avx512(const axle_f32_conv_params_t* p, const float* x_group,
                                   size_t k0, size_t kc, size_t n0, size_t nc, float* dst);

/* One output plane of a depthwise convolution with its epilogue: x_plane
 * is the input channel's plane, w its kernel, bias/residual this output
 * channel's (residual plane may be NULL). The AVX2 and AVX-512 variants
 * take the same planes (2-D 3x3 kernels, dilation 1, stride 1 or 2: the
 * _supports test) and read them in place (they need no scratch). */
typedef void (*axle_f32_dwconv_plane_fn)(const axle_f32_conv_params_t* p,
                                         const float* x_plane, const float* w, float bias,
                                         const float* residual,
                                         const axle_f32_epilogue_t* ep, float* y_plane);
int axle_f32_dwconv_3x3__avx2_fma_supports(const axle_f32_conv_params_t* p);
void axle_f32_dwconv_plane__scalar(const axle_f32_conv_params_t* p, const float* x_plane,
                                   const float* w, float bias, const float* residual,
                                   const axle_f32_epilogue_t* ep, float* y_plane);
void axle_f32_dwconv_plane_3x3__avx2_fma(const axle_f32_conv_params_t* p,
                                         const float* x_plane, const float* w, float bias,
                                         const float* residual, const axle_f32_epilogue_t* ep,
                                         float* y_plane);
void axle_f32_dwconv_plane_3x3__avx512(const axle_f32_conv_params_t* p, const float* x_plane,
                                       const float* w, float bias, const float* residual,
                                       const axle_f32_epilogue_t* ep, float* y_plane);
/* A run of `planes` planes with channel multiplier 1 and no residual, as
 * the plane kernel of p (axle_f32_dwconv_plane_kernel) computes them one by
 * one, with the same bits: plane i reads x + i * x_stride and the kernel w
 * + 9 i, adds bias[i] (bias may be NULL) and writes y + i * y_stride. For
 * the band chains' planes, a few rows each, where a call per plane spent
 * ~15 % of the time setting up (dwconv_avx512.c). The AVX-512 variant
 * takes them in one call where its row slides do, the AVX2 one where its
 * four-row walk does; the dispatcher runs the scalar kernel plane by
 * plane. */
void axle_f32_dwconv_plane_run(const axle_f32_conv_params_t* p, size_t planes, const float* x,
                               size_t x_stride, const float* w, const float* bias,
                               const axle_f32_epilogue_t* ep, float* y, size_t y_stride);
void axle_f32_dwconv_plane_run_3x3__avx2_fma(const axle_f32_conv_params_t* p, size_t planes,
                                             const float* x, size_t x_stride, const float* w,
                                             const float* bias, const axle_f32_epilogue_t* ep,
                                             float* y, size_t y_stride);
void axle_f32_dwconv_plane_run_3x3__avx512(const axle_f32_conv_params_t* p, size_t planes,
                                           const float* x, size_t x_stride, const float* w,
                                           const float* bias, const axle_f32_epilogue_t* ep,
                                           float* y, size_t y_stride);
/* `planes` consecutive planes of one image with channel multiplier 1, for
 * the small planes where per-plane borders and setup dominate: plane i
 * reads x + i * (input volume) and w + 9 i, adds bias[i] (bias may be NULL)
 * and residual + i * (output volume) (residual may be NULL) and writes
 * y + i * (output volume). Takes 3x3 planes of at most 4096 outputs, stride
 * 1 with an output as wide as the input, or stride 2 with output rows of at
 * most 8 or a left padding of 1 or 2 and a small enough input (the
 * _supports test); the reference is the scalar plane kernel. */
int axle_f32_dwconv_planes_3x3__avx512_supports(const axle_f32_conv_params_t* p);
void axle_f32_dwconv_planes_3x3__avx512(const axle_f32_conv_params_t* p, size_t planes,
                                        const float* x, const float* w, const float* bias,
                                        const float* residual, const axle_f32_epilogue_t* ep,
                                        float* y);
/* The plane kernel for axle_kernels_isa() that takes p (the scalar one
 * when no vector variant does). */
axle_f32_dwconv_plane_fn axle_f32_dwconv_plane_kernel(const axle_f32_conv_params_t* p);

/* Depthwise convolution over one channels-last image (dwconv_nhwc.c):
 * channel c of input pixel q (row-major over [in h][in w]) at x[q * x_pixel
 * + c], x_pixel >= c1 (C: x laid out [in h][in w][C]; less where x points
 * below a buffer holding only channels [c0, c1), c1 - c0 to a pixel);
 * channel c of output pixel q (row-major over [out h][out
 * w]) at y[q * y_pixel + (c / 16) * y_block + c % 16]: y_pixel = C and
 * y_block = 16 lay y out [out h][out w][C] like x, y_pixel = 16 and
 * y_block >= 16 * pixels in blocks of 16 channels (the blocked A of
 * axle_f32_gemm_operand_t), where c0 must then be a multiple of 16.
 * C = p->in_channels = p->out_channels = p->groups (multiplier 1), 2-D
 * (in[0] = out[0] = 1),
 * any stride and padding (the _supports test). Computes output rows [oy0,
 * oy1) of channels [c0, c1); w is tap-major, [kernel h * kernel w][C] (the
 * weights of a depthwise plan made channels-last, see
 * axle_f32_conv_plan_channels_last); ep: bias per channel and the
 * activation, its residual unused. Per output, the taps' sum, then bias
 * and activation, as the plane kernels. Needs no scratch; calls on
 * disjoint (row, channel) ranges may run concurrently on the same x, w
 * and y. The vector variants take 3x3 kernels with dilation 1. */
typedef void (*axle_f32_dwconv_nhwc_fn)(const axle_f32_conv_params_t* p, const float* x,
                                        int64_t x_pixel, const float* w,
                                        const axle_f32_epilogue_t* ep, int64_t oy0, int64_t oy1,
                                        int64_t c0, int64_t c1, int64_t y_pixel, int64_t y_block,
                                        float* y);
int axle_f32_dwconv_nhwc_supports(const axle_f32_conv_params_t* p);
void axle_f32_dwconv_nhwc__scalar(const axle_f32_conv_params_t* p, const float* x, int64_t x_pixel,
                                  const float* w, const axle_f32_epilogue_t* ep, int64_t oy0,
                                  int64_t oy1, int64_t c0, int64_t c1, int64_t y_pixel,
                                  int64_t y_block, float* y);
void axle_f32_dwconv_nhwc_3x3__avx2_fma(const axle_f32_conv_params_t* p, const float* x,
                                        int64_t x_pixel, const float* w,
                                        const axle_f32_epilogue_t* ep, int64_t oy0, int64_t oy1,
                                        int64_t c0, int64_t c1, int64_t y_pixel, int64_t y_block,
                                        float* y);
void axle_f32_dwconv_nhwc_3x3__avx512(const axle_f32_conv_params_t* p, const float* x,
                                      int64_t x_pixel, const float* w,
                                      const axle_f32_epilogue_t* ep, int64_t oy0, int64_t oy1,
                                      int64_t c0, int64_t c1, int64_t y_pixel, int64_t y_block,
                                      float* y);
/* The variant for axle_kernels_isa() that takes p. */
axle_f32_dwconv_nhwc_fn axle_f32_dwconv_nhwc_kernel(const axle_f32_conv_params_t* p);

/* Inverted-residual chain (conv_chain.c): expansion (1x1, or any
 * convolution axle_f32_conv_rows takes, such as MobileNetV2's 3x3 stride-2
 * stem), depthwise 3x3 (channel multiplier 1, stride 1 or 2) and
 * projection (1x1) run in bands
 * of output rows, so that the expanded tensor and the depthwise output stay
 * in per-thread buffers of about half the L2 instead of making a round trip
 * through memory. The products per element are those of the three
 * prepared convolutions; the depthwise sums may add in another order than
 * axle_f32_conv's (float rounding). Plans and packed weights are those of
 * axle_f32_conv_plan/_pack. ep[i] is stage i's epilogue; ep[2].residual, if
 * any, is shaped like y. The structure is read-only during a run:
 * concurrent runs may share it. */
typedef struct axle_f32_conv_chain_t {
  const axle_f32_conv_plan_t* expand;
  const axle_f32_conv_plan_t* dw;
  const axle_f32_conv_plan_t* project;
  const float* packed[3];             /* per stage */
  axle_f32_epilogue_t ep[3];
  /* Run channels-last (AXLE_F32_CHAIN_CHANNELS_LAST; the plans made so
   * with axle_f32_conv_plan_channels_last before packing), or in bands. */
  int32_t channels_last;
  /* Set by axle_f32_conv_chain_init, read by the scratch size and the run. */
  int64_t band;                       /* output rows per band */
  /* On several threads, the most output rows a thread's whole range may
   * take as one band (its buffers within 90 % of the L2), if more than
   * band; else band. */
  int64_t range_band;
  size_t gemm_bytes;                  /* GEMM scratch per thread for any band or part */
} axle_f32_conv_chain_t;

/* Fixes c's band: `band` output rows (clamped to the image), or with band
 * < 1 the default: the most rows whose two buffers fit in half of
 * axle_kernels_l2_bytes(), a multiple of 4 (the depthwise kernels' row
 * group) from 4 on, and where that is 4-7 rows, 8 if they fit in 90 % of
 * it; a channels-last chain takes the whole image (band is ignored). With
 * the default, a run on several threads takes each thread's range of rows
 * as one band where its buffers fit in 90 % of the L2 (range_band). Call once after setting the
 * plans, packed weights and channels_last, before asking the scratch size. */
void axle_f32_conv_chain_init(axle_f32_conv_chain_t* c, int64_t band);

/* Whether the three plans chain (shapes agree, the expansion is one
 * axle_f32_conv_rows takes, through im2col only while dispatch is at
 * AVX2 or above, the projection a 1x1 GEMM of one group, the
 * depthwise one is 2-D 3x3 with multiplier 1 and stride 1 or 2) and the
 * chain pays: the expanded tensor of one image is
 * larger than half the L2 and at least 1 MiB, and bands get 4 rows or
 * more (the default of axle_f32_conv_chain_init). */
int axle_f32_conv_chain_supports(const axle_f32_conv_plan_t* expand,
                                 const axle_f32_conv_plan_t* dw,
                                 const axle_f32_conv_plan_t* project);
/* How the three plans chain, if they do, for runs on `threads` threads:
 * AXLE_F32_CHAIN_BANDS where axle_f32_conv_chain_supports, or on several
 * threads where it would with an expanded tensor of 512 KiB; else
 * AXLE_F32_CHAIN_CHANNELS_LAST where the shapes chain, the expansion is
 * pointwise too, its map has fewer pixels than channels (or, dispatched at
 * AVX2 and not AVX-512, fits in the L2) and dispatch is at AVX2 or above,
 * on one thread, or on several where each can take a part of the expanded
 * channels (whole blocks of 16, the expansion's weights one K block) and
 * the projection reads the depthwise output in place (its output channels
 * whole tiles: 16 wide with AVX2, 32 with AVX-512): whole images stage
 * after stage, the expanded tensor and the depthwise output kept channels-
 * last in scratch, so that the depthwise stage runs on
 * axle_f32_dwconv_nhwc_kernel (2-2.5x the per-plane kernels on 14x14 and
 * 7x7 maps); else AXLE_F32_CHAIN_NONE. */
enum { AXLE_F32_CHAIN_NONE = 0, AXLE_F32_CHAIN_BANDS = 1, AXLE_F32_CHAIN_CHANNELS_LAST = 2 };
int axle_f32_conv_chain_mode(const axle_f32_conv_plan_t* expand, const axle_f32_conv_plan_t* dw,
                             const axle_f32_conv_plan_t* project, uint32_t threads);
/* Scratch bytes for a run whose par->threads is `threads`. */
size_t axle_f32_conv_chain_scratch_size(const axle_f32_conv_chain_t* c, uint32_t threads);
/* y = project(dw(expand(x))) with the epilogues; x and y: [batch, C, H, W].
 * scratch: axle_f32_conv_chain_scratch_size bytes, 64-byte aligned. In
 * bands each thread takes a contiguous range of output rows of an image;
 * channels-last, each image's expansion is split by input pixels and its
 * depthwise stage and projection by output rows. */
void axle_f32_conv_chain(const axle_f32_conv_chain_t* c, const float* x, float* y,
                         void* scratch, const axle_parallel_t* par);

/* ---------------------------------------------------------------------- */
/* Pooling                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct axle_f32_pool_params_t {
  int64_t channels;                          /* batch * channels, pooled alike */
  int64_t in[AXLE_KERNEL_MAX_SPATIAL];
  int64_t out[AXLE_KERNEL_MAX_SPATIAL];
  int64_t kernel[AXLE_KERNEL_MAX_SPATIAL];
  int64_t stride[AXLE_KERNEL_MAX_SPATIAL];
  int64_t dilation[AXLE_KERNEL_MAX_SPATIAL];
  int64_t pad[AXLE_KERNEL_MAX_SPATIAL];      /* leading padding */
  int64_t pad_end[AXLE_KERNEL_MAX_SPATIAL];  /* trailing padding (average divisor) */
  int32_t count_include_pad;                 /* average: divisor counts padding */
  int32_t storage_order;                     /* max indices: 0 row-, 1 column-major */
} axle_f32_pool_params_t;

/* Max pooling; padded taps are ignored. indices (optional, may be NULL)
 * receives the flat index of each maximum over the whole input tensor
 * (channel * in volume + spatial index in storage_order), as ONNX MaxPool's
 * second output. A window that covers no input yields -inf and index -1. */
void axle_f32_maxpool_scalar(const axle_f32_pool_params_t* p, const float* x, float* y,
                             int64_t* indices);

/* Average pooling. The divisor is the number of taps inside the input, or
 * with count_include_pad the number inside the padded extent
 * [-pad, in + pad_end) (taps beyond it, from ceil_mode, never count). */
void axle_f32_avgpool_scalar(const axle_f32_pool_params_t* p, const float* x, float* y);

/* Max pooling without indices, planes split over par's threads: the
 * AVX-512 or AVX2 plane variant for the 2-D windows it supports, the scalar
 * reference otherwise. scratch: axle_f32_maxpool_scratch_size bytes for the
 * same par->threads. */
size_t axle_f32_maxpool_scratch_size(const axle_f32_pool_params_t* p, uint32_t threads);
void axle_f32_maxpool(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                      const axle_parallel_t* par);
/* One plane of the same (p->channels ignored): x_plane in[1] rows of in[2]
 * floats, y_plane out[1] rows of out[2]; tmp: axle_f32_maxpool_scratch_size
 * (p, 1) bytes. The kernel for p as axle_f32_maxpool dispatches it (chosen
 * once per shape, as axle_f32_dwconv_plane_kernel). */
typedef void (*axle_f32_maxpool_plane_fn)(const axle_f32_pool_params_t* p, const float* x_plane,
                                          float* y_plane, float* tmp);
axle_f32_maxpool_plane_fn axle_f32_maxpool_plane_kernel(const axle_f32_pool_params_t* p);

/* Average pooling the same way: planes over par's threads, the AVX2 plane
 * variant for the 2-D windows it supports (those of max pooling's), the
 * scalar reference otherwise. Sums in another order than the reference's:
 * results within a few ulp of it. scratch: axle_f32_avgpool_scratch_size
 * bytes for the same par->threads. */
size_t axle_f32_avgpool_scratch_size(const axle_f32_pool_params_t* p, uint32_t threads);
void axle_f32_avgpool(const axle_f32_pool_params_t* p, const float* x, float* y, void* scratch,
                      const axle_parallel_t* par);

/* Convolution -> max pooling (conv_pool.c), in bands of pooled rows: the
 * convolution's rows a band's windows need go into a per-thread buffer
 * reused band after band, so its output never travels to memory (ResNet's
 * stem: 3.2 MB written and read back per image). */
typedef struct axle_f32_conv_pool_t {
  const axle_f32_conv_plan_t* conv; /* axle_f32_conv_rows_supports */
  const float* packed;
  axle_f32_epilogue_t ep;      /* the convolution's: bias, activation, no residual */
  axle_f32_pool_params_t pool; /* over one image's conv output (channels: its channels) */
  /* Set by axle_f32_conv_pool_init, read by the scratch size and the run. */
  int64_t band;      /* pooled rows per band */
  size_t gemm_bytes; /* axle_f32_conv_rows scratch for any band */
} axle_f32_conv_pool_t;

/* Whether the kernels take this pair (the plan as axle_f32_conv_rows needs,
 * a 2-D pooling with dilation 1 over its whole output) and it pays: the
 * convolution's output of one image is larger than half the L2 and the
 * default band (axle_f32_conv_pool_init) has 4 pooled rows or more. */
int axle_f32_conv_pool_supports(const axle_f32_conv_plan_t* conv,
                                const axle_f32_pool_params_t* pool);
/* Fixes c's band: `band` pooled rows, or with band < 1 the most whose
 * convolution rows fit in a quarter of axle_kernels_l2_bytes(). Call once
 * the other fields are set, before asking the scratch size. */
void axle_f32_conv_pool_init(axle_f32_conv_pool_t* c, int64_t band);
size_t axle_f32_conv_pool_scratch_size(const axle_f32_conv_pool_t* c, uint32_t threads);
/* y = maxpool(conv(x)); x: [batch, C, H, W], y: [batch, C', H', W'].
 * scratch: axle_f32_conv_pool_scratch_size bytes, 64-byte aligned. Each
 * thread takes a contiguous range of pooled rows of an image. The values
 * are those of axle_f32_conv then axle_f32_maxpool up to float rounding (a
 * band's GEMM may cut its columns into other tiles, whose sums run in
 * another order). */
void axle_f32_conv_pool(const axle_f32_conv_pool_t* c, const float* x, float* y, void* scratch,
                        const axle_parallel_t* par);
/* One plane of a 2-D max pooling with dilation 1, horizontal stride 1 or 2
 * (any vertical stride, kernel and padding); tmp: *_tmp_size(p) floats (one
 * padded row, two for AVX-512; 0 where the variant does not support p). */
int axle_f32_maxpool2d__avx2_supports(const axle_f32_pool_params_t* p);
size_t axle_f32_maxpool2d__avx2_tmp_size(const axle_f32_pool_params_t* p);
void axle_f32_maxpool2d_plane__avx2(const axle_f32_pool_params_t* p, const float* x_plane,
                                    float* y_plane, float* tmp);
/* Average pooling's plane: the windows max pooling's AVX2 plane supports;
 * tmp: axle_f32_avgpool2d__avx2_tmp_size(p) floats. */
size_t axle_f32_avgpool2d__avx2_tmp_size(const axle_f32_pool_params_t* p);
void axle_f32_avgpool2d_plane__avx2(const axle_f32_pool_params_t* p, const float* x_plane,
                                    float* y_plane, float* tmp);
int axle_f32_maxpool2d__avx512_supports(const axle_f32_pool_params_t* p);
size_t axle_f32_maxpool2d__avx512_tmp_size(const axle_f32_pool_params_t* p);
void axle_f32_maxpool2d_plane__avx512(const axle_f32_pool_params_t* p, const float* x_plane,
                                      float* y_plane, float* tmp);

/* Global pooling over the size contiguous elements of each of channels rows.
 * The average sums in double in every variant; the AVX2 one may differ from
 * the scalar one in the last bit of the float result (summation order). The
 * entry points without a suffix dispatch on axle_kernels_isa() (AVX-512
 * machines run the AVX2 variants: wider vectors measured slower here) and
 * give each of par's threads a contiguous run of channels (NULL: serial;
 * results do not depend on the split). */
void axle_f32_global_avgpool(size_t channels, size_t size, const float* x, float* y,
                             const axle_parallel_t* par);
void axle_f32_global_maxpool(size_t channels, size_t size, const float* x, float* y,
                             const axle_parallel_t* par);
void axle_f32_global_avgpool_scalar(size_t channels, size_t size, const float* x, float* y);
void axle_f32_global_maxpool_scalar(size_t channels, size_t size, const float* x, float* y);
void axle_f32_global_avgpool__avx2(size_t channels, size_t size, const float* x, float* y);
void axle_f32_global_maxpool__avx2(size_t channels, size_t size, const float* x, float* y);

/* ---------------------------------------------------------------------- */
/* Normalisation and softmax                                               */
/* ---------------------------------------------------------------------- */

/* y[n,c,s] = x[n,c,s] * scale[c] + shift[c] (inference batch normalisation
 * with the statistics folded into scale and shift). */
void axle_f32_channel_affine_scalar(size_t batch, size_t channels, size_t size,
                                    const float* x, const float* scale,
                                    const float* shift, float* y);

/* Folds batch-norm statistics: scale = gamma / sqrt(var + eps),
 * shift = beta - mean * scale. */
void axle_f32_batchnorm_fold_scalar(size_t channels, const float* gamma, const float* beta,
                                    const float* mean, const float* var, float epsilon,
                                    float* scale, float* shift);

/* Softmax / log-softmax over the middle dimension of x viewed as
 * [outer, axis, inner]; inner == 1 is the contiguous (common) case. */
void axle_f32_softmax_scalar(size_t outer, size_t axis, size_t inner, const float* x,
                             float* y);
void axle_f32_logsoftmax_scalar(size_t outer, size_t axis, size_t inner, const float* x,
                                float* y);
/* The AVX2 and AVX-512 variants (e^x within a few ulp of expf, sums in another order:
 * results within a few ulp of the references'), and the entry points that
 * dispatch on axle_kernels_isa() and split the rows (outer indices) over
 * par's threads (NULL: serial; results do not depend on the split). All are
 * safe in place (y == x). */
void axle_f32_softmax__avx2(size_t outer, size_t axis, size_t inner, const float* x, float* y);
void axle_f32_logsoftmax__avx2(size_t outer, size_t axis, size_t inner, const float* x, float* y);
void axle_f32_softmax__avx512(size_t outer, size_t axis, size_t inner, const float* x, float* y);
void axle_f32_logsoftmax__avx512(size_t outer, size_t axis, size_t inner, const float* x, float* y);
void axle_f32_softmax(size_t outer, size_t axis, size_t inner, const float* x, float* y,
                      const axle_parallel_t* par);
void axle_f32_logsoftmax(size_t outer, size_t axis, size_t inner, const float* x, float* y,
                         const axle_parallel_t* par);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_KERNELS_H_ */
