/* Broken on purpose: the table claims ABI 1 but its struct_size covers only
 * the header, init and shutdown, far short of the v1 required functions. */
#include <stddef.h>

#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  (void)i;
  fake_fill_info(out, "fakeshort");
  return AXLE_HAL_OK;
}

static axle_hal_plugin_t g_table = FAKE_TABLE("fake_short_struct", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  g_table.header.struct_size = (uint32_t)offsetof(axle_hal_plugin_t, device_count);
  return &g_table;
}
