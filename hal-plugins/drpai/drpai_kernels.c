/* Reference arithmetic of the emulated DRP-AI (see drpai_kernels.h). */
#include "drpai_kernels.h"

#include <math.h>
#include <string.h>

#define C(k) (c->c[DRPAI_C_##k])

/* The kernel taps [lo, hi) of output position o that fall inside the
 * input: padding is never iterated, so a window far larger than the image
 * costs no more than the image. */
static void taps(int32_t o, int32_t stride, int32_t pad, int32_t dil, int32_t k, int32_t in, int32_t* lo,
                 int32_t* hi) {
  int64_t start = (int64_t)o * stride - pad;
  int64_t a = start < 0 ? (-start + dil - 1) / dil : 0;
  int64_t b = start > in - 1 ? 0 : (in - 1 - start) / dil + 1;
  *lo = (int32_t)(a < k ? a : k);
  *hi = (int32_t)(b < k ? b : k);
}

static int32_t clamp_acc(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

void drpai_k_conv(const drpai_cmd_t* c, const int8_t* x, const int8_t* w, const int32_t* bias,
                  const int32_t* requant, int8_t* y) {
  const int32_t N = C(N), CI = C(CIN), HI = C(HIN), WI = C(WIN), CO = C(COUT), HO = C(HOUT),
                WO = C(WOUT), KH = C(KH), KW = C(KW), G = C(GROUP);
  const int32_t cig = CI / G, cog = CO / G, zx = C(IN_ZP);
  for (int32_t n = 0; n < N; ++n) {
    for (int32_t oc = 0; oc < CO; ++oc) {
      const int32_t g = oc / cog;
      const int8_t* wk = w + (size_t)oc * cig * KH * KW;
      for (int32_t oh = 0; oh < HO; ++oh) {
        int32_t ky0, ky1;
        taps(oh, C(SH), C(PT), C(DH), KH, HI, &ky0, &ky1);
        for (int32_t ow = 0; ow < WO; ++ow) {
          int32_t kx0, kx1;
          taps(ow, C(SW), C(PL), C(DW), KW, WI, &kx0, &kx1);
          int64_t acc = bias[oc];
          for (int32_t ic = 0; ic < cig; ++ic) {
            const int8_t* xp = x + (((size_t)n * CI + (size_t)g * cig + ic) * HI) * WI;
            const int8_t* wp = wk + (size_t)ic * KH * KW;
            for (int32_t ky = ky0; ky < ky1; ++ky) {
              const int8_t* row = xp + (size_t)(oh * C(SH) - C(PT) + ky * C(DH)) * WI;
              for (int32_t kx = kx0; kx < kx1; ++kx)
                acc += (int64_t)(row[ow * C(SW) - C(PL) + kx * C(DW)] - zx) * wp[ky * KW + kx];
            }
          }
          int64_t v = drpai_requant(clamp_acc(acc), requant[2 * oc], requant[2 * oc + 1]) + C(OUT_ZP);
          y[(((size_t)n * CO + oc) * HO + oh) * WO + ow] = drpai_sat8(v, C(ACT_MIN), C(ACT_MAX));
        }
      }
    }
  }
}

void drpai_k_gemm(const drpai_cmd_t* c, const int8_t* x, const int8_t* w, const int32_t* bias,
                  const int32_t* requant, int8_t* y) {
  const int32_t M = C(N), K = C(CIN), NC = C(COUT), zx = C(IN_ZP);
  for (int32_t m = 0; m < M; ++m) {
    const int8_t* xr = x + (size_t)m * K;
    for (int32_t j = 0; j < NC; ++j) {
      const int8_t* wr = w + (size_t)j * K;
      int64_t acc = bias[j];
      for (int32_t k = 0; k < K; ++k) acc += (int64_t)(xr[k] - zx) * wr[k];
      int64_t v = drpai_requant(clamp_acc(acc), requant[2 * j], requant[2 * j + 1]) + C(OUT_ZP);
      y[(size_t)m * NC + j] = drpai_sat8(v, C(ACT_MIN), C(ACT_MAX));
    }
  }
}

/* One window walk for both pools: the window's maximum, its sum of (x - zp)
 * and the number of taps inside the image. */
static void pool(const drpai_cmd_t* c, const int8_t* x, int8_t* y, int is_max) {
  const int32_t N = C(N), CH = C(CIN), HI = C(HIN), WI = C(WIN), HO = C(HOUT), WO = C(WOUT);
  const int32_t zx = C(IN_ZP);
  const double m = ldexp((double)C(MULT), -C(SHIFT));
  for (int32_t nc = 0; nc < N * CH; ++nc) {
    const int8_t* xp = x + (size_t)nc * HI * WI;
    for (int32_t oh = 0; oh < HO; ++oh) {
      int32_t ky0, ky1;
      taps(oh, C(SH), C(PT), C(DH), C(KH), HI, &ky0, &ky1);
      for (int32_t ow = 0; ow < WO; ++ow) {
        int32_t kx0, kx1;
        taps(ow, C(SW), C(PL), C(DW), C(KW), WI, &kx0, &kx1);
        int32_t mx = -128, count = 0;
        int64_t sum = 0;
        for (int32_t ky = ky0; ky < ky1; ++ky) {
          const int8_t* row = xp + (size_t)(oh * C(SH) - C(PT) + ky * C(DH)) * WI;
          for (int32_t kx = kx0; kx < kx1; ++kx) {
            int32_t v = row[ow * C(SW) - C(PL) + kx * C(DW)];
            if (v > mx) mx = v;
            sum += v - zx;
            ++count;
          }
        }
        int64_t out;
        if (is_max) {
          out = count ? drpai_requant(mx - zx, C(MULT), C(SHIFT)) : 0;
        } else {
          /* Window counts vary at the borders, so the division is done in
           * double; the result is the same on every IEEE-754 host. */
          int32_t n = (C(FLAGS) & DRPAI_CF_COUNT_PAD) ? C(KH) * C(KW) : count;
          double v = n ? (double)sum * m / n : 0.0;
          out = (int64_t)(v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5));
        }
        y[((size_t)nc * HO + oh) * WO + ow] = drpai_sat8(out + C(OUT_ZP), C(ACT_MIN), C(ACT_MAX));
      }
    }
  }
}

void drpai_k_maxpool(const drpai_cmd_t* c, const int8_t* x, int8_t* y) { pool(c, x, y, 1); }
void drpai_k_avgpool(const drpai_cmd_t* c, const int8_t* x, int8_t* y) { pool(c, x, y, 0); }

void drpai_k_eltwise(const drpai_cmd_t* c, const int8_t* a, const int8_t* b, int mul, int8_t* y) {
  const int32_t* w = c->c;
  const size_t plane = (size_t)w[DRPAI_C_HIN] * (size_t)w[DRPAI_C_WIN];
  const size_t ch = (size_t)w[DRPAI_C_CIN];
  const int per_channel = (w[DRPAI_C_FLAGS] & DRPAI_CF_B_PER_CHANNEL) != 0;
  size_t i = 0;
  for (int32_t n = 0; n < w[DRPAI_C_N]; ++n)
    for (size_t k = 0; k < ch; ++k)
      for (size_t p = 0; p < plane; ++p, ++i) {
        int64_t da = a[i] - w[DRPAI_C_IN_ZP];
        int64_t db = b[per_channel ? k : i] - w[DRPAI_C_B_ZP];
        /* ADD scales both operands to a common 2^-SHIFT fixed point first,
         * so that the sum is rounded once. */
        int64_t v = mul ? drpai_requant(da * db, w[DRPAI_C_MULT], w[DRPAI_C_SHIFT])
                        : drpai_requant(da * w[DRPAI_C_MULT] + db * w[DRPAI_C_B_MULT], 1, w[DRPAI_C_SHIFT]);
        y[i] = drpai_sat8(v + w[DRPAI_C_OUT_ZP], w[DRPAI_C_ACT_MIN], w[DRPAI_C_ACT_MAX]);
      }
}

void drpai_k_concat(const drpai_cmd_t* c, const int8_t* x, int8_t* y) {
  const int32_t* w = c->c;
  const size_t inner = (size_t)w[DRPAI_C_HIN] * (size_t)w[DRPAI_C_WIN];
  const size_t rows = (size_t)w[DRPAI_C_CIN] * inner;
  for (int32_t n = 0; n < w[DRPAI_C_N]; ++n) {
    const int8_t* src = x + (size_t)n * rows;
    int8_t* dst = y + ((size_t)n * (size_t)w[DRPAI_C_COUT] + (size_t)w[DRPAI_C_OFFSET]) * inner;
    for (size_t i = 0; i < rows; ++i) {
      int64_t v = drpai_requant(src[i] - w[DRPAI_C_IN_ZP], w[DRPAI_C_MULT], w[DRPAI_C_SHIFT]);
      dst[i] = drpai_sat8(v + w[DRPAI_C_OUT_ZP], -128, 127);
    }
  }
}

void drpai_k_lut(const int8_t* x, size_t n, const int8_t* table, int8_t* y) {
  for (size_t i = 0; i < n; ++i) y[i] = table[x[i] + 128];
}

void drpai_k_crop(const uint8_t* in, uint32_t iw, uint32_t elem, uint32_t x, uint32_t y, uint32_t w,
                  uint32_t h, uint8_t* out) {
  for (uint32_t r = 0; r < h; ++r)
    memcpy(out + (size_t)r * w * elem, in + ((size_t)(y + r) * iw + x) * elem, (size_t)w * elem);
}

static uint8_t to_u8(float v) {
  v = roundf(v);
  return (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}

void drpai_k_yuv2rgb(const uint8_t* in, uint32_t w, uint32_t h, uint32_t fmt, uint8_t* out) {
  for (uint32_t r = 0; r < h; ++r) {
    const uint8_t* row = in + (size_t)r * w * 2;
    for (uint32_t px = 0; px < w; ++px) {
      float Y = row[2 * px];
      if (fmt == 2) {
        out[(size_t)r * w + px] = row[2 * px];
        continue;
      }
      const uint8_t* pair = row + 4 * (px / 2);
      float U = (float)pair[1] - 128.0f, V = (float)pair[3] - 128.0f;
      uint8_t R = to_u8(Y + 1.402f * V);
      uint8_t G = to_u8(Y - 0.344136f * U - 0.714136f * V);
      uint8_t B = to_u8(Y + 1.772f * U);
      uint8_t* o = out + ((size_t)r * w + px) * 3;
      o[0] = fmt == 1 ? B : R;
      o[1] = G;
      o[2] = fmt == 1 ? R : B;
    }
  }
}

void drpai_k_resize(const uint8_t* in, uint32_t iw, uint32_t ih, uint32_t ch, uint8_t* out,
                    uint32_t ow, uint32_t oh, uint32_t alg) {
  const float rx = (float)iw / (float)ow, ry = (float)ih / (float)oh;
  for (uint32_t oy = 0; oy < oh; ++oy) {
    for (uint32_t ox = 0; ox < ow; ++ox) {
      uint8_t* o = out + ((size_t)oy * ow + ox) * ch;
      if (alg == 0) {
        uint32_t sx = (uint32_t)((uint64_t)ox * iw / ow), sy = (uint32_t)((uint64_t)oy * ih / oh);
        memcpy(o, in + ((size_t)sy * iw + sx) * ch, ch);
        continue;
      }
      float fx = ((float)ox + 0.5f) * rx - 0.5f, fy = ((float)oy + 0.5f) * ry - 0.5f;
      if (fx < 0.0f) fx = 0.0f;
      if (fy < 0.0f) fy = 0.0f;
      uint32_t x0 = (uint32_t)fx, y0 = (uint32_t)fy;
      if (x0 > iw - 1) x0 = iw - 1;
      if (y0 > ih - 1) y0 = ih - 1;
      uint32_t x1 = x0 + 1 < iw ? x0 + 1 : iw - 1, y1 = y0 + 1 < ih ? y0 + 1 : ih - 1;
      float ax = fx - (float)x0, ay = fy - (float)y0;
      for (uint32_t k = 0; k < ch; ++k) {
        float a = in[((size_t)y0 * iw + x0) * ch + k], b = in[((size_t)y0 * iw + x1) * ch + k];
        float cc = in[((size_t)y1 * iw + x0) * ch + k], d = in[((size_t)y1 * iw + x1) * ch + k];
        float top = a + (b - a) * ax, bot = cc + (d - cc) * ax;
        o[k] = to_u8(top + (bot - top) * ay);
      }
    }
  }
}

void drpai_k_scaler(const uint8_t* in, int in_f32, uint32_t pixels, uint32_t ch, const float* add,
                    const float* mul, float* out) {
  for (uint32_t p = 0; p < pixels; ++p) {
    for (uint32_t k = 0; k < ch; ++k) {
      size_t i = (size_t)p * ch + k;
      float v;
      if (in_f32)
        memcpy(&v, in + i * 4, 4);
      else
        v = in[i];
      out[i] = (v + add[k]) * mul[k];
    }
  }
}

void drpai_k_transpose(const uint8_t* in, uint32_t w, uint32_t h, uint32_t ch, uint32_t elem,
                       int to_hwc, uint8_t* out) {
  size_t plane = (size_t)w * h;
  for (size_t p = 0; p < plane; ++p) {
    for (uint32_t k = 0; k < ch; ++k) {
      size_t hwc = (p * ch + k) * elem, chw = ((size_t)k * plane + p) * elem;
      if (to_hwc)
        memcpy(out + hwc, in + chw, elem);
      else
        memcpy(out + chw, in + hwc, elem);
    }
  }
}

void drpai_k_quantize(const float* x, size_t n, float scale, int32_t zp, int8_t* q) {
  for (size_t i = 0; i < n; ++i) {
    float v = nearbyintf(x[i] / scale) + (float)zp;
    q[i] = (int8_t)(v < -128.0f ? -128.0f : v > 127.0f ? 127.0f : v);
  }
}

void drpai_k_dequantize(const int8_t* q, size_t n, float scale, int32_t zp, float* x) {
  for (size_t i = 0; i < n; ++i) x[i] = (float)(q[i] - zp) * scale;
}

void drpai_k_softmax(const float* x, uint32_t outer, uint32_t axis, uint32_t inner, float* y) {
  for (uint32_t o = 0; o < outer; ++o) {
    for (uint32_t in = 0; in < inner; ++in) {
      const float* xp = x + (size_t)o * axis * inner + in;
      float* yp = y + (size_t)o * axis * inner + in;
      float mx = -INFINITY, sum = 0.0f;
      for (uint32_t a = 0; a < axis; ++a)
        if (xp[(size_t)a * inner] > mx) mx = xp[(size_t)a * inner];
      for (uint32_t a = 0; a < axis; ++a) {
        float e = expf(xp[(size_t)a * inner] - mx);
        yp[(size_t)a * inner] = e;
        sum += e;
      }
      for (uint32_t a = 0; a < axis; ++a) yp[(size_t)a * inner] /= sum;
    }
  }
}
