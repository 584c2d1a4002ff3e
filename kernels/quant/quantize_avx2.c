/* QuantizeLinear to 8 bits with AVX2, 32 elements per step, DequantizeLinear
 * from 8 bits, and the dispatching entry points.
 *
 * Each step is the scalar variant's float operation as one vector
 * instruction with the same IEEE rounding: the division (not a multiply by
 * the reciprocal, whose rounding differs), vroundps in the current mode (as
 * nearbyintf; round half to even by default), the zero point's add, NaN to
 * the zero point, then the clamp. The clamped values are integers in the
 * 8-bit range, so the truncating conversion and the saturating packs are
 * exact. No multiply feeds an add here, so FMA contraction cannot change
 * the bits. The divider bounds the throughput; AVX-512's zmm division is no
 * faster per element on the target CPUs, so there is no AVX-512 variant.
 * The tail (n % 32) goes to the scalar variant. */
#include <immintrin.h>

#include "axle_kernels.h"
#include "axle_kernels_elementwise.h"

#define AXLE_AVX2 __attribute__((target("avx2,fma")))
#define AXLE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* Eight elements quantized and clamped to [lo, hi], as int32. */
AXLE_AVX2_INLINE __m256i quantize8(const float* x, __m256 scale, __m256 z, __m256 lo, __m256 hi) {
  const __m256 q = _mm256_div_ps(_mm256_loadu_ps(x), scale);
  __m256 v = _mm256_add_ps(_mm256_round_ps(q, _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC), z);
  v = _mm256_blendv_ps(v, z, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
}

/* The packs narrowing four int32 vectors to 32 bytes interleave their
 * 128-bit lanes; the permute restores the elements' order. */
#define AXLE_QUANTIZE_AVX2_(name, T, LO, HI, PACK8)                                               \
  AXLE_AVX2 void axle_f32_quantize_##name##__avx2(const float* x, float scale, int32_t zp,        \
                                                  void* vy, size_t n) {                           \
    T* y = vy;                                                                                    \
    const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps((float)zp);                        \
    const __m256 lo = _mm256_set1_ps((float)(LO)), hi = _mm256_set1_ps((float)(HI));              \
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);                              \
    size_t i = 0;                                                                                 \
    for (; i + 32 <= n; i += 32) {                                                                \
      const __m256i a =                                                                           \
          _mm256_packs_epi32(quantize8(x + i, s, z, lo, hi), quantize8(x + i + 8, s, z, lo, hi)); \
      const __m256i b = _mm256_packs_epi32(quantize8(x + i + 16, s, z, lo, hi),                   \
                                           quantize8(x + i + 24, s, z, lo, hi));                  \
      _mm256_storeu_si256((__m256i*)(y + i), _mm256_permutevar8x32_epi32(PACK8(a, b), order));    \
    }                                                                                             \
    axle_f32_quantize_##name##_scalar(x + i, scale, zp, y + i, n - i);                            \
  }                                                                                               \
  void axle_f32_quantize_##name(const float* x, float scale, int32_t zp, void* y, size_t n) {     \
    if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)                                                  \
      axle_f32_quantize_##name##__avx2(x, scale, zp, y, n);                                       \
    else                                                                                          \
      axle_f32_quantize_##name##_scalar(x, scale, zp, y, n);                                      \
  }
AXLE_QUANTIZE_AVX2_(u8, uint8_t, 0, 255, _mm256_packus_epi16)
AXLE_QUANTIZE_AVX2_(i8, int8_t, -128, 127, _mm256_packs_epi16)

/* DequantizeLinear from 8 bits, 8 elements per step: x - zp lies within
 * +-255 for an 8-bit zero point, so the int32 subtraction and its
 * conversion to float are exact, as the scalar variant's int64 ones are,
 * and the one multiply rounds alike: the same bits. The tail goes to the
 * scalar variant. */
#define AXLE_DEQUANTIZE_AVX2_(name, T, WIDEN)                                                    \
  AXLE_AVX2 void axle_##name##_dequantize_f32__avx2(const void* vx, float scale, int32_t zp,     \
                                                    float* y, size_t n) {                        \
    const T* x = vx;                                                                             \
    const __m256 s = _mm256_set1_ps(scale);                                                      \
    const __m256i z = _mm256_set1_epi32(zp);                                                     \
    size_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8) {                                                                 \
      const __m256i v = _mm256_sub_epi32(WIDEN(_mm_loadl_epi64((const __m128i*)(x + i))), z);    \
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(v), s));                          \
    }                                                                                            \
    axle_##name##_dequantize_f32_scalar(x + i, scale, zp, y + i, n - i);                         \
  }                                                                                              \
  void axle_##name##_dequantize_f32(const void* x, float scale, int32_t zp, float* y, size_t n) { \
    if (axle_kernels_isa() >= AXLE_ISA_AVX2_FMA)                                                 \
      axle_##name##_dequantize_f32__avx2(x, scale, zp, y, n);                                    \
    else                                                                                         \
      axle_##name##_dequantize_f32_scalar(x, scale, zp, y, n);                                   \
  }
AXLE_DEQUANTIZE_AVX2_(u8, uint8_t, _mm256_cvtepu8_epi32)
AXLE_DEQUANTIZE_AVX2_(i8, int8_t, _mm256_cvtepi8_epi32)
