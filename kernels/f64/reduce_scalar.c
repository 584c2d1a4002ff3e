/* f64 reduce kernels, generated from common/reduce_template.h. */
#include "f64_dtype.h"
#include "../common/reduce_template.h"
