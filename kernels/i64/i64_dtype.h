/* Template parameters for i64 kernels (see common/template_prelude.h). */
#define AXLE_T int64_t
#define AXLE_DT i64
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 1
#define AXLE_U uint64_t
#define AXLE_M(fn) fn
#define AXLE_ACC uint64_t
