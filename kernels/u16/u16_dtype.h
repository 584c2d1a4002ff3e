/* Template parameters for u16 kernels (see common/template_prelude.h). */
#define AXLE_T uint16_t
#define AXLE_DT u16
#define AXLE_IS_FLOAT 0
#define AXLE_IS_SIGNED 0
#define AXLE_U unsigned
#define AXLE_M(fn) fn
#define AXLE_ACC unsigned
