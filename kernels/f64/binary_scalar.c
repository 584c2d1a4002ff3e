/* f64 binary kernels, generated from common/binary_template.h. */
#include "f64_dtype.h"
#include "../common/binary_template.h"
