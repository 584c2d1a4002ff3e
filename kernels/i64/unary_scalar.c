/* i64 unary kernels, generated from common/unary_template.h. */
#include "i64_dtype.h"
#include "../common/unary_template.h"
