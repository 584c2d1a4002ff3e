/*
 * Bump allocator for objects that share one lifetime (a graph's strings and
 * arrays). Chunks are freed together by axle_arena_free().
 * Not thread-safe.
 */
#ifndef AXLE_CORE_ARENA_H_
#define AXLE_CORE_ARENA_H_

#include <stddef.h>

typedef struct axle_arena_chunk_t axle_arena_chunk_t;

typedef struct axle_arena_t {
  axle_arena_chunk_t* head;
} axle_arena_t;

void axle_arena_init(axle_arena_t* a);
void axle_arena_free(axle_arena_t* a);
/* Zeroed memory aligned to align (power of two <= 64); NULL on overflow/OOM. */
void* axle_arena_alloc(axle_arena_t* a, size_t size, size_t align);
/* Copies n bytes / a NUL-terminated string (NULL stays NULL). */
void* axle_arena_dup(axle_arena_t* a, const void* src, size_t n, size_t align);
char* axle_arena_strdup(axle_arena_t* a, const char* s);

#endif /* AXLE_CORE_ARENA_H_ */
