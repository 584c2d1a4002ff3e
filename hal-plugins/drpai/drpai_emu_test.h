/*
 * Test controls of the emulated DRP-AI driver: the conditions a test cannot
 * provoke through the driver interface alone (a hardware reset that fails,
 * an allocation failure inside the driver, another process holding the
 * device), so that every error number of the driver manual can be checked.
 * Per process (a fault fires in the process that armed it; the holds take
 * the device's locks in the caller's process); for tests only.
 */
#ifndef AXLE_DRPAI_EMU_TEST_H_
#define AXLE_DRPAI_EMU_TEST_H_

#include <stdint.h>

typedef enum drpai_emu_fault_t {
  DRPAI_FAULT_HW_RESET = 1,  /* the next hardware reset fails: open (first) and RESET give EIO */
  DRPAI_FAULT_NOMEM = 2,     /* the next driver-internal allocation fails: ENOMEM */
  DRPAI_FAULT_INTERNAL = 3   /* the next ioctl that can report an internal error gives EFAULT */
} drpai_emu_fault_t;

/* Arms a fault for its next occurrence (0 disarms every fault). */
void drpai_emu_test_fault(drpai_emu_fault_t fault);
/* Holds the read/write permission as another thread would (ERESTART for
 * everyone else) or releases it. */
void drpai_emu_test_hold_rw(int hold);
/* Holds exclusive control of the device (others time out with ETIMEDOUT)
 * or releases it. */
void drpai_emu_test_hold_exclusive(int hold);
/* Takes the device's internal lock and never gives it back: for a process
 * that is about to be killed, to check that the others recover the lock
 * (EOWNERDEAD) and the device. */
void drpai_emu_test_hold_device_lock(void);
/* Overrides AXLE_DRPAI_EMU_TIMEOUT_MS / AXLE_DRPAI_EMU_RUN_US (0 restores the
 * environment's value), and makes every read()/write() keep the read/write
 * permission for us microseconds, so that concurrent callers see ERESTART. */
void drpai_emu_test_timeout_ms(uint32_t ms);
void drpai_emu_test_run_us(uint32_t us);
void drpai_emu_test_rw_hold_us(uint32_t us);
/* Host view of emulated physical memory (what a board program gets from
 * mmap of a CMA buffer), or NULL; valid while a descriptor is open. */
void* drpai_emu_test_phys(uint64_t addr, uint64_t size);

#endif /* AXLE_DRPAI_EMU_TEST_H_ */
