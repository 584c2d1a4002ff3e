/* i64 binary kernels, generated from common/binary_template.h. */
#include "i64_dtype.h"
#include "../common/binary_template.h"
