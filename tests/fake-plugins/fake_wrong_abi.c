/* Broken on purpose: answers ABI version 99, newer than any core speaks.
 * The core must refuse it, naming the file and the version. */
#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  (void)i;
  fake_fill_info(out, "fakeabi");
  return AXLE_HAL_OK;
}

static axle_hal_plugin_t g_table = FAKE_TABLE("fake_wrong_abi", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  g_table.header.abi_version = 99;
  return &g_table;
}
