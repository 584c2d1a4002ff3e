/* The emulated DRP-AI device shared between processes (drpai_emu_shm.h). */
#define _GNU_SOURCE
#include "drpai_emu_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "RPaiDev1" with the layout's size mixed in, a second guard against
 * reading another layout (the name already tells layouts apart). */
#define SHM_MAGIC (0x3176654469615052ull ^ (uint64_t)sizeof(drpai_emu_shm_t))
#define SHM_DIR "/dev/shm/axle-drpai-"
#define DEFAULT_KEY "drpai0"
#define DEFAULT_AREA_BASE 0x240000000ull
#define DEFAULT_AREA_SIZE 0x20000000ull
#define DEFAULT_TIMEOUT_MS 1000u
#define PAGE 4096u

/* What this process has of the device. */
static struct {
  pthread_mutex_t lock;          /* attach / detach / the worker */
  int refs;                      /* attach references */
  drpai_emu_shm_t* dev;
  uint8_t* host[DRPAI_EMU_MAX_AREAS];
  int ctl_fd;                    /* on the FIFO, to set and clear readiness */
  char path[PATH_MAX], ready[PATH_MAX];
  _Atomic uint32_t slot_refs[DRPAI_EMU_MAX_FILES]; /* handles of each file here */
  int has_worker;
  pthread_t worker;
  struct worker_arg_t* worker_arg;
  int atfork;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER, .ctl_fd = -1};

drpai_emu_shm_t* drpai_emu_shm_get(void) { return L.dev; }

/* The FIFO and the ioctl are reached through raw system calls because,
 * inside the LD_PRELOAD shim, read/write/close/ioctl are the shim's own
 * wrappers. */
static void raw_close(int fd) {
  if (fd >= 0) syscall(SYS_close, fd);
}

/* ---- liveness and recovery ------------------------------------------------ */

int drpai_emu_shm_alive(pid_t pid) {
  if (pid <= 0) return 0;
  return kill(pid, 0) == 0 || errno == EPERM;
}

static int gone_or_dead(pid_t pid, pid_t gone) { return pid == gone || !drpai_emu_shm_alive(pid); }

/* Makes the FIFO's content match the run state; full: ask the kernel what
 * the FIFO holds instead of trusting fifo_full (after a process died between
 * the two). */
static void sync_fifo(int full) {
  drpai_emu_shm_t* d = L.dev;
  if (L.ctl_fd < 0) return;
  if (full) {
    int queued = 0;
    if (syscall(SYS_ioctl, L.ctl_fd, FIONREAD, &queued) != 0) return;
    d->fifo_full = queued > 0;
  }
  if (!d->running && !d->fifo_full) {
    char b = 'r';
    if (syscall(SYS_write, L.ctl_fd, &b, 1) == 1) d->fifo_full = 1;
  } else if (d->running && d->fifo_full) {
    char b[64];
    while (syscall(SYS_read, L.ctl_fd, b, sizeof(b)) > 0) {
    }
    d->fifo_full = 0;
  }
}

void drpai_emu_shm_sync_ready(void) { sync_fifo(0); }

void drpai_emu_shm_reap(pid_t gone) {
  drpai_emu_shm_t* d = L.dev;
  /* Waiters are woken only for a change: the processes watching a run call
   * this periodically and must not wake each other for nothing. */
  int changed = 0;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_PROCS; ++i)
    if (d->procs[i] && gone_or_dead(d->procs[i], gone)) d->procs[i] = 0;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_FILES; ++i) {
    drpai_shm_file_t* f = &d->files[i];
    if (!f->used) continue;
    int held = 0;
    for (uint32_t h = 0; h < DRPAI_EMU_MAX_HOLDERS; ++h) {
      if (f->holders[h] && gone_or_dead(f->holders[h], gone)) f->holders[h] = 0;
      held |= f->holders[h] != 0;
    }
    if (!held) {
      f->used = 0;
      --d->users;
      changed = 1;
    }
  }
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_RESERVED; ++i)
    if (d->reserved[i].owner && gone_or_dead(d->reserved[i].owner, gone)) d->reserved[i].owner = 0;
  if (d->exclusive && gone_or_dead(d->exclusive, gone)) {
    d->exclusive = 0;
    changed = 1;
  }
  int32_t rw = atomic_load(&d->rw);
  if (rw && gone_or_dead((pid_t)rw, gone)) atomic_compare_exchange_strong(&d->rw, &rw, 0);
  /* The hardware went with its process: the device is reset. */
  if ((d->running || d->worker_busy) && gone_or_dead(d->runner, gone)) {
    d->running = d->worker_busy = d->job_pending = 0;
    d->err = DRPAI_ERRINFO_RESET;
    atomic_store(&d->abort, 0);
    changed = 1;
  }
  drpai_emu_shm_sync_ready();
  if (changed) drpai_emu_shm_broadcast();
}

/* ---- the lock ------------------------------------------------------------- */

static void recovered(int rc) {
  if (rc != EOWNERDEAD) return;
  pthread_mutex_consistent(&L.dev->lock);
  drpai_emu_shm_reap(0);
  sync_fifo(1);
}

void drpai_emu_shm_lock(void) { recovered(pthread_mutex_lock(&L.dev->lock)); }
void drpai_emu_shm_unlock(void) { pthread_mutex_unlock(&L.dev->lock); }
void drpai_emu_shm_broadcast(void) {
  drpai_emu_shm_t* d = L.dev;
  atomic_fetch_add(&d->wake_seq, 1);
  if (atomic_load(&d->waiters)) syscall(SYS_futex, &d->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int drpai_emu_shm_wait(const struct timespec* until) {
  drpai_emu_shm_t* d = L.dev;
  /* Read under the lock, which every broadcast holds: a broadcast between
   * the unlock and the wait changes the word, and the wait returns at once. */
  uint32_t seq = atomic_load(&d->wake_seq);
  atomic_fetch_add(&d->waiters, 1);
  pthread_mutex_unlock(&d->lock);
  long r = syscall(SYS_futex, &d->wake_seq, FUTEX_WAIT_BITSET, seq, until, NULL, FUTEX_BITSET_MATCH_ANY);
  int timed_out = r != 0 && errno == ETIMEDOUT;
  atomic_fetch_sub(&d->waiters, 1);
  drpai_emu_shm_lock();
  return timed_out ? ETIMEDOUT : 0;
}

/* ---- files ------------------------------------------------------------------ */

static int add_pid(pid_t* list, uint32_t n, pid_t pid) {
  for (uint32_t i = 0; i < n; ++i)
    if (list[i] == pid) return 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (!list[i]) {
      list[i] = pid;
      return 0;
    }
  }
  return -1;
}

static void remove_pid(pid_t* list, uint32_t n, pid_t pid) {
  for (uint32_t i = 0; i < n; ++i)
    if (list[i] == pid) list[i] = 0;
}

int drpai_emu_shm_file_new(uint32_t* slot) {
  drpai_emu_shm_t* d = L.dev;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_FILES; ++i) {
    drpai_shm_file_t* f = &d->files[i];
    if (f->used) continue;
    memset(f, 0, sizeof(*f));
    f->used = 1;
    f->holders[0] = getpid();
    drpai_adrconv_init(&f->adrconv);
    ++d->users;
    atomic_fetch_add(&L.slot_refs[i], 1);
    *slot = i;
    return 0;
  }
  return -ENOMEM;
}

int drpai_emu_shm_file_release(uint32_t slot) {
  drpai_shm_file_t* f = &L.dev->files[slot];
  if (atomic_fetch_sub(&L.slot_refs[slot], 1) != 1) return 0;
  remove_pid(f->holders, DRPAI_EMU_MAX_HOLDERS, getpid());
  for (uint32_t h = 0; h < DRPAI_EMU_MAX_HOLDERS; ++h)
    if (f->holders[h]) return 0;
  if (f->used) {
    f->used = 0;
    --L.dev->users;
  }
  return 1;
}

uint8_t* drpai_emu_shm_host(uint64_t phys, uint64_t size) {
  const drpai_emu_shm_t* d = L.dev;
  for (uint32_t i = 0; i < d->area_count; ++i) {
    const drpai_shm_area_t* a = &d->areas[i];
    if (phys >= a->base && phys - a->base <= a->size && size <= a->size - (phys - a->base))
      return L.host[i] + (phys - a->base);
  }
  return NULL;
}

/* ---- configuration ---------------------------------------------------------- */

static int parse_u64(const char* s, char** end, uint64_t* out) {
  errno = 0;
  unsigned long long v = strtoull(s, end, 0);
  if (errno || *end == s) return -1;
  *out = v;
  return 0;
}

/* "BASE:SIZE[,BASE:SIZE...]" appended to the areas. */
static int parse_areas(drpai_emu_shm_t* d, const char* s) {
  while (*s) {
    char* end;
    uint64_t base, size;
    if (d->area_count == DRPAI_EMU_MAX_AREAS || parse_u64(s, &end, &base) != 0 || *end != ':' ||
        parse_u64(end + 1, &end, &size) != 0 || (*end && *end != ','))
      return -1;
    if (!size || base % PAGE || size % PAGE || base + size > DRPAI_PHYS_LIMIT || base + size < base)
      return -1;
    for (uint32_t i = 0; i < d->area_count; ++i) {
      const drpai_shm_area_t* a = &d->areas[i];
      if (base < a->base + a->size && a->base < base + size) return -1;
    }
    d->areas[d->area_count].base = base;
    d->areas[d->area_count].size = size;
    ++d->area_count;
    s = *end ? end + 1 : end;
  }
  return 0;
}

static uint32_t env_u32(const char* name, uint32_t fallback) {
  const char* s = getenv(name);
  char* end;
  uint64_t v;
  if (!s || parse_u64(s, &end, &v) != 0 || *end || v > UINT32_MAX) return fallback;
  return (uint32_t)v;
}

/* The configuration of this process's environment, into cfg. */
static int read_config(drpai_emu_shm_t* cfg) {
  memset(cfg, 0, sizeof(*cfg));
  const char* area = getenv("AXLE_DRPAI_EMU_AREA");
  if (area) {
    if (parse_areas(cfg, area) != 0 || cfg->area_count != 1) return -EIO;
  } else {
    cfg->areas[0].base = DEFAULT_AREA_BASE;
    cfg->areas[0].size = DEFAULT_AREA_SIZE;
    cfg->area_count = 1;
  }
  const char* extra = getenv("AXLE_DRPAI_EMU_EXTRA");
  if (extra && parse_areas(cfg, extra) != 0) return -EIO;
  cfg->timeout_ms = env_u32("AXLE_DRPAI_EMU_TIMEOUT_MS", DEFAULT_TIMEOUT_MS);
  if (!cfg->timeout_ms) cfg->timeout_ms = DEFAULT_TIMEOUT_MS;
  cfg->run_us = env_u32("AXLE_DRPAI_EMU_RUN_US", 0);
  uint64_t at = (sizeof(drpai_emu_shm_t) + PAGE - 1) / PAGE * PAGE;
  for (uint32_t i = 0; i < cfg->area_count; ++i) {
    cfg->areas[i].offset = at;
    at += cfg->areas[i].size;
  }
  cfg->map_size = at;
  return 0;
}

/* The object's paths from AXLE_DRPAI_EMU_KEY: letters, digits, '.', '_', '-'. */
static int make_paths(void) {
  const char* key = getenv("AXLE_DRPAI_EMU_KEY");
  if (!key || !*key) key = DEFAULT_KEY;
  size_t n = strlen(key);
  if (n > 64 || key[0] == '.') return -EIO;
  for (size_t i = 0; i < n; ++i) {
    char c = key[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return -EIO;
  }
  /* The layout's size in the name: builds whose layouts differ use
   * different devices rather than misread each other's. */
  snprintf(L.path, sizeof(L.path), SHM_DIR "%s.%zx", key, sizeof(drpai_emu_shm_t));
  snprintf(L.ready, sizeof(L.ready), SHM_DIR "%s.%zx.ready", key, sizeof(drpai_emu_shm_t));
  return 0;
}

/* ---- mapping -------------------------------------------------------------------- */

static void unmap(void) {
  if (L.dev) munmap(L.dev, L.dev->map_size);
  L.dev = NULL;
}

/* Maps the object from a descriptor of its own: a mapping keeps its open
 * file alive, and with it any flock taken through that file. */
static int map_object(uint64_t size) {
  int fd = open(L.path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -EIO;
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  raw_close(fd);
  if (p == MAP_FAILED) return -ENOMEM;
  L.dev = (drpai_emu_shm_t*)p;
  return 0;
}

/* A new object in the empty file fd (its flock held). */
static int create(int fd) {
  drpai_emu_shm_t* cfg = (drpai_emu_shm_t*)malloc(sizeof(*cfg));
  if (!cfg) return -ENOMEM;
  int rc = read_config(cfg);
  if (rc == 0 && ftruncate(fd, (off_t)cfg->map_size) != 0) rc = -ENOMEM;
  if (rc == 0) rc = map_object(cfg->map_size);
  if (rc) {
    free(cfg);
    return rc;
  }
  drpai_emu_shm_t* d = L.dev;
  memcpy(d, cfg, sizeof(*d));
  free(cfg);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&d->lock, &ma);
  pthread_mutexattr_destroy(&ma);
  unlink(L.ready);
  if (mkfifo(L.ready, 0600) != 0) {
    unmap();
    return -EIO;
  }
  /* A release store rather than a fence and a plain store: the same
   * ordering, and one ThreadSanitizer can check (it has no fences). */
  __atomic_store_n(&d->magic, SHM_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

/* Maps the existing object (its flock held); 1 when it is left over
 * from processes that are all gone, or incomplete, and must be recreated;
 * -EIO when a build with another layout made it. */
static int map_existing(uint64_t size) {
  if (size < sizeof(drpai_emu_shm_t)) return -EIO; /* another build's layout */
  int rc = map_object(size);
  if (rc) return rc;
  const uint64_t magic = __atomic_load_n(&L.dev->magic, __ATOMIC_ACQUIRE);
  if (magic != SHM_MAGIC || L.dev->map_size != size) {
    /* No magic yet: its creator died before finishing it. Another magic:
     * an incompatible build uses the device. */
    int incomplete = magic == 0;
    munmap(L.dev, size);
    L.dev = NULL;
    return incomplete ? 1 : -EIO;
  }
  drpai_emu_shm_lock();
  drpai_emu_shm_reap(0);
  int live = 0;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_PROCS; ++i) live |= L.dev->procs[i] != 0;
  drpai_emu_shm_unlock();
  if (!live) {
    unmap();
    return 1;
  }
  return 0;
}

static void fork_prepare(void) { pthread_mutex_lock(&L.lock); }
static void fork_parent(void) { pthread_mutex_unlock(&L.lock); }

/* The child holds everything the parent held, as a forked process holds its
 * parent's open files; it has no hardware thread until it needs one. */
static void fork_child(void) {
  pthread_mutex_init(&L.lock, NULL);
  L.has_worker = 0;
  free(L.worker_arg);
  L.worker_arg = NULL;
  if (!L.dev) return;
  pid_t me = getpid();
  drpai_emu_shm_lock();
  add_pid(L.dev->procs, DRPAI_EMU_MAX_PROCS, me);
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_FILES; ++i)
    if (atomic_load(&L.slot_refs[i])) add_pid(L.dev->files[i].holders, DRPAI_EMU_MAX_HOLDERS, me);
  drpai_emu_shm_unlock();
}

static int open_flocked(void) {
  int fd = open(L.path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  return fd;
}

/* Maps the device, creating it if needed, and registers this process. */
static int map_device(void) {
  int rc = make_paths();
  if (rc) return rc;
  if (!L.atfork) {
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) return -ENOMEM;
    L.atfork = 1;
  }
  for (;;) {
    int fd = open(L.path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -EIO;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      raw_close(fd);
      return -EIO;
    }
    if (st.st_nlink == 0) { /* the last process removed it meanwhile */
      raw_close(fd);
      continue;
    }
    rc = st.st_size ? map_existing((uint64_t)st.st_size) : create(fd);
    if (rc < 0 && st.st_size == 0) unlink(L.path); /* leave no half-made object */
    if (rc == 1) {
      unlink(L.path);
      unlink(L.ready);
      raw_close(fd);
      continue;
    }
    if (rc == 0) {
      L.ctl_fd = open(L.ready, O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (L.ctl_fd < 0) rc = -EIO;
    }
    if (rc == 0) {
      drpai_emu_shm_lock();
      if (add_pid(L.dev->procs, DRPAI_EMU_MAX_PROCS, getpid()) != 0) rc = -EMFILE;
      sync_fifo(1);
      drpai_emu_shm_unlock();
    }
    if (rc == 0) {
      for (uint32_t i = 0; i < L.dev->area_count; ++i) L.host[i] = (uint8_t*)L.dev + L.dev->areas[i].offset;
    } else {
      raw_close(L.ctl_fd);
      L.ctl_fd = -1;
      unmap();
    }
    raw_close(fd);
    return rc;
  }
}

/* Unregisters this process (as gone, with what it still holds) and removes
 * the object when no process is left. */
static void leave(void) {
  int fd = open_flocked();
  drpai_emu_shm_lock();
  drpai_emu_shm_reap(getpid());
  int live = 0;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_PROCS; ++i) live |= L.dev->procs[i] != 0;
  drpai_emu_shm_unlock();
  if (fd >= 0 && !live) {
    unlink(L.path);
    unlink(L.ready);
  }
  raw_close(fd);
}

static void unmap_device(void) {
  leave();
  raw_close(L.ctl_fd);
  L.ctl_fd = -1;
  unmap();
}

/* A process that exits with the device attached leaves it at once rather
 * than when another process notices; its threads may still run, so the
 * mapping stays until the process is gone. */
__attribute__((destructor)) static void leave_at_exit(void) {
  if (L.dev) leave();
}

/* ---- worker ----------------------------------------------------------------------- */

/* What the hardware thread is given: its body and its stop flag. */
typedef struct worker_arg_t {
  void* (*body)(void*);
  _Atomic int quit;
  _Atomic int running;
} worker_arg_t;

static void* worker_entry(void* p) {
  worker_arg_t* a = (worker_arg_t*)p;
  atomic_store(&a->running, 1);
  return a->body((void*)&a->quit);
}

/* The thread is waited for until it runs: a fork() while a new thread is
 * still being set up can leave the child with the setup's locks held (the
 * sanitizers' allocator is one such), and this process may fork next. */
static int worker_start_locked(void* (*worker)(void*)) {
  if (L.has_worker) return 0;
  worker_arg_t* a = (worker_arg_t*)calloc(1, sizeof(*a));
  if (!a) return -ENOMEM;
  a->body = worker;
  if (pthread_create(&L.worker, NULL, worker_entry, a) != 0) {
    free(a);
    return -ENOMEM;
  }
  while (!atomic_load(&a->running)) sched_yield();
  L.worker_arg = a;
  L.has_worker = 1;
  return 0;
}

static void worker_stop_locked(void) {
  if (!L.has_worker) return;
  drpai_emu_shm_lock();
  atomic_store(&L.worker_arg->quit, 1);
  drpai_emu_shm_broadcast();
  drpai_emu_shm_unlock();
  pthread_join(L.worker, NULL);
  free(L.worker_arg);
  L.worker_arg = NULL;
  L.has_worker = 0;
}

int drpai_emu_shm_worker_ensure(void* (*worker)(void*)) {
  pthread_mutex_lock(&L.lock);
  int rc = worker_start_locked(worker);
  pthread_mutex_unlock(&L.lock);
  return rc;
}

/* ---- attach / detach ----------------------------------------------------------------- */

int drpai_emu_shm_attach(int* fd, void* (*worker)(void*)) {
  pthread_mutex_lock(&L.lock);
  int rc = L.refs == 0 ? map_device() : 0;
  if (rc == 0) rc = worker_start_locked(worker);
  if (rc == 0 && fd) {
    *fd = open(L.ready, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) rc = errno == EMFILE || errno == ENFILE ? -errno : -EIO;
  }
  if (rc == 0) {
    ++L.refs;
  } else if (L.refs == 0 && L.dev) {
    worker_stop_locked();
    unmap_device();
  }
  pthread_mutex_unlock(&L.lock);
  return rc;
}

void drpai_emu_shm_detach(int fd) {
  pthread_mutex_lock(&L.lock);
  raw_close(fd);
  if (L.refs > 0 && --L.refs == 0) {
    worker_stop_locked();
    unmap_device();
  }
  pthread_mutex_unlock(&L.lock);
}
