#include "k210_arith.h"

int k210_act_select(const k210_act_table_t* t, int64_t v, k210_act_rule_t rule) {
  for (int i = K210_ACT_SEGMENTS - 1; i >= 0; --i) {
    int64_t x = t->seg[i].x_start;
    if (rule == K210_ACT_RULE_V02 ? v > x : x <= v) return i;
  }
  return 0;
}

int k210_act_ascending(const k210_act_table_t* t) {
  for (int i = 1; i < K210_ACT_SEGMENTS; ++i)
    if (t->seg[i].x_start < t->seg[i - 1].x_start) return 0;
  return 1;
}

uint32_t k210_pool_window(int pool_type) {
  switch (pool_type) {
    case K210_POOL_BYPASS: return 1;
    case K210_POOL_MAX_4_S4:
    case K210_POOL_MEAN_4_S4:
    case K210_POOL_LEFT_TOP_4_S4: return 4;
    default: return 2;
  }
}

uint32_t k210_pool_stride(int pool_type) {
  switch (pool_type) {
    case K210_POOL_BYPASS:
    case K210_POOL_MEAN_2_S1:
    case K210_POOL_MAX_2_S1: return 1;
    case K210_POOL_MAX_4_S4:
    case K210_POOL_MEAN_4_S4:
    case K210_POOL_LEFT_TOP_4_S4: return 4;
    default: return 2;
  }
}

static uint32_t clamp_index(uint32_t i, uint32_t n) { return i < n ? i : n - 1; }

void k210_pool(const uint8_t* in, uint32_t w, uint32_t h, uint32_t c, int pool_type, uint8_t* out) {
  uint32_t k = k210_pool_window(pool_type), s = k210_pool_stride(pool_type);
  uint32_t ow = w / s, oh = h / s;
  /* The pick pools read one tap: left-top (0, 0) or right-top (0, 1). */
  uint32_t pick_x = pool_type == K210_POOL_RIGHT_TOP_2_S2 ? 1 : 0;
  for (uint32_t ch = 0; ch < c; ++ch) {
    const uint8_t* plane = in + (size_t)ch * w * h;
    for (uint32_t oy = 0; oy < oh; ++oy) {
      for (uint32_t ox = 0; ox < ow; ++ox) {
        uint32_t y0 = oy * s, x0 = ox * s, v = 0;
        switch (pool_type) {
          case K210_POOL_BYPASS: v = plane[y0 * w + x0]; break;
          case K210_POOL_MAX_2_S2:
          case K210_POOL_MAX_4_S4:
          case K210_POOL_MAX_2_S1:
            for (uint32_t ky = 0; ky < k; ++ky)
              for (uint32_t kx = 0; kx < k; ++kx)
                if (y0 + ky < h && x0 + kx < w && plane[(y0 + ky) * w + x0 + kx] > v)
                  v = plane[(y0 + ky) * w + x0 + kx];
            break;
          case K210_POOL_MEAN_2_S2:
          case K210_POOL_MEAN_4_S4:
          case K210_POOL_MEAN_2_S1:
            for (uint32_t ky = 0; ky < k; ++ky)
              for (uint32_t kx = 0; kx < k; ++kx)
                v += plane[clamp_index(y0 + ky, h) * w + clamp_index(x0 + kx, w)];
            v /= k * k;
            break;
          default: /* pick pools */
            v = x0 + pick_x < w ? plane[y0 * w + x0 + pick_x] : 0;
            break;
        }
        *out++ = (uint8_t)v;
      }
    }
  }
}
