"""Shared fixtures for the axle Python package tests.

The package under test is whatever `import axle` finds: ctest puts the copy it
just built (pip install --target) first on PYTHONPATH. Models the tests need
beyond the repository's own are built here with onnx.helper (random weights).
"""
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(os.environ.get("AXLE_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
DIGITS = ROOT / "examples" / "digits" / "digits.onnx"
SAMPLES = ROOT / "examples" / "digits" / "samples"
MODELS = ROOT / "tests" / "models"
SANITIZED = os.environ.get("AXLE_PY_SANITIZED") == "1"


def _save(model, path):
    import onnx
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _const(rng, name, shape, scale=1.0):
    from onnx import numpy_helper
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def build_cnn(path, seed=1):
    """A small CNN: Conv-Relu-MaxPool-Conv-BN-Relu-GlobalAveragePool-Flatten-Gemm-Softmax."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits = [
        _const(rng, "w1", (8, 3, 3, 3), 0.3), _const(rng, "b1", (8,), 0.1),
        _const(rng, "w2", (16, 8, 3, 3), 0.2), _const(rng, "b2", (16,), 0.1),
        _const(rng, "bn_s", (16,), 0.2), _const(rng, "bn_b", (16,), 0.1),
        _const(rng, "bn_m", (16,), 0.1),
        numpy_helper.from_array((np.abs(rng.standard_normal(16)) + 0.5).astype(np.float32),
                                "bn_v"),
        _const(rng, "fc_w", (10, 16), 0.3), _const(rng, "fc_b", (10,), 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], strides=[1, 1], name="conv2"),
        helper.make_node("BatchNormalization", ["c2", "bn_s", "bn_b", "bn_m", "bn_v"], ["n2"],
                         epsilon=1e-5, name="bn2"),
        helper.make_node("Relu", ["n2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [2, 10]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 10])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def build_mlp(path, seed=2):
    """An MLP: MatMul-Add-Relu-MatMul-Add-Tanh-MatMul-Add-Sigmoid on a [4, 64] input."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    inits = [_const(rng, "w1", (64, 128), 0.1), _const(rng, "b1", (128,), 0.1),
             _const(rng, "w2", (128, 32), 0.1), _const(rng, "b2", (32,), 0.1),
             _const(rng, "w3", (32, 10), 0.2), _const(rng, "b3", (10,), 0.1)]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["h1"]),
        helper.make_node("MatMul", ["h1", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Tanh", ["a2"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w3"], ["m3"]), helper.make_node("Add", ["m3", "b3"], ["a3"]),
        helper.make_node("Sigmoid", ["a3"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


HEAVY_N = 512   # ~10-50 ms a run on the CPU plugin's reference kernels


def build_heavy(path, n=HEAVY_N, layers=4, seed=3):
    """A chain of n x n MatMuls: enough work per run to measure thread overlap."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    inits, nodes, prev = [], [], "x"
    for i in range(layers):
        inits.append(_const(rng, "w%d" % i, (n, n), 1.0 / 16))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["h%d" % i]))
        prev = "h%d" % i
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    graph = helper.make_graph(
        nodes, "heavy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def build_int64_add(path):
    """c = a + b on int64 [3]: an integer model (dtype mapping of inputs and outputs)."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "iadd",
        [helper.make_tensor_value_info("a", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [3])])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def cnn_model(model_dir):
    return build_cnn(model_dir / "cnn.onnx")


@pytest.fixture(scope="session")
def mlp_model(model_dir):
    return build_mlp(model_dir / "mlp.onnx")


@pytest.fixture(scope="session")
def heavy_model(model_dir):
    return build_heavy(model_dir / "heavy.onnx")


@pytest.fixture(scope="session")
def int_model(model_dir):
    return build_int64_add(model_dir / "iadd.onnx")


@pytest.fixture(scope="session")
def add_model():
    return MODELS / "add.onnx"


@pytest.fixture(scope="session")
def digit_samples():
    """(images [n, 1, 8, 8] float32, labels) from examples/digits/samples."""
    files = sorted(SAMPLES.glob("*.npy"))
    images = np.stack([np.load(f).reshape(1, 8, 8).astype(np.float32) for f in files])
    labels = [int(f.name.split("_")[0]) for f in files]
    return images, labels


def statm_rss_bytes():
    """Resident set size from /proc/self/statm (pages * page size)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
