/* Depthwise 3x3 convolution of one plane with AVX-512, stride 1 or 2, read
 * in place. "Same" stride-1 planes take the flat walk of dwconv_avx2.c on
 * 16 lanes, or from 32 wide a slide along the rows (plane_s1_slide);
 * stride-2 planes with padding 1 and more than 8 outputs a row a slide too
 * (plane_s2_slide); the others a row-blocked walk: four output rows per
 * pass, each input row loaded once for every output row it feeds, the
 * weights held in registers, and at stride 2 three 16-aligned loads
 * deinterleaved by three two-source permutes per row (loads bound these
 * kernels: the per-row walk before it took 12 loads, most of them split
 * across cache lines, and reloaded a weight per FMA; 1.75x on stride-2
 * planes in L2). Opmasks replace what AVX2 builds from compares and
 * blends: taps in the padding are masked loads (masked-off lanes read
 * nothing, so they may lie outside the plane, and give 0) and a row's last
 * group is a masked store. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "dwconv_rows.h"
#include "masked_at.h"

#define AXLE_AVX512 __attribute__((target("avx2,fma,avx512f")))
/* The row-blocked walk's pieces must inline: the variants differ only in
 * constants (stride, masking) that fold away there. */
#define AXLE_INLINE __attribute__((always_inline)) inline

/* Sixteen floats at row + c; m: NULL, or the lanes of the load inside the
 * row (the others read as 0). */
AXLE_AVX512 static inline __m512 load16(const float* row, int64_t c, const __mmask16* m) {
  if (!m) return _mm512_loadu_ps(row + c);
  return _mm512_maskz_loadu_ps(*m, axle_f32_masked_at(row, c));
}

/* Even / odd floats of the 32 in lo:hi, in order. */
AXLE_AVX512 static inline __m512 even_of(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(lo, idx, hi);
}
AXLE_AVX512 static inline __m512 odd_of(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_ps(lo, idx, hi);
}

/* How the row walk gathers a row's three tap columns for 16 outputs whose
 * leftmost tap is column c, and the offsets from c of its three loads:
 *   ROW_S1      stride 1: loads at c, c + 1, c + 2
 *   ROW_S2_EVEN stride 2, c even (no left padding): 48 columns from c;
 *               left = even, mid = odd, right = even one lane on
 *   ROW_S2_ODD  stride 2, c odd (padding 1): 32 columns from c + 1 and
 *               the 16 before; left = odd one lane back, mid = even,
 *               right = odd
 * The stride-2 forms load 16-aligned blocks (whole cache lines when the
 * row is aligned): loads, not shuffles, bound these kernels. */
enum { ROW_S1 = 0, ROW_S2_EVEN = 1, ROW_S2_ODD = 2 };
static const int64_t k_load_at[3][3] = {{0, 1, 2}, {0, 16, 32}, {-15, 1, 17}};

/* A plane's constants. Each per-plane kernel works on a local copy: through
 * the caller's pointer GCC must assume the output stores may change them,
 * and reloaded the bias, clamp bounds and tail mask after every store,
 * where the loads waited on them (Zen 5, one plane alone, per 16 outputs:
 * the stride-1 slide 8 x 56 in L2 2.47 -> 2.30 ns, in L1 2.33 -> 2.21, 8
 * x 112 1.70 -> 1.59; stride 2 56 -> 28 4.33 -> 4.21, 14 -> 7 (the narrow
 * walk) 10.43 -> 9.50-9.74; the "same" walk at 7x7 and 12x12 and the row
 * walk 0-2 %). Taken by value instead, the kernels kept the reloads. */
typedef struct dw_plane_t {
  __m512 w[9];
  __m512 bias, lo, hi, alpha;
  int leaky;
  int64_t iw;
  __mmask16 tail; /* lanes of a row's last column group */
} dw_plane_t;

/* Clamp and leaky. */
AXLE_AVX512 static inline __m512 activate(const dw_plane_t* d, __m512 v) {
  /* max/min return their second operand for a NaN: NaN passes the clamp. */
  v = _mm512_min_ps(d->hi, _mm512_max_ps(d->lo, v));
  if (d->leaky)
    v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, d->alpha);
  return v;
}

/* Residual, clamp, leaky and the store of the lanes m of v at y. */
AXLE_AVX512 static inline void finish(const dw_plane_t* d, __m512 v, const float* res, float* y,
                                      __mmask16 m) {
  const int full = m == 0xFFFF;
  if (res) v = _mm512_add_ps(v, full ? _mm512_loadu_ps(res) : _mm512_maskz_loadu_ps(m, res));
  v = activate(d, v);
  if (full)
    _mm512_storeu_ps(y, v);
  else
    _mm512_mask_storeu_ps(y, m, v);
}

/* The nine weights as named values: indexed from an array, the compiler
 * keeps them in memory and every FMA reloads its weight, and loads are what
 * these kernels run out of. */
typedef struct dw_taps_t {
  __m512 w00, w01, w02, w10, w11, w12, w20, w21, w22;
} dw_taps_t;
#define AXLE_KROW(k) w->w##k##0, w->w##k##1, w->w##k##2

/* The three tap columns of one input row for 16 outputs, as values: in
 * an array the compiler keeps them in memory. */
typedef struct dw_row_t {
  __m512 left, mid, right;
} dw_row_t;

/* acc + wa * v.left + wb * v.mid + wc * v.right. */
AXLE_AVX512 static AXLE_INLINE __m512 taps(__m512 acc, __m512 wa, __m512 wb, __m512 wc,
                                           dw_row_t v) {
  acc = _mm512_fmadd_ps(wa, v.left, acc);
  acc = _mm512_fmadd_ps(wb, v.mid, acc);
  return _mm512_fmadd_ps(wc, v.right, acc);
}

/* The tap columns of row `row` for the 16 outputs whose leftmost tap is
 * column c, gathered by form k (ROW_*). m: NULL (every load inside the
 * row), or the masks of the loads at k_load_at[k]. */
AXLE_AVX512 static AXLE_INLINE dw_row_t row_vectors(int k, const float* row, int64_t c,
                                                    const __mmask16* m) {
  const int64_t* at = k_load_at[k];
  dw_row_t v;
#define AXLE_LOAD(i) load16(row, c + at[i], m ? m + (i) : NULL)
  const __m512 l0 = AXLE_LOAD(0), l1 = AXLE_LOAD(1), l2 = AXLE_LOAD(2);
#undef AXLE_LOAD
  if (k == ROW_S1) {
    v.left = l0;
    v.mid = l1;
    v.right = l2;
  } else if (k == ROW_S2_EVEN) {
    const __m512i next = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    v.left = even_of(l0, l1);
    v.mid = odd_of(l0, l1);
    v.right = _mm512_permutex2var_ps(v.left, next, l2);
  } else {
    const __m512i back = _mm512_setr_epi32(31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    v.mid = even_of(l1, l2);
    v.right = odd_of(l1, l2);
    v.left = _mm512_permutex2var_ps(v.right, back, l0);
  }
  return v;
}

/* Sixteen outputs at one column group of four output rows from oy (the
 * first `rows` stored, lanes sm): input rows from iy0 = oy * s - pt,
 * columns from c. Each input row is loaded once and feeds every output
 * row whose window holds it (stride 1: 6 rows for 4 outputs instead of 12);
 * a[r] sums the bias and kernel rows 0-1 of output r, b[r] kernel row 2,
 * so 8 FMA chains are in flight. Inlined with constant flags, so the hot
 * variant compiles without tests: full (all input rows inside, 4 rows
 * stored), plain (no residual, no leaky), m NULL (no column masks), sm
 * 0xFFFF. */
AXLE_AVX512 static AXLE_INLINE void block4(const dw_plane_t* d, const dw_taps_t* w, int k,
                                           int full, int plain, const float* x, int64_t ih,
                                           int64_t iy0, int64_t c, const __mmask16* m,
                                           int64_t rows, __mmask16 sm, const float* res,
                                           int64_t ow, float* y) {
  const int64_t iw = d->iw, s = k == ROW_S1 ? 1 : 2;
  __m512 a0 = d->bias, a1 = d->bias, a2 = d->bias, a3 = d->bias;
  __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0, b3 = b0;
  dw_row_t v;
  /* Rows in the padding add nothing. */
#define AXLE_IN(t)                                    \
  ((full || (iy0 + (t) >= 0 && iy0 + (t) < ih)) && \
   ((v = row_vectors(k, x + (iy0 + (t)) * iw, c, m)), 1))
#define AXLE_TAPS(acc, k) acc = taps(acc, AXLE_KROW(k), v)
  AXLE_DW_ROWS4(s, a0, a1, a2, a3, b0, b1, b2, b3);
#undef AXLE_TAPS
#undef AXLE_IN
  if (plain) {
    /* The clamp alone: see activate. */
#define AXLE_STORE(r, v) \
  _mm512_mask_storeu_ps(y + (r) * ow, sm, _mm512_min_ps(d->hi, _mm512_max_ps(d->lo, (v))))
    AXLE_STORE(0, _mm512_add_ps(a0, b0));
    AXLE_STORE(1, _mm512_add_ps(a1, b1));
    AXLE_STORE(2, _mm512_add_ps(a2, b2));
    AXLE_STORE(3, _mm512_add_ps(a3, b3));
#undef AXLE_STORE
    return;
  }
  finish(d, _mm512_add_ps(a0, b0), res, y, sm);
  if (full || rows > 1) finish(d, _mm512_add_ps(a1, b1), res ? res + ow : NULL, y + ow, sm);
  if (full || rows > 2)
    finish(d, _mm512_add_ps(a2, b2), res ? res + 2 * ow : NULL, y + 2 * ow, sm);
  if (full || rows > 3)
    finish(d, _mm512_add_ps(a3, b3), res ? res + 3 * ow : NULL, y + 3 * ow, sm);
}

/* Any plane at stride 1 or 2, four output rows per pass. */
AXLE_AVX512 static void plane_rows(const dw_plane_t* plane, int64_t s,
                                   const axle_f32_conv_params_t* p, const float* x,
                                   const float* residual, float* y) {
  const dw_plane_t local = *plane; /* see dw_plane_t */
  const dw_plane_t* d = &local;
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], pl = p->pad[2];
  const int64_t groups = (ow + 15) / 16;
  const int k = s == 1 ? ROW_S1 : pl % 2 ? ROW_S2_ODD : ROW_S2_EVEN;
  const int64_t* at = k_load_at[k];
  /* Column groups [g_lo, g_hi) load only columns inside the row (their
   * first load's first column c + at[0] >= 0, their last load's last one
   * < iw) and store a whole vector. */
  const int64_t step = 16 * s, first = at[0] - pl, last = at[2] + 15 - pl;
  int64_t g_lo = first >= 0 ? 0 : (-first + step - 1) / step;
  int64_t g_hi = iw - 1 - last < 0 ? 0 : (iw - 1 - last) / step + 1;
  const int64_t g_full = d->tail == 0xFFFF ? groups : groups - 1;
  if (g_hi > g_full) g_hi = g_full;
  if (g_lo > g_hi) g_lo = g_hi;
  const dw_taps_t w = {d->w[0], d->w[1], d->w[2], d->w[3], d->w[4],
                       d->w[5], d->w[6], d->w[7], d->w[8]};
  const int plain = !residual && !d->leaky;
  /* One call per form with constant flags. */
#define AXLE_BLOCK(FULL, PLAIN, M, ROWS, SM, RES)                                          \
  do {                                                                                     \
    if (k == ROW_S1)                                                                       \
      block4(d, &w, ROW_S1, FULL, PLAIN, x, ih, iy0, c, M, ROWS, SM, RES, ow, yg);         \
    else if (k == ROW_S2_EVEN)                                                             \
      block4(d, &w, ROW_S2_EVEN, FULL, PLAIN, x, ih, iy0, c, M, ROWS, SM, RES, ow, yg);    \
    else                                                                                   \
      block4(d, &w, ROW_S2_ODD, FULL, PLAIN, x, ih, iy0, c, M, ROWS, SM, RES, ow, yg);     \
  } while (0)
  for (int64_t oy = 0; oy < oh; oy += 4) {
    const int64_t rows = oh - oy < 4 ? oh - oy : 4, iy0 = oy * s - pt;
    const int full = rows == 4 && iy0 >= 0 && iy0 + 3 * s + 3 <= ih;
    const float* res = residual ? residual + oy * ow : NULL;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t c = gi * step - pl;
      float* yg = y + oy * ow + gi * 16;
      if (full && plain && gi >= g_lo && gi < g_hi) {
        AXLE_BLOCK(1, 1, NULL, 4, 0xFFFF, NULL);
        continue;
      }
      const __mmask16 sm = gi == groups - 1 ? d->tail : (__mmask16)0xFFFF;
      __mmask16 m[3];
      for (int i = 0; i < 3; ++i) m[i] = axle_f32_lanes16_inside(c + at[i], iw);
      if (full && plain)
        AXLE_BLOCK(1, 1, m, 4, sm, NULL); /* the border groups of those rows */
      else
        AXLE_BLOCK(0, 0, m, rows, sm, res ? res + gi * 16 : NULL);
    }
  }
#undef AXLE_BLOCK
}

/* Lanes with lo <= v < hi. */
AXLE_AVX512 static inline __mmask16 in_range(__m512i v, int64_t lo, int64_t hi) {
  return _mm512_cmpge_epi32_mask(v, _mm512_set1_epi32((int)lo)) &
         _mm512_cmplt_epi32_mask(v, _mm512_set1_epi32((int)hi));
}

/* Stride 1 with an output as wide as the input ("same" padding): the
 * window of output o = oy * w + ox starts at input o + (t - pt) * w +
 * (u - pl) for tap (t, u), so the plane is one flat run of vectors that
 * ignores row boundaries (see dwconv_avx2.c). Runs of vectors whose taps
 * all lie inside use plain loads; any other vector has each lane track its
 * (oy, ox) to mask the taps that fall into the padding. */
AXLE_AVX512 static void plane_same_s1(const dw_plane_t* plane, const axle_f32_conv_params_t* p,
                                      const float* x, const float* residual, float* y) {
  const dw_plane_t local = *plane; /* see dw_plane_t */
  const dw_plane_t* d = &local;
  const int64_t w = p->in[2], h = p->in[1], pt = p->pad[1], pl = p->pad[2];
  const int64_t n = p->out[1] * w;
  /* Vectors starting at ox0 in [pl, last] of rows [pt, h + pt - 2) have
   * all their taps inside the plane. */
  const int64_t last = w + pl - 18;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i vw = _mm512_set1_epi32((int)w), one = _mm512_set1_epi32(1);
  int64_t o = 0, ox0 = 0, oy0 = 0; /* (oy0, ox0): output o, lane 0 */
  while (o < n) {
    if (oy0 >= pt && oy0 < h + pt - 2 && ox0 >= pl && ox0 <= last) {
      const int64_t count = (last - ox0) / 16 + 1;
      const float* at = x + o + (0 - pt) * w - pl;
      for (int64_t i = 0; i < count; ++i, at += 16) {
        __m512 acc[3];
        for (int t = 0; t < 3; ++t) {
          acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
          for (int u = 0; u < 3; ++u)
            acc[t] = _mm512_fmadd_ps(d->w[3 * t + u], _mm512_loadu_ps(at + t * w + u), acc[t]);
        }
        const int64_t oi = o + 16 * i;
        finish(d, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]),
               residual ? residual + oi : NULL, y + oi, 0xFFFF);
      }
      o += 16 * count;
      ox0 += 16 * count;
    } else {
      /* Lanes past the row end belong to the next row (several rows on when
       * the row is narrower than a vector). */
      __m512i ox = _mm512_add_epi32(_mm512_set1_epi32((int)ox0), lane);
      __m512i oy = _mm512_set1_epi32((int)oy0);
      for (;;) {
        const __mmask16 wrap = _mm512_cmpge_epi32_mask(ox, vw);
        if (!wrap) break;
        ox = _mm512_mask_sub_epi32(ox, wrap, ox, vw);
        oy = _mm512_mask_add_epi32(oy, wrap, oy, one);
      }
      __mmask16 cm[3], rm[3];
      for (int k = 0; k < 3; ++k) {
        cm[k] = in_range(ox, pl - k, w + pl - k);
        rm[k] = in_range(oy, pt - k, h + pt - k);
      }
      __m512 acc[3];
      for (int t = 0; t < 3; ++t) {
        /* Through uintptr_t: the tap may point before the plane. */
        const uintptr_t at = (uintptr_t)x + (uintptr_t)((o + (t - pt) * w - pl) * 4);
        acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
        for (int u = 0; u < 3; ++u)
          acc[t] = _mm512_fmadd_ps(
              d->w[3 * t + u],
              _mm512_maskz_loadu_ps(rm[t] & cm[u], (const float*)(at + (uintptr_t)u * 4)), acc[t]);
      }
      const __mmask16 m = axle_f32_lanes16_inside(0, n - o);
      finish(d, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]),
             residual ? residual + o : NULL, y + o, m);
      o += 16;
      ox0 += 16;
    }
    while (ox0 >= w) {
      ox0 -= w;
      ++oy0;
    }
  }
}

/* The input rows that output rows oy and, where `two`, oy + 1 read at
 * stride s (s + 3 of them): row[t] as an address (it may lie outside the
 * plane) and in[t] (all lanes inside it, or none). Returns whether all the
 * rows the one or two outputs read are inside. */
static int pair_rows(const float* x, int64_t ih, int64_t iw, int64_t s, int64_t pt, int64_t oy,
                     int two, uintptr_t row[5], __mmask16 in[5]) {
  int full = 1;
  for (int64_t t = 0; t < s + 3; ++t) {
    const int64_t iy = s * oy - pt + t;
    const int inside = iy >= 0 && iy < ih;
    if (t < 3 || two) full &= inside;
    in[t] = inside ? (__mmask16)0xFFFF : (__mmask16)0;
    row[t] = (uintptr_t)x + (uintptr_t)(iy * iw * (int64_t)sizeof(float));
  }
  return full;
}

/* pair_rows for a pair of output rows (oy, oy + 1) whose s + 3 input rows
 * all lie inside the plane, every pair but a plane's first and last: the
 * addresses alone, for the slides' full variants, which read no masks (in
 * stays unset). Returns 0, setting nothing, for any other pair. pair_rows'
 * tests and masks per row were the bulk of the ~16 % of the stride-1
 * slide's samples outside its vector loop in a 56x56 band chain (`perf`);
 * with this path MobileNetV2's band-chain blocks alone ran 0.7-1.3 %
 * faster (Zen 5, 1 thread, means of six alternating rounds: 16 -> 96 ->
 * 24 at 112x112 0.303 -> 0.301 ms, 24 -> 144 -> 24 at 56x56 0.258 ->
 * 0.256, 24 -> 144 -> 32 0.158 -> 0.156, 32 -> 192 -> 32 at 28x28 0.104
 * -> 0.103); the network within its noise. */
static AXLE_INLINE int inner_pair(const float* x, int64_t ih, int64_t iw, int64_t s, int64_t pt,
                                  int64_t oy, uintptr_t row[5]) {
  const int64_t iy0 = s * oy - pt;
  if (iy0 < 0 || iy0 + s + 2 >= ih) return 0;
  const uintptr_t at = (uintptr_t)(x + iy0 * iw), step = (uintptr_t)iw * sizeof(float);
  for (int64_t t = 0; t < s + 3; ++t) row[t] = at + (uintptr_t)t * step;
  return 1;
}

/* The planes a slide runs in one call: plane i reads x + i x_stride with
 * the kernel at w + 9 i and the bias bias[i] (0 where bias is NULL), adds
 * the residual plane residual + i y_stride (residual may be NULL) and
 * writes y + i y_stride. */
typedef struct dw_run_t {
  size_t count;
  const float* x;
  size_t x_stride;
  const float* w;
  const float* bias;
  const float* residual;
  float* y;
  size_t y_stride;
} dw_run_t;

/* Plane i's kernel, as named values (dw_taps_t), and its bias into d. */
AXLE_AVX512 static AXLE_INLINE dw_taps_t run_taps(const dw_run_t* r, size_t i, dw_plane_t* d) {
  const float* w = r->w + 9 * i;
  d->bias = _mm512_set1_ps(r->bias ? r->bias[i] : 0.0f);
  const dw_taps_t k = {_mm512_set1_ps(w[0]), _mm512_set1_ps(w[1]), _mm512_set1_ps(w[2]),
                       _mm512_set1_ps(w[3]), _mm512_set1_ps(w[4]), _mm512_set1_ps(w[5]),
                       _mm512_set1_ps(w[6]), _mm512_set1_ps(w[7]), _mm512_set1_ps(w[8])};
  return k;
}

/* Column group g of R (1 or 2) output rows of plane_s1_slide from input
 * rows row[0..R+1] (output row r reads rows r..r+2): the groups p[t]
 * before, c[t] at and n[t] after g of each input row, its tap columns
 * shifted from them once for both output rows. Each output row sums its
 * three kernel rows apart and then adds them: as one chain of nine FMAs
 * (36 cycles) a row, too few chains were in flight for two whole-width FMA
 * pipes. Zen 5, per 16 outputs: 144 planes of 8 x 56 (a band) 2.62-2.64
 * -> 2.50-2.56 ns, 32 of 12 x 112 1.72-1.75 -> 1.66-1.68, 192 of 28 x 28
 * 2.96-2.97 -> 2.77-2.82 (on Zen 4, half-rate FMAs, it measured even). */
AXLE_AVX512 static AXLE_INLINE void slide_group(const dw_plane_t* d, const dw_taps_t* k,
                                                const int R, int plain, const __m512 p[4],
                                                const __m512 c[4], const __m512 n[4], int64_t g,
                                                __mmask16 sm, const float* res, int64_t w,
                                                float* y) {
  __m512 acc[2], part[2][3];
  for (int t = 0; t < R + 2; ++t) {
    const __m512 left = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(c[t]), _mm512_castps_si512(p[t]), 15));
    const __m512 right = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(n[t]), _mm512_castps_si512(c[t]), 1));
    for (int r = 0; r < R; ++r) {
      const int kr = t - r;
      if (kr < 0 || kr > 2) continue;
      const __m512 wl = kr == 0 ? k->w00 : kr == 1 ? k->w10 : k->w20;
      const __m512 wm = kr == 0 ? k->w01 : kr == 1 ? k->w11 : k->w21;
      const __m512 wr = kr == 0 ? k->w02 : kr == 1 ? k->w12 : k->w22;
      __m512 a = kr == 0 ? _mm512_fmadd_ps(wl, left, d->bias) : _mm512_mul_ps(wl, left);
      a = _mm512_fmadd_ps(wm, c[t], a);
      a = _mm512_fmadd_ps(wr, right, a);
      part[r][kr] = a;
    }
  }
  for (int r = 0; r < R; ++r)
    acc[r] = _mm512_add_ps(_mm512_add_ps(part[r][0], part[r][1]), part[r][2]);
  for (int r = 0; r < R; ++r) {
    float* yr = y + r * w + 16 * g;
    if (plain)
      _mm512_mask_storeu_ps(yr, sm, _mm512_min_ps(d->hi, _mm512_max_ps(d->lo, acc[r])));
    else
      finish(d, acc[r], res ? res + r * w + 16 * g : NULL, yr, sm);
  }
}

/* R output rows of plane_s1_slide, group by group, inlined
 * with constant flags: full (all R + 2 input rows inside: plain loads) and
 * plain (no residual, no leaky). */
AXLE_AVX512 static AXLE_INLINE void slide_rows(const dw_plane_t* d, const dw_taps_t* k, const int R,
                                               int full, int plain, const uintptr_t row[5],
                                               const __mmask16 in[5], int64_t groups,
                                               const float* res, int64_t w, float* y) {
  __m512 p[4], c[4], n[4];
  /* A group past the row's end masks its loads by the columns alone where
   * every row is inside (full), as slide2_group's last one does. */
#define AXLE_GROUP(t, g, m)                                                                \
  (full && (m) == 0xFFFF ? _mm512_loadu_ps((const float*)(row[t] + (uintptr_t)(g)*64))     \
                         : _mm512_maskz_loadu_ps((full ? (__mmask16)0xFFFF : in[t]) & (m), \
                                                 (const float*)(row[t] + (uintptr_t)(g)*64)))
  if (groups == 1) {
    for (int t = 0; t < R + 2; ++t) {
      p[t] = n[t] = _mm512_setzero_ps();
      c[t] = AXLE_GROUP(t, 0, d->tail);
    }
    slide_group(d, k, R, plain, p, c, n, 0, d->tail, res, w, y);
    return;
  }
  for (int t = 0; t < R + 2; ++t) {
    p[t] = _mm512_setzero_ps();
    c[t] = AXLE_GROUP(t, 0, 0xFFFF);
  }
  int64_t g = 0;
  for (; g + 2 < groups; ++g) {
    for (int t = 0; t < R + 2; ++t) n[t] = AXLE_GROUP(t, g + 1, 0xFFFF);
    slide_group(d, k, R, plain, p, c, n, g, 0xFFFF, res, w, y);
    for (int t = 0; t < R + 2; ++t) {
      p[t] = c[t];
      c[t] = n[t];
    }
  }
  for (int t = 0; t < R + 2; ++t) n[t] = AXLE_GROUP(t, g + 1, d->tail);
  slide_group(d, k, R, plain, p, c, n, g, 0xFFFF, res, w, y);
  for (int t = 0; t < R + 2; ++t) {
    p[t] = c[t];
    c[t] = n[t];
    n[t] = _mm512_setzero_ps();
  }
  slide_group(d, k, R, plain, p, c, n, g + 1, d->tail, res, w, y);
#undef AXLE_GROUP
}

/* Stride 1 with left padding 1 and an output as wide as the input: row by
 * row, each input row's 16-float groups loaded once, in order, and the
 * left and right tap columns made from them by lane shifts (valignd of the
 * previous and next group) instead of loads one float to either side,
 * which straddle cache lines: with those nine loads, six of them split,
 * loads bounded the flat walk above at ~18 cycles per 16 outputs on
 * Sapphire Rapids. With the shifts: a 112x112 plane in L2 5.5 -> 3.6 ns
 * per 16 outputs, 32 such planes from memory 1.3x, 56x56 planes 1.17x
 * faster than the flat walk over several planes. Padding needs no tests
 * in the loop: a row outside the plane, the group before the first and the
 * lanes past the row's end load as zeros.
 * Two output rows at a time (2026-11-26, morning): their middle two input
 * rows' loads and shifts serve both, 19 -> 17 operations on the vector
 * ports per 16 outputs; per 16 outputs, one plane in L1 / L2: 112x112 3.6
 * -> 2.9-3.2 ns, 56x56 4.8 -> 3.85, 224x224 3.25 -> 2.5. */
AXLE_AVX512 static void plane_s1_slide(const dw_plane_t* plane, const axle_f32_conv_params_t* p,
                                       const dw_run_t* r) {
  dw_plane_t local = *plane; /* see dw_plane_t */
  const dw_plane_t* d = &local;
  const int64_t ih = p->in[1], w = p->in[2], oh = p->out[1], pt = p->pad[1];
  const int64_t groups = (w + 15) / 16;
  const int plain = !r->residual && !d->leaky;
  for (size_t i = 0; i < r->count; ++i) {
    const dw_taps_t k = run_taps(r, i, &local);
    const float* x = r->x + i * r->x_stride;
    float* y = r->y + i * r->y_stride;
    const float* residual = r->residual ? r->residual + i * r->y_stride : NULL;
    for (int64_t oy = 0; oy < oh; oy += 2) {
      const int two = oy + 1 < oh;
      uintptr_t row[5];
      __mmask16 in[5];
      if (two && plain && inner_pair(x, ih, w, 1, pt, oy, row)) {
        slide_rows(d, &k, 2, 1, 1, row, in, groups, NULL, w, y + oy * w);
        continue;
      }
      const int full = pair_rows(x, ih, w, 1, pt, oy, two, row, in);
      const float* res = residual ? residual + oy * w : NULL;
      if (two && full && plain)
        slide_rows(d, &k, 2, 1, 1, row, in, groups, NULL, w, y + oy * w);
      else if (two)
        slide_rows(d, &k, 2, 0, 0, row, in, groups, res, w, y + oy * w);
      else
        slide_rows(d, &k, 1, 0, 0, row, in, groups, res, w, y + oy * w);
    }
  }
}

/* Whether plane_s1_slide takes p: stride 1, left padding 1, output as wide
 * as the input, rows of 14 or more. Narrower rows leave the slide mostly
 * empty vectors, where the flat walk fills whole vectors across rows with
 * masks shared by a call's planes. Against that walk, over runs of planes:
 * the one-row slide was 1.25x slower at 14x14, as fast at 28x28, 1.17x
 * faster at 56x56 and 1.3-1.55x at 112x112; the two-row one 1.15x faster
 * at 14x14 (one masked group a row; 576 planes 8.0 -> 6.6 ns per 16
 * outputs), 1.35x at 16x16 and 1.3x at 28x28 (192 planes 6.5 -> 5.05). In
 * MobileNetV2 the 28x28 layers ran ~11 us faster each at 1 thread, the
 * 14x14 ones 3-7 us each at 2 threads (at 1 thread they are channels-last,
 * see conv_chain.c). */
static int slides(const axle_f32_conv_params_t* p) {
  return p->stride[2] == 1 && p->pad[2] == 1 && p->out[2] == p->in[2] && p->in[2] >= 14;
}

/* Column group g (16 outputs; lanes sm stored) of R (1 or 2) output rows
 * of plane_s2_slide from input rows row[0..2R]
 * (lanes in[t] of each: all or none; output row r reads rows 2r..2r+2),
 * inlined with constant flags as slide_rows. Output group g takes input
 * columns 32 g - 1 .. 32 g + 31: the middle taps are the even columns of
 * the two 16-float groups at 32 g, the right taps their odd columns, and
 * the left taps those odd columns one lane on, the last of the group
 * before (valignd) coming in at lane 0. Two output rows share their middle
 * input row's loads and shuffles. whole: no column past the row's end;
 * rows_in: every input row inside the plane, so that a group reaching past
 * the row's end masks its loads by the columns alone. The row masks, read
 * per load, had made such groups the slowest part of these planes (Zen 5,
 * per 16 outputs: 144 planes 56 -> 28, half of whose groups reach past the
 * end, 4.96-5.07 -> 4.20-4.25 ns; 28 -> 14 7.05-7.09 -> 5.60-5.82; 112 ->
 * 56 3.54-3.78 -> 3.32-3.36). */
AXLE_AVX512 static AXLE_INLINE void slide2_group(const dw_plane_t* d, const dw_taps_t* k,
                                                 const int R, int whole, int rows_in, int plain,
                                                 const uintptr_t row[5], const __mmask16 in[5],
                                                 __m512 prev[5], int64_t g, __mmask16 sm,
                                                 const __mmask16 cols[2], const float* res,
                                                 int64_t ow, float* y) {
  __m512 acc[2][3];
  for (int t = 0; t <= 2 * R; ++t) {
    const float* at = (const float*)(row[t] + (uintptr_t)(g * 128));
    __m512 lo, hi;
    if (whole) {
      lo = _mm512_loadu_ps(at);
      hi = _mm512_loadu_ps(at + 16);
    } else {
      const __mmask16 rm = rows_in ? (__mmask16)0xFFFF : in[t];
      lo = _mm512_maskz_loadu_ps(rm & cols[0], at);
      hi = _mm512_maskz_loadu_ps(rm & cols[1], at + 16);
    }
    const __m512 mid = even_of(lo, hi), right = odd_of(lo, hi);
    const __m512 left = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(right), _mm512_castps_si512(prev[t]), 15));
    prev[t] = right;
    /* Input row t is kernel row kr of output row (t - kr) / 2. */
    for (int kr = 0; kr < 3; ++kr) {
      const int r = (t - kr) / 2;
      if (t < kr || (t - kr) % 2 || r >= R) continue;
      const __m512 wl = kr == 0 ? k->w00 : kr == 1 ? k->w10 : k->w20;
      const __m512 wm = kr == 0 ? k->w01 : kr == 1 ? k->w11 : k->w21;
      const __m512 wr = kr == 0 ? k->w02 : kr == 1 ? k->w12 : k->w22;
      __m512 a = kr == 0 ? _mm512_fmadd_ps(wl, left, d->bias) : _mm512_mul_ps(wl, left);
      a = _mm512_fmadd_ps(wm, mid, a);
      acc[r][kr] = _mm512_fmadd_ps(wr, right, a);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 v = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), acc[r][2]);
    float* yr = y + r * ow + 16 * g;
    if (plain)
      _mm512_mask_storeu_ps(yr, sm, _mm512_min_ps(d->hi, _mm512_max_ps(d->lo, v)));
    else
      finish(d, v, res ? res + r * ow + 16 * g : NULL, yr, sm);
  }
}

/* R output rows of plane_s2_slide, group by group; full: all their input
 * rows inside the plane. Only the last group can read past the row's end:
 * `last` holds its two loads' column masks. */
AXLE_AVX512 static AXLE_INLINE void slide2_rows(const dw_plane_t* d, const dw_taps_t* k,
                                                const int R, int full, int plain,
                                                const uintptr_t row[5], const __mmask16 in[5],
                                                int64_t groups, const __mmask16 last[2],
                                                const float* res, int64_t ow, float* y) {
  __m512 prev[5];
  for (int t = 0; t <= 2 * R; ++t) prev[t] = _mm512_setzero_ps();
  const __mmask16 all[2] = {0xFFFF, 0xFFFF};
  int64_t g = 0;
  for (; g + 1 < groups; ++g)
    slide2_group(d, k, R, full, full, plain, row, in, prev, g, 0xFFFF, all, res, ow, y);
  slide2_group(d, k, R, 0, full, plain, row, in, prev, g, d->tail, last, res, ow, y);
}

/* Stride 2 with left padding 1 and an output of (iw + 1) / 2 columns
 * (MobileNetV2's 112 -> 56 and 56 -> 28 planes, which its chains run in
 * bands): two output rows at a time, row by row across as plane_s1_slide,
 * two aligned loads and three shuffles per input row and 16 outputs, the
 * weights in registers. The row-blocked walk spilled on these (27 cycles
 * per 16 outputs for a 112x112 plane in L2). Its loops mirror
 * plane_s1_slide's: one body for both, the stride a constant in each
 * instance, compiled 2-4 % slower on band planes (10 x 56 at stride 1 7.7
 * -> 8.0 cycles per 16 outputs, 9 x 56 at stride 2 13.2 -> 13.5). */
AXLE_AVX512 static void plane_s2_slide(const dw_plane_t* plane, const axle_f32_conv_params_t* p,
                                       const dw_run_t* r) {
  dw_plane_t local = *plane; /* see dw_plane_t */
  const dw_plane_t* d = &local;
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2], pt = p->pad[1];
  const int64_t groups = (ow + 15) / 16;
  const int plain = !r->residual && !d->leaky;
  const __mmask16 last[2] = {axle_f32_lanes16_inside(32 * (groups - 1), iw),
                             axle_f32_lanes16_inside(32 * (groups - 1) + 16, iw)};
  for (size_t i = 0; i < r->count; ++i) {
    const dw_taps_t k = run_taps(r, i, &local);
    const float* x = r->x + i * r->x_stride;
    float* y = r->y + i * r->y_stride;
    const float* residual = r->residual ? r->residual + i * r->y_stride : NULL;
    for (int64_t oy = 0; oy < oh; oy += 2) {
      const int two = oy + 1 < oh;
      uintptr_t row[5];
      __mmask16 in[5];
      if (two && plain && inner_pair(x, ih, iw, 2, pt, oy, row)) {
        slide2_rows(d, &k, 2, 1, 1, row, in, groups, last, NULL, ow, y + oy * ow);
        continue;
      }
      const int full = pair_rows(x, ih, iw, 2, pt, oy, two, row, in);
      const float* res = residual ? residual + oy * ow : NULL;
      if (two && full && plain)
        slide2_rows(d, &k, 2, 1, 1, row, in, groups, last, NULL, ow, y + oy * ow);
      else if (two)
        slide2_rows(d, &k, 2, 0, 0, row, in, groups, last, res, ow, y + oy * ow);
      else
        slide2_rows(d, &k, 1, 0, 0, row, in, groups, last, res, ow, y + oy * ow);
    }
  }
}

/* Whether plane_s2_slide takes p. */
static int slides2(const axle_f32_conv_params_t* p) {
  return p->stride[1] == 2 && p->stride[2] == 2 && p->pad[2] == 1 &&
         p->out[2] == (p->in[2] + 1) / 2 && p->out[2] > 8;
}

/* Stride 2 with output rows of at most 8 (the 14x14 -> 7x7 planes): two
 * output rows per vector, row oy in lanes 0-7 and oy + 1 in lanes 8-15.
 * even_of / odd_of of loads at the same columns of the two windows' rows
 * (2 input rows apart) give both halves with the permutes of one row, so
 * these planes take half the vectors of the row-by-row walk, which would
 * fill 7 of 16 lanes. */
AXLE_AVX512 static void plane_s2_narrow(const dw_plane_t* plane, const axle_f32_conv_params_t* p,
                                        const float* x, const float* residual, float* y) {
  const dw_plane_t local = *plane; /* see dw_plane_t */
  const dw_plane_t* d = &local;
  const int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  const int64_t pt = p->pad[1], c = -p->pad[2];
  /* 16 columns from c and 16 from c + 2 hold the taps of up to 8 outputs. */
  const __mmask16 m[2] = {axle_f32_lanes16_inside(c, iw), axle_f32_lanes16_inside(c + 2, iw)};
  const __mmask16 first = axle_f32_lanes16_inside(0, ow), second = (__mmask16)(first << 8);
  for (int64_t oy = 0; oy < oh; oy += 2) {
    const int two = oy + 1 < oh;
    __m512 acc[3];
    for (int t = 0; t < 3; ++t) {
      __m512 v[2][2]; /* [load at c, c + 2][output row oy, oy + 1] */
      for (int r = 0; r < 2; ++r) {
        const int64_t iy = (oy + r) * 2 - pt + t;
        const int inside = iy >= 0 && iy < ih && (r == 0 || two);
        for (int k = 0; k < 2; ++k)
          v[k][r] = inside ? load16(x + iy * iw, c + 2 * k, &m[k]) : _mm512_setzero_ps();
      }
      acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
      acc[t] = _mm512_fmadd_ps(d->w[3 * t], even_of(v[0][0], v[0][1]), acc[t]);
      acc[t] = _mm512_fmadd_ps(d->w[3 * t + 1], odd_of(v[0][0], v[0][1]), acc[t]);
      acc[t] = _mm512_fmadd_ps(d->w[3 * t + 2], even_of(v[1][0], v[1][1]), acc[t]);
    }
    __m512 out = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]);
    /* Row oy + 1 starts ow floats after row oy, in lane 8: its lanes are
     * addressed from 8 floats before it, through uintptr_t as that may lie
     * before the plane. */
    const int64_t o = oy * ow;
    const uintptr_t back = (uintptr_t)((o + ow - 8) * (int64_t)sizeof(float));
    if (residual) {
      __m512 r = _mm512_maskz_loadu_ps(first, residual + o);
      if (two) r = _mm512_mask_loadu_ps(r, second, (const float*)((uintptr_t)residual + back));
      out = _mm512_add_ps(out, r);
    }
    out = activate(d, out);
    _mm512_mask_storeu_ps(y + o, first, out);
    if (two) _mm512_mask_storeu_ps((float*)((uintptr_t)y + back), second, out);
  }
}

/* The constants of p's planes under epilogue ep; the kernel and the bias
 * are a plane's own (the slides set them per plane of their run). */
AXLE_AVX512 static void plane_consts(const axle_f32_conv_params_t* p, const axle_f32_epilogue_t* ep,
                                     dw_plane_t* d) {
  const int64_t ow = p->out[2], groups = (ow + 15) / 16;
  d->lo = _mm512_set1_ps(ep->min);
  d->hi = _mm512_set1_ps(ep->max);
  d->alpha = _mm512_set1_ps(ep->leaky_alpha);
  d->leaky = ep->leaky;
  d->iw = p->in[2];
  d->tail = axle_f32_lanes16_inside(0, ow - (groups - 1) * 16);
}

AXLE_AVX512 void axle_f32_dwconv_plane_3x3__avx512(const axle_f32_conv_params_t* p,
                                                   const float* x_plane, const float* w, float bias,
                                                   const float* residual,
                                                   const axle_f32_epilogue_t* ep, float* y_plane) {
  const int64_t s = p->stride[2], iw = p->in[2], ow = p->out[2];
  dw_plane_t d;
  plane_consts(p, ep, &d);
  const dw_run_t one = {1, x_plane, 0, w, &bias, residual, y_plane, 0};
  if (slides(p)) {
    plane_s1_slide(&d, p, &one);
    return;
  }
  if (slides2(p)) {
    plane_s2_slide(&d, p, &one);
    return;
  }
  for (int i = 0; i < 9; ++i) d.w[i] = _mm512_set1_ps(w[i]);
  d.bias = _mm512_set1_ps(bias);
  if (s == 1 && ow == iw) {
    plane_same_s1(&d, p, x_plane, residual, y_plane);
    return;
  }
  if (s == 2 && ow <= 8) {
    plane_s2_narrow(&d, p, x_plane, residual, y_plane);
    return;
  }
  plane_rows(&d, s, p, x_plane, residual, y_plane);
}

/* The slides take a run of planes in one call, their constants set up
 * once; other planes go one call each. A band chain's planes are a few
 * rows each, and a call per plane cost ~35 cycles at stride 1 and ~55 at
 * stride 2 beyond the rows' work. Zen 5, per 16 outputs, planes alone:
 * 144 of 10 x 56 (8 output rows) 8.9-9.1 -> 7.5-7.7 cycles, 96 of 17 x
 * 112 -> 8 x 56 12.3-12.7 -> 11.4-11.7, tall planes even; MobileNetV2's
 * band-chain blocks alone 3.4-4.3 % faster (112x112 0.301 -> 0.289 ms,
 * 56x56 0.255 -> 0.246 and 0.154 -> 0.148; means of six alternating
 * rounds), in the network 2-3 % (`axle_bench_layers`). */
AXLE_AVX512 void axle_f32_dwconv_plane_run_3x3__avx512(
    const axle_f32_conv_params_t* p, size_t planes, const float* x, size_t x_stride, const float* w,
    const float* bias, const axle_f32_epilogue_t* ep, float* y, size_t y_stride) {
  dw_plane_t d;
  plane_consts(p, ep, &d);
  const dw_run_t run = {planes, x, x_stride, w, bias, NULL, y, y_stride};
  if (slides(p)) {
    plane_s1_slide(&d, p, &run);
    return;
  }
  if (slides2(p)) {
    plane_s2_slide(&d, p, &run);
    return;
  }
  for (size_t i = 0; i < planes; ++i)
    axle_f32_dwconv_plane_3x3__avx512(p, x + i * x_stride, w + 9 * i, bias ? bias[i] : 0.0f, NULL,
                                      ep, y + i * y_stride);
}

/* ---- several small planes per call -------------------------------------- */

/* On small planes the per-plane kernel above spends more on borders than
 * on FMAs: at 7x7 and 14x14 no vector of its flat walk is interior, so each
 * one tracks its lanes' rows and columns, builds nine masks and (7 wide)
 * wraps lanes over up to three rows, and every plane sets all that up
 * again. Those masks depend on the plane's geometry only, so the planes of
 * one call share one table of them (nine per output vector), and a vector
 * is nine masked loads and FMAs. Stride 2 takes the same walk after
 * splitting the plane into its four (even/odd row, even/odd column)
 * quarters with the output's row pitch: every tap is then a fixed shift of
 * the output position within one quarter, and the split costs two
 * permutes per 32 floats of input where the per-plane kernel needs three
 * per kernel row and 16 outputs. */
#define FLAT_MAX_OUT 4096 /* outputs per plane: 256 vectors */
#define FLAT_S2_FLOATS 4096 /* floats of the four quarters of a stride-2 plane */

/* Floats from one quarter of a stride-2 plane to the next: (ih + 1) / 2
 * rows of pitch ow, and room for the last row's store to run over. */
static int64_t quarter_floats(const axle_f32_conv_params_t* p) {
  return (p->in[1] + 1) / 2 * p->out[2] + 16;
}

int axle_f32_dwconv_planes_3x3__avx512_supports(const axle_f32_conv_params_t* p) {
  if (!axle_f32_dwconv_3x3__avx2_fma_supports(p) || p->out[1] * p->out[2] > FLAT_MAX_OUT)
    return 0;
  if (p->stride[2] == 1) return p->out[2] == p->in[2];
  /* A left padding of 1 or 2 keeps every tap's quarter column within
   * [ox - 1, ox], so rows of pitch ow do not overlap. */
  return p->out[2] <= 8 ||
         ((p->pad[2] == 1 || p->pad[2] == 2) && 4 * quarter_floats(p) <= FLAT_S2_FLOATS);
}

/* floor(a / 2) for any sign. */
static inline int64_t floor_half(int64_t a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }

/* The masks of every output vector of a plane, nine per vector in tap
 * order: the lanes whose tap lies inside the input (and whose output
 * exists). Returns the number of vectors. */
AXLE_AVX512 static int64_t flat_masks(const axle_f32_conv_params_t* p, __mmask16* m) {
  const int64_t s = p->stride[2], ih = p->in[1], iw = p->in[2], ow = p->out[2];
  const int64_t n = p->out[1] * ow, nv = (n + 15) / 16;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 inv_ow = _mm512_set1_ps(1.0f / (float)ow);
  for (int64_t v = 0; v < nv; ++v, m += 9) {
    const __m512i o = _mm512_add_epi32(_mm512_set1_epi32((int)(16 * v)), lane);
    /* o / ow in floats: (o + 0.5) / ow is at least 0.5 / ow from an
     * integer, far more than the rounding error for n <= FLAT_MAX_OUT. */
    const __m512i oy = _mm512_cvttps_epi32(
        _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(o), _mm512_set1_ps(0.5f)), inv_ow));
    const __m512i ox = _mm512_sub_epi32(o, _mm512_mullo_epi32(oy, _mm512_set1_epi32((int)ow)));
    const __m512i vs = _mm512_set1_epi32((int)s);
    const __m512i ry =
        _mm512_sub_epi32(_mm512_mullo_epi32(oy, vs), _mm512_set1_epi32((int)p->pad[1]));
    const __m512i cx =
        _mm512_sub_epi32(_mm512_mullo_epi32(ox, vs), _mm512_set1_epi32((int)p->pad[2]));
    const __mmask16 exists = axle_f32_lanes16_inside(16 * v, n);
    for (int t = 0; t < 3; ++t) {
      const __mmask16 rows = in_range(ry, -t, ih - t);
      for (int u = 0; u < 3; ++u) m[3 * t + u] = exists & rows & in_range(cx, -u, iw - u);
    }
  }
  return nv;
}

/* A stride-2 plane into its quarters q (even row, even column; even, odd;
 * odd, even; odd, odd). Whole vectors are stored: what one runs over the
 * end of its row (later columns, or zeros) is overwritten by the next
 * row's, or lies beyond the quarter's last row, and no output reads a
 * column from ow on. Masked stores made the 14x14 and 28x28 planes 1.2-1.3x
 * slower: the flat walk's loads waited on them. */
AXLE_AVX512 static void split_plane(const axle_f32_conv_params_t* p, const float* x, float* q) {
  const int64_t ih = p->in[1], iw = p->in[2], ow = p->out[2], qf = quarter_floats(p);
  /* Chunks of 32 columns outside, so that their load masks are made once,
   * the last first: only its stores run over, into columns that the other
   * chunks then write. Rows in pairs (even, odd), one row of each quarter. */
  for (int64_t c = (iw - 1) / 32 * 32; c >= 0; c -= 32) {
    const __mmask16 m0 = axle_f32_lanes16_inside(c, iw), m1 = axle_f32_lanes16_inside(c + 16, iw);
    const float* row = x + c;
    float* at = q + c / 2;
    for (int64_t r = 0; r < ih; r += 2, row += 2 * iw, at += ow) {
      for (int64_t k = 0; k < 2 && r + k < ih; ++k) {
        const float* in = row + k * iw;
        const __m512 a = _mm512_maskz_loadu_ps(m0, in);
        const __m512 b = _mm512_maskz_loadu_ps(m1, in + 16);
        _mm512_storeu_ps(at + 2 * k * qf, even_of(a, b));
        _mm512_storeu_ps(at + (2 * k + 1) * qf, odd_of(a, b));
      }
    }
  }
}

/* Output vector at byte offset `at` of the flat walk: tap k reads 16 floats
 * at src[k] + at under mask m[k]. */
AXLE_AVX512 static inline __m512 flat_vector(const dw_plane_t* d, const uintptr_t src[9],
                                             uintptr_t at, const __mmask16 m[9]) {
  __m512 acc[3];
  for (int t = 0; t < 3; ++t) {
    acc[t] = t == 0 ? d->bias : _mm512_setzero_ps();
    for (int u = 0; u < 3; ++u)
      acc[t] = _mm512_fmadd_ps(
          d->w[3 * t + u],
          _mm512_maskz_loadu_ps(m[3 * t + u], (const float*)(src[3 * t + u] + at)), acc[t]);
  }
  return _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]);
}

/* One plane of the flat walk with the masks m from flat_masks. */
AXLE_AVX512 static inline void flat_plane(const dw_plane_t* d, int64_t nv, const __mmask16* m,
                                          const uintptr_t src[9], const float* res, float* y) {
  for (int64_t v = 0; v < nv; ++v, m += 9) {
    const __m512 acc = flat_vector(d, src, (uintptr_t)(v * 64), m);
    finish(d, acc, res ? res + 16 * v : NULL, y + 16 * v,
           v == nv - 1 ? d->tail : (__mmask16)0xFFFF);
  }
}

AXLE_AVX512 void axle_f32_dwconv_planes_3x3__avx512(const axle_f32_conv_params_t* p,
                                                    size_t planes, const float* x,
                                                    const float* w, const float* bias,
                                                    const float* residual,
                                                    const axle_f32_epilogue_t* ep, float* y) {
  const int64_t s = p->stride[2], pt = p->pad[1], pl = p->pad[2];
  const int64_t iw = p->in[2], ow = p->out[2];
  const size_t in_vol = (size_t)(p->in[1] * iw), out_vol = (size_t)(p->out[1] * ow);
  dw_plane_t d;
  plane_consts(p, ep, &d);
  /* Planes one by one: the slides where they take the plane (at stride 2
   * faster than the quarters: 192 planes 28 -> 14 12.2 -> 8.9 ns per 16
   * outputs, 144 planes 56 -> 28 14.1 -> 10.4), and two rows per vector at
   * stride 2 with rows of at most 8 (as fast as the split into quarters on
   * 14x14 planes, and they take any padding). */
  if (slides(p) || slides2(p)) {
    const dw_run_t run = {planes, x, in_vol, w, bias, residual, y, out_vol};
    if (slides(p))
      plane_s1_slide(&d, p, &run);
    else
      plane_s2_slide(&d, p, &run);
    return;
  }
  if (s == 2 && ow <= 8) {
    for (size_t i = 0; i < planes; ++i) {
      for (int k = 0; k < 9; ++k) d.w[k] = _mm512_set1_ps(w[9 * i + k]);
      d.bias = _mm512_set1_ps(bias ? bias[i] : 0.0f);
      plane_s2_narrow(&d, p, x + i * in_vol, residual ? residual + i * out_vol : NULL,
                      y + i * out_vol);
    }
    return;
  }
  __mmask16 masks[FLAT_MAX_OUT / 16 * 9];
  const int64_t nv = flat_masks(p, masks);
  d.tail = axle_f32_lanes16_inside(0, (int64_t)out_vol - (nv - 1) * 16);
  /* Tap k's byte offset from its source (the plane, or its quarter). */
  int64_t shift[9], quarter[9];
  for (int t = 0; t < 3; ++t)
    for (int u = 0; u < 3; ++u) {
      const int k = 3 * t + u;
      if (s == 1) {
        shift[k] = ((t - pt) * iw + u - pl) * (int64_t)sizeof(float);
        quarter[k] = 0;
      } else {
        shift[k] = (floor_half(t - pt) * ow + floor_half(u - pl)) * (int64_t)sizeof(float);
        quarter[k] = ((t - pt) & 1) * 2 + ((u - pl) & 1);
      }
    }
  /* Two sets of quarters: the next plane is split before this one is
   * read, so that its loads need not wait on the split's stores (56x56
   * planes took 1.15x longer with one set). */
  _Alignas(64) float split[2][FLAT_S2_FLOATS];
  const int64_t qf = s == 2 ? quarter_floats(p) : 0;
  if (s == 2) split_plane(p, x, split[0]);
  for (size_t i = 0; i < planes; ++i) {
    const float* xi = x + i * in_vol;
    if (s == 2 && i + 1 < planes) split_plane(p, xi + in_vol, split[(i + 1) & 1]);
    uintptr_t src[9];
    for (int k = 0; k < 9; ++k) {
      const float* base = s == 1 ? xi : split[i & 1] + quarter[k] * qf;
      src[k] = (uintptr_t)base + (uintptr_t)shift[k];
    }
    for (int k = 0; k < 9; ++k) d.w[k] = _mm512_set1_ps(w[9 * i + k]);
    d.bias = _mm512_set1_ps(bias ? bias[i] : 0.0f);
    flat_plane(&d, nv, masks, src, residual ? residual + i * out_vol : NULL, y + i * out_vol);
  }
}
