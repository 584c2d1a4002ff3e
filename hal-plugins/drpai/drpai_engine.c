/* The emulated DRP-AI hardware (see drpai_engine.h and docs/drpai.md). */
#include "drpai_engine.h"

#include <math.h>
#include <string.h>

#include "drpai_format.h"
#include "drpai_kernels.h"

typedef struct table_t {
  const uint8_t* entries;
  uint32_t count;
} table_t;

typedef struct eng_t {
  const drpai_phys_t* mem;
  const drpai_job_t* job;
  drpai_run_stats_t* st;
  uint32_t in_org, in_size, out_org, out_size; /* drp_desc header words */
  uint8_t configured[DRPAI_LIB_MAX + 1];
  const uint8_t* param;
  uint64_t param_size;
  int aimac_loaded;
  table_t adesc, acmd, pdesc, pcmd;
} eng_t;

#define FAIL (-1)

static int aborted(const eng_t* e) { return e->job->abort && atomic_load(e->job->abort); }

/* A proc[] object: headered file of entry_size-byte entries. */
static int load_table(eng_t* e, int index, const char* magic, uint32_t entry_size, uint32_t max,
                      table_t* out, const uint8_t** header) {
  const drpai_data_t* d = &e->job->proc[index];
  if (d->size < DRPAI_HEADER_BYTES) return FAIL;
  const uint8_t* p = e->mem->map(e->mem->ctx, d->address, d->size);
  if (!p || memcmp(p, magic, 4) != 0 || drpai_get16(p + 4) != DRPAI_FORMAT_VERSION ||
      drpai_get16(p + 6) != entry_size)
    return FAIL;
  uint32_t count = drpai_get32(p + 8);
  if (count > max || (uint64_t)count * entry_size > d->size - DRPAI_HEADER_BYTES) return FAIL;
  out->entries = p + DRPAI_HEADER_BYTES;
  out->count = count;
  if (header) *header = p;
  return 0;
}

/* DRP-AI address range -> host pointer through the ADRCONV table. The range
 * must translate contiguously (it may not straddle into another setting). */
static uint8_t* dev_at(const eng_t* e, uint32_t org, uint64_t bytes) {
  if (bytes == 0 || (uint64_t)org + bytes > 0x100000000ull) return NULL;
  uint64_t p0, p1;
  if (drpai_adrconv_translate(&e->job->adrconv, org, &p0) != 0 ||
      drpai_adrconv_translate(&e->job->adrconv, (uint32_t)(org + bytes - 1), &p1) != 0 ||
      p1 - p0 != bytes - 1)
    return NULL;
  return e->mem->map(e->mem->ctx, p0, bytes);
}

/* data_in / data_out addresses are relocated by START's proc[] entries. */
static uint8_t* io_at(const eng_t* e, uint32_t addr, uint64_t bytes, int output) {
  uint32_t base = output ? e->out_org : e->in_org, size = output ? e->out_size : e->in_size;
  const drpai_data_t* d = &e->job->proc[output ? DRPAI_INDEX_OUTPUT : DRPAI_INDEX_INPUT];
  if (addr < base || addr - base > size || bytes > size - (addr - base)) return NULL;
  uint64_t off = addr - base;
  if (off > d->size || bytes > d->size - off) return NULL;
  return e->mem->map(e->mem->ctx, d->address + off, bytes);
}

static int overlap(const uint8_t* a, uint64_t na, const uint8_t* b, uint64_t nb) {
  return a < b + nb && b < a + na;
}

/* ---- DRP stages ---------------------------------------------------------- */

static int drp_sizes(uint32_t lib, const uint8_t* b, uint64_t* in, uint64_t* out) {
  uint64_t iw = drpai_get16(b + DRPAI_P_IWIDTH), ih = drpai_get16(b + DRPAI_P_IHEIGHT);
  uint64_t ow = drpai_get16(b + DRPAI_P_OWIDTH), oh = drpai_get16(b + DRPAI_P_OHEIGHT);
  uint64_t ch = drpai_get16(b + DRPAI_P_ICH);
  int image = lib <= DRPAI_LIB_TRANSPOSE;
  if (image && (!iw || !ih || !ow || !oh)) return FAIL;
  switch (lib) {
    case DRPAI_LIB_CROP: {
      uint64_t x = drpai_get16(b + DRPAI_P_CROP_X), y = drpai_get16(b + DRPAI_P_CROP_Y);
      uint32_t fmt = drpai_get16(b + DRPAI_P_CROP_FMT), elem = drpai_get16(b + DRPAI_P_CROP_ELEM);
      if (fmt > 1 || elem < 1 || elem > 16 || (fmt == 1 && (elem != 2 || (x & 1) || (ow & 1))))
        return FAIL;
      if (x + ow > iw || y + oh > ih) return FAIL;
      *in = iw * ih * elem;
      *out = ow * oh * elem;
      return 0;
    }
    case DRPAI_LIB_YUV2RGB: {
      uint32_t fmt = drpai_get16(b + DRPAI_P_RGB_FMT);
      if (fmt > 2 || ow != iw || oh != ih || (iw & 1)) return FAIL;
      *in = iw * ih * 2;
      *out = iw * ih * (fmt == 2 ? 1 : 3);
      return 0;
    }
    case DRPAI_LIB_RESIZE:
      if (ch < 1 || ch > 16 || drpai_get16(b + DRPAI_P_RESIZE_ALG) > 1) return FAIL;
      *in = iw * ih * ch;
      *out = ow * oh * ch;
      return 0;
    case DRPAI_LIB_SCALER: {
      uint32_t type = drpai_get16(b + DRPAI_P_SCALER_TYPE);
      if (ch < 1 || ch > 4 || type > 1 || ow != iw || oh != ih) return FAIL;
      *in = iw * ih * ch * (type ? 4 : 1);
      *out = iw * ih * ch * 4;
      return 0;
    }
    case DRPAI_LIB_TRANSPOSE: {
      uint32_t elem = drpai_get16(b + DRPAI_P_TR_ELEM);
      if (ch < 1 || (elem != 1 && elem != 2 && elem != 4) || drpai_get16(b + DRPAI_P_TR_DIR) > 1 ||
          ow != iw || oh != ih)
        return FAIL;
      *in = *out = iw * ih * ch * elem;
      return 0;
    }
    case DRPAI_LIB_QUANTIZE:
    case DRPAI_LIB_DEQUANTIZE: {
      uint64_t n = drpai_get32(b + DRPAI_P_Q_COUNT);
      float scale = drpai_getf32(b + DRPAI_P_Q_SCALE);
      int32_t zp = drpai_geti32(b + DRPAI_P_Q_ZERO);
      if (!n || !(scale > 0.0f) || isinf(scale) || zp < -128 || zp > 127) return FAIL;
      *in = lib == DRPAI_LIB_QUANTIZE ? n * 4 : n;
      *out = lib == DRPAI_LIB_QUANTIZE ? n : n * 4;
      return 0;
    }
    case DRPAI_LIB_SOFTMAX: {
      uint64_t o = drpai_get32(b + DRPAI_P_SM_OUTER), a = drpai_get32(b + DRPAI_P_SM_AXIS),
               i = drpai_get32(b + DRPAI_P_SM_INNER);
      if (!o || !a || !i || o * a > UINT32_MAX || o * a * i > UINT32_MAX / 4) return FAIL;
      *in = *out = o * a * i * 4;
      return 0;
    }
    case DRPAI_LIB_MEMCOPY:
      *in = *out = drpai_get32(b + DRPAI_P_COPY_BYTES);
      return *in ? 0 : FAIL;
    default:
      return FAIL;
  }
}

static int run_drp(eng_t* e, uint32_t lib, uint32_t offset) {
  if (lib < 1 || lib > DRPAI_LIB_MAX || !e->configured[lib]) return FAIL;
  if (offset % DRPAI_ALIGN || offset > e->param_size || e->param_size - offset < DRPAI_PARAM_BLOCK)
    return FAIL;
  const uint8_t* b = e->param + offset;
  if (drpai_get32(b + DRPAI_P_LIB) != lib) return FAIL;
  uint64_t nin, nout;
  if (drp_sizes(lib, b, &nin, &nout) != 0) return FAIL;
  if (nin > drpai_get32(b + DRPAI_P_ICAP) || nout > drpai_get32(b + DRPAI_P_OCAP)) return FAIL;
  uint32_t flags = drpai_get16(b + DRPAI_P_FLAGS);
  uint32_t raddr = drpai_get32(b + DRPAI_P_RADDR), waddr = drpai_get32(b + DRPAI_P_WADDR);
  const uint8_t* in = (flags & DRPAI_PF_SRC_INPUT) && e->job->relocate_input
                          ? io_at(e, raddr, nin, 0)
                          : dev_at(e, raddr, nin);
  uint8_t* out = (flags & DRPAI_PF_DST_OUTPUT) ? io_at(e, waddr, nout, 1) : dev_at(e, waddr, nout);
  if (!in || !out) return FAIL;
  if (lib != DRPAI_LIB_MEMCOPY && overlap(in, nin, out, nout)) return FAIL;
  uint32_t iw = drpai_get16(b + DRPAI_P_IWIDTH), ih = drpai_get16(b + DRPAI_P_IHEIGHT);
  uint32_t ow = drpai_get16(b + DRPAI_P_OWIDTH), oh = drpai_get16(b + DRPAI_P_OHEIGHT);
  uint32_t ch = drpai_get16(b + DRPAI_P_ICH);
  switch (lib) {
    case DRPAI_LIB_CROP:
      drpai_k_crop(in, iw, drpai_get16(b + DRPAI_P_CROP_ELEM), drpai_get16(b + DRPAI_P_CROP_X),
                   drpai_get16(b + DRPAI_P_CROP_Y), ow, oh, out);
      break;
    case DRPAI_LIB_YUV2RGB:
      drpai_k_yuv2rgb(in, iw, ih, drpai_get16(b + DRPAI_P_RGB_FMT), out);
      break;
    case DRPAI_LIB_RESIZE:
      drpai_k_resize(in, iw, ih, ch, out, ow, oh, drpai_get16(b + DRPAI_P_RESIZE_ALG));
      break;
    case DRPAI_LIB_SCALER: {
      float add[4], mul[4];
      for (uint32_t k = 0; k < 4; ++k) {
        add[k] = drpai_getf32(b + DRPAI_P_SCALER_ADD + 4 * k);
        mul[k] = drpai_getf32(b + DRPAI_P_SCALER_MUL + 4 * k);
      }
      /* The output is float32: 4-byte alignment comes from the 64-byte
       * placement rule, checked here because the kernel stores floats. */
      if ((uintptr_t)out % 4) return FAIL;
      drpai_k_scaler(in, drpai_get16(b + DRPAI_P_SCALER_TYPE), iw * ih, ch, add, mul, (float*)out);
      break;
    }
    case DRPAI_LIB_TRANSPOSE:
      drpai_k_transpose(in, iw, ih, ch, drpai_get16(b + DRPAI_P_TR_ELEM), drpai_get16(b + DRPAI_P_TR_DIR),
                        out);
      break;
    case DRPAI_LIB_QUANTIZE:
      if ((uintptr_t)in % 4) return FAIL;
      drpai_k_quantize((const float*)in, nout, drpai_getf32(b + DRPAI_P_Q_SCALE),
                       drpai_geti32(b + DRPAI_P_Q_ZERO), (int8_t*)out);
      break;
    case DRPAI_LIB_DEQUANTIZE:
      if ((uintptr_t)out % 4) return FAIL;
      drpai_k_dequantize((const int8_t*)in, nin, drpai_getf32(b + DRPAI_P_Q_SCALE),
                         drpai_geti32(b + DRPAI_P_Q_ZERO), (float*)out);
      break;
    case DRPAI_LIB_SOFTMAX:
      if ((uintptr_t)in % 4 || (uintptr_t)out % 4) return FAIL;
      drpai_k_softmax((const float*)in, drpai_get32(b + DRPAI_P_SM_OUTER), drpai_get32(b + DRPAI_P_SM_AXIS),
                      drpai_get32(b + DRPAI_P_SM_INNER), (float*)out);
      break;
    case DRPAI_LIB_MEMCOPY:
      memmove(out, in, nin);
      break;
  }
  e->st->drp_elements += nout;
  return 0;
}

/* ---- AI-MAC layers --------------------------------------------------------- */

static int load_aimac(eng_t* e) {
  if (e->aimac_loaded) return 0;
  if (load_table(e, DRPAI_INDEX_AIMAC_DESC, DRPAI_MAGIC_AIMAC_DESC, DRPAI_AIMAC_DESC_ENTRY,
                 DRPAI_MAX_LAYERS, &e->adesc, NULL) != 0 ||
      load_table(e, DRPAI_INDEX_AIMAC_CMD, DRPAI_MAGIC_AIMAC_CMD, DRPAI_AIMAC_CMD_ENTRY,
                 DRPAI_MAX_LAYERS, &e->acmd, NULL) != 0 ||
      load_table(e, DRPAI_INDEX_AIMAC_PARAM_DESC, DRPAI_MAGIC_PARAM_DESC, DRPAI_PARAM_DESC_ENTRY,
                 DRPAI_MAX_LAYERS, &e->pdesc, NULL) != 0 ||
      load_table(e, DRPAI_INDEX_AIMAC_PARAM_CMD, DRPAI_MAGIC_PARAM_CMD, DRPAI_PARAM_CMD_ENTRY,
                 DRPAI_MAX_LAYERS * 4, &e->pcmd, NULL) != 0)
    return FAIL;
  e->aimac_loaded = 1;
  return 0;
}

/* A layer reads only parameters that aimac_param_cmd loaded for it. */
static int loaded(const eng_t* e, uint32_t layer, uint32_t addr, uint32_t bytes) {
  for (uint32_t i = 0; i < e->pcmd.count; ++i) {
    const uint8_t* p = e->pcmd.entries + (size_t)i * DRPAI_PARAM_CMD_ENTRY;
    uint64_t src = drpai_get32(p + 4), n = drpai_get32(p + 8);
    if (drpai_get32(p) == layer && addr >= src && (uint64_t)addr + bytes <= src + n) return 1;
  }
  return 0;
}

static int dims_ok(const drpai_cmd_t* c, int first, int last) {
  for (int k = first; k <= last; ++k)
    if (c->c[k] < 1 || c->c[k] > DRPAI_MAX_DIM) return 0;
  return 1;
}

static int quant_ok(const drpai_cmd_t* c) {
  const int32_t* w = c->c;
  return w[DRPAI_C_IN_ZP] >= -128 && w[DRPAI_C_IN_ZP] <= 127 && w[DRPAI_C_OUT_ZP] >= -128 &&
         w[DRPAI_C_OUT_ZP] <= 127 && w[DRPAI_C_ACT_MIN] >= -128 &&
         w[DRPAI_C_ACT_MIN] <= w[DRPAI_C_ACT_MAX] && w[DRPAI_C_ACT_MAX] <= 127;
}

/* Geometry checks shared by conv and pools; returns the window MACs per
 * output element or 0 when invalid. */
static uint64_t window_ok(const drpai_cmd_t* c) {
  const int32_t* w = c->c;
  if (!dims_ok(c, DRPAI_C_N, DRPAI_C_SW) || !dims_ok(c, DRPAI_C_DH, DRPAI_C_DW)) return 0;
  if (w[DRPAI_C_PT] < 0 || w[DRPAI_C_PL] < 0 || w[DRPAI_C_PT] > DRPAI_MAX_DIM ||
      w[DRPAI_C_PL] > DRPAI_MAX_DIM)
    return 0;
  return (uint64_t)w[DRPAI_C_KH] * (uint64_t)w[DRPAI_C_KW];
}

static uint64_t elems(int64_t a, int64_t b, int64_t c, int64_t d) {
  return (uint64_t)a * (uint64_t)b * (uint64_t)c * (uint64_t)d;
}

typedef struct params_t {
  const int8_t* w;
  const int32_t* bias;
  const int32_t* requant;
} params_t;

static int layer_params(eng_t* e, uint32_t layer, uint32_t index, uint64_t wbytes, uint32_t channels,
                        int with_bias, params_t* p) {
  if (index >= e->pdesc.count) return FAIL;
  const uint8_t* d = e->pdesc.entries + (size_t)index * DRPAI_PARAM_DESC_ENTRY;
  uint32_t wa = drpai_get32(d), wn = drpai_get32(d + 4), ba = drpai_get32(d + 8),
           bn = drpai_get32(d + 12), ra = drpai_get32(d + 16), rn = drpai_get32(d + 20);
  if (wn != wbytes || drpai_get32(d + 24) != channels || !loaded(e, layer, wa, wn)) return FAIL;
  p->w = (const int8_t*)dev_at(e, wa, wn);
  if (!p->w) return FAIL;
  if (!with_bias) return 0;
  if (bn != (uint64_t)channels * 4 || rn != (uint64_t)channels * 8 || ba % 4 || ra % 4 ||
      !loaded(e, layer, ba, bn) || !loaded(e, layer, ra, rn))
    return FAIL;
  p->bias = (const int32_t*)(void*)dev_at(e, ba, bn);
  p->requant = (const int32_t*)(void*)dev_at(e, ra, rn);
  if (!p->bias || !p->requant) return FAIL;
  for (uint32_t k = 0; k < channels; ++k)
    if (p->requant[2 * k] < 0 || p->requant[2 * k + 1] < 0 || p->requant[2 * k + 1] > 62) return FAIL;
  return 0;
}

static int run_layer(eng_t* e, uint32_t li) {
  if (li >= e->adesc.count) return FAIL;
  const uint8_t* d = e->adesc.entries + (size_t)li * DRPAI_AIMAC_DESC_ENTRY;
  uint32_t op = drpai_get32(d), in_addr = drpai_get32(d + 4), out_addr = drpai_get32(d + 8);
  uint32_t ci = drpai_get32(d + 12), pi = drpai_get32(d + 16);
  uint64_t nin = drpai_get32(d + 20), nout = drpai_get32(d + 24);
  if (ci >= e->acmd.count) return FAIL;
  drpai_cmd_t c;
  for (uint32_t k = 0; k < DRPAI_AIMAC_CMD_WORDS; ++k)
    c.c[k] = drpai_geti32(e->acmd.entries + (size_t)ci * DRPAI_AIMAC_CMD_ENTRY + 4 * k);
  const int32_t* w = c.c;
  uint64_t want_in = 0, want_out = 0, macs = 0, wbytes = 0, nin2 = 0;
  uint32_t channels = 0;
  switch (op) {
    case DRPAI_AIMAC_CONV: {
      uint64_t win = window_ok(&c);
      if (!win || !dims_ok(&c, DRPAI_C_GROUP, DRPAI_C_GROUP) || !quant_ok(&c) ||
          w[DRPAI_C_CIN] % w[DRPAI_C_GROUP] || w[DRPAI_C_COUT] % w[DRPAI_C_GROUP])
        return FAIL;
      want_in = elems(w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN]);
      want_out = elems(w[DRPAI_C_N], w[DRPAI_C_COUT], w[DRPAI_C_HOUT], w[DRPAI_C_WOUT]);
      channels = (uint32_t)w[DRPAI_C_COUT];
      wbytes = (uint64_t)channels * (uint64_t)(w[DRPAI_C_CIN] / w[DRPAI_C_GROUP]) * win;
      macs = want_out * (uint64_t)(w[DRPAI_C_CIN] / w[DRPAI_C_GROUP]) * win;
      break;
    }
    case DRPAI_AIMAC_GEMM:
      if (!dims_ok(&c, DRPAI_C_N, DRPAI_C_CIN) || !dims_ok(&c, DRPAI_C_COUT, DRPAI_C_COUT) ||
          !quant_ok(&c))
        return FAIL;
      want_in = (uint64_t)w[DRPAI_C_N] * (uint64_t)w[DRPAI_C_CIN];
      want_out = (uint64_t)w[DRPAI_C_N] * (uint64_t)w[DRPAI_C_COUT];
      channels = (uint32_t)w[DRPAI_C_COUT];
      wbytes = (uint64_t)channels * (uint64_t)w[DRPAI_C_CIN];
      macs = want_out * (uint64_t)w[DRPAI_C_CIN];
      break;
    case DRPAI_AIMAC_MAXPOOL:
    case DRPAI_AIMAC_AVGPOOL: {
      uint64_t win = window_ok(&c);
      if (!win || !quant_ok(&c) || w[DRPAI_C_MULT] < 0 || w[DRPAI_C_SHIFT] < 0 || w[DRPAI_C_SHIFT] > 62)
        return FAIL;
      want_in = elems(w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN]);
      want_out = elems(w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HOUT], w[DRPAI_C_WOUT]);
      macs = want_out * win;
      break;
    }
    case DRPAI_AIMAC_LUT:
      want_in = want_out = macs = nin;
      wbytes = 256;
      break;
    case DRPAI_AIMAC_ADD:
    case DRPAI_AIMAC_MUL:
      if (!dims_ok(&c, DRPAI_C_N, DRPAI_C_WIN) || !quant_ok(&c) || w[DRPAI_C_B_ZP] < -128 ||
          w[DRPAI_C_B_ZP] > 127 || w[DRPAI_C_MULT] < 0 || w[DRPAI_C_B_MULT] < 0 || w[DRPAI_C_SHIFT] < 0 ||
          w[DRPAI_C_SHIFT] > 62)
        return FAIL;
      want_in = want_out = macs = elems(w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN]);
      nin2 = (w[DRPAI_C_FLAGS] & DRPAI_CF_B_PER_CHANNEL) ? (uint64_t)w[DRPAI_C_CIN] : want_in;
      break;
    case DRPAI_AIMAC_CONCAT:
      if (!dims_ok(&c, DRPAI_C_N, DRPAI_C_COUT) || !quant_ok(&c) || w[DRPAI_C_OFFSET] < 0 ||
          w[DRPAI_C_OFFSET] > w[DRPAI_C_COUT] - w[DRPAI_C_CIN] || w[DRPAI_C_MULT] < 0 || w[DRPAI_C_SHIFT] < 0 ||
          w[DRPAI_C_SHIFT] > 62)
        return FAIL;
      want_in = macs = elems(w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN]);
      want_out = elems(w[DRPAI_C_N], w[DRPAI_C_COUT], w[DRPAI_C_HIN], w[DRPAI_C_WIN]);
      break;
    default:
      return FAIL;
  }
  if (!nin || nin != want_in || nout != want_out || macs > DRPAI_MAX_LAYER_MACS) return FAIL;
  const int8_t* x = (const int8_t*)dev_at(e, in_addr, nin);
  int8_t* y = (int8_t*)dev_at(e, out_addr, nout);
  if (!x || !y) return FAIL;
  if (op != DRPAI_AIMAC_LUT && overlap((const uint8_t*)x, nin, (const uint8_t*)y, nout)) return FAIL;
  const int8_t* x2 = NULL;
  if (nin2) {
    x2 = (const int8_t*)dev_at(e, drpai_get32(d + 28), nin2);
    if (!x2 || overlap((const uint8_t*)x2, nin2, (const uint8_t*)y, nout)) return FAIL;
  }
  params_t p = {NULL, NULL, NULL};
  if (wbytes && layer_params(e, li, pi, wbytes, channels, op != DRPAI_AIMAC_LUT, &p) != 0) return FAIL;
  switch (op) {
    case DRPAI_AIMAC_CONV: drpai_k_conv(&c, x, p.w, p.bias, p.requant, y); break;
    case DRPAI_AIMAC_GEMM: drpai_k_gemm(&c, x, p.w, p.bias, p.requant, y); break;
    case DRPAI_AIMAC_MAXPOOL: drpai_k_maxpool(&c, x, y); break;
    case DRPAI_AIMAC_AVGPOOL: drpai_k_avgpool(&c, x, y); break;
    case DRPAI_AIMAC_LUT: drpai_k_lut(x, nin, p.w, y); break;
    case DRPAI_AIMAC_ADD: drpai_k_eltwise(&c, x, x2, 0, y); break;
    case DRPAI_AIMAC_MUL: drpai_k_eltwise(&c, x, x2, 1, y); break;
    case DRPAI_AIMAC_CONCAT: drpai_k_concat(&c, x, y); break;
  }
  e->st->aimac_macs += macs;
  ++e->st->aimac_layers;
  return 0;
}

/* ---- the program ------------------------------------------------------------ */

int32_t drpai_engine_run(const drpai_phys_t* mem, const drpai_job_t* job, drpai_run_stats_t* stats) {
  eng_t e;
  memset(&e, 0, sizeof(e));
  memset(stats, 0, sizeof(*stats));
  e.mem = mem;
  e.job = job;
  e.st = stats;
  /* The DRP loads its configuration and descriptor first: any damage there
   * is a DRP error before anything runs. */
  table_t cfg, desc;
  const uint8_t* dh;
  if (load_table(&e, DRPAI_INDEX_DRP_CFG, DRPAI_MAGIC_DRPCFG, DRPAI_DRPCFG_ENTRY, DRPAI_LIB_MAX + 1,
                 &cfg, NULL) != 0 ||
      load_table(&e, DRPAI_INDEX_DRP_DESC, DRPAI_MAGIC_DRP_DESC, DRPAI_DRP_DESC_ENTRY, DRPAI_MAX_STAGES,
                 &desc, &dh) != 0)
    return DRPAI_ERRINFO_DRP_ERR;
  for (uint32_t i = 0; i < cfg.count; ++i) {
    uint32_t lib = drpai_get32(cfg.entries + 4 * i);
    if (lib < 1 || lib > DRPAI_LIB_MAX) return DRPAI_ERRINFO_DRP_ERR;
    e.configured[lib] = 1;
  }
  e.in_org = drpai_get32(dh + 12);
  e.in_size = drpai_get32(dh + 16);
  e.out_org = drpai_get32(dh + 20);
  e.out_size = drpai_get32(dh + 24);
  const drpai_data_t* pd = &job->proc[DRPAI_INDEX_DRP_PARAM];
  e.param_size = pd->size;
  e.param = pd->size ? mem->map(mem->ctx, pd->address, pd->size) : NULL;
  if (pd->size && !e.param) return DRPAI_ERRINFO_DRP_ERR;

  for (uint32_t s = 0; s < desc.count; ++s) {
    if (aborted(&e)) return DRPAI_ERRINFO_RESET;
    const uint8_t* st = desc.entries + (size_t)s * DRPAI_DRP_DESC_ENTRY;
    uint32_t kind = drpai_get32(st), a = drpai_get32(st + 4), b = drpai_get32(st + 8);
    if (kind == DRPAI_STAGE_DRP) {
      if (run_drp(&e, a, b) != 0) return DRPAI_ERRINFO_DRP_ERR;
      ++stats->drp_stages;
    } else if (kind == DRPAI_STAGE_AIMAC) {
      if (load_aimac(&e) != 0) return DRPAI_ERRINFO_AIMAC_ERR;
      if ((uint64_t)a + b > e.adesc.count) return DRPAI_ERRINFO_AIMAC_ERR;
      for (uint32_t l = a; l < a + b; ++l) {
        if (aborted(&e)) return DRPAI_ERRINFO_RESET;
        if (run_layer(&e, l) != 0) return DRPAI_ERRINFO_AIMAC_ERR;
      }
    } else {
      return DRPAI_ERRINFO_DRP_ERR;
    }
  }
  uint64_t aimac_cycles = (stats->aimac_macs + 2047) / 2048, drp_cycles = (stats->drp_elements + 7) / 8;
  stats->model_ns = aimac_cycles * 1000000ull / (job->aimac_khz ? job->aimac_khz : 1) +
                    drp_cycles * 1000000ull / (job->drp_khz ? job->drp_khz : 1);
  return DRPAI_ERRINFO_SUCCESS;
}
