/*
 * The emulated DRP-AI driver: the semantics of /dev/drpai0 (RZ/V2H driver
 * manual section 4, ../shared/DESIGN.md section 6) in user space, for
 * workstations without the board. One emulated device per process, shared by
 * every descriptor opened in it (threads contend exactly as they would on
 * the driver); the device comes up at the first open and goes away at the
 * last close, taking its memory contents with it.
 *
 * Calls return what the driver returns, as a negative errno: 0 / a byte count
 * on success, -EINVAL, -EACCES, -ERESTART, ... on failure. Callers that
 * imitate the system-call interface (the LD_PRELOAD shim) turn that into -1
 * and errno.
 *
 * Configuration (read at the first open):
 *   AXLE_DRPAI_EMU_AREA        "BASE:SIZE" of the DRP-AI memory area, hex or
 *                              decimal, 4 KiB aligned. Default 0x240000000:0x20000000
 *                              (512 MiB at 9 GiB, the RZ/V2H EVK's drp_reserved).
 *   AXLE_DRPAI_EMU_EXTRA       "BASE:SIZE[,BASE:SIZE...]" more emulated physical
 *                              memory outside the area (e.g. a camera buffer
 *                              that proc[INPUT] or PREPOST_INADDR points at).
 *   AXLE_DRPAI_EMU_TIMEOUT_MS  exclusive-control timeout before ETIMEDOUT
 *                              (default 1000).
 *   AXLE_DRPAI_EMU_RUN_US      minimum duration of an inference (default 0),
 *                              so that "still running" can be observed.
 * The area is reserved with MAP_NORESERVE: untouched pages cost nothing.
 */
#ifndef AXLE_DRPAI_EMU_H_
#define AXLE_DRPAI_EMU_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "drpai_engine.h"

typedef struct drpai_emu_file_t drpai_emu_file_t;

/* open(): -EIO (configuration unusable or hardware reset failed), -ENOMEM,
 * -ETIMEDOUT. */
int drpai_emu_open(drpai_emu_file_t** out);
/* close(): always succeeds; the last close stops a running inference. */
void drpai_emu_close(drpai_emu_file_t* f);
/* A descriptor select()/poll()/epoll report readable exactly when no
 * inference runs (an eventfd the emulator owns; never read or close it). */
int drpai_emu_pollfd(const drpai_emu_file_t* f);
ssize_t drpai_emu_read(drpai_emu_file_t* f, void* buf, size_t count);
ssize_t drpai_emu_write(drpai_emu_file_t* f, const void* buf, size_t count);
int drpai_emu_ioctl(drpai_emu_file_t* f, unsigned long request, void* arg);
/* Work counts and modelled time of the last completed inference. */
void drpai_emu_last_stats(drpai_run_stats_t* out);

#endif /* AXLE_DRPAI_EMU_H_ */
