/* Template parameters for f64 kernels (see common/template_prelude.h). */
#define AXLE_T double
#define AXLE_DT f64
#define AXLE_IS_FLOAT 1
#define AXLE_IS_SIGNED 1
#define AXLE_U uint64_t
#define AXLE_M(fn) fn
#define AXLE_ACC double
