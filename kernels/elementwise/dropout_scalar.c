/*
 * Training-mode Dropout: y = x * mask / (1 - ratio), mask[i] = 1 with
 * probability 1 - ratio. ONNX leaves the random source to the runtime; this
 * one is splitmix64 over (seed, element index), so a run is reproducible for
 * a given seed and independent of how the work is split.
 */
#include "axle_kernels_elementwise.h"

static uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#define AXLE_DROPOUT_KERNEL_(dt, T)                                                       \
  void axle_##dt##_dropout_scalar(const void* vx, void* vy, uint8_t* mask, size_t n,     \
                                  double ratio, uint64_t seed) {                         \
    const T* x = vx;                                                                     \
    T* y = vy;                                                                           \
    /* keep when the top 53 random bits, as a fraction in [0, 1), reach ratio */          \
    const T scale = (T)(ratio < 1.0 ? 1.0 / (1.0 - ratio) : 0.0);                         \
    for (size_t i = 0; i < n; ++i) {                                                     \
      const double u = (double)(splitmix64(seed ^ (i * 0xd1b54a32d192ed03ull)) >> 11) *   \
                       0x1p-53;                                                          \
      const int keep = u >= ratio;                                                       \
      y[i] = keep ? x[i] * scale : (T)0;                                                 \
      if (mask) mask[i] = (uint8_t)keep;                                                 \
    }                                                                                    \
  }
AXLE_DROPOUT_KERNEL_(f32, float)
AXLE_DROPOUT_KERNEL_(f64, double)
