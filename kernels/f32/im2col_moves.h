/* Internal to the kernels: the vector im2col variants' shared part (see
 * im2col_moves.c); each ISA supplies only the replay of a row. */
#ifndef AXLE_KERNELS_F32_IM2COL_MOVES_H_
#define AXLE_KERNELS_F32_IM2COL_MOVES_H_

#include <stdint.h>

#include "axle_kernels.h"
#include "masked_at.h"

/* Outputs at the row's dst + dst. Full (> 0): that many vectors of W
 * outputs, all inside the input, from src (stride 1) or the evens of the 2W
 * floats from src (stride 2; all of them lie inside the plane), each W
 * outputs and s * W inputs after the previous. Otherwise one vector (lane
 * i: bit i of the masks): only lanes st are stored, from loads of lanes ld0 at
 * src and, at stride 2, ld1 at src + W, the others reading as 0 (masked off,
 * they read nothing and may point outside the plane). src is relative to
 * the channel. */
typedef struct axle_f32_im2col_move_t {
  int64_t src;
  int32_t dst;
  int32_t full;
  uint16_t ld0, ld1, st;
} axle_f32_im2col_move_t;

/* Stores moves [mv, end) of a row, stride 1 or 2, from channel xc into d. */
typedef void (*axle_f32_im2col_replay_fn)(const axle_f32_im2col_move_t* mv,
                                          const axle_f32_im2col_move_t* end, int64_t stride,
                                          const float* xc, float* d);

/* axle_f32_im2col_block with moves of `width` lanes (16 at most) replayed
 * by replay; shapes the moves do not cover go to the reference. */
void axle_f32_im2col_block_moves(const axle_f32_conv_params_t* p, const float* x_group,
                                 size_t k0, size_t kc, size_t n0, size_t nc, float* dst,
                                 int64_t width, axle_f32_im2col_replay_fn replay);

#endif /* AXLE_KERNELS_F32_IM2COL_MOVES_H_ */
