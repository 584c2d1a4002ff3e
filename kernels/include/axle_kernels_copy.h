/*
 * N-dimensional iteration plans, the generic strided copy kernel and the
 * Vitis programmable 4D data mover (descriptor-driven copies, seed 004).
 *
 * An axle_nd_t describes a loop nest over `shape` that visits up to
 * AXLE_ND_MAX_OPS operands, each with its own strides (in elements of that
 * operand, negative = walking backwards, 0 = repeat the same element). One
 * mechanism serves every data-movement op (Transpose, Slice, Concat, Split,
 * Pad, Expand, Tile, fills) and the broadcasting/reduction drivers of
 * axle_kernels_elementwise.h: ops describe their access pattern once at
 * compile time, axle_nd_simplify() canonicalises it, run time only walks it.
 *
 * No dependency on the Axle core. Thread safety: plans are read-only at run
 * time; kernels may run concurrently on disjoint outputs.
 */
#ifndef AXLE_KERNELS_COPY_H_
#define AXLE_KERNELS_COPY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tile views a rank-8 tensor as 16 axes (repeat, extent) pairs. */
#define AXLE_ND_MAX_RANK 16
/* Where(cond, x, y) -> out is the widest user: four operands. */
#define AXLE_ND_MAX_OPS 4

typedef struct axle_nd_t {
  uint32_t rank;  /* >= 1 after axle_nd_simplify() */
  uint32_t ops;   /* operands in use */
  int64_t shape[AXLE_ND_MAX_RANK];
  int64_t stride[AXLE_ND_MAX_OPS][AXLE_ND_MAX_RANK];
} axle_nd_t;

/* Row-major strides (elements) of a tensor of the given shape. */
void axle_nd_contiguous_strides(uint32_t rank, const int64_t* shape, int64_t* strides);

/* Strides (elements) with which a row-major tensor of shape `shape` is read
 * when broadcast to `out_shape` by numpy's multidirectional rule: shapes are
 * right-aligned and extent-1 axes repeat (stride 0). Returns 0, or -1 when
 * the shapes are not broadcast-compatible or rank > out_rank. */
int axle_nd_broadcast_strides(uint32_t out_rank, const int64_t* out_shape, uint32_t rank,
                              const int64_t* shape, int64_t* strides);

/* Canonicalises a plan so that run-time loops are as few and as long as
 * possible: drops extent-1 axes and merges neighbouring axes that are
 * contiguous for every operand. Returns the element count; a plan with zero
 * elements becomes rank 1 of extent 0. The result always has rank >= 1. */
int64_t axle_nd_simplify(axle_nd_t* nd);

/* Number of elements a plan visits. */
int64_t axle_nd_count(const axle_nd_t* nd);

/* Walks every axis but the innermost. off[k] is operand k's element offset of
 * the current inner run. */
typedef struct axle_nd_iter_t {
  int64_t idx[AXLE_ND_MAX_RANK];
  int64_t off[AXLE_ND_MAX_OPS];
} axle_nd_iter_t;

static inline void axle_nd_iter_init(axle_nd_iter_t* it) {
  for (int d = 0; d < AXLE_ND_MAX_RANK; ++d) it->idx[d] = 0;
  for (int k = 0; k < AXLE_ND_MAX_OPS; ++k) it->off[k] = 0;
}

/* Number of inner runs (product of all extents but the innermost). */
static inline int64_t axle_nd_outer_count(const axle_nd_t* nd) {
  int64_t n = 1;
  for (uint32_t d = 0; d + 1 < nd->rank; ++d) n *= nd->shape[d];
  return n;
}

static inline void axle_nd_iter_next(const axle_nd_t* nd, axle_nd_iter_t* it) {
  for (int d = (int)nd->rank - 2; d >= 0; --d) {
    for (uint32_t k = 0; k < nd->ops; ++k) it->off[k] += nd->stride[k][d];
    if (++it->idx[d] < nd->shape[d]) return;
    for (uint32_t k = 0; k < nd->ops; ++k) it->off[k] -= nd->stride[k][d] * nd->shape[d];
    it->idx[d] = 0;
  }
}

/* Strided copy: operand 0 is the destination, operand 1 the source, both in
 * elements of elem_size bytes. A source stride of 0 on every axis is a fill.
 * A plan that maps a contiguous block onto itself (dst == src) does nothing,
 * which lets reshape-like ops run in place. */
void axle_strided_copy_scalar(const axle_nd_t* nd, size_t elem_size, void* dst, const void* src);

/* memcpy of `bytes`, skipped when dst == src (in-place reshape). */
void axle_copy_bytes_scalar(void* dst, const void* src, size_t bytes);

/* ---- Vitis programmable 4D data mover (seed 004, DESIGN.md) ----------------
 *
 * A descriptor buffer is a u64 count followed by that many descriptors of 9
 * u64 {bias, stride1, size1, stride2, size2, stride3, size3, stride4, size4},
 * innermost dimension first. A descriptor addresses, in this order,
 *   for d4 < size4, d3 < size3, d2 < size2, d1 < size1:
 *     element bias + d4 stride4 + d3 stride3 + d2 stride2 + d1 stride1
 * in unsigned 64-bit arithmetic (so a stride read as two's complement walks
 * backwards), in elements of the buffer; descriptors run in buffer order.
 * "Read" gathers the addressed elements of a buffer into a contiguous
 * stream, "write" scatters a contiguous stream into a buffer. stride1 == 1 is
 * the burst fast path (one block copy per inner run). The hardware moves 32-
 * to 512-bit elements; these kernels take any element size, so the CPU
 * plugin's byte and half-word tensors go through them too.
 *
 * Nothing moves unless every descriptor addresses only elements inside the
 * buffer and the stream holds all of them: the kernels return -1 and touch
 * no byte otherwise. (The check computes each descriptor's extreme addresses
 * exactly with the strides read as two's complement, which equals the
 * wrapping arithmetic for every descriptor whose span is below 2^63
 * elements; wider ones are refused.) Thread safety: pure functions of their
 * arguments; concurrent calls on disjoint outputs are safe. */
typedef struct axle_dm4d_desc_t {
  uint64_t bias;
  uint64_t stride[4]; /* stride1..stride4 */
  uint64_t size[4];   /* size1..size4 */
} axle_dm4d_desc_t;

/* Parses a descriptor buffer of `words` u64 words into out (room for max):
 * sets *count and returns 0, or -1 when the buffer is shorter than its
 * count says, longer, or holds more than max descriptors. */
int axle_dm4d_parse(const uint64_t* buffer, size_t words, axle_dm4d_desc_t* out, size_t max,
                    size_t* count);
/* Elements descriptors d[0..n) address in all (size products summed), or
 * UINT64_MAX when that overflows. */
uint64_t axle_dm4d_elements(const axle_dm4d_desc_t* d, size_t n);
/* 0 when descriptors d[0..n) address only elements of a buffer of
 * buf_elems and a stream of stream_elems holds all they address (what read
 * and write check before moving anything), else -1. */
int axle_dm4d_check(const axle_dm4d_desc_t* d, size_t n, uint64_t buf_elems, uint64_t stream_elems);
/* Read: buf (buf_elems elements of elem_size bytes) -> stream (room for
 * stream_elems). Write: stream -> buf. Return 0, or -1 with nothing moved
 * (see above). buf and stream must not overlap. */
int axle_dm4d_read(const axle_dm4d_desc_t* d, size_t n, const void* buf, uint64_t buf_elems,
                   void* stream, uint64_t stream_elems, size_t elem_size);
int axle_dm4d_write(const axle_dm4d_desc_t* d, size_t n, const void* stream, uint64_t stream_elems,
                    void* buf, uint64_t buf_elems, size_t elem_size);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_KERNELS_COPY_H_ */
