/* The board-side DRP-AI sequence over the device interface. */
#include "drpai_runner.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "drpai_uapi.h"

/* Manual 4.5.2: ERESTART means "try this system call again". */
static int ioctl_retry(drpai_dev_t* dev, unsigned long req, void* arg) {
  int rc;
  while ((rc = drpai_dev_ioctl(dev, req, arg)) == -ERESTART) sched_yield();
  return rc;
}

static int write_all(drpai_dev_t* dev, const uint8_t* p, size_t n) {
  while (n) {
    ssize_t w = drpai_dev_write(dev, p, n);
    if (w == -ERESTART) {
      sched_yield();
      continue;
    }
    if (w <= 0) return w < 0 ? (int)w : -EIO;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(drpai_dev_t* dev, uint8_t* p, size_t n) {
  while (n) {
    ssize_t r = drpai_dev_read(dev, p, n);
    if (r == -ERESTART) {
      sched_yield();
      continue;
    }
    if (r <= 0) return r < 0 ? (int)r : -EIO;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int fail(int rc, char* err, size_t es, const char* what) {
  snprintf(err, es, "%s failed: %s (errno %d)", what, strerror(-rc), -rc);
  return rc;
}

int drpai_runner_place(drpai_dev_t* dev, const drpai_program_t* p, uint64_t phys, char* err,
                       size_t es) {
  drpai_adrconv_t conv;
  memset(&conv, 0, sizeof(conv));
  conv.org_address = p->org_base;
  conv.size = (p->total + DRPAI_ALIGN - 1) & ~(DRPAI_ALIGN - 1);
  conv.conv_address = phys;
  conv.mode = DRPAI_ADRCONV_MODE_REPLACE;
  int rc = ioctl_retry(dev, DRPAI_SET_ADRCONV, &conv);
  if (rc) return fail(rc, err, es, "SET_ADRCONV");

  const drpai_region_t* pr = &p->region[DRPAI_REGION_DRP_PARAM];
  const drpai_blob_t* info = &p->file[DRPAI_FILE_DRP_PARAM_INFO];
  drpai_assign_param_t ap;
  memset(&ap, 0, sizeof(ap));
  ap.info_size = info->size;
  ap.obj.address = drpai_runner_phys(p, phys, pr->addr);
  ap.obj.size = pr->size;
  rc = ioctl_retry(dev, DRPAI_ASSIGN_PARAM, &ap);
  if (rc) return fail(rc, err, es, "ASSIGN_PARAM");
  rc = write_all(dev, info->data, info->size);
  if (rc) return fail(rc, err, es, "write of drp_param_info.txt");

  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    int r = drpai_file_region(f);
    if (r < 0 || p->file[f].size == 0) continue;
    drpai_data_t d = {drpai_runner_phys(p, phys, p->region[r].addr), p->file[f].size};
    rc = ioctl_retry(dev, DRPAI_ASSIGN, &d);
    if (rc) return fail(rc, err, es, drpai_file_names[f]);
    rc = write_all(dev, p->file[f].data, p->file[f].size);
    if (rc) return fail(rc, err, es, drpai_file_names[f]);
  }
  return 0;
}

/* Waits until the descriptor is readable (no inference running); non-zero
 * when stop() asked first. */
static int wait_idle(drpai_dev_t* dev, drpai_stop_fn stop, void* ctx) {
  struct pollfd pfd = {drpai_dev_pollfd(dev), POLLIN, 0};
  for (;;) {
    if (stop && stop(ctx)) return 1;
    int n = poll(&pfd, 1, 2);
    if (n > 0) return 0;
  }
}

int drpai_runner_run(drpai_dev_t* dev, const drpai_program_t* p, uint64_t phys,
                     const void* const* inputs, void* const* outputs, drpai_stop_fn stop,
                     void* stop_ctx, int32_t* dev_err, char* err, size_t es) {
  *dev_err = DRPAI_ERRINFO_SUCCESS;
  int rc;
  for (uint32_t i = 0; i < drpai_program_io_count(p, 0); ++i) {
    const drpai_info_io_t* io = drpai_program_io(p, 0, i);
    drpai_data_t d = {drpai_runner_phys(p, phys, io->addr), io->size};
    rc = ioctl_retry(dev, DRPAI_ASSIGN, &d);
    if (rc == 0) rc = write_all(dev, (const uint8_t*)inputs[i], io->size);
    if (rc) return fail(rc, err, es, "writing an input");
  }
  static const int kRegionOf[DRPAI_INDEX_NUM] = {
      DRPAI_REGION_DATA_IN,    DRPAI_REGION_DRP_DESC,  DRPAI_REGION_DRP_CONFIG,
      DRPAI_REGION_DRP_PARAM,  DRPAI_REGION_AIMAC_DESC, DRPAI_REGION_WEIGHT,
      DRPAI_REGION_DATA_OUT,   DRPAI_REGION_AIMAC_CMD, DRPAI_REGION_AIMAC_PARAM_DESC,
      DRPAI_REGION_AIMAC_PARAM_CMD};
  drpai_data_t proc[DRPAI_INDEX_NUM];
  for (int i = 0; i < DRPAI_INDEX_NUM; ++i) {
    proc[i].address = drpai_runner_phys(p, phys, p->region[kRegionOf[i]].addr);
    proc[i].size = p->region[kRegionOf[i]].size;
  }
  /* Inference is exclusive: while another descriptor's runs, wait for the
   * device to become idle and try again. */
  while ((rc = ioctl_retry(dev, DRPAI_START, proc)) == -EBUSY)
    if (wait_idle(dev, stop, stop_ctx)) return -ECANCELED;
  if (rc) return fail(rc, err, es, "START");
  drpai_status_t st;
  for (;;) {
    if (wait_idle(dev, stop, stop_ctx)) {
      ioctl_retry(dev, DRPAI_RESET, NULL);
      return -ECANCELED;
    }
    memset(&st, 0, sizeof(st));
    rc = ioctl_retry(dev, DRPAI_GET_STATUS, &st);
    if (rc != -EBUSY) break;
  }
  if (rc == -EIO || (rc == 0 && st.err != DRPAI_ERRINFO_SUCCESS)) {
    *dev_err = st.err;
    snprintf(err, es, "the device reported error %d (%s)", (int)st.err,
             st.err == DRPAI_ERRINFO_DRP_ERR     ? "DRP error"
             : st.err == DRPAI_ERRINFO_AIMAC_ERR ? "AI-MAC error"
             : st.err == DRPAI_ERRINFO_RESET     ? "reset during inference"
                                                 : "unknown");
    return -EIO;
  }
  if (rc) return fail(rc, err, es, "GET_STATUS");
  for (uint32_t i = 0; i < drpai_program_io_count(p, 1); ++i) {
    const drpai_info_io_t* io = drpai_program_io(p, 1, i);
    drpai_data_t d = {drpai_runner_phys(p, phys, io->addr), io->size};
    rc = ioctl_retry(dev, DRPAI_ASSIGN, &d);
    if (rc == 0) rc = read_all(dev, (uint8_t*)outputs[i], io->size);
    if (rc) return fail(rc, err, es, "reading an output");
  }
  return 0;
}
