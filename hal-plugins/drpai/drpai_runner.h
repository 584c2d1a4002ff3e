/*
 * Runs a DRP-AI program through the device interface with the sequence a
 * board application uses (driver manual 4.5): SET_ADRCONV to map the
 * program's DRP-AI addresses onto where it was placed, ASSIGN_PARAM + write
 * of drp_param_info.txt, ASSIGN + write of each object file; then per
 * inference ASSIGN + write of the inputs, START, waiting on the descriptor,
 * GET_STATUS, ASSIGN + read of the outputs. Every call that the manual says
 * may return ERESTART is retried as in its section 4.5.2.
 */
#ifndef AXLE_DRPAI_RUNNER_H_
#define AXLE_DRPAI_RUNNER_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_dev.h"
#include "drpai_program.h"

/* Physical address where DRP-AI address a of a program placed at phys
 * lands. */
static inline uint64_t drpai_runner_phys(const drpai_program_t* p, uint64_t phys, uint32_t a) {
  return phys + (a - p->org_base);
}

/* Places program p at physical address phys (which must share the lower 24
 * bits of p->org_base). 0, or a negative errno with err set. */
int drpai_runner_place(drpai_dev_t* dev, const drpai_program_t* p, uint64_t phys, char* err,
                       size_t err_size);

/* Why a wait should stop early: return non-zero to RESET the device. */
typedef int (*drpai_stop_fn)(void* ctx);

/* One inference: inputs[i] holds io input i (its size bytes), outputs[i]
 * receives io output i. Returns 0; -ECANCELED when stop() asked (the device
 * was reset); -EIO when the device reported an error (*dev_err holds
 * drpai_status_t.err); another negative errno when a call failed (err says
 * which). */
int drpai_runner_run(drpai_dev_t* dev, const drpai_program_t* p, uint64_t phys,
                     const void* const* inputs, void* const* outputs, drpai_stop_fn stop,
                     void* stop_ctx, int32_t* dev_err, char* err, size_t err_size);

#endif /* AXLE_DRPAI_RUNNER_H_ */
