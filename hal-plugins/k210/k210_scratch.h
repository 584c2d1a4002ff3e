/*
 * Scratch buffers that grow to the largest request and are reused: the
 * emulator's per-layer arrays, the chip's main memory, input staging.
 */
#ifndef AXLE_K210_SCRATCH_H_
#define AXLE_K210_SCRATCH_H_

#include <stddef.h>
#include <stdlib.h>

/* old when it already holds `bytes`, else a new block (old's contents are not
 * kept); *cap follows. NULL, with old freed and *cap 0, when out of memory. */
static inline void* k210_grow(void* old, size_t* cap, size_t bytes) {
  if (old && bytes <= *cap) return old;
  free(old);
  void* p = malloc(bytes ? bytes : 1);
  *cap = p ? bytes : 0;
  return p;
}

#endif /* AXLE_K210_SCRATCH_H_ */
