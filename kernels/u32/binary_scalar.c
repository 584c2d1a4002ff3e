/* u32 binary kernels, generated from common/binary_template.h. */
#include "u32_dtype.h"
#include "../common/binary_template.h"
