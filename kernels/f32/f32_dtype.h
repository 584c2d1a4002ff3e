/* Template parameters for f32 kernels (see common/template_prelude.h). */
#define AXLE_T float
#define AXLE_DT f32
#define AXLE_IS_FLOAT 1
#define AXLE_IS_SIGNED 1
#define AXLE_U uint32_t
#define AXLE_M(fn) fn##f
#define AXLE_ACC double
