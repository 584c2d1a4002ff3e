/* u16 binary kernels, generated from common/binary_template.h. */
#include "u16_dtype.h"
#include "../common/binary_template.h"
