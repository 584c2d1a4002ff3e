/* 2-D max pooling of one plane with AVX2: the plane is copied into a buffer
 * padded with -inf (so windows never test bounds), then eight output
 * columns are reduced per step; stride 2 deinterleaves even and odd input
 * columns. max(x, best) keeps best when x is NaN, which is the reference's
 * rule (NaN taps are skipped). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "axle_kernels.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))

int axle_f32_maxpool2d__avx2_supports(const axle_f32_pool_params_t* p) {
  return p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1 && p->dilation[1] == 1 &&
         p->dilation[2] == 1 && p->stride[1] == p->stride[2] &&
         (p->stride[1] == 1 || p->stride[1] == 2) && p->kernel[2] <= 16;
}

/* Buffer geometry: rows every window reaches, and columns up to the last
 * 8-wide output group plus the 16-float loads of the deinterleave. */
static void geometry(const axle_f32_pool_params_t* p, int64_t* rows, int64_t* cols) {
  const int64_t s = p->stride[2], groups = (p->out[2] + 7) / 8;
  *rows = (p->out[1] - 1) * p->stride[1] + p->kernel[1];
  *cols = groups * 8 * s + p->kernel[2] + 16;
}

size_t axle_f32_maxpool2d_tmp_size(const axle_f32_pool_params_t* p) {
  if (!axle_f32_maxpool2d__avx2_supports(p)) return 0;
  int64_t rows, cols;
  geometry(p, &rows, &cols);
  return (size_t)(rows * cols);
}

AXLE_AVX2 static inline __m256 deinterleave(const float* x, int odd) {
  const __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
  const __m256 t = odd ? _mm256_shuffle_ps(lo, hi, 0xDD) : _mm256_shuffle_ps(lo, hi, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
}

AXLE_AVX2 void axle_f32_maxpool2d_plane__avx2(const axle_f32_pool_params_t* p,
                                              const float* x_plane, float* y_plane, float* tmp) {
  const int64_t s = p->stride[2], kh = p->kernel[1], kw = p->kernel[2];
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  int64_t rows, cols;
  geometry(p, &rows, &cols);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  /* Padded copy: buffer (r, c) holds input (r - pt, c - pl), or -inf. */
  for (int64_t r = 0; r < rows; ++r) {
    float* d = tmp + r * cols;
    const int64_t iy = r - pt;
    int64_t c = 0;
    if (iy >= 0 && iy < ih) {
      for (; c < pl && c < cols; ++c) d[c] = -INFINITY;
      int64_t n = iw < cols - c ? iw : cols - c;
      memcpy(d + c, x_plane + iy * iw, (size_t)n * sizeof(float));
      c += n;
    }
    for (; c + 8 <= cols; c += 8) _mm256_storeu_ps(d + c, ninf);
    for (; c < cols; ++c) d[c] = -INFINITY;
  }
  const int64_t groups = (ow + 7) / 8, tail = ow - (groups - 1) * 8;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* r0 = tmp + oy * p->stride[1] * cols;
    float* yrow = y_plane + oy * ow;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t c = gi * 8 * s;
      __m256 best = ninf;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const float* row = r0 + ky * cols + c;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const __m256 v = s == 1 ? _mm256_loadu_ps(row + kx)
                                  : deinterleave(row + (kx & ~(int64_t)1), (int)(kx & 1));
          best = _mm256_max_ps(v, best);
        }
      }
      if (gi == groups - 1 && tail != 8) {
        float t[8] __attribute__((aligned(32)));
        _mm256_store_ps(t, best);
        for (int64_t j = 0; j < tail; ++j) yrow[gi * 8 + j] = t[j];
      } else {
        _mm256_storeu_ps(yrow + gi * 8, best);
      }
    }
  }
}
