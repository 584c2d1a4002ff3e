/*
 * kmodel v3 layer types: the argument layout of each body (kpu.h's
 * kpu_model_*_layer_argument_t), its validation against the file, main
 * memory and KPU RAM, and the CPU execution of every type the K210 SDK runs
 * on the CPU (everything but K210_CONV, which the runner drives through the
 * KPU's registers).
 *
 * Semantics follow the SDK's kpu.c; where Axle deviates it says so here:
 *   QUANTIZED_ADD processes exactly `count` bytes (the SDK rounds up to 8);
 *   SOFTMAX subtracts the true maximum (the SDK starts from FLT_MIN);
 *   AVERAGE_POOL2D writes 0 for a window without taps (the SDK divides by 0).
 */
#ifndef AXLE_K210_KMODEL_LAYERS_H_
#define AXLE_K210_KMODEL_LAYERS_H_

#include <stddef.h>
#include <stdint.h>

#include "k210_kmodel.h"

/* What parsing checks a body against. */
typedef struct k210_kl_ctx_t {
  const uint8_t* file;
  size_t file_size;
  uint32_t main_size;      /* main_mem_usage */
  char* why;
  size_t why_size;
} k210_kl_ctx_t;

typedef struct k210_kl_desc_t {
  uint32_t type;
  const char* name;
  /* Reads l->body (l->body_size bytes available), fills l->a and the write
   * and cost fields; 1, or 0 with the reason in ctx->why. */
  int (*parse)(k210_kl_t* l, const k210_kl_ctx_t* ctx);
  /* CPU execution; NULL for K210_CONV. */
  void (*run)(const k210_kl_t* l, uint8_t* main, uint8_t* kpu_ram);
} k210_kl_desc_t;

/* The descriptor of a type this plugin runs, or NULL. */
const k210_kl_desc_t* k210_kl_find(uint32_t type);

#endif /* AXLE_K210_KMODEL_LAYERS_H_ */
