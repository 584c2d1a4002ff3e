#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "status.h"

void axle_placement_note(axle_session_t* s, uint32_t node, const char* fmt, ...) {
  char text[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  axle_node_placement_t* p = &s->placement[node];
  size_t old = p->reasons ? strlen(p->reasons) : 0;
  char* grown = (char*)realloc(p->reasons, old + strlen(text) + 3);
  if (!grown) return;
  if (old) memcpy(grown + old, "; ", 2), old += 2;
  strcpy(grown + old, text);
  p->reasons = grown;
}

/* Asks device dev about node; on refusal reason reads "DEVICE: why". */
static int32_t ask(axle_session_t* s, uint32_t dev, uint32_t node, char* reason, size_t size) {
  axle_device_t* d = s->devs[dev];
  char why[512] = "";
  int32_t st = d->plugin->table->node_supported(d->hal, &s->graph.hal, node, why, sizeof(why));
  why[sizeof(why) - 1] = '\0';
  if (st == AXLE_HAL_OK) return st;
  if (!why[0]) snprintf(why, sizeof(why), "%s", axle_status_string((axle_status_t)st));
  /* Plugins may already name their device; say it once. */
  size_t n = strlen(d->info.name);
  int named = strncmp(why, d->info.name, n) == 0 && why[n] == ':';
  snprintf(reason, size, "%s%s%s", named ? "" : d->info.name, named ? "" : ": ", why);
  return st;
}

axle_status_t axle_placement_run(axle_session_t* s, const uint32_t* prefs, uint32_t pref_count,
                                 int32_t cpu_dev, int32_t* node_dev) {
  char reason[512];
  char* unplaced = NULL;
  size_t unplaced_len = 0;
  uint32_t unplaced_count = 0;
  for (uint32_t k = 0; k < s->order_count; ++k) {
    uint32_t n = s->order[k];
    const axle_hal_node_t* node = &s->graph.nodes[n];
    node_dev[n] = -1;
    for (uint32_t i = 0; i < pref_count && node_dev[n] < 0; ++i) {
      if (ask(s, prefs[i], n, reason, sizeof(reason)) == AXLE_HAL_OK) {
        node_dev[n] = (int32_t)prefs[i];
        s->placement[n].state = "placed";
      } else {
        axle_placement_note(s, n, "%s", reason);
      }
    }
    if (node_dev[n] >= 0) continue;
    int cpu_tried = 0;
    for (uint32_t i = 0; i < pref_count; ++i) cpu_tried |= (int32_t)prefs[i] == cpu_dev;
    if (!(s->flags & AXLE_SESSION_STRICT) && cpu_dev >= 0 && !cpu_tried) {
      if (ask(s, (uint32_t)cpu_dev, n, reason, sizeof(reason)) == AXLE_HAL_OK) {
        node_dev[n] = cpu_dev;
        s->placement[n].state = "fallback";
        continue;
      }
      axle_placement_note(s, n, "%s", reason);
    }
    /* Collect every unplaced node so one error lists them all. */
    char line[900];
    int w = snprintf(line, sizeof(line), "%s  node '%s' (%s): %s", unplaced_count ? "\n" : "",
                     node->name, node->op_type,
                     s->placement[n].reasons ? s->placement[n].reasons : "no device");
    if (w > 0) {
      size_t len = (size_t)w < sizeof(line) ? (size_t)w : sizeof(line) - 1;
      char* g = (char*)realloc(unplaced, unplaced_len + len + 1);
      if (g) {
        memcpy(g + unplaced_len, line, len);
        unplaced_len += len;
        g[unplaced_len] = '\0';
        unplaced = g;
      }
    }
    ++unplaced_count;
  }
  if (unplaced_count) {
    axle_status_t st = axle_status_make(
        AXLE_STATUS_UNSUPPORTED, "%s: %u node%s cannot be placed%s:\n%s", s->graph.source,
        unplaced_count, unplaced_count == 1 ? "" : "s",
        (s->flags & AXLE_SESSION_STRICT) ? " (strict mode: no CPU fallback)" : "",
        unplaced ? unplaced : "");
    free(unplaced);
    return st;
  }
  return AXLE_OK;
}
