"""Blocks of drawn shapes against ONNX Runtime and the exact integer reference.

The other agreement tests (test_ort_agreement.py, test_qdq.py) check each
fusion on the shapes it was written for. The CPU plugin's plans also follow
the sizes: band heights and the last, shorter band; channel parts; partial
and narrow GEMM tiles; Winograd's tile and its edges; depthwise row groups
and masked column tails. So these models put many blocks of drawn shapes
side by side (independent inputs and outputs, so one `axle run` checks them
all), from fixed seeds, with odd sizes on purpose:

- inverted residual blocks (1x1 expansion, depthwise 3x3 at stride 1 or 2,
  1x1 projection, residual Add where the shapes allow), on maps large
  enough to chain in bands, on small maps with more channels than pixels
  (channels-last chains) and in between; a stem-like 3x3 stride-2
  expansion among them;
- ResNet-like blocks: two 3x3 convolutions and a shortcut, a grouped
  convolution, a 7x7 stride-2 stem with 3x3 max pooling, a global average
  pooling and Gemm head;
- the inverted residual blocks quantized (quantize_static: QDQ, per-channel
  int8 weights, uint8 activations), which must give the integer
  reference's bits.

Each runs at every kernel level and on 1 and 2 threads, with the L2 size set
to 512 KiB (CHAIN_ENV) so that the chains form on any machine; the fusions
under test must appear in `axle info --optimized`, so a rule change that
skips them fails here instead of passing untested.

Environment: AXLE_CLI (the axle tool; ctest sets it).
"""
from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

import qdq_reference
from test_ort_agreement import (CHAIN_ENV, IR_VERSION, OPSET, GraphBuilder, assert_agree,
                                dispatch_level, each_isa_level, fused_steps, isa_env, needs_cli,
                                run_axle, run_cli)


class Branches(GraphBuilder):
    """A model of independent branches, each from its own input (x0, x1,
    ...) to its own output; nodes and weights as GraphBuilder makes them.
    first: the first node of each drawn block, by kind (a fused step is
    named after its first node)."""

    def __init__(self, seed):
        super().__init__(seed)
        self.inputs, self.outputs = [], []
        self.shapes = {}
        self.first = {}

    def conv_act(self, x, cin, cout, k, stride=1, group=1, act=None):
        """A Conv with a bias, then act: "relu6", "relu" or None."""
        y = self.conv(x, cin, cout, k, stride=stride, group=group, bias=True)
        if act == "relu6":
            return self.relu6(y)
        return self.node("Relu", [y]) if act == "relu" else y

    def branch(self, shape):
        name = f"x{len(self.inputs)}"
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.shapes[name] = tuple(shape)
        return name

    def end(self, y):
        self.outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, None))

    def branches_model(self, name):
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="axle-tests")
        m.ir_version = IR_VERSION
        # The outputs' shapes, which the checker wants, from shape inference.
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True).graph.output
        for out, shaped in zip(m.graph.output, inferred):
            out.CopyFrom(shaped)
        onnx.checker.check_model(m)
        return m

    def feeds(self, seed):
        rng = np.random.default_rng(seed)
        return {n: rng.normal(0.0, 1.0, s).astype(np.float32) for n, s in self.shapes.items()}


def inverted_residual(b, x, c, expand, stride, out, stem=False):
    """expand -> depthwise 3x3 -> project, with the residual Add where the
    shapes allow it (and the draw wants it). A stem expands with a 3x3
    stride-2 convolution instead of a 1x1 one."""
    acts = ("relu6", "relu6", "relu", None)
    start = len(b.nodes)
    if stem:
        h = b.conv_act(x, c, expand, 3, stride=2, act="relu6")
    else:
        h = b.conv_act(x, c, expand, 1, act=acts[b.rng.integers(len(acts))])
    first = b.nodes[start].name
    h = b.conv_act(h, expand, expand, 3, stride=stride, group=expand,
               act=acts[b.rng.integers(len(acts))])
    y = b.conv_act(h, expand, out, 1)
    if stride == 1 and out == c and not stem and b.rng.random() < 0.75:
        y = b.node("Add", [y, x])
    return first, y


def draw_inverted_residuals(b, branches):
    """Shapes by kind: 'band' expands one image past 1 MiB (the least a band
    chain takes) with rows narrow enough for bands of 4 under CHAIN_ENV,
    'small' has fewer pixels than expanded channels (channels-last), 'mid'
    lies between, 'stem' a 3x3 stride-2 expansion."""
    r = b.rng
    for kind in branches:
        n = int(r.choice([1, 2]))
        c = int(r.integers(3, 33))
        if kind == "band":
            expand, w = int(r.integers(56, 65)), int(r.integers(56, 69))
            h = -(-(1 << 20) // (4 * expand * w)) + int(r.integers(0, 9))
        elif kind == "small":
            h, w = int(r.integers(3, 15)), int(r.integers(3, 15))
            expand = int(r.integers(h * w + 1, h * w + 321))
        elif kind == "mid":
            h, w = int(r.integers(15, 48)), int(r.integers(15, 48))
            expand = int(r.integers(8, 201))
        else:  # stem
            c, h, w = 3, int(r.integers(126, 150)), int(r.integers(126, 150))
            expand = int(r.integers(64, 81))
        stride = 1 if kind == "stem" else int(r.choice([1, 2]))
        out = int(r.choice([c, int(r.integers(4, 97))]))
        x = b.branch((n, c, h, w))
        name, y = inverted_residual(b, x, c, expand, stride, out, stem=kind == "stem")
        b.first.setdefault(kind, []).append(name)
        b.end(y)


def build_random_inverted_residuals():
    b = Branches(seed=20261127)
    draw_inverted_residuals(b, ["band", "band", "band", "stem", "small", "small", "small",
                                "mid", "mid", "mid"])
    return b


def build_random_resnet_blocks():
    b = Branches(seed=20261128)
    r = b.rng
    for kind in ["basic", "basic", "basic", "grouped", "stem", "stem", "head"]:
        n = int(r.choice([1, 2]))
        group = 2 if kind == "grouped" else 1
        c = int(r.integers(1, 25)) * group
        h, w = int(r.integers(3, 41)), int(r.integers(3, 41))
        if kind == "stem":
            h, w = int(r.integers(100, 131)), int(r.integers(100, 131))
        x = b.branch((n, c, h, w))
        if kind == "stem":
            # Outputs past half of CHAIN_ENV's L2, so that the pooling joins.
            y = b.conv_act(x, c, int(r.integers(32, 65)), 7, stride=2, act="relu")
            y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        elif kind == "head":
            y = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
            f = int(r.integers(1, 400))
            wf = r.normal(0.0, np.sqrt(1.0 / c), (f, c)).astype(np.float32)
            bf = r.normal(0.0, 0.1, f).astype(np.float32)
            y = b.node("Gemm", [y, b.init("fc_w", wf), b.init("fc_b", bf)], transB=1)
        else:
            out = int(r.choice([c, int(r.integers(2, 81)) * group]))
            stride = int(r.choice([1, 2]))
            y = b.conv_act(x, c, out, 3, stride=stride, group=group, act="relu")
            y = b.conv_act(y, out, out, 3)
            shortcut = x if stride == 1 and out == c else b.conv_act(x, c, out, 1, stride=stride)
            y = b.node("Relu", [b.node("Add", [y, shortcut])])
        b.end(y)
    return b


_built = {}


def built(tmp_path_factory, name, build):
    """(path, Branches) of a model built once per session."""
    if name not in _built:
        b = build()
        path = str(tmp_path_factory.mktemp("random") / (name + ".onnx"))
        onnx.save(b.branches_model(name), path)
        _built[name] = (path, b)
    return _built[name]


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_random_inverted_residuals_match_ort(tmp_path_factory, tmp_path, threads, isa):
    path, b = built(tmp_path_factory, "random_inverted_residuals",
                    build_random_inverted_residuals)
    env = isa_env(isa, CHAIN_ENV)
    chained, listing = fused_steps(path, "ConvChain", ("--threads", threads), env)
    # The band blocks chain at every level; the stem's im2col expansion
    # from AVX2 up, and the small maps channels-last on one thread from AVX2
    # up (kernels/f32/conv_chain.c). The others may or may not.
    want = list(b.first["band"])
    if dispatch_level(isa) >= 1:
        want += b.first["stem"] + (b.first["small"] if threads == 1 else [])
    assert set(want) <= set(chained), listing
    assert_agree(path, b.feeds(31), tmp_path, ("--threads", threads), env)


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_random_resnet_blocks_match_ort(tmp_path_factory, tmp_path, threads, isa):
    path, b = built(tmp_path_factory, "random_resnet_blocks", build_random_resnet_blocks)
    env = isa_env(isa, CHAIN_ENV)
    pooled, listing = fused_steps(path, "ConvPool", ("--threads", threads), env)
    assert len(pooled) == 2, listing
    assert_agree(path, b.feeds(37), tmp_path, ("--threads", threads), env)


def build_random_qdq(directory):
    """The inverted residual draw, smaller (quantize_static calibrates on
    every tensor), quantized; returns (path, feeds)."""
    b = Branches(seed=20261129)
    draw_inverted_residuals(b, ["band", "stem", "small", "small", "mid", "mid", "mid"])
    src, dst = os.path.join(directory, "f.onnx"), os.path.join(directory, "q.onnx")
    onnx.save(b.branches_model("random_qdq"), src)

    class Samples(CalibrationDataReader):
        def __init__(self):
            self.it = iter(b.feeds(s) for s in (1, 2, 3))

        def get_next(self):
            return next(self.it, None)

    quantize_static(src, dst, Samples(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return dst, b.feeds(41)


@pytest.fixture(scope="module")
def random_qdq(tmp_path_factory):
    return build_random_qdq(str(tmp_path_factory.mktemp("random_qdq")))


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_random_qdq_blocks_match_integer_reference(random_qdq, tmp_path, threads, isa):
    path, feeds = random_qdq
    env = isa_env(isa, CHAIN_ENV)
    info = run_cli("info", path, "--optimized", "--threads", threads, env=env)
    assert info.returncode == 0, info.stderr
    # The steps the plugin runs ("    name Op [shape]"): every convolution
    # on the integer kernels, none left to the float ops.
    ops = re.findall(r"^ {4}\S+ (\S+) \[", info.stdout, re.M)
    assert "Conv" not in ops and any(op.startswith("QConv") for op in ops), info.stdout
    model = onnx.load(path)
    want = qdq_reference.evaluate(model, feeds)
    got = run_axle(path, feeds, tmp_path, ("--threads", threads), env)
    for out in model.graph.output:
        w, g = want[out.name], got[out.name]
        assert g.shape == w.shape, f"{out.name}: shape {g.shape}, reference {w.shape}"
        diff = np.flatnonzero(g != w)
        assert diff.size == 0, (
            f"{out.name}: {diff.size} of {w.size} values differ from the integer reference, "
            f"first at flat index {diff[0]} (axle {g.flat[diff[0]]!r}, reference "
            f"{w.flat[diff[0]]!r})")
