#include "k210_quant.h"

#include <math.h>
#include <string.h>

#include "k210_arith.h"

double k210_act_eval(const k210_act_fn_t* f, double y) {
  switch (f->kind) {
    case K210_ACT_RELU: return y > 0 ? y : 0;
    case K210_ACT_CLIP: return y < f->p0 ? f->p0 : y > f->p1 ? f->p1 : y;
    case K210_ACT_LEAKY_RELU: return y >= 0 ? y : f->p0 * y;
    case K210_ACT_SIGMOID: return 1.0 / (1.0 + exp(-y));
    case K210_ACT_TANH: return tanh(y);
    case K210_ACT_HARD_SIGMOID: {
      double v = f->p0 * y + f->p1;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case K210_ACT_SOFTPLUS: return y > 30 ? y : log1p(exp(y));
    case K210_ACT_ELU: return y >= 0 ? y : f->p0 * expm1(y);
    case K210_ACT_SELU: return f->p1 * (y > 0 ? y : f->p0 * expm1(y));
    case K210_ACT_SOFTSIGN: return y / (1.0 + fabs(y));
    default: return y;
  }
}

/* Points where f's slope jumps: they must be knots for an exact fit. */
static int act_kinks(const k210_act_fn_t* f, double kinks[2]) {
  switch (f->kind) {
    case K210_ACT_RELU:
    case K210_ACT_LEAKY_RELU:
    case K210_ACT_ELU:
    case K210_ACT_SELU: kinks[0] = 0; return 1;
    case K210_ACT_CLIP: kinks[0] = f->p0; kinks[1] = f->p1; return 2;
    case K210_ACT_HARD_SIGMOID:
      if (f->p0 <= 0) return 0;
      kinks[0] = -f->p1 / f->p0;
      kinks[1] = (1 - f->p1) / f->p0;
      return 2;
    default: return 0;
  }
}

void k210_quantize_weights(const float* w, size_t n, uint8_t* q, double* scale, int32_t* zero_point) {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    if (w[i] < lo) lo = w[i];
    if (w[i] > hi) hi = w[i];
  }
  double s = hi > lo ? (hi - lo) / 255.0 : 1.0;
  double z = nearbyint(-lo / s);
  z = z < 0 ? 0 : z > 255 ? 255 : z;
  for (size_t i = 0; i < n; ++i) {
    double v = nearbyint(w[i] / s) + z;
    q[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  *scale = s;
  *zero_point = (int32_t)z;
}

void k210_fit_batchnorm(const double* m, const double* b, uint32_t channels, double y_abs_max,
                        k210_bn_t* bn, double* s_v) {
  const double mul_max = (double)((1 << 23) - 1), add_max = 2147483647.0;
  double mmax = 0, bmax = 0;
  for (uint32_t c = 0; c < channels; ++c) {
    if (fabs(m[c]) > mmax) mmax = fabs(m[c]);
    if (fabs(b[c]) > bmax) bmax = fabs(b[c]);
  }
  /* The finest grid every constraint allows. */
  double s = mmax * 32768.0 / mul_max;
  if (bmax / add_max > s) s = bmax / add_max;
  if (y_abs_max / (double)(INT64_C(1) << 34) > s) s = y_abs_max / (double)(INT64_C(1) << 34);
  if (!(s > 0)) s = 1.0;
  for (uint32_t c = 0; c < channels; ++c) {
    double mul = nearbyint(m[c] / s * 32768.0), add = nearbyint(b[c] / s);
    bn[c].mul = (int32_t)(mul > mul_max ? mul_max : mul < -mul_max ? -mul_max : mul);
    bn[c].add = (int32_t)(add > add_max ? add_max : add < -add_max ? -add_max : add);
    bn[c].shift = 15;
  }
  *s_v = s;
}

/* ------------------------------------------------------------------------ */
/* Activation fit.                                                           */
/* ------------------------------------------------------------------------ */

typedef struct fit_t {
  const k210_act_fn_t* f;
  double out_scale, out_zp;
} fit_t;

/* The exact output in LSBs, unclamped. */
static double h(const fit_t* c, double y) { return k210_act_eval(c->f, y) / c->out_scale + c->out_zp; }

static double clamp255(double v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* Boundary in [lo, hi] where pred(h) turns from false to true (h is
 * non-decreasing): the largest y with h(y) < level when `below`. */
static double crossing(const fit_t* c, double lo, double hi, double level) {
  for (int i = 0; i < 100; ++i) {
    double mid = 0.5 * (lo + hi);
    if (h(c, mid) <= level)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* How far h strays from the chord of piece [a, b]: the lowest and highest
 * of h - chord. */
static void chord_deviation(const fit_t* c, double a, double b, double* lo, double* hi) {
  double ha = h(c, a), hb = h(c, b);
  *lo = *hi = 0;
  for (int i = 1; i < 32; ++i) {
    double d = h(c, a + (b - a) * i / 32.0) - (ha + (hb - ha) * i / 32.0);
    if (d < *lo) *lo = d;
    if (d > *hi) *hi = d;
  }
}

/* The error of the piece's line: the chord moved to the middle of h's
 * deviations from it. */
static double piece_error(const fit_t* c, double a, double b) {
  double lo, hi;
  chord_deviation(c, a, b, &lo, &hi);
  return 0.5 * (hi - lo);
}

/* y_mul / 2^shift ~ slope (>= 0), y_mul as wide as 16 signed bits allow. */
static void encode_slope(double slope, k210_act_segment_t* s) {
  s->y_mul = 0;
  s->shift = 0;
  if (!(slope > 0)) return;
  int shift = 0;
  while (shift < 63 && nearbyint(slope * ldexp(1.0, shift + 1)) <= 32767) ++shift;
  double mul = nearbyint(slope * ldexp(1.0, shift));
  s->y_mul = (int32_t)(mul > 32767 ? 32767 : mul);
  s->shift = (uint8_t)shift;
}

static int64_t clamp_x(double v) {
  if (v < (double)K210_ACT_X_MIN + 1) return K210_ACT_X_MIN + 1;
  if (v > (double)K210_ACT_X_MAX) return K210_ACT_X_MAX;
  return (int64_t)llround(v);
}

static void flat_table(k210_act_table_t* t, double value) {
  memset(t, 0, sizeof(*t));
  for (int i = 0; i < K210_ACT_SEGMENTS; ++i) {
    t->seg[i].x_start = K210_ACT_X_MIN;
    t->bias[i] = (uint8_t)nearbyint(clamp255(value));
  }
}

double k210_fit_activation(const k210_act_fn_t* f, double s_v, double y_lo, double y_hi,
                           double out_scale, int32_t out_zero_point, k210_act_table_t* table) {
  fit_t c = {f, out_scale, out_zero_point};
  if (!(y_hi > y_lo)) {
    flat_table(table, h(&c, y_lo));
    return fabs(clamp255(nearbyint(clamp255(h(&c, y_lo)))) - clamp255(h(&c, y_lo)));
  }
  /* [ya, yb]: where the output is not clamped; below ya segment 0 is flat,
   * above yb the last segment's line clamps at 255 or keeps going. */
  double ya = h(&c, y_lo) > 0 ? y_lo : crossing(&c, y_lo, y_hi, 0);
  double yb = h(&c, y_hi) < 255 ? y_hi : crossing(&c, ya, y_hi, 255);
  if (!(yb > ya)) {
    flat_table(table, h(&c, 0.5 * (y_lo + y_hi)));
    return 0.5;
  }
  double t[K210_ACT_SEGMENTS + 1];
  int fixed[K210_ACT_SEGMENTS + 1] = {0};
  int n = 0;
  fixed[n] = 1;
  t[n++] = ya;
  double kinks[2];
  int nk = act_kinks(f, kinks);
  for (int i = 0; i < nk; ++i)
    if (kinks[i] > ya && kinks[i] < yb) fixed[n] = 1, t[n++] = kinks[i];
  if (n == 3 && t[2] < t[1]) {
    double s = t[1];
    t[1] = t[2];
    t[2] = s;
  }
  fixed[n] = 1;
  t[n++] = yb;
  /* Refine: split the worst piece at its middle until 15 pieces (segment 0
   * is the flat bottom) or nothing is worth splitting. A piece must stay a
   * few grid steps long so its integer start stays distinct. */
  while (n < K210_ACT_SEGMENTS) {
    int worst = -1;
    double worst_err = 1e-4;
    for (int i = 0; i + 1 < n; ++i) {
      double e = (t[i + 1] - t[i]) / s_v > 8 ? piece_error(&c, t[i], t[i + 1]) : 0;
      if (e > worst_err) {
        worst_err = e;
        worst = i;
      }
    }
    if (worst < 0) break;
    memmove(&t[worst + 2], &t[worst + 1], sizeof(double) * (size_t)(n - worst - 1));
    memmove(&fixed[worst + 2], &fixed[worst + 1], sizeof(int) * (size_t)(n - worst - 1));
    t[worst + 1] = 0.5 * (t[worst] + t[worst + 2]);
    fixed[worst + 1] = 0;
    ++n;
  }
  /* Then slide every free knot until its two pieces err alike: the best
   * piecewise-linear fits have equal errors everywhere. */
  for (int sweep = 0; sweep < 6; ++sweep)
    for (int i = 1; i + 1 < n; ++i) {
      if (fixed[i]) continue;
      double lo = t[i - 1] + 8 * s_v, hi = t[i + 1] - 8 * s_v;
      for (int step = 0; step < 20 && lo < hi; ++step) {
        double mid = 0.5 * (lo + hi);
        if (piece_error(&c, t[i - 1], mid) < piece_error(&c, mid, t[i + 1]))
          lo = mid;
        else
          hi = mid;
      }
      if (lo < hi) t[i] = 0.5 * (lo + hi);
    }

  memset(table, 0, sizeof(*table));
  table->seg[0].x_start = K210_ACT_X_MIN;
  table->bias[0] = (uint8_t)nearbyint(clamp255(h(&c, ya)));
  int segs = 1;
  for (int i = 0; i + 1 < n; ++i) {
    double dev_lo, dev_hi;
    chord_deviation(&c, t[i], t[i + 1], &dev_lo, &dev_hi);
    double h0 = h(&c, t[i]) + 0.5 * (dev_lo + dev_hi), len = (t[i + 1] - t[i]) / s_v;
    k210_act_segment_t* s = &table->seg[segs];
    encode_slope((h(&c, t[i + 1]) - h0) / len, s);
    double slope = s->y_mul / ldexp(1.0, s->shift);
    /* The bias is an integer: start the segment where its line is whole
     * (when that moves the start only a little), else round the bias. */
    double target = nearbyint(clamp255(h0)), start = t[i] / s_v;
    if (slope > 0 && fabs((target - h0) / slope) <= 0.25 * len) start += (target - h0) / slope;
    s->x_start = clamp_x(start);
    if (s->x_start <= table->seg[segs - 1].x_start) s->x_start = table->seg[segs - 1].x_start + 1;
    table->bias[segs] = (uint8_t)target;
    ++segs;
  }
  for (int i = segs; i < K210_ACT_SEGMENTS; ++i) {
    table->seg[i] = table->seg[segs - 1];
    table->bias[i] = table->bias[segs - 1];
  }

  /* The fit error: the table's line (no final rounding) against the exact
   * clamped output, over the calibrated range and around every knot. */
  double worst = 0;
  for (int i = 0; i <= 4096 + 2 * K210_ACT_SEGMENTS; ++i) {
    double y = i <= 4096 ? y_lo + (y_hi - y_lo) * i / 4096.0
                         : (double)table->seg[(i - 4097) / 2].x_start * s_v + ((i & 1) ? s_v : -s_v);
    if (y < y_lo || y > y_hi) continue;
    int64_t v = (int64_t)llround(y / s_v);
    int k = k210_act_select(table, v, K210_ACT_RULE_V02);
    const k210_act_segment_t* s = &table->seg[k];
    double line = table->bias[k] + (double)(v - s->x_start) * s->y_mul / ldexp(1.0, s->shift);
    double e = fabs(clamp255(line) - clamp255(h(&c, y)));
    if (e > worst) worst = e;
  }
  return worst;
}
