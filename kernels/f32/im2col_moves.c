/* The vector im2col variants (im2col_avx2.c, im2col_avx512.c; the
 * reference is axle_f32_im2col_block).
 *
 * Every row of a block is one (channel, kernel tap), and rows with the same
 * tap copy the same pattern from their own channel: same offsets, same
 * padding. So the pattern is worked out once per tap, as a list of vector
 * moves (where to load relative to the channel, which lanes lie inside the
 * input, where to store and how many lanes), and each row replays its tap's
 * list. Working it out per row, as the reference does, cost ~7 ns (over 20
 * cycles) per output row whatever the vector width: at 7x7 maps, where a
 * row is 7 floats, that was the whole cost of the unfold (ResNet-50's 512
 * channel 3x3 stride-2 layer: 0.24 ms, 0.07 ms replayed).
 *
 * The padding never branches in the replay: lanes whose tap lies outside
 * the input are masked off the load, and a row outside the input is a load
 * with no lanes; the vectors of a row with all lanes inside are one move.
 * Stride 2 loads the 2W floats under W outputs and keeps the even ones.
 * Other strides go to the reference. */
#include "im2col_moves.h"

#include "window.h"

/* 24 KiB of stack. */
#define MOVES_MAX 1024

/* Lanes i with lo <= i < hi of w. */
static uint16_t lanes(int64_t lo, int64_t hi, int64_t w) {
  if (lo < 0) lo = 0;
  if (hi > w) hi = w;
  if (hi <= lo) return 0;
  return (uint16_t)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* The partial move of the w outputs from column j of a row whose inputs
 * start at row (relative to the channel), with outputs [a, b) inside the
 * input and [j, e) to be stored, to dst (relative to the block row). */
static void partial_move(axle_f32_im2col_move_t* m, int64_t w, int64_t row, int64_t s2,
                         int64_t j, int64_t a, int64_t b, int64_t e, int64_t dst) {
  m->src = row + s2 * j;
  m->dst = (int32_t)dst;
  m->st = lanes(0, e - j, w);
  m->full = 0;
  if (a == b) {
    m->ld0 = m->ld1 = 0;
  } else if (s2 == 1) {
    m->ld0 = lanes(a - j, b - j, w);
    m->ld1 = 0;
  } else {
    /* Inputs 2a .. 2b - 2 relative to 2j; the odd ones between are loaded
     * and dropped. */
    const int64_t first = 2 * (a - j), end = 2 * (b - j) - 1;
    m->ld0 = lanes(first, end, w);
    m->ld1 = lanes(first - w, end - w, w);
  }
}

/* The moves of tap (t0, t1, t2) over the cols output pixels from pix on;
 * returns how many. */
static size_t tap_moves(const axle_f32_conv_params_t* p, int64_t w, int64_t t0, int64_t t1,
                        int64_t t2, int64_t pix, int64_t cols, axle_f32_im2col_move_t* mv) {
  const int64_t out1 = p->out[1], out2 = p->out[2], s2 = p->stride[2];
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  /* Output columns o2 whose tap lands inside the row: [lo, hi). */
  const int64_t start2 = t2 * p->dilation[2] - p->pad[2];
  int64_t lo, hi;
  axle_window_taps(start2, s2, out2, p->in[2], &lo, &hi);
  const int64_t off0 = t0 * p->dilation[0] - p->pad[0];
  const int64_t off1 = t1 * p->dilation[1] - p->pad[1];
  int64_t o2 = pix % out2, o1 = pix / out2 % out1, o0 = pix / out2 / out1;
  size_t n = 0;
  for (int64_t d = 0; d < cols;) {
    const int64_t e = o2 + (out2 - o2 < cols - d ? out2 - o2 : cols - d);
    const int64_t i0 = o0 * p->stride[0] + off0, i1 = o1 * p->stride[1] + off1;
    const int64_t row = (i0 * p->in[1] + i1) * p->in[2] + start2;
    int64_t a = lo > o2 ? lo : o2, b = hi < e ? hi : e;
    if (i0 < 0 || i0 >= p->in[0] || i1 < 0 || i1 >= p->in[1] || b < a) a = b = o2;
    /* Partial moves up to the first vector whose outputs all lie inside,
     * then one move for the run of those (the bulk of a wide row), then the
     * rest. A full vector reads all s2 * w floats under it, at stride 2 one
     * past its last input, so it must stay inside the plane. */
    int64_t j = o2;
    for (; j < e && (j < a || j + w > b); j += w)
      partial_move(&mv[n++], w, row, s2, j, a, b, e, d + j - o2);
    const int64_t run0 = j;
    while (j + w <= b && row + s2 * (j + w) <= in_vol) j += w;
    if (j > run0) {
      mv[n].src = row + s2 * run0;
      mv[n].dst = (int32_t)(d + run0 - o2);
      mv[n++].full = (int32_t)((j - run0) / w);
    }
    for (; j < e; j += w) partial_move(&mv[n++], w, row, s2, j, a, b, e, d + j - o2);
    d += e - o2;
    o2 = 0;
    if (++o1 == out1) {
      o1 = 0;
      ++o0;
    }
  }
  return n;
}

/* At least how many moves one tap may need over cols columns: one per
 * vector, plus the partial last one of each output row touched (rounding
 * included). Runs of full vectors take one move, so this is generous for
 * wide rows. */
static size_t moves_bound(size_t cols, size_t w, size_t out2) { return cols / w + cols / out2 + 4; }

void axle_f32_im2col_block_moves(const axle_f32_conv_params_t* p, const float* x_group,
                                 size_t k0, size_t kc, size_t n0, size_t nc, float* dst,
                                 int64_t width, axle_f32_im2col_replay_fn replay) {
  const int64_t in_vol = p->in[0] * p->in[1] * p->in[2];
  const int64_t k1 = p->kernel[1], k2 = p->kernel[2], s2 = p->stride[2];
  const size_t kvol = (size_t)(p->kernel[0] * k1 * k2), out2 = (size_t)p->out[2];
  const size_t w = (size_t)width;
  if (s2 != 1 && s2 != 2) {
    axle_f32_im2col_block(p, x_group, k0, kc, n0, nc, dst);
    return;
  }
  /* Rows kk and kk + taps share a tap (taps: the distinct ones). Each pass
   * takes a group of taps over a window of columns: all taps over all
   * columns when their lists fit (then rows go in order, and a channel
   * stays in L1 across its taps); else as many taps over all columns (the
   * 7x7 stem: rows are then still written whole; windows of 224 of its 976
   * columns cost 1.15-1.2x); else one tap over windows as wide as its list
   * allows. */
  const size_t taps = kc < kvol ? kc : kvol;
  size_t window = nc, group = MOVES_MAX / moves_bound(nc, w, out2);
  if (group == 0) {
    group = 1;
    window = (MOVES_MAX - 4) * w * out2 / (out2 + w);
    /* Whole vectors, so that windows after the first keep the alignment
     * of the stores. */
    window -= window % w;
  }
  if (group > taps) group = taps;
  axle_f32_im2col_move_t mv[MOVES_MAX];
  size_t first[MOVES_MAX / 4 + 1];
  const size_t c0 = k0 / kvol, tap0 = k0 % kvol;
  for (size_t w0 = 0; w0 < nc; w0 += window) {
    const size_t cols = nc - w0 < window ? nc - w0 : window;
    for (size_t g0 = 0; g0 < taps; g0 += group) {
      const size_t g1 = taps - g0 < group ? taps : g0 + group;
      first[0] = 0;
      for (size_t t = g0; t < g1; ++t) {
        const int64_t tap = (int64_t)((tap0 + t) % kvol);
        first[t - g0 + 1] =
            first[t - g0] + tap_moves(p, width, tap / (k1 * k2), tap / k2 % k1, tap % k2,
                                      (int64_t)(n0 + w0), (int64_t)cols, mv + first[t - g0]);
      }
      /* Row q * taps + t: tap t of channel c0 + q, or of the next one once
       * the taps from tap0 on wrap around. */
      for (size_t q = 0; q * taps + g0 < kc; ++q)
        for (size_t t = g0; t < g1 && q * taps + t < kc; ++t) {
          const size_t c = c0 + q + (tap0 + t >= kvol);
          replay(mv + first[t - g0], mv + first[t - g0 + 1], s2, x_group + (int64_t)c * in_vol,
                 dst + (q * taps + t) * nc + w0);
        }
    }
  }
}
