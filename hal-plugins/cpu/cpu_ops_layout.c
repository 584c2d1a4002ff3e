/*
 * Layout op family of the CPU plugin: shape and data-movement ops plus the
 * reductions.
 *
 * Almost every op here compiles to a "copy program": a short list of pieces,
 * each one axle_strided_copy_scalar() call described by an axle_nd_t plan
 * (Transpose, Slice, Concat and Split pieces with one contiguous side: one
 * 4D data mover descriptor instead, see use_data_mover())
 * (operand 0 = destination, 1 = source) and a source that is an input, the
 * output itself (Pad's edge/reflect/wrap modes read what the interior piece
 * wrote) or a constant (fills). Transpose is a permuted-stride piece, Slice a
 * scaled/negative-stride piece, Concat/Split one piece per operand, Pad an
 * interior piece plus two per axis, Expand/ConstantOfShape zero-stride
 * sources, Tile a doubled-rank view. run() for all of them is the same loop.
 * The ops are dtype-generic: only the element size matters, so every
 * fixed-size dtype works.
 *
 * Gather with runtime indices cannot fail at run time (run() has no error
 * path), so an index outside [-n, n) writes zeros for its slice instead of
 * reading out of bounds; constant indices are validated in prepare(), where a
 * bad one is an error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axle_kernels_copy.h"
#include "axle_kernels_elementwise.h"
#include "cpu_op.h"

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */
/* ------------------------------------------------------------------------ */

#define MAXR AXLE_HAL_MAX_RANK /* bound of every per-axis array here */

static int64_t elements(const axle_hal_tensor_t* t) { return axle_hal_tensor_elements(t); }

static const axle_hal_tensor_t* step_input(const cpu_step_t* step, uint32_t i) {
  return i < step->input_count ? step->in[i] : NULL;
}

static int64_t norm_axis(int64_t axis, uint32_t rank) { return axis < 0 ? axis + rank : axis; }

/* Integer list from input `input` (must be constant) or else attribute
 * `attr`. Returns the count, 0 when neither is given, -1 when the input is
 * not constant or not int32/int64, -2 when it holds more than max values. */
static int ints_arg(const cpu_step_t* step, const char* attr, uint32_t input, int64_t* v,
                    size_t max) {
  const axle_hal_tensor_t* t = step_input(step, input);
  if (t) {
    if (!t->data || (t->dtype != AXLE_HAL_DTYPE_I64 && t->dtype != AXLE_HAL_DTYPE_I32)) return -1;
    const int64_t n = elements(t);
    if (n > (int64_t)max) return -2;
    for (int64_t i = 0; i < n; ++i)
      v[i] = t->dtype == AXLE_HAL_DTYPE_I64 ? ((const int64_t*)t->data)[i]
                                            : ((const int32_t*)t->data)[i];
    return (int)n;
  }
  const axle_hal_attr_t* a = attr ? axle_hal_node_attr(step->node, attr) : NULL;
  if (!a) return 0;
  if (a->type == AXLE_HAL_ATTR_INT) {
    v[0] = a->i;
    return 1;
  }
  if (a->type != AXLE_HAL_ATTR_INTS) return -1;
  if (a->count > max) return -2;
  for (uint32_t i = 0; i < a->count; ++i) v[i] = a->ints[i];
  return (int)a->count;
}

/* Kernels per arithmetic dtype (AXLE_ARITH_DTYPES order). */
typedef struct arith_kernels_t {
  axle_reduce_fn sum, max;
  axle_binary_fn add, maxb, div;
  axle_range_fn range;
} arith_kernels_t;
#define ARITH_ROW_(dt, T, code)                                                                 \
  {axle_##dt##_reduce_sum_scalar, axle_##dt##_reduce_max_scalar, axle_##dt##_add_scalar, \
   axle_##dt##_max_scalar, axle_##dt##_div_scalar, axle_##dt##_range_scalar},
static const arith_kernels_t k_arith[] = {AXLE_ARITH_DTYPES(ARITH_ROW_)};

static const arith_kernels_t* arith(int32_t dtype) {
  const int i = axle_arith_dtype_index(dtype);
  return i < 0 ? NULL : &k_arith[i];
}

static void convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst) {
  axle_cast_t plan;
  if (axle_cast_plan(src_dtype, dst_dtype, &plan) == 0) axle_cast_scalar(&plan, src, dst, 1);
}

/* ------------------------------------------------------------------------ */
/* Copy programs                                                             */
/* ------------------------------------------------------------------------ */

enum { SRC_INPUT, SRC_OUTPUT, SRC_CONST };

/* How a piece moves its elements: the generic strided copy, or the 4D data
 * mover (axle_kernels_copy.h) reading the source into a contiguous
 * destination or writing a contiguous source into the destination. */
enum { MOVE_STRIDED, MOVE_DM_READ, MOVE_DM_WRITE };

typedef struct piece_t {
  axle_nd_t nd;            /* operand 0 = destination, 1 = source; elements */
  int64_t dst_off, src_off;
  const void* konst;       /* SRC_CONST: graph- or params-owned bytes */
  uint32_t src_kind, src_index, dst_index;
  uint32_t move;         /* MOVE_* */
  axle_dm4d_desc_t dm;   /* MOVE_DM_*: addresses in the strided side's tensor */
  uint64_t dm_buf_elems; /* that tensor's elements */
  uint64_t dm_stream;    /* elements of the contiguous side */
} piece_t;

typedef struct prog_t {
  size_t es;
  uint32_t count;
  piece_t piece[];
} prog_t;

/* A program with room for max pieces and payload bytes of constants after
 * them (8-byte aligned). */
static prog_t* prog_new(const axle_hal_host_t* host, cpu_step_t* step, size_t es, uint32_t max,
                        size_t payload, unsigned char** payload_ptr) {
  const size_t head = sizeof(prog_t) + max * sizeof(piece_t);
  prog_t* p = cpu_step_params(host, step, head + payload);
  if (!p) return NULL;
  p->es = es;
  if (payload_ptr) *payload_ptr = (unsigned char*)p + head;
  return p;
}

/* Appends a piece reading input 0 into output 0; the caller adjusts the
 * source. Strides are in elements; NULL src strides mean "all zero". */
static piece_t* piece_add(prog_t* p, uint32_t rank, const int64_t* shape,
                          const int64_t* dst_stride, int64_t dst_off, const int64_t* src_stride,
                          int64_t src_off) {
  piece_t* pc = &p->piece[p->count++];
  memset(pc, 0, sizeof *pc);
  pc->nd.rank = rank;
  pc->nd.ops = 2;
  for (uint32_t d = 0; d < rank; ++d) {
    pc->nd.shape[d] = shape[d];
    pc->nd.stride[0][d] = dst_stride[d];
    pc->nd.stride[1][d] = src_stride ? src_stride[d] : 0;
  }
  /* An empty piece must not keep offsets that point past its buffers. */
  if (axle_nd_simplify(&pc->nd) == 0) dst_off = src_off = 0;
  pc->dst_off = dst_off;
  pc->src_off = src_off;
  pc->src_kind = SRC_INPUT;
  return pc;
}

/* A flat copy of n elements. */
static piece_t* piece_flat(prog_t* p, int64_t n) {
  const int64_t one = 1;
  return piece_add(p, 1, &n, &one, 0, &one, 0);
}

/* Whether operand k of a (simplified) plan walks its elements in order. */
static int nd_contiguous(const axle_nd_t* nd, uint32_t k) {
  int64_t expect = 1;
  for (uint32_t d = nd->rank; d-- > 0;) {
    if (nd->stride[k][d] != expect) return 0;
    expect *= nd->shape[d];
  }
  return 1;
}

/* Gives the input pieces of a program whose one side is contiguous and the
 * other strided (a transpose, a slice, a concat or split off the first
 * axis) to the 4D data mover: one descriptor for the plan's (at most 4)
 * axes, innermost first, biased by the strided side's offset. Plans of more
 * axes, flat copies (which may be in place) and the other sources keep the
 * strided copy. A descriptor the data mover would refuse cannot come out of
 * a valid plan; checked anyway, it would keep the strided copy too. */
static void use_data_mover(const cpu_step_t* step, prog_t* p) {
  for (uint32_t i = 0; i < p->count; ++i) {
    piece_t* pc = &p->piece[i];
    const axle_nd_t* nd = &pc->nd;
    const axle_hal_tensor_t* x = step_input(step, pc->src_index);
    const axle_hal_tensor_t* y =
        pc->dst_index < step->output_count ? step->out[pc->dst_index] : NULL;
    if (pc->src_kind != SRC_INPUT || !x || !y || nd->rank > 4 || axle_nd_count(nd) == 0) continue;
    const int dst_flat = nd_contiguous(nd, 0), src_flat = nd_contiguous(nd, 1);
    if (dst_flat == src_flat) continue;
    const uint32_t side = dst_flat ? 1 : 0; /* the strided operand */
    axle_dm4d_desc_t d;
    memset(&d, 0, sizeof d);
    d.bias = (uint64_t)(dst_flat ? pc->src_off : pc->dst_off);
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t axis = nd->rank - 1 - k; /* innermost first */
      d.size[k] = k < nd->rank ? (uint64_t)nd->shape[axis] : 1;
      d.stride[k] = k < nd->rank ? (uint64_t)nd->stride[side][axis] : 0;
    }
    const uint64_t buf_elems = (uint64_t)elements(dst_flat ? x : y);
    const uint64_t stream =
        (uint64_t)elements(dst_flat ? y : x) - (uint64_t)(dst_flat ? pc->dst_off : pc->src_off);
    if (axle_dm4d_check(&d, 1, buf_elems, stream) != 0) continue;
    pc->move = dst_flat ? MOVE_DM_READ : MOVE_DM_WRITE;
    pc->dm = d;
    pc->dm_buf_elems = buf_elems;
    pc->dm_stream = stream;
  }
}

static void run_prog(const cpu_step_t* step, const void* const* in, void* const* out,
                     void* scratch) {
  (void)scratch;
  const prog_t* p = step->params;
  const ptrdiff_t es = (ptrdiff_t)p->es;
  for (uint32_t i = 0; i < p->count; ++i) {
    const piece_t* pc = &p->piece[i];
    const void* src = pc->src_kind == SRC_INPUT    ? cpu_step_input_data(step, in, pc->src_index)
                      : pc->src_kind == SRC_OUTPUT ? out[pc->src_index]
                                                   : pc->konst;
    char* dst = out[pc->dst_index];
    if (!src || !dst) continue;
    /* Checked at prepare against these very extents: cannot refuse here. */
    if (pc->move == MOVE_DM_READ)
      axle_dm4d_read(&pc->dm, 1, src, pc->dm_buf_elems, dst + pc->dst_off * es, pc->dm_stream,
                     p->es);
    else if (pc->move == MOVE_DM_WRITE)
      axle_dm4d_write(&pc->dm, 1, (const char*)src + pc->src_off * es, pc->dm_stream, dst,
                      pc->dm_buf_elems, p->es);
    else
      axle_strided_copy_scalar(&pc->nd, p->es, dst + pc->dst_off * es,
                               (const char*)src + pc->src_off * es);
  }
}

/* Every op of this family needs its data input to have a fixed-size dtype. */
static int32_t check_sized(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                           size_t rs) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (!x) return cpu_unsupported(reason, rs, "%s: missing input 0", n->op_type);
  if (!axle_hal_dtype_size(x->dtype))
    return cpu_unsupported(reason, rs, "%s: dtype %s not supported", n->op_type, cpu_dtype_name(x->dtype));
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Flatten, Reshape, Squeeze, Unsqueeze: the bytes do not change             */
/* ------------------------------------------------------------------------ */

static int32_t prepare_reshape(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  if (elements(x) != elements(y) || x->dtype != y->dtype)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output size differs from the input's");
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_flat(p, elements(x)); /* skipped at run time when in == out */
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Transpose                                                                 */
/* ------------------------------------------------------------------------ */

static int32_t prepare_transpose(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  const uint32_t r = x->rank;
  int64_t perm[MAXR], xs[MAXR], ys[MAXR], src[MAXR];
  int n = ints_arg(step, "perm", UINT32_MAX, perm, MAXR);
  if (n == 0) { /* default: reverse the axes */
    for (uint32_t d = 0; d < r; ++d) perm[d] = r - 1 - d;
    n = (int)r;
  }
  if (n != (int)r || y->rank != r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "perm length is not the rank");
  uint32_t seen = 0;
  for (uint32_t d = 0; d < r; ++d) {
    if (perm[d] < 0 || perm[d] >= (int64_t)r || (seen >> perm[d]) & 1u ||
        y->shape[d] != x->shape[perm[d]])
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "perm is not a permutation of the axes");
    seen |= 1u << perm[d];
  }
  axle_nd_contiguous_strides(r, x->shape, xs);
  axle_nd_contiguous_strides(r, y->shape, ys);
  for (uint32_t d = 0; d < r; ++d) src[d] = xs[perm[d]];
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_add(p, r, y->shape, ys, 0, src, 0);
  use_data_mover(step, p);
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Slice                                                                     */
/* ------------------------------------------------------------------------ */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int32_t prepare_slice(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  const uint32_t r = x->rank;
  int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR];
  /* Opset < 10 has attributes, later opsets constant inputs 1..4. */
  const int ns = ints_arg(step, "starts", 1, starts, MAXR);
  const int ne = ints_arg(step, "ends", 2, ends, MAXR);
  int na = ints_arg(step, "axes", 3, axes, MAXR);
  int nst = ints_arg(step, "steps", 4, steps, MAXR);
  if (ns < 0 || ne < 0 || na < 0 || nst < 0)
    return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "starts/ends/axes/steps must be constant integers");
  if (ns != ne || (na && na != ns) || (nst && nst != ns))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "starts/ends/axes/steps differ in length");
  for (int i = na; i < ns; ++i) axes[i] = i;
  for (int i = nst; i < ns; ++i) steps[i] = 1;
  int64_t first[MAXR], step_d[MAXR], count[MAXR];
  for (uint32_t d = 0; d < r; ++d) {
    first[d] = 0;
    step_d[d] = 1;
    count[d] = x->shape[d];
  }
  uint32_t seen = 0;
  for (int i = 0; i < ns; ++i) {
    const int64_t a = norm_axis(axes[i], r);
    if (a < 0 || a >= (int64_t)r || (seen >> a) & 1u)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axes out of range or repeated");
    seen |= 1u << a;
    const int64_t dim = x->shape[a], st = steps[i];
    if (st == 0) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "step 0");
    /* ONNX clamping: negative indices count from the end, then starts/ends
     * clamp to [0, dim] going forward and to [-1, dim - 1] going backward. */
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = clamp64(s, 0, dim);
      e = clamp64(e, 0, dim);
      count[a] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = clamp64(s, 0, dim - 1);
      e = clamp64(e, -1, dim - 1);
      count[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    first[a] = s;
    step_d[a] = st;
  }
  if (y->rank != r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output rank differs");
  for (uint32_t d = 0; d < r; ++d)
    if (count[d] != y->shape[d])
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output shape disagrees with the slice");
  int64_t xs[MAXR], ys[MAXR], src[MAXR], off = 0;
  axle_nd_contiguous_strides(r, x->shape, xs);
  axle_nd_contiguous_strides(r, y->shape, ys);
  for (uint32_t d = 0; d < r; ++d) {
    src[d] = xs[d] * step_d[d];
    off += first[d] * xs[d];
  }
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_add(p, r, y->shape, ys, 0, src, off);
  use_data_mover(step, p);
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Concat, Split                                                             */
/* ------------------------------------------------------------------------ */

static int32_t prepare_concat(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* y = step->out[0];
  const uint32_t r = y->rank;
  const int64_t axis = norm_axis(cpu_attr_int(step->node, "axis", 0), r);
  if (axis < 0 || axis >= (int64_t)r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axis out of range");
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(y->dtype), step->input_count, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  int64_t ys[MAXR], xs[MAXR], at = 0;
  axle_nd_contiguous_strides(r, y->shape, ys);
  for (uint32_t k = 0; k < step->input_count; ++k) {
    const axle_hal_tensor_t* x = step->in[k];
    if (!x) continue;
    if (x->rank != r || x->dtype != y->dtype)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "inputs differ in rank or dtype");
    for (uint32_t d = 0; d < r; ++d)
      if (d != axis && x->shape[d] != y->shape[d])
        return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "inputs differ off the concat axis");
    axle_nd_contiguous_strides(r, x->shape, xs);
    piece_t* pc = piece_add(p, r, x->shape, ys, at * ys[axis], xs, 0);
    pc->src_index = k;
    at += x->shape[axis];
  }
  if (at != y->shape[axis])
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "inputs do not add up to the output");
  use_data_mover(step, p);
  return AXLE_HAL_OK;
}

/* The output shapes already say how the input is split (attribute, input or
 * num_outputs were resolved by shape inference), so prepare reads them. */
static int32_t prepare_split(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const uint32_t r = x->rank;
  const int64_t axis = norm_axis(cpu_attr_int(step->node, "axis", 0), r);
  if (axis < 0 || axis >= (int64_t)r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axis out of range");
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), step->output_count, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  int64_t xs[MAXR], ys[MAXR], at = 0;
  axle_nd_contiguous_strides(r, x->shape, xs);
  for (uint32_t k = 0; k < step->output_count; ++k) {
    const axle_hal_tensor_t* y = step->out[k];
    if (!y) continue;
    if (y->rank != r || y->dtype != x->dtype)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "outputs differ in rank or dtype");
    axle_nd_contiguous_strides(r, y->shape, ys);
    piece_t* pc = piece_add(p, r, y->shape, ys, 0, xs, at * xs[axis]);
    pc->dst_index = k;
    at += y->shape[axis];
  }
  if (at > x->shape[axis])
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "outputs exceed the input along axis");
  use_data_mover(step, p);
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                       */
/* ------------------------------------------------------------------------ */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

static int32_t check_pad(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                         size_t rs) {
  const int32_t st = check_sized(g, n, reason, rs);
  if (st != AXLE_HAL_OK) return st;
  const axle_hal_attr_t* m = axle_hal_node_attr(n, "mode");
  if (m && m->s && strcmp(m->s, "constant") && strcmp(m->s, "reflect") && strcmp(m->s, "edge") &&
      strcmp(m->s, "wrap"))
    return cpu_unsupported(reason, rs, "Pad: mode '%s' not supported", m->s);
  return AXLE_HAL_OK;
}

/* Pads are applied as an interior copy followed, axis by axis, by the pad
 * regions before and after the interior. The region for axis d spans the
 * full output along axes < d (already padded) and the interior along axes
 * > d, so every output element is written exactly once, and edge/reflect/
 * wrap read only elements written before them. Negative pads crop the input
 * first. */
static int32_t prepare_pad(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  const uint32_t r = x->rank;
  const size_t es = axle_hal_dtype_size(x->dtype);
  const axle_hal_attr_t* ma = axle_hal_node_attr(step->node, "mode");
  const char* ms = ma && ma->s ? ma->s : "constant";
  const int mode = !strcmp(ms, "reflect") ? PAD_REFLECT
                   : !strcmp(ms, "edge")  ? PAD_EDGE
                   : !strcmp(ms, "wrap")  ? PAD_WRAP
                                          : PAD_CONSTANT;
  int64_t pads[2 * MAXR], axes[MAXR];
  const int np = ints_arg(step, "pads", 1, pads, 2 * MAXR);
  int na = ints_arg(step, NULL, 3, axes, MAXR);
  if (np < 0 || na < 0) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "pads and axes must be constant integers");
  if (na == 0) {
    na = (int)r;
    for (uint32_t d = 0; d < r; ++d) axes[d] = d;
  }
  if (np != 2 * na) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "pads length is not twice the axis count");
  int64_t pb[MAXR] = {0}, pe[MAXR] = {0}, crop[MAXR] = {0}, inner[MAXR];
  for (int i = 0; i < na; ++i) {
    const int64_t a = norm_axis(axes[i], r);
    if (a < 0 || a >= (int64_t)r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axis out of range");
    pb[a] = pads[i];
    pe[a] = pads[i + na];
  }
  for (uint32_t d = 0; d < r; ++d) {
    crop[d] = pb[d] < 0 ? -pb[d] : 0;
    inner[d] = x->shape[d] - crop[d] - (pe[d] < 0 ? -pe[d] : 0);
    if (pb[d] < 0) pb[d] = 0;
    if (pe[d] < 0) pe[d] = 0;
    if (inner[d] < 0 || y->rank != r || y->shape[d] != pb[d] + inner[d] + pe[d])
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output shape disagrees with pads");
    /* Reflect mirrors without repeating the border, so it needs pads <=
     * extent - 1; wrap needs pads <= extent; edge needs one element. */
    const int64_t limit = mode == PAD_REFLECT ? inner[d] - 1 : mode == PAD_WRAP ? inner[d]
                          : mode == PAD_EDGE  ? (inner[d] > 0 ? INT64_MAX : 0)
                                              : INT64_MAX;
    if (pb[d] > limit || pe[d] > limit)
      return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "pads too large for the input extent in this mode");
  }
  unsigned char* value;
  prog_t* p = prog_new(host, step, es, 1 + 2 * r, 8, &value);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  /* The constant: input 2 (constant now or known only at run time), else
   * the opset < 11 'value' attribute, else zero. */
  const axle_hal_tensor_t* cv = step_input(step, 2);
  int runtime_value = 0;
  if (cv) {
    if (cv->dtype != x->dtype || elements(cv) != 1)
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "constant_value must be a scalar of the input dtype");
    if (cv->data)
      memcpy(value, cv->data, es);
    else
      runtime_value = 1;
  } else {
    const float f = cpu_attr_float(step->node, "value", 0.0f);
    convert(AXLE_HAL_DTYPE_F32, &f, x->dtype, value);
  }
  int64_t xs[MAXR], ys[MAXR], off = 0, src_off = 0;
  axle_nd_contiguous_strides(r, x->shape, xs);
  axle_nd_contiguous_strides(r, y->shape, ys);
  for (uint32_t d = 0; d < r; ++d) {
    off += pb[d] * ys[d];
    src_off += crop[d] * xs[d];
  }
  piece_add(p, r, inner, ys, off, xs, src_off);
  for (uint32_t d = 0; d < r; ++d) {
    for (int side = 0; side < 2; ++side) {
      const int64_t width = side ? pe[d] : pb[d];
      if (width == 0) continue;
      int64_t shape[MAXR], src[MAXR], base = 0;
      for (uint32_t e = 0; e < r; ++e) {
        shape[e] = e < d ? y->shape[e] : e > d ? inner[e] : width;
        if (e > d) base += pb[e] * ys[e];
        src[e] = ys[e];
      }
      const int64_t at = side ? pb[d] + inner[d] : 0; /* first padded index along d */
      int64_t from = 0;                               /* index read for `at` */
      switch (mode) {
        case PAD_EDGE: from = side ? pb[d] + inner[d] - 1 : pb[d]; src[d] = 0; break;
        case PAD_REFLECT: from = side ? pb[d] + inner[d] - 2 : 2 * pb[d]; src[d] = -ys[d]; break;
        case PAD_WRAP: from = side ? pb[d] : inner[d]; break;
        default: break;
      }
      if (mode == PAD_CONSTANT) {
        piece_t* pc = piece_add(p, r, shape, ys, base + at * ys[d], NULL, 0);
        pc->src_kind = runtime_value ? SRC_INPUT : SRC_CONST;
        pc->src_index = 2;
        pc->konst = value;
      } else {
        piece_t* pc = piece_add(p, r, shape, ys, base + at * ys[d], src, base + from * ys[d]);
        pc->src_kind = SRC_OUTPUT;
      }
    }
  }
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Expand, Tile                                                              */
/* ------------------------------------------------------------------------ */

static int32_t prepare_expand(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  int64_t ys[MAXR], src[MAXR];
  if (axle_nd_broadcast_strides(y->rank, y->shape, x->rank, x->shape, src) != 0)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "input does not broadcast to the output shape");
  axle_nd_contiguous_strides(y->rank, y->shape, ys);
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_add(p, y->rank, y->shape, ys, 0, src, 0);
  return AXLE_HAL_OK;
}

/* The output viewed as [rep0, in0, rep1, in1, ...]: the source repeats
 * along every rep axis (stride 0). */
static int32_t prepare_tile(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  const uint32_t r = x->rank;
  int64_t reps[MAXR];
  if (ints_arg(step, NULL, 1, reps, MAXR) != (int)r || y->rank != r)
    return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "repeats must be constant, one per axis");
  int64_t xs[MAXR], ys[MAXR], shape[2 * MAXR], dst[2 * MAXR], src[2 * MAXR];
  axle_nd_contiguous_strides(r, x->shape, xs);
  axle_nd_contiguous_strides(r, y->shape, ys);
  for (uint32_t d = 0; d < r; ++d) {
    if (reps[d] < 0 || y->shape[d] != x->shape[d] * reps[d])
      return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output shape disagrees with repeats");
    shape[2 * d] = reps[d];
    shape[2 * d + 1] = x->shape[d];
    dst[2 * d] = x->shape[d] * ys[d];
    dst[2 * d + 1] = ys[d];
    src[2 * d] = 0;
    src[2 * d + 1] = xs[d];
  }
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(x->dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_add(p, 2 * r, shape, dst, 0, src, 0);
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Constant, ConstantOfShape, Shape                                          */
/* ------------------------------------------------------------------------ */

/* The value of a Constant node: bytes owned by the graph (which outlives the
 * executable), dtype and element count. */
static int constant_value(const axle_hal_graph_t* g, const axle_hal_node_t* n, const void** data,
                          int32_t* dtype, int64_t* count) {
  for (uint32_t i = 0; i < n->attr_count; ++i) {
    const axle_hal_attr_t* a = &n->attrs[i];
    if (!strcmp(a->name, "value") && a->type == AXLE_HAL_ATTR_TENSOR && a->tensor >= 0 &&
        (uint32_t)a->tensor < g->tensor_count) {
      const axle_hal_tensor_t* t = &g->tensors[a->tensor];
      *data = t->data;
      *dtype = t->dtype;
      *count = elements(t);
      return axle_hal_dtype_size(t->dtype) && (t->data || *count == 0) ? 0 : -1;
    }
    if (!strcmp(a->name, "value_float")) { *data = &a->f; *dtype = AXLE_HAL_DTYPE_F32; *count = 1; return 0; }
    if (!strcmp(a->name, "value_int")) { *data = &a->i; *dtype = AXLE_HAL_DTYPE_I64; *count = 1; return 0; }
    if (!strcmp(a->name, "value_floats")) { *data = a->floats; *dtype = AXLE_HAL_DTYPE_F32; *count = a->count; return 0; }
    if (!strcmp(a->name, "value_ints")) { *data = a->ints; *dtype = AXLE_HAL_DTYPE_I64; *count = a->count; return 0; }
  }
  return -1; /* strings, sparse_value, or nothing */
}

static int32_t check_constant(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                              size_t rs) {
  const void* data;
  int32_t dtype;
  int64_t count;
  if (constant_value(g, n, &data, &dtype, &count) != 0)
    return cpu_unsupported(reason, rs, "Constant: only numeric value/value_float(s)/value_int(s) "
                           "are supported (no strings, no sparse_value)");
  return AXLE_HAL_OK;
}

static int32_t prepare_constant(const axle_hal_host_t* host, cpu_step_t* step) {
  const void* data;
  int32_t dtype;
  int64_t count;
  const axle_hal_tensor_t* y = step->out[0];
  if (constant_value(step->graph, step->node, &data, &dtype, &count) != 0 ||
      dtype != y->dtype || count != elements(y))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "value does not match the output tensor");
  prog_t* p = prog_new(host, step, axle_hal_dtype_size(dtype), 1, 0, NULL);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  piece_t* pc = piece_flat(p, count);
  pc->src_kind = SRC_CONST;
  pc->konst = data;
  return AXLE_HAL_OK;
}

static int32_t check_constant_of_shape(const axle_hal_graph_t* g, const axle_hal_node_t* n,
                                       char* reason, size_t rs) {
  const axle_hal_attr_t* a = axle_hal_node_attr(n, "value");
  if (a && (a->type != AXLE_HAL_ATTR_TENSOR || a->tensor < 0 ||
            (uint32_t)a->tensor >= g->tensor_count ||
            !axle_hal_dtype_size(g->tensors[a->tensor].dtype) || !g->tensors[a->tensor].data))
    return cpu_unsupported(reason, rs, "ConstantOfShape: value must be a numeric one-element tensor");
  return AXLE_HAL_OK;
}

static int32_t prepare_constant_of_shape(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* y = step->out[0];
  const size_t es = axle_hal_dtype_size(y->dtype);
  const axle_hal_attr_t* a = axle_hal_node_attr(step->node, "value");
  const axle_hal_tensor_t* v = a && a->type == AXLE_HAL_ATTR_TENSOR ? &step->graph->tensors[a->tensor] : NULL;
  if (!es || (v && (v->dtype != y->dtype || !v->data)) || (!v && y->dtype != AXLE_HAL_DTYPE_F32))
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "value does not match the output dtype");
  unsigned char* value;
  prog_t* p = prog_new(host, step, es, 1, 8, &value);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  if (v) memcpy(value, v->data, es); /* else float 0 (calloc) */
  const int64_t n = elements(y), one = 1;
  piece_t* pc = piece_add(p, 1, &n, &one, 0, NULL, 0);
  pc->src_kind = SRC_CONST;
  pc->konst = value;
  return AXLE_HAL_OK;
}

static int32_t check_shape(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                           size_t rs) {
  if (!cpu_node_input(g, n, 0)) return cpu_unsupported(reason, rs, "Shape: missing input");
  return AXLE_HAL_OK; /* reads no data, so any dtype (even string) works */
}

static int32_t prepare_shape(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const int64_t r = x->rank;
  /* Opset 15 start/end: negative counts from the back, then clamp. */
  int64_t start = cpu_attr_int(step->node, "start", 0), end = cpu_attr_int(step->node, "end", r);
  start = clamp64(start < 0 ? start + r : start, 0, r);
  end = clamp64(end < 0 ? end + r : end, 0, r);
  const int64_t n = end > start ? end - start : 0;
  if (step->out[0]->dtype != AXLE_HAL_DTYPE_I64 || elements(step->out[0]) != n)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output is not int64 of the selected rank");
  unsigned char* dims;
  prog_t* p = prog_new(host, step, sizeof(int64_t), 1, MAXR * sizeof(int64_t), &dims);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  memcpy(dims, x->shape + start, (size_t)n * sizeof(int64_t));
  piece_t* pc = piece_flat(p, n);
  pc->src_kind = SRC_CONST;
  pc->konst = dims;
  return AXLE_HAL_OK;
}

/* ------------------------------------------------------------------------ */
/* Gather                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct gather_params_t {
  axle_nd_t slice;     /* one index: [outer, inner] from data into the output */
  axle_nd_t zero;      /* the same slice filled from one zero element */
  size_t es;
  int64_t axis_n, inner, count; /* extent along axis, elements per slice row, indices */
  int32_t index_dtype;
  _Alignas(8) unsigned char zero_value[8];
} gather_params_t;

static int32_t check_gather(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                            size_t rs) {
  const int32_t st = check_sized(g, n, reason, rs);
  if (st != AXLE_HAL_OK) return st;
  const axle_hal_tensor_t* i = cpu_node_input(g, n, 1);
  if (!i || (i->dtype != AXLE_HAL_DTYPE_I32 && i->dtype != AXLE_HAL_DTYPE_I64))
    return cpu_unsupported(reason, rs, "Gather: indices must be int32 or int64");
  return AXLE_HAL_OK;
}

static int64_t index_at(const void* idx, int32_t dtype, int64_t k) {
  return dtype == AXLE_HAL_DTYPE_I64 ? ((const int64_t*)idx)[k] : ((const int32_t*)idx)[k];
}

static int32_t prepare_gather(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* idx = step->in[1];
  const axle_hal_tensor_t* y = step->out[0];
  const int64_t axis = norm_axis(cpu_attr_int(step->node, "axis", 0), x->rank);
  if (axis < 0 || axis >= (int64_t)x->rank) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axis out of range");
  gather_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->es = axle_hal_dtype_size(x->dtype);
  p->index_dtype = idx->dtype;
  p->axis_n = x->shape[axis];
  p->count = elements(idx);
  int64_t outer = 1;
  p->inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x->shape[d];
  for (uint32_t d = (uint32_t)axis + 1; d < x->rank; ++d) p->inner *= x->shape[d];
  if (elements(y) != outer * p->count * p->inner)
    return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output size disagrees with data and indices");
  if (idx->data) {
    for (int64_t k = 0; k < p->count; ++k) {
      const int64_t v = index_at(idx->data, idx->dtype, k);
      if (v < -p->axis_n || v >= p->axis_n)
        return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "constant index out of range");
    }
  }
  const int64_t shape[2] = {outer, p->inner};
  const int64_t dst[2] = {p->count * p->inner, 1}, src[2] = {p->axis_n * p->inner, 1};
  const int64_t none[2] = {0, 0};
  axle_nd_t* plans[2] = {&p->slice, &p->zero};
  for (int k = 0; k < 2; ++k) {
    plans[k]->rank = 2;
    plans[k]->ops = 2;
    for (int d = 0; d < 2; ++d) {
      plans[k]->shape[d] = shape[d];
      plans[k]->stride[0][d] = dst[d];
      plans[k]->stride[1][d] = k ? none[d] : src[d];
    }
    axle_nd_simplify(plans[k]);
  }
  return AXLE_HAL_OK;
}

static void run_gather(const cpu_step_t* step, const void* const* in, void* const* out,
                       void* scratch) {
  (void)scratch;
  const gather_params_t* p = step->params;
  const char* x = cpu_step_input_data(step, in, 0);
  const void* idx = cpu_step_input_data(step, in, 1);
  char* y = out[0];
  const ptrdiff_t es = (ptrdiff_t)p->es;
  for (int64_t k = 0; k < p->count; ++k) {
    int64_t v = index_at(idx, p->index_dtype, k);
    if (v < 0) v += p->axis_n;
    char* dst = y + k * p->inner * es;
    if (v < 0 || v >= p->axis_n)
      axle_strided_copy_scalar(&p->zero, p->es, dst, p->zero_value);
    else
      axle_strided_copy_scalar(&p->slice, p->es, dst, x + v * p->inner * es);
  }
}

/* ------------------------------------------------------------------------ */
/* Range                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct range_params_t {
  axle_range_fn fn;
  size_t n;
} range_params_t;

static int32_t check_arith(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                           size_t rs) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (!x || !arith(x->dtype))
    return cpu_unsupported(reason, rs, "%s: dtype %s not supported (float32/64, 8- to 64-bit integers)",
                           n->op_type, x ? cpu_dtype_name(x->dtype) : "none");
  return AXLE_HAL_OK;
}

static int32_t prepare_range(const axle_hal_host_t* host, cpu_step_t* step) {
  const arith_kernels_t* k = arith(step->out[0]->dtype);
  if (!k || step->input_count != 3) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype");
  range_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->fn = k->range;
  p->n = (size_t)elements(step->out[0]);
  return AXLE_HAL_OK;
}

static void run_range(const cpu_step_t* step, const void* const* in, void* const* out,
                      void* scratch) {
  (void)scratch;
  const range_params_t* p = step->params;
  p->fn(cpu_step_input_data(step, in, 0), cpu_step_input_data(step, in, 2), out[0], p->n);
}

/* ------------------------------------------------------------------------ */
/* ReduceMean, ReduceSum, ReduceMax                                          */
/* ------------------------------------------------------------------------ */

typedef struct reduce_params_t {
  axle_nd_t walk;              /* operand 0 = y (stride 0 on reduced axes), 1 = x */
  axle_nd_t fill;              /* y <- identity */
  axle_reduce_fn red;
  axle_binary_fn acc;
  axle_binary_fn div;          /* ReduceMean */
  size_t es, out_n;
  size_t copy_bytes;           /* noop_with_empty_axes: plain copy */
  _Alignas(8) unsigned char identity[8];
  _Alignas(8) unsigned char divisor[8];
} reduce_params_t;

/* ReduceMax of bool is "any", which the uint8 max computes on 0/1 bytes. */
static int32_t reduce_dtype(const char* op_type, int32_t dtype) {
  return dtype == AXLE_HAL_DTYPE_BOOL && !strcmp(op_type, "ReduceMax") ? AXLE_HAL_DTYPE_U8 : dtype;
}

static int32_t check_reduce(const axle_hal_graph_t* g, const axle_hal_node_t* n, char* reason,
                            size_t rs) {
  const axle_hal_tensor_t* x = cpu_node_input(g, n, 0);
  if (!x || !arith(reduce_dtype(n->op_type, x->dtype)))
    return cpu_unsupported(reason, rs, "%s: dtype %s not supported (float32/64, 8- to 64-bit integers)",
                           n->op_type, x ? cpu_dtype_name(x->dtype) : "none");
  return AXLE_HAL_OK;
}

static int32_t prepare_reduce(const axle_hal_host_t* host, cpu_step_t* step) {
  const axle_hal_tensor_t* x = step->in[0];
  const axle_hal_tensor_t* y = step->out[0];
  const char* op = step->node->op_type;
  const int32_t dtype = reduce_dtype(op, x->dtype);
  const arith_kernels_t* k = arith(dtype);
  const int is_max = !strcmp(op, "ReduceMax"), is_mean = !strcmp(op, "ReduceMean");
  if (!k || y->dtype != x->dtype) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "unsupported dtype");
  const uint32_t r = x->rank;
  int64_t axes[MAXR];
  /* Axes: attribute before opset 13 (ReduceSum) / 18 (the others), then an
   * optional constant input. */
  const int na = ints_arg(step, "axes", 1, axes, MAXR);
  if (na < 0) return cpu_step_fail(host, step, AXLE_HAL_UNSUPPORTED, "axes must be constant integers");
  reduce_params_t* p = cpu_step_params(host, step, sizeof *p);
  if (!p) return AXLE_HAL_OUT_OF_MEMORY;
  p->es = axle_hal_dtype_size(x->dtype);
  p->out_n = (size_t)elements(y);
  if (na == 0 && cpu_attr_int(step->node, "noop_with_empty_axes", 0)) {
    if (elements(y) != elements(x)) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output size differs");
    p->copy_bytes = p->out_n * p->es;
    return AXLE_HAL_OK;
  }
  uint32_t reduced = 0;
  for (int i = 0; i < na; ++i) {
    const int64_t a = norm_axis(axes[i], r);
    if (a < 0 || a >= (int64_t)r) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "axis out of range");
    reduced |= 1u << a;
  }
  if (na == 0) reduced = (1u << r) - 1u;
  /* y's strides: row-major over the kept axes, 0 on reduced ones. The same
   * layout serves keepdims = 0 and 1. */
  int64_t s = 1, count = 1;
  p->walk.rank = r;
  p->walk.ops = 2;
  axle_nd_contiguous_strides(r, x->shape, p->walk.stride[1]);
  for (uint32_t d = r; d-- > 0;) {
    p->walk.shape[d] = x->shape[d];
    if ((reduced >> d) & 1u) {
      p->walk.stride[0][d] = 0;
      count *= x->shape[d];
    } else {
      p->walk.stride[0][d] = s;
      s *= x->shape[d];
    }
  }
  if (s != elements(y)) return cpu_step_fail(host, step, AXLE_HAL_INVALID_MODEL, "output size disagrees with axes");
  axle_nd_simplify(&p->walk);
  p->fill.rank = 1;
  p->fill.ops = 2;
  p->fill.shape[0] = (int64_t)p->out_n;
  p->fill.stride[0][0] = 1;
  p->red = is_max ? k->max : k->sum;
  p->acc = is_max ? k->maxb : k->add;
  /* Identity: 0 for sums; -inf for max, which the saturating cast turns into
   * the lowest integer. An empty reduction therefore yields it, as ONNX
   * specifies. */
  const double ident = is_max ? -INFINITY : 0.0;
  convert(AXLE_HAL_DTYPE_F64, &ident, dtype, p->identity);
  if (is_mean) {
    p->div = k->div;
    convert(AXLE_HAL_DTYPE_I64, &count, dtype, p->divisor);
  }
  return AXLE_HAL_OK;
}

static void run_reduce(const cpu_step_t* step, const void* const* in, void* const* out,
                       void* scratch) {
  (void)scratch;
  const reduce_params_t* p = step->params;
  if (p->copy_bytes) {
    axle_copy_bytes_scalar(out[0], in[0], p->copy_bytes);
    return;
  }
  axle_strided_copy_scalar(&p->fill, p->es, out[0], p->identity);
  axle_nd_reduce_scalar(&p->walk, p->red, p->acc, p->es, out[0], in[0]);
  if (p->div) p->div(out[0], 1, p->divisor, 0, out[0], p->out_n);
}

/* ------------------------------------------------------------------------ */
/* Op table                                                                  */
/* ------------------------------------------------------------------------ */

const cpu_op_t cpu_ops_layout[] = {
    {"Flatten", check_sized, prepare_reshape, run_prog},
    {"Reshape", check_sized, prepare_reshape, run_prog},
    {"Squeeze", check_sized, prepare_reshape, run_prog},
    {"Unsqueeze", check_sized, prepare_reshape, run_prog},
    {"Transpose", check_sized, prepare_transpose, run_prog},
    {"Slice", check_sized, prepare_slice, run_prog},
    {"Concat", check_sized, prepare_concat, run_prog},
    {"Split", check_sized, prepare_split, run_prog},
    {"Pad", check_pad, prepare_pad, run_prog},
    {"Expand", check_sized, prepare_expand, run_prog},
    {"Tile", check_sized, prepare_tile, run_prog},
    {"Constant", check_constant, prepare_constant, run_prog},
    {"ConstantOfShape", check_constant_of_shape, prepare_constant_of_shape, run_prog},
    {"Shape", check_shape, prepare_shape, run_prog},
    {"Gather", check_gather, prepare_gather, run_gather},
    {"Range", check_arith, prepare_range, run_range},
    {"ReduceMean", check_reduce, prepare_reduce, run_reduce},
    {"ReduceSum", check_reduce, prepare_reduce, run_reduce},
    {"ReduceMax", check_reduce, prepare_reduce, run_reduce},
    {NULL, NULL, NULL, NULL},
};
