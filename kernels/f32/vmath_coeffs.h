/* Internal to kernels/f32: the constants of the vector e^x and tanh that
 * every ISA variant evaluates (exp_avx2.h, exp_avx512.h, unary_avx2.c,
 * unary_avx512.c), so the variants cannot drift apart.
 *
 * e^x: x clamped to [EXP_LO, EXP_HI] (past them e^x is +inf, or 0 below
 * half the smallest subnormal), n = round(x log2(e)), r = x - n ln(2) with
 * ln(2) = LN2_HI + LN2_LO (LN2_HI has few significant bits, so n LN2_HI is
 * exact), e^r = 1 + r + r^2 (P2 + r (P3 + r (P4 + r (P5 + r P6)))): P
 * fitted here to e^r on [-ln(2)/2, ln(2)/2] by iterated weighted least
 * squares for relative error (3.6e-9, a sixteenth of a float's last bit;
 * Taylor's coefficients need degree 7 for as much).
 *
 * tanh: below TANH_SPLIT, t (1 + u (Q1 + u (Q2 + u (Q3 + u (Q4 + u Q5)))))
 * with u = t^2, fitted the same way to tanh on [0, 0.625] (relative error
 * 4.5e-9); from TANH_SPLIT on, 1 - 2 / (e^2t + 1). */
#ifndef AXLE_KERNELS_F32_VMATH_COEFFS_H_
#define AXLE_KERNELS_F32_VMATH_COEFFS_H_

#define AXLE_EXP_LO (-104.0f)
#define AXLE_EXP_HI 88.8f
#define AXLE_LOG2E 1.44269504088896341f
#define AXLE_LN2_HI 0.693145751953125f
#define AXLE_LN2_LO 1.428606765330187045e-6f
#define AXLE_EXP_P2 4.999998862e-01f
#define AXLE_EXP_P3 1.666651847e-01f
#define AXLE_EXP_P4 4.166952808e-02f
#define AXLE_EXP_P5 8.368915511e-03f
#define AXLE_EXP_P6 1.375169089e-03f

#define AXLE_TANH_SPLIT 0.625f
#define AXLE_TANH_Q1 (-3.333328129e-01f)
#define AXLE_TANH_Q2 1.333143189e-01f
#define AXLE_TANH_Q3 (-5.373916622e-02f)
#define AXLE_TANH_Q4 2.063788875e-02f
#define AXLE_TANH_Q5 (-5.704069387e-03f)

#endif /* AXLE_KERNELS_F32_VMATH_COEFFS_H_ */
