"""Axle's CPU plugin against ONNX Runtime on whole networks, and the axle CLI
on bad input.

Networks (built here with onnx.helper and fixed numpy seeds, cached in a
per-session temp dir): a MobileNetV2-shaped and a ResNet-18-shaped model with
random weights, plus the digits example model on its sample inputs. Each runs
through ONNX Runtime (CPUExecutionProvider) and through
`axle run --save-outputs`; the maximum absolute difference must be at most
1e-4 times the largest magnitude of ONNX Runtime's output.

Bad input: every case must end with exit code 1 (never a signal), with an
"axle:" message on stderr naming what is wrong.

Environment: AXLE_CLI (the axle tool; tests skip without it), AXLE_SOURCE_DIR
(project root; default: two levels above this file).
"""
from __future__ import annotations

import glob
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

AXLE_CLI = os.environ.get("AXLE_CLI")
SOURCE_DIR = os.environ.get("AXLE_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPSET = 13
IR_VERSION = 8
REL_TOL = 1e-4
CLI_TIMEOUT_S = 300

needs_cli = pytest.mark.skipif(
    not AXLE_CLI or not os.access(AXLE_CLI, os.X_OK),
    reason="AXLE_CLI does not name the axle executable (ctest sets it)")

# The kernel levels a test runs at: the best this CPU has, and capped at
# AVX2 + FMA (what an AVX2-only CPU such as Zen 3 runs) and at the portable
# scalar kernels (what a CPU without AVX2 runs), so that every level's
# kernels, plans and fusions meet end to end whatever CPU the tests run on.
# A cap above what the CPU has changes nothing.
each_isa_level = pytest.mark.parametrize("isa", [None, "avx2", "scalar"],
                                         ids=["best_isa", "avx2", "scalar"])


def isa_env(isa, env=None):
    """env (or nothing) plus the AXLE_KERNELS_ISA cap isa (None: no cap)."""
    if isa is None:
        return env
    return dict(env or {}, AXLE_KERNELS_ISA=isa)


# ---------------------------------------------------------------------------
# Model building


class GraphBuilder:
    """Collects nodes and initializers; names are unique and readable."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.counter = {}

    def name(self, prefix):
        self.counter[prefix] = self.counter.get(prefix, 0) + 1
        return f"{prefix}{self.counter[prefix]}"

    def init(self, prefix, array):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), n))
        return n

    def node(self, op, inputs, prefix=None, **attrs):
        n = self.name(prefix or op.lower())
        out = n + "_out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=n, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, group=1, bias=False):
        fan_in = cin // group * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        ins = [x, self.init("w", w.astype(np.float32))]
        if bias:
            ins.append(self.init("b", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2] * 4, group=group)

    def bn(self, x, c):
        r = self.rng
        ins = [x,
               self.init("gamma", r.uniform(0.5, 1.5, c).astype(np.float32)),
               self.init("beta", r.normal(0.0, 0.1, c).astype(np.float32)),
               self.init("mean", r.uniform(0.0, 0.5, c).astype(np.float32)),
               self.init("var", r.uniform(0.5, 2.0, c).astype(np.float32))]
        return self.node("BatchNormalization", ins, prefix="bn", epsilon=1e-5)

    def relu6(self, x):
        if not hasattr(self, "_clip_bounds"):
            self._clip_bounds = (self.init("clip_min", np.array(0.0, np.float32)),
                                 self.init("clip_max", np.array(6.0, np.float32)))
        return self.node("Clip", [x, *self._clip_bounds], prefix="relu6_")

    def gemm(self, x, cin, cout):
        w = self.rng.normal(0.0, np.sqrt(1.0 / cin), (cout, cin)).astype(np.float32)
        b = self.rng.normal(0.0, 0.1, cout).astype(np.float32)
        return self.node("Gemm", [x, self.init("fc_w", w), self.init("fc_b", b)],
                         prefix="fc", transB=1)

    def model(self, name, x_name, x_shape, y, y_shape):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(x_name, TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)],
            initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="axle-tests")
        m.ir_version = IR_VERSION
        onnx.checker.check_model(m)
        return m


def build_mobilenet_v2():
    g = GraphBuilder(seed=20240601)
    x = g.relu6(g.bn(g.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    # (expansion t, channels c, repeats n, first stride s), as in the paper.
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            h = x
            if t != 1:
                h = g.relu6(g.bn(g.conv(h, cin, hidden, 1), hidden))
            h = g.relu6(g.bn(g.conv(h, hidden, hidden, 3, stride=stride, group=hidden), hidden))
            h = g.bn(g.conv(h, hidden, c, 1), c)
            if stride == 1 and cin == c:
                h = g.node("Add", [x, h], prefix="residual")
            x, cin = h, c
    x = g.relu6(g.bn(g.conv(x, cin, 1280, 1), 1280))
    x = g.node("GlobalAveragePool", [x], prefix="gap")
    x = g.node("Reshape", [x, g.init("flat_shape", np.array([1, -1], np.int64))],
               prefix="flatten")
    y = g.gemm(x, 1280, 1000)
    return g.model("mobilenet_v2_shaped", "input", [1, 3, 224, 224], y, [1, 1000])


def build_resnet18():
    g = GraphBuilder(seed=20240602)
    x = g.node("Relu", [g.bn(g.conv("input", 3, 64, 7, stride=2), 64)])
    x = g.node("MaxPool", [x], prefix="maxpool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    for c, s in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for i in range(2):
            stride = s if i == 0 else 1
            h = g.node("Relu", [g.bn(g.conv(x, cin, c, 3, stride=stride), c)])
            h = g.bn(g.conv(h, c, c, 3), c)
            shortcut = x
            if stride != 1 or cin != c:
                shortcut = g.bn(g.conv(x, cin, c, 1, stride=stride), c)
            x = g.node("Relu", [g.node("Add", [shortcut, h], prefix="residual")])
            cin = c
    x = g.node("GlobalAveragePool", [x], prefix="gap")
    x = g.node("Flatten", [x], axis=1)
    y = g.gemm(x, 512, 1000)
    return g.model("resnet18_shaped", "input", [1, 3, 224, 224], y, [1, 1000])


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


_built = {}


def built_model(model_dir, name, builder):
    """Path of the model, built once per session."""
    if name not in _built:
        path = os.path.join(str(model_dir), name + ".onnx")
        onnx.save(builder(), path)
        _built[name] = path
    return _built[name]


# ---------------------------------------------------------------------------
# Running


def run_cli(*args, timeout=CLI_TIMEOUT_S, env=None):
    """The axle tool with args; env: variables to add to this process's."""
    full_env = dict(os.environ, **env) if env else None
    return subprocess.run([AXLE_CLI, *[str(a) for a in args]], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=timeout, env=full_env)


def run_ort(model_path, feeds):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def run_axle(model_path, feeds, work_dir, extra=(), env=None):
    """Outputs of `axle run` by name (feeds are written as .npy)."""
    args = ["run", model_path, *extra]
    for i, (name, arr) in enumerate(feeds.items()):
        path = os.path.join(str(work_dir), f"in{i}.npy")
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    out_dir = os.path.join(str(work_dir), "outputs")
    args += ["--save-outputs", out_dir]
    proc = run_cli(*args, env=env)
    assert proc.returncode == 0, (
        f"axle run failed (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    outputs = {}
    with open(os.path.join(out_dir, "outputs.txt"), encoding="utf-8") as f:
        for line in f:
            name, _, fname = line.rstrip("\n").partition("\t")
            if name:
                outputs[name] = np.load(os.path.join(out_dir, fname), allow_pickle=False)
    return outputs


def assert_agree(model_path, feeds, work_dir, extra=(), env=None):
    want = run_ort(model_path, feeds)
    got = run_axle(model_path, feeds, work_dir, extra, env)
    assert set(got) == set(want), f"outputs {sorted(got)} != ORT's {sorted(want)}"
    for name, w in want.items():
        g = got[name]
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, ORT {w.dtype}"
        assert g.shape == w.shape, f"{name}: shape {g.shape}, ORT {w.shape}"
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        assert np.all(np.isfinite(w)), f"{name}: ORT output not finite; model badly scaled"
        assert scale > 0.0, f"{name}: ORT output is all zeros; the test would be vacuous"
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        worst = int(np.argmax(err))
        max_err = float(err.flat[worst])
        assert max_err <= REL_TOL * scale, (
            f"{name}: max abs err {max_err:.3g} at flat index {worst} "
            f"(axle {g.flat[worst]!r}, ORT {w.flat[worst]!r}) exceeds "
            f"{REL_TOL:g} x output scale {scale:.4g}")
    return want, got


# ---------------------------------------------------------------------------
# Agreement with ONNX Runtime


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name,builder", [("mobilenet_v2", build_mobilenet_v2),
                                          ("resnet18", build_resnet18)])
def test_network_matches_ort(name, builder, model_dir, tmp_path, threads, isa):
    """The plans differ by thread count (MobileNetV2's small-map blocks
    chain channels-last on one thread, split by parts on two)."""
    path = built_model(model_dir, name, builder)
    x = np.random.default_rng(7).normal(0.0, 1.0, (1, 3, 224, 224)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, ("--threads", threads), isa_env(isa))


def build_inverted_residuals():
    """Three MobileNetV2 blocks on a batch of 2, each expanding to 64 x 64x64
    (1 MiB, the least a chain takes): stride 1 with the residual Add, stride
    1 with an expansion of Conv + Clip (batch norm folded, as exported models
    have it), and stride 2 whose projection is a Conv alone."""
    g = GraphBuilder(seed=20240603)
    x = g.relu6(g.bn(g.conv("input", 3, 8, 3), 8))
    h = g.relu6(g.bn(g.conv(x, 8, 64, 1), 64))
    h = g.relu6(g.bn(g.conv(h, 64, 64, 3, group=64), 64))
    x = g.node("Add", [x, g.bn(g.conv(h, 64, 8, 1), 8)], prefix="residual")
    h = g.relu6(g.conv(x, 8, 64, 1, bias=True))
    h = g.relu6(g.bn(g.conv(h, 64, 64, 3, group=64), 64))
    x = g.bn(g.conv(h, 64, 16, 1), 16)
    h = g.relu6(g.bn(g.conv(x, 16, 64, 1), 64))
    h = g.relu6(g.bn(g.conv(h, 64, 64, 3, stride=2, group=64), 64))
    y = g.conv(h, 64, 16, 1, bias=True)
    return g.model("inverted_residuals", "input", [2, 3, 64, 64], y, [2, 16, 32, 32])


# The chains (cpu_chain.h) form where the expanded tensor is past half the
# L2 and bands get at least 4 rows; this L2 size gives bands of 4 rows (16
# per image) on any machine.
CHAIN_ENV = {"AXLE_KERNELS_L2_BYTES": "524288"}


def fused_steps(path, op, extra=(), env=None):
    """The first node of each `op` step (ConvChain, ConvPool) that `axle
    info --optimized` lists for the model, and that listing."""
    info = run_cli("info", path, "--optimized", *extra, env=env)
    assert info.returncode == 0, info.stderr
    return re.findall(r"^\s+(\S+) " + op + " ", info.stdout, re.M), info.stdout


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_inverted_residual_chains_match_ort(model_dir, tmp_path, threads, isa):
    path = built_model(model_dir, "inverted_residuals", build_inverted_residuals)
    env = isa_env(isa, CHAIN_ENV)
    chained, listing = fused_steps(path, "ConvChain", ("--threads", threads), env)
    assert chained == ["conv2", "conv5", "conv8"], listing
    x = np.random.default_rng(11).normal(0.0, 1.0, (2, 3, 64, 64)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, ("--threads", threads), env)


def build_stem_chain():
    """MobileNetV2's stem on a batch of 2: a 3x3 stride-2 Conv (3 -> 64, to
    64x64: 1 MiB, the least a chain takes), its depthwise layer and the
    projection, which chain with an im2col expansion."""
    g = GraphBuilder(seed=20261126)
    x = g.relu6(g.bn(g.conv("input", 3, 64, 3, stride=2), 64))
    x = g.relu6(g.bn(g.conv(x, 64, 64, 3, group=64), 64))
    y = g.bn(g.conv(x, 64, 16, 1), 16)
    return g.model("stem_chain", "input", [2, 3, 128, 128], y, [2, 16, 64, 64])


def dispatch_level(isa=None):
    """The float kernels' ISA level here: 0 scalar, 1 AVX2 + FMA (with or
    without AVX-VNNI, which only the int8 kernels use), 2 AVX-512 (what the
    CPU has, capped by isa, else by AXLE_KERNELS_ISA)."""
    try:
        with open("/proc/cpuinfo") as f:
            found = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
    except OSError:
        found = None
    flags = set(found.group(1).split()) if found else set()
    avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}
    level = 2 if avx512 <= flags else 1 if {"avx2", "fma"} <= flags else 0
    cap = {"scalar": 0, "avx2": 1, "avx2vnni": 1}.get(isa or os.environ.get("AXLE_KERNELS_ISA"), 2)
    return min(level, cap)


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_stem_chain_matches_ort(model_dir, tmp_path, threads, isa):
    path = built_model(model_dir, "stem_chain", build_stem_chain)
    env = isa_env(isa, CHAIN_ENV)
    chained, listing = fused_steps(path, "ConvChain", ("--threads", threads), env)
    # An im2col expansion chains with AVX2 and above (kernels/f32/conv_chain.c).
    assert chained == (["conv1"] if dispatch_level(isa) >= 1 else []), listing
    x = np.random.default_rng(13).normal(0.0, 1.0, (2, 3, 128, 128)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, ("--threads", threads), env)


def build_small_map_blocks():
    """MobileNetV2's 14x14 and 7x7 kind of block on a batch of 2: expanded
    maps with fewer pixels than channels, which chain channels-last on one
    thread (kernels/f32/conv_chain.c): stride 1 with the residual Add,
    stride 2 down to 7x7, and a 7x7 block with its residual."""
    g = GraphBuilder(seed=20261127)
    x = g.bn(g.conv("input", 16, 16, 1), 16)
    h = g.relu6(g.bn(g.conv(x, 16, 256, 1), 256))
    h = g.relu6(g.bn(g.conv(h, 256, 256, 3, group=256), 256))
    x = g.node("Add", [x, g.bn(g.conv(h, 256, 16, 1), 16)], prefix="residual")
    h = g.relu6(g.bn(g.conv(x, 16, 256, 1), 256))
    h = g.relu6(g.bn(g.conv(h, 256, 256, 3, stride=2, group=256), 256))
    x = g.bn(g.conv(h, 256, 24, 1), 24)
    h = g.relu6(g.bn(g.conv(x, 24, 96, 1), 96))
    h = g.relu6(g.bn(g.conv(h, 96, 96, 3, group=96), 96))
    y = g.node("Add", [x, g.bn(g.conv(h, 96, 24, 1), 24)], prefix="residual")
    return g.model("small_map_blocks", "input", [2, 16, 14, 14], y, [2, 24, 7, 7])


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_channels_last_chains_match_ort(model_dir, tmp_path, threads, isa):
    path = built_model(model_dir, "small_map_blocks", build_small_map_blocks)
    env = isa_env(isa)
    chained, listing = fused_steps(path, "ConvChain", ("--threads", threads), env)
    # Channels-last chains run on one thread, with AVX2 or above; on two
    # only where the projection reads the depthwise output in place, its
    # output channels whole tiles: conv2's 16 with AVX2's 16-wide tiles,
    # none with AVX-512's 32-wide ones.
    level = dispatch_level(isa)
    if threads == 1:
        want = ["conv2", "conv5", "conv8"] if level >= 1 else []
    else:
        want = ["conv2"] if level == 1 else []
    assert chained == want, listing
    x = np.random.default_rng(17).normal(0.0, 1.0, (2, 16, 14, 14)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, ("--threads", threads), env)


def build_inverted_residuals_with_taps():
    """The blocks above with two tensors inside chains also read from
    outside: the first block's expanded tensor is a graph output, and the
    second block's depthwise output also feeds a ReduceMean output. Neither
    may be folded away."""
    m = build_inverted_residuals()
    g = m.graph
    g.output.append(helper.make_tensor_value_info("relu6_2_out", TensorProto.FLOAT,
                                                  [2, 64, 64, 64]))
    g.node.append(helper.make_node("ReduceMean", ["relu6_5_out"], ["tap_mean"],
                                   name="tap", keepdims=0))
    g.output.append(helper.make_tensor_value_info("tap_mean", TensorProto.FLOAT, []))
    onnx.checker.check_model(m)
    return m


@needs_cli
def test_chains_keep_tensors_read_elsewhere(model_dir, tmp_path):
    path = built_model(model_dir, "inverted_residuals_taps", build_inverted_residuals_with_taps)
    chained, listing = fused_steps(path, "ConvChain", (), CHAIN_ENV)
    assert chained == ["conv8"], listing
    x = np.random.default_rng(12).normal(0.0, 1.0, (2, 3, 64, 64)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, (), CHAIN_ENV)


def build_conv_pools():
    """Conv -> MaxPool pairs on a batch of 2: ResNet's stem (7x7 stride 2,
    batch norm, Relu; 3x3 stride-2 pooling with padding), a 5x5 Conv with a
    bias and Relu before a 2x2 pooling (their outputs 480 and 288 KB, past
    half of CHAIN_ENV's L2), and a pair the kernels leave alone: a pooling
    that also returns its indices."""
    g = GraphBuilder(seed=20241126)
    x = g.node("Relu", [g.bn(g.conv("input", 3, 40, 7, stride=2), 40)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = g.node("Relu", [g.conv(x, 40, 96, 5, bias=True)])
    x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.conv(x, 96, 64, 3)
    n = g.name("maxpool")
    g.nodes.append(helper.make_node("MaxPool", [x], [n + "_out", n + "_idx"], name=n,
                                    kernel_shape=[2, 2], strides=[2, 2]))
    m = g.model("conv_pools", "input", [2, 3, 128, 96], n + "_out", [2, 64, 8, 6])
    m.graph.output.append(helper.make_tensor_value_info(n + "_idx", TensorProto.INT64,
                                                        [2, 64, 8, 6]))
    onnx.checker.check_model(m)
    return m


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_pools_match_ort(model_dir, tmp_path, threads, isa):
    path = built_model(model_dir, "conv_pools", build_conv_pools)
    env = isa_env(isa, CHAIN_ENV)
    pooled, listing = fused_steps(path, "ConvPool", ("--threads", threads), env)
    assert pooled == ["conv1", "conv2"], listing
    x = np.random.default_rng(13).normal(0.0, 1.0, (2, 3, 128, 96)).astype(np.float32)
    assert_agree(path, {"input": x}, tmp_path, ("--threads", threads), env)


def build_elementwise_ops():
    """The standalone elementwise ops, activations and softmaxes, on tensors
    large enough (2 x 8 x 64 x 64 = 65536 elements) for the CPU plugin to
    split them over 2 threads: arithmetic with a broadcast channel vector and
    a broadcast scalar, variadic Max and Sum, every activation with an ISA
    variant, Softmax along the last axis (contiguous rows) and LogSoftmax
    along a middle one (columns down the axis)."""
    rng = np.random.default_rng(20241127)
    bias = numpy_helper.from_array(rng.normal(0, 1, (1, 8, 1, 1)).astype(np.float32), "bias")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    lo = numpy_helper.from_array(np.array(-1.5, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(2.0, np.float32), "hi")
    n = helper.make_node
    nodes = [
        n("Sigmoid", ["x"], ["sig"], name="sigmoid"),
        n("Tanh", ["x"], ["th"], name="tanh"),
        n("Add", ["sig", "bias"], ["sb"], name="add_bias"),
        n("Mul", ["th", "sb"], ["m"], name="mul"),
        n("HardSwish", ["x"], ["hs"], name="hard_swish"),
        n("LeakyRelu", ["x"], ["lr"], name="leaky", alpha=0.1),
        n("Min", ["hs", "lr"], ["mn"], name="min"),
        n("Sub", ["m", "mn"], ["d"], name="sub"),
        n("Clip", ["x", "lo", "hi"], ["cl"], name="clip"),
        n("Exp", ["cl"], ["ex"], name="exp"),
        n("Div", ["d", "ex"], ["q"], name="div"),
        n("HardSigmoid", ["x"], ["hsg"], name="hard_sigmoid"),
        n("Relu", ["x"], ["r"], name="relu"),
        n("Abs", ["x"], ["ab"], name="abs"),
        n("Neg", ["ab"], ["ng"], name="neg"),
        n("Max", ["q", "hsg", "ng"], ["mx"], name="max3"),
        n("Mul", ["r", "half"], ["rh"], name="mul_scalar"),
        n("Sum", ["mx", "rh", "x"], ["y_arith"], name="sum3"),
        n("Softmax", ["x"], ["y_softmax"], name="softmax", axis=-1),
        n("LogSoftmax", ["x"], ["y_logsoftmax"], name="logsoftmax", axis=1),
    ]
    shape = [2, 8, 64, 64]
    graph = helper.make_graph(
        nodes, "elementwise_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, shape)
         for y in ("y_arith", "y_softmax", "y_logsoftmax")],
        initializer=[bias, half, lo, hi])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])  # HardSwish
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)
    return m


@needs_cli
@each_isa_level
@pytest.mark.parametrize("threads", [1, 2])
def test_elementwise_ops_match_ort(model_dir, tmp_path, threads, isa):
    path = built_model(model_dir, "elementwise_ops", build_elementwise_ops)
    x = np.random.default_rng(17).normal(0.0, 2.0, (2, 8, 64, 64)).astype(np.float32)
    x.flat[::97] = 0.0  # exact zeros and the activations' kinks
    assert_agree(path, {"x": x}, tmp_path, ("--threads", threads), isa_env(isa))


DIGITS_DIR = os.path.join(SOURCE_DIR, "examples", "digits")
DIGITS_MODEL = os.path.join(DIGITS_DIR, "digits.onnx")
DIGITS_SAMPLES = sorted(glob.glob(os.path.join(DIGITS_DIR, "samples", "*.npy")))


@needs_cli
@pytest.mark.skipif(not os.path.isfile(DIGITS_MODEL),
                    reason=f"{DIGITS_MODEL} is absent (examples/digits not built yet)")
@pytest.mark.parametrize("sample", DIGITS_SAMPLES or ["<none>"],
                         ids=[os.path.basename(p) for p in DIGITS_SAMPLES] or ["none"])
def test_digits_matches_ort(sample, tmp_path):
    if not os.path.isfile(sample):
        pytest.skip(f"no sample inputs in {DIGITS_DIR}/samples")
    model = onnx.load(DIGITS_MODEL)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    assert len(inputs) == 1, f"digits model has inputs {inputs}"
    x = np.load(sample)
    assert_agree(DIGITS_MODEL, {inputs[0]: x}, tmp_path)


# ---------------------------------------------------------------------------
# Bad input through the CLI


def small_conv_model():
    """x [1,3,16,16] -> Conv (conv0) -> Relu (relu0) -> y."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "conv0_w")
    b = numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "conv0_b")
    nodes = [helper.make_node("Conv", ["x", "conv0_w", "conv0_b"], ["h"], name="conv0",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["y"], name="relu0")]
    graph = helper.make_graph(
        nodes, "small_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])],
        initializer=[w, b])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


def two_input_model():
    """a, b [2,3] -> Add (add0) -> y."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add0")], "two_inputs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


def claimed_ops():
    path = os.path.join(SOURCE_DIR, "tests", "onnx", "claimed_ops.txt")
    if not os.path.isfile(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {ln.strip() for ln in f if ln.strip()}


def unsupported_op_model(op_type, node_name):
    """x [2,3,3] -> Relu (relu0) -> <op_type> (node_name) -> y."""
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="relu0"),
             helper.make_node(op_type, ["h"], ["y"], name=node_name)]
    graph = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


@pytest.fixture
def files(tmp_path):
    """Writes the small models and matching inputs into tmp_path."""
    conv = tmp_path / "small_conv.onnx"
    onnx.save(small_conv_model(), str(conv))
    two = tmp_path / "two_inputs.onnx"
    onnx.save(two_input_model(), str(two))
    x = tmp_path / "x.npy"
    np.save(str(x), np.random.default_rng(1).normal(size=(1, 3, 16, 16)).astype(np.float32))
    a = tmp_path / "a.npy"
    np.save(str(a), np.ones((2, 3), np.float32))
    return {"dir": tmp_path, "conv": str(conv), "two": str(two), "x": str(x), "a": str(a)}


def word(w):
    """Pattern for w as a whole word (so input "x" does not match "axle")."""
    return r"(?<![A-Za-z0-9_])" + re.escape(w) + r"(?![A-Za-z0-9_])"


def assert_clean_failure(proc, *patterns):
    """Exit 1, no signal, an "axle:" message matching one of the regex patterns
    (case-insensitive)."""
    detail = f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
    assert proc.returncode >= 0, f"axle was killed by signal {-proc.returncode}: {detail}"
    assert proc.returncode == 1, f"expected exit code 1: {detail}"
    assert "axle:" in proc.stderr, f"no 'axle:' message: {detail}"
    assert any(re.search(p, proc.stderr, re.IGNORECASE) for p in patterns), (
        f"stderr matches none of {patterns}: {detail}")


@needs_cli
def test_valid_small_model_runs(files):
    """The baseline the bad-input cases below are variations of."""
    out = files["dir"] / "out"
    proc = run_cli("run", files["conv"], "--input", f"x={files['x']}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "outputs.txt").is_file()


def _parses(data):
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception:
        return False
    return True


@needs_cli
@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999])
def test_truncated_model(files, fraction):
    data = open(files["conv"], "rb").read()
    cut = int(len(data) * fraction)
    if fraction > 0.0:
        cut = max(cut, 1)
        # Move to a cut the protobuf parser rejects (some byte boundaries end a
        # field cleanly and leave a well-formed, if incomplete, message).
        while cut < len(data) - 1 and _parses(data[:cut]):
            cut += 1
    path = files["dir"] / f"truncated_{cut}.onnx"
    path.write_bytes(data[:cut])
    proc = run_cli("run", path, "--input", f"x={files['x']}")
    assert_clean_failure(proc, word(path.name), "truncat", "empty", "no graph")


def _corruptions(data):
    """(label, bytes) pairs of structurally broken models."""
    out = [("garbage_header", b"\xff" * 16 + data[16:]),
           ("text_file", b"this is not an ONNX model\n" * 10)]
    # A length prefix made huge: the graph field (tag 0x3a = field 7, wire type 2).
    i = data.find(b"\x3a")
    if i >= 0:
        out.append(("huge_length", data[:i + 1] + b"\xff\xff\xff\xff\x0f" + data[i + 2:]))
    # Every 3rd byte flipped among the first nodes (GraphProto serialises its
    # nodes first, right after the graph field's tag and length).
    if i >= 0:
        b = bytearray(data)
        for k in range(i + 3, min(i + 63, len(b)), 3):
            b[k] ^= 0x5a
        out.append(("flipped_bytes", bytes(b)))
    return out


@needs_cli
@pytest.mark.parametrize("label", ["garbage_header", "text_file", "huge_length",
                                   "flipped_bytes"])
def test_corrupted_model(files, label):
    data = open(files["conv"], "rb").read()
    corrupted = dict(_corruptions(data))
    if label not in corrupted:
        pytest.skip(f"{label}: no such spot in this model")
    path = files["dir"] / f"corrupted_{label}.onnx"
    path.write_bytes(corrupted[label])
    proc = run_cli("run", path, "--input", f"x={files['x']}")
    assert_clean_failure(proc, word(path.name), word("conv0"), word("relu0"),
                         word("conv0_w"), word("conv0_b"))


@needs_cli
def test_initializer_size_mismatch(files):
    """A well-formed protobuf whose initializer holds fewer bytes than its dims say."""
    m = small_conv_model()
    w = m.graph.initializer[0]
    w.raw_data = w.raw_data[: len(w.raw_data) // 2]
    path = files["dir"] / "short_initializer.onnx"
    path.write_bytes(m.SerializeToString())
    proc = run_cli("run", path, "--input", f"x={files['x']}")
    assert_clean_failure(proc, word("conv0_w"))


@needs_cli
@pytest.mark.parametrize("op_type,node_name", [("Det", "det_node"),
                                               ("NoSuchOp", "mystery_node")])
def test_unsupported_op(files, op_type, node_name):
    if op_type in claimed_ops():
        pytest.skip(f"{op_type} is claimed by the CPU plugin now; pick another op")
    path = files["dir"] / f"{node_name}.onnx"
    onnx.save(unsupported_op_model(op_type, node_name), str(path))
    x = files["dir"] / "x233.npy"
    np.save(str(x), np.ones((2, 3, 3), np.float32))
    proc = run_cli("run", path, "--input", f"x={x}")
    assert_clean_failure(proc, word(node_name))


@needs_cli
def test_wrong_input_shape(files):
    bad = files["dir"] / "x_small.npy"
    np.save(str(bad), np.zeros((1, 3, 8, 8), np.float32))
    proc = run_cli("run", files["conv"], "--input", f"x={bad}")
    assert_clean_failure(proc, word("x"))


@needs_cli
def test_wrong_input_dtype(files):
    # Numeric .npy dtypes are converted to the input's dtype by design; a
    # dtype that has no conversion must be refused.
    bad = files["dir"] / "x_complex.npy"
    np.save(str(bad), np.zeros((1, 3, 16, 16), np.complex64))
    proc = run_cli("run", files["conv"], "--input", f"x={bad}")
    assert_clean_failure(proc, word("x"), "c8", "complex")


@needs_cli
def test_unknown_input_name(files):
    proc = run_cli("run", files["conv"], "--input", f"nosuchinput={files['x']}")
    assert_clean_failure(proc, word("nosuchinput"))


@needs_cli
def test_missing_input(files):
    proc = run_cli("run", files["two"], "--input", f"a={files['a']}")
    assert_clean_failure(proc, word("b"))


@needs_cli
def test_unknown_device(files):
    proc = run_cli("run", files["conv"], "--device", "nosuchdevice", "--input",
                   f"x={files['x']}")
    assert_clean_failure(proc, word("nosuchdevice"))


def _device_names():
    proc = run_cli("devices")
    if proc.returncode != 0:
        return set()
    names = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[0])
    return names


@needs_cli
def test_cpu_device_names_its_kernels():
    """`axle devices` says which kernels the CPU plugin dispatches to here,
    and follows AXLE_KERNELS_ISA's caps."""
    def cpu_row(cap):
        proc = run_cli("devices", env={"AXLE_KERNELS_ISA": cap} if cap else None)
        assert proc.returncode == 0, proc.stderr
        rows = [line for line in proc.stdout.splitlines() if line.split()[:1] == ["cpu"]]
        assert len(rows) == 1, proc.stdout
        return rows[0]

    assert "portable scalar kernels" in cpu_row("scalar")
    level = dispatch_level()
    if level >= 1:
        assert "AVX2/FMA kernels (fp32; int8 QDQ with vpmaddwd)" in cpu_row("avx2")
    best = cpu_row(None)
    if level == 2:
        assert "AVX-512 kernels" in best, best
    elif level == 1:
        assert "AVX2/FMA kernels" in best, best


@needs_cli
def test_strict_mode_unsupported_node(files):
    """Strict mode: a node the chosen device cannot run is an error, no CPU fallback."""
    if "ref" in _device_names():
        # The reference device runs Relu but not Conv: conv0 is unplaceable.
        path, device, feed, node = files["conv"], "ref", f"x={files['x']}", "conv0"
        relaxed = run_cli("run", path, "--device", device, "--input", feed)
        assert relaxed.returncode == 0, f"CPU fallback without --strict failed:\n{relaxed.stderr}"
    else:
        path = files["dir"] / "strict_det.onnx"
        onnx.save(unsupported_op_model("Det", "det_node"), str(path))
        x = files["dir"] / "x233.npy"
        np.save(str(x), np.ones((2, 3, 3), np.float32))
        device, feed, node = "cpu", f"x={x}", "det_node"
    proc = run_cli("run", path, "--device", device, "--strict", "--input", feed)
    assert_clean_failure(proc, word(node))
