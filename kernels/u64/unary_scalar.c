/* u64 unary kernels, generated from common/unary_template.h. */
#include "u64_dtype.h"
#include "../common/unary_template.h"
