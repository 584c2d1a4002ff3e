/*
 * The emulated DRP-AI device shared between processes, as /dev/drpai0 is:
 * exclusive execution, GET_STATUS and readiness seen from another process,
 * RESET in one process waking a waiter in another, overlapping ASSIGN
 * refused across processes, the ERESTART retry loop (manual 4.5.2) against
 * another process, and a process killed mid-inference, while holding files
 * and the read/write permission, or holding the device's internal lock, not
 * wedging the device.
 *
 * Every child is forked and reports through a pipe; the parent orders the
 * steps by waiting for those reports, never by sleeping. A child's result is
 * its exit status: 0, or the number of the step that went wrong.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drpai_emu_test.h"
#include "drpai_fixture.h"

#define B (FX_AREA_BASE + 0x100000)   /* the parent's program */
#define B2 (FX_AREA_BASE + 0x2100000) /* the child's */
#define LONG_RUN_US 60000000u         /* "runs until stopped" */
#define WAIT_MS 30000                 /* generous: only a broken device waits this long */

/* g_up: child -> parent, g_down: parent -> child. */
static int g_up[2], g_down[2];

static void say(int fd) {
  char c = '.';
  if (write(fd, &c, 1) != 1) _exit(100);
}

static int hear(int fd) {
  char c;
  return read(fd, &c, 1) == 1;
}

/* Forks body(); the parent gets the child's pid. */
static pid_t spawn(int (*body)(void)) {
  if (pipe(g_up) != 0 || pipe(g_down) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(g_up[0]);
    close(g_down[1]);
    _exit(body());
  }
  close(g_up[1]);
  close(g_down[0]);
  return pid;
}

/* The child's exit status (128 + signal when killed). */
static int reap(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  close(g_up[0]);
  close(g_down[1]);
  if (!WIFEXITED(status)) return 128 + WTERMSIG(status);
  /* Which step of the child went wrong, for the log. */
  if (WEXITSTATUS(status)) fprintf(stderr, "\n  child %d failed at step %d", (int)pid, WEXITSTATUS(status));
  return WEXITSTATUS(status);
}

/* A trivial program of this process runs to completion with success: 0, or
 * which step failed (1 START, 2 the wait, 3 the status). */
static int run_to_end(drpai_emu_file_t* f, uint64_t base) {
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, base, 0, proc);
  if (fx_ioctl_retry(f, DRPAI_START, proc) != 0) return 1;
  if (!fx_readable(f, WAIT_MS)) return 2;
  drpai_status_t st;
  if (fx_ioctl_retry(f, DRPAI_GET_STATUS, &st) != 0 || st.err != DRPAI_ERRINFO_SUCCESS) return 3;
  return 0;
}

/* ---- exclusive execution, status and RESET across processes -------------- */

/* Sees the parent's run, waits for it like a board program, starts its own
 * once RESET ended the parent's. */
static int child_contends(void) {
  drpai_emu_file_t* f;
  if (drpai_emu_open(&f) != 0) return 1;
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B2, 0, proc);
  if (!hear(g_down[0])) return 2; /* the parent's inference runs */
  if (fx_ioctl_retry(f, DRPAI_START, proc) != -EBUSY) return 3;
  drpai_status_t st;
  memset(&st, 0, sizeof(st));
  if (fx_ioctl_retry(f, DRPAI_GET_STATUS, &st) != -EBUSY || st.status != DRPAI_STATUS_RUN) return 4;
  if (fx_readable(f, 0)) return 5;
  say(g_up[1]);
  /* The parent's RESET is what makes this descriptor readable. */
  if (!fx_readable(f, WAIT_MS)) return 6;
  if (fx_ioctl_retry(f, DRPAI_GET_STATUS, &st) != 0 || st.err != DRPAI_ERRINFO_RESET) return 7;
  int step = run_to_end(f, B2);
  if (step) return 10 + step;
  drpai_emu_close(f);
  return 0;
}

static void test_exclusive_status_reset(void) {
  drpai_emu_file_t* f;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  pid_t child = spawn(child_contends);
  CU_ASSERT_FATAL(child > 0);
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  drpai_emu_test_run_us(LONG_RUN_US);
  CU_ASSERT_EQUAL(fx_ioctl_retry(f, DRPAI_START, proc), 0);
  say(g_down[1]);
  CU_ASSERT_TRUE(hear(g_up[0])); /* the child saw EBUSY and waits */
  CU_ASSERT_EQUAL(fx_ioctl_retry(f, DRPAI_RESET, NULL), 0);
  CU_ASSERT_EQUAL(reap(child), 0);
  drpai_emu_test_run_us(0);
  /* The child's inference was the last one. */
  drpai_status_t st;
  CU_ASSERT_EQUAL(fx_ioctl_retry(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_SUCCESS);
  drpai_emu_close(f);
}

/* ---- ASSIGN overlap and the ERESTART retry loop ------------------------------ */

static int child_assigns(void) {
  drpai_emu_file_t* f;
  if (drpai_emu_open(&f) != 0) return 1;
  if (!hear(g_down[0])) return 2; /* the parent's transfer is pending */
  drpai_data_t over = {B + 0x40, 0x100}, beside = {B + 0x1000, 0x100};
  if (drpai_emu_ioctl(f, DRPAI_ASSIGN, &over) != -EINVAL) return 3;
  if (drpai_emu_ioctl(f, DRPAI_ASSIGN, &beside) != 0) return 4;
  say(g_up[1]);
  if (!hear(g_down[0])) return 5; /* the parent holds the read/write permission */
  if (drpai_emu_ioctl(f, DRPAI_ASSIGN, &beside) != -ERESTART) return 6;
  static const uint8_t data[0x100];
  if (drpai_emu_write(f, data, sizeof(data)) != -ERESTART) return 7;
  say(g_up[1]);
  /* Manual 4.5.2: try again until the other process lets go. */
  if (fx_ioctl_retry(f, DRPAI_ASSIGN, &beside) != 0) return 8;
  ssize_t w;
  while ((w = drpai_emu_write(f, data, sizeof(data))) == -ERESTART) {
  }
  if (w != (ssize_t)sizeof(data)) return 9;
  drpai_emu_close(f);
  return 0;
}

static void test_assign_overlap_restart(void) {
  drpai_emu_file_t* f;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  pid_t child = spawn(child_assigns);
  CU_ASSERT_FATAL(child > 0);
  drpai_data_t mine = {B, 0x1000};
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &mine), 0);
  say(g_down[1]);
  CU_ASSERT_TRUE(hear(g_up[0]));
  drpai_emu_test_hold_rw(1);
  say(g_down[1]);
  CU_ASSERT_TRUE(hear(g_up[0])); /* the child got ERESTART and retries */
  drpai_emu_test_hold_rw(0);
  CU_ASSERT_EQUAL(reap(child), 0);
  drpai_emu_close(f);
}

/* ---- a process that dies -------------------------------------------------------- */

/* Starts a long inference, places a pending transfer over the parent's
 * range and takes the read/write permission, then waits to be killed. */
static int child_dies(void) {
  drpai_emu_file_t* f;
  if (drpai_emu_open(&f) != 0) return 1;
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B2, 0, proc);
  drpai_emu_test_run_us(LONG_RUN_US);
  if (fx_ioctl_retry(f, DRPAI_START, proc) != 0) return 2;
  drpai_data_t pending = {B, 0x1000};
  if (fx_ioctl_retry(f, DRPAI_ASSIGN, &pending) != 0) return 3;
  drpai_emu_test_hold_rw(1);
  say(g_up[1]);
  hear(g_down[0]); /* never answered: SIGKILL comes first */
  return 4;
}

static void test_killed_child(void) {
  drpai_emu_file_t* f;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  pid_t child = spawn(child_dies);
  CU_ASSERT_FATAL(child > 0);
  CU_ASSERT_TRUE_FATAL(hear(g_up[0]));
  /* The child's inference, seen from here. */
  drpai_status_t st;
  memset(&st, 0, sizeof(st));
  CU_ASSERT_FALSE(fx_readable(f, 0));
  drpai_data_t over = {B, 0x40};
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &over), -ERESTART);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), -EBUSY);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_RUN);
  kill(child, SIGKILL);
  CU_ASSERT_EQUAL(reap(child), 128 + SIGKILL);
  /* A waiter wakes; the run ended as a reset would end it. */
  CU_ASSERT_TRUE(fx_readable(f, WAIT_MS));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_RESET);
  /* Its permission and its file are gone with it. */
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &over), 0);
  CU_ASSERT_EQUAL(run_to_end(f, B2), 0);
  drpai_emu_close(f);
}

/* Dies holding the device's lock. */
static int child_dies_locked(void) {
  drpai_emu_file_t* f;
  if (drpai_emu_open(&f) != 0) return 1;
  drpai_emu_test_hold_device_lock();
  say(g_up[1]);
  hear(g_down[0]); /* never answered */
  return 2;
}

static void test_killed_holding_lock(void) {
  drpai_emu_file_t* f;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  pid_t child = spawn(child_dies_locked);
  CU_ASSERT_FATAL(child > 0);
  CU_ASSERT_TRUE_FATAL(hear(g_up[0]));
  kill(child, SIGKILL);
  CU_ASSERT_EQUAL(reap(child), 128 + SIGKILL);
  /* The next call finds the lock's owner dead, takes it back and goes on. */
  drpai_status_t st;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(run_to_end(f, B), 0);
  drpai_emu_close(f);
}

/* ---- the device comes and goes with its processes --------------------------------- */

/* Opens the device, writes a pattern, and exits without closing. */
static int child_leaves(void) {
  drpai_emu_file_t* f;
  if (drpai_emu_open(&f) != 0) return 1;
  uint8_t data[64];
  memset(data, 0x5A, sizeof(data));
  if (fx_put(f, B2, data, sizeof(data)) != 0) return 2;
  say(g_up[1]);
  return hear(g_down[0]) ? 0 : 3;
}

static void test_shared_memory_contents(void) {
  drpai_emu_file_t* f;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  pid_t child = spawn(child_leaves);
  CU_ASSERT_FATAL(child > 0);
  CU_ASSERT_TRUE(hear(g_up[0]));
  /* What the child wrote is in the one device memory. */
  uint8_t got[64], want[64];
  memset(want, 0x5A, sizeof(want));
  CU_ASSERT_EQUAL(fx_get(f, B2, got, sizeof(got)), 0);
  CU_ASSERT_EQUAL(memcmp(got, want, sizeof(got)), 0);
  say(g_down[1]);
  CU_ASSERT_EQUAL(reap(child), 0);
  drpai_emu_close(f);
  /* The last process gone, so is the shared object (and its FIFO). */
  char prefix[256];
  snprintf(prefix, sizeof(prefix), "axle-drpai-%s.", getenv("AXLE_DRPAI_EMU_KEY"));
  DIR* dir = opendir("/dev/shm");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
  int left = 0;
  for (struct dirent* e; (e = readdir(dir));) left += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(dir);
  CU_ASSERT_EQUAL(left, 0);
}

int main(void) {
  /* A child killed while the parent waits on a pipe must not kill the
   * parent through a broken pipe. */
  signal(SIGPIPE, SIG_IGN);
  if (!getenv("AXLE_DRPAI_EMU_KEY")) return 1;
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_procs", NULL, NULL);
  CU_add_test(s, "exclusive execution, GET_STATUS and RESET across processes", test_exclusive_status_reset);
  CU_add_test(s, "overlapping ASSIGN and the ERESTART retry across processes", test_assign_overlap_restart);
  CU_add_test(s, "a child killed mid-inference holding files does not wedge the device", test_killed_child);
  CU_add_test(s, "a child killed holding the device's lock does not wedge it", test_killed_holding_lock);
  CU_add_test(s, "one memory for all processes; the object goes with the last", test_shared_memory_contents);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
