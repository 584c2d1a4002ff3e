/* u8 binary kernels, generated from common/binary_template.h. */
#include "u8_dtype.h"
#include "../common/binary_template.h"
