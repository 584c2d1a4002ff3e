/* u64 reduce kernels, generated from common/reduce_template.h. */
#include "u64_dtype.h"
#include "../common/reduce_template.h"
