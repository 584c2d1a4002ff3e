/* im2col for the quantized convolution: blocks of the unfolded input, with
 * x_zero_point in the padded taps (the packed terms cancel it exactly, so
 * padding contributes 0 as the contract says). */
#include <string.h>

#include "axle_kernels_qu8.h"

typedef void (*gather2_fn)(uint8_t* dst, const uint8_t* src, size_t count);

static void gather_stride2(uint8_t* dst, const uint8_t* src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = src[2 * i];
}

/* Stride-2 runs (the stem's taps) go through gather2, which the ISA
 * variants vectorise; other strides copy one byte at a time. */
static void im2col_block(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                         uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                         uint8_t* dst, gather2_fn gather2) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
  const int64_t out1 = p->out[1], out2 = p->out[2], s2 = p->stride[2];
  for (size_t kk = 0; kk < kc; ++kk) {
    const int64_t k = (int64_t)(k0 + kk);
    const int64_t c = k / kvol, tap = k % kvol;
    const int64_t t0 = tap / (p->kernel[1] * p->kernel[2]);
    const int64_t t1 = tap / p->kernel[2] % p->kernel[1], t2 = tap % p->kernel[2];
    const uint8_t* xc = x_group + c * in_vol;
    /* Output columns o2 whose tap lands inside the row: [lo, hi). */
    const int64_t start2 = t2 * p->dilation[2] - p->pad[2];
    int64_t lo = start2 >= 0 ? 0 : (-start2 + s2 - 1) / s2;
    int64_t hi = start2 > p->in[2] - 1 ? 0 : (p->in[2] - 1 - start2) / s2 + 1;
    if (hi > out2) hi = out2;
    if (lo > hi) lo = hi;
    uint8_t* d = dst + kk * nc;
    int64_t left = (int64_t)nc, o2 = (int64_t)n0 % out2, row = (int64_t)n0 / out2;
    while (left > 0) {
      const int64_t run = out2 - o2 < left ? out2 - o2 : left;
      const int64_t o1 = row % out1, o0 = row / out1;
      const int64_t i0 = o0 * p->stride[0] - p->pad[0] + t0 * p->dilation[0];
      const int64_t i1 = o1 * p->stride[1] - p->pad[1] + t1 * p->dilation[1];
      if (i0 < 0 || i0 >= p->in[0] || i1 < 0 || i1 >= p->in[1]) {
        memset(d, x_zero_point, (size_t)run);
      } else {
        const uint8_t* xrow = xc + (i0 * p->in[1] + i1) * p->in[2];
        const int64_t a = lo > o2 ? lo : o2, b = hi < o2 + run ? hi : o2 + run;
        int64_t j = o2;
        for (; j < a; ++j) d[j - o2] = x_zero_point;
        if (s2 == 1) {
          if (b > j) memcpy(d + (j - o2), xrow + start2 + j, (size_t)(b - j));
          j = b > j ? b : j;
        } else if (s2 == 2) {
          if (b > j) gather2(d + (j - o2), xrow + start2 + 2 * j, (size_t)(b - j));
          j = b > j ? b : j;
        } else {
          for (; j < b; ++j) d[j - o2] = xrow[start2 + j * s2];
        }
        for (; j < o2 + run; ++j) d[j - o2] = x_zero_point;
      }
      d += run;
      left -= run;
      o2 = 0;
      ++row;
    }
  }
}

void axle_qu8_im2col_block(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                           uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                           uint8_t* dst) {
  im2col_block(p, x_group, x_zero_point, k0, kc, n0, nc, dst, gather_stride2);
}

void axle_qu8_im2col_block__avx2(const axle_f32_conv_params_t* p, const uint8_t* x_group,
                                 uint8_t x_zero_point, size_t k0, size_t kc, size_t n0, size_t nc,
                                 uint8_t* dst) {
  im2col_block(p, x_group, x_zero_point, k0, kc, n0, nc, dst, axle_qu8_gather_stride2__avx2);
}
