/* Broken on purpose: device "fakefail" accepts float32 Relu and compiles it,
 * but every submit fails with DEVICE_ERROR and a message, as a device whose
 * command queue has hung would. */
#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  if (i != 0) return AXLE_HAL_NOT_FOUND;
  fake_fill_info(out, "fakefail");
  return AXLE_HAL_OK;
}

static int32_t submit(axle_hal_device_t* d, const axle_hal_submit_info_t* si) {
  (void)d;
  (void)si;
  return g_fake_host->status_make(AXLE_HAL_DEVICE_ERROR,
                                  "fakefail: command queue hung (simulated DMA timeout)");
}

static axle_hal_plugin_t g_table = FAKE_TABLE("fake_submit_fails", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  g_table.submit = submit;
  return &g_table;
}
