"""Exact integer reference for QDQ ONNX models, in numpy (independent of Axle).

    outputs = evaluate(model, {"input": x})                  # integer patterns
    outputs = evaluate(model, {"input": x}, integer=False)   # every node in float

With integer=True the patterns an integer runtime runs on uint8 kernels
produce their QuantizeLinear output by the arithmetic contract of
kernels/include/axle_kernels_qu8.h:

  Conv:  DequantizeLinear(x: uint8, per tensor) -> Conv(DequantizeLinear(
         constant int8 W, zero point 0, per tensor or per channel on axis 0),
         DequantizeLinear(constant int32 B, zero point 0, scale exactly
         x_scale * w_scale) or none) -> optional Relu / Clip -> QuantizeLinear
         (per tensor, uint8):
           acc = B[c] + sum (x - x_zp) * W          (int64, padding reads x_zp)
           y = clamp(rint(float32(acc) * s[c]) + y_zp, Q(lo), Q(hi))
         with s[c] = (x_scale * w_scale[c]) / y_scale in float32.
  Gemm:  the same around Gemm(A [M, K], B [N, K], transB = 1, alpha = beta =
         1), i.e. a 1x1 convolution of M one-pixel images.
  Add:   DequantizeLinear(a), DequantizeLinear(b) (uint8, per tensor, same
         shape) -> Add -> optional Relu / Clip -> QuantizeLinear: the float32
         ops one after the other (which is already exact).

Every other node runs as plain float32 numpy per the ONNX spec; the ops
implemented are those of the test and benchmark models (Conv, Gemm, MatMul,
Relu, Clip, Add, GlobalAveragePool, Flatten, Reshape, QuantizeLinear,
DequantizeLinear, Constant). Convolutions are 2-D.
"""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

MAX_K = 65536  # channels x kernel volume the int32 sums are exact for


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _f32(v):
    return np.float32(v)


# ---------------------------------------------------------------------------
# Float ops (ONNX semantics, float32 results)


def quantize(x, scale, zp, axis=1):
    """QuantizeLinear: saturate(rint(x / scale) + zp), round half to even."""
    zp = np.zeros((), np.uint8) if zp is None else np.asarray(zp)
    scale = np.asarray(scale, np.float32)
    if scale.size > 1:
        shape = [1] * x.ndim
        shape[axis % x.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    info = np.iinfo(zp.dtype)
    v = np.rint(x.astype(np.float32) / scale) + zp.astype(np.float32)
    v = np.where(np.isnan(v), zp.astype(np.float32), v)
    return np.clip(v, info.min, info.max).astype(zp.dtype)


def dequantize(x, scale, zp, axis=1):
    """DequantizeLinear: float32(x - zp) * scale."""
    scale = np.asarray(scale, np.float32)
    zp = np.zeros((), np.int64) if zp is None else np.asarray(zp).astype(np.int64)
    if scale.size > 1:
        shape = [1] * x.ndim
        shape[axis % x.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (x.astype(np.int64) - zp).astype(np.float32) * scale


def _pads(node, x_shape, w_shape):
    a = _attrs(node)
    k = a.get("kernel_shape", list(w_shape[2:]))
    s = a.get("strides", [1, 1])
    d = a.get("dilations", [1, 1])
    pads = list(a.get("pads", [0, 0, 0, 0]))
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(2):
            out = -(-x_shape[2 + i] // s[i])
            total = max(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - x_shape[2 + i])
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads[i], pads[2 + i] = lo, total - lo
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    return k, s, d, pads, a.get("group", 1)


def _conv_taps(x, w_shape, k, s, d, pads, fill):
    """x [N, C, H, W] padded with fill -> windows [N, C, kh, kw, OH, OW]."""
    n, c, h, wd = x.shape
    xp = np.full((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), fill, x.dtype)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - (k[0] - 1) * d[0] - 1) // s[0] + 1
    ow = (xp.shape[3] - (k[1] - 1) * d[1] - 1) // s[1] + 1
    taps = np.empty((n, c, k[0], k[1], oh, ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            taps[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + (oh - 1) * s[0] + 1:s[0],
                                  j * d[1]:j * d[1] + (ow - 1) * s[1] + 1:s[1]]
    return taps


def _grouped_conv(taps, w, group, acc_dtype):
    """sum over channels and taps per group: taps [N, C, kh, kw, OH, OW],
    w [M, C/group, kh, kw] -> [N, M, OH, OW] in acc_dtype."""
    n, c = taps.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    out = np.empty((n, m) + taps.shape[4:], acc_dtype)
    for gi in range(group):
        t = taps[:, gi * cg:(gi + 1) * cg].astype(acc_dtype)
        wg = w[gi * mg:(gi + 1) * mg].astype(acc_dtype)
        out[:, gi * mg:(gi + 1) * mg] = np.einsum("nckluv,mckl->nmuv", t, wg)
    return out


def conv_f32(node, x, w, b=None):
    k, s, d, pads, group = _pads(node, x.shape, w.shape)
    taps = _conv_taps(x.astype(np.float32), w.shape, k, s, d, pads, np.float32(0))
    y = _grouped_conv(taps, w, group, np.float64)
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def _clip_bounds(node, values, opset):
    if opset < 11:
        a = _attrs(node)
        return _f32(a.get("min", -np.inf)), _f32(a.get("max", np.inf))
    lo = values[node.input[1]] if len(node.input) > 1 and node.input[1] else -np.inf
    hi = values[node.input[2]] if len(node.input) > 2 and node.input[2] else np.inf
    return _f32(lo), _f32(hi)


def _gemm(node, a, b, c=None):
    at = _attrs(node)
    if at.get("transA", 0):
        a = a.T
    if at.get("transB", 0):
        b = b.T
    y = at.get("alpha", 1.0) * (a.astype(np.float64) @ b.astype(np.float64))
    if c is not None:
        y = y + at.get("beta", 1.0) * c
    return y.astype(np.float32)


def _float_op(node, ins, values, opset):
    op, a = node.op_type, _attrs(node)
    if op == "Conv":
        return conv_f32(node, *ins)
    if op == "Gemm":
        return _gemm(node, *ins)
    if op == "MatMul":
        return np.matmul(ins[0].astype(np.float64), ins[1].astype(np.float64)).astype(np.float32)
    if op == "Relu":
        return np.maximum(ins[0], np.float32(0))
    if op == "Clip":
        lo, hi = _clip_bounds(node, values, opset)
        return np.minimum(np.maximum(ins[0], lo), hi)
    if op == "Add":
        return (ins[0] + ins[1]).astype(np.float32)
    if op == "GlobalAveragePool":
        axes = tuple(range(2, ins[0].ndim))
        return ins[0].astype(np.float64).mean(axis=axes, keepdims=True).astype(np.float32)
    if op == "Flatten":
        axis = a.get("axis", 1)
        x = ins[0]
        return x.reshape(int(np.prod(x.shape[:axis])), -1)
    if op == "Reshape":
        shape = [int(v) for v in ins[1]]
        shape = [ins[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
        return ins[0].reshape(shape)
    if op == "QuantizeLinear":
        return quantize(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("axis", 1))
    if op == "DequantizeLinear":
        return dequantize(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("axis", 1))
    raise NotImplementedError(f"qdq_reference: op {op} (node {node.name})")


# ---------------------------------------------------------------------------
# Integer patterns


class _Graph:
    def __init__(self, model):
        g = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          13)
        self.consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        for n in g.node:
            if n.op_type == "Constant":
                self.consts[n.output[0]] = numpy_helper.to_array(_attrs(n)["value"])
        self.nodes = [n for n in g.node if n.op_type != "Constant"]
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.uses = {}
        for n in self.nodes:
            for t in n.input:
                self.uses[t] = self.uses.get(t, 0) + 1
        for o in g.output:
            self.uses[o.name] = self.uses.get(o.name, 0) + 1_000_000  # never fused over
        self.outputs = [o.name for o in g.output]

    def sole(self, t):
        """The node writing t when t has exactly one reader."""
        return self.producer.get(t) if self.uses.get(t, 0) == 1 else None

    def dq(self, t):
        n = self.producer.get(t)
        return n if n is not None and n.op_type == "DequantizeLinear" else None

    def const(self, t):
        return self.consts.get(t) if t else None


def _per_tensor_u8(g, node):
    """(scale, zp) of a per-tensor uint8 Q/DQ node, or None."""
    if _attrs(node).get("block_size", 0):
        return None
    s = g.const(node.input[1])
    z = g.const(node.input[2]) if len(node.input) > 2 else None
    if s is None or s.dtype != np.float32 or s.size != 1 or not (np.isfinite(s) and s > 0).all():
        return None
    if z is not None and (z.dtype != np.uint8 or z.size != 1):
        return None
    return _f32(s.reshape(())), int(z.reshape(())) if z is not None else 0


def _scales(g, node, count):
    s = g.const(node.input[1])
    if (s is None or s.dtype != np.float32 or s.size != count or s.ndim > 1
            or not (np.isfinite(s) & (s > 0)).all()):
        return None
    return s.reshape(-1)


def _zero_point_zero(g, node, dtype, count):
    if len(node.input) < 3 or not node.input[2]:
        return True
    z = g.const(node.input[2])
    return z is not None and z.dtype == dtype and z.size == count and not z.any()


def _act_bounds(g, act, y_scale, y_zp):
    if act is None:
        return 0, 255
    if act.op_type == "Relu":
        lo, hi = _f32(0), _f32(np.inf)
    else:
        if g.opset >= 11 and any(t and t not in g.consts for t in act.input[1:]):
            return None
        lo, hi = _clip_bounds(act, g.consts, g.opset)
        if np.isnan(lo) or np.isnan(hi) or lo > hi:
            return None
    q = quantize(np.array([lo, hi], np.float32), y_scale, np.uint8(y_zp))
    return int(q[0]), int(q[1])


def _match(g, q):
    """The integer pattern ending in QuantizeLinear q, or None."""
    if len(q.input) < 2:
        return None
    out = _per_tensor_u8(g, q)
    if out is None:
        return None
    n, act = g.sole(q.input[0]), None
    if n is not None and n.op_type in ("Relu", "Clip"):
        act, n = n, g.sole(n.input[0])
    if n is None or n.op_type not in ("Conv", "Gemm", "Add"):
        return None
    if n.op_type == "Gemm":
        a = _attrs(n)
        if (a.get("transA", 0) != 0 or a.get("transB", 0) != 1 or a.get("alpha", 1.0) != 1.0
                or a.get("beta", 1.0) != 1.0):
            return None
    bounds = _act_bounds(g, act, *out)
    if bounds is None:
        return None
    pat = {"op": n, "y": out, "bounds": bounds}
    if n.op_type == "Add":
        dqs = [g.dq(t) for t in n.input]
        if len(dqs) != 2 or None in dqs:
            return None
        qs = [_per_tensor_u8(g, d) for d in dqs]
        if None in qs:
            return None
        pat.update(kind="add", inputs=[d.input[0] for d in dqs], q=qs)
        return pat
    dx, dw = g.dq(n.input[0]), g.dq(n.input[1])
    db = g.dq(n.input[2]) if len(n.input) > 2 and n.input[2] else None
    if dx is None or dw is None or (len(n.input) > 2 and n.input[2] and db is None):
        return None
    xq = _per_tensor_u8(g, dx)
    w = g.const(dw.input[0])
    rank = 4 if n.op_type == "Conv" else 2
    if xq is None or w is None or w.dtype != np.int8 or w.ndim != rank:
        return None
    m = w.shape[0]
    sw = g.const(dw.input[1])
    count = 1 if sw is not None and sw.size == 1 else m
    axis = _attrs(dw).get("axis", 1)
    if (count != 1 and axis % w.ndim != 0) or _attrs(dw).get("block_size", 0):
        return None
    w_scale = _scales(g, dw, count)
    if w_scale is None or not _zero_point_zero(g, dw, np.int8, count):
        return None
    w_scale = np.broadcast_to(w_scale, (m,))
    if w[0].size > MAX_K:
        return None
    bias = np.zeros(m, np.int64)
    if db is not None:
        b = g.const(db.input[0])
        sb = g.const(db.input[1])
        bcount = 1 if sb is not None and sb.size == 1 else m
        b_scale = _scales(g, db, bcount)
        if (b is None or b.dtype != np.int32 or b.shape != (m,) or b_scale is None
                or not _zero_point_zero(g, db, np.int32, bcount)):
            return None
        want = (xq[0] * w_scale).astype(np.float32)
        if not np.array_equal(np.broadcast_to(b_scale, (m,)).view(np.uint32), want.view(np.uint32)):
            return None
        bias = b.astype(np.int64)
    pat.update(kind=n.op_type.lower(), inputs=[dx.input[0]], x=xq, w=w.astype(np.int64),
               bias=bias,
               scale=((xq[0] * w_scale).astype(np.float32) / out[0]).astype(np.float32))
    return pat


def _int_conv(pat, xq):
    """Conv or Gemm by the contract (channels on axis 1 either way)."""
    x_zp = pat["x"][1]
    x = xq.astype(np.int64) - x_zp
    if pat["kind"] == "gemm":
        acc = x @ pat["w"].T + pat["bias"].reshape(1, -1)
    else:
        k, s, d, pads, group = _pads(pat["op"], xq.shape, pat["w"].shape)
        taps = _conv_taps(x, pat["w"].shape, k, s, d, pads, np.int64(0))
        acc = _grouped_conv(taps, pat["w"], group, np.int64) + pat["bias"].reshape(1, -1, 1, 1)
    assert np.abs(acc).max(initial=0) < 2**31, "accumulator outside int32"
    scale = pat["scale"].reshape((1, -1) + (1,) * (acc.ndim - 2))
    v = np.rint(acc.astype(np.int32).astype(np.float32) * scale) + np.float32(pat["y"][1])
    lo, hi = pat["bounds"]
    return np.clip(v, lo, hi).astype(np.uint8)


def _int_add(pat, a, b):
    (sa, za), (sb, zb) = pat["q"]
    v = dequantize(a, sa, np.int64(za)) + dequantize(b, sb, np.int64(zb))
    y_scale, y_zp = pat["y"]
    r = np.rint(v / y_scale) + np.float32(y_zp)
    lo, hi = pat["bounds"]
    return np.clip(r, lo, hi).astype(np.uint8)


def evaluate(model, feeds, integer=True):
    """The graph outputs (name -> array) for feeds (name -> array)."""
    g = _Graph(model)
    patterns = {}
    if integer:
        for n in g.nodes:
            if n.op_type == "QuantizeLinear":
                pat = _match(g, n)
                if pat is not None:
                    patterns[n.output[0]] = pat
    # The float nodes inside a pattern (their outputs have one reader, in
    # the pattern) run only if the pattern cannot take its inputs.
    inner = {}
    for q_out, pat in patterns.items():
        chain = [pat["op"]]
        act = g.sole(g.producer[q_out].input[0])
        if act is not pat["op"]:
            chain.append(act)
        for n in chain:
            inner[n.output[0]] = chain
    values = dict(g.consts)
    values.update(feeds)

    def run_float(n):
        ins = [values[t] if t else None for t in n.input]
        while ins and ins[-1] is None:
            ins.pop()
        values[n.output[0]] = _float_op(n, ins, values, g.opset)

    for n in g.nodes:
        if n.output[0] in inner:
            continue
        pat = patterns.get(n.output[0])
        if pat is not None:
            xs = [values[t] for t in pat["inputs"]]
            if all(x.dtype == np.uint8 for x in xs) and (
                    pat["kind"] != "add" or xs[0].shape == xs[1].shape):
                values[n.output[0]] = (_int_add(pat, *xs) if pat["kind"] == "add"
                                       else _int_conv(pat, xs[0]))
                continue
            for m in inner[pat["op"].output[0]]:
                run_float(m)
        run_float(n)
    return {name: values[name] for name in g.outputs}
