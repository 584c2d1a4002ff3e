#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "status.h"

static axle_status_t model_from(const void* data, size_t size, const char* source,
                                axle_model_t** out) {
  axle_model_t* m = (axle_model_t*)calloc(1, sizeof(*m));
  if (!m) return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  m->refcount = 1;
  axle_graph_init(&m->graph);
  axle_status_t st = axle_onnx_load(data, size, source, &m->graph);
  if (st != AXLE_OK) {
    axle_graph_free(&m->graph);
    free(m);
    return st;
  }
  *out = m;
  return AXLE_OK;
}

static int has_suffix(const char* s, const char* suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Keeps a file (or directory) that is not ONNX as a native artifact. */
static axle_status_t model_native(const char* path, void* data, size_t size, axle_model_t** out) {
  axle_model_t* m = (axle_model_t*)calloc(1, sizeof(*m));
  char* why = strdup(axle_status_message());
  if (m) m->path = strdup(path);
  if (!m || !m->path || !why) {
    if (m) free(m->path);
    free(m);
    free(why);
    return axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  m->refcount = 1;
  axle_graph_init(&m->graph);
  m->graph.source = m->path;
  m->native = 1;
  m->data = data;
  m->size = size;
  m->onnx_error = why;
  axle_status_clear();
  *out = m;
  return AXLE_OK;
}

axle_status_t axle_model_load_file(const char* path, axle_model_t** out_model) {
  if (!out_model) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = NULL;
  if (!path) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "model path is NULL");
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    axle_status_make(AXLE_STATUS_INVALID_MODEL, "%s is a directory", path);
    return model_native(path, NULL, 0, out_model);
  }
  FILE* f = fopen(path, "rb");
  if (!f)
    return axle_status_make(errno == ENOENT ? AXLE_STATUS_NOT_FOUND : AXLE_STATUS_IO_ERROR,
                            "%s: cannot open: %s", path, strerror(errno));
  axle_status_t st = AXLE_OK;
  void* data = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
    st = axle_status_make(AXLE_STATUS_IO_ERROR, "%s: cannot determine file size", path);
  } else {
    data = malloc(size ? (size_t)size : 1);
    if (!data)
      st = axle_status_make(AXLE_STATUS_OUT_OF_MEMORY, "%s: out of memory (%ld bytes)", path, size);
    else if (fread(data, 1, (size_t)size, f) != (size_t)size)
      st = axle_status_make(AXLE_STATUS_IO_ERROR, "%s: read failed", path);
  }
  fclose(f);
  if (st == AXLE_OK) st = model_from(data, (size_t)size, path, out_model);
  /* A file named .onnx must be ONNX; anything else that does not parse may
   * be a plugin's native artifact, decided when a session is created. */
  if (st == AXLE_STATUS_INVALID_MODEL && !has_suffix(path, ".onnx"))
    return model_native(path, data, (size_t)size, out_model);
  free(data);
  return st;
}

axle_status_t axle_model_load_memory(const void* data, size_t size, axle_model_t** out_model) {
  if (!out_model) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = NULL;
  if (!data && size) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "model data is NULL");
  return model_from(data, size, "<memory>", out_model);
}

void axle_model_retain(axle_model_t* m) {
  if (m) __atomic_add_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
}

void axle_model_release(axle_model_t* m) {
  if (!m || __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  axle_graph_free(&m->graph);
  free(m->path);
  free(m->data);
  free(m->onnx_error);
  free(m);
}

void axle_tensor_info_fill(const axle_hal_tensor_t* t, axle_tensor_info_t* info) {
  axle_tensor_info_t full;
  memset(&full, 0, sizeof(full));
  full.struct_size = sizeof(full);
  full.name = t->name;
  full.dtype = (axle_dtype_t)t->dtype;
  full.rank = t->rank;
  memcpy(full.shape, t->shape, sizeof(full.shape));
  full.quant.count = t->quant.count;
  full.quant.axis = t->quant.axis;
  full.quant.scales = t->quant.scales;
  full.quant.zero_points = t->quant.zero_points;
  uint32_t size = info->struct_size < sizeof(full) ? info->struct_size : sizeof(full);
  memcpy(info, &full, size);
  info->struct_size = size;
}

static axle_status_t io_info(const axle_model_t* m, uint32_t index, axle_tensor_info_t* info,
                             const int32_t* list, uint32_t count, const char* what) {
  if (!m || !info || info->struct_size < sizeof(uint32_t))
    return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT,
                            "model and info (with struct_size) are required");
  if (index >= count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s: %s index %u out of range (%u)",
                            m->graph.source, what, index, count);
  axle_tensor_info_fill(&m->graph.tensors[list[index]], info);
  return AXLE_OK;
}

uint32_t axle_model_input_count(const axle_model_t* m) { return m ? m->graph.input_count : 0; }
uint32_t axle_model_output_count(const axle_model_t* m) { return m ? m->graph.output_count : 0; }

axle_status_t axle_model_input_info(const axle_model_t* m, uint32_t index,
                                    axle_tensor_info_t* info) {
  return io_info(m, index, info, m ? m->graph.inputs : NULL, m ? m->graph.input_count : 0, "input");
}

axle_status_t axle_model_output_info(const axle_model_t* m, uint32_t index,
                                     axle_tensor_info_t* info) {
  return io_info(m, index, info, m ? m->graph.outputs : NULL, m ? m->graph.output_count : 0,
                 "output");
}

uint32_t axle_model_node_count(const axle_model_t* m) { return m ? m->graph.node_count : 0; }

axle_status_t axle_model_node_info(const axle_model_t* m, uint32_t index, const char** out_name,
                                   const char** out_op_type) {
  if (out_name) *out_name = NULL;
  if (out_op_type) *out_op_type = NULL;
  if (!m) return axle_status_make(AXLE_STATUS_INVALID_ARGUMENT, "model is NULL");
  if (index >= m->graph.node_count)
    return axle_status_make(AXLE_STATUS_NOT_FOUND, "%s: node index %u out of range (%u)",
                            m->graph.source, index, m->graph.node_count);
  if (out_name) *out_name = m->graph.nodes[index].name;
  if (out_op_type) *out_op_type = m->graph.nodes[index].op_type;
  return AXLE_OK;
}

int64_t axle_model_opset(const axle_model_t* m) { return m ? m->graph.opset : 0; }
