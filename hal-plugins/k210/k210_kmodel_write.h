/*
 * kmodel v3 writer, for Axle's compiler. Bodies are laid out as nncase v0.1
 * lays them: a K210_CONV body holds its arguments, then its layer words
 * (8-aligned), weights (128-aligned), batch-norm table (8-aligned) and
 * activation table (256-aligned), at file offsets its arguments name. With
 * io given, flags bit 1 is set and the Axle trailer follows the last body.
 */
#ifndef AXLE_K210_KMODEL_WRITE_H_
#define AXLE_K210_KMODEL_WRITE_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_kmodel.h"

typedef struct k210_kw_layer_t {
  uint32_t type;
  /* Body of a CPU or padding/upload layer: arg_count little-endian words
   * (floats as their bits). */
  uint32_t args[8];
  uint32_t arg_count;
  /* K210_CONV */
  uint32_t flags, main_out;
  uint64_t words[K210_LAYER_WORDS];
  const uint8_t* weights;
  uint32_t weight_bytes;
  const uint8_t* bn;
  uint32_t bn_bytes;
  const uint8_t* act; /* K210_ACT_TABLE_BYTES */
} k210_kw_layer_t;

typedef struct k210_kw_model_t {
  uint32_t max_start_address, main_mem_usage;
  uint32_t output_count;
  const uint32_t* out_addr;
  const uint32_t* out_size;
  uint32_t layer_count;
  const k210_kw_layer_t* layers;
  /* Trailer: 1 + output_count entries, or NULL for a plain kmodel. */
  const k210_io_t* io;
  uint32_t slot_count;
} k210_kw_model_t;

/* The file in malloc'd memory; 0 when out of memory. */
int k210_kmodel_write(const k210_kw_model_t* m, uint8_t** out, size_t* out_size);

#endif /* AXLE_K210_KMODEL_WRITE_H_ */
