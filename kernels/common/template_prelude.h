/*
 * Shared prelude of the per-dtype kernel templates. A dtype's .c file defines
 *   AXLE_T         element type
 *   AXLE_DT        name token (f32, i64, ...)
 *   AXLE_IS_FLOAT  1 for floating types
 *   AXLE_IS_SIGNED 1 for signed integers
 *   AXLE_U         unsigned type integer math runs in: the type's own width, or
 *                  unsigned int for 8/16-bit types, whose promotion to int
 *                  could otherwise overflow (65535 * 65535)
 *   AXLE_M(fn)     libm function for the type (floats: expf vs exp)
 *   AXLE_ACC       accumulator type of sums
 * then includes one template. Templates generate the kernels once for every
 * dtype instead of hand-written copies per type.
 */
#ifndef AXLE_KERNELS_TEMPLATE_PRELUDE_H_
#define AXLE_KERNELS_TEMPLATE_PRELUDE_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "axle_kernels_elementwise.h"

#define AXLE_CAT3_(a, b, c) a##b##c
#define AXLE_CAT3(a, b, c) AXLE_CAT3_(a, b, c)
/* axle_<dtype>_<op>_scalar */
#define AXLE_KNAME(op) AXLE_CAT3(axle_, AXLE_DT, AXLE_CAT3(_, op, _scalar))

#endif
