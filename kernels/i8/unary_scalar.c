/* i8 unary kernels, generated from common/unary_template.h. */
#include "i8_dtype.h"
#include "../common/unary_template.h"
