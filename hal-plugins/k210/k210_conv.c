#include "k210_conv.h"

#include <stdlib.h>
#include <string.h>

#include "k210_scratch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define K210_HAVE_X86 1
#endif

/* Output pixels per kernel call: bounds the packed-tap scratch so it stays
 * in L2, and is a multiple of the AVX2 kernel's 16-pixel block. */
#define TILE 64u
#define BLOCK 16u

void k210_conv_plan_free(k210_conv_plan_t* plan) {
  free(plan->sum_w);
  free(plan->wpack);
  free(plan->xpack);
  free(plan->padded);
  free(plan->dot);
  memset(plan, 0, sizeof(*plan));
}

int k210_conv_have_simd(void) {
#ifdef K210_HAVE_X86
  return __builtin_cpu_supports("avx2");
#else
  return 0;
#endif
}

/* Rows of the sum array: oc dot products, then the tap sums (one row for a
 * normal layer, whose sum of inputs is shared by every output channel; one
 * per channel for a depthwise layer). */
static uint32_t sum_rows(const k210_conv_geom_t* g) { return g->depthwise ? g->out_ch : 1; }

static uint32_t src_stride(const k210_conv_geom_t* g) { return g->width + g->ksize - 1; }
static size_t src_plane(const k210_conv_geom_t* g) {
  return (size_t)src_stride(g) * (g->height + g->ksize - 1);
}

/* ------------------------------------------------------------------------ */
/* Scalar reference: the definition, tap by tap.                             */
/* ------------------------------------------------------------------------ */

static void tile_ref(const k210_conv_plan_t* pl, const uint8_t* src, uint32_t p0, uint32_t n,
                     int32_t* dot) {
  const k210_conv_geom_t* g = &pl->g;
  uint32_t k = g->ksize, kk = k * k, pw = src_stride(g);
  size_t plane = src_plane(g);
  int32_t* sums = dot + (size_t)g->out_ch * TILE;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t y = (p0 + i) / g->width, x = (p0 + i) % g->width;
    size_t at = (size_t)y * pw + x;
    for (uint32_t oc = 0; oc < g->out_ch; ++oc) {
      uint32_t ic0 = g->depthwise ? oc : 0, ic1 = g->depthwise ? oc + 1 : g->in_ch;
      const uint8_t* w = pl->weights + (size_t)oc * pl->taps;
      int64_t d = 0, s = 0;
      for (uint32_t ic = ic0; ic < ic1; ++ic, w += kk) {
        const uint8_t* in = src + ic * plane + at;
        for (uint32_t ky = 0; ky < k; ++ky)
          for (uint32_t kx = 0; kx < k; ++kx) {
            uint32_t v = in[ky * pw + kx];
            d += (int64_t)v * w[ky * k + kx];
            s += v;
          }
      }
      dot[(size_t)oc * TILE + i] = (int32_t)d;
      /* A normal layer's tap sum does not depend on oc: keep the first. */
      if (g->depthwise || oc == 0) sums[(size_t)(g->depthwise ? oc : 0) * TILE + i] = (int32_t)s;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* AVX2: taps in int16 pairs, vpmaddwd against weight pairs.                 */
/* ------------------------------------------------------------------------ */

#ifdef K210_HAVE_X86
/* Packs the taps of input channels [c0, c0 + taps/kk) for pixels [p0, p0+n)
 * as x[block][pair][16 pixels][2] int16; missing taps and pixels are 0. */
__attribute__((target("avx2"))) static void pack_taps(const k210_conv_plan_t* pl,
                                                      const uint8_t* src, uint32_t c0,
                                                      uint32_t taps, uint32_t pairs, uint32_t p0,
                                                      uint32_t n, int16_t* x) {
  const k210_conv_geom_t* g = &pl->g;
  uint32_t k = g->ksize, kk = k * k, pw = src_stride(g);
  size_t plane = src_plane(g);
  uint32_t blocks = (n + BLOCK - 1) / BLOCK;
  memset(x, 0, (size_t)blocks * pairs * BLOCK * 2 * sizeof(int16_t));
  for (uint32_t t = 0; t < taps; ++t) {
    uint32_t ic = c0 + t / kk, ky = t % kk / k, kx = t % k;
    const uint8_t* base = src + ic * plane + (size_t)ky * pw + kx;
    int16_t* col = x + (size_t)(t / 2) * BLOCK * 2 + (t & 1);
    for (uint32_t i = 0; i < n;) {
      /* A run of pixels on one image line is contiguous in the source. */
      uint32_t y = (p0 + i) / g->width, xx = (p0 + i) % g->width;
      uint32_t run = g->width - xx;
      if (run > n - i) run = n - i;
      const uint8_t* s = base + (size_t)y * pw + xx;
      for (uint32_t j = 0; j < run; ++j) {
        uint32_t px = i + j;
        col[((size_t)(px / BLOCK) * pairs * BLOCK + px % BLOCK) * 2] = s[j];
      }
      i += run;
    }
  }
}

/* out[r][0..blocks*16) for 4 weight rows w[r][pairs]: sums over pairs of
 * int16 products, 4 rows x 16 pixels per step. */
__attribute__((target("avx2"))) static void gemm4(const int32_t* w, uint32_t pairs,
                                                  const int16_t* x, uint32_t blocks,
                                                  int32_t* out) {
  for (uint32_t b = 0; b < blocks; ++b) {
    const int16_t* xb = x + (size_t)b * pairs * BLOCK * 2;
    __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00;
    __m256i a20 = a00, a21 = a00, a30 = a00, a31 = a00;
    for (uint32_t p = 0; p < pairs; ++p) {
      __m256i x0 = _mm256_loadu_si256((const __m256i*)(xb + (size_t)p * 32));
      __m256i x1 = _mm256_loadu_si256((const __m256i*)(xb + (size_t)p * 32 + 16));
      __m256i w0 = _mm256_set1_epi32(w[p]);
      __m256i w1 = _mm256_set1_epi32(w[pairs + p]);
      __m256i w2 = _mm256_set1_epi32(w[2 * (size_t)pairs + p]);
      __m256i w3 = _mm256_set1_epi32(w[3 * (size_t)pairs + p]);
      a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(x0, w0));
      a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(x1, w0));
      a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(x0, w1));
      a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(x1, w1));
      a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(x0, w2));
      a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(x1, w2));
      a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(x0, w3));
      a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(x1, w3));
    }
    int32_t* o = out + (size_t)b * BLOCK;
    _mm256_storeu_si256((__m256i*)o, a00);
    _mm256_storeu_si256((__m256i*)(o + 8), a01);
    _mm256_storeu_si256((__m256i*)(o + TILE), a10);
    _mm256_storeu_si256((__m256i*)(o + TILE + 8), a11);
    _mm256_storeu_si256((__m256i*)(o + 2 * TILE), a20);
    _mm256_storeu_si256((__m256i*)(o + 2 * TILE + 8), a21);
    _mm256_storeu_si256((__m256i*)(o + 3 * TILE), a30);
    _mm256_storeu_si256((__m256i*)(o + 3 * TILE + 8), a31);
  }
}

static void tile_avx2(const k210_conv_plan_t* pl, const uint8_t* src, uint32_t p0, uint32_t n,
                      int32_t* dot) {
  const k210_conv_geom_t* g = &pl->g;
  uint32_t blocks = (n + BLOCK - 1) / BLOCK;
  if (!g->depthwise) {
    /* Rows 0..oc-1 are the weights, row oc is all ones (the tap sum), the
     * rest pad to a multiple of 4 and land in scratch rows past the sums. */
    pack_taps(pl, src, 0, pl->taps, pl->pairs, p0, n, pl->xpack);
    for (uint32_t r = 0; r < pl->rows; r += 4)
      gemm4(pl->wpack + (size_t)r * pl->pairs, pl->pairs, pl->xpack, blocks,
            dot + (size_t)r * TILE);
    return;
  }
  /* Depthwise: each channel is its own 4-row product {weights, ones, 0, 0}. */
  int32_t* tmp = dot + (size_t)2 * g->out_ch * TILE;
  uint32_t kk = g->ksize * g->ksize;
  for (uint32_t c = 0; c < g->out_ch; ++c) {
    pack_taps(pl, src, c, kk, pl->pairs, p0, n, pl->xpack);
    gemm4(pl->wpack + (size_t)c * 4 * pl->pairs, pl->pairs, pl->xpack, blocks, tmp);
    memcpy(dot + (size_t)c * TILE, tmp, n * sizeof(int32_t));
    memcpy(dot + (size_t)(g->out_ch + c) * TILE, tmp + TILE, n * sizeof(int32_t));
  }
}
#endif

/* Weight rows as int16 pairs (low half = even tap). */
static void pack_row(int32_t* dst, const uint8_t* w, uint32_t taps, uint32_t pairs, int ones) {
  for (uint32_t p = 0; p < pairs; ++p) {
    uint32_t t = 2 * p;
    uint32_t lo = t < taps ? (ones ? 1u : w[t]) : 0u;
    uint32_t hi = t + 1 < taps ? (ones ? 1u : w[t + 1]) : 0u;
    dst[p] = (int32_t)(lo | hi << 16);
  }
}

/* Sizes scratch, sums the weights and packs them for the chosen kernel. */
static int prepare(k210_conv_plan_t* pl, const k210_conv_geom_t* g, const uint8_t* weights,
                   int simd) {
  int ok = 1;
  pl->g = *g;
  pl->weights = weights;
  pl->simd = simd;
  uint32_t kk = g->ksize * g->ksize;
  pl->taps = g->depthwise ? kk : g->in_ch * kk;
  pl->pairs = (pl->taps + 1) / 2;
  pl->rows = g->depthwise ? 4 * g->out_ch : (g->out_ch + 1 + 3) / 4 * 4;
  ok &= (pl->sum_w = k210_grow(pl->sum_w, &pl->cap_sum_w, sizeof(int64_t) * g->out_ch)) != NULL;
  /* dot rows: oc products + tap sums, or the AVX2 padding rows, or a
   * depthwise 4-row temporary after the sums. */
  size_t rows = g->out_ch + sum_rows(g);
  if (simd && pl->rows > rows) rows = pl->rows;
  if (simd && g->depthwise) rows = 2 * (size_t)g->out_ch + 4;
  ok &= (pl->dot = k210_grow(pl->dot, &pl->cap_dot, rows * TILE * sizeof(int32_t))) != NULL;
  if (g->ksize == 3)
    ok &= (pl->padded = k210_grow(pl->padded, &pl->cap_padded, src_plane(g) * g->in_ch)) != NULL;
  if (simd) {
    ok &= (pl->wpack = k210_grow(pl->wpack, &pl->cap_wpack, (size_t)pl->rows * pl->pairs * sizeof(int32_t))) != NULL;
    ok &= (pl->xpack = k210_grow(pl->xpack, &pl->cap_xpack, (size_t)TILE * pl->pairs * 2 * sizeof(int16_t))) != NULL;
  }
  if (!ok) return 0;
  for (uint32_t oc = 0; oc < g->out_ch; ++oc) {
    int64_t s = 0;
    for (uint32_t t = 0; t < pl->taps; ++t) s += weights[(size_t)oc * pl->taps + t];
    pl->sum_w[oc] = s;
  }
  if (simd) {
    memset(pl->wpack, 0, (size_t)pl->rows * pl->pairs * sizeof(int32_t));
    for (uint32_t oc = 0; oc < g->out_ch; ++oc) {
      const uint8_t* w = weights + (size_t)oc * pl->taps;
      if (g->depthwise) {
        pack_row(pl->wpack + (size_t)oc * 4 * pl->pairs, w, pl->taps, pl->pairs, 0);
        pack_row(pl->wpack + ((size_t)oc * 4 + 1) * pl->pairs, w, pl->taps, pl->pairs, 1);
      } else {
        pack_row(pl->wpack + (size_t)oc * pl->pairs, w, pl->taps, pl->pairs, 0);
      }
    }
    if (!g->depthwise)
      pack_row(pl->wpack + (size_t)g->out_ch * pl->pairs, weights, pl->taps, pl->pairs, 1);
  }
  return 1;
}

/* The input as the kernels read it: 3x3 layers see a one-pixel border of
 * pad_value around every channel. */
static const uint8_t* bordered(k210_conv_plan_t* pl, const uint8_t* input) {
  const k210_conv_geom_t* g = &pl->g;
  if (g->ksize == 1) return input;
  uint32_t pw = src_stride(g);
  size_t plane = src_plane(g);
  memset(pl->padded, g->pad_value, plane * g->in_ch);
  for (uint32_t c = 0; c < g->in_ch; ++c)
    for (uint32_t y = 0; y < g->height; ++y)
      memcpy(pl->padded + c * plane + (size_t)(y + 1) * pw + 1,
             input + ((size_t)c * g->height + y) * g->width, g->width);
  return pl->padded;
}

int k210_conv_run(k210_conv_plan_t* plan, const k210_conv_geom_t* g, const uint8_t* weights,
                  const k210_acc_args_t* acc, const k210_bn_t* bn, const k210_act_table_t* act,
                  k210_act_rule_t rule, int simd, const uint8_t* input, uint8_t* out) {
#ifndef K210_HAVE_X86
  simd = 0;
#endif
  if (simd && !k210_conv_have_simd()) simd = 0;
  if (!prepare(plan, g, weights, simd)) return 0;
  const uint8_t* src = bordered(plan, input);
  size_t pixels = (size_t)g->width * g->height;
  int32_t* sums = plan->dot + (size_t)g->out_ch * TILE;
  int ascending = k210_act_ascending(act);
  for (size_t p0 = 0; p0 < pixels; p0 += TILE) {
    uint32_t n = (uint32_t)(pixels - p0 < TILE ? pixels - p0 : TILE);
#ifdef K210_HAVE_X86
    if (simd)
      tile_avx2(plan, src, (uint32_t)p0, n, plan->dot);
    else
#endif
      tile_ref(plan, src, (uint32_t)p0, n, plan->dot);
    for (uint32_t oc = 0; oc < g->out_ch; ++oc) {
      const int32_t* d = plan->dot + (size_t)oc * TILE;
      const int32_t* s = sums + (size_t)(g->depthwise ? oc : 0) * TILE;
      uint8_t* o = out + (size_t)oc * pixels + p0;
      const k210_bn_t b = bn[oc];
      int64_t sum_w = plan->sum_w[oc];
      if (ascending && rule == K210_ACT_RULE_V02) {
        /* The common case, spelled out so the compiler inlines it all. */
        for (uint32_t i = 0; i < n; ++i) {
          int64_t v = k210_batchnorm(&b, k210_accumulate(acc, d[i], s[i], sum_w));
          o[i] = k210_act_output(act, k210_act_select_ascending(act, v, K210_ACT_RULE_V02), v, K210_ACT_RULE_V02);
        }
      } else {
        for (uint32_t i = 0; i < n; ++i) {
          int64_t v = k210_batchnorm(&b, k210_accumulate(acc, d[i], s[i], sum_w));
          int seg = ascending ? k210_act_select_ascending(act, v, rule) : k210_act_select(act, v, rule);
          o[i] = k210_act_output(act, seg, v, rule);
        }
      }
    }
  }
  return 1;
}
