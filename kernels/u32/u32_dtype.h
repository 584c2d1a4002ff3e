/* Template parameters for u32 kernels (see common/template_prelude.h). */
#define AXLE_T uint32_t
#define AXLE_DT u32
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 0
#define AXLE_U uint32_t
#define AXLE_M(fn) fn
#define AXLE_ACC uint32_t
