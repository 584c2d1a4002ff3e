/* u32 reduce kernels, generated from common/reduce_template.h. */
#include "u32_dtype.h"
#include "../common/reduce_template.h"
