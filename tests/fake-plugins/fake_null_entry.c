/* Broken on purpose: the entry point returns NULL and says nothing, so the
 * core has to produce the whole message itself. */
#include "fake_common.h"

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  return NULL;
}
