/*
 * The emulated DRP-AI driver: the semantics of /dev/drpai0 (RZ/V2H driver
 * manual section 4, ../shared/DESIGN.md section 6) in user space, for
 * workstations without the board. Like the driver's, the device is one per
 * machine: every process that opens it (with the same AXLE_DRPAI_EMU_KEY)
 * shares its state, its memory and its locks (drpai_emu_shm.h), and threads
 * and processes contend exactly as they would on the driver. A drpai_emu_file_t
 * is one open file; after fork() parent and child share it, as they share a
 * driver's struct file.
 *
 * Calls return what the driver returns, as a negative errno: 0 / a byte count
 * on success, -EINVAL, -EACCES, -ERESTART, ... on failure. Callers that
 * imitate the system-call interface (the LD_PRELOAD shim) turn that into -1
 * and errno.
 *
 * Configuration: AXLE_DRPAI_EMU_KEY, read by every process, names the
 * device (/dev/shm/axle-drpai-KEY.*, default "drpai0"); the rest is read by the
 * process that creates it:
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
 * The memory is a sparse shared file mapped with MAP_NORESERVE: untouched
 * pages cost nothing.
 *
 * Every function is thread-safe; a file may be used from several threads.
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
 * inference runs, in this process (the device's readiness FIFO; the
 * emulator owns it: never read or close it, dup it to keep one). */
int drpai_emu_pollfd(const drpai_emu_file_t* f);
ssize_t drpai_emu_read(drpai_emu_file_t* f, void* buf, size_t count);
ssize_t drpai_emu_write(drpai_emu_file_t* f, const void* buf, size_t count);
int drpai_emu_ioctl(drpai_emu_file_t* f, unsigned long request, void* arg);
/* Work counts and modelled time of the last completed inference. */
void drpai_emu_last_stats(drpai_run_stats_t* out);

/* Not a driver call: the emulator's allocator of the DRP-AI memory area,
 * shared by the processes using the device, so that Axle processes placing
 * programs at once never overlap (on a board, the application owns that
 * choice). Reserves size bytes at *out with the lower 24 bits of *out equal
 * to those of org (the SET_ADRCONV rule), first fit; -ENOMEM when no range
 * fits. The range belongs to this process until drpai_emu_unreserve, or
 * until the process is gone. Needs an open file (f); thread-safe. */
int drpai_emu_reserve(drpai_emu_file_t* f, uint64_t size, uint32_t org, uint64_t* out);
void drpai_emu_unreserve(drpai_emu_file_t* f, uint64_t phys);

#endif /* AXLE_DRPAI_EMU_H_ */
