/* i16 unary kernels, generated from common/unary_template.h. */
#include "i16_dtype.h"
#include "../common/unary_template.h"
