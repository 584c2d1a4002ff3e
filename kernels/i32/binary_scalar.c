/* i32 binary kernels, generated from common/binary_template.h. */
#include "i32_dtype.h"
#include "../common/binary_template.h"
