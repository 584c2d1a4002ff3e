/* Depthwise 3x3 convolution of one plane with AVX2/FMA, stride 1 or 2.
 *
 * The plane is first copied into a zero-padded buffer (per-worker scratch,
 * L1/L2 resident), so the inner loop has no edge cases at all: eight output
 * columns per step, nine FMAs, plain unaligned loads; stride 2 deinterleaves
 * even and odd columns with two shuffles. The copy costs one pass over data
 * the kernel has to read anyway, and the last group of a row (when the width
 * is not a multiple of 8) is stored with a mask. */
#include <immintrin.h>
#include <string.h>

#include "axle_kernels.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

int axle_f32_dwconv_3x3__avx2_fma_supports(const axle_f32_conv_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->kernel[1] == 3 &&
         p->kernel[2] == 3 && p->dilation[1] == 1 && p->dilation[2] == 1 &&
         p->stride[1] == p->stride[2] && (p->stride[1] == 1 || p->stride[1] == 2);
}

/* Even / odd floats of the 16 starting at x, in order. */
AXLE_AVX2 static inline __m256 even16(const float* x) {
  const __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
  return _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
}
AXLE_AVX2 static inline __m256 odd16(const float* x) {
  const __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
  return _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}

AXLE_AVX2 void axle_f32_dwconv_plane_3x3__avx2_fma(const axle_f32_conv_params_t* p,
                                                   const float* x_plane, const float* w,
                                                   float bias, const float* residual,
                                                   const axle_f32_epilogue_t* ep,
                                                   float* y_plane, float* tmp) {
  const int64_t s = p->stride[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t groups = (ow + 7) / 8;
  const int64_t rows = (oh - 1) * s + 3;
  const int64_t cols = groups * 8 * s + 2 + 16;
  /* Padded copy: buffer (r, c) holds input (r - pt, c - pl), or 0. */
  for (int64_t r = 0; r < rows; ++r) {
    float* d = tmp + r * cols;
    const int64_t iy = r - pt;
    if (iy < 0 || iy >= ih) {
      memset(d, 0, (size_t)cols * sizeof(float));
      continue;
    }
    const int64_t c0 = pl < 0 ? 0 : pl;          /* first column holding input */
    const int64_t x0 = pl < 0 ? -pl : 0;          /* its input column */
    int64_t n = iw - x0;
    if (n > cols - c0) n = cols - c0;
    if (n < 0) n = 0;
    memset(d, 0, (size_t)c0 * sizeof(float));
    memcpy(d + c0, x_plane + iy * iw + x0, (size_t)n * sizeof(float));
    memset(d + c0 + n, 0, (size_t)(cols - c0 - n) * sizeof(float));
  }
  const __m256 w00 = _mm256_set1_ps(w[0]), w01 = _mm256_set1_ps(w[1]), w02 = _mm256_set1_ps(w[2]);
  const __m256 w10 = _mm256_set1_ps(w[3]), w11 = _mm256_set1_ps(w[4]), w12 = _mm256_set1_ps(w[5]);
  const __m256 w20 = _mm256_set1_ps(w[6]), w21 = _mm256_set1_ps(w[7]), w22 = _mm256_set1_ps(w[8]);
  const __m256 vb = _mm256_set1_ps(bias);
  const __m256 vlo = _mm256_set1_ps(ep->min), vhi = _mm256_set1_ps(ep->max);
  const __m256 valpha = _mm256_set1_ps(ep->leaky_alpha);
  const int leaky = ep->leaky;
  /* Lanes of the last group that are inside the row. */
  const int64_t tail = ow - (groups - 1) * 8;
  const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail),
                                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* r0 = tmp + oy * s * cols;
    const float* r1 = r0 + cols;
    const float* r2 = r1 + cols;
    float* yrow = y_plane + oy * ow;
    const float* res = residual ? residual + oy * ow : NULL;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t c = gi * 8 * s;
      __m256 acc;
      if (s == 1) {
        acc = _mm256_fmadd_ps(w00, _mm256_loadu_ps(r0 + c), vb);
        acc = _mm256_fmadd_ps(w01, _mm256_loadu_ps(r0 + c + 1), acc);
        acc = _mm256_fmadd_ps(w02, _mm256_loadu_ps(r0 + c + 2), acc);
        acc = _mm256_fmadd_ps(w10, _mm256_loadu_ps(r1 + c), acc);
        acc = _mm256_fmadd_ps(w11, _mm256_loadu_ps(r1 + c + 1), acc);
        acc = _mm256_fmadd_ps(w12, _mm256_loadu_ps(r1 + c + 2), acc);
        acc = _mm256_fmadd_ps(w20, _mm256_loadu_ps(r2 + c), acc);
        acc = _mm256_fmadd_ps(w21, _mm256_loadu_ps(r2 + c + 1), acc);
        acc = _mm256_fmadd_ps(w22, _mm256_loadu_ps(r2 + c + 2), acc);
      } else {
        acc = _mm256_fmadd_ps(w00, even16(r0 + c), vb);
        acc = _mm256_fmadd_ps(w01, odd16(r0 + c), acc);
        acc = _mm256_fmadd_ps(w02, even16(r0 + c + 2), acc);
        acc = _mm256_fmadd_ps(w10, even16(r1 + c), acc);
        acc = _mm256_fmadd_ps(w11, odd16(r1 + c), acc);
        acc = _mm256_fmadd_ps(w12, even16(r1 + c + 2), acc);
        acc = _mm256_fmadd_ps(w20, even16(r2 + c), acc);
        acc = _mm256_fmadd_ps(w21, odd16(r2 + c), acc);
        acc = _mm256_fmadd_ps(w22, even16(r2 + c + 2), acc);
      }
      const int last = gi == groups - 1 && tail != 8;
      if (res)
        acc = _mm256_add_ps(acc, last ? _mm256_maskload_ps(res + gi * 8, tail_mask)
                                      : _mm256_loadu_ps(res + gi * 8));
      acc = _mm256_min_ps(vhi, _mm256_max_ps(vlo, acc));
      if (leaky) acc = _mm256_blendv_ps(acc, _mm256_mul_ps(acc, valpha), acc);
      if (last)
        _mm256_maskstore_ps(yrow + gi * 8, tail_mask, acc);
      else
        _mm256_storeu_ps(yrow + gi * 8, acc);
    }
  }
}
