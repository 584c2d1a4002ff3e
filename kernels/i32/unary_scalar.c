/* i32 unary kernels, generated from common/unary_template.h. */
#include "i32_dtype.h"
#include "../common/unary_template.h"
