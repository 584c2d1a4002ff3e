/* Broken on purpose: a complete table whose header name is empty. */
#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  (void)i;
  fake_fill_info(out, "fakename");
  return AXLE_HAL_OK;
}

static axle_hal_plugin_t g_table = FAKE_TABLE("", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  return &g_table;
}
