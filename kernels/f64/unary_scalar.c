/* f64 unary kernels, generated from common/unary_template.h. */
#include "f64_dtype.h"
#include "../common/unary_template.h"
