/* u64 binary kernels, generated from common/binary_template.h. */
#include "u64_dtype.h"
#include "../common/binary_template.h"
