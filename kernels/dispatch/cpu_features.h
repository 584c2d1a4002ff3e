/* What this CPU can run, for the dispatch files that measure or choose
 * beside axle_kernels_isa (which caps it by AXLE_KERNELS_ISA). */
#ifndef AXLE_KERNELS_DISPATCH_CPU_FEATURES_H_
#define AXLE_KERNELS_DISPATCH_CPU_FEATURES_H_

#include "axle_kernels.h"

/* Whether this CPU and its OS can run the kernels of level isa, whatever
 * the cap (isa.c). Thread-safe. */
int axle_kernels_cpu_has(axle_isa_t isa);

#endif /* AXLE_KERNELS_DISPATCH_CPU_FEATURES_H_ */
