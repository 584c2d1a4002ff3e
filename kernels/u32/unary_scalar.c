/* u32 unary kernels, generated from common/unary_template.h. */
#include "u32_dtype.h"
#include "../common/unary_template.h"
