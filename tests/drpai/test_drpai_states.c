/*
 * State behaviour of the emulated DRP-AI driver: the device status
 * (INIT -> RUN -> IDLE), the per-descriptor read/write state machine,
 * readiness for select/pselect/poll with timeouts, RESET during inference,
 * the last close, two threads contending with the manual's ERESTART retry
 * loop (4.5.2) and exclusive execution, and the clock settings.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "drpai_emu.h"
#include "drpai_emu_test.h"
#include "drpai_fixture.h"
#include "drpai_uapi.h"

#define B (FX_AREA_BASE + 0x100000)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static drpai_emu_file_t* opn(void) {
  drpai_emu_file_t* f = NULL;
  CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&f), 0);
  return f;
}

static void test_status_transitions(void) {
  drpai_emu_file_t* f = opn();
  drpai_status_t st;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_INIT);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_SUCCESS);
  CU_ASSERT_TRUE(fx_readable(f, 0)); /* idle: readable */
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  drpai_emu_test_run_us(100000);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_FALSE(fx_readable(f, 0));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), -EBUSY);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_RUN); /* filled in although -1 */
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_IDLE);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_SUCCESS);
  /* An error is reported until the next START. */
  fx_trivial(f, B, 1, proc);
  drpai_emu_test_run_us(0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), -EIO);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_DRP_ERR);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), -EIO);
  fx_trivial(f, B, 0, proc);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  drpai_emu_close(f);
}

static void test_rw_state_machine(void) {
  drpai_emu_file_t* f = opn();
  uint8_t in[128], out[128];
  for (int i = 0; i < 128; ++i) in[i] = (uint8_t)(i * 7 + 1);
  drpai_data_t d = {B, 128};
  /* IDLE -> ASSIGN -> WRITE (partial) -> IDLE, the excess not written. */
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), 0);
  CU_ASSERT_EQUAL(drpai_emu_write(f, in, 100), 100);
  CU_ASSERT_EQUAL(drpai_emu_write(f, in + 100, 100), 28);
  CU_ASSERT_EQUAL(drpai_emu_write(f, in, 1), -EACCES);
  /* ASSIGN again before any transfer is allowed (it replaces the range). */
  drpai_data_t other = {B + 0x1000, 64};
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &other), 0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), 0);
  /* -> READ in pieces -> IDLE. */
  CU_ASSERT_EQUAL(drpai_emu_read(f, out, 64), 64);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), -EACCES); /* mid-transfer */
  CU_ASSERT_EQUAL(drpai_emu_read(f, out + 64, 64), 64);
  CU_ASSERT_EQUAL(memcmp(in, out, 128), 0);
  CU_ASSERT_EQUAL(drpai_emu_read(f, out, 1), -EACCES);
  /* A finished transfer releases the range for other descriptors. */
  drpai_emu_file_t* g = opn();
  CU_ASSERT_EQUAL(drpai_emu_ioctl(g, DRPAI_ASSIGN, &d), 0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), -EINVAL);
  drpai_emu_close(g);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), 0);
  /* ASSIGN_PARAM -> write of drp_param_info.txt in any chunks, lines split
   * across them -> IDLE; a malformed line is refused. */
  const char* info = "# test\nio:input,index:0,name:x,dtype:uint8,shape:4x4,addr:0x0,size:0x10\n"
                     "io:output,index:0,name:y,dtype:float32,shape:4,addr:0x40,size:0x10\n"
                     "op:0,lib:memcopy,offset:0x0,size:0x80,node:x";
  drpai_assign_param_t ap = {(uint32_t)strlen(info), {B, 128}};
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN_PARAM, &ap), 0);
  size_t n = strlen(info), at = 0;
  while (at < n) {
    size_t chunk = n - at < 7 ? n - at : 7;
    CU_ASSERT_EQUAL(drpai_emu_write(f, info + at, chunk), (ssize_t)chunk);
    at += chunk;
  }
  CU_ASSERT_EQUAL(drpai_emu_write(f, info, 1), -EACCES); /* complete: back to IDLE */
  const char* bad = "op:0,lib:no_such_lib,offset:0x0,size:0x80\n";
  ap.info_size = (uint32_t)strlen(bad);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_ASSIGN_PARAM, &ap), 0);
  CU_ASSERT_EQUAL(drpai_emu_write(f, bad, strlen(bad)), -EINVAL);
  drpai_emu_close(f);
}

static void test_select_timeout(void) {
  drpai_emu_file_t* f = opn();
  int fd = drpai_emu_pollfd(f);
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  drpai_emu_test_run_us(300000);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(fd, &rd);
  struct timeval tv = {0, 20000};
  double t0 = now_ms();
  CU_ASSERT_EQUAL(select(fd + 1, &rd, NULL, NULL, &tv), 0); /* timed out, still running */
  CU_ASSERT_TRUE(now_ms() - t0 >= 15.0);
  struct pollfd p = {fd, POLLIN, 0};
  CU_ASSERT_EQUAL(poll(&p, 1, 10), 0);
  FD_ZERO(&rd);
  FD_SET(fd, &rd);
  struct timespec ts = {5, 0};
  sigset_t mask;
  sigemptyset(&mask);
  CU_ASSERT_EQUAL(pselect(fd + 1, &rd, NULL, NULL, &ts, &mask), 1); /* completion */
  CU_ASSERT_TRUE(FD_ISSET(fd, &rd));
  drpai_status_t st;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  drpai_emu_test_run_us(0);
  drpai_emu_close(f);
}

typedef struct waiter_t {
  drpai_emu_file_t* f;
  int woke;
} waiter_t;

static void* wait_forever(void* arg) {
  waiter_t* w = (waiter_t*)arg;
  int fd = drpai_emu_pollfd(w->f);
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(fd, &rd);
  w->woke = select(fd + 1, &rd, NULL, NULL, NULL);
  return NULL;
}

static void test_reset_during_inference(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_file_t* other = opn(); /* a waiter on another descriptor wakes too */
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  drpai_emu_test_run_us(10000000);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  waiter_t w1 = {f, 0}, w2 = {other, 0};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, wait_forever, &w1);
  pthread_create(&t2, NULL, wait_forever, &w2);
  struct timespec pause = {0, 50000000};
  nanosleep(&pause, NULL);
  double t0 = now_ms();
  CU_ASSERT_EQUAL(drpai_emu_ioctl(other, DRPAI_RESET, NULL), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CU_ASSERT_EQUAL(w1.woke, 1);
  CU_ASSERT_EQUAL(w2.woke, 1);
  CU_ASSERT_TRUE(now_ms() - t0 < 1000.0);
  drpai_status_t st;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_IDLE);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_RESET);
  /* The object files survive a reset: the same program runs again. */
  drpai_emu_test_run_us(0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_SUCCESS);
  drpai_emu_close(f);
  drpai_emu_close(other);
}

static void test_last_close(void) {
  drpai_emu_file_t* a = opn();
  drpai_emu_file_t* b = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(a, B, 0, proc);
  drpai_emu_test_run_us(10000000);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(a, DRPAI_START, proc), 0);
  drpai_emu_close(a); /* not the last: the inference goes on */
  drpai_status_t st;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(b, DRPAI_GET_STATUS, &st), -EBUSY);
  double t0 = now_ms();
  drpai_emu_close(b); /* the last: stops it */
  CU_ASSERT_TRUE(now_ms() - t0 < 1000.0);
  drpai_emu_test_run_us(0);
  drpai_emu_file_t* c = opn();
  CU_ASSERT_EQUAL(drpai_emu_ioctl(c, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.status, DRPAI_STATUS_INIT); /* initialised afresh */
  drpai_emu_close(c);
}

/* ---- two threads, one device -------------------------------------------- */

#define CHUNK 512
#define BYTES (64 * 1024)

typedef struct worker_t {
  uint64_t base;
  uint8_t seed;
  atomic_int* restarts;
  int ok;
} worker_t;

/* Manual 4.5.2: call again while the answer is ERESTART. */
#define RETRY(call, rc)                                        \
  do {                                                         \
    rc = (call);                                               \
    while (rc == -ERESTART) {                                  \
      atomic_fetch_add(w->restarts, 1);                        \
      rc = (call);                                             \
    }                                                          \
  } while (0)

static void* transfer_worker(void* arg) {
  worker_t* w = (worker_t*)arg;
  drpai_emu_file_t* f = NULL;
  if (drpai_emu_open(&f) != 0) return NULL;
  static _Thread_local uint8_t buf[BYTES], back[BYTES];
  for (int i = 0; i < BYTES; ++i) buf[i] = (uint8_t)(i * 13 + w->seed);
  drpai_data_t d = {w->base, BYTES};
  long rc;
  RETRY(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), rc);
  int ok = rc == 0;
  for (int at = 0; ok && at < BYTES; at += CHUNK) {
    RETRY(drpai_emu_write(f, buf + at, CHUNK), rc);
    ok = rc == CHUNK;
  }
  RETRY(drpai_emu_ioctl(f, DRPAI_ASSIGN, &d), rc);
  ok = ok && rc == 0;
  for (int at = 0; ok && at < BYTES; at += CHUNK) {
    RETRY(drpai_emu_read(f, back + at, CHUNK), rc);
    ok = rc == CHUNK;
  }
  w->ok = ok && memcmp(buf, back, BYTES) == 0;
  drpai_emu_close(f);
  return NULL;
}

static void test_two_threads_restart(void) {
  drpai_emu_file_t* keep = opn(); /* keeps the device up between the threads' opens */
  atomic_int restarts = 0;
  drpai_emu_test_rw_hold_us(100);
  worker_t a = {B, 1, &restarts, 0}, b = {B + 0x100000, 2, &restarts, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, transfer_worker, &a);
  pthread_create(&tb, NULL, transfer_worker, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  drpai_emu_test_rw_hold_us(0);
  CU_ASSERT_TRUE(a.ok);
  CU_ASSERT_TRUE(b.ok);
  fprintf(stderr, "\n  %d ERESTART answers retried by two threads\n", atomic_load(&restarts));
  CU_ASSERT_TRUE(atomic_load(&restarts) > 0);
  drpai_emu_close(keep);
}

typedef struct runner_t {
  uint64_t base;
  int runs, busy, ok;
} runner_t;

/* One model per descriptor; inference is exclusive: START answers EBUSY
 * while the other's runs, and the thread waits for readability. */
static void* start_worker(void* arg) {
  runner_t* r = (runner_t*)arg;
  drpai_emu_file_t* f = NULL;
  if (drpai_emu_open(&f) != 0) return NULL;
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, r->base, 0, proc);
  int ok = 1;
  for (int i = 0; i < r->runs && ok; ++i) {
    int rc;
    while ((rc = drpai_emu_ioctl(f, DRPAI_START, proc)) == -EBUSY) {
      ++r->busy;
      fx_readable(f, 100);
    }
    ok = rc == 0 && fx_readable(f, 5000);
    drpai_status_t st;
    while ((rc = drpai_emu_ioctl(f, DRPAI_GET_STATUS, &st)) == -EBUSY) fx_readable(f, 100);
  }
  r->ok = ok;
  drpai_emu_close(f);
  return NULL;
}

static void test_exclusive_execution(void) {
  drpai_emu_file_t* keep = opn();
  drpai_emu_test_run_us(3000);
  runner_t a = {B, 20, 0, 0}, b = {B + 0x100000, 20, 0, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, start_worker, &a);
  pthread_create(&tb, NULL, start_worker, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  drpai_emu_test_run_us(0);
  CU_ASSERT_TRUE(a.ok && b.ok);
  fprintf(stderr, "\n  START answered EBUSY %d times while the other model ran\n", a.busy + b.busy);
  CU_ASSERT_TRUE(a.busy + b.busy > 0);
  drpai_emu_close(keep);
}

static void test_frequencies(void) {
  CU_ASSERT_EQUAL(drpai_drp_freq_khz(2), 420000u);
  CU_ASSERT_EQUAL(drpai_drp_freq_khz(3), 315000u);
  CU_ASSERT_EQUAL(drpai_drp_freq_khz(127), 9843u);
  CU_ASSERT_EQUAL(drpai_aimac_freq_khz(1), 1000000u);
  CU_ASSERT_EQUAL(drpai_aimac_freq_khz(2), 1000000u);
  CU_ASSERT_EQUAL(drpai_aimac_freq_khz(3), 630000u);
  CU_ASSERT_EQUAL(drpai_aimac_freq_khz(127), 10000u);
  drpai_emu_file_t* f = opn();
  uint32_t v;
  for (v = 2; v <= 127; v += 125) CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_SET_DRP_MAX_FREQ, &v), 0);
  for (v = 1; v <= 127; v += 126) CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_SET_DRPAI_FREQ, &v), 0);
  /* The DRP clock scales the modelled time of DRP work. */
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop(f, B, 64, 32, proc, &obj);
  drpai_run_stats_t fast, slow;
  v = 2;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_SET_DRP_MAX_FREQ, &v), 0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  drpai_emu_last_stats(&fast);
  v = 127;
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_SET_DRP_MAX_FREQ, &v), 0);
  CU_ASSERT_EQUAL(drpai_emu_ioctl(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  drpai_emu_last_stats(&slow);
  CU_ASSERT_EQUAL(fast.drp_stages, 2);
  CU_ASSERT_TRUE(fast.model_ns > 0);
  double ratio = (double)slow.model_ns / (double)fast.model_ns;
  CU_ASSERT_TRUE(ratio > 42.0 && ratio < 43.5); /* (127 + 1) / (2 + 1) */
  drpai_emu_close(f);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_states", NULL, NULL);
  CU_add_test(s, "status INIT -> RUN -> IDLE, errors until the next START", test_status_transitions);
  CU_add_test(s, "read/write state machine", test_rw_state_machine);
  CU_add_test(s, "select/poll timeout while running, pselect on completion", test_select_timeout);
  CU_add_test(s, "RESET during inference wakes every waiter", test_reset_during_inference);
  CU_add_test(s, "only the last close stops an inference", test_last_close);
  CU_add_test(s, "two threads: ERESTART retry loop", test_two_threads_restart);
  CU_add_test(s, "two models: exclusive execution", test_exclusive_execution);
  CU_add_test(s, "clock settings and their formulas", test_frequencies);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
