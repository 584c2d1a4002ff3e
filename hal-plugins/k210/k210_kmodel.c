/*
 * kmodel v3 reader. Everything is validated before anything runs: counts
 * against the bytes that remain (before allocating), every layer's arguments
 * against the file, main memory and KPU RAM, the layer words with the same
 * checks the KPU applies. Messages name the file and the layer.
 */
#include "k210_kmodel.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k210_bytes.h"
#include "k210_kmodel_layers.h"
#include "k210_kpu.h"

#define KMDL_MAGIC 0x4C444D4Bu /* "KMDL": nncase >= 0.2 */
#define TRAILER_MAGIC "AXLK"
#define TRAILER_VERSION 1u
/* The nncase v0.1 writer declares bodies padded that it does not write at
 * the very end of a file (iris.kmodel lacks the last 4 bytes). */
#define MAX_MISSING_TAIL 7u

typedef struct parser_t {
  const char* name;
  int32_t* status;
  char* why;
  size_t why_size;
} parser_t;

static void* fail(parser_t* p, int32_t status, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void* fail(parser_t* p, int32_t status, const char* fmt, ...) {
  int at = snprintf(p->why, p->why_size, "%s: ", p->name);
  if (at < 0 || (size_t)at >= p->why_size) at = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->why + at, p->why_size - (size_t)at, fmt, ap);
  va_end(ap);
  *p->status = status;
  return NULL;
}

void k210_kmodel_free(k210_kmodel_t* m) {
  if (!m) return;
  free(m->data);
  free(m->out_addr);
  free(m->out_size);
  free(m->out_dtype);
  free(m->layers);
  free(m->io);
  free(m);
}

int k210_kmodel_recognise(const void* data, size_t size, const char* path) {
  const uint8_t* b = (const uint8_t*)data;
  if (b && size >= 12 && k210_get_u32(b) == K210_KMODEL_VERSION && k210_get_u32(b + 8) == 0) return 1;
  if (b && size >= 4 && k210_get_u32(b) == KMDL_MAGIC) return 1;
  size_t n = path ? strlen(path) : 0;
  return n >= 7 && strcmp(path + n - 7, ".kmodel") == 0;
}

uint64_t k210_io_elements(const k210_io_t* io) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < io->rank; ++i) n *= (uint64_t)io->shape[i];
  return n;
}

static uint64_t model_input_elements(const k210_kmodel_t* m) {
  return m->in_dtype == AXLE_HAL_DTYPE_U8
             ? (uint64_t)m->in_map.channels * m->in_map.height * m->in_map.width
             : m->in_count;
}

/* Inputs/outputs when the file does not name them: the image as the first
 * KPU layer reads it, or the floats of the first fully connected layer; each
 * output as a [1, n] vector of what its last writer produces. */
static void derive_io(k210_kmodel_t* m) {
  k210_io_t* in = &m->io[0];
  snprintf(in->name, sizeof(in->name), "input");
  in->dtype = m->in_dtype;
  if (m->in_dtype == AXLE_HAL_DTYPE_U8) {
    in->rank = 4;
    in->shape[0] = 1;
    in->shape[1] = m->in_map.channels;
    in->shape[2] = m->in_map.height;
    in->shape[3] = m->in_map.width;
  } else {
    in->rank = 2;
    in->shape[0] = 1;
    in->shape[1] = m->in_count;
  }
  for (uint32_t i = 0; i < m->output_count; ++i) {
    k210_io_t* o = &m->io[1 + i];
    snprintf(o->name, sizeof(o->name), "output%u", i);
    o->dtype = m->out_dtype[i];
    o->rank = 2;
    o->shape[0] = 1;
    o->shape[1] = m->out_size[i] / axle_hal_dtype_size(m->out_dtype[i]);
  }
}

/* The Axle trailer (docs/k210.md): "AXLK", version, slot_count, io_count,
 * then per input/output: u32 slot, u32 0, u64 offset, i32 dtype, u32 rank,
 * i64 shape[rank], f32 scale, i32 zero_point, u32 quantized, u32 name_len,
 * name. It must end the file. */
static void* parse_trailer(parser_t* p, k210_kmodel_t* m, const uint8_t* t, size_t n) {
#define NEED(k)                                                                            \
  do {                                                                                     \
    if (n - at < (k)) return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer is truncated"); \
  } while (0)
  size_t at = 0;
  NEED(16);
  if (memcmp(t, TRAILER_MAGIC, 4) != 0)
    return fail(p, AXLE_HAL_INVALID_MODEL, "flags announce an Axle trailer but none follows the layers");
  if (k210_get_u32(t + 4) != TRAILER_VERSION)
    return fail(p, AXLE_HAL_UNSUPPORTED, "Axle trailer version %u (this plugin reads %u)",
                k210_get_u32(t + 4), TRAILER_VERSION);
  m->slot_count = k210_get_u32(t + 8);
  uint32_t count = k210_get_u32(t + 12);
  at = 16;
  if (count != m->io_count)
    return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer describes %u inputs/outputs, the model has %u",
                count, m->io_count);
  if (m->slot_count > 4096) return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer: %u slots", m->slot_count);
  for (uint32_t i = 0; i < count; ++i) {
    k210_io_t* io = &m->io[i];
    NEED(24);
    io->slot = k210_get_u32(t + at);
    io->offset = k210_get_u64(t + at + 8);
    io->dtype = (int32_t)k210_get_u32(t + at + 16);
    io->rank = k210_get_u32(t + at + 20);
    at += 24;
    if (io->rank < 1 || io->rank > AXLE_HAL_MAX_RANK || io->slot >= m->slot_count || k210_get_u32(t + at - 20))
      return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer: entry %u has rank %u, slot %u", i, io->rank, io->slot);
    NEED(8ull * io->rank + 16);
    for (uint32_t d = 0; d < io->rank; ++d, at += 8) {
      io->shape[d] = (int64_t)k210_get_u64(t + at);
      if (io->shape[d] < 1 || io->shape[d] > (1 << 24))
        return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer: entry %u has dimension %lld", i,
                    (long long)io->shape[d]);
    }
    io->scale = k210_get_f32(t + at);
    io->zero_point = (int32_t)k210_get_u32(t + at + 4);
    io->quantized = (int)k210_get_u32(t + at + 8);
    uint32_t len = k210_get_u32(t + at + 12);
    at += 16;
    if (len < 1 || len >= sizeof(io->name))
      return fail(p, AXLE_HAL_INVALID_MODEL, "Axle trailer: entry %u has a %u-byte name", i, len);
    NEED(len);
    memcpy(io->name, t + at, len);
    io->name[len] = '\0';
    at += len;
    /* Callers see the program's own types, or floats quantized to its u8
     * input with a usable scale and zero point. */
    int32_t model_dtype = i == 0 ? m->in_dtype : m->out_dtype[i - 1];
    uint64_t model_elems = i == 0 ? model_input_elements(m)
                                  : m->out_size[i - 1] / axle_hal_dtype_size(model_dtype);
    int quant_ok = io->quantized == 0 ||
                   (io->quantized == 1 && i == 0 && io->dtype == AXLE_HAL_DTYPE_F32 &&
                    model_dtype == AXLE_HAL_DTYPE_U8 && isfinite(io->scale) && io->scale > 0.0f &&
                    io->zero_point >= 0 && io->zero_point <= 255);
    if (!quant_ok || (!io->quantized && io->dtype != model_dtype) || k210_io_elements(io) != model_elems)
      return fail(p, AXLE_HAL_INVALID_MODEL,
                  "Axle trailer: entry %u ('%s') does not match the model's %s %s of %llu elements", i,
                  io->name, model_dtype == AXLE_HAL_DTYPE_U8 ? "u8" : "float32",
                  i == 0 ? "input" : "output", (unsigned long long)model_elems);
  }
  if (at != n) return fail(p, AXLE_HAL_INVALID_MODEL, "%zu bytes after the Axle trailer", n - at);
  return m;
#undef NEED
}

/* Element type of output i: what the last layer writing its first byte
 * produces. */
static void* output_types(parser_t* p, k210_kmodel_t* m) {
  for (uint32_t i = 0; i < m->output_count; ++i) {
    int32_t dtype = 0;
    for (uint32_t l = 0; l < m->layer_count; ++l) {
      const k210_kl_t* kl = &m->layers[l];
      if (kl->write_dtype && m->out_addr[i] >= kl->write_addr &&
          m->out_addr[i] - kl->write_addr < kl->write_bytes)
        dtype = kl->write_dtype;
    }
    if (!dtype)
      return fail(p, AXLE_HAL_INVALID_MODEL, "output %u at main memory %u is written by no layer", i,
                  m->out_addr[i]);
    if (m->out_size[i] % axle_hal_dtype_size(dtype))
      return fail(p, AXLE_HAL_INVALID_MODEL, "output %u has %u bytes, not a whole number of %s", i,
                  m->out_size[i], dtype == AXLE_HAL_DTYPE_F32 ? "floats" : "bytes");
    m->out_dtype[i] = dtype;
  }
  return m;
}

k210_kmodel_t* k210_kmodel_parse(const void* data, size_t size, const char* name, int32_t* status,
                                 char* why, size_t why_size) {
  parser_t p = {name ? name : "kmodel", status, why, why_size};
  const uint8_t* b = (const uint8_t*)data;
  if (!b || size < K210_KMODEL_HEADER_BYTES)
    return fail(&p, AXLE_HAL_INVALID_MODEL, "truncated: %zu bytes, a kmodel header has %u", size,
                K210_KMODEL_HEADER_BYTES);
  uint32_t version = k210_get_u32(b);
  if (version == KMDL_MAGIC)
    return fail(&p, AXLE_HAL_UNSUPPORTED, "nncase 'KMDL' format (kmodel v4 or later); this plugin "
                                          "runs kmodel v3 (K210 SDK, nncase v0.1)");
  if (version != K210_KMODEL_VERSION)
    return fail(&p, version > K210_KMODEL_VERSION ? AXLE_HAL_UNSUPPORTED : AXLE_HAL_INVALID_MODEL,
                "kmodel version %u; this plugin runs version 3", version);
  uint32_t flags = k210_get_u32(b + 4), arch = k210_get_u32(b + 8), layers = k210_get_u32(b + 12);
  uint32_t max_start = k210_get_u32(b + 16), main_mem = k210_get_u32(b + 20), outputs = k210_get_u32(b + 24);
  if (arch != 0) return fail(&p, AXLE_HAL_INVALID_MODEL, "arch %u (K210 kmodels have arch 0)", arch);
  if (!(flags & K210_KMODEL_FLAG_8BIT))
    return fail(&p, AXLE_HAL_UNSUPPORTED, "16-bit KPU mode (flags bit 0 clear) is not emulated");
  if (size > K210_SRAM_BYTES)
    return fail(&p, AXLE_HAL_UNSUPPORTED, "%zu bytes do not fit the K210's 6 MiB of SRAM", size);
  if (main_mem > K210_SRAM_BYTES)
    return fail(&p, AXLE_HAL_INVALID_MODEL, "main memory of %u bytes exceeds the K210's 6 MiB of SRAM", main_mem);
  if (max_start > K210_RAM_ROWS)
    return fail(&p, AXLE_HAL_INVALID_MODEL, "KPU RAM start row %u is beyond the %u rows", max_start, K210_RAM_ROWS);
  if (layers == 0 || outputs == 0)
    return fail(&p, AXLE_HAL_INVALID_MODEL, "%u layers and %u outputs", layers, outputs);
  /* Counts against the bytes that remain, before allocating for them. */
  uint64_t tables = 8ull * outputs + 8ull * layers;
  if (tables > size - K210_KMODEL_HEADER_BYTES)
    return fail(&p, AXLE_HAL_INVALID_MODEL,
                "the header claims %u outputs and %u layers; their tables alone need %llu bytes, "
                "the file has %zu",
                outputs, layers, (unsigned long long)(tables + K210_KMODEL_HEADER_BYTES), size);

  k210_kmodel_t* m = (k210_kmodel_t*)calloc(1, sizeof(*m));
  if (!m) return fail(&p, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  m->data = (uint8_t*)malloc(size);
  m->out_addr = (uint32_t*)calloc(outputs, sizeof(uint32_t));
  m->out_size = (uint32_t*)calloc(outputs, sizeof(uint32_t));
  m->out_dtype = (int32_t*)calloc(outputs, sizeof(int32_t));
  m->layers = (k210_kl_t*)calloc(layers, sizeof(k210_kl_t));
  m->io = (k210_io_t*)calloc(1 + (size_t)outputs, sizeof(k210_io_t));
  if (!m->data || !m->out_addr || !m->out_size || !m->out_dtype || !m->layers || !m->io) {
    k210_kmodel_free(m);
    return fail(&p, AXLE_HAL_OUT_OF_MEMORY, "out of memory");
  }
  memcpy(m->data, b, size);
  m->size = size;
  m->flags = flags;
  m->layer_count = layers;
  m->max_start_address = max_start;
  m->main_mem_usage = main_mem;
  m->output_count = outputs;
  m->io_count = 1 + outputs;
  void* ok = m;

  const uint8_t* d = m->data;
  size_t at = K210_KMODEL_HEADER_BYTES;
  for (uint32_t i = 0; ok && i < outputs; ++i, at += 8) {
    m->out_addr[i] = k210_get_u32(d + at);
    m->out_size[i] = k210_get_u32(d + at + 4);
    if (m->out_size[i] == 0 || !k210_range_ok(m->out_addr[i], m->out_size[i], main_mem))
      ok = fail(&p, AXLE_HAL_INVALID_MODEL, "output %u [%u, +%u) is empty or outside main memory (%u bytes)",
                i, m->out_addr[i], m->out_size[i], main_mem);
  }
  const uint8_t* headers = d + at;
  uint64_t body = at + 8ull * layers;
  /* The bodies must fill the rest of the file: a wrong layer count shifts
   * the table and shows up here before any body is misread. */
  uint64_t declared = 0;
  for (uint32_t i = 0; i < layers; ++i) declared += k210_get_u32(headers + 8 * i + 4);
  uint64_t follows = size - body;
  if (ok && ((flags & K210_KMODEL_FLAG_AXLE_TRAILER) ? declared > follows
                                                     : declared < follows || declared - follows > MAX_MISSING_TAIL))
    ok = fail(&p, AXLE_HAL_INVALID_MODEL,
              "the %u layer headers declare %llu bytes of bodies but %llu follow them; the header's "
              "layer count or a body size is wrong",
              layers, (unsigned long long)declared, (unsigned long long)follows);
  char reason[320];
  k210_kl_ctx_t ctx = {d, size, main_mem, reason, sizeof(reason)};
  for (uint32_t i = 0; ok && i < layers; ++i) {
    k210_kl_t* l = &m->layers[i];
    l->type = k210_get_u32(headers + 8 * i);
    uint32_t body_size = k210_get_u32(headers + 8 * i + 4);
    const k210_kl_desc_t* desc = k210_kl_find(l->type);
    if (!desc) {
      ok = fail(&p, AXLE_HAL_INVALID_MODEL, "layer %u: unknown layer type %u", i, l->type);
    } else if (!desc->parse) {
      ok = fail(&p, AXLE_HAL_UNSUPPORTED, "layer %u: %s is not supported (the K210 SDK does not run it either)",
                i, desc->name);
    } else if (body > size) {
      ok = fail(&p, AXLE_HAL_INVALID_MODEL,
                "layer %u (%s): body at offset %llu starts past the end of the file (%zu bytes); "
                "the header's layer count (%u) or an earlier body size is wrong",
                i, desc->name, (unsigned long long)body, size, layers);
    } else {
      l->body = d + body;
      l->body_size = size - body < body_size ? (uint32_t)(size - body) : body_size;
      if (!desc->parse(l, &ctx))
        ok = fail(&p, AXLE_HAL_INVALID_MODEL, "layer %u (%s): %s", i, desc->name, reason);
      body += body_size;
    }
  }
  if (ok) {
    const k210_kl_t* first = &m->layers[0];
    if (first->type == K210_KL_K210_CONV) {
      m->in_dtype = AXLE_HAL_DTYPE_U8;
      m->in_map = k210_layer_in_map(&first->conv);
    } else if (first->type == K210_KL_FULLY_CONNECTED) {
      m->in_dtype = AXLE_HAL_DTYPE_F32;
      m->in_addr = first->a.in;
      m->in_count = first->a.c;
    } else {
      ok = fail(&p, AXLE_HAL_INVALID_MODEL,
                "the first layer is %s; a kmodel v3 starts at K210_CONV (image input) or "
                "FULLY_CONNECTED (float input)",
                k210_kl_name(first->type));
    }
  }
  if (ok) ok = output_types(&p, m);
  if (ok) {
    derive_io(m);
    if (flags & K210_KMODEL_FLAG_AXLE_TRAILER) ok = parse_trailer(&p, m, d + body, size - (size_t)body);
  }
  if (!ok) {
    k210_kmodel_free(m);
    return NULL;
  }
  return m;
}
