/*
 * Quantized kernels for QDQ models: uint8 activations, int8 weights.
 *
 * Arithmetic contract (exact, integer where the math is integer). For a
 * convolution output channel c and output pixel:
 *   acc = bias[c] + sum over taps of (x - x_zero_point) * w      (int32)
 * where a padded tap contributes 0 (it reads x_zero_point), then
 *   y = clamp(nearbyintf((float)acc * rq->scale[c]) + rq->zero_point,
 *             rq->min, rq->max)
 * with nearbyintf in the default round-half-to-even mode. rq->scale[c] is
 * the float32 value x_scale * w_scale[c] / y_scale, computed by the caller
 * in float32 in that order (ONNX Runtime's QLinearConv does the same), so
 * an independent integer reference can reproduce every output bit. A ReLU
 * or Clip between the convolution and its QuantizeLinear is exact in this
 * form: QuantizeLinear is monotone, so it becomes min/max.
 *
 * Weights are symmetric (zero point 0) signed 8-bit; int32 sums cannot
 * overflow for K = channels x kernel volume up to 65536.
 *
 * Every ISA variant gives the same bits as the __scalar reference. None of
 * the AVX2 variants may use a saturating instruction where saturation can
 * happen (vpmaddubsw on full-range u8 x s8 pairs can).
 *
 * Thread safety: reentrant; plans and packed weights are read-only at run
 * time and may be shared by concurrent runs with separate scratch.
 */
#ifndef AXLE_KERNELS_QU8_H_
#define AXLE_KERNELS_QU8_H_

#include <stddef.h>
#include <stdint.h>

#include "axle_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Steps of the vector variants' output stage that a layer's values make
 * no-ops, so a variant may leave them out; the bits cannot change. Each is
 * about one instruction of seven per vector of outputs in the GEMM tiles'
 * epilogues. */
enum {
  /* Every scale below 1: |(float)acc * scale| < 2^31, so the conversion to
   * int32 needs no cap first (the cap keeps it defined for larger scales). */
  AXLE_QU8_SKIP_CAP = 1,
  AXLE_QU8_SKIP_ZERO_POINT = 2, /* zero_point 0 */
  AXLE_QU8_SKIP_CLAMP = 4,      /* min 0 and max 255: the unsigned pack clamps */
  AXLE_QU8_SKIP_ALL = 7
};

/* Output stage of the quantized convolution (see the contract above). */
typedef struct axle_qu8_requant_t {
  const float* scale; /* [out_channels] */
  int32_t zero_point; /* 0..255 */
  uint8_t min, max;   /* clamp after adding the zero point (0, 255: none) */
  uint8_t skip;       /* AXLE_QU8_SKIP_* bits; 0 is always correct */
} axle_qu8_requant_t;

/* Fills rq for channels output channels, skip included. scale is
 * borrowed: it must outlive rq. Reentrant. */
void axle_qu8_requant_init(axle_qu8_requant_t* rq, const float* scale, size_t channels,
                           int32_t zero_point, uint8_t min, uint8_t max);

/* Reference convolution: plain loops over the contract. Geometry as for the
 * float kernels (axle_f32_conv_params_t describes shapes only). x: [batch,
 * in_channels, in...] u8; w: [out_channels, in_channels / groups,
 * kernel...] s8; bias: [out_channels] s32 or NULL; y: [batch,
 * out_channels, out...] u8. */
void axle_qu8_conv_direct__scalar(const axle_f32_conv_params_t* p, const uint8_t* x,
                                  int32_t x_zero_point, const int8_t* w, const int32_t* bias,
                                  const axle_qu8_requant_t* rq, uint8_t* y);

/* Prepared convolution, the fast path. Planning picks the algorithm:
 *   GEMM       pointwise, stride 1, no padding: the input is the B operand
 *   IM2COL     other convolutions with more than one input channel per group
 *   DEPTHWISE  one input channel per group (any channel multiplier)
 * Every algorithm works for every geometry the reference accepts; the ISA
 * variants cover the shapes that matter and the scalar code the rest. */
enum { AXLE_QU8_CONV_GEMM = 0, AXLE_QU8_CONV_IM2COL = 1, AXLE_QU8_CONV_DEPTHWISE = 2 };

/* Operand layouts of the GEMM micro-kernels (see below): int16 pairs for
 * vpmaddwd, or byte quads for AVX-512 VNNI's vpdpbusd. */
enum { AXLE_QU8_GEMM_PAIRS = 0, AXLE_QU8_GEMM_QUADS = 1 };

typedef struct axle_qu8_conv_plan_t {
  axle_f32_conv_params_t p;
  int32_t x_zero_point;
  int32_t algo;  /* AXLE_QU8_CONV_* */
  /* AXLE_QU8_GEMM_*, chosen for axle_kernels_isa() at planning time
   * (quads also for GEMM with one pixel per image, at any level); the
   * packed weights follow it, and a run at a lower ISA level still gives
   * the same bits (on the layout's scalar micro-kernel). */
  int32_t gemm_layout;
  size_t m, n, k; /* per group: output channels, output pixels, in channels x kernel volume */
  /* GEMM/IM2COL with threads, on maps of up to 56x56 pixels: each thread a
   * range of output channels instead of pixel strips, for a caller whose
   * next step reads the output a channel range per thread (a depthwise
   * convolution). 0 from axle_qu8_conv_plan; the caller may set it. */
  int32_t split_channels;
} axle_qu8_conv_plan_t;

void axle_qu8_conv_plan(const axle_f32_conv_params_t* p, int32_t x_zero_point,
                        axle_qu8_conv_plan_t* plan);
/* Bytes of the packed form of the weights (compile time, once): weights in
 * the kernels' layout plus per-channel int32 terms with the input zero
 * point's correction folded in. */
size_t axle_qu8_conv_packed_size(const axle_qu8_conv_plan_t* plan);
/* packed: axle_qu8_conv_packed_size bytes, 64-byte aligned. bias may be
 * NULL (zero). */
void axle_qu8_conv_pack(const axle_qu8_conv_plan_t* plan, const int8_t* w, const int32_t* bias,
                        void* packed);
/* Scratch bytes for a run whose par->threads is `threads`. */
size_t axle_qu8_conv_scratch_size(const axle_qu8_conv_plan_t* plan, uint32_t threads);
/* y = requant(conv(x, w) + bias). scratch: 64-byte aligned; par: NULL runs
 * serially. */
void axle_qu8_conv(const axle_qu8_conv_plan_t* plan, const uint8_t* x, const void* packed,
                   const axle_qu8_requant_t* rq, uint8_t* y, void* scratch,
                   const axle_parallel_t* par);

/* ---- an expansion and the depthwise convolution reading it -------------
 *
 * A pointwise convolution (a GEMM plan of one group) whose output only a
 * depthwise one of channel multiplier 1 reads, run as one: each task takes
 * a weight panel of the first (a few output channels), computes those
 * channels over the whole map into a buffer of its thread's own and runs
 * the depthwise planes of the same channels from it while it is in cache,
 * so the expanded tensor is never written out. Each thread packs the
 * input's pixel strips once per image for the panels it takes. The bits
 * are those of the two axle_qu8_conv calls. */
typedef struct axle_qu8_conv_pair_t {
  const axle_qu8_conv_plan_t* pw; /* the expansion */
  const void* pw_packed;
  const axle_qu8_requant_t* pw_rq;
  const axle_qu8_conv_plan_t* dw; /* the depthwise convolution */
  const void* dw_packed;
  const axle_qu8_requant_t* dw_rq;
} axle_qu8_conv_pair_t;
/* Whether two plans run as a pair: shapes as above, the first's output the
 * second's input. */
int axle_qu8_conv_pair_supports(const axle_qu8_conv_plan_t* pw, const axle_qu8_conv_plan_t* dw);
/* Whether they also gain by it: an expanded tensor too large to stay in
 * cache between the two steps. */
int axle_qu8_conv_pair_pays(const axle_qu8_conv_plan_t* pw, const axle_qu8_conv_plan_t* dw);
/* Scratch bytes for a run whose par->threads is `threads`. */
size_t axle_qu8_conv_pair_scratch_size(const axle_qu8_conv_pair_t* c, uint32_t threads);
/* y = dw(pw(x)). scratch: 64-byte aligned; par: NULL runs serially. */
void axle_qu8_conv_pair(const axle_qu8_conv_pair_t* c, const uint8_t* x, uint8_t* y, void* scratch,
                        const axle_parallel_t* par);

/* ---- pieces of the prepared convolution, per ISA (for tests and benches) */

/* Register tile of the GEMM micro-kernels: MR output channels by NR output
 * pixels. Operands are int16 pairs along K (vpmaddwd's layout): a holds, per
 * K pair, MR (w[i][k], w[i][k + 1]) pairs; b holds, per K pair, NR
 * (x[k][j], x[k + 1][j]) pairs. An odd K ends in a pair whose second half is
 * 0 in both. */
#define AXLE_QU8_GEMM_MR 6
#define AXLE_QU8_GEMM_NR 16

/* Packs cols (<= NR) columns of kc rows of a u8 matrix (element (k, j) at
 * x[k * rs + j]) into b's layout: (kc + 1) / 2 pairs of NR columns; columns
 * past cols are 0. */
void axle_qu8_gemm_pack_b_16__scalar(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                     int16_t* packed);
void axle_qu8_gemm_pack_b_16__avx2(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                   int16_t* packed);

/* One tile of output: for i < mr (<= MR), j < nr (<= NR),
 *   y[i * ldy + j] = requant(terms[i] + sum over kp pairs of a . b)
 * with scale[i] and rq's zero point and clamp (rq->scale is not read).
 * terms: the per-channel int32 terms (bias - x_zero_point * sum w). */
typedef void (*axle_qu8_gemm_ukernel_fn)(size_t mr, size_t nr, size_t kp, const int16_t* a,
                                         const int16_t* b, const int32_t* terms,
                                         const float* scale, const axle_qu8_requant_t* rq,
                                         uint8_t* y, size_t ldy);

/* A block of tiles: as axle_qu8_gemm_ukernel_fn for i < m, j < n of any
 * size, a holding (m + MR - 1) / MR panels and b (n + NR - 1) / NR strips,
 * each kp pairs long, back to back; row i is row i % MR of panel i / MR,
 * column j column j % NR of strip j / NR. */
typedef void (*axle_qu8_gemm_block_fn)(size_t m, size_t n, size_t kp, const int16_t* a,
                                       const int16_t* b, const int32_t* terms, const float* scale,
                                       const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
void axle_qu8_gemm_6x16__scalar(size_t m, size_t n, size_t kp, const int16_t* a, const int16_t* b,
                                const int32_t* terms, const float* scale,
                                const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
void axle_qu8_gemm_6x16__avx2(size_t m, size_t n, size_t kp, const int16_t* a, const int16_t* b,
                              const int32_t* terms, const float* scale,
                              const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);

/* Packs one column of kc rows (element k at x[k * rs]) as the one-column
 * tiles read it: b's layout with NR = 1, (kc + 1) / 2 pairs back to back.
 * A strip of one column packed NR wide spent its loads on 15 columns of
 * zeros: the memset of the whole strip, and a 4-byte read per 64 bytes. */
void axle_qu8_gemm_pack_b_1__scalar(size_t kc, const uint8_t* x, size_t rs, int16_t* packed);

/* The same for one output column (nr = 1: a pointwise layer on one pixel
 * per image, such as a fully connected layer at batch 1, or the last pixel
 * of a 7x7 map), the weights as the vector operand, b packed by
 * axle_qu8_gemm_pack_b_1__scalar; the results are those of the 6 x 16
 * tile on the column packed NR wide. */
void axle_qu8_gemm_6x1__avx2(size_t mr, size_t nr, size_t kp, const int16_t* a, const int16_t* b,
                             const int32_t* terms, const float* scale,
                             const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);

/* The AVX-512 VNNI tile: C4_MR output channels by NR output pixels on K
 * quads (vpdpbusd's layout): a holds, per K quad, C4_MR rows of four s8
 * weights (w[i][k..k + 3]); b holds, per K quad, NR columns of four u8
 * inputs (x[k..k + 3][j]). A K that is not a multiple of 4 ends in a quad
 * padded with 0 in both. vpdpbusd multiplies u8 by s8 and adds four
 * products to an int32 lane without saturation (unlike vpdpbusds or
 * vpmaddubsw), so with the contract's s8 weights and u8 inputs the sums
 * are the exact ones; the zero point stays in the terms as for pairs. */
#define AXLE_QU8_GEMM_C4_MR 12

/* Packs cols (<= NR) columns of kc rows of a u8 matrix (as for pack_b_16)
 * into b's quad layout: (kc + 3) / 4 quads of NR columns; columns past
 * cols are 0. */
void axle_qu8_gemm_pack_b_16c4__scalar(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                       uint8_t* packed);
void axle_qu8_gemm_pack_b_16c4__avx2(size_t kc, size_t cols, const uint8_t* x, size_t rs,
                                     uint8_t* packed);

/* One tile of output on kq K quads; otherwise as axle_qu8_gemm_ukernel_fn
 * (mr <= C4_MR, nr <= NR). */
typedef void (*axle_qu8_gemm_c4_ukernel_fn)(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                            const uint8_t* b, const int32_t* terms,
                                            const float* scale, const axle_qu8_requant_t* rq,
                                            uint8_t* y, size_t ldy);
/* A block of tiles on K quads, as axle_qu8_gemm_block_fn on pairs: m rows
 * and n columns of any size, a holding (m + C4_MR - 1) / C4_MR panels and b
 * (n + NR - 1) / NR strips, each kq quads long, back to back. */
typedef void (*axle_qu8_gemm_c4_block_fn)(size_t m, size_t n, size_t kq, const int8_t* a,
                                          const uint8_t* b, const int32_t* terms,
                                          const float* scale, const axle_qu8_requant_t* rq,
                                          uint8_t* y, size_t ldy);
void axle_qu8_gemm_12x16c4__scalar(size_t m, size_t n, size_t kq, const int8_t* a, const uint8_t* b,
                                   const int32_t* terms, const float* scale,
                                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
/* Needs AXLE_ISA_AVX512 (which includes VNNI). */
void axle_qu8_gemm_12x16c4__avx512(size_t m, size_t n, size_t kq, const int8_t* a, const uint8_t* b,
                                   const int32_t* terms, const float* scale,
                                   const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
/* The AVX-512 tile over a full strip b (16 columns) plus the first e (1..4)
 * columns of a second strip b2 (packed the same way), which land in y's
 * columns 16..16 + e - 1: as axle_qu8_gemm_12x16c4__avx512 on b, then on
 * b2 with nr = e at y + 16, but the weights are read once for both (a
 * map's narrow last strip: 7x7 and 14x14 maps). Needs AXLE_ISA_AVX512. */
#define AXLE_QU8_GEMM_EXTRA_MAX 4
void axle_qu8_gemm_12x16e4c4__avx512(size_t mr, size_t e, size_t kq, const int8_t* a,
                                     const uint8_t* b, const uint8_t* b2, const int32_t* terms,
                                     const float* scale, const axle_qu8_requant_t* rq, uint8_t* y,
                                     size_t ldy);
/* The same block on ymm with the VEX vpdpbusd: needs AXLE_ISA_AVX2_VNNI
 * exactly (a CPU at AXLE_ISA_AVX512 may lack AVX-VNNI). */
void axle_qu8_gemm_12x16c4__avxvnni(size_t m, size_t n, size_t kq, const int8_t* a,
                                    const uint8_t* b, const int32_t* terms, const float* scale,
                                    const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
/* Packs one column of kc rows as the one-column quad tiles read it: the
 * quad layout with NR = 1, (kc + 3) / 4 quads back to back. */
void axle_qu8_gemm_pack_b_1c4__scalar(size_t kc, const uint8_t* x, size_t rs, uint8_t* packed);

/* One output column (nr = 1) on K quads, b packed by
 * axle_qu8_gemm_pack_b_1c4__scalar: with VNNI (AXLE_ISA_AVX512) as
 * axle_qu8_gemm_6x1__avx2 on pairs, and with AVX2 widening the weights as
 * they load; the results are those of the 12 x 16 tile on the column
 * packed NR wide. */
void axle_qu8_gemm_12x1c4__avx2(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                const uint8_t* b, const int32_t* terms, const float* scale,
                                const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);
void axle_qu8_gemm_12x1c4__avx512(size_t mr, size_t nr, size_t kq, const int8_t* a,
                                  const uint8_t* b, const int32_t* terms, const float* scale,
                                  const axle_qu8_requant_t* rq, uint8_t* y, size_t ldy);

/* Unfolds rows [k0, k0 + kc) (channel x kernel tap) and columns [n0, n0 +
 * nc) (output pixels) of one image's and group's im2col matrix into dst,
 * row-major with row stride nc; padded taps read x_zero_point. x_group: the
 * group's first input channel. */
void axle_qu8_im2col_block(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                           uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                           uint8_t* dst);
/* The same, its stride-2 runs gathered with AVX2. */
void axle_qu8_im2col_block__avx2(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                                 uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                                 uint8_t* dst);
/* dst[i] = src[2 i] for i < count, reading no byte past src[2 count - 2]. */
void axle_qu8_gather_stride2__avx2(uint8_t* dst, const uint8_t* src, size_t count);

/* One output plane of a depthwise convolution: x_plane is the input
 * channel's plane, w its kernel taps as int16 (kernel volume rounded up to
 * even, the extra tap 0), term its bias - x_zero_point * sum w, scale its
 * requantisation scale. tmp: per-worker scratch of
 * axle_qu8_dwconv_tmp_size(p) bytes, 64-byte aligned (the AVX2 and
 * AVX-VNNI variants copy the plane, padded with x_zero_point, into it; the
 * AVX-512 one reads the plane in place and ignores tmp). The AVX2, AVX-VNNI
 * and AVX-512 variants take 2-D 3x3 kernels, dilation 1, stride 1 or 2 (the
 * same shapes, so one test decides for all). */
size_t axle_qu8_dwconv_tmp_size(const axle_f32_conv_params_t* p);
int axle_qu8_dwconv_3x3__avx2_supports(const axle_f32_conv_params_t* p);
typedef void (*axle_qu8_dwconv_plane_fn)(const axle_f32_conv_params_t* p,
                                         const uint8_t* x_plane, int32_t x_zero_point,
                                         const int16_t* w, int32_t term, float scale,
                                         const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                         void* tmp);
void axle_qu8_dwconv_plane__scalar(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                   int32_t x_zero_point, const int16_t* w, int32_t term,
                                   float scale, const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                   void* tmp);
void axle_qu8_dwconv_plane_3x3__avx2(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                     int32_t x_zero_point, const int16_t* w, int32_t term,
                                     float scale, const axle_qu8_requant_t* rq,
                                     uint8_t* y_plane, void* tmp);
/* Up to 16 output planes at once (channels 1..16, consecutive, depthwise
 * multiplier 1), for small planes: x is the first channel's input plane and
 * the others follow it (in[1] * in[2] bytes apart), y likewise for the
 * output planes. Channel c's taps (as for the plane kernels) are at w + c *
 * w_stride (w 4-byte aligned, w_stride even), its term at terms + c *
 * term_stride, its scale at scales[c]. Results are those of the plane
 * kernels. tmp: axle_qu8_dwconv16_tmp_size(p) bytes. Shapes: those of
 * axle_qu8_dwconv_3x3__avx2_supports with non-negative padding and 16 to
 * AXLE_QU8_DWCONV16_MAX_PIXELS pixels a plane (0 bytes otherwise). */
#define AXLE_QU8_DWCONV16_MAX_PIXELS 256
int axle_qu8_dwconv16_3x3__avx2_supports(const axle_f32_conv_params_t* p);
size_t axle_qu8_dwconv16_tmp_size(const axle_f32_conv_params_t* p);
void axle_qu8_dwconv16_3x3__avx2(const axle_f32_conv_params_t* p, const uint8_t* x, size_t channels,
                                 int32_t x_zero_point, const int16_t* w, size_t w_stride,
                                 const int32_t* terms, size_t term_stride, const float* scales,
                                 const axle_qu8_requant_t* rq, uint8_t* y, void* tmp);
/* Needs AXLE_ISA_AVX2_VNNI exactly (the VEX vpdpbusd). */
void axle_qu8_dwconv_plane_3x3__avxvnni(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                        int32_t x_zero_point, const int16_t* w, int32_t term,
                                        float scale, const axle_qu8_requant_t* rq, uint8_t* y_plane,
                                        void* tmp);
/* Needs AXLE_ISA_AVX512 (which includes VNNI). */
void axle_qu8_dwconv_plane_3x3__avx512(const axle_f32_conv_params_t* p, const uint8_t* x_plane,
                                       int32_t x_zero_point, const int16_t* w, int32_t term,
                                       float scale, const axle_qu8_requant_t* rq,
                                       uint8_t* y_plane, void* tmp);

/* Quantized addition with the arithmetic of DequantizeLinear, Add and
 * QuantizeLinear run in float32 one after the other (so it matches an
 * unfused QDQ graph bit for bit):
 *   v = (float)(a - a_zero_point) * a_scale + (float)(b - b_zero_point) * b_scale
 *   y = clamp(nearbyintf(v / y_scale) + y_zero_point, min, max)
 * with each multiply, the add and the divide rounded separately (no FMA
 * contraction). a and b are the same shape (no broadcasting). */
typedef struct axle_qu8_add_params_t {
  float a_scale, b_scale, y_scale;
  int32_t a_zero_point, b_zero_point, y_zero_point;
  uint8_t min, max;
} axle_qu8_add_params_t;

void axle_qu8_add__scalar(size_t n, const uint8_t* a, const uint8_t* b,
                          const axle_qu8_add_params_t* q, uint8_t* y);
void axle_qu8_add__avx2(size_t n, const uint8_t* a, const uint8_t* b,
                        const axle_qu8_add_params_t* q, uint8_t* y);
/* The variant for axle_kernels_isa(), split over par's threads. */
void axle_qu8_add(size_t n, const uint8_t* a, const uint8_t* b, const axle_qu8_add_params_t* q,
                  uint8_t* y, const axle_parallel_t* par);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_KERNELS_QU8_H_ */
