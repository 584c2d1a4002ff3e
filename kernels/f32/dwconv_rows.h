/* Internal to the depthwise kernels: the tap schedule of the row-blocked
 * walk, shared by the AVX2 and AVX-512 variants (dwconv_avx2.c,
 * dwconv_avx512.c), which differ only in vector width and loads.
 *
 * Four output rows per pass: input row t (of the pass's (4 - 1) * s + 3)
 * feeds output row r with kernel row t - s * r, when that is 0..2. Output
 * r sums its bias and kernel rows 0-1 in a_r and kernel row 2 in b_r, so 8
 * FMA chains are in flight. The includer defines, before expanding:
 *   AXLE_IN(t)        loads input row t's tap vectors into the current row
 *                     value and is true, or is false when the row lies in
 *                     the padding (it then adds nothing)
 *   AXLE_TAPS(acc, k) acc += kernel row k times the current row's taps
 */
#ifndef AXLE_KERNELS_F32_DWCONV_ROWS_H_
#define AXLE_KERNELS_F32_DWCONV_ROWS_H_

#define AXLE_DW_ROWS4(s, a0, a1, a2, a3, b0, b1, b2, b3) \
  do {                                                   \
    if ((s) == 1) {                                      \
      if (AXLE_IN(0)) AXLE_TAPS(a0, 0);                  \
      if (AXLE_IN(1)) {                                  \
        AXLE_TAPS(a0, 1);                                \
        AXLE_TAPS(a1, 0);                                \
      }                                                  \
      if (AXLE_IN(2)) {                                  \
        AXLE_TAPS(b0, 2);                                \
        AXLE_TAPS(a1, 1);                                \
        AXLE_TAPS(a2, 0);                                \
      }                                                  \
      if (AXLE_IN(3)) {                                  \
        AXLE_TAPS(b1, 2);                                \
        AXLE_TAPS(a2, 1);                                \
        AXLE_TAPS(a3, 0);                                \
      }                                                  \
      if (AXLE_IN(4)) {                                  \
        AXLE_TAPS(b2, 2);                                \
        AXLE_TAPS(a3, 1);                                \
      }                                                  \
      if (AXLE_IN(5)) AXLE_TAPS(b3, 2);                  \
    } else {                                             \
      if (AXLE_IN(0)) AXLE_TAPS(a0, 0);                  \
      if (AXLE_IN(1)) AXLE_TAPS(a0, 1);                  \
      if (AXLE_IN(2)) {                                  \
        AXLE_TAPS(b0, 2);                                \
        AXLE_TAPS(a1, 0);                                \
      }                                                  \
      if (AXLE_IN(3)) AXLE_TAPS(a1, 1);                  \
      if (AXLE_IN(4)) {                                  \
        AXLE_TAPS(b1, 2);                                \
        AXLE_TAPS(a2, 0);                                \
      }                                                  \
      if (AXLE_IN(5)) AXLE_TAPS(a2, 1);                  \
      if (AXLE_IN(6)) {                                  \
        AXLE_TAPS(b2, 2);                                \
        AXLE_TAPS(a3, 0);                                \
      }                                                  \
      if (AXLE_IN(7)) AXLE_TAPS(a3, 1);                  \
      if (AXLE_IN(8)) AXLE_TAPS(b3, 2);                  \
    }                                                    \
  } while (0)

#endif /* AXLE_KERNELS_F32_DWCONV_ROWS_H_ */
