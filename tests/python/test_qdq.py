"""QDQ models on the CPU plugin's integer kernels.

A small random-weight CNN (3x3 stride-2 conv + Relu, depthwise 3x3 + Clip(0,6),
1x1 conv, residual Add, GlobalAveragePool, Gemm) is quantized with ONNX
Runtime's quantize_static (QDQ, per channel, uint8 activations, int8 weights).
Axle must give the same bits as the exact integer reference
(qdq_reference.py), be within one quantisation step of ONNX Runtime with graph
optimisations disabled, and report the integer steps (`axle info --optimized`)
so that a silent fallback to the float ops fails. Patterns it must not take
(uint8 weights, weight zero points, fusion switched off) must still give the
float graph's values, within one step; malformed scales must fail cleanly or
fall back, never crash.

Environment: AXLE_CLI (the axle tool; ctest sets it).
"""
from __future__ import annotations

import os
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

import qdq_reference
from test_ort_agreement import (IR_VERSION, OPSET, each_isa_level, isa_env, needs_cli, run_axle,
                                run_cli)

X_SHAPE = (1, 3, 32, 32)


def build_float_cnn():
    rng = np.random.default_rng(20240611)
    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def conv(x, cin, cout, k, name, stride=1, group=1):
        fan_in = cin // group * k * k
        w = rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        b = rng.normal(0.0, 0.1, cout)
        nodes.append(helper.make_node(
            "Conv", [x, init(name + "_w", w.astype(np.float32)),
                     init(name + "_b", b.astype(np.float32))], [name],
            name=name, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4,
            group=group))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    init("clip_lo", np.array(0.0, np.float32))
    init("clip_hi", np.array(6.0, np.float32))
    x = node("Relu", [conv("input", 3, 16, 3, "conv_s2", stride=2)], "relu")
    h = node("Clip", [conv(x, 16, 16, 3, "conv_dw", group=16), "clip_lo", "clip_hi"], "relu6")
    h = conv(h, 16, 16, 1, "conv_pw")
    s = node("Add", [x, h], "residual")
    s = node("GlobalAveragePool", [s], "gap")
    s = node("Flatten", [s], "flatten", axis=1)
    w = rng.normal(0.0, 0.25, (10, 16)).astype(np.float32)
    nodes.append(helper.make_node("Gemm", [s, init("fc_w", w), init(
        "fc_b", rng.normal(0.0, 0.1, 10).astype(np.float32))], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "qdq_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, X_SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="axle-tests")
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)
    return m


class Samples(CalibrationDataReader):
    def __init__(self):
        self.it = iter([{"input": sample(100 + i)} for i in range(4)])

    def get_next(self):
        return next(self.it, None)


def sample(seed, shape=X_SHAPE):
    return np.random.default_rng(seed).normal(0.0, 1.0, shape).astype(np.float32)


def quantized(tmp, per_channel=True, weight_type=QuantType.QInt8):
    src, dst = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "qdq.onnx")
    onnx.save(build_float_cnn(), src)
    quantize_static(src, dst, Samples(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QUInt8, weight_type=weight_type)
    return expose(onnx.load(dst), ["residual"])


def consumers(m, tensor):
    return [n for n in m.graph.node if tensor in n.input]


def producer(m, tensor):
    return next(n for n in m.graph.node if tensor in n.output)


def named(m, name):
    return next(n for n in m.graph.node if n.name == name)


def expose(m, node_names):
    """Adds the dequantized outputs of the named nodes as graph outputs, so
    the test sees those integer steps directly. (The DequantizeLinear nodes
    then run for the caller as well.)"""
    for name in node_names:
        q = consumers(m, named(m, name).output[0])[0]
        dq = consumers(m, q.output[0])[0]
        assert (q.op_type, dq.op_type) == ("QuantizeLinear", "DequantizeLinear")
        m.graph.output.append(
            helper.make_tensor_value_info(dq.output[0], TensorProto.FLOAT, None))
    return m


def set_init(m, name, value):
    t = next(i for i in m.graph.initializer if i.name == name)
    t.CopyFrom(numpy_helper.from_array(np.asarray(value, t_dtype(t)), name))


def t_dtype(t):
    return onnx.helper.tensor_dtype_to_np_dtype(t.data_type)


def with_activations(m):
    """quantize_static drops a Relu / Clip that its QuantizeLinear's range
    already implies. Put a Relu and a Clip back between a Conv and its
    QuantizeLinear, with bounds that bite: the Relu's QuantizeLinear gets a
    zero point of 20 (so Q(0) = 20), the Clip keeps [0.1, 1.0]."""
    m.graph.initializer.extend([numpy_helper.from_array(np.array(0.1, np.float32), "act_lo"),
                                numpy_helper.from_array(np.array(1.0, np.float32), "act_hi")])
    for conv, op, extra in (("conv_s2", "Relu", []), ("conv_dw", "Clip", ["act_lo", "act_hi"])):
        y = named(m, conv).output[0]
        q = consumers(m, y)[0]
        assert q.op_type == "QuantizeLinear", q.op_type
        if op == "Relu":
            set_init(m, q.input[2], 20)
        act_out = conv + "_act"
        q.input[0] = act_out
        idx = list(m.graph.node).index(q)
        m.graph.node.insert(idx, helper.make_node(op, [y, *extra], [act_out],
                                                  name=conv + "_" + op.lower()))
    return m


def save(m, tmp, name):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def ort_no_opt(path, feeds):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def output_scales(m):
    """Per graph output: the scale of the DequantizeLinear writing it."""
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    return {o.name: float(inits[producer(m, o.name).input[1]]) for o in m.graph.output}


def optimized_steps(path, env=None, extra=()):
    proc = run_cli("info", path, "--optimized", *extra, env=env)
    assert proc.returncode == 0, proc.stderr
    return [ln.split()[1] for ln in proc.stdout.split("partition 0 on cpu runs:")[1].splitlines()
            if ln.startswith("    ")]


def max_steps(got, want, scale):
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def check_against_reference(m, path, tmp, exact, shape=X_SHAPE, env=None, extra=()):
    """Axle's outputs for three inputs (extra: more `axle run` arguments):
    bit-identical to the integer reference (exact) or within one step of
    the float reference."""
    scales = output_scales(m)
    for seed in (1, 2, 3):
        feeds = {"input": sample(seed, shape)}
        got = run_axle(path, feeds, tmp, extra, env)
        ref = qdq_reference.evaluate(m, feeds, integer=exact)
        for name, want in ref.items():
            if exact:
                assert np.array_equal(got[name].view(np.uint32), want.view(np.uint32)), (
                    f"{name}, input seed {seed}: {max_steps(got[name], want, scales[name])} "
                    "steps from the integer reference")
            else:
                assert max_steps(got[name], want, scales[name]) <= 1.0, (
                    f"{name}, input seed {seed}")
    return got


# ---------------------------------------------------------------------------


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("activations", [False, True], ids=["as_quantized", "with_activations"])
def test_qdq_cnn_is_exact(tmp_path, activations, threads, isa):
    env, extra = isa_env(isa), ("--threads", threads)
    m = quantized(str(tmp_path))
    m = with_activations(m) if activations else expose(m, ["conv_s2", "conv_dw", "conv_pw"])
    path = save(m, str(tmp_path), "model")
    steps = optimized_steps(path, env, extra)
    assert steps.count("QConv[u8]") == 3 and steps.count("QAdd[u8]") == 1, steps
    assert steps.count("QGemm[u8]") == 1, steps
    assert not {"Conv", "Add", "Gemm"} & set(steps), steps
    check_against_reference(m, path, tmp_path, exact=True, env=env, extra=extra)
    # ONNX Runtime without graph optimisations runs the float ops; the
    # integer path differs from it by rounding only.
    scales = output_scales(m)
    feeds = {"input": sample(1)}
    got = run_axle(path, feeds, tmp_path, extra, env)
    for name, want in ort_no_opt(path, feeds).items():
        assert max_steps(got[name], want, scales[name]) <= 1.0, name


@needs_cli
def test_per_tensor_weights_fuse(tmp_path):
    m = quantized(str(tmp_path), per_channel=False)
    path = save(m, str(tmp_path), "per_tensor")
    assert optimized_steps(path).count("QConv[u8]") == 3
    check_against_reference(m, path, tmp_path, exact=True)


@needs_cli
def test_uint8_weights_fall_back(tmp_path):
    m = quantized(str(tmp_path), weight_type=QuantType.QUInt8)
    path = save(m, str(tmp_path), "u8_weights")
    steps = optimized_steps(path)
    assert "QConv[u8]" not in steps and steps.count("Conv") == 3, steps
    check_against_reference(m, path, tmp_path, exact=False)


@needs_cli
def test_weight_zero_point_falls_back(tmp_path):
    m = quantized(str(tmp_path))
    dq = producer(m, named(m, "conv_pw").input[1])
    set_init(m, dq.input[2], np.full(16, 3))
    path = save(m, str(tmp_path), "weight_zp")
    steps = optimized_steps(path)
    assert steps.count("QConv[u8]") == 2 and steps.count("Conv") == 1, steps
    check_against_reference(m, path, tmp_path, exact=True)


@needs_cli
def test_fusion_off_runs_the_float_ops(tmp_path, monkeypatch):
    m = with_activations(quantized(str(tmp_path)))
    path = save(m, str(tmp_path), "model")
    monkeypatch.setenv("AXLE_CPU_FUSION", "0")
    steps = optimized_steps(path)
    assert "QConv[u8]" not in steps and steps.count("Conv") == 3, steps
    check_against_reference(m, path, tmp_path, exact=False)


@needs_cli
def test_calibration_keeps_intermediates(tmp_path):
    """--calibrate compiles with AXLE_HAL_COMPILE_KEEP_INTERMEDIATES (no
    fusion) and reads every float intermediate; the run after it is fused."""
    m = quantized(str(tmp_path))
    path = save(m, str(tmp_path), "model")
    calib = tmp_path / "calib.npy"
    np.save(str(calib), np.stack([sample(10), sample(11)]))
    feeds = {"input": sample(1)}
    got = run_axle(path, feeds, tmp_path, extra=("--calibrate", calib))
    for name, want in qdq_reference.evaluate(m, feeds).items():
        assert np.array_equal(got[name].view(np.uint32), want.view(np.uint32)), name


@needs_cli
@pytest.mark.parametrize("case", ["zero", "nan", "negative", "wrong_length"])
def test_malformed_scales(tmp_path, case):
    m = quantized(str(tmp_path))
    conv = named(m, "conv_pw")
    if case == "wrong_length":
        set_init(m, producer(m, conv.input[1]).input[1], np.full(5, 0.01))
    else:
        value = {"zero": 0.0, "nan": np.nan, "negative": -0.05}[case]
        set_init(m, consumers(m, conv.output[0])[0].input[1], value)
    path = save(m, str(tmp_path), case)
    x = tmp_path / "x.npy"
    np.save(str(x), sample(1))
    proc = run_cli("run", path, "--input", f"input={x}")
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr}"
    if case == "wrong_length":
        assert proc.returncode == 1 and re.search(r"axle: .*scale", proc.stderr), proc.stderr
        assert producer(m, conv.input[1]).name in proc.stderr, proc.stderr
    else:
        # Not an integer pattern: the QuantizeLinear runs as a float op.
        assert proc.returncode == 0, proc.stderr
        steps = optimized_steps(path)
        assert steps.count("QConv[u8]") == 2, steps


# An expansion and the depthwise Conv after it, its output large enough
# (64 channels of 64x64, 256 KiB) for the plugin to run the two as one
# QConvPair step, then a projection.
PAIR_SHAPE = (1, 8, 64, 64)


def pair_model(tmp, residual=False):
    """residual: the expanded tensor is also added to the depthwise output
    (through the same DequantizeLinear, as quantize_static writes it)."""
    rng = np.random.default_rng(20261126)
    inits, nodes = [], []

    def conv(x, cin, cout, k, name, group=1):
        w = rng.normal(0.0, np.sqrt(2.0 / (cin // group * k * k)), (cout, cin // group, k, k))
        inits.extend([numpy_helper.from_array(w.astype(np.float32), name + "_w"),
                      numpy_helper.from_array(rng.normal(0.0, 0.1, cout).astype(np.float32),
                                              name + "_b")])
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name,
                                      kernel_shape=[k, k], pads=[k // 2] * 4, group=group))
        return name

    h = conv("input", 8, 64, 1, "expand")
    nodes.append(helper.make_node("Relu", [h], ["expand_relu"], name="expand_relu"))
    h = conv("expand_relu", 64, 64, 3, "depthwise", group=64)
    if residual:
        nodes.append(helper.make_node("Add", ["expand_relu", h], ["sum"], name="sum"))
        h = "sum"
    conv(h, 64, 8, 1, "project")
    graph = helper.make_graph(
        nodes, "qdq_pair", [helper.make_tensor_value_info("input", TensorProto.FLOAT, PAIR_SHAPE)],
        [helper.make_tensor_value_info("project", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="axle-tests")
    m.ir_version = IR_VERSION
    src, dst = os.path.join(tmp, "pair_float.onnx"), os.path.join(tmp, "pair_qdq.onnx")
    onnx.save(m, src)

    class PairSamples(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": sample(200 + i, PAIR_SHAPE)} for i in range(4)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(src, dst, PairSamples(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return onnx.load(dst)


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reader", ["none", "caller", "qadd"],
                         ids=["paired", "expansion_read_by_caller", "expansion_read_by_qadd"])
def test_expansion_depthwise_pair_is_exact(tmp_path, reader, threads, isa):
    """Paired, the two QConvs give the integer reference's bits; with the
    expanded tensor read by the caller, or by a QAdd through the depthwise
    Conv's own DequantizeLinear, they stay two steps (the pair never writes
    that tensor)."""
    m = pair_model(str(tmp_path), residual=reader == "qadd")
    if reader == "caller":
        m = expose(m, ["expand"])
    path = save(m, str(tmp_path), "pair")
    steps = optimized_steps(path, isa_env(isa), ("--threads", threads))
    want = {"QConvPair[u8]": 1, "QConv[u8]": 1, "QAdd[u8]": 0}
    if reader != "none":
        want = {"QConvPair[u8]": 0, "QConv[u8]": 3, "QAdd[u8]": 1 if reader == "qadd" else 0}
    assert {k: steps.count(k) for k in want} == want, steps
    check_against_reference(m, path, tmp_path, exact=True, shape=PAIR_SHAPE, env=isa_env(isa),
                            extra=("--threads", threads))

