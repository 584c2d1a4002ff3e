/* i8 reduce kernels, generated from common/reduce_template.h. */
#include "i8_dtype.h"
#include "../common/reduce_template.h"
