#include "k210_kmodel_layers.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "k210_arith.h"
#include "k210_bytes.h"
#include "k210_kpu.h"

/* ------------------------------------------------------------------------ */
/* Parsing helpers.                                                          */
/* ------------------------------------------------------------------------ */

static int bad(const k210_kl_ctx_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const k210_kl_ctx_t* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->why_size, fmt, ap);
  va_end(ap);
  return 0;
}

/* The body holds at least `need` bytes. */
static int body_has(const k210_kl_t* l, const k210_kl_ctx_t* c, uint64_t need) {
  if (need <= l->body_size) return 1;
  return bad(c, "body has %u bytes, its arguments need %llu", l->body_size, (unsigned long long)need);
}

static uint32_t arg(const k210_kl_t* l, uint32_t index) { return k210_get_u32(l->body + 4 * index); }
static float farg(const k210_kl_t* l, uint32_t index) { return k210_get_f32(l->body + 4 * index); }

/* [addr, addr + bytes) lies in main memory. */
static int in_main(const k210_kl_ctx_t* c, const char* what, uint32_t addr, uint64_t bytes) {
  if (k210_range_ok(addr, bytes, c->main_size)) return 1;
  return bad(c, "%s [%u, +%llu) is outside main memory (%u bytes)", what, addr,
             (unsigned long long)bytes, c->main_size);
}

static void writes(k210_kl_t* l, uint32_t addr, uint64_t bytes, int32_t dtype) {
  l->write_addr = addr;
  l->write_bytes = (uint32_t)bytes;
  l->write_dtype = dtype;
}

/* Product of dimensions, refusing anything a 32-bit main memory could not
 * hold (keeps every later size computation far from overflow). */
static int elements(const k210_kl_ctx_t* c, uint64_t* out, uint32_t a, uint32_t b, uint32_t d) {
  uint64_t n = (uint64_t)a * b;
  *out = 0;
  if (n > UINT32_MAX || (n *= d) > UINT32_MAX) return bad(c, "shape %ux%ux%u is too large", a, b, d);
  *out = n;
  return 1;
}

/* Unaligned float access to main memory. */
static float ld(const uint8_t* m, uint32_t addr, uint64_t i) { return k210_get_f32(m + addr + 4 * i); }
static void st(uint8_t* m, uint32_t addr, uint64_t i, float v) { k210_put_f32(m + addr + 4 * i, v); }

static uint8_t clamp_u8_float(float v) {
  if (!(v >= 0.0f)) return 0; /* NaN too */
  return v > 255.0f ? 255 : (uint8_t)v;
}

/* ------------------------------------------------------------------------ */
/* Element-wise layers.                                                      */
/* ------------------------------------------------------------------------ */

/* ADD: flags, in_a, in_b, out, count (floats) */
static int parse_add(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 20)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .in_b = arg(l, 2), .out = arg(l, 3),
                          .count = arg(l, 4)};
  uint64_t bytes = 4ull * l->a.count;
  if (!in_main(c, "input a", l->a.in, bytes) || !in_main(c, "input b", l->a.in_b, bytes) ||
      !in_main(c, "output", l->a.out, bytes))
    return 0;
  writes(l, l->a.out, bytes, AXLE_HAL_DTYPE_F32);
  l->element_ops = l->a.count;
  return 1;
}

static void run_add(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t i = 0; i < l->a.count; ++i) st(m, l->a.out, i, ld(m, l->a.in, i) + ld(m, l->a.in_b, i));
}

/* QUANTIZED_ADD: flags, in_a, in_b, out, count, then (offset, mul, shift) for
 * a, b and the output. */
static int parse_quantized_add(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 56)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .in_b = arg(l, 2), .out = arg(l, 3),
                          .count = arg(l, 4)};
  for (int i = 0; i < 9; ++i) l->a.q[i] = (int32_t)arg(l, 5 + (uint32_t)i);
  for (int i = 2; i < 9; i += 3)
    if (l->a.q[i] < 0 || l->a.q[i] > 63) return bad(c, "shift %d is outside 0..63", l->a.q[i]);
  if (!in_main(c, "input a", l->a.in, l->a.count) || !in_main(c, "input b", l->a.in_b, l->a.count) ||
      !in_main(c, "output", l->a.out, l->a.count))
    return 0;
  writes(l, l->a.out, l->a.count, AXLE_HAL_DTYPE_U8);
  l->element_ops = 4ull * l->a.count;
  return 1;
}

/* The SDK's kpu_carry_shift: rounds half away from zero. */
static int64_t sdk_carry_shift(int64_t v, int32_t shift) {
  if (shift <= 0) return v;
  v >>= shift - 1;
  if (v & 1) return v < 0 ? (v >> 1) - 1 : (v >> 1) + 1;
  return v >> 1;
}

static void run_quantized_add(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const int32_t* q = l->a.q;
  for (uint32_t i = 0; i < l->a.count; ++i) {
    int64_t a = k210_wrap_mul((int64_t)m[l->a.in + i] + q[0], q[1]);
    int64_t b = k210_wrap_mul((int64_t)m[l->a.in_b + i] + q[3], q[4]);
    /* Equal shifts add before shifting, as the SDK's fast path does. */
    int64_t v = q[2] == q[5] ? k210_wrap_add(a, b) >> q[2] : k210_wrap_add(a >> q[2], b >> q[5]);
    v = k210_wrap_add(sdk_carry_shift(k210_wrap_mul(v, q[7]), q[8]), q[6]);
    m[l->a.out + i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
}

/* QUANTIZE: flags, in, out, count, scale, bias: q = round((x - bias) / scale) */
static int parse_quantize(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3),
                          .scale = farg(l, 4), .bias = farg(l, 5)};
  if (!in_main(c, "input", l->a.in, 4ull * l->a.count) || !in_main(c, "output", l->a.out, l->a.count))
    return 0;
  writes(l, l->a.out, l->a.count, AXLE_HAL_DTYPE_U8);
  l->element_ops = l->a.count;
  return 1;
}

static void run_quantize(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  /* The SDK multiplies by the reciprocal; kept for identical rounding. */
  float inv = 1.0f / l->a.scale;
  for (uint32_t i = 0; i < l->a.count; ++i)
    m[l->a.out + i] = clamp_u8_float(roundf((ld(m, l->a.in, i) - l->a.bias) * inv));
}

/* DEQUANTIZE: flags, in, out, count, scale, bias: x = q * scale + bias */
static int parse_dequantize(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3),
                          .scale = farg(l, 4), .bias = farg(l, 5)};
  if (!in_main(c, "input", l->a.in, l->a.count) || !in_main(c, "output", l->a.out, 4ull * l->a.count))
    return 0;
  writes(l, l->a.out, 4ull * l->a.count, AXLE_HAL_DTYPE_F32);
  l->element_ops = l->a.count;
  return 1;
}

static void run_dequantize(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t i = 0; i < l->a.count; ++i) st(m, l->a.out, i, (float)m[l->a.in + i] * l->a.scale + l->a.bias);
}

/* CHANNELWISE_DEQUANTIZE: flags, in, out, channels, channel_size, then
 * channels x {scale, bias}. */
static int parse_channelwise_dequantize(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 20)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .c = arg(l, 3),
                          .count = arg(l, 4)};
  uint64_t n;
  if (!body_has(l, c, 20 + 8ull * l->a.c) || !elements(c, &n, l->a.c, l->a.count, 1) ||
      !in_main(c, "input", l->a.in, n) || !in_main(c, "output", l->a.out, 4 * n))
    return 0;
  l->a.extra = l->body + 20;
  writes(l, l->a.out, 4 * n, AXLE_HAL_DTYPE_F32);
  l->element_ops = n;
  return 1;
}

static void run_channelwise_dequantize(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint64_t ch = 0, i = 0; ch < l->a.c; ++ch) {
    float scale = k210_get_f32(l->a.extra + 8 * ch), bias = k210_get_f32(l->a.extra + 8 * ch + 4);
    for (uint32_t k = 0; k < l->a.count; ++k, ++i) st(m, l->a.out, i, (float)m[l->a.in + i] * scale + bias);
  }
}

/* REQUANTIZE: flags, in, out, count, table[256] */
static int parse_requantize(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 16 + 256)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3),
                          .extra = l->body + 16};
  if (!in_main(c, "input", l->a.in, l->a.count) || !in_main(c, "output", l->a.out, l->a.count)) return 0;
  writes(l, l->a.out, l->a.count, AXLE_HAL_DTYPE_U8);
  l->element_ops = l->a.count;
  return 1;
}

static void run_requantize(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t i = 0; i < l->a.count; ++i) m[l->a.out + i] = l->a.extra[m[l->a.in + i]];
}

/* L2_NORMALIZATION, SOFTMAX, LOGISTIC: flags, in, out, channels (floats) */
static int parse_vector(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 16)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3)};
  uint64_t bytes = 4ull * l->a.count;
  if (!in_main(c, "input", l->a.in, bytes) || !in_main(c, "output", l->a.out, bytes)) return 0;
  writes(l, l->a.out, bytes, AXLE_HAL_DTYPE_F32);
  l->element_ops = 3ull * l->a.count;
  l->transcendentals = l->type == K210_KL_L2_NORMALIZATION ? 1 : l->a.count;
  return 1;
}

static void run_l2_normalization(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  float sum = 0.0f;
  for (uint32_t i = 0; i < l->a.count; ++i) sum += ld(m, l->a.in, i) * ld(m, l->a.in, i);
  if (sum < 1e-10f) sum = 1e-10f;
  float inv = 1.0f / sqrtf(sum);
  for (uint32_t i = 0; i < l->a.count; ++i) st(m, l->a.out, i, ld(m, l->a.in, i) * inv);
}

static void run_softmax(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  if (!l->a.count) return;
  float max = ld(m, l->a.in, 0), sum = 0.0f;
  for (uint32_t i = 1; i < l->a.count; ++i) max = fmaxf(max, ld(m, l->a.in, i));
  for (uint32_t i = 0; i < l->a.count; ++i) {
    float e = expf(ld(m, l->a.in, i) - max);
    sum += e;
    st(m, l->a.out, i, e);
  }
  for (uint32_t i = 0; i < l->a.count; ++i) st(m, l->a.out, i, ld(m, l->a.out, i) / sum);
}

static void run_logistic(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t i = 0; i < l->a.count; ++i) st(m, l->a.out, i, 1.0f / (1.0f + expf(-ld(m, l->a.in, i))));
}

/* ------------------------------------------------------------------------ */
/* Pooling and layout layers.                                                */
/* ------------------------------------------------------------------------ */

/* GLOBAL_AVERAGE_POOL2D: flags, in, out, kernel_size, channels */
static int parse_gap(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 20)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3),
                          .c = arg(l, 4)};
  uint64_t n;
  if (!l->a.count) return bad(c, "kernel size 0");
  if (!elements(c, &n, l->a.count, l->a.c, 1) || !in_main(c, "input", l->a.in, 4 * n) ||
      !in_main(c, "output", l->a.out, 4ull * l->a.c))
    return 0;
  writes(l, l->a.out, 4ull * l->a.c, AXLE_HAL_DTYPE_F32);
  l->element_ops = n;
  return 1;
}

static void run_gap(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t ch = 0; ch < l->a.c; ++ch) {
    float sum = 0.0f;
    for (uint32_t i = 0; i < l->a.count; ++i) sum += ld(m, l->a.in, (uint64_t)ch * l->a.count + i);
    st(m, l->a.out, ch, sum / (float)l->a.count);
  }
}

/* QUANTIZED_MAX_POOL2D / AVERAGE_POOL2D: flags, in, out, in_shape {w,h,c},
 * out_shape {w,h,c}, kernel w/h, stride w/h, padding w/h[, act] */
static int parse_pool(k210_kl_t* l, const k210_kl_ctx_t* c) {
  int quant = l->type == K210_KL_QUANTIZED_MAX_POOL2D;
  if (!body_has(l, c, quant ? 60 : 64)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .w = arg(l, 3),
                          .h = arg(l, 4), .c = arg(l, 5), .ow = arg(l, 6), .oh = arg(l, 7),
                          .oc = arg(l, 8), .kw = arg(l, 9), .kh = arg(l, 10), .sw = arg(l, 11),
                          .sh = arg(l, 12), .pw = arg(l, 13), .ph = arg(l, 14)};
  uint32_t esize = quant ? 1 : 4;
  uint64_t nin, nout;
  if (!elements(c, &nin, l->a.w, l->a.h, l->a.c) || !elements(c, &nout, l->a.ow, l->a.oh, l->a.oc))
    return 0;
  /* Each output channel reads the input channel of the same index. */
  if (l->a.oc > l->a.c) return bad(c, "%u output channels from %u input channels", l->a.oc, l->a.c);
  if (l->a.kw > 65535 || l->a.kh > 65535 || l->a.sw > 65535 || l->a.sh > 65535 || l->a.pw > 65535 ||
      l->a.ph > 65535)
    return bad(c, "kernel, stride or padding above 65535");
  if (!in_main(c, "input", l->a.in, esize * nin) || !in_main(c, "output", l->a.out, esize * nout)) return 0;
  writes(l, l->a.out, esize * nout, quant ? AXLE_HAL_DTYPE_U8 : AXLE_HAL_DTYPE_F32);
  l->element_ops = nout * l->a.kw * l->a.kh;
  return 1;
}

/* Window of output (ox, oy) clipped to the input: [x0, x1) x [y0, y1). */
static void pool_window(const k210_kl_args_t* a, uint32_t ox, uint32_t oy, int64_t* x0, int64_t* x1,
                        int64_t* y0, int64_t* y1) {
  int64_t bx = (int64_t)ox * a->sw - a->pw, by = (int64_t)oy * a->sh - a->ph;
  *x0 = bx < 0 ? 0 : bx;
  *y0 = by < 0 ? 0 : by;
  *x1 = bx + a->kw < (int64_t)a->w ? bx + a->kw : (int64_t)a->w;
  *y1 = by + a->kh < (int64_t)a->h ? by + a->kh : (int64_t)a->h;
}

static void run_quantized_max_pool(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const k210_kl_args_t* a = &l->a;
  uint64_t o = 0;
  for (uint32_t ch = 0; ch < a->oc; ++ch) {
    const uint8_t* src = m + a->in + (uint64_t)ch * a->w * a->h;
    for (uint32_t oy = 0; oy < a->oh; ++oy)
      for (uint32_t ox = 0; ox < a->ow; ++ox) {
        int64_t x0, x1, y0, y1;
        pool_window(a, ox, oy, &x0, &x1, &y0, &y1);
        uint8_t v = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x)
            if (src[y * a->w + x] > v) v = src[y * a->w + x];
        m[a->out + o++] = v;
      }
  }
}

static void run_average_pool(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const k210_kl_args_t* a = &l->a;
  uint64_t o = 0;
  for (uint32_t ch = 0; ch < a->oc; ++ch) {
    uint64_t base = (uint64_t)ch * a->w * a->h;
    for (uint32_t oy = 0; oy < a->oh; ++oy)
      for (uint32_t ox = 0; ox < a->ow; ++ox) {
        int64_t x0, x1, y0, y1;
        pool_window(a, ox, oy, &x0, &x1, &y0, &y1);
        float sum = 0.0f, n = 0.0f;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x, n += 1.0f) sum += ld(m, a->in, base + (uint64_t)(y * a->w + x));
        st(m, a->out, o++, n > 0.0f ? sum / n : 0.0f);
      }
  }
}

/* CONCAT / QUANTIZED_CONCAT: flags, out, input_count, input_count x {start, size} */
static int parse_concat(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 12)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .out = arg(l, 1), .count = arg(l, 2), .extra = l->body + 12};
  if (!body_has(l, c, 12 + 8ull * l->a.count)) return 0;
  uint64_t total = 0;
  for (uint32_t i = 0; i < l->a.count; ++i) {
    uint32_t start = arg(l, 3 + 2 * i), size = arg(l, 4 + 2 * i);
    if (!in_main(c, "input", start, size)) return 0;
    total += size;
  }
  if (!in_main(c, "output", l->a.out, total)) return 0;
  writes(l, l->a.out, total, l->type == K210_KL_CONCAT ? AXLE_HAL_DTYPE_F32 : AXLE_HAL_DTYPE_U8);
  l->element_ops = total / 4;
  return 1;
}

static void run_concat(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  uint64_t at = l->a.out;
  for (uint32_t i = 0; i < l->a.count; ++i) {
    uint32_t start = k210_get_u32(l->a.extra + 8 * i), size = k210_get_u32(l->a.extra + 8 * i + 4);
    memmove(m + at, m + start, size);
    at += size;
  }
}

/* TENSORFLOW_FLATTEN: flags, in, out, shape {w,h,c}: CHW floats to HWC */
static int parse_flatten(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .w = arg(l, 3),
                          .h = arg(l, 4), .c = arg(l, 5)};
  uint64_t n;
  if (!elements(c, &n, l->a.w, l->a.h, l->a.c) || !in_main(c, "input", l->a.in, 4 * n) ||
      !in_main(c, "output", l->a.out, 4 * n))
    return 0;
  if (n && l->a.in < l->a.out + 4 * n && l->a.out < l->a.in + 4 * n)
    return bad(c, "input and output overlap");
  writes(l, l->a.out, 4 * n, AXLE_HAL_DTYPE_F32);
  l->element_ops = n;
  return 1;
}

static void run_flatten(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const k210_kl_args_t* a = &l->a;
  uint64_t o = 0;
  for (uint32_t y = 0; y < a->h; ++y)
    for (uint32_t x = 0; x < a->w; ++x)
      for (uint32_t ch = 0; ch < a->c; ++ch)
        st(m, a->out, o++, ld(m, a->in, ((uint64_t)ch * a->h + y) * a->w + x));
}

/* RESIZE_NEAREST_NEIGHBOR (floats) / QUANTIZED_ (bytes): flags, in, out,
 * in_shape {w,h,c}, out_width, out_height, align_corners (unused by the SDK) */
static int parse_resize(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 36)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .w = arg(l, 3),
                          .h = arg(l, 4), .c = arg(l, 5), .ow = arg(l, 6), .oh = arg(l, 7)};
  uint32_t esize = l->type == K210_KL_RESIZE_NEAREST_NEIGHBOR ? 4 : 1;
  uint64_t nin, nout;
  if (!elements(c, &nin, l->a.w, l->a.h, l->a.c) || !elements(c, &nout, l->a.ow, l->a.oh, l->a.c) ||
      !in_main(c, "input", l->a.in, esize * nin) || !in_main(c, "output", l->a.out, esize * nout))
    return 0;
  if (nout && (!l->a.w || !l->a.h)) return bad(c, "resize of an empty image");
  writes(l, l->a.out, esize * nout, esize == 4 ? AXLE_HAL_DTYPE_F32 : AXLE_HAL_DTYPE_U8);
  l->element_ops = nout;
  return 1;
}

static void run_resize(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const k210_kl_args_t* a = &l->a;
  uint32_t esize = l->type == K210_KL_RESIZE_NEAREST_NEIGHBOR ? 4 : 1;
  float sy = (float)a->h / (float)a->oh, sx = (float)a->w / (float)a->ow;
  uint64_t o = 0;
  for (uint32_t ch = 0; ch < a->c; ++ch)
    for (uint32_t oy = 0; oy < a->oh; ++oy) {
      float fy = floorf((float)oy * sy);
      uint32_t iy = fy < (float)(a->h - 1) ? (uint32_t)fy : a->h - 1;
      for (uint32_t ox = 0; ox < a->ow; ++ox, ++o) {
        float fx = floorf((float)ox * sx);
        uint32_t ix = fx < (float)(a->w - 1) ? (uint32_t)fx : a->w - 1;
        uint64_t i = ((uint64_t)ch * a->h + iy) * a->w + ix;
        memcpy(m + a->out + esize * o, m + a->in + esize * i, esize);
      }
    }
}

/* FULLY_CONNECTED: flags, in, out, in_channels, out_channels, act, then
 * weights [out][in] and biases [out] (floats) */
static int parse_fc(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .c = arg(l, 3),
                          .oc = arg(l, 4), .act = arg(l, 5), .extra = l->body + 24};
  uint64_t w;
  if (!elements(c, &w, l->a.c, l->a.oc, 1) || !body_has(l, c, 24 + 4 * (w + l->a.oc)) ||
      !in_main(c, "input", l->a.in, 4ull * l->a.c) || !in_main(c, "output", l->a.out, 4ull * l->a.oc))
    return 0;
  if (l->a.act > 2) return bad(c, "activation %u is not linear (0), relu (1) or relu6 (2)", l->a.act);
  writes(l, l->a.out, 4ull * l->a.oc, AXLE_HAL_DTYPE_F32);
  l->float_macs = w;
  return 1;
}

static void run_fc(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  const k210_kl_args_t* a = &l->a;
  const uint8_t* bias = a->extra + 4ull * a->c * a->oc;
  for (uint32_t o = 0; o < a->oc; ++o) {
    float sum = 0.0f;
    const uint8_t* w = a->extra + 4ull * o * a->c;
    for (uint32_t i = 0; i < a->c; ++i) sum += ld(m, a->in, i) * k210_get_f32(w + 4ull * i);
    sum += k210_get_f32(bias + 4ull * o);
    if (a->act >= 1 && sum < 0.0f) sum = 0.0f;
    if (a->act == 2 && sum > 6.0f) sum = 6.0f;
    st(m, a->out, o, sum);
  }
}

/* ------------------------------------------------------------------------ */
/* K210 layers.                                                              */
/* ------------------------------------------------------------------------ */

/* K210_CONV: flags, main_mem_out_address, layer_offset, weights_offset,
 * bn_offset, act_offset (offsets from the start of the file) */
static int parse_conv(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .out = arg(l, 1)};
  uint32_t layer_off = arg(l, 2), w_off = arg(l, 3), bn_off = arg(l, 4), act_off = arg(l, 5);
  if (!k210_range_ok(layer_off, K210_LAYER_BYTES, c->file_size))
    return bad(c, "layer words at file offset %u (+%u) run past the end of the file (%zu bytes)",
               layer_off, K210_LAYER_BYTES, c->file_size);
  k210_layer_load(c->file + layer_off, l->words);
  k210_layer_decode(l->words, &l->conv);
  /* As the SDK's runtime does: parameters at their place in the loaded model,
   * an interrupt per layer, DMA out for main-memory outputs. */
  l->conv.para_start_addr = (int64_t)K210_MODEL_BUS_BASE + w_off;
  l->conv.bwsx_base_addr = (int64_t)K210_MODEL_BUS_BASE + bn_off;
  l->conv.active_addr = (int64_t)K210_MODEL_BUS_BASE + act_off;
  l->conv.int_en = 1;
  int main_out = (l->a.flags & K210_KLF_MAIN_MEM_OUT) != 0;
  if (main_out) l->conv.send_data_out = 1;
  if ((uint64_t)l->conv.para_start_addr > UINT32_MAX || (uint64_t)l->conv.bwsx_base_addr > UINT32_MAX ||
      (uint64_t)l->conv.active_addr > UINT32_MAX)
    return bad(c, "parameter offsets beyond the 32-bit bus");
  char why[256];
  if (!k210_layer_check(&l->conv, why, sizeof(why))) return bad(c, "%s", why);
  if (k210_layer_encode(&l->conv, l->words)) return bad(c, "layer words do not encode");
  uint32_t oc = (uint32_t)l->conv.o_ch_num + 1;
  uint64_t wbytes = k210_layer_weight_bytes(&l->conv);
  if (!k210_range_ok(w_off, wbytes, c->file_size) || !k210_range_ok(bn_off, 8ull * oc, c->file_size) ||
      !k210_range_ok(act_off, K210_ACT_TABLE_BYTES, c->file_size))
    return bad(c, "weights (%u, +%llu), batch norm (%u, +%u) or activation (%u, +%u) run past the "
                  "end of the file (%zu bytes)",
               w_off, (unsigned long long)wbytes, bn_off, 8 * oc, act_off, K210_ACT_TABLE_BYTES,
               c->file_size);
  if (main_out) {
    uint64_t bytes = (uint64_t)l->conv.dma_total_byte + 1;
    if (!in_main(c, "main-memory output", l->a.out, bytes)) return 0;
    writes(l, l->a.out, bytes, AXLE_HAL_DTYPE_U8);
  }
  return 1;
}

/* K210_ADD_PADDING: flags, in, kpu_out_row, channels: one byte per channel
 * to the [0][0] pixel of a 4-channels-per-row map of 4 lines. */
static int parse_add_padding(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 16)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .kpu_row = arg(l, 2), .count = arg(l, 3)};
  if (!l->a.count) return bad(c, "zero channels");
  k210_fmap_t map = {l->a.kpu_row, 4, 1, 4, 1, 1, l->a.count};
  const char* why = l->a.kpu_row < K210_RAM_ROWS && l->a.count <= 4096 ? k210_fmap_check(&map)
                                                                       : "out of range";
  if (why) return bad(c, "KPU RAM destination row %u, %u channels: %s", l->a.kpu_row, l->a.count, why);
  if (!in_main(c, "input", l->a.in, l->a.count)) return 0;
  l->element_ops = l->a.count;
  return 1;
}

static void run_add_padding(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  k210_fmap_t map = {l->a.kpu_row, 4, 1, 4, 1, 1, l->a.count};
  k210_fmap_store(ram, &map, m + l->a.in);
}

/* K210_REMOVE_PADDING: flags, in, out, channels: every 16th byte */
static int parse_remove_padding(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 16)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .out = arg(l, 2), .count = arg(l, 3)};
  if (!l->a.count) return bad(c, "zero channels");
  if (!in_main(c, "input", l->a.in, 16ull * (l->a.count - 1) + 1) ||
      !in_main(c, "output", l->a.out, l->a.count))
    return 0;
  writes(l, l->a.out, l->a.count, AXLE_HAL_DTYPE_U8);
  l->element_ops = l->a.count;
  return 1;
}

static void run_remove_padding(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  (void)ram;
  for (uint32_t i = 0; i < l->a.count; ++i) m[l->a.out + i] = m[l->a.in + 16ull * i];
}

/* K210_UPLOAD: flags, in, kpu_out_row, width, height, channels */
static int parse_upload(k210_kl_t* l, const k210_kl_ctx_t* c) {
  if (!body_has(l, c, 24)) return 0;
  l->a = (k210_kl_args_t){.flags = arg(l, 0), .in = arg(l, 1), .kpu_row = arg(l, 2), .w = arg(l, 3),
                          .h = arg(l, 4), .c = arg(l, 5)};
  uint64_t n;
  if (!elements(c, &n, l->a.w, l->a.h, l->a.c)) return 0;
  const char* why = "out of range";
  if (l->a.kpu_row < K210_RAM_ROWS && l->a.w <= 1024 && l->a.h <= 4096 && l->a.c <= 4096) {
    k210_fmap_t map = k210_fmap_for_shape(l->a.kpu_row, l->a.w, l->a.h, l->a.c);
    why = k210_fmap_check(&map);
  }
  if (why)
    return bad(c, "KPU RAM destination row %u for %ux%ux%u: %s", l->a.kpu_row, l->a.c, l->a.h, l->a.w, why);
  if (!in_main(c, "input", l->a.in, n)) return 0;
  l->element_ops = n / 8;
  return 1;
}

static void run_upload(const k210_kl_t* l, uint8_t* m, uint8_t* ram) {
  k210_fmap_t map = k210_fmap_for_shape(l->a.kpu_row, l->a.w, l->a.h, l->a.c);
  k210_fmap_store(ram, &map, m + l->a.in);
}

/* ------------------------------------------------------------------------ */

static const k210_kl_desc_t k_layers[] = {
    {K210_KL_ADD, "ADD", parse_add, run_add},
    {K210_KL_QUANTIZED_ADD, "QUANTIZED_ADD", parse_quantized_add, run_quantized_add},
    {K210_KL_GLOBAL_MAX_POOL2D, "GLOBAL_MAX_POOL2D", NULL, NULL},
    {K210_KL_QUANTIZED_GLOBAL_MAX_POOL2D, "QUANTIZED_GLOBAL_MAX_POOL2D", NULL, NULL},
    {K210_KL_GLOBAL_AVERAGE_POOL2D, "GLOBAL_AVERAGE_POOL2D", parse_gap, run_gap},
    {K210_KL_QUANTIZED_GLOBAL_AVERAGE_POOL2D, "QUANTIZED_GLOBAL_AVERAGE_POOL2D", NULL, NULL},
    {K210_KL_MAX_POOL2D, "MAX_POOL2D", NULL, NULL},
    {K210_KL_QUANTIZED_MAX_POOL2D, "QUANTIZED_MAX_POOL2D", parse_pool, run_quantized_max_pool},
    {K210_KL_AVERAGE_POOL2D, "AVERAGE_POOL2D", parse_pool, run_average_pool},
    {K210_KL_QUANTIZED_AVERAGE_POOL2D, "QUANTIZED_AVERAGE_POOL2D", NULL, NULL},
    {K210_KL_QUANTIZE, "QUANTIZE", parse_quantize, run_quantize},
    {K210_KL_DEQUANTIZE, "DEQUANTIZE", parse_dequantize, run_dequantize},
    {K210_KL_REQUANTIZE, "REQUANTIZE", parse_requantize, run_requantize},
    {K210_KL_L2_NORMALIZATION, "L2_NORMALIZATION", parse_vector, run_l2_normalization},
    {K210_KL_SOFTMAX, "SOFTMAX", parse_vector, run_softmax},
    {K210_KL_CONCAT, "CONCAT", parse_concat, run_concat},
    {K210_KL_QUANTIZED_CONCAT, "QUANTIZED_CONCAT", parse_concat, run_concat},
    {K210_KL_FULLY_CONNECTED, "FULLY_CONNECTED", parse_fc, run_fc},
    {K210_KL_QUANTIZED_FULLY_CONNECTED, "QUANTIZED_FULLY_CONNECTED", NULL, NULL},
    {K210_KL_TENSORFLOW_FLATTEN, "TENSORFLOW_FLATTEN", parse_flatten, run_flatten},
    {K210_KL_QUANTIZED_TENSORFLOW_FLATTEN, "QUANTIZED_TENSORFLOW_FLATTEN", NULL, NULL},
    {K210_KL_RESIZE_NEAREST_NEIGHBOR, "RESIZE_NEAREST_NEIGHBOR", parse_resize, run_resize},
    {K210_KL_QUANTIZED_RESIZE_NEAREST_NEIGHBOR, "QUANTIZED_RESIZE_NEAREST_NEIGHBOR", parse_resize, run_resize},
    {K210_KL_CHANNELWISE_DEQUANTIZE, "CHANNELWISE_DEQUANTIZE", parse_channelwise_dequantize,
     run_channelwise_dequantize},
    {K210_KL_LOGISTIC, "LOGISTIC", parse_vector, run_logistic},
    {K210_KL_K210_CONV, "K210_CONV", parse_conv, NULL},
    {K210_KL_K210_ADD_PADDING, "K210_ADD_PADDING", parse_add_padding, run_add_padding},
    {K210_KL_K210_REMOVE_PADDING, "K210_REMOVE_PADDING", parse_remove_padding, run_remove_padding},
    {K210_KL_K210_UPLOAD, "K210_UPLOAD", parse_upload, run_upload},
};

const k210_kl_desc_t* k210_kl_find(uint32_t type) {
  for (size_t i = 0; i < sizeof(k_layers) / sizeof(k_layers[0]); ++i)
    if (k_layers[i].type == type) return &k_layers[i];
  return NULL;
}

const char* k210_kl_name(uint32_t type) {
  const k210_kl_desc_t* d = k210_kl_find(type);
  return d ? d->name : "unknown";
}
