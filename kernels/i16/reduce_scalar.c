/* i16 reduce kernels, generated from common/reduce_template.h. */
#include "i16_dtype.h"
#include "../common/reduce_template.h"
