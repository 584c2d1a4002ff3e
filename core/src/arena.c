#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chunks are at least this large so that many small names share one malloc. */
#define AXLE_ARENA_CHUNK 16384u

struct axle_arena_chunk_t {
  axle_arena_chunk_t* next;
  size_t used, capacity;
  _Alignas(64) unsigned char data[];
};

void axle_arena_init(axle_arena_t* a) { a->head = NULL; }

void axle_arena_free(axle_arena_t* a) {
  axle_arena_chunk_t* c = a->head;
  while (c) {
    axle_arena_chunk_t* next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
}

void* axle_arena_alloc(axle_arena_t* a, size_t size, size_t align) {
  if (align == 0) align = 1;
  if (align > 64 || (align & (align - 1))) return NULL;
  if (size > SIZE_MAX - 128) return NULL;
  axle_arena_chunk_t* c = a->head;
  if (c) {
    size_t at = (c->used + align - 1) & ~(align - 1);
    if (at + size <= c->capacity) {
      c->used = at + size;
      return memset(c->data + at, 0, size);
    }
  }
  size_t cap = size > AXLE_ARENA_CHUNK ? size : AXLE_ARENA_CHUNK;
  c = (axle_arena_chunk_t*)aligned_alloc(64, (sizeof(*c) + cap + 63) & ~(size_t)63);
  if (!c) return NULL;
  c->capacity = cap;
  c->used = size;
  /* A big allocation gets its own chunk behind the head, so the head's spare
   * room keeps serving small requests. */
  if (a->head && size > AXLE_ARENA_CHUNK / 2) {
    c->next = a->head->next;
    a->head->next = c;
  } else {
    c->next = a->head;
    a->head = c;
  }
  return memset(c->data, 0, size);
}

void* axle_arena_dup(axle_arena_t* a, const void* src, size_t n, size_t align) {
  void* p = axle_arena_alloc(a, n ? n : 1, align);
  if (p && n) memcpy(p, src, n);
  return p;
}

char* axle_arena_strdup(axle_arena_t* a, const char* s) {
  if (!s) return NULL;
  return (char*)axle_arena_dup(a, s, strlen(s) + 1, 1);
}
