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

/* Global pooling over the size contiguous elements of each of channels rows. */
void axle_f32_global_avgpool_scalar(size_t channels, size_t size, const float* x, float* y);
void axle_f32_global_maxpool_scalar(size_t channels, size_t size, const float* x, float* y);

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

#ifdef __cplusplus
}
#endif
#endif /* AXLE_KERNELS_H_ */
