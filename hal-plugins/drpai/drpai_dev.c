/* The DRP-AI device interface over the driver or the emulator. */
#include "drpai_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "drpai_emu.h"
#include "drpai_uapi.h"

struct drpai_dev_t {
  drpai_backend_t backend;
  int fd;                    /* driver descriptor */
  drpai_emu_file_t* emu;     /* emulator descriptor */
};

/* 0 auto, else the forced backend; -1 for an unknown value. */
static int requested(void) {
  const char* s = getenv("AXLE_DRPAI_BACKEND");
  if (!s || !*s || strcmp(s, "auto") == 0) return 0;
  if (strcmp(s, "driver") == 0) return DRPAI_BACKEND_DRIVER;
  if (strcmp(s, "emulator") == 0) return DRPAI_BACKEND_EMULATOR;
  return -1;
}

int drpai_dev_probe(drpai_backend_t* out) {
  int r = requested();
  if (r < 0) return -EINVAL;
  if (r == 0) r = access(DRPAI_DEVICE_PATH, F_OK) == 0 ? DRPAI_BACKEND_DRIVER : DRPAI_BACKEND_EMULATOR;
  *out = (drpai_backend_t)r;
  return 0;
}

int drpai_dev_open(drpai_dev_t** out) {
  *out = NULL;
  int r = requested();
  if (r < 0) return -EINVAL;
  drpai_dev_t* dev = (drpai_dev_t*)calloc(1, sizeof(*dev));
  if (!dev) return -ENOMEM;
  dev->fd = -1;
  int rc = -ENOENT;
  if (r != DRPAI_BACKEND_EMULATOR) {
    dev->fd = open(DRPAI_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    rc = dev->fd >= 0 ? 0 : -errno;
    dev->backend = DRPAI_BACKEND_DRIVER;
  }
  /* No device node (not a board): the emulator stands in, unless the
   * driver was asked for explicitly. A node that exists but fails is the
   * driver's answer and is reported as such. */
  if (r == DRPAI_BACKEND_EMULATOR || (r == 0 && (rc == -ENOENT || rc == -ENXIO || rc == -ENODEV))) {
    rc = drpai_emu_open(&dev->emu);
    dev->backend = DRPAI_BACKEND_EMULATOR;
  }
  if (rc != 0) {
    free(dev);
    return rc;
  }
  *out = dev;
  return 0;
}

void drpai_dev_close(drpai_dev_t* dev) {
  if (!dev) return;
  if (dev->backend == DRPAI_BACKEND_EMULATOR)
    drpai_emu_close(dev->emu);
  else
    close(dev->fd);
  free(dev);
}

drpai_backend_t drpai_dev_backend(const drpai_dev_t* dev) { return dev->backend; }

int drpai_dev_pollfd(const drpai_dev_t* dev) {
  return dev->backend == DRPAI_BACKEND_EMULATOR ? drpai_emu_pollfd(dev->emu) : dev->fd;
}

ssize_t drpai_dev_read(drpai_dev_t* dev, void* buf, size_t count) {
  if (dev->backend == DRPAI_BACKEND_EMULATOR) return drpai_emu_read(dev->emu, buf, count);
  ssize_t n = read(dev->fd, buf, count);
  return n < 0 ? -errno : n;
}

ssize_t drpai_dev_write(drpai_dev_t* dev, const void* buf, size_t count) {
  if (dev->backend == DRPAI_BACKEND_EMULATOR) return drpai_emu_write(dev->emu, buf, count);
  ssize_t n = write(dev->fd, buf, count);
  return n < 0 ? -errno : n;
}

int drpai_dev_ioctl(drpai_dev_t* dev, unsigned long request, void* arg) {
  if (dev->backend == DRPAI_BACKEND_EMULATOR) return drpai_emu_ioctl(dev->emu, request, arg);
  return ioctl(dev->fd, request, arg) < 0 ? -errno : 0;
}

int drpai_dev_reserve(drpai_dev_t* dev, uint64_t size, uint32_t org, uint64_t* out) {
  return dev->backend == DRPAI_BACKEND_EMULATOR ? drpai_emu_reserve(dev->emu, size, org, out) : -ENOTSUP;
}

void drpai_dev_unreserve(drpai_dev_t* dev, uint64_t phys) {
  if (dev->backend == DRPAI_BACKEND_EMULATOR) drpai_emu_unreserve(dev->emu, phys);
}

int drpai_dev_last_stats(const drpai_dev_t* dev, drpai_run_stats_t* out) {
  memset(out, 0, sizeof(*out));
  if (dev->backend != DRPAI_BACKEND_EMULATOR) return 0;
  drpai_emu_last_stats(out);
  return 1;
}
