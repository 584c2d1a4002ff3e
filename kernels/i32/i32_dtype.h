/* Template parameters for i32 kernels (see common/template_prelude.h). */
#define AXLE_T int32_t
#define AXLE_DT i32
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 1
#define AXLE_U uint32_t
#define AXLE_M(fn) fn
#define AXLE_ACC uint32_t
