/*
 * libaxle_drpai_shim.so: LD_PRELOAD this into an unmodified program written
 * against the RZ/V2H DRP-AI driver and its open("/dev/drpai0"), close, read,
 * write and ioctl calls reach Axle's emulated driver instead of the kernel
 * (docs/drpai.md, "Running board programs on a workstation").
 *
 * The descriptor open() returns is a real kernel eventfd that the emulator
 * keeps readable exactly while no inference runs. select(), pselect(),
 * poll(), ppoll() and epoll on it are therefore answered by the kernel with
 * the driver's semantics (timeouts, signal masks, several descriptors at
 * once) and need no wrapper: they are routed to the emulator through that
 * descriptor's state. Every other descriptor passes straight to libc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "drpai_emu.h"
#include "drpai_uapi.h"

#define SHIM_API __attribute__((visibility("default")))
#define MAX_FILES 256

typedef struct entry_t {
  int fd;
  drpai_emu_file_t* file;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t g_files[MAX_FILES];
/* Fast path: with no emulated descriptor open, every call is libc's. */
static atomic_int g_open;

static void* next_fn(const char* name) { return dlsym(RTLD_NEXT, name); }

static drpai_emu_file_t* lookup(int fd) {
  if (fd < 0 || atomic_load(&g_open) == 0) return NULL;
  drpai_emu_file_t* f = NULL;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < MAX_FILES; ++i)
    if (g_files[i].file && g_files[i].fd == fd) f = g_files[i].file;
  pthread_mutex_unlock(&g_lock);
  return f;
}

static int is_drpai(const char* path) { return path && strcmp(path, DRPAI_DEVICE_PATH) == 0; }

static int emu_open(void) {
  drpai_emu_file_t* f;
  int rc = drpai_emu_open(&f);
  if (rc != 0) {
    errno = -rc;
    return -1;
  }
  int fd = drpai_emu_pollfd(f);
  pthread_mutex_lock(&g_lock);
  int slot = -1;
  for (int i = 0; i < MAX_FILES && slot < 0; ++i)
    if (!g_files[i].file) slot = i;
  if (slot >= 0) {
    g_files[slot].fd = fd;
    g_files[slot].file = f;
    atomic_fetch_add(&g_open, 1);
  }
  pthread_mutex_unlock(&g_lock);
  if (slot < 0) {
    drpai_emu_close(f);
    errno = EMFILE;
    return -1;
  }
  return fd;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

SHIM_API int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open();
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))next_fn("open");
  return real(path, flags, mode);
}

SHIM_API int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open();
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))next_fn("open64");
  return real(path, flags, mode);
}

SHIM_API int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open();
  int (*real)(int, const char*, int, ...) = (int (*)(int, const char*, int, ...))next_fn("openat");
  return real(dirfd, path, flags, mode);
}

SHIM_API int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open();
  int (*real)(int, const char*, int, ...) = (int (*)(int, const char*, int, ...))next_fn("openat64");
  return real(dirfd, path, flags, mode);
}

SHIM_API int close(int fd) {
  drpai_emu_file_t* f = NULL;
  if (fd >= 0 && atomic_load(&g_open) > 0) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_FILES; ++i) {
      if (g_files[i].file && g_files[i].fd == fd) {
        f = g_files[i].file;
        g_files[i].file = NULL;
        atomic_fetch_sub(&g_open, 1);
      }
    }
    pthread_mutex_unlock(&g_lock);
  }
  if (f) {
    drpai_emu_close(f); /* closes the eventfd too */
    return 0;
  }
  int (*real)(int) = (int (*)(int))next_fn("close");
  return real(fd);
}

SHIM_API ssize_t read(int fd, void* buf, size_t count) {
  drpai_emu_file_t* f = lookup(fd);
  if (!f) {
    ssize_t (*real)(int, void*, size_t) = (ssize_t (*)(int, void*, size_t))next_fn("read");
    return real(fd, buf, count);
  }
  ssize_t rc = drpai_emu_read(f, buf, count);
  if (rc < 0) {
    errno = (int)-rc;
    return -1;
  }
  return rc;
}

SHIM_API ssize_t write(int fd, const void* buf, size_t count) {
  drpai_emu_file_t* f = lookup(fd);
  if (!f) {
    ssize_t (*real)(int, const void*, size_t) = (ssize_t (*)(int, const void*, size_t))next_fn("write");
    return real(fd, buf, count);
  }
  ssize_t rc = drpai_emu_write(f, buf, count);
  if (rc < 0) {
    errno = (int)-rc;
    return -1;
  }
  return rc;
}

SHIM_API int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  drpai_emu_file_t* f = lookup(fd);
  if (!f) {
    int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))next_fn("ioctl");
    return real(fd, request, arg);
  }
  int rc = drpai_emu_ioctl(f, request, arg);
  if (rc < 0) {
    errno = -rc;
    return -1;
  }
  return 0;
}
