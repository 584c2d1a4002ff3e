/* What a session tells about itself: I/O, placement report, stats, trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "status.h"
#include "strbuf.h"

uint32_t axle_session_input_count(const axle_session_t* s) { return s ? s->graph.input_count : 0; }
uint32_t axle_session_output_count(const axle_session_t* s) { return s ? s->graph.output_count : 0; }

static axle_status_t io_info(const axle_session_t* s, uint32_t index, axle_tensor_info_t* info,
                             int output) {
  if (!s || !info || info->struct_size < sizeof(uint32_t))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "session and info (with struct_size) are required");
  uint32_t count = output ? s->graph.output_count : s->graph.input_count;
  if (index >= count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s index %u out of range (%u)",
                            output ? "output" : "input", index, count);
  axle_tensor_info_fill(&s->graph.tensors[output ? s->graph.outputs[index] : s->graph.inputs[index]], info);
  return AXLE_OK;
}

axle_status_t axle_session_input_info(const axle_session_t* s, uint32_t index, axle_tensor_info_t* info) {
  return io_info(s, index, info, 0);
}

axle_status_t axle_session_output_info(const axle_session_t* s, uint32_t index, axle_tensor_info_t* info) {
  return io_info(s, index, info, 1);
}

axle_status_t axle_session_stats(const axle_session_t* s, axle_session_stats_t* stats) {
  if (!s || !stats || stats->struct_size < sizeof(uint32_t))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "session and stats (with struct_size) are required");
  axle_session_stats_t full = {sizeof(full), s->planned_peak_bytes, s->unplanned_bytes,
                               s->partition_count, s->order_count};
  uint32_t size = stats->struct_size < sizeof(full) ? stats->struct_size : sizeof(full);
  memcpy(stats, &full, size);
  stats->struct_size = size;
  return AXLE_OK;
}

/* The plugin's own account of partition i (malloc'd), or NULL. */
static char* partition_report(const axle_session_t* s, uint32_t i) {
  const axle_partition_t* p = &s->partitions[i];
  axle_device_t* d = s->devs[p->dev];
  if (!p->exe || !AXLE_PLUGIN_HAS(d->plugin, executable_report)) return NULL;
  /* The contract truncates silently, so a text that fills the buffer may
   * have been cut: ask again with twice the room, up to 16 MiB. */
  for (size_t size = 16384; size <= ((size_t)16 << 20); size *= 2) {
    char* text = (char*)calloc(1, size);
    if (!text) return NULL;
    if (d->plugin->table->executable_report(p->exe, text, size) != AXLE_HAL_OK || !text[0]) {
      free(text);
      return NULL;
    }
    text[size - 1] = '\0';
    if (strlen(text) + 2 < size || size == ((size_t)16 << 20)) return text;
    free(text);
  }
  return NULL;
}

axle_status_t axle_session_placement_report(const axle_session_t* s, int format, char** out_text) {
  if (out_text) *out_text = NULL;
  if (!s || !out_text) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "session and out_text are required");
  if (format != AXLE_REPORT_TEXT && format != AXLE_REPORT_JSON)
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "unknown report format %d", format);
  const axle_graph_t* g = &s->graph;
  axle_strbuf_t t = {NULL, 0, 0, 0};
  if (format == AXLE_REPORT_TEXT) {
    if (s->model->native)
      axle_strbuf_printf(&t, "native artifact %s: loaded whole by plugin '%s' on device '%s'\n", g->source,
          s->devs[s->partitions[0].dev]->plugin->name, s->devs[s->partitions[0].dev]->info.name);
    else
      axle_strbuf_printf(&t, "placement of %s: %u nodes, %u executed in %u partition%s\n", g->source,
          g->node_count, s->order_count, s->partition_count, s->partition_count == 1 ? "" : "s");
    for (uint32_t n = 0; n < g->node_count; ++n) {
      const axle_node_placement_t* p = &s->placement[n];
      const char* dev = p->dev >= 0 ? s->devs[p->dev]->info.name : "-";
      axle_strbuf_printf(&t, "  %-24s %-20s -> %-8s %s", g->nodes[n].name, g->nodes[n].op_type, dev,
          p->state ? p->state : "");
      if (p->reasons) axle_strbuf_printf(&t, " (%s)", p->reasons);
      axle_strbuf_printf(&t, "\n");
    }
    for (uint32_t i = 0; i < s->partition_count; ++i) {
      char* steps = partition_report(s, i);
      if (!steps) continue;
      axle_strbuf_printf(&t, "  partition %u on %s runs:\n", i,
                         s->devs[s->partitions[i].dev]->info.name);
      /* Indent the plugin's lines under the partition. */
      char* save = NULL;
      for (char* line = strtok_r(steps, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        axle_strbuf_printf(&t, "    %s\n", line);
      free(steps);
    }
    for (uint32_t d = 0; d < s->dev_count; ++d)
      if (s->arena_bytes[d])
        axle_strbuf_printf(&t, "  arena on %s: %llu bytes\n", s->devs[d]->info.name,
            (unsigned long long)s->arena_bytes[d]);
    axle_strbuf_printf(&t, "  planned peak: %llu bytes (without reuse: %llu)\n",
        (unsigned long long)s->planned_peak_bytes, (unsigned long long)s->unplanned_bytes);
  } else {
    axle_strbuf_printf(&t, "{\"model\":");
    axle_strbuf_json_string(&t, g->source);
    axle_strbuf_printf(&t, ",\"planned_peak_bytes\":%llu,\"unplanned_bytes\":%llu,\"nodes\":[",
        (unsigned long long)s->planned_peak_bytes, (unsigned long long)s->unplanned_bytes);
    for (uint32_t n = 0; n < g->node_count; ++n) {
      const axle_node_placement_t* p = &s->placement[n];
      axle_strbuf_printf(&t, "%s{\"name\":", n ? "," : "");
      axle_strbuf_json_string(&t, g->nodes[n].name);
      axle_strbuf_printf(&t, ",\"op\":");
      axle_strbuf_json_string(&t, g->nodes[n].op_type);
      axle_strbuf_printf(&t, ",\"device\":");
      if (p->dev >= 0)
        axle_strbuf_json_string(&t, s->devs[p->dev]->info.name);
      else
        axle_strbuf_printf(&t, "null");
      axle_strbuf_printf(&t, ",\"state\":");
      axle_strbuf_json_string(&t, p->state ? p->state : "");
      axle_strbuf_printf(&t, ",\"reasons\":");
      if (p->reasons)
        axle_strbuf_json_string(&t, p->reasons);
      else
        axle_strbuf_printf(&t, "null");
      axle_strbuf_printf(&t, "}");
    }
    axle_strbuf_printf(&t, "],\"partitions\":[");
    for (uint32_t i = 0; i < s->partition_count; ++i) {
      axle_strbuf_printf(&t, "%s{\"device\":", i ? "," : "");
      axle_strbuf_json_string(&t, s->devs[s->partitions[i].dev]->info.name);
      axle_strbuf_printf(&t, ",\"nodes\":%u,\"steps\":", s->partitions[i].node_count);
      char* steps = partition_report(s, i);
      if (steps)
        axle_strbuf_json_string(&t, steps);
      else
        axle_strbuf_printf(&t, "null");
      free(steps);
      axle_strbuf_printf(&t, "}");
    }
    axle_strbuf_printf(&t, "]}\n");
  }
  *out_text = axle_strbuf_finish(&t);
  return *out_text ? AXLE_OK : axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
}

axle_status_t axle_session_trace_json(axle_session_t* s, char** out_json) {
  if (out_json) *out_json = NULL;
  if (!s || !out_json) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "session and out_json are required");
  if (!(s->flags & AXLE_SESSION_PROFILE))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "%s: the session was created without AXLE_SESSION_PROFILE", s->graph.source);
  *out_json = axle_trace_to_json(&s->trace);
  return *out_json ? AXLE_OK : axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
}

axle_status_t axle_session_trace_write(axle_session_t* s, const char* path) {
  if (!path) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "path is NULL");
  char* json = NULL;
  axle_status_t st = axle_session_trace_json(s, &json);
  if (st != AXLE_OK) return st;
  FILE* f = fopen(path, "wb");
  if (!f) {
    free(json);
    return axle_status_make(AXLE_STATUS_IO_ERROR, "%s: cannot write trace", path);
  }
  size_t len = strlen(json);
  int ok = fwrite(json, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  free(json);
  return ok ? AXLE_OK : axle_status_make(AXLE_STATUS_IO_ERROR, "%s: write failed", path);
}

void axle_session_trace_clear(axle_session_t* s) {
  if (s) axle_trace_clear(&s->trace);
}
