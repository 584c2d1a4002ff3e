/*
 * kmodel v3: the model format of the K210 SDK (kpu_load_kmodel) and nncase
 * v0.1. Layout (little-endian):
 *
 *   header   7 x u32  version (3), flags (bit0: 8-bit KPU mode), arch (0),
 *                     layers_length, max_start_address (lowest KPU RAM row the
 *                     model uses), main_mem_usage, output_count
 *   outputs  output_count x {u32 address, u32 size} in main memory
 *   headers  layers_length x {u32 type, u32 body_size}
 *   bodies   one per layer, back to back; a K210_CONV body holds file offsets
 *            of its 12 layer words, weights, batch-norm and activation tables
 *
 * Execution: main memory is main_mem_usage bytes; the input enters at the
 * first layer (a K210_CONV reads the image from KPU RAM at its source rows, a
 * FULLY_CONNECTED reads floats from main memory); outputs are read from main
 * memory afterwards.
 *
 * Axle extension: a file written by Axle's compiler sets flags bit 1 and ends
 * with a trailer that names the program's inputs/outputs (dtype, shape,
 * quantization, binding slot). The SDK reads neither; docs/k210.md has the
 * trailer's layout.
 */
#ifndef AXLE_K210_KMODEL_H_
#define AXLE_K210_KMODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "axle/hal.h"
#include "k210_layer.h"
#include "k210_ram.h"

#define K210_KMODEL_VERSION 3u
#define K210_KMODEL_HEADER_BYTES 28u
#define K210_KMODEL_FLAG_8BIT 0x1u
#define K210_KMODEL_FLAG_AXLE_TRAILER 0x2u
/* The K210's general-purpose SRAM: no model or main memory can exceed it. */
#define K210_SRAM_BYTES (6u << 20)
/* Bus address where the runner maps the model for the KPU's parameter
 * fetches (the SDK's uncached SRAM alias); 4 KiB aligned, so a file offset's
 * alignment is its bus address's. */
#define K210_MODEL_BUS_BASE 0x40000000u

enum {
  K210_KL_ADD = 1,
  K210_KL_QUANTIZED_ADD = 2,
  K210_KL_GLOBAL_MAX_POOL2D = 3,
  K210_KL_QUANTIZED_GLOBAL_MAX_POOL2D = 4,
  K210_KL_GLOBAL_AVERAGE_POOL2D = 5,
  K210_KL_QUANTIZED_GLOBAL_AVERAGE_POOL2D = 6,
  K210_KL_MAX_POOL2D = 7,
  K210_KL_QUANTIZED_MAX_POOL2D = 8,
  K210_KL_AVERAGE_POOL2D = 9,
  K210_KL_QUANTIZED_AVERAGE_POOL2D = 10,
  K210_KL_QUANTIZE = 11,
  K210_KL_DEQUANTIZE = 12,
  K210_KL_REQUANTIZE = 13,
  K210_KL_L2_NORMALIZATION = 14,
  K210_KL_SOFTMAX = 15,
  K210_KL_CONCAT = 16,
  K210_KL_QUANTIZED_CONCAT = 17,
  K210_KL_FULLY_CONNECTED = 18,
  K210_KL_QUANTIZED_FULLY_CONNECTED = 19,
  K210_KL_TENSORFLOW_FLATTEN = 20,
  K210_KL_QUANTIZED_TENSORFLOW_FLATTEN = 21,
  K210_KL_RESIZE_NEAREST_NEIGHBOR = 22,
  K210_KL_QUANTIZED_RESIZE_NEAREST_NEIGHBOR = 23,
  K210_KL_CHANNELWISE_DEQUANTIZE = 24,
  K210_KL_LOGISTIC = 25,
  K210_KL_K210_CONV = 10240,
  K210_KL_K210_ADD_PADDING = 10241,
  K210_KL_K210_REMOVE_PADDING = 10242,
  K210_KL_K210_UPLOAD = 10243
};

/* KLF_MAIN_MEM_OUT: a K210_CONV's output also goes to main memory (DMA). */
#define K210_KLF_MAIN_MEM_OUT 0x1u

/* A layer's arguments after validation. Which fields mean what depends on
 * the type (k210_kmodel_layers.c); addresses are main memory offsets except
 * where a layer writes KPU RAM (kpu_row). */
typedef struct k210_kl_args_t {
  uint32_t flags;
  uint32_t in, in_b, out, kpu_row;
  uint32_t count;          /* elements, or channels */
  uint32_t w, h, c;        /* input shape */
  uint32_t ow, oh, oc;     /* output shape */
  uint32_t kw, kh, sw, sh, pw, ph;
  uint32_t act;            /* 0 linear, 1 relu, 2 relu6 */
  int32_t q[9];            /* quantized add: a offset/mul/shift, b ..., out ... */
  float scale, bias;
  const uint8_t* extra;    /* weights, lookup table, quant params, concat ranges */
} k210_kl_args_t;

typedef struct k210_kl_t {
  uint32_t type;
  const uint8_t* body;     /* inside the model's own copy of the file */
  uint32_t body_size;
  k210_kl_args_t a;
  /* K210_CONV: the words as the runner sends them (parameter addresses on
   * the model's bus mapping, int_en set, send_data_out for main-memory
   * output), and their decoded form. */
  uint64_t words[K210_LAYER_WORDS];
  k210_layer_t conv;
  /* What the layer writes in main memory and in which element type, for
   * naming output dtypes; and its estimated CPU work (k210_cycles.h). */
  uint32_t write_addr, write_bytes;
  int32_t write_dtype;     /* AXLE_HAL_DTYPE_F32/U8, or 0 when none */
  uint64_t float_macs, element_ops, transcendentals;
} k210_kl_t;

/* One input or output of a program as its caller sees it. */
typedef struct k210_io_t {
  char name[64];
  int32_t dtype;           /* caller's element type */
  uint32_t rank;
  int64_t shape[AXLE_HAL_MAX_RANK];
  float scale;             /* caller float <-> model u8: real = scale * (q - zero_point) */
  int32_t zero_point;
  int quantized;           /* caller F32, model U8 */
  uint32_t slot;           /* compile-time binding (trailer) */
  uint64_t offset;
} k210_io_t;

typedef struct k210_kmodel_t {
  uint8_t* data;           /* own copy of the file */
  size_t size;
  uint32_t flags, layer_count, max_start_address, main_mem_usage, output_count;
  uint32_t* out_addr;      /* [output_count] */
  uint32_t* out_size;
  int32_t* out_dtype;
  k210_kl_t* layers;
  /* The model input: U8 C x H x W uploaded to in_map (first layer a
   * K210_CONV), or F32 in_count floats at in_addr (FULLY_CONNECTED). */
  int32_t in_dtype;
  k210_fmap_t in_map;
  uint32_t in_addr, in_count;
  /* Inputs then outputs as callers see them: from the Axle trailer, else
   * derived from the model (U8 [1,C,H,W] or F32 [1,n]; outputs [1,n]). */
  uint32_t io_count;       /* 1 + output_count */
  k210_io_t* io;
  uint32_t slot_count;     /* trailer: slots of the compiled subgraph; else 0 */
} k210_kmodel_t;

/* Parses and validates a whole file (copied; data is not kept). name appears
 * in messages. On failure returns NULL with an AXLE_HAL_* status in *status
 * (UNSUPPORTED for a newer format or a feature this plugin lacks,
 * INVALID_MODEL for damage) and a message naming the file and layer in why. */
k210_kmodel_t* k210_kmodel_parse(const void* data, size_t size, const char* name, int32_t* status,
                                 char* why, size_t why_size);
void k210_kmodel_free(k210_kmodel_t* m);

/* Whether bytes look like a kmodel of any version (for artifact_load's "not
 * mine" answer): version 3 with arch 0, nncase's "KMDL" magic, or a file
 * named *.kmodel. */
int k210_kmodel_recognise(const void* data, size_t size, const char* path);

/* Elements of an input/output (product of its shape). */
uint64_t k210_io_elements(const k210_io_t* io);

/* Name of a layer type ("K210_CONV"), or "unknown". */
const char* k210_kl_name(uint32_t type);

#endif /* AXLE_K210_KMODEL_H_ */
