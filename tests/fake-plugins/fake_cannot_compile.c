/* Broken on purpose: device "fakecomp" claims float32 Relu in the capability
 * query, then its compiler refuses it. The core must fall back to the CPU
 * (and say why in the placement report), or fail clearly in strict mode. */
#include "fake_common.h"

static int32_t info(axle_hal_plugin_state_t* s, uint32_t i, axle_hal_device_info_t* out) {
  (void)s;
  if (i != 0) return AXLE_HAL_NOT_FOUND;
  fake_fill_info(out, "fakecomp");
  return AXLE_HAL_OK;
}

static int32_t compile(axle_hal_device_t* d, const axle_hal_subgraph_t* sg,
                       const axle_hal_compile_options_t* o, axle_hal_executable_t** out) {
  (void)d;
  (void)o;
  *out = NULL;
  const char* node = sg->node_count ? sg->graph->nodes[sg->nodes[0]].name : "?";
  return g_fake_host->status_make(AXLE_HAL_UNSUPPORTED,
                                  "fakecomp: node '%s' (Relu): compiler ran out of tiles", node);
}

static axle_hal_plugin_t g_table = FAKE_TABLE("fake_cannot_compile", info);

FAKE_EXPORT const axle_hal_plugin_t* axle_hal_plugin_entry(uint32_t core, const axle_hal_host_t* host) {
  (void)core;
  (void)host;
  g_table.compile = compile;
  return &g_table;
}
