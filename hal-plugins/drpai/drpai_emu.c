/*
 * The emulated DRP-AI driver (see drpai_emu.h). The structure follows the
 * driver's: device-wide state (memory area, run state, clocks) behind one
 * mutex; an "exclusive control" that the ioctls touching the hardware take
 * with a timeout (ETIMEDOUT); a read/write permission that data transfers
 * and placement ioctls only try to take (ERESTART, to be retried by the
 * caller as in manual section 4.5.2); per-descriptor transfer state; and a
 * worker thread that plays the hardware, so inference runs while the caller
 * waits on the descriptor.
 */
#include "drpai_emu.h"

#include <errno.h>
#include <linux/ioctl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "drpai_adrconv.h"
#include "drpai_emu_test.h"
#include "drpai_format.h"
#include "drpai_paraminfo.h"
#include "drpai_uapi.h"

_Static_assert(DRPAI_ASSIGN == _IOW(DRPAI_IO_TYPE, 0, drpai_data_t), "ASSIGN");
_Static_assert(DRPAI_START == _IOW(DRPAI_IO_TYPE, 1, drpai_data_t), "START");
_Static_assert(DRPAI_RESET == _IO(DRPAI_IO_TYPE, 2), "RESET");
_Static_assert(DRPAI_GET_STATUS == _IOR(DRPAI_IO_TYPE, 3, drpai_status_t), "GET_STATUS");
_Static_assert(DRPAI_ASSIGN_PARAM == _IOW(DRPAI_IO_TYPE, 6, drpai_assign_param_t), "ASSIGN_PARAM");
_Static_assert(DRPAI_PREPOST_CROP == _IOW(DRPAI_IO_TYPE, 7, drpai_crop_t), "PREPOST_CROP");
_Static_assert(DRPAI_PREPOST_INADDR == _IOW(DRPAI_IO_TYPE, 8, drpai_inout_t), "PREPOST_INADDR");
_Static_assert(DRPAI_GET_DRPAI_AREA == _IOR(DRPAI_IO_TYPE, 11, drpai_data_t), "GET_DRPAI_AREA");
_Static_assert(DRPAI_SET_DRP_MAX_FREQ == _IOW(DRPAI_IO_TYPE, 12, uint32_t), "SET_DRP_MAX_FREQ");
_Static_assert(DRPAI_SET_DRPAI_FREQ == _IOW(DRPAI_IO_TYPE, 13, uint32_t), "SET_DRPAI_FREQ");
_Static_assert(DRPAI_SET_ADRCONV == _IOW(DRPAI_IO_TYPE, 14, drpai_adrconv_t), "SET_ADRCONV");

#define DEFAULT_AREA_BASE 0x240000000ull
#define DEFAULT_AREA_SIZE 0x20000000ull
#define DEFAULT_TIMEOUT_MS 1000u
#define MAX_AREAS 8

/* Per-descriptor transfer state (the driver's read/write state machine). */
typedef enum rw_state_t {
  RW_IDLE,
  RW_ASSIGN,       /* ASSIGN done, nothing transferred yet */
  RW_WRITE,        /* streaming write in progress */
  RW_READ,         /* streaming read in progress */
  RW_PARAM         /* ASSIGN_PARAM done: write() takes drp_param_info.txt */
} rw_state_t;

struct drpai_emu_file_t {
  struct drpai_emu_file_t* next;
  int efd;
  int ready;                     /* efd currently signalled */
  rw_state_t state;
  uint64_t addr, size, done;     /* the assigned range and progress */
  /* drp_param_info.txt import */
  drpai_data_t param_obj;
  uint32_t info_size, info_done;
  char line[DRPAI_INFO_MAX_LINE];
  size_t line_len;
  drpai_info_t info;
  int info_ready;
  int inaddr;                    /* PREPOST_INADDR used: proc[INPUT] is ignored */
  drpai_adrconv_table_t adrconv;
};

typedef struct area_t {
  uint64_t base, size;
  uint8_t* host;
} area_t;

typedef struct emu_t {
  pthread_mutex_t lock;          /* everything below */
  pthread_cond_t cv;             /* worker wake-up, worker idle, exclusive released */
  int users;                     /* open descriptors */
  drpai_emu_file_t* files;
  area_t areas[MAX_AREAS];
  uint32_t area_count;
  uint32_t timeout_ms, run_us;
  /* run state */
  int started;                   /* an inference was started since power-up */
  int running;
  int32_t err;
  uint32_t mindiv, divfix;
  pthread_t worker;
  int worker_quit;
  int job_pending, worker_busy;
  drpai_job_t job;
  atomic_int abort;
  drpai_run_stats_t last_stats;
  /* locks of the driver */
  int exclusive;                 /* exclusive control held */
  atomic_flag rw;                /* read/write permission held */
  /* test controls */
  int fault[4];                  /* armed faults, by drpai_emu_fault_t */
  uint32_t test_timeout_ms, test_run_us;
  _Atomic uint32_t test_rw_hold_us;
  int test_holds_exclusive;
} emu_t;

static emu_t g_emu = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
    .rw = ATOMIC_FLAG_INIT,
};

/* ---- small helpers ------------------------------------------------------- */

static int take_fault(drpai_emu_fault_t f) {
  pthread_mutex_lock(&g_emu.lock);
  int armed = g_emu.fault[f];
  g_emu.fault[f] = 0;
  pthread_mutex_unlock(&g_emu.lock);
  return armed;
}

static void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int parse_u64(const char* s, char** end, uint64_t* out) {
  errno = 0;
  unsigned long long v = strtoull(s, end, 0);
  if (errno || *end == s) return -1;
  *out = v;
  return 0;
}

/* "BASE:SIZE[,BASE:SIZE...]" appended to the areas. */
static int parse_areas(const char* s) {
  while (*s) {
    char* end;
    uint64_t base, size;
    if (g_emu.area_count == MAX_AREAS || parse_u64(s, &end, &base) != 0 || *end != ':' ||
        parse_u64(end + 1, &end, &size) != 0 || (*end && *end != ','))
      return -1;
    if (!size || base % 4096 || size % 4096 || base + size > DRPAI_PHYS_LIMIT || base + size < base)
      return -1;
    for (uint32_t i = 0; i < g_emu.area_count; ++i) {
      const area_t* a = &g_emu.areas[i];
      if (base < a->base + a->size && a->base < base + size) return -1;
    }
    g_emu.areas[g_emu.area_count].base = base;
    g_emu.areas[g_emu.area_count].size = size;
    ++g_emu.area_count;
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

/* Host pointer of emulated physical memory (any area). */
static uint8_t* phys_map(void* ctx, uint64_t phys, uint64_t size) {
  (void)ctx;
  for (uint32_t i = 0; i < g_emu.area_count; ++i) {
    const area_t* a = &g_emu.areas[i];
    if (phys >= a->base && phys - a->base <= a->size && size <= a->size - (phys - a->base))
      return a->host + (phys - a->base);
  }
  return NULL;
}

/* Inside the DRP-AI memory area (area 0), where the object files must lie. */
static int in_drpai_area(uint64_t addr, uint64_t size) {
  const area_t* a = &g_emu.areas[0];
  return addr >= a->base && addr - a->base <= a->size && size <= a->size - (addr - a->base);
}

/* Readiness of one descriptor; the lock is held. The eventfd is touched
 * through glibc's eventfd_read/eventfd_write and a raw close because, inside
 * the LD_PRELOAD shim, read/write/close are the shim's own wrappers and this
 * descriptor is one of the descriptors they route back here. */
static void set_ready(drpai_emu_file_t* f, int ready) {
  if (ready == f->ready) return;
  eventfd_t v = 1;
  if ((ready ? eventfd_write(f->efd, v) : eventfd_read(f->efd, &v)) == 0) f->ready = ready;
}

static void close_efd(int fd) { syscall(SYS_close, fd); }

static void set_all_ready(int ready) {
  for (drpai_emu_file_t* f = g_emu.files; f; f = f->next) set_ready(f, ready);
}

/* ---- the driver's two locks ---------------------------------------------- */

/* Exclusive control, waited for up to the timeout. */
static int exclusive_take(void) {
  pthread_mutex_lock(&g_emu.lock);
  uint32_t ms = g_emu.test_timeout_ms ? g_emu.test_timeout_ms : g_emu.timeout_ms;
  if (!ms) ms = DEFAULT_TIMEOUT_MS;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  while (g_emu.exclusive) {
    if (pthread_cond_timedwait(&g_emu.cv, &g_emu.lock, &until) == ETIMEDOUT && g_emu.exclusive) {
      pthread_mutex_unlock(&g_emu.lock);
      return -ETIMEDOUT;
    }
  }
  g_emu.exclusive = 1;
  pthread_mutex_unlock(&g_emu.lock);
  return 0;
}

static void exclusive_give(void) {
  pthread_mutex_lock(&g_emu.lock);
  g_emu.exclusive = 0;
  pthread_cond_broadcast(&g_emu.cv);
  pthread_mutex_unlock(&g_emu.lock);
}

/* The read/write permission is only tried: a busy one is ERESTART. */
static int rw_take(void) { return atomic_flag_test_and_set(&g_emu.rw) ? -ERESTART : 0; }
static void rw_give(void) { atomic_flag_clear(&g_emu.rw); }

/* ---- the hardware: worker thread ------------------------------------------ */

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void* worker_main(void* arg) {
  (void)arg;
  const drpai_phys_t mem = {phys_map, NULL};
  pthread_mutex_lock(&g_emu.lock);
  for (;;) {
    while (!g_emu.job_pending && !g_emu.worker_quit) pthread_cond_wait(&g_emu.cv, &g_emu.lock);
    if (g_emu.worker_quit) break;
    g_emu.job_pending = 0;
    g_emu.worker_busy = 1;
    drpai_job_t job = g_emu.job;
    uint32_t run_us = g_emu.test_run_us ? g_emu.test_run_us : g_emu.run_us;
    pthread_mutex_unlock(&g_emu.lock);

    uint64_t t0 = now_us();
    drpai_run_stats_t stats;
    int32_t err = drpai_engine_run(&mem, &job, &stats);
    /* Sliced so that RESET and the last close stop a slow run promptly. */
    while (err != DRPAI_ERRINFO_RESET && now_us() - t0 < run_us) {
      if (atomic_load(&g_emu.abort)) err = DRPAI_ERRINFO_RESET;
      else sleep_us(200);
    }

    pthread_mutex_lock(&g_emu.lock);
    g_emu.worker_busy = 0;
    /* A run that RESET ended has already been accounted for. */
    if (!atomic_load(&g_emu.abort)) {
      g_emu.running = 0;
      g_emu.err = err;
      g_emu.last_stats = stats;
      set_all_ready(1);
    }
    pthread_cond_broadcast(&g_emu.cv);
  }
  pthread_mutex_unlock(&g_emu.lock);
  return NULL;
}

/* Stops a running inference and waits until the worker no longer touches
 * memory; the lock is held. */
static void stop_inference_locked(void) {
  if (!g_emu.running) return;
  atomic_store(&g_emu.abort, 1);
  g_emu.job_pending = 0;
  while (g_emu.worker_busy) pthread_cond_wait(&g_emu.cv, &g_emu.lock);
  atomic_store(&g_emu.abort, 0);
  g_emu.running = 0;
}

/* ---- power up / down ---------------------------------------------------- */

static void unmap_areas(void) {
  for (uint32_t i = 0; i < g_emu.area_count; ++i)
    if (g_emu.areas[i].host) munmap(g_emu.areas[i].host, g_emu.areas[i].size);
  g_emu.area_count = 0;
}

/* First open: configuration, memory, hardware reset, worker. Lock held. */
static int power_up_locked(void) {
  g_emu.area_count = 0;
  const char* area = getenv("AXLE_DRPAI_EMU_AREA");
  if (area) {
    if (parse_areas(area) != 0 || g_emu.area_count != 1) return -EIO;
  } else {
    g_emu.areas[0].base = DEFAULT_AREA_BASE;
    g_emu.areas[0].size = DEFAULT_AREA_SIZE;
    g_emu.area_count = 1;
  }
  const char* extra = getenv("AXLE_DRPAI_EMU_EXTRA");
  if (extra && parse_areas(extra) != 0) return -EIO;
  g_emu.timeout_ms = env_u32("AXLE_DRPAI_EMU_TIMEOUT_MS", DEFAULT_TIMEOUT_MS);
  g_emu.run_us = env_u32("AXLE_DRPAI_EMU_RUN_US", 0);
  if (g_emu.fault[DRPAI_FAULT_HW_RESET]) {
    g_emu.fault[DRPAI_FAULT_HW_RESET] = 0;
    return -EIO;
  }
  if (g_emu.fault[DRPAI_FAULT_NOMEM]) {
    g_emu.fault[DRPAI_FAULT_NOMEM] = 0;
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < g_emu.area_count; ++i) {
    void* p = mmap(NULL, g_emu.areas[i].size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      unmap_areas();
      return -ENOMEM;
    }
    g_emu.areas[i].host = (uint8_t*)p;
  }
  g_emu.started = g_emu.running = 0;
  g_emu.err = DRPAI_ERRINFO_SUCCESS;
  g_emu.mindiv = DRPAI_MINDIV_DEFAULT;
  g_emu.divfix = DRPAI_DIVFIX_DEFAULT;
  g_emu.worker_quit = g_emu.job_pending = g_emu.worker_busy = 0;
  atomic_store(&g_emu.abort, 0);
  memset(&g_emu.last_stats, 0, sizeof(g_emu.last_stats));
  if (pthread_create(&g_emu.worker, NULL, worker_main, NULL) != 0) {
    unmap_areas();
    return -ENOMEM;
  }
  return 0;
}

int drpai_emu_open(drpai_emu_file_t** out) {
  *out = NULL;
  int rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_file_t* f = (drpai_emu_file_t*)calloc(1, sizeof(*f));
  if (f) f->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!f || f->efd < 0) {
    free(f);
    exclusive_give();
    return -ENOMEM;
  }
  drpai_adrconv_init(&f->adrconv);
  drpai_info_init(&f->info);
  pthread_mutex_lock(&g_emu.lock);
  /* "When open it multiple times, it will be initialized only the first time." */
  if (g_emu.users == 0) rc = power_up_locked();
  if (rc == 0) {
    ++g_emu.users;
    f->next = g_emu.files;
    g_emu.files = f;
    set_ready(f, !g_emu.running);
  }
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  if (rc) {
    close_efd(f->efd);
    free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void drpai_emu_close(drpai_emu_file_t* f) {
  if (!f) return;
  /* Exclusive control keeps a concurrent first open from powering up while
   * the last close still tears the device down. close cannot fail, so it
   * waits as long as it takes. */
  while (exclusive_take() != 0) {
  }
  pthread_mutex_lock(&g_emu.lock);
  for (drpai_emu_file_t** p = &g_emu.files; *p; p = &(*p)->next) {
    if (*p == f) {
      *p = f->next;
      break;
    }
  }
  int last = --g_emu.users == 0;
  pthread_t worker = g_emu.worker;
  if (last) {
    /* Only the last close ends an inference (manual 4.2.2). */
    stop_inference_locked();
    g_emu.worker_quit = 1;
    pthread_cond_broadcast(&g_emu.cv);
  }
  pthread_mutex_unlock(&g_emu.lock);
  if (last) {
    pthread_join(worker, NULL);
    pthread_mutex_lock(&g_emu.lock);
    unmap_areas();
    pthread_mutex_unlock(&g_emu.lock);
  }
  exclusive_give();
  close_efd(f->efd);
  drpai_info_free(&f->info);
  free(f);
}

int drpai_emu_pollfd(const drpai_emu_file_t* f) { return f->efd; }

void drpai_emu_last_stats(drpai_run_stats_t* out) {
  pthread_mutex_lock(&g_emu.lock);
  *out = g_emu.last_stats;
  pthread_mutex_unlock(&g_emu.lock);
}

/* ---- read / write ---------------------------------------------------------- */

/* A descriptor's transfer state changes only under the read/write permission
 * (transfers, ASSIGN, ASSIGN_PARAM, PREPOST_*), so holding it is what makes
 * these functions safe against each other; the device lock is only needed
 * where other descriptors' state is examined. */

/* Feeds drp_param_info.txt bytes, parsing each completed line. */
static int feed_info(drpai_emu_file_t* f, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != '\n') {
      if (f->line_len == sizeof(f->line)) return -EINVAL;
      f->line[f->line_len++] = p[i];
      continue;
    }
    if (drpai_info_parse_line(&f->info, f->line, f->line_len, NULL) != 0) return -EINVAL;
    f->line_len = 0;
  }
  return 0;
}

static void param_reset(drpai_emu_file_t* f) {
  drpai_info_free(&f->info);
  f->info_ready = 0;
  f->line_len = 0;
  f->info_done = 0;
}

ssize_t drpai_emu_write(drpai_emu_file_t* f, const void* buf, size_t count) {
  if (rw_take()) return -ERESTART;
  ssize_t rc;
  if (!buf)
    rc = -EFAULT;
  else if (count == 0)
    rc = -EINVAL;
  else if (f->state == RW_PARAM) {
    size_t n = count < f->info_size - f->info_done ? count : f->info_size - f->info_done;
    rc = take_fault(DRPAI_FAULT_NOMEM) ? -ENOMEM : feed_info(f, (const char*)buf, n);
    if (rc == 0) {
      f->info_done += (uint32_t)n;
      rc = (ssize_t)n;
      if (f->info_done == f->info_size) {
        /* The last line may lack its newline. */
        if (drpai_info_parse_line(&f->info, f->line, f->line_len, NULL) != 0) {
          rc = -EINVAL;
        } else {
          f->info_ready = 1;
          f->state = RW_IDLE;
        }
      }
    }
    if (rc < 0) {
      param_reset(f);
      f->state = RW_IDLE;
    }
  } else if (f->state != RW_ASSIGN && f->state != RW_WRITE) {
    /* Not assigned, already complete, or reading. */
    rc = -EACCES;
  } else if (take_fault(DRPAI_FAULT_NOMEM)) {
    rc = -ENOMEM;
  } else {
    uint64_t left = f->size - f->done;
    size_t n = count < left ? count : (size_t)left;
    uint8_t* dst = phys_map(NULL, f->addr + f->done, n);
    if (!dst) {
      rc = -EFAULT;
    } else {
      memcpy(dst, buf, n);
      f->done += n;
      f->state = f->done == f->size ? RW_IDLE : RW_WRITE;
      rc = (ssize_t)n;
    }
  }
  uint32_t hold_us = atomic_load(&g_emu.test_rw_hold_us);
  if (hold_us) sleep_us(hold_us);
  rw_give();
  return rc;
}

ssize_t drpai_emu_read(drpai_emu_file_t* f, void* buf, size_t count) {
  if (rw_take()) return -ERESTART;
  ssize_t rc;
  if (!buf) {
    rc = -EFAULT;
  } else if (count == 0) {
    rc = -EINVAL;
  } else if (f->state != RW_ASSIGN && f->state != RW_READ) {
    rc = -EACCES;
  } else if (count > f->size - f->done || take_fault(DRPAI_FAULT_NOMEM)) {
    /* Reading past the assigned size is ENOMEM (manual 4.2.4). */
    rc = -ENOMEM;
  } else {
    const uint8_t* src = phys_map(NULL, f->addr + f->done, count);
    if (!src) {
      rc = -EFAULT;
    } else {
      memcpy(buf, src, count);
      f->done += count;
      f->state = f->done == f->size ? RW_IDLE : RW_READ;
      rc = (ssize_t)count;
    }
  }
  uint32_t hold_us = atomic_load(&g_emu.test_rw_hold_us);
  if (hold_us) sleep_us(hold_us);
  rw_give();
  return rc;
}

/* ---- ioctls ------------------------------------------------------------------ */

static int ioc_assign(drpai_emu_file_t* f, const drpai_data_t* d) {
  if (!d) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (f->state != RW_IDLE && f->state != RW_ASSIGN) {
    rc = -EACCES;
  } else if (d->size == 0 || d->address % DRPAI_ALIGN || !in_drpai_area(d->address, d->size)) {
    rc = -EINVAL;
  } else if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  } else {
    /* Another descriptor's pending transfer owns its range. */
    for (drpai_emu_file_t* o = g_emu.files; o && rc == 0; o = o->next) {
      if (o == f || (o->state != RW_ASSIGN && o->state != RW_WRITE && o->state != RW_READ)) continue;
      if (d->address < o->addr + o->size && o->addr < d->address + d->size) rc = -EINVAL;
    }
    if (rc == 0) {
      f->addr = d->address;
      f->size = d->size;
      f->done = 0;
      f->state = RW_ASSIGN;
    }
  }
  pthread_mutex_unlock(&g_emu.lock);
  rw_give();
  return rc;
}

static int ioc_assign_param(drpai_emu_file_t* f, const drpai_assign_param_t* a) {
  if (!a || a->info_size == 0 || a->obj.address == 0 || a->obj.size == 0) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (f->state != RW_IDLE && f->state != RW_ASSIGN) {
    rc = -EACCES;
  } else if (a->obj.address % DRPAI_ALIGN || !in_drpai_area(a->obj.address, a->obj.size)) {
    rc = -EINVAL;
  } else if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  } else {
    param_reset(f);
    f->param_obj = a->obj;
    f->info_size = a->info_size;
    f->state = RW_PARAM;
  }
  pthread_mutex_unlock(&g_emu.lock);
  rw_give();
  return rc;
}

/* Common checks of PREPOST_CROP / PREPOST_INADDR; returns drp_param.bin in
 * memory or an error. Lock held. */
static int prepost_check(drpai_emu_file_t* f, const drpai_data_t* obj, uint8_t** param) {
  if (g_emu.running) return -EBUSY;
  if (f->state != RW_IDLE) return -EACCES;
  if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    return -EFAULT;
  }
  /* drp_param_info.txt must have been imported, for this drp_param.bin. */
  if (!f->info_ready || obj->address != f->param_obj.address || obj->size != f->param_obj.size)
    return -EINVAL;
  *param = phys_map(NULL, obj->address, obj->size);
  return *param ? 0 : -EFAULT;
}

static int ioc_crop(drpai_emu_file_t* f, const drpai_crop_t* c) {
  if (!c) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  uint8_t* param = NULL;
  rc = prepost_check(f, &c->obj, &param);
  if (rc == 0) rc = drpai_info_crop(&f->info, param, c->obj.size, c);
  pthread_mutex_unlock(&g_emu.lock);
  rw_give();
  return rc;
}

static int ioc_inaddr(drpai_emu_file_t* f, const drpai_inout_t* io) {
  if (!io || !memchr(io->name, '\0', sizeof(io->name)) || io->data.size == 0) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  uint8_t* param = NULL;
  rc = prepost_check(f, &io->obj, &param);
  uint32_t org = 0;
  if (rc == 0) {
    if (f->adrconv.enabled) {
      /* Only an area SET_ADRCONV converts can hold the input. */
      if (!drpai_adrconv_covers(&f->adrconv, io->data.address, io->data.size, &org)) rc = -ENOMEM;
    } else if (io->data.address + io->data.size > 0x100000000ull ||
               !phys_map(NULL, io->data.address, io->data.size)) {
      rc = -EINVAL;
    } else {
      org = (uint32_t)io->data.address;
    }
  }
  if (rc == 0) rc = drpai_info_inaddr(&f->info, param, io->obj.size, io->name, org, io->data.size);
  if (rc == 0) f->inaddr = 1;
  pthread_mutex_unlock(&g_emu.lock);
  rw_give();
  return rc;
}

static int ioc_start(drpai_emu_file_t* f, const drpai_data_t* proc) {
  if (!proc) return -EINVAL;
  int rc = exclusive_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (g_emu.running) {
    rc = -EBUSY;
  } else if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  }
  for (int i = DRPAI_INDEX_DRP_DESC; rc == 0 && i < DRPAI_INDEX_NUM; ++i)
    if (proc[i].address % DRPAI_ALIGN || !in_drpai_area(proc[i].address, proc[i].size)) rc = -EINVAL;
  if (rc == 0 && !f->inaddr && !f->adrconv.enabled &&
      !phys_map(NULL, proc[DRPAI_INDEX_INPUT].address, proc[DRPAI_INDEX_INPUT].size))
    rc = -EINVAL; /* the input must be emulated physical memory */
  /* With address conversion on, every address must lie in a converted area. */
  for (int i = 0; rc == 0 && f->adrconv.enabled && i < DRPAI_INDEX_NUM; ++i) {
    if (i == DRPAI_INDEX_INPUT && f->inaddr) continue;
    if (!drpai_adrconv_covers(&f->adrconv, proc[i].address, proc[i].size, NULL)) rc = -ENOMEM;
  }
  if (rc == 0) {
    memcpy(g_emu.job.proc, proc, sizeof(g_emu.job.proc));
    g_emu.job.relocate_input = !f->inaddr;
    g_emu.job.adrconv = f->adrconv;
    g_emu.job.abort = &g_emu.abort;
    g_emu.job.drp_khz = drpai_drp_freq_khz(g_emu.mindiv);
    g_emu.job.aimac_khz = drpai_aimac_freq_khz(g_emu.divfix);
    g_emu.running = g_emu.started = 1;
    g_emu.err = DRPAI_ERRINFO_SUCCESS;
    g_emu.job_pending = 1;
    set_all_ready(0);
    pthread_cond_broadcast(&g_emu.cv);
  }
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  return rc;
}

static int ioc_reset(void) {
  int rc = exclusive_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (g_emu.fault[DRPAI_FAULT_HW_RESET]) {
    g_emu.fault[DRPAI_FAULT_HW_RESET] = 0;
    rc = -EIO;
  } else {
    stop_inference_locked();
    g_emu.err = DRPAI_ERRINFO_RESET;
    set_all_ready(1);
  }
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  return rc;
}

static int ioc_get_status(drpai_status_t* s) {
  if (!s) return -EINVAL;
  int rc = exclusive_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  } else {
    memset(s, 0, sizeof(*s));
    s->status = g_emu.running ? DRPAI_STATUS_RUN : g_emu.started ? DRPAI_STATUS_IDLE : DRPAI_STATUS_INIT;
    s->err = g_emu.running ? DRPAI_ERRINFO_SUCCESS : g_emu.err;
    /* The status is filled in either way; -1 means "not done" or "failed". */
    if (g_emu.running)
      rc = -EBUSY;
    else if (g_emu.err == DRPAI_ERRINFO_DRP_ERR || g_emu.err == DRPAI_ERRINFO_AIMAC_ERR)
      rc = -EIO;
  }
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  return rc;
}

static int ioc_get_area(drpai_data_t* d) {
  if (!d) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  rc = exclusive_take();
  if (rc == 0) {
    pthread_mutex_lock(&g_emu.lock);
    if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
      g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
      rc = -EFAULT;
    } else {
      d->address = g_emu.areas[0].base;
      d->size = g_emu.areas[0].size;
    }
    pthread_mutex_unlock(&g_emu.lock);
    exclusive_give();
  }
  rw_give();
  return rc;
}

static int ioc_freq(const uint32_t* v, int drpai) {
  if (!v) return -EFAULT;
  int rc = exclusive_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  uint32_t lo = drpai ? DRPAI_DIVFIX_MIN : DRPAI_MINDIV_MIN;
  uint32_t hi = drpai ? DRPAI_DIVFIX_MAX : DRPAI_MINDIV_MAX;
  if (g_emu.running)
    rc = -EBUSY;
  else if (*v < lo || *v > hi)
    rc = -EINVAL;
  else if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  } else if (drpai)
    g_emu.divfix = *v;
  else
    g_emu.mindiv = *v;
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  return rc;
}

static int ioc_adrconv(drpai_emu_file_t* f, const drpai_adrconv_t* a) {
  if (!a) return -EINVAL;
  int rc = exclusive_take();
  if (rc) return rc;
  pthread_mutex_lock(&g_emu.lock);
  if (g_emu.running) {
    rc = -EBUSY;
  } else if (g_emu.fault[DRPAI_FAULT_INTERNAL]) {
    g_emu.fault[DRPAI_FAULT_INTERNAL] = 0;
    rc = -EFAULT;
  } else {
    rc = drpai_adrconv_apply(&f->adrconv, a);
  }
  pthread_mutex_unlock(&g_emu.lock);
  exclusive_give();
  return rc;
}

int drpai_emu_ioctl(drpai_emu_file_t* f, unsigned long request, void* arg) {
  switch (request) {
    case DRPAI_ASSIGN: return ioc_assign(f, (const drpai_data_t*)arg);
    case DRPAI_START: return ioc_start(f, (const drpai_data_t*)arg);
    case DRPAI_RESET: return ioc_reset();
    case DRPAI_GET_STATUS: return ioc_get_status((drpai_status_t*)arg);
    case DRPAI_ASSIGN_PARAM: return ioc_assign_param(f, (const drpai_assign_param_t*)arg);
    case DRPAI_PREPOST_CROP: return ioc_crop(f, (const drpai_crop_t*)arg);
    case DRPAI_PREPOST_INADDR: return ioc_inaddr(f, (const drpai_inout_t*)arg);
    case DRPAI_GET_DRPAI_AREA: return ioc_get_area((drpai_data_t*)arg);
    case DRPAI_SET_DRP_MAX_FREQ: return ioc_freq((const uint32_t*)arg, 0);
    case DRPAI_SET_DRPAI_FREQ: return ioc_freq((const uint32_t*)arg, 1);
    case DRPAI_SET_ADRCONV: return ioc_adrconv(f, (const drpai_adrconv_t*)arg);
    default: return -EFAULT; /* the driver's answer to an unknown request */
  }
}

/* ---- test controls ------------------------------------------------------------ */

void drpai_emu_test_fault(drpai_emu_fault_t fault) {
  pthread_mutex_lock(&g_emu.lock);
  if ((int)fault <= 0 || (int)fault >= 4)
    memset(g_emu.fault, 0, sizeof(g_emu.fault));
  else
    g_emu.fault[fault] = 1;
  pthread_mutex_unlock(&g_emu.lock);
}

void drpai_emu_test_hold_rw(int hold) {
  if (hold)
    while (atomic_flag_test_and_set(&g_emu.rw)) sleep_us(100);
  else
    rw_give();
}

void drpai_emu_test_hold_exclusive(int hold) {
  if (hold && !g_emu.test_holds_exclusive) {
    while (exclusive_take() != 0) {
    }
    g_emu.test_holds_exclusive = 1;
  } else if (!hold && g_emu.test_holds_exclusive) {
    g_emu.test_holds_exclusive = 0;
    exclusive_give();
  }
}

void drpai_emu_test_timeout_ms(uint32_t ms) {
  pthread_mutex_lock(&g_emu.lock);
  g_emu.test_timeout_ms = ms;
  pthread_mutex_unlock(&g_emu.lock);
}

void drpai_emu_test_run_us(uint32_t us) {
  pthread_mutex_lock(&g_emu.lock);
  g_emu.test_run_us = us;
  pthread_mutex_unlock(&g_emu.lock);
}

void drpai_emu_test_rw_hold_us(uint32_t us) { atomic_store(&g_emu.test_rw_hold_us, us); }

void* drpai_emu_test_phys(uint64_t addr, uint64_t size) {
  pthread_mutex_lock(&g_emu.lock);
  void* p = g_emu.users ? phys_map(NULL, addr, size) : NULL;
  pthread_mutex_unlock(&g_emu.lock);
  return p;
}
