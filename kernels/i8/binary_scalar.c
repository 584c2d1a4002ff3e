/* i8 binary kernels, generated from common/binary_template.h. */
#include "i8_dtype.h"
#include "../common/binary_template.h"
