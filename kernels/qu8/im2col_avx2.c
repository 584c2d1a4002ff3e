/* The stride-2 byte gather of the quantized im2col with AVX2: the even
 * bytes of 64 input bytes are the low halves of their 16-bit lanes, so a
 * mask and a saturation-free pack (values <= 255) collect 32 of them;
 * the pack works per 128-bit lane, and one qword permute restores the
 * order. */
#include "axle_kernels_qu8.h"
#include "requant_avx2.h"

AXLE_AVX2 void axle_qu8_gather_stride2__avx2(uint8_t* dst, const uint8_t* src, size_t count) {
  const __m256i low = _mm256_set1_epi16(0x00FF);
  size_t i = 0;
  /* A block reads src[2 i .. 2 i + 63]; the last byte the gather needs is
   * src[2 count - 2], so a block runs only while that stays inside. */
  for (; i + 32 < count; i += 32) {
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(src + 2 * i)), low);
    const __m256i b =
        _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(src + 2 * i + 32)), low);
    _mm256_storeu_si256((__m256i*)(dst + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8));
  }
  for (; i + 16 < count; i += 16) {
    const __m128i l = _mm256_castsi256_si128(low);
    const __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i*)(src + 2 * i)), l);
    const __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i*)(src + 2 * i + 16)), l);
    _mm_storeu_si128((__m128i*)(dst + i), _mm_packus_epi16(a, b));
  }
  for (; i < count; ++i) dst[i] = src[2 * i];
}
