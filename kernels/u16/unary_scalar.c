/* u16 unary kernels, generated from common/unary_template.h. */
#include "u16_dtype.h"
#include "../common/unary_template.h"
