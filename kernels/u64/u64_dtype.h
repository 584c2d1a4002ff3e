/* Template parameters for u64 kernels (see common/template_prelude.h). */
#define AXLE_T uint64_t
#define AXLE_DT u64
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 0
#define AXLE_U uint64_t
#define AXLE_M(fn) fn
#define AXLE_ACC uint64_t
