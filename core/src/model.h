/* Model internals: an immutable, reference-counted graph. */
#ifndef AXLE_CORE_MODEL_H_
#define AXLE_CORE_MODEL_H_

#include "graph.h"

struct axle_model_t {
  int refcount;                      /* atomic */
  axle_graph_t graph;
};

void axle_model_retain(axle_model_t* model);
/* Fills info from graph tensor index t. */
void axle_tensor_info_fill(const axle_hal_tensor_t* t, axle_tensor_info_t* info);

#endif /* AXLE_CORE_MODEL_H_ */
