/* The Vitis programmable 4D data mover on the CPU (axle_kernels_copy.h):
 * the descriptor walk of seed 004, with the burst fast path as one block
 * copy per inner run. Used by the CPU plugin for the copies of Transpose,
 * Slice, Concat and the other layout ops whose pieces have one contiguous
 * side, and testable against the seed's worked example. */
#include <string.h>

#include "axle_kernels_copy.h"

int axle_dm4d_parse(const uint64_t* buffer, size_t words, axle_dm4d_desc_t* out, size_t max,
                    size_t* count) {
  *count = 0;
  if (!buffer || words < 1) return -1;
  const uint64_t n = buffer[0];
  if (n > max || n > (words - 1) / 9 || 1 + n * 9 != words) return -1;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t* w = buffer + 1 + i * 9;
    out[i].bias = w[0];
    for (int k = 0; k < 4; ++k) {
      out[i].stride[k] = w[1 + 2 * k];
      out[i].size[k] = w[2 + 2 * k];
    }
  }
  *count = (size_t)n;
  return 0;
}

/* Elements one descriptor addresses, or UINT64_MAX on overflow. */
static uint64_t desc_elements(const axle_dm4d_desc_t* d) {
  unsigned __int128 n = 1;
  for (int k = 0; k < 4; ++k) {
    n *= d->size[k];
    if (n > UINT64_MAX - 1) return UINT64_MAX;
  }
  return (uint64_t)n;
}

uint64_t axle_dm4d_elements(const axle_dm4d_desc_t* d, size_t n) {
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t e = desc_elements(&d[i]);
    if (e == UINT64_MAX || e > UINT64_MAX - 1 - total) return UINT64_MAX;
    total += e;
  }
  return total;
}

/* Whether every element d addresses lies in [0, elems): the extreme
 * addresses, exact in 128 bits with the strides as two's complement (see
 * the header for why that equals the wrapping walk). An empty descriptor
 * addresses nothing. */
static int desc_inside(const axle_dm4d_desc_t* d, uint64_t elems) {
  for (int k = 0; k < 4; ++k)
    if (d->size[k] == 0) return 1;
  __int128 lo = (__int128)d->bias, hi = lo;
  for (int k = 0; k < 4; ++k) {
    const __int128 reach = (__int128)(int64_t)d->stride[k] * (__int128)(d->size[k] - 1);
    if (reach < 0)
      lo += reach;
    else
      hi += reach;
  }
  const __int128 span = hi - lo;
  return lo >= 0 && hi < (__int128)elems && span < ((__int128)1 << 63);
}

int axle_dm4d_check(const axle_dm4d_desc_t* d, size_t n, uint64_t buf_elems,
                    uint64_t stream_elems) {
  if (n && !d) return -1;
  for (size_t i = 0; i < n; ++i)
    if (!desc_inside(&d[i], buf_elems)) return -1;
  const uint64_t total = axle_dm4d_elements(d, n);
  return total != UINT64_MAX && total <= stream_elems ? 0 : -1;
}

/* An inner run of n elements, one side at stride `stride` elements, the
 * other contiguous (gather into or scatter out of the stream), with the
 * element size a compile-time constant so each element is one load and one
 * store (a run-time size cost the data-mover transposes 2.4x). */
#define AXLE_DM_RUN_(ES)                                                                       \
  static void run_##ES(unsigned char* buf, uint64_t stride, unsigned char* stream, uint64_t n, \
                       int to_stream) {                                                        \
    /* The wrapped offset as two's complement: a backwards stride is a                         \
     * negative pointer offset, not one past the address space. */                             \
    const ptrdiff_t step = (ptrdiff_t)(int64_t)stride * ES;                                    \
    if (to_stream)                                                                             \
      for (uint64_t i = 0; i < n; ++i) memcpy(stream + i * ES, buf + (ptrdiff_t)i * step, ES); \
    else                                                                                       \
      for (uint64_t i = 0; i < n; ++i) memcpy(buf + (ptrdiff_t)i * step, stream + i * ES, ES); \
  }
AXLE_DM_RUN_(1)
AXLE_DM_RUN_(2)
AXLE_DM_RUN_(4)
AXLE_DM_RUN_(8)

static void run_any(unsigned char* buf, uint64_t stride, unsigned char* stream, uint64_t n,
                    size_t es, int to_stream) {
  const ptrdiff_t step = (ptrdiff_t)(int64_t)stride * (ptrdiff_t)es;
  for (uint64_t i = 0; i < n; ++i) {
    if (to_stream)
      memcpy(stream + i * es, buf + (ptrdiff_t)i * step, es);
    else
      memcpy(buf + (ptrdiff_t)i * step, stream + i * es, es);
  }
}

/* One descriptor in either direction: the stream pointer advances by the
 * elements moved; returns it. Addresses wrap in 64 bits (negative strides
 * as two's complement); the check has kept them inside the buffer. */
static unsigned char* walk(const axle_dm4d_desc_t* d, unsigned char* buf, unsigned char* stream,
                           size_t es, int to_stream) {
  const uint64_t s1 = d->stride[0], n1 = d->size[0];
  for (uint64_t d4 = 0; d4 < d->size[3]; ++d4)
    for (uint64_t d3 = 0; d3 < d->size[2]; ++d3)
      for (uint64_t d2 = 0; d2 < d->size[1]; ++d2, stream += n1 * es) {
        const uint64_t base = d->bias + d4 * d->stride[3] + d3 * d->stride[2] + d2 * d->stride[1];
        unsigned char* at = buf + base * es;
        if (s1 == 1) { /* burst */
          if (to_stream)
            memcpy(stream, at, n1 * es);
          else
            memcpy(at, stream, n1 * es);
          continue;
        }
        switch (es) {
          case 1:
            run_1(at, s1, stream, n1, to_stream);
            break;
          case 2:
            run_2(at, s1, stream, n1, to_stream);
            break;
          case 4:
            run_4(at, s1, stream, n1, to_stream);
            break;
          case 8:
            run_8(at, s1, stream, n1, to_stream);
            break;
          default:
            run_any(at, s1, stream, n1, es, to_stream);
            break;
        }
      }
  return stream;
}

/* Both directions: checked first, then the descriptors in order. The
 * buffer is only read when to_stream (the const is cast away for walk). */
static int move(const axle_dm4d_desc_t* d, size_t n, unsigned char* buf, uint64_t buf_elems,
                unsigned char* stream, uint64_t stream_elems, size_t elem_size, int to_stream) {
  if (elem_size == 0 || (n && (!buf || !stream)) ||
      axle_dm4d_check(d, n, buf_elems, stream_elems) != 0)
    return -1;
  for (size_t i = 0; i < n; ++i) stream = walk(&d[i], buf, stream, elem_size, to_stream);
  return 0;
}

int axle_dm4d_read(const axle_dm4d_desc_t* d, size_t n, const void* buf, uint64_t buf_elems,
                   void* stream, uint64_t stream_elems, size_t elem_size) {
  return move(d, n, (unsigned char*)buf, buf_elems, stream, stream_elems, elem_size, 1);
}

int axle_dm4d_write(const axle_dm4d_desc_t* d, size_t n, const void* stream, uint64_t stream_elems,
                    void* buf, uint64_t buf_elems, size_t elem_size) {
  return move(d, n, buf, buf_elems, (unsigned char*)stream, stream_elems, elem_size, 0);
}
