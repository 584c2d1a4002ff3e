/* Broken on purpose: a well-formed table whose init() fails with a message,
 * like a plugin whose device node or firmware is missing. */
#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  (void)i;
  fake_fill_info(out, "fakeinit");
  return AXLE_HAL_OK;
}

static int32_t failing_init(const axle_hal_host_t* host, axle_hal_plugin_state_t** out) {
  *out = NULL;
  return host->status_make(AXLE_HAL_DEVICE_ERROR,
                           "fake_init_fails: firmware image 'fake.bin' not found");
}

static axle_hal_plugin_t g_table = FAKE_TABLE("fake_init_fails", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  g_table.init = failing_init;
  return &g_table;
}
