/*
 * The emulated DRP-AI driver (see drpai_emu.h). The structure follows the
 * driver's: device-wide state (memory area, run state, clocks, open files)
 * behind one mutex; an "exclusive control" that the ioctls touching the
 * hardware take with a timeout (ETIMEDOUT); a read/write permission that data
 * transfers and placement ioctls only try to take (ERESTART, to be retried by
 * the caller as in manual section 4.5.2); per-open-file transfer state; and a
 * worker thread that plays the hardware, so inference runs while the caller
 * waits on the descriptor.
 *
 * Like /dev/drpai0 the device is one per machine: all of that state lives in
 * a shared memory object that every process maps (drpai_emu_shm.h), the mutex
 * is process-shared and robust, and the locks are owned by process ids so
 * that a process that dies holding one is noticed and the lock taken back.
 * The hardware worker runs in the process that issued START; the other
 * processes' workers watch it and recover the device if that process dies.
 */
#include "drpai_emu.h"

#include <errno.h>
#include <linux/ioctl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drpai_emu_shm.h"
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

/* The process's handle of an open file: which shared slot it is, the
 * descriptor select()/poll() watch, and the drp_param_info.txt parse, which
 * holds pointers and so stays in the process that wrote it (the shared slot
 * records which import is current). */
struct drpai_emu_file_t {
  uint32_t slot;
  int fd;
  char line[DRPAI_INFO_MAX_LINE];
  size_t line_len;
  drpai_info_t info;
  uint64_t info_gen;
};

/* This process's test controls (drpai_emu_test.h). */
static struct {
  pthread_mutex_t lock;
  int fault[4];
  uint32_t timeout_ms, run_us;
  _Atomic uint32_t rw_hold_us;
  int holds_exclusive, holds_rw;
} g_test = {.lock = PTHREAD_MUTEX_INITIALIZER};

static drpai_emu_shm_t* dev(void) { return drpai_emu_shm_get(); }
static drpai_shm_file_t* slot_of(const drpai_emu_file_t* f) { return &dev()->files[f->slot]; }

/* ---- small helpers ------------------------------------------------------- */

static int take_fault(drpai_emu_fault_t f) {
  pthread_mutex_lock(&g_test.lock);
  int armed = g_test.fault[f];
  g_test.fault[f] = 0;
  pthread_mutex_unlock(&g_test.lock);
  return armed;
}

static void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static uint32_t timeout_ms(void) {
  pthread_mutex_lock(&g_test.lock);
  uint32_t ms = g_test.timeout_ms;
  pthread_mutex_unlock(&g_test.lock);
  return ms ? ms : dev()->timeout_ms;
}

/* Host pointer of emulated physical memory (any area). */
static uint8_t* phys_map(void* ctx, uint64_t phys, uint64_t size) {
  (void)ctx;
  return drpai_emu_shm_host(phys, size);
}

/* Inside the DRP-AI memory area (area 0), where the object files must lie. */
static int in_drpai_area(uint64_t addr, uint64_t size) {
  const drpai_shm_area_t* a = &dev()->areas[0];
  return addr >= a->base && addr - a->base <= a->size && size <= a->size - (addr - a->base);
}

/* ---- the driver's two locks ---------------------------------------------- */

/* Exclusive control, waited for up to the timeout. A holder that died is
 * noticed by its process id and loses the lock. */
static int exclusive_take(void) {
  drpai_emu_shm_t* d = dev();
  uint32_t ms = timeout_ms();
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  drpai_emu_shm_lock();
  while (d->exclusive && drpai_emu_shm_alive(d->exclusive)) {
    if (drpai_emu_shm_wait(&until) == ETIMEDOUT && d->exclusive && drpai_emu_shm_alive(d->exclusive)) {
      drpai_emu_shm_unlock();
      return -ETIMEDOUT;
    }
  }
  d->exclusive = getpid();
  drpai_emu_shm_unlock();
  return 0;
}

static void exclusive_give(void) {
  drpai_emu_shm_lock();
  dev()->exclusive = 0;
  drpai_emu_shm_broadcast();
  drpai_emu_shm_unlock();
}

/* The read/write permission is only tried: a busy one is ERESTART. */
static int rw_take(void) {
  _Atomic int32_t* rw = &dev()->rw;
  int32_t holder = 0;
  int32_t me = (int32_t)getpid();
  while (!atomic_compare_exchange_strong(rw, &holder, me)) {
    if (drpai_emu_shm_alive((pid_t)holder)) return -ERESTART;
    /* Its holder died inside a transfer: take it back. */
  }
  return 0;
}
static void rw_give(void) { atomic_store(&dev()->rw, 0); }

/* ---- the hardware: worker thread ------------------------------------------ */

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Runs one job of this process. Lock held on entry and exit. */
static void worker_run_locked(void) {
  drpai_emu_shm_t* d = dev();
  const drpai_phys_t mem = {phys_map, NULL};
  d->job_pending = 0;
  d->worker_busy = 1;
  drpai_job_t job = d->job;
  job.abort = &d->abort;
  pthread_mutex_lock(&g_test.lock);
  uint32_t run_us = g_test.run_us ? g_test.run_us : d->run_us;
  pthread_mutex_unlock(&g_test.lock);
  drpai_emu_shm_unlock();

  uint64_t t0 = now_us();
  drpai_run_stats_t stats;
  int32_t err = drpai_engine_run(&mem, &job, &stats);
  /* Sliced so that RESET and the last close stop a slow run promptly. */
  while (err != DRPAI_ERRINFO_RESET && now_us() - t0 < run_us) {
    if (atomic_load(&d->abort))
      err = DRPAI_ERRINFO_RESET;
    else
      sleep_us(200);
  }

  drpai_emu_shm_lock();
  d->worker_busy = 0;
  /* A run that RESET ended has already been accounted for. */
  if (!atomic_load(&d->abort)) {
    d->running = 0;
    d->err = err;
    d->last_stats = stats;
    drpai_emu_shm_sync_ready();
  }
  drpai_emu_shm_broadcast();
}

/* The hardware of this process: runs the jobs this process started, and
 * while another process's job runs, checks now and then that the process is
 * still there (a process killed mid-inference must not leave the device
 * running for ever). */
static void* worker_main(void* arg) {
  const _Atomic int* quit = (const _Atomic int*)arg;
  drpai_emu_shm_t* d = dev();
  const pid_t me = getpid();
  drpai_emu_shm_lock();
  for (;;) {
    if (d->job_pending && d->runner == me) {
      worker_run_locked();
      continue;
    }
    if (atomic_load(quit)) break;
    if (d->running && d->runner != me) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += DRPAI_EMU_WATCH_MS * 1000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
      }
      drpai_emu_shm_wait(&until);
      drpai_emu_shm_reap(0);
    } else {
      drpai_emu_shm_wait(NULL);
    }
  }
  drpai_emu_shm_unlock();
  return NULL;
}

/* Stops a running inference and waits until the worker no longer touches
 * memory; the lock is held. */
static void stop_inference_locked(void) {
  drpai_emu_shm_t* d = dev();
  if (!d->running) return;
  atomic_store(&d->abort, 1);
  d->job_pending = 0;
  while (d->worker_busy) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    drpai_emu_shm_wait(&until);
    drpai_emu_shm_reap(0); /* the runner may have died meanwhile */
  }
  atomic_store(&d->abort, 0);
  d->running = 0;
}

/* ---- power up / open / close --------------------------------------------- */

/* First open of the device: the hardware reset. Lock held. */
static int power_up_locked(void) {
  drpai_emu_shm_t* d = dev();
  if (take_fault(DRPAI_FAULT_HW_RESET)) return -EIO;
  if (take_fault(DRPAI_FAULT_NOMEM)) return -ENOMEM;
  d->started = d->running = 0;
  d->err = DRPAI_ERRINFO_SUCCESS;
  d->mindiv = DRPAI_MINDIV_DEFAULT;
  d->divfix = DRPAI_DIVFIX_DEFAULT;
  d->job_pending = d->worker_busy = 0;
  atomic_store(&d->abort, 0);
  memset(&d->last_stats, 0, sizeof(d->last_stats));
  drpai_emu_shm_sync_ready();
  return 0;
}

int drpai_emu_open(drpai_emu_file_t** out) {
  *out = NULL;
  drpai_emu_file_t* f = (drpai_emu_file_t*)calloc(1, sizeof(*f));
  if (!f) return -ENOMEM;
  drpai_info_init(&f->info);
  int rc = drpai_emu_shm_attach(&f->fd, worker_main);
  if (rc) {
    free(f);
    return rc;
  }
  rc = exclusive_take();
  if (rc == 0) {
    drpai_emu_shm_lock();
    drpai_emu_shm_reap(0);
    /* "When open it multiple times, it will be initialized only the first time." */
    if (dev()->users == 0) rc = power_up_locked();
    if (rc == 0) rc = drpai_emu_shm_file_new(&f->slot);
    drpai_emu_shm_unlock();
    exclusive_give();
  }
  if (rc) {
    drpai_emu_shm_detach(f->fd);
    free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void drpai_emu_close(drpai_emu_file_t* f) {
  if (!f) return;
  /* Exclusive control keeps a concurrent first open from powering up while
   * the last close still stops the hardware. close cannot fail, so it waits
   * as long as it takes. */
  while (exclusive_take() != 0) {
  }
  drpai_emu_shm_lock();
  /* Only the last close of the device ends an inference (manual 4.2.2). */
  if (drpai_emu_shm_file_release(f->slot) && dev()->users == 0) stop_inference_locked();
  drpai_emu_shm_unlock();
  exclusive_give();
  drpai_emu_shm_detach(f->fd);
  drpai_info_free(&f->info);
  free(f);
}

int drpai_emu_pollfd(const drpai_emu_file_t* f) { return f->fd; }

void drpai_emu_last_stats(drpai_run_stats_t* out) {
  memset(out, 0, sizeof(*out));
  if (!drpai_emu_shm_get()) return;
  drpai_emu_shm_lock();
  *out = dev()->last_stats;
  drpai_emu_shm_unlock();
}

/* ---- the shared allocator of the area ------------------------------------------ */

/* Whether [base, base + size) misses every reserved range. Lock held. */
static int range_free_locked(uint64_t base, uint64_t size) {
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_RESERVED; ++i) {
    const drpai_shm_reserved_t* r = &dev()->reserved[i];
    if (r->owner && base < r->base + r->size && r->base < base + size) return 0;
  }
  return 1;
}

int drpai_emu_reserve(drpai_emu_file_t* f, uint64_t size, uint32_t org, uint64_t* out) {
  (void)f; /* the open file is what keeps the device attached */
  drpai_emu_shm_lock();
  drpai_emu_shm_t* d = dev();
  drpai_emu_shm_reap(0);
  const drpai_shm_area_t* a = &d->areas[0];
  uint32_t slot = DRPAI_EMU_MAX_RESERVED;
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_RESERVED && slot == DRPAI_EMU_MAX_RESERVED; ++i)
    if (!d->reserved[i].owner) slot = i;
  /* Candidates: the area's start and the end of every range; the lowest
   * that fits wins. */
  uint64_t best = UINT64_MAX;
  for (uint32_t i = 0; slot < DRPAI_EMU_MAX_RESERVED && i <= DRPAI_EMU_MAX_RESERVED; ++i) {
    uint64_t at = a->base;
    if (i < DRPAI_EMU_MAX_RESERVED) {
      if (!d->reserved[i].owner) continue;
      at = d->reserved[i].base + d->reserved[i].size;
    }
    uint64_t phys = at + (((uint64_t)org - at) & DRPAI_PAGE_MASK);
    if (phys < best && size && phys + size <= a->base + a->size && range_free_locked(phys, size)) best = phys;
  }
  int rc = -ENOMEM;
  if (best != UINT64_MAX) {
    d->reserved[slot].base = best;
    d->reserved[slot].size = size;
    d->reserved[slot].owner = getpid();
    *out = best;
    rc = 0;
  }
  drpai_emu_shm_unlock();
  return rc;
}

void drpai_emu_unreserve(drpai_emu_file_t* f, uint64_t phys) {
  (void)f;
  drpai_emu_shm_lock();
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_RESERVED; ++i) {
    drpai_shm_reserved_t* r = &dev()->reserved[i];
    if (r->owner == getpid() && r->base == phys) {
      r->owner = 0;
      break;
    }
  }
  drpai_emu_shm_unlock();
}

/* ---- read / write ---------------------------------------------------------- */

/* A file's transfer state changes only under the read/write permission
 * (transfers, ASSIGN, ASSIGN_PARAM, PREPOST_*), so holding it is what makes
 * these functions safe against each other, in every process; the device
 * lock is only needed where other files' state is examined. */

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
  drpai_shm_file_t* s = slot_of(f);
  drpai_info_free(&f->info);
  s->info_ready = 0;
  s->info_done = 0;
  f->line_len = 0;
}

ssize_t drpai_emu_write(drpai_emu_file_t* f, const void* buf, size_t count) {
  if (rw_take()) return -ERESTART;
  drpai_shm_file_t* s = slot_of(f);
  ssize_t rc;
  if (!buf)
    rc = -EFAULT;
  else if (count == 0)
    rc = -EINVAL;
  else if (s->state == DRPAI_RW_PARAM) {
    size_t n = count < s->info_size - s->info_done ? count : s->info_size - s->info_done;
    rc = take_fault(DRPAI_FAULT_NOMEM) ? -ENOMEM : feed_info(f, (const char*)buf, n);
    if (rc == 0) {
      s->info_done += (uint32_t)n;
      rc = (ssize_t)n;
      if (s->info_done == s->info_size) {
        /* The last line may lack its newline. */
        if (drpai_info_parse_line(&f->info, f->line, f->line_len, NULL) != 0) {
          rc = -EINVAL;
        } else {
          f->info_gen = atomic_fetch_add(&dev()->info_gen, 1) + 1;
          s->info_gen = f->info_gen;
          s->info_ready = 1;
          s->state = DRPAI_RW_IDLE;
        }
      }
    }
    if (rc < 0) {
      param_reset(f);
      s->state = DRPAI_RW_IDLE;
    }
  } else if (s->state != DRPAI_RW_ASSIGN && s->state != DRPAI_RW_WRITE) {
    /* Not assigned, already complete, or reading. */
    rc = -EACCES;
  } else if (take_fault(DRPAI_FAULT_NOMEM)) {
    rc = -ENOMEM;
  } else {
    uint64_t left = s->size - s->done;
    size_t n = count < left ? count : (size_t)left;
    uint8_t* dst = phys_map(NULL, s->addr + s->done, n);
    if (!dst) {
      rc = -EFAULT;
    } else {
      memcpy(dst, buf, n);
      s->done += n;
      s->state = s->done == s->size ? DRPAI_RW_IDLE : DRPAI_RW_WRITE;
      rc = (ssize_t)n;
    }
  }
  uint32_t hold_us = atomic_load(&g_test.rw_hold_us);
  if (hold_us) sleep_us(hold_us);
  rw_give();
  return rc;
}

ssize_t drpai_emu_read(drpai_emu_file_t* f, void* buf, size_t count) {
  if (rw_take()) return -ERESTART;
  drpai_shm_file_t* s = slot_of(f);
  ssize_t rc;
  if (!buf) {
    rc = -EFAULT;
  } else if (count == 0) {
    rc = -EINVAL;
  } else if (s->state != DRPAI_RW_ASSIGN && s->state != DRPAI_RW_READ) {
    rc = -EACCES;
  } else if (count > s->size - s->done || take_fault(DRPAI_FAULT_NOMEM)) {
    /* Reading past the assigned size is ENOMEM (manual 4.2.4). */
    rc = -ENOMEM;
  } else {
    const uint8_t* src = phys_map(NULL, s->addr + s->done, count);
    if (!src) {
      rc = -EFAULT;
    } else {
      memcpy(buf, src, count);
      s->done += count;
      s->state = s->done == s->size ? DRPAI_RW_IDLE : DRPAI_RW_READ;
      rc = (ssize_t)count;
    }
  }
  uint32_t hold_us = atomic_load(&g_test.rw_hold_us);
  if (hold_us) sleep_us(hold_us);
  rw_give();
  return rc;
}

/* ---- ioctls ------------------------------------------------------------------ */

/* Whether another open file has a pending transfer over d. Lock held. */
static int overlaps_locked(const drpai_shm_file_t* s, const drpai_data_t* d) {
  for (uint32_t i = 0; i < DRPAI_EMU_MAX_FILES; ++i) {
    const drpai_shm_file_t* o = &dev()->files[i];
    if (!o->used || o == s ||
        (o->state != DRPAI_RW_ASSIGN && o->state != DRPAI_RW_WRITE && o->state != DRPAI_RW_READ))
      continue;
    if (d->address < o->addr + o->size && o->addr < d->address + d->size) return 1;
  }
  return 0;
}

static int ioc_assign(drpai_emu_file_t* f, const drpai_data_t* d) {
  if (!d) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_shm_file_t* s = slot_of(f);
  if (s->state != DRPAI_RW_IDLE && s->state != DRPAI_RW_ASSIGN) {
    rc = -EACCES;
  } else if (d->size == 0 || d->address % DRPAI_ALIGN || !in_drpai_area(d->address, d->size)) {
    rc = -EINVAL;
  } else if (take_fault(DRPAI_FAULT_INTERNAL)) {
    rc = -EFAULT;
  } else {
    /* Another file's pending transfer owns its range, whichever process
     * opened it; a file whose processes died owns nothing. */
    if (overlaps_locked(s, d)) {
      drpai_emu_shm_reap(0);
      if (overlaps_locked(s, d)) rc = -EINVAL;
    }
    if (rc == 0) {
      s->addr = d->address;
      s->size = d->size;
      s->done = 0;
      s->state = DRPAI_RW_ASSIGN;
    }
  }
  drpai_emu_shm_unlock();
  rw_give();
  return rc;
}

static int ioc_assign_param(drpai_emu_file_t* f, const drpai_assign_param_t* a) {
  if (!a || a->info_size == 0 || a->obj.address == 0 || a->obj.size == 0) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_shm_file_t* s = slot_of(f);
  if (s->state != DRPAI_RW_IDLE && s->state != DRPAI_RW_ASSIGN) {
    rc = -EACCES;
  } else if (a->obj.address % DRPAI_ALIGN || !in_drpai_area(a->obj.address, a->obj.size)) {
    rc = -EINVAL;
  } else if (take_fault(DRPAI_FAULT_INTERNAL)) {
    rc = -EFAULT;
  } else {
    param_reset(f);
    s->param_obj = a->obj;
    s->info_size = a->info_size;
    s->state = DRPAI_RW_PARAM;
  }
  drpai_emu_shm_unlock();
  rw_give();
  return rc;
}

/* Common checks of PREPOST_CROP / PREPOST_INADDR; returns drp_param.bin in
 * memory or an error. Lock held. */
static int prepost_check(drpai_emu_file_t* f, const drpai_data_t* obj, uint8_t** param) {
  const drpai_shm_file_t* s = slot_of(f);
  if (dev()->running) return -EBUSY;
  if (s->state != DRPAI_RW_IDLE) return -EACCES;
  if (take_fault(DRPAI_FAULT_INTERNAL)) return -EFAULT;
  /* drp_param_info.txt must have been imported, for this drp_param.bin, and
   * its parse must be this process's (docs/drpai.md, limits). */
  if (!s->info_ready || s->info_gen != f->info_gen || obj->address != s->param_obj.address ||
      obj->size != s->param_obj.size)
    return -EINVAL;
  *param = phys_map(NULL, obj->address, obj->size);
  return *param ? 0 : -EFAULT;
}

static int ioc_crop(drpai_emu_file_t* f, const drpai_crop_t* c) {
  if (!c) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  uint8_t* param = NULL;
  rc = prepost_check(f, &c->obj, &param);
  if (rc == 0) rc = drpai_info_crop(&f->info, param, c->obj.size, c);
  drpai_emu_shm_unlock();
  rw_give();
  return rc;
}

static int ioc_inaddr(drpai_emu_file_t* f, const drpai_inout_t* io) {
  if (!io || !memchr(io->name, '\0', sizeof(io->name)) || io->data.size == 0) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_shm_file_t* s = slot_of(f);
  uint8_t* param = NULL;
  rc = prepost_check(f, &io->obj, &param);
  uint32_t org = 0;
  if (rc == 0) {
    if (s->adrconv.enabled) {
      /* Only an area SET_ADRCONV converts can hold the input. */
      if (!drpai_adrconv_covers(&s->adrconv, io->data.address, io->data.size, &org)) rc = -ENOMEM;
    } else if (io->data.address + io->data.size > 0x100000000ull ||
               !phys_map(NULL, io->data.address, io->data.size)) {
      rc = -EINVAL;
    } else {
      org = (uint32_t)io->data.address;
    }
  }
  if (rc == 0) rc = drpai_info_inaddr(&f->info, param, io->obj.size, io->name, org, io->data.size);
  if (rc == 0) s->inaddr = 1;
  drpai_emu_shm_unlock();
  rw_give();
  return rc;
}

static int ioc_start(drpai_emu_file_t* f, const drpai_data_t* proc) {
  if (!proc) return -EINVAL;
  /* The hardware of this process must be there to run the job. */
  int rc = drpai_emu_shm_worker_ensure(worker_main);
  if (rc) return rc;
  rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_emu_shm_t* d = dev();
  const drpai_shm_file_t* s = slot_of(f);
  if (d->running) drpai_emu_shm_reap(0); /* a runner that died no longer runs */
  if (d->running) {
    rc = -EBUSY;
  } else if (take_fault(DRPAI_FAULT_INTERNAL)) {
    rc = -EFAULT;
  }
  for (int i = DRPAI_INDEX_DRP_DESC; rc == 0 && i < DRPAI_INDEX_NUM; ++i)
    if (proc[i].address % DRPAI_ALIGN || !in_drpai_area(proc[i].address, proc[i].size)) rc = -EINVAL;
  if (rc == 0 && !s->inaddr && !s->adrconv.enabled &&
      !phys_map(NULL, proc[DRPAI_INDEX_INPUT].address, proc[DRPAI_INDEX_INPUT].size))
    rc = -EINVAL; /* the input must be emulated physical memory */
  /* With address conversion on, every address must lie in a converted area. */
  for (int i = 0; rc == 0 && s->adrconv.enabled && i < DRPAI_INDEX_NUM; ++i) {
    if (i == DRPAI_INDEX_INPUT && s->inaddr) continue;
    if (!drpai_adrconv_covers(&s->adrconv, proc[i].address, proc[i].size, NULL)) rc = -ENOMEM;
  }
  if (rc == 0) {
    memcpy(d->job.proc, proc, sizeof(d->job.proc));
    d->job.relocate_input = !s->inaddr;
    d->job.adrconv = s->adrconv;
    d->job.abort = NULL; /* a pointer is per process: the runner sets its own */
    d->job.drp_khz = drpai_drp_freq_khz(d->mindiv);
    d->job.aimac_khz = drpai_aimac_freq_khz(d->divfix);
    d->running = d->started = 1;
    d->err = DRPAI_ERRINFO_SUCCESS;
    d->runner = getpid();
    d->job_pending = 1;
    drpai_emu_shm_sync_ready();
    drpai_emu_shm_broadcast();
  }
  drpai_emu_shm_unlock();
  exclusive_give();
  return rc;
}

static int ioc_reset(void) {
  int rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  if (take_fault(DRPAI_FAULT_HW_RESET)) {
    rc = -EIO;
  } else {
    stop_inference_locked();
    dev()->err = DRPAI_ERRINFO_RESET;
    drpai_emu_shm_sync_ready();
  }
  drpai_emu_shm_unlock();
  exclusive_give();
  return rc;
}

static int ioc_get_status(drpai_status_t* s) {
  if (!s) return -EINVAL;
  int rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_emu_shm_t* d = dev();
  if (d->running) drpai_emu_shm_reap(0);
  if (take_fault(DRPAI_FAULT_INTERNAL)) {
    rc = -EFAULT;
  } else {
    memset(s, 0, sizeof(*s));
    s->status = d->running ? DRPAI_STATUS_RUN : d->started ? DRPAI_STATUS_IDLE : DRPAI_STATUS_INIT;
    s->err = d->running ? DRPAI_ERRINFO_SUCCESS : d->err;
    /* The status is filled in either way; -1 means "not done" or "failed". */
    if (d->running)
      rc = -EBUSY;
    else if (d->err == DRPAI_ERRINFO_DRP_ERR || d->err == DRPAI_ERRINFO_AIMAC_ERR)
      rc = -EIO;
  }
  drpai_emu_shm_unlock();
  exclusive_give();
  return rc;
}

static int ioc_get_area(drpai_data_t* d) {
  if (!d) return -EINVAL;
  int rc = rw_take();
  if (rc) return rc;
  rc = exclusive_take();
  if (rc == 0) {
    if (take_fault(DRPAI_FAULT_INTERNAL)) {
      rc = -EFAULT;
    } else {
      d->address = dev()->areas[0].base;
      d->size = dev()->areas[0].size;
    }
    exclusive_give();
  }
  rw_give();
  return rc;
}

static int ioc_freq(const uint32_t* v, int drpai) {
  if (!v) return -EFAULT;
  int rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  drpai_emu_shm_t* d = dev();
  uint32_t lo = drpai ? DRPAI_DIVFIX_MIN : DRPAI_MINDIV_MIN;
  uint32_t hi = drpai ? DRPAI_DIVFIX_MAX : DRPAI_MINDIV_MAX;
  if (d->running)
    rc = -EBUSY;
  else if (*v < lo || *v > hi)
    rc = -EINVAL;
  else if (take_fault(DRPAI_FAULT_INTERNAL))
    rc = -EFAULT;
  else if (drpai)
    d->divfix = *v;
  else
    d->mindiv = *v;
  drpai_emu_shm_unlock();
  exclusive_give();
  return rc;
}

static int ioc_adrconv(drpai_emu_file_t* f, const drpai_adrconv_t* a) {
  if (!a) return -EINVAL;
  int rc = exclusive_take();
  if (rc) return rc;
  drpai_emu_shm_lock();
  if (dev()->running)
    rc = -EBUSY;
  else if (take_fault(DRPAI_FAULT_INTERNAL))
    rc = -EFAULT;
  else
    rc = drpai_adrconv_apply(&slot_of(f)->adrconv, a);
  drpai_emu_shm_unlock();
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
  pthread_mutex_lock(&g_test.lock);
  if ((int)fault <= 0 || (int)fault >= 4)
    memset(g_test.fault, 0, sizeof(g_test.fault));
  else
    g_test.fault[fault] = 1;
  pthread_mutex_unlock(&g_test.lock);
}

/* The holds keep the device attached, so that they outlive every open file
 * of the test, as a holder in another process would. */
void drpai_emu_test_hold_rw(int hold) {
  if (hold && !g_test.holds_rw) {
    if (drpai_emu_shm_attach(NULL, worker_main) != 0) return;
    while (rw_take() != 0) sleep_us(100);
    g_test.holds_rw = 1;
  } else if (!hold && g_test.holds_rw) {
    g_test.holds_rw = 0;
    rw_give();
    drpai_emu_shm_detach(-1);
  }
}

void drpai_emu_test_hold_exclusive(int hold) {
  if (hold && !g_test.holds_exclusive) {
    if (drpai_emu_shm_attach(NULL, worker_main) != 0) return;
    while (exclusive_take() != 0) {
    }
    g_test.holds_exclusive = 1;
  } else if (!hold && g_test.holds_exclusive) {
    g_test.holds_exclusive = 0;
    exclusive_give();
    drpai_emu_shm_detach(-1);
  }
}

void drpai_emu_test_hold_device_lock(void) {
  if (drpai_emu_shm_attach(NULL, worker_main) == 0) drpai_emu_shm_lock();
}

void drpai_emu_test_timeout_ms(uint32_t ms) {
  pthread_mutex_lock(&g_test.lock);
  g_test.timeout_ms = ms;
  pthread_mutex_unlock(&g_test.lock);
}

void drpai_emu_test_run_us(uint32_t us) {
  pthread_mutex_lock(&g_test.lock);
  g_test.run_us = us;
  pthread_mutex_unlock(&g_test.lock);
}

void drpai_emu_test_rw_hold_us(uint32_t us) { atomic_store(&g_test.rw_hold_us, us); }

void* drpai_emu_test_phys(uint64_t addr, uint64_t size) {
  return drpai_emu_shm_get() ? phys_map(NULL, addr, size) : NULL;
}
