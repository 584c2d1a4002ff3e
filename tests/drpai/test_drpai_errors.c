/*
 * Every error condition of the DRP-AI driver manual's error tables (section
 * 4.2, one row per condition the tables list), table-driven against the
 * emulated driver, plus the unknown-ioctl rule of DESIGN.md section 6.
 * Each case starts from a powered-down device and leaves it so.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "drpai_emu.h"
#include "drpai_emu_test.h"
#include "drpai_fixture.h"
#include "drpai_uapi.h"

#define B (FX_AREA_BASE + 0x100000)   /* a free spot in the area */
#define B2 (FX_AREA_BASE + 0x2100000) /* another one, for a second program */
#define MAX_OPEN 4

static drpai_emu_file_t* g_open[MAX_OPEN];
static uint8_t g_buf[256];

static drpai_emu_file_t* opn(void) {
  for (int i = 0; i < MAX_OPEN; ++i) {
    if (!g_open[i]) {
      CU_ASSERT_EQUAL_FATAL(drpai_emu_open(&g_open[i]), 0);
      return g_open[i];
    }
  }
  CU_FAIL_FATAL("too many descriptors");
  return NULL;
}

static void cleanup(void) {
  drpai_emu_test_hold_rw(0);
  drpai_emu_test_hold_exclusive(0);
  drpai_emu_test_fault(0);
  for (int i = 0; i < MAX_OPEN; ++i) {
    drpai_emu_close(g_open[i]);
    g_open[i] = NULL;
  }
  drpai_emu_test_run_us(0);
  drpai_emu_test_timeout_ms(0);
}

static int ioc(drpai_emu_file_t* f, unsigned long req, void* arg) { return drpai_emu_ioctl(f, req, arg); }

static int assign(drpai_emu_file_t* f, uint64_t addr, uint64_t size) {
  drpai_data_t d = {addr, size};
  return ioc(f, DRPAI_ASSIGN, &d);
}

/* Another descriptor with an inference that stays running. */
static void start_running(void) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B2, 0, proc);
  drpai_emu_test_run_us(5000000);
  CU_ASSERT_EQUAL_FATAL(ioc(f, DRPAI_START, proc), 0);
}

static void hold_exclusive(void) {
  drpai_emu_test_timeout_ms(30);
  drpai_emu_test_hold_exclusive(1);
}

/* ---- open ---------------------------------------------------------------- */
static int open_eio(void) {
  drpai_emu_test_fault(DRPAI_FAULT_HW_RESET);
  drpai_emu_file_t* f = NULL;
  int rc = drpai_emu_open(&f);
  drpai_emu_close(f);
  return rc;
}
static int open_enomem(void) {
  drpai_emu_test_fault(DRPAI_FAULT_NOMEM);
  drpai_emu_file_t* f = NULL;
  int rc = drpai_emu_open(&f);
  drpai_emu_close(f);
  return rc;
}
static int open_etimedout(void) {
  hold_exclusive();
  drpai_emu_file_t* f = NULL;
  int rc = drpai_emu_open(&f);
  drpai_emu_close(f);
  return rc;
}

/* ---- write ----------------------------------------------------------------- */
static int write_buf_null(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  return (int)drpai_emu_write(f, NULL, 64);
}
static int write_count_zero(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  return (int)drpai_emu_write(f, g_buf, 0);
}
static int write_no_buffer(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  drpai_emu_test_fault(DRPAI_FAULT_NOMEM);
  return (int)drpai_emu_write(f, g_buf, 64);
}
static int write_past_size(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  return (int)drpai_emu_write(f, g_buf, 1);
}
static int write_while_reading(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 128);
  CU_ASSERT_EQUAL(drpai_emu_read(f, g_buf, 64), 64);
  return (int)drpai_emu_write(f, g_buf, 64);
}
static int write_unassigned(void) { return (int)drpai_emu_write(opn(), g_buf, 64); }
static int write_restart(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  drpai_emu_test_hold_rw(1);
  return (int)drpai_emu_write(f, g_buf, 64);
}

/* ---- read ------------------------------------------------------------------- */
static int read_buf_null(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  return (int)drpai_emu_read(f, NULL, 64);
}
static int read_count_zero(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  return (int)drpai_emu_read(f, g_buf, 0);
}
static int read_no_buffer(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  drpai_emu_test_fault(DRPAI_FAULT_NOMEM);
  return (int)drpai_emu_read(f, g_buf, 64);
}
static int read_past_size(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  return (int)drpai_emu_read(f, g_buf, 128);
}
static int read_while_writing(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 128);
  CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  return (int)drpai_emu_read(f, g_buf, 64);
}
static int read_unassigned(void) { return (int)drpai_emu_read(opn(), g_buf, 64); }
static int read_restart(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 64);
  drpai_emu_test_hold_rw(1);
  return (int)drpai_emu_read(f, g_buf, 64);
}

/* ---- SET_ADRCONV ------------------------------------------------------------------ */
static int adrconv(drpai_emu_file_t* f, uint32_t org, uint32_t size, uint64_t conv, uint8_t mode) {
  drpai_adrconv_t a = {org, size, conv, mode};
  return ioc(f, DRPAI_SET_ADRCONV, &a);
}
static int adrconv_null(void) { return ioc(opn(), DRPAI_SET_ADRCONV, NULL); }
static int adrconv_conv_40bit(void) { return adrconv(opn(), 0, 0x1000000, 1ull << 40, DRPAI_ADRCONV_MODE_REPLACE); }
static int adrconv_low_bits(void) { return adrconv(opn(), 0x1000, 0x1000, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE); }
static int adrconv_size_zero(void) { return adrconv(opn(), 0, 0, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE); }
static int adrconv_overlap(void) {
  drpai_emu_file_t* f = opn();
  CU_ASSERT_EQUAL(adrconv(f, 0, 0x1000000, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE), 0);
  return adrconv(f, 0x800000, 0x1000, FX_AREA_BASE + 0x2800000, DRPAI_ADRCONV_MODE_ADD);
}
static int adrconv_internal(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  return adrconv(f, 0, 0x1000000, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE);
}
static int adrconv_timeout(void) {
  drpai_emu_file_t* f = opn();
  hold_exclusive();
  return adrconv(f, 0, 0x1000000, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE);
}
static int adrconv_busy(void) {
  drpai_emu_file_t* f = opn();
  start_running();
  return adrconv(f, 0, 0x1000000, FX_AREA_BASE, DRPAI_ADRCONV_MODE_REPLACE);
}

/* ---- ASSIGN ---------------------------------------------------------------------- */
static int assign_null(void) { return ioc(opn(), DRPAI_ASSIGN, NULL); }
static int assign_outside(void) { return assign(opn(), 0x1000, 64); }
static int assign_unaligned(void) { return assign(opn(), B + 8, 64); }
static int assign_size_zero(void) { return assign(opn(), B, 0); }
static int assign_taken(void) {
  drpai_emu_file_t* a = opn();
  drpai_emu_file_t* b = opn();
  CU_ASSERT_EQUAL(assign(a, B, 128), 0);
  return assign(b, B + 64, 64);
}
static int assign_incomplete(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 128);
  CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  return assign(f, B + 256, 64);
}
static int assign_internal(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  return assign(f, B, 64);
}
static int assign_restart(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_hold_rw(1);
  return assign(f, B, 64);
}

/* ---- START ---------------------------------------------------------------------------- */
static int start_with(int index, uint64_t address, int prepare) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  if (index >= 0) proc[index].address = address;
  if (prepare == 1) start_running();
  if (prepare == 2) drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  if (prepare == 3) hold_exclusive();
  if (prepare == 4) /* conversion on, but not over the program */
    CU_ASSERT_EQUAL(adrconv(f, 0, 0x1000000, FX_AREA_BASE + 0x8000000, DRPAI_ADRCONV_MODE_REPLACE), 0);
  return ioc(f, DRPAI_START, proc);
}
static int start_null(void) { return ioc(opn(), DRPAI_START, NULL); }
static int start_unaligned(void) { return start_with(DRPAI_INDEX_DRP_DESC, B + 0x48, 0); }
static int start_outside(void) { return start_with(DRPAI_INDEX_AIMAC_DESC, 0x1000, 0); }
static int start_busy(void) { return start_with(-1, 0, 1); }
static int start_internal(void) { return start_with(-1, 0, 2); }
static int start_timeout(void) { return start_with(-1, 0, 3); }
static int start_not_converted(void) { return start_with(-1, 0, 4); }

/* ---- RESET ------------------------------------------------------------------------------ */
static int reset_eio(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_HW_RESET);
  return ioc(f, DRPAI_RESET, NULL);
}
static int reset_timeout(void) {
  drpai_emu_file_t* f = opn();
  hold_exclusive();
  return ioc(f, DRPAI_RESET, NULL);
}

/* ---- GET_STATUS -------------------------------------------------------------------------- */
static drpai_status_t g_status;
static int status_null(void) { return ioc(opn(), DRPAI_GET_STATUS, NULL); }
static int status_busy(void) {
  drpai_emu_file_t* f = opn();
  start_running();
  return ioc(f, DRPAI_GET_STATUS, &g_status);
}
static int status_internal(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  return ioc(f, DRPAI_GET_STATUS, &g_status);
}
static int status_hw_error(void) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 1, proc);
  CU_ASSERT_EQUAL(ioc(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  int rc = ioc(f, DRPAI_GET_STATUS, &g_status);
  CU_ASSERT_EQUAL(g_status.err, DRPAI_ERRINFO_DRP_ERR);
  return rc;
}
static int status_timeout(void) {
  drpai_emu_file_t* f = opn();
  hold_exclusive();
  return ioc(f, DRPAI_GET_STATUS, &g_status);
}

/* ---- ASSIGN_PARAM ---------------------------------------------------------------------------- */
static int param(drpai_emu_file_t* f, uint32_t info, uint64_t addr, uint64_t size) {
  drpai_assign_param_t a = {info, {addr, size}};
  return ioc(f, DRPAI_ASSIGN_PARAM, &a);
}
static int param_null(void) { return ioc(opn(), DRPAI_ASSIGN_PARAM, NULL); }
static int param_zero(void) { return param(opn(), 0, 0, 0); }
static int param_incomplete(void) {
  drpai_emu_file_t* f = opn();
  assign(f, B, 128);
  CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  return param(f, 100, B + 0x1000, 256);
}
static int param_internal(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  return param(f, 100, B + 0x1000, 256);
}
static int param_restart(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_hold_rw(1);
  return param(f, 100, B + 0x1000, 256);
}

/* ---- PREPOST_CROP ------------------------------------------------------------------------------ */
static int crop_with(int prepare, uint16_t w) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop(f, B, 64, 32, proc, &obj);
  drpai_crop_t c = {w, 16, 0, 0, obj};
  if (prepare == 1) {
    assign(f, B + 0x100000, 128);
    CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  }
  if (prepare == 2) drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  if (prepare == 3) start_running();
  if (prepare == 4) drpai_emu_test_hold_rw(1);
  return ioc(f, DRPAI_PREPOST_CROP, &c);
}
static int crop_null(void) { return ioc(opn(), DRPAI_PREPOST_CROP, NULL); }
static int crop_invalid(void) { return crop_with(0, 0); }
static int crop_incomplete(void) { return crop_with(1, 16); }
static int crop_internal(void) { return crop_with(2, 16); }
static int crop_busy(void) { return crop_with(3, 16); }
static int crop_restart(void) { return crop_with(4, 16); }

/* ---- PREPOST_INADDR ------------------------------------------------------------------------------ */
static int inaddr_with(int prepare, const char* name, uint64_t data) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM], obj;
  fx_crop(f, B, 64, 32, proc, &obj);
  drpai_inout_t io;
  memset(&io, 0, sizeof(io));
  snprintf(io.name, sizeof(io.name), "%s", name);
  io.data.address = data;
  io.data.size = 64 * 32 * 2;
  io.obj = obj;
  if (prepare == 1) {
    assign(f, B + 0x100000, 128);
    CU_ASSERT_EQUAL(drpai_emu_write(f, g_buf, 64), 64);
  }
  if (prepare == 2) drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  if (prepare == 3) start_running();
  if (prepare == 4) drpai_emu_test_hold_rw(1);
  return ioc(f, DRPAI_PREPOST_INADDR, &io);
}
static int inaddr_invalid(void) { return inaddr_with(0, "no_such_input", B + 0x8000); }
static int inaddr_incomplete(void) { return inaddr_with(1, "camera_data", B + 0x8000); }
static int inaddr_internal(void) { return inaddr_with(2, "camera_data", B + 0x8000); }
static int inaddr_busy(void) { return inaddr_with(3, "camera_data", B + 0x8000); }
static int inaddr_restart(void) { return inaddr_with(4, "camera_data", B + 0x8000); }
/* fx_crop converts only the 16 MiB page holding B. */
static int inaddr_not_converted(void) { return inaddr_with(0, "camera_data", FX_AREA_BASE + 0x4000000); }

/* ---- GET_DRPAI_AREA -------------------------------------------------------------------------------- */
static drpai_data_t g_area;
static int area_null(void) { return ioc(opn(), DRPAI_GET_DRPAI_AREA, NULL); }
static int area_internal(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  return ioc(f, DRPAI_GET_DRPAI_AREA, &g_area);
}
static int area_restart(void) {
  drpai_emu_file_t* f = opn();
  drpai_emu_test_hold_rw(1);
  return ioc(f, DRPAI_GET_DRPAI_AREA, &g_area);
}
static int area_timeout(void) {
  drpai_emu_file_t* f = opn();
  hold_exclusive();
  return ioc(f, DRPAI_GET_DRPAI_AREA, &g_area);
}

/* ---- SET_DRP_MAX_FREQ / SET_DRPAI_FREQ -------------------------------------------------------------- */
static int freq(unsigned long req, uint32_t v, int prepare) {
  drpai_emu_file_t* f = opn();
  if (prepare == 1) drpai_emu_test_fault(DRPAI_FAULT_INTERNAL);
  if (prepare == 2) start_running();
  if (prepare == 3) hold_exclusive();
  return ioc(f, req, &v);
}
static int maxfreq_range(void) {
  int lo = freq(DRPAI_SET_DRP_MAX_FREQ, 1, 0);
  cleanup();
  int hi = freq(DRPAI_SET_DRP_MAX_FREQ, 128, 0);
  return lo == hi ? lo : 0;
}
static int maxfreq_internal(void) { return freq(DRPAI_SET_DRP_MAX_FREQ, 3, 1); }
static int maxfreq_busy(void) { return freq(DRPAI_SET_DRP_MAX_FREQ, 3, 2); }
static int maxfreq_timeout(void) { return freq(DRPAI_SET_DRP_MAX_FREQ, 3, 3); }
static int aifreq_range(void) {
  int lo = freq(DRPAI_SET_DRPAI_FREQ, 0, 0);
  cleanup();
  int hi = freq(DRPAI_SET_DRPAI_FREQ, 128, 0);
  return lo == hi ? lo : 0;
}
static int aifreq_internal(void) { return freq(DRPAI_SET_DRPAI_FREQ, 3, 1); }
static int aifreq_busy(void) { return freq(DRPAI_SET_DRPAI_FREQ, 3, 2); }
static int aifreq_timeout(void) { return freq(DRPAI_SET_DRPAI_FREQ, 3, 3); }

static int unknown_ioctl(void) { return ioc(opn(), 0x40042E3Fu, g_buf); }

typedef struct case_t {
  const char* call;
  const char* condition;
  int expect;
  int (*run)(void);
} case_t;

static const case_t kCases[] = {
    {"open", "H/W reset fails", EIO, open_eio},
    {"open", "internal memory allocation fails", ENOMEM, open_enomem},
    {"open", "exclusive control times out", ETIMEDOUT, open_etimedout},
    {"write", "buf is NULL", EFAULT, write_buf_null},
    {"write", "count is 0", EINVAL, write_count_zero},
    {"write", "driver buffer unavailable", ENOMEM, write_no_buffer},
    {"write", "more than the assigned size", EACCES, write_past_size},
    {"write", "while reading the assigned area", EACCES, write_while_reading},
    {"write", "no ASSIGN", EACCES, write_unassigned},
    {"write", "read/write permission busy", ERESTART, write_restart},
    {"read", "buf is NULL", EFAULT, read_buf_null},
    {"read", "count is 0", EINVAL, read_count_zero},
    {"read", "driver buffer unavailable", ENOMEM, read_no_buffer},
    {"read", "more than the assigned size", ENOMEM, read_past_size},
    {"read", "while writing the assigned area", EACCES, read_while_writing},
    {"read", "no ASSIGN", EACCES, read_unassigned},
    {"read", "read/write permission busy", ERESTART, read_restart},
    {"SET_ADRCONV", "adrconv is NULL", EINVAL, adrconv_null},
    {"SET_ADRCONV", "conv_address >= 0x100_0000_0000", EINVAL, adrconv_conv_40bit},
    {"SET_ADRCONV", "lower 24 bits of org and conv differ", EINVAL, adrconv_low_bits},
    {"SET_ADRCONV", "size is 0", EINVAL, adrconv_size_zero},
    {"SET_ADRCONV", "overlaps another setting", ENOMEM, adrconv_overlap},
    {"SET_ADRCONV", "internal error", EFAULT, adrconv_internal},
    {"SET_ADRCONV", "exclusive control times out", ETIMEDOUT, adrconv_timeout},
    {"SET_ADRCONV", "inference running", EBUSY, adrconv_busy},
    {"ASSIGN", "file is NULL", EINVAL, assign_null},
    {"ASSIGN", "address outside the DRP-AI area", EINVAL, assign_outside},
    {"ASSIGN", "address not 64-byte aligned", EINVAL, assign_unaligned},
    {"ASSIGN", "size is 0", EINVAL, assign_size_zero},
    {"ASSIGN", "area assigned by another descriptor", EINVAL, assign_taken},
    {"ASSIGN", "previous read/write not complete", EACCES, assign_incomplete},
    {"ASSIGN", "internal error", EFAULT, assign_internal},
    {"ASSIGN", "read/write permission busy", ERESTART, assign_restart},
    {"START", "proc is NULL", EINVAL, start_null},
    {"START", "an object address not 64-byte aligned", EINVAL, start_unaligned},
    {"START", "an object outside the DRP-AI area", EINVAL, start_outside},
    {"START", "inference running", EBUSY, start_busy},
    {"START", "internal error", EFAULT, start_internal},
    {"START", "exclusive control times out", ETIMEDOUT, start_timeout},
    {"START", "address not converted by SET_ADRCONV", ENOMEM, start_not_converted},
    {"RESET", "H/W reset fails", EIO, reset_eio},
    {"RESET", "exclusive control times out", ETIMEDOUT, reset_timeout},
    {"GET_STATUS", "drpai_status is NULL", EINVAL, status_null},
    {"GET_STATUS", "inference running", EBUSY, status_busy},
    {"GET_STATUS", "internal error", EFAULT, status_internal},
    {"GET_STATUS", "H/W (DRP) error", EIO, status_hw_error},
    {"GET_STATUS", "exclusive control times out", ETIMEDOUT, status_timeout},
    {"ASSIGN_PARAM", "assign_param is NULL", EINVAL, param_null},
    {"ASSIGN_PARAM", "members are 0", EINVAL, param_zero},
    {"ASSIGN_PARAM", "previous read/write not complete", EACCES, param_incomplete},
    {"ASSIGN_PARAM", "internal error", EFAULT, param_internal},
    {"ASSIGN_PARAM", "read/write permission busy", ERESTART, param_restart},
    {"PREPOST_CROP", "crop_param is NULL", EINVAL, crop_null},
    {"PREPOST_CROP", "crop_param invalid (width 0)", EINVAL, crop_invalid},
    {"PREPOST_CROP", "previous read/write not complete", EACCES, crop_incomplete},
    {"PREPOST_CROP", "internal error", EFAULT, crop_internal},
    {"PREPOST_CROP", "inference running", EBUSY, crop_busy},
    {"PREPOST_CROP", "read/write permission busy", ERESTART, crop_restart},
    {"PREPOST_INADDR", "invalid argument (unknown input name)", EINVAL, inaddr_invalid},
    {"PREPOST_INADDR", "previous read/write not complete", EACCES, inaddr_incomplete},
    {"PREPOST_INADDR", "internal error", EFAULT, inaddr_internal},
    {"PREPOST_INADDR", "inference running", EBUSY, inaddr_busy},
    {"PREPOST_INADDR", "read/write permission busy", ERESTART, inaddr_restart},
    {"PREPOST_INADDR", "address not converted by SET_ADRCONV", ENOMEM, inaddr_not_converted},
    {"GET_DRPAI_AREA", "drpai_data is NULL", EINVAL, area_null},
    {"GET_DRPAI_AREA", "internal error", EFAULT, area_internal},
    {"GET_DRPAI_AREA", "read/write permission busy", ERESTART, area_restart},
    {"GET_DRPAI_AREA", "exclusive control times out", ETIMEDOUT, area_timeout},
    {"SET_DRP_MAX_FREQ", "mindiv outside 2..127 (1 and 128)", EINVAL, maxfreq_range},
    {"SET_DRP_MAX_FREQ", "internal error", EFAULT, maxfreq_internal},
    {"SET_DRP_MAX_FREQ", "inference running", EBUSY, maxfreq_busy},
    {"SET_DRP_MAX_FREQ", "exclusive control times out", ETIMEDOUT, maxfreq_timeout},
    {"SET_DRPAI_FREQ", "divfix outside 1..127 (0 and 128)", EINVAL, aifreq_range},
    {"SET_DRPAI_FREQ", "internal error", EFAULT, aifreq_internal},
    {"SET_DRPAI_FREQ", "inference running", EBUSY, aifreq_busy},
    {"SET_DRPAI_FREQ", "exclusive control times out", ETIMEDOUT, aifreq_timeout},
    {"ioctl", "unknown request (DESIGN.md 6)", EFAULT, unknown_ioctl},
};
#define CASE_COUNT (sizeof(kCases) / sizeof(kCases[0]))

static void test_error_table(void) {
  unsigned failed = 0;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    const case_t* c = &kCases[i];
    int rc = c->run();
    cleanup();
    if (rc != -c->expect) {
      ++failed;
      fprintf(stderr, "\n  %s, %s: got %d (%s), want -%d (%s)", c->call, c->condition, rc,
              rc < 0 ? strerror(-rc) : "no error", c->expect, strerror(c->expect));
    }
  }
  fprintf(stderr, "\n  %zu error conditions checked, %u wrong\n", CASE_COUNT, failed);
  CU_ASSERT_EQUAL(failed, 0);
}

/* Nothing the table did may leave the device behind. */
static void test_clean_afterwards(void) {
  drpai_emu_file_t* f = opn();
  drpai_data_t proc[DRPAI_INDEX_NUM];
  fx_trivial(f, B, 0, proc);
  CU_ASSERT_EQUAL(ioc(f, DRPAI_START, proc), 0);
  CU_ASSERT_TRUE(fx_readable(f, 5000));
  drpai_status_t st;
  CU_ASSERT_EQUAL(ioc(f, DRPAI_GET_STATUS, &st), 0);
  CU_ASSERT_EQUAL(st.err, DRPAI_ERRINFO_SUCCESS);
  cleanup();
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("drpai_errors", NULL, NULL);
  CU_add_test(s, "every error condition of the manual's tables", test_error_table);
  CU_add_test(s, "device usable afterwards", test_clean_afterwards);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures ? 1 : 0;
}
