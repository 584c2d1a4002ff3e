/*
 * The emulated DRP-AI hardware: executes one START's program straight from
 * emulated physical memory, the way the silicon would, trusting nothing it
 * reads. Every descriptor field is validated and every address translated
 * and bounds-checked before it is touched; a bad program ends in the error
 * code the real device reports (DRP or AI-MAC error), never in a crash.
 */
#ifndef AXLE_DRPAI_ENGINE_H_
#define AXLE_DRPAI_ENGINE_H_

#include <stdatomic.h>
#include <stdint.h>

#include "drpai_adrconv.h"
#include "drpai_uapi.h"

/* Emulated physical memory: a host pointer for [phys, phys + size), or NULL
 * when the range is not backed by emulated memory. */
typedef struct drpai_phys_t {
  uint8_t* (*map)(void* ctx, uint64_t phys, uint64_t size);
  void* ctx;
} drpai_phys_t;

typedef struct drpai_job_t {
  drpai_data_t proc[DRPAI_INDEX_NUM];
  /* proc[INPUT] relocates data_in, unless PREPOST_INADDR placed the input. */
  int relocate_input;
  drpai_adrconv_table_t adrconv;  /* the starting descriptor's table */
  const atomic_int* abort;        /* RESET / last close: stop between units */
  uint32_t drp_khz, aimac_khz;    /* clocks for the time model */
} drpai_job_t;

/* What one run did, for profiling: work counts and the modelled time on the
 * configured clocks (a coarse model: AI-MAC 2048 int8 MAC per cycle, DRP 8
 * elements per cycle; docs/drpai.md). */
typedef struct drpai_run_stats_t {
  uint32_t drp_stages, aimac_layers;
  uint64_t aimac_macs, drp_elements;
  uint64_t model_ns;
} drpai_run_stats_t;

/* Returns DRPAI_ERRINFO_SUCCESS, _DRP_ERR, _AIMAC_ERR, or _RESET when abort
 * was raised. */
int32_t drpai_engine_run(const drpai_phys_t* mem, const drpai_job_t* job, drpai_run_stats_t* stats);

#endif /* AXLE_DRPAI_ENGINE_H_ */
