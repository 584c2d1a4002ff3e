/* Winograd F(2x2, 3x3) and F(4x4, 3x3): what the schedule (conv_winograd.c)
 * shares with the transforms of each ISA. V and M hold one row of ld floats
 * per element e (of elems: 16 or 36) and channel: V_e row c at
 * v + e * v_e + c * ld, tiles in row-major order from the block's first
 * tile row. */
#ifndef AXLE_KERNELS_F32_WINOGRAD_INTERNAL_H
#define AXLE_KERNELS_F32_WINOGRAD_INTERNAL_H

#include <stddef.h>

#include "axle_kernels.h"

typedef struct wino_geom_t {
  size_t elems;        /* (t + 2)^2 for tiles of t x t outputs */
  size_t c, m;         /* input, output channels */
  size_t th, tw;       /* tile rows, tiles per row */
  size_t rows;         /* tile rows per block */
  size_t blocks;       /* per image */
  size_t tb, ld;       /* tiles per block; row stride of V and M (room for 8-lane spill) */
  size_t v_e, m_e;     /* floats from one element's V (M) to the next's */
  size_t groups;       /* F(2x2) with AVX2: 8-tile groups per tile row */
  size_t cols;         /* F(2x2) with AVX2: padded input row width */
  int whole;           /* whole-image schedule (one block, shared V and M) */
  size_t v_floats, m_floats, row_floats, gemm_floats, worker_floats;
  size_t scratch_floats;
} wino_geom_t;

typedef struct wino_run_t wino_run_t;

/* V of input channel xc for the block's tile rows [ty0, ty0 + rows) into v
 * (its row for e = 0); buf: row_floats of scratch. */
typedef void (*wino_input_fn)(const wino_run_t* r, const float* xc, size_t ty0, size_t rows,
                              float* v, float* buf);
/* Y = epilogue(A^T M A) of output channel o for the block's tile rows. */
typedef void (*wino_output_fn)(const wino_run_t* r, const float* mbuf, size_t o, size_t ty0,
                               size_t rows, float* y_plane, const float* res_plane);

struct wino_run_t {
  const axle_f32_conv_params_t* p;
  const wino_geom_t* g;
  const float* x;
  const float* u;   /* elems packed U_e */
  size_t u_stride;  /* floats per U_e */
  const axle_f32_epilogue_t* ep;
  float* y;
  float* scratch;
  wino_input_fn input;
  wino_output_fn output;
};

/* The whole convolution (either schedule) with the given transforms for
 * tiles of tile x tile outputs. */
void axle_f32_conv_winograd_run(const axle_f32_conv_params_t* p, const float* x,
                                const float* packed, const axle_f32_epilogue_t* ep, float* y,
                                void* scratch, const axle_parallel_t* par, int tile,
                                wino_input_fn input, wino_output_fn output);

#endif
