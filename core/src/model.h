/* Model internals: an immutable, reference-counted graph. */
#ifndef AXLE_CORE_MODEL_H_
#define AXLE_CORE_MODEL_H_

#include "graph.h"

struct axle_model_t {
  int refcount;                      /* atomic */
  axle_graph_t graph;                /* empty for native artifacts */
  /* A plugin-native artifact (a .kmodel, an NVDLA loadable, a DRP-AI
   * object-file directory): kept as bytes until a session asks the devices'
   * artifact_load whether it is theirs. */
  int native;
  char* path;
  void* data;                        /* NULL for a directory */
  size_t size;
  char* onnx_error;                  /* why it is not ONNX, for messages */
};

void axle_model_retain(axle_model_t* model);
/* Fills info from graph tensor index t. */
void axle_tensor_info_fill(const axle_hal_tensor_t* t, axle_tensor_info_t* info);

#endif /* AXLE_CORE_MODEL_H_ */
