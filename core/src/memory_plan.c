#include <stdlib.h>

#include "session.h"

/* Greedy by size (largest first), lowest fitting offset among items alive at
 * the same time: the classic offset planner (TFLite's "greedy by size"). */
static int by_size_desc(const void* a, const void* b) {
  const axle_interval_t* x = *(const axle_interval_t* const*)a;
  const axle_interval_t* y = *(const axle_interval_t* const*)b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->first < y->first ? -1 : (x->first > y->first);
}

static int by_offset(const void* a, const void* b) {
  const axle_interval_t* x = *(const axle_interval_t* const*)a;
  const axle_interval_t* y = *(const axle_interval_t* const*)b;
  return x->offset < y->offset ? -1 : (x->offset > y->offset);
}

uint64_t axle_memory_plan(axle_interval_t* items, uint32_t count, uint64_t align) {
  if (count == 0) return 0;
  axle_interval_t** order = (axle_interval_t**)malloc(count * sizeof(*order));
  axle_interval_t** placed = (axle_interval_t**)malloc(count * sizeof(*placed));
  if (!order || !placed) {
    /* Without scratch, fall back to no reuse: still correct. */
    uint64_t at = 0;
    for (uint32_t i = 0; i < count; ++i) {
      items[i].offset = at;
      at += (items[i].size + align - 1) / align * align;
    }
    free(order);
    free(placed);
    return at;
  }
  for (uint32_t i = 0; i < count; ++i) order[i] = &items[i];
  qsort(order, count, sizeof(*order), by_size_desc);
  uint32_t placed_count = 0;
  uint64_t peak = 0;
  for (uint32_t i = 0; i < count; ++i) {
    axle_interval_t* it = order[i];
    uint64_t size = (it->size + align - 1) / align * align;
    /* placed[] is kept sorted by offset, so gaps are found in one pass. */
    uint64_t at = 0;
    for (uint32_t j = 0; j < placed_count; ++j) {
      const axle_interval_t* o = placed[j];
      if (o->last < it->first || o->first > it->last) continue;
      uint64_t osize = (o->size + align - 1) / align * align;
      if (at + size <= o->offset) break;
      if (o->offset + osize > at) at = o->offset + osize;
    }
    it->offset = at;
    if (at + size > peak) peak = at + size;
    placed[placed_count++] = it;
    qsort(placed, placed_count, sizeof(*placed), by_offset);
  }
  free(order);
  free(placed);
  return peak;
}
