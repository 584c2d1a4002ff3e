/*
 * libaxle_drpai_shim.so: LD_PRELOAD this into an unmodified program written
 * against the RZ/V2H DRP-AI driver and its open("/dev/drpai0"), close, read,
 * write and ioctl calls reach Axle's emulated driver instead of the kernel
 * (docs/drpai.md, "Running board programs on a workstation").
 *
 * The descriptor open() returns is a real kernel descriptor on the emulated
 * device's readiness FIFO, which holds a byte exactly while no inference runs
 * (drpai_emu_shm.h). select(), pselect(), poll(), ppoll() and epoll on it are
 * therefore answered by the kernel with the driver's semantics (timeouts,
 * signal masks, several descriptors at once) and need no wrapper.
 *
 * Descriptors follow the kernel's open-file rules: dup, dup2, dup3 and
 * fcntl(F_DUPFD, F_DUPFD_CLOEXEC) give another descriptor of the same open
 * file, and one inherited through fork() is the same open file in both
 * processes; the file is released when its last descriptor in the last
 * process is closed. Every other descriptor passes straight to libc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "drpai_emu.h"
#include "drpai_uapi.h"

#define SHIM_API __attribute__((visibility("default")))
#define MAX_FDS 256

/* An open file of this process, shared by its descriptors (dups). */
typedef struct ofile_t {
  drpai_emu_file_t* file;
  int refs;
} ofile_t;

typedef struct entry_t {
  int fd;
  ofile_t* of;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t g_fds[MAX_FDS];
/* Fast path: with no emulated descriptor, every call is libc's. */
static atomic_int g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void* next_fn(const char* name) { return dlsym(RTLD_NEXT, name); }

static int real_fcntl(int fd, int cmd, void* arg) {
  int (*real)(int, int, ...) = (int (*)(int, int, ...))next_fn("fcntl");
  return real(fd, cmd, arg);
}

static int real_close(int fd) {
  int (*real)(int) = (int (*)(int))next_fn("close");
  return real(fd);
}

/* A fork() while another thread holds the table would leave it locked in
 * the child. */
static void fork_prepare(void) { pthread_mutex_lock(&g_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&g_lock); }
static void fork_child(void) { pthread_mutex_init(&g_lock, NULL); }
static void register_fork(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Lock held. */
static entry_t* find_locked(int fd) {
  for (int i = 0; i < MAX_FDS; ++i)
    if (g_fds[i].of && g_fds[i].fd == fd) return &g_fds[i];
  return NULL;
}

static int add_locked(int fd, ofile_t* of) {
  for (int i = 0; i < MAX_FDS; ++i) {
    if (!g_fds[i].of) {
      g_fds[i].fd = fd;
      g_fds[i].of = of;
      ++of->refs;
      atomic_fetch_add(&g_count, 1);
      return 0;
    }
  }
  return -1;
}

/* Forgets descriptor e; the open file it was the last descriptor of is
 * returned for closing (outside the lock), else NULL. Lock held. */
static ofile_t* drop_locked(entry_t* e) {
  ofile_t* of = e->of;
  e->of = NULL;
  atomic_fetch_sub(&g_count, 1);
  return --of->refs == 0 ? of : NULL;
}

static void release(ofile_t* of) {
  if (!of) return;
  drpai_emu_close(of->file);
  free(of);
}

static drpai_emu_file_t* lookup(int fd) {
  if (fd < 0 || atomic_load(&g_count) == 0) return NULL;
  pthread_mutex_lock(&g_lock);
  entry_t* e = find_locked(fd);
  drpai_emu_file_t* f = e ? e->of->file : NULL;
  pthread_mutex_unlock(&g_lock);
  return f;
}

static int is_drpai(const char* path) { return path && strcmp(path, DRPAI_DEVICE_PATH) == 0; }

static int emu_open(int flags) {
  pthread_once(&g_once, register_fork);
  ofile_t* of = (ofile_t*)calloc(1, sizeof(*of));
  if (!of) {
    errno = ENOMEM;
    return -1;
  }
  int rc = drpai_emu_open(&of->file);
  if (rc != 0) {
    free(of);
    errno = -rc;
    return -1;
  }
  /* The application's descriptor is its own (it may close, dup or inherit
   * it as it likes); the emulator keeps the one it watches. */
  int fd = real_fcntl(drpai_emu_pollfd(of->file), (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  if (fd < 0) {
    int e = errno;
    release(of);
    errno = e;
    return -1;
  }
  pthread_mutex_lock(&g_lock);
  rc = add_locked(fd, of);
  pthread_mutex_unlock(&g_lock);
  if (rc != 0) {
    real_close(fd);
    release(of);
    errno = EMFILE;
    return -1;
  }
  return fd;
}

/* After a successful dup of old onto new: new is another descriptor of old's
 * open file, and whatever new was before is closed. */
static int track_dup(int old, int new_fd) {
  if (new_fd < 0 || old == new_fd || atomic_load(&g_count) == 0) return new_fd;
  ofile_t* closed = NULL;
  int rc = 0;
  pthread_mutex_lock(&g_lock);
  entry_t* was = find_locked(new_fd);
  if (was) closed = drop_locked(was);
  entry_t* src = find_locked(old);
  if (src) rc = add_locked(new_fd, src->of);
  pthread_mutex_unlock(&g_lock);
  release(closed);
  if (rc != 0) {
    real_close(new_fd);
    errno = EMFILE;
    return -1;
  }
  return new_fd;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

SHIM_API int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open(flags);
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))next_fn("open");
  return real(path, flags, mode);
}

SHIM_API int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open(flags);
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))next_fn("open64");
  return real(path, flags, mode);
}

SHIM_API int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open(flags);
  int (*real)(int, const char*, int, ...) = (int (*)(int, const char*, int, ...))next_fn("openat");
  return real(dirfd, path, flags, mode);
}

SHIM_API int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (is_drpai(path)) return emu_open(flags);
  int (*real)(int, const char*, int, ...) = (int (*)(int, const char*, int, ...))next_fn("openat64");
  return real(dirfd, path, flags, mode);
}

SHIM_API int close(int fd) {
  ofile_t* closed = NULL;
  if (fd >= 0 && atomic_load(&g_count) > 0) {
    pthread_mutex_lock(&g_lock);
    entry_t* e = find_locked(fd);
    if (e) closed = drop_locked(e);
    pthread_mutex_unlock(&g_lock);
  }
  int rc = real_close(fd);
  release(closed);
  return rc;
}

SHIM_API int dup(int fd) {
  int (*real)(int) = (int (*)(int))next_fn("dup");
  return track_dup(fd, real(fd));
}

SHIM_API int dup2(int fd, int new_fd) {
  int (*real)(int, int) = (int (*)(int, int))next_fn("dup2");
  return track_dup(fd, real(fd, new_fd));
}

SHIM_API int dup3(int fd, int new_fd, int flags) {
  int (*real)(int, int, int) = (int (*)(int, int, int))next_fn("dup3");
  return track_dup(fd, real(fd, new_fd, flags));
}

/* fcntl's third argument is an int or a pointer by command; passing it on as
 * a pointer-sized value is what the x86-64 and AArch64 calling conventions
 * make equivalent. */
static int shim_fcntl(int fd, int cmd, void* arg) {
  int rc = real_fcntl(fd, cmd, arg);
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return track_dup(fd, rc);
  return rc;
}

SHIM_API int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return shim_fcntl(fd, cmd, arg);
}

SHIM_API int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return shim_fcntl(fd, cmd, arg);
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
