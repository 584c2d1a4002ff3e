/*
 * The emulated DRP-AI device as one object shared by every process of the
 * machine, as /dev/drpai0 is: its state and the contents of its emulated
 * physical memory live in a shared memory object, /dev/shm/axle-drpai-KEY.L
 * (KEY from AXLE_DRPAI_EMU_KEY, default "drpai0"; L the size of the layout
 * below in hex, so that builds with different layouts never meet), behind a
 * process-shared robust mutex. A named FIFO next to it, the same name +
 * ".ready", holds one byte exactly while no inference runs: every descriptor
 * select()/poll() watch is an open of it, so readiness changes in one
 * process are seen by the kernel in all of them at once.
 *
 * Life cycle: the first process to attach creates the object (configuration
 * from its environment, see drpai_emu.h), the last to detach removes it. A
 * process that dies while attached, while holding a file, a lock, or running
 * an inference, is found by its process id (drpai_emu_shm_reap) and its part
 * released; an object whose processes are all gone is recreated.
 *
 * Internal to the emulator (drpai_emu.c); not thread-safe unless stated. The
 * device lock (drpai_emu_shm_lock) protects everything in drpai_emu_shm_t
 * except rw and abort, which are atomics.
 */
#ifndef AXLE_DRPAI_EMU_SHM_H_
#define AXLE_DRPAI_EMU_SHM_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "drpai_adrconv.h"
#include "drpai_engine.h"
#include "drpai_uapi.h"

#define DRPAI_EMU_MAX_FILES 64    /* open files of the device, all processes */
#define DRPAI_EMU_MAX_HOLDERS 16  /* processes sharing one open file (fork) */
#define DRPAI_EMU_MAX_PROCS 64    /* processes attached at once */
#define DRPAI_EMU_MAX_AREAS 8     /* the DRP-AI area and AXLE_DRPAI_EMU_EXTRA ones */
#define DRPAI_EMU_MAX_RESERVED 64 /* drpai_emu_reserve ranges, all processes */
#define DRPAI_EMU_WATCH_MS 20     /* how often a waiting process checks the runner */

/* Per-open-file transfer state (the driver's read/write state machine). */
typedef enum drpai_rw_state_t {
  DRPAI_RW_IDLE,
  DRPAI_RW_ASSIGN,  /* ASSIGN done, nothing transferred yet */
  DRPAI_RW_WRITE,   /* streaming write in progress */
  DRPAI_RW_READ,    /* streaming read in progress */
  DRPAI_RW_PARAM    /* ASSIGN_PARAM done: write() takes drp_param_info.txt */
} drpai_rw_state_t;

/* One open file (struct file of the driver), shared by dup() and fork(). */
typedef struct drpai_shm_file_t {
  int used;
  pid_t holders[DRPAI_EMU_MAX_HOLDERS]; /* processes holding it; 0 = none */
  drpai_rw_state_t state;
  uint64_t addr, size, done;            /* the assigned range and progress */
  drpai_data_t param_obj;               /* ASSIGN_PARAM's drp_param.bin */
  uint32_t info_size, info_done;
  int info_ready;
  uint64_t info_gen;                    /* which import the parse belongs to */
  int inaddr;                           /* PREPOST_INADDR used: proc[INPUT] ignored */
  drpai_adrconv_table_t adrconv;
} drpai_shm_file_t;

typedef struct drpai_shm_area_t {
  uint64_t base, size;
  uint64_t offset;                      /* of its contents in the object */
} drpai_shm_area_t;

/* A range of the DRP-AI area a process reserved (drpai_emu_reserve). */
typedef struct drpai_shm_reserved_t {
  uint64_t base, size;
  pid_t owner;                          /* 0 = free */
} drpai_shm_reserved_t;

typedef struct drpai_emu_shm_t {
  uint64_t magic;                       /* set last, when the object is complete */
  uint64_t map_size;
  pthread_mutex_t lock;                 /* robust, process-shared */
  /* The condition waiters wait on: a futex word bumped by every broadcast.
   * (A process-shared pthread_cond_t is left unusable by a waiter that is
   * killed; a futex keeps no state about its waiters.) */
  _Atomic uint32_t wake_seq;
  _Atomic uint32_t waiters;             /* may overcount after a waiter died */
  drpai_shm_area_t areas[DRPAI_EMU_MAX_AREAS];
  uint32_t area_count;
  uint32_t timeout_ms, run_us;
  pid_t procs[DRPAI_EMU_MAX_PROCS];     /* attached processes; 0 = free */
  uint32_t users;                       /* files in use */
  drpai_shm_file_t files[DRPAI_EMU_MAX_FILES];
  drpai_shm_reserved_t reserved[DRPAI_EMU_MAX_RESERVED];
  /* run state */
  int started, running;
  int32_t err;
  uint32_t mindiv, divfix;
  int fifo_full;                        /* the readiness FIFO holds its byte */
  pid_t runner;                         /* process whose worker runs the job */
  int job_pending, worker_busy;
  drpai_job_t job;
  atomic_int abort;                     /* RESET / last close: stop the run */
  drpai_run_stats_t last_stats;
  /* the driver's locks, owned by a process */
  pid_t exclusive;
  _Atomic int32_t rw;
  _Atomic uint64_t info_gen;
} drpai_emu_shm_t;

/* This process's mapping of the device, or NULL when not attached. */
drpai_emu_shm_t* drpai_emu_shm_get(void);

/* Attaches this process (mapping, creating or recreating the object as
 * needed) and counts one more reference. When fd is given, *fd receives a new
 * descriptor on the readiness FIFO, owned by the caller (close it through
 * drpai_emu_shm_detach). worker is the body of this process's hardware
 * thread, started here if there is none. -EIO for an unusable configuration
 * or object, -ENOMEM, -EMFILE when DRPAI_EMU_MAX_PROCS processes are
 * attached. Thread-safe. */
int drpai_emu_shm_attach(int* fd, void* (*worker)(void*));
/* Closes fd (when >= 0) and drops a reference; the last one stops the
 * worker, unmaps, and removes the object when no other process is attached.
 * Thread-safe; never called with the device lock held. */
void drpai_emu_shm_detach(int fd);
/* Starts this process's hardware thread if it has none (after fork()). */
int drpai_emu_shm_worker_ensure(void* (*worker)(void*));

/* The device lock. A holder that died is recovered from (EOWNERDEAD): its
 * part is reaped and the readiness resynchronised before the lock returns. */
void drpai_emu_shm_lock(void);
void drpai_emu_shm_unlock(void);
/* Waits on the device's condition (lock held) until a broadcast or the
 * CLOCK_MONOTONIC time until (NULL: no limit); ETIMEDOUT or 0. */
int drpai_emu_shm_wait(const struct timespec* until);
void drpai_emu_shm_broadcast(void);

/* Whether process pid exists (0 counts as absent). */
int drpai_emu_shm_alive(pid_t pid);
/* Releases what dead processes, and gone if non-zero, held: attachments,
 * their holds on files (a file none holds is closed), their reserved ranges,
 * the two locks, and a run whose process is gone (it ends as if RESET: err -3). Lock held. */
void drpai_emu_shm_reap(pid_t gone);
/* Makes the readiness FIFO hold a byte exactly when no inference runs. Lock
 * held. */
void drpai_emu_shm_sync_ready(void);

/* A free file slot, held by this process: *slot. -ENOMEM when all
 * DRPAI_EMU_MAX_FILES are in use. Lock held. */
int drpai_emu_shm_file_new(uint32_t* slot);
/* This process's handle of slot closes; 1 when that closed the file (no
 * process holds it any more). Lock held. */
int drpai_emu_shm_file_release(uint32_t slot);

/* Host address of emulated physical memory [phys, phys + size) in any area,
 * or NULL. Valid while attached. */
uint8_t* drpai_emu_shm_host(uint64_t phys, uint64_t size);

#endif /* AXLE_DRPAI_EMU_SHM_H_ */
