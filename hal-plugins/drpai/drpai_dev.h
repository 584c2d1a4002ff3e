/*
 * One DRP-AI device interface, two backends: the real driver
 * (open("/dev/drpai0") and the RZ/V2H ioctls) and the emulated driver in this
 * process (drpai_emu.h), with identical semantics. Everything above this
 * layer (the plugin, the runner, tests) is written once against it.
 *
 * Backend choice, AXLE_DRPAI_BACKEND:
 *   auto (default)  the driver when /dev/drpai0 can be opened (on a board,
 *                   or under the LD_PRELOAD shim), else the emulator;
 *   driver          the driver only;   emulator  the emulator only.
 * Calls return 0 / byte counts, or a negative errno as the driver reports it.
 */
#ifndef AXLE_DRPAI_DEV_H_
#define AXLE_DRPAI_DEV_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "drpai_engine.h"

typedef enum drpai_backend_t { DRPAI_BACKEND_DRIVER = 1, DRPAI_BACKEND_EMULATOR = 2 } drpai_backend_t;

typedef struct drpai_dev_t drpai_dev_t;

/* The backend AXLE_DRPAI_BACKEND selects, or -EINVAL for a bad value (the
 * auto choice is made by opening, so this answers DRIVER for "auto" when the
 * node exists). */
int drpai_dev_probe(drpai_backend_t* out);
int drpai_dev_open(drpai_dev_t** out);
void drpai_dev_close(drpai_dev_t* dev);
drpai_backend_t drpai_dev_backend(const drpai_dev_t* dev);
/* Readable (select/poll) exactly when no inference runs. */
int drpai_dev_pollfd(const drpai_dev_t* dev);
ssize_t drpai_dev_read(drpai_dev_t* dev, void* buf, size_t count);
ssize_t drpai_dev_write(drpai_dev_t* dev, const void* buf, size_t count);
int drpai_dev_ioctl(drpai_dev_t* dev, unsigned long request, void* arg);
/* A range of size bytes of the DRP-AI area for a program whose DRP-AI
 * addresses start at org (lower 24 bits agree): from the emulator's
 * allocator shared by all processes (drpai_emu_reserve), or -ENOTSUP on the
 * driver, where the caller chooses. Released by drpai_dev_unreserve or when
 * the process ends. */
int drpai_dev_reserve(drpai_dev_t* dev, uint64_t size, uint32_t org, uint64_t* out);
void drpai_dev_unreserve(drpai_dev_t* dev, uint64_t phys);
/* Modelled statistics of the last inference: emulator only (0 otherwise). */
int drpai_dev_last_stats(const drpai_dev_t* dev, drpai_run_stats_t* out);

#endif /* AXLE_DRPAI_DEV_H_ */
