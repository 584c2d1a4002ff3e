#include "k210_kmodel_write.h"

#include <stdlib.h>
#include <string.h>

#include "k210_bytes.h"

typedef struct buf_t {
  uint8_t* p;
  size_t len, cap;
  int failed;
} buf_t;

static uint8_t* reserve(buf_t* b, size_t n) {
  if (b->failed) return NULL;
  if (b->cap - b->len < n) {
    size_t cap = (b->cap + n) * 2;
    uint8_t* g = (uint8_t*)realloc(b->p, cap);
    if (!g) {
      b->failed = 1;
      return NULL;
    }
    b->p = g;
    b->cap = cap;
  }
  uint8_t* at = b->p + b->len;
  memset(at, 0, n);
  b->len += n;
  return at;
}

static void put32(buf_t* b, uint32_t v) {
  uint8_t* p = reserve(b, 4);
  if (p) k210_put_u32(p, v);
}

static void put64(buf_t* b, uint64_t v) {
  uint8_t* p = reserve(b, 8);
  if (p) k210_put_u64(p, v);
}

static void put_bytes(buf_t* b, const void* data, size_t n) {
  uint8_t* p = reserve(b, n);
  if (p && n) memcpy(p, data, n);
}

/* Zero padding up to a multiple of align; returns the new offset. */
static uint32_t align_to(buf_t* b, size_t align) {
  reserve(b, (align - b->len % align) % align);
  return (uint32_t)b->len;
}

static void put_conv(buf_t* b, const k210_kw_layer_t* l) {
  size_t args = b->len;
  reserve(b, 24);
  uint32_t words_at = align_to(b, 8);
  uint8_t bytes[K210_LAYER_BYTES];
  k210_layer_store(l->words, bytes);
  put_bytes(b, bytes, sizeof(bytes));
  uint32_t w_at = align_to(b, 128);
  put_bytes(b, l->weights, l->weight_bytes);
  uint32_t bn_at = align_to(b, 8);
  put_bytes(b, l->bn, l->bn_bytes);
  uint32_t act_at = align_to(b, 256);
  put_bytes(b, l->act, K210_ACT_TABLE_BYTES);
  if (b->failed) return;
  uint32_t fields[6] = {l->flags, l->main_out, words_at, w_at, bn_at, act_at};
  for (int i = 0; i < 6; ++i) k210_put_u32(b->p + args + 4 * i, fields[i]);
}

static void put_trailer(buf_t* b, const k210_kw_model_t* m) {
  put_bytes(b, "AXLK", 4);
  put32(b, 1);
  put32(b, m->slot_count);
  put32(b, 1 + m->output_count);
  for (uint32_t i = 0; i <= m->output_count; ++i) {
    const k210_io_t* io = &m->io[i];
    put32(b, io->slot);
    put32(b, 0);
    put64(b, io->offset);
    put32(b, (uint32_t)io->dtype);
    put32(b, io->rank);
    for (uint32_t d = 0; d < io->rank; ++d) put64(b, (uint64_t)io->shape[d]);
    uint8_t* f = reserve(b, 4);
    if (f) k210_put_f32(f, io->scale);
    put32(b, (uint32_t)io->zero_point);
    put32(b, (uint32_t)io->quantized);
    size_t len = strlen(io->name);
    put32(b, (uint32_t)len);
    put_bytes(b, io->name, len);
  }
}

int k210_kmodel_write(const k210_kw_model_t* m, uint8_t** out, size_t* out_size) {
  buf_t b = {0};
  *out = NULL;
  *out_size = 0;
  uint32_t flags = K210_KMODEL_FLAG_8BIT | (m->io ? K210_KMODEL_FLAG_AXLE_TRAILER : 0);
  uint32_t header[7] = {K210_KMODEL_VERSION, flags, 0, m->layer_count, m->max_start_address,
                        m->main_mem_usage, m->output_count};
  for (int i = 0; i < 7; ++i) put32(&b, header[i]);
  for (uint32_t i = 0; i < m->output_count; ++i) {
    put32(&b, m->out_addr[i]);
    put32(&b, m->out_size[i]);
  }
  size_t headers = b.len;
  reserve(&b, 8ull * m->layer_count);
  for (uint32_t i = 0; i < m->layer_count && !b.failed; ++i) {
    const k210_kw_layer_t* l = &m->layers[i];
    size_t start = b.len;
    if (l->type == K210_KL_K210_CONV) {
      put_conv(&b, l);
    } else {
      for (uint32_t a = 0; a < l->arg_count; ++a) put32(&b, l->args[a]);
    }
    if (b.failed) break;
    k210_put_u32(b.p + headers + 8 * i, l->type);
    k210_put_u32(b.p + headers + 8 * i + 4, (uint32_t)(b.len - start));
  }
  if (m->io) put_trailer(&b, m);
  if (b.failed) {
    free(b.p);
    return 0;
  }
  *out = b.p;
  *out_size = b.len;
  return 1;
}
