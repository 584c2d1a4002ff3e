/* Direct 3x3 stride-2 convolution of few input channels with AVX-512: the
 * stem of MobileNet-style networks (3 -> 32 channels at 224x224), in bands
 * of output rows, reading the image in place.
 *
 * Why: through im2col the stem's GEMM has K = 27, and unfolding its 27
 * rows per pixel (a stride-2 gather, written to a buffer beyond L1 and read
 * back by the tiles) took about a quarter of the expansion's time in
 * MobileNetV2's stem chain (1 thread, Zen 5: 142-150 us, of which the
 * unfold ~40). Here each tile builds its operand from the input rows in
 * registers: per (input channel, kernel row) and 16 pixels, two loads of
 * the row give the three tap columns (the even columns, the odd ones, and
 * the even ones a lane on: two permutes and one lane shift with the float
 * after), each feeding one FMA per output channel of the tile. The tile is
 * 8 output channels x 32 pixels of one output row (16 at a row's end); its
 * weights, repacked per call as [k][8] from the plan's packed panels of 6
 * rows, are broadcast from L1.
 * Padding never branches per lane: columns outside the row are masked off
 * the loads (reading 0), rows outside the plane are skipped. */
#include <immintrin.h>
#include <string.h>

#include "axle_kernels.h"
#include "masked_at.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))
#define AXLE_INLINE __attribute__((always_inline)) inline

enum { CIN_MAX = 4, K_MAX = 9 * CIN_MAX, BLOCK = 8, BLOCKS = 8 };

int axle_f32_conv3x3s2_supports(const axle_f32_conv_plan_t* plan, const axle_f32_epilogue_t* ep) {
  const axle_f32_conv_params_t* p = &plan->p;
  return plan->algo == AXLE_F32_CONV_IM2COL && !plan->transposed && p->groups == 1 &&
         p->in_channels <= CIN_MAX && p->in[0] == 1 && p->out[0] == 1 && p->kernel[1] == 3 &&
         p->kernel[2] == 3 && p->stride[1] == 2 && p->stride[2] == 2 && p->dilation[1] == 1 &&
         p->dilation[2] == 1 && p->pad[2] >= 0 && p->pad[2] <= 2 && p->pad[1] >= 0 &&
         (!ep || !ep->residual) && axle_f32_gemm_kc(plan->k) == plan->k;
}

/* The weights of channels [c0, c0 + BLOCK) as [k][BLOCK] (channels past m
 * zero), from the GEMM's packed A (one K block: panels of MR rows, each
 * [k][MR]), and their biases. */
static void repack(const float* packed, const float* bias, size_t m, size_t k, size_t c0,
                   float w[K_MAX][BLOCK], float b[BLOCK]) {
  enum { MR = AXLE_F32_GEMM_MR };
  for (size_t i = 0; i < BLOCK; ++i) {
    const size_t c = c0 + i;
    const float* panel = packed + c / MR * MR * k + c % MR;
    for (size_t t = 0; t < k; ++t) w[t][i] = c < m ? panel[t * MR] : 0.0f;
    b[i] = c < m && bias ? bias[c] : 0.0f;
  }
}

typedef struct tile_masks_t {
  __mmask16 ld[4]; /* the vector loads of a row: two per 16 pixels */
  __mmask16 st[2]; /* the pixels stored, per 16 */
  int last;        /* the column after the loads lies inside the row */
  int inside;      /* every vector load whole: plain loads */
} tile_masks_t;

/* The operand of the tiles at pixels ox0 .. ox0 + 16 NV - 1 of output row
 * oy: for k = (input channel, kernel row, kernel column), NV vectors of the
 * inputs under those pixels (zeros for a row outside the plane), built
 * once for all the row's channel blocks. Output j reads columns s + 2j,
 * s + 2j + 1 and s + 2j + 2: the even columns of two loads, the odd ones,
 * and the even ones a lane on. */
AXLE_AVX512 static AXLE_INLINE void build_taps(const int NV, const axle_f32_conv_params_t* p,
                                               const float* x, int64_t oy, int64_t ox0,
                                               const tile_masks_t* m, __m512 taps[K_MAX][2]) {
  const int64_t h = p->in[1], wd = p->in[2], s = 2 * ox0 - p->pad[2];
  const float zero[1] = {0.0f};
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t c = 0; c < p->in_channels; ++c) {
    for (int64_t ky = 0; ky < 3; ++ky) {
      __m512(*t)[2] = taps + (c * 3 + ky) * 3;
      const int64_t iy = 2 * oy - p->pad[1] + ky;
      if (iy < 0 || iy >= h) {
        for (int kx = 0; kx < 3; ++kx)
          for (int v = 0; v < NV; ++v) t[kx][v] = _mm512_setzero_ps();
        continue;
      }
      const float* row = x + (c * h + iy) * wd;
      for (int v = 0; v < NV; ++v) {
        __m512 lo, hi;
        if (m->inside) {
          lo = _mm512_loadu_ps(row + s + 32 * v);
          hi = _mm512_loadu_ps(row + s + 32 * v + 16);
        } else {
          lo = _mm512_maskz_loadu_ps(m->ld[2 * v], axle_f32_masked_at(row, s + 32 * v));
          hi = _mm512_maskz_loadu_ps(m->ld[2 * v + 1], axle_f32_masked_at(row, s + 32 * v + 16));
        }
        t[0][v] = _mm512_permutex2var_ps(lo, even, hi);
        t[1][v] = _mm512_permutex2var_ps(lo, odd, hi);
      }
      /* Only lane 0 of the column after: one float, not a masked vector
       * load (at the network's input those were several times slower). */
      const __m512 after = _mm512_castps128_ps512(_mm_load_ss(m->last ? row + s + 32 * NV : zero));
      for (int v = 0; v < NV; ++v)
        t[2][v] = _mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(v + 1 < NV ? t[0][v + 1] : after),
                                _mm512_castps_si512(t[0][v]), 1));
    }
  }
}

/* One tile: output channels [c0, c0 + rows) (block w, b) at the pixels of
 * taps (16 NV); its row of channel c goes to y + c * y_stride. Each
 * broadcast weight feeds NV FMAs: with one per FMA (16 channels x 16
 * pixels) the broadcasts bound the tile at ~0.7 of the FMA rate (Zen 5);
 * and the operand is built once per row group, not per channel block. */
AXLE_AVX512 static AXLE_INLINE void tile(const int NV, size_t k, const __m512 taps[K_MAX][2],
                                         const float w[K_MAX][BLOCK], const float b[BLOCK],
                                         const axle_f32_epilogue_t* ep, const tile_masks_t* m,
                                         size_t rows, float* y, size_t y_stride) {
  __m512 acc[BLOCK][2];
#pragma GCC unroll 8
  for (int i = 0; i < BLOCK; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_set1_ps(b[i]);
  for (size_t t = 0; t < k; ++t) {
#pragma GCC unroll 8
    for (int i = 0; i < BLOCK; ++i) {
      const __m512 wi = _mm512_set1_ps(w[t][i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(wi, taps[t][v], acc[i][v]);
    }
  }
  const __m512 lo = _mm512_set1_ps(ep->min), hi = _mm512_set1_ps(ep->max);
  const __m512 alpha = _mm512_set1_ps(ep->leaky_alpha);
#pragma GCC unroll 8
  for (size_t i = 0; i < rows; ++i) {
    for (int v = 0; v < NV; ++v) {
      /* max/min return their second operand for a NaN: NaN passes the clamp. */
      __m512 r = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][v]));
      if (ep->leaky)
        r = _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_LT_OQ), r, alpha);
      _mm512_mask_storeu_ps(y + i * y_stride + 16 * v, m->st[v], r);
    }
  }
}

/* The input rows output row oy reads that output row oy - 1 did not, at
 * the columns of the tile at ox0: into L1 ahead of their tiles. The image
 * comes from beyond the L2 (a network's input, written once); read in
 * place nine short runs at a time, its loads had bound the kernel (2.5x
 * slower in MobileNetV2 than over an image in L2), where im2col's long
 * sequential runs kept the prefetchers ahead. */
enum { PREFETCH_ROWS = 2 };
/* Inlined early: GCC's interprocedural analysis takes a function whose
 * only effects are prefetches for one without any, and drops its calls. */
static inline __attribute__((always_inline)) void prefetch_rows(const axle_f32_conv_params_t* p,
                                                                const float* x, int64_t oy,
                                                                int64_t ox0) {
  const int64_t h = p->in[1], wd = p->in[2], col = 2 * ox0;
  for (int64_t iy = 2 * oy - p->pad[1] + 1; iy <= 2 * oy - p->pad[1] + 2; ++iy) {
    if (iy < 0 || iy >= h) continue;
    for (int64_t c = 0; c < p->in_channels; ++c) {
      const float* row = x + (c * h + iy) * wd;
      for (int64_t q = 0; q < 64 && col + q < wd; q += 16)
        _mm_prefetch((const char*)axle_f32_masked_at(row, col + q), _MM_HINT_T0);
    }
  }
}

AXLE_AVX512 void axle_f32_conv3x3s2_rows_8x32__avx512(const axle_f32_conv_plan_t* plan,
                                                      const float* x, const float* packed,
                                                      const axle_f32_epilogue_t* ep, int64_t r0,
                                                      int64_t r1, float* y, size_t y_stride) {
  const axle_f32_conv_params_t* p = &plan->p;
  const int64_t ow = p->out[2], wd = p->in[2];
  axle_f32_epilogue_t none;
  if (!ep) {
    axle_f32_epilogue_init(&none);
    ep = &none;
  }
  float w[BLOCKS][K_MAX][BLOCK], b[BLOCKS][BLOCK];
  __m512 taps[K_MAX][2];
  /* Up to BLOCKS channel blocks at a time, their weights in L1 with the
   * input rows a band reads. */
  for (size_t c0 = 0; c0 < plan->m; c0 += BLOCKS * BLOCK) {
    const size_t blocks =
        (plan->m - c0 + BLOCK - 1) / BLOCK < BLOCKS ? (plan->m - c0 + BLOCK - 1) / BLOCK : BLOCKS;
    for (size_t j = 0; j < blocks; ++j)
      repack(packed, ep->bias, plan->m, plan->k, c0 + j * BLOCK, w[j], b[j]);
    for (int64_t oy = r0; oy < r1; ++oy) {
      float* yr = y + (oy - r0) * ow;
      for (int64_t ox0 = 0; ox0 < ow; ox0 += 32) {
        /* 32 pixels a tile, or 16 where no more than 16 are left. */
        const int nv = ow - ox0 > 16 ? 2 : 1;
        const int64_t s = 2 * ox0 - p->pad[2];
        tile_masks_t m;
        for (int q = 0; q < 2 * nv; ++q) m.ld[q] = axle_f32_lanes16_inside(s + 16 * q, wd);
        m.st[0] = axle_f32_lanes16_inside(ox0, ow);
        m.st[1] = axle_f32_lanes16_inside(ox0 + 16, ow);
        m.last = s + 32 * nv >= 0 && s + 32 * nv < wd;
        m.inside = s >= 0 && s + 32 * nv <= wd;
        prefetch_rows(p, x, oy + PREFETCH_ROWS, ox0);
        if (nv == 2)
          build_taps(2, p, x, oy, ox0, &m, taps);
        else
          build_taps(1, p, x, oy, ox0, &m, taps);
        for (size_t j = 0; j < blocks; ++j) {
          const size_t first = c0 + j * BLOCK;
          const size_t rows = plan->m - first < BLOCK ? plan->m - first : BLOCK;
          float* yt = yr + first * y_stride + ox0;
          if (nv == 2)
            tile(2, plan->k, taps, w[j], b[j], ep, &m, rows, yt, y_stride);
          else
            tile(1, plan->k, taps, w[j], b[j], ep, &m, rows, yt, y_stride);
        }
      }
    }
  }
}
