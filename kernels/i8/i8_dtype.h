/* Template parameters for i8 kernels (see common/template_prelude.h). */
#define AXLE_T int8_t
#define AXLE_DT i8
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 1
#define AXLE_U unsigned
#define AXLE_M(fn) fn
#define AXLE_ACC unsigned
