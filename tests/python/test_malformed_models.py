"""Randomly malformed models through `axle bench`: never a crash, always a
clear error.

Each case takes a valid seed model and changes one to three of its fields
the way a broken exporter or a damaged file would, on the protobuf's
structure rather than its bytes (so most cases still parse and reach shape
inference, placement, compilation and the run): an attribute's integers,
a graph input's dimensions, rank or data type, an initializer's dimensions,
data type or data, a node's inputs, op type or attributes, a cycle, two
producers of one tensor. `axle bench` (random inputs, one run) must then
either run, or exit 1 with one "axle:" error that names the model file
(or, for an allocation no machine could give, the tensor). The seeds are
fixed (random.Random(CASES_SEED)), so a failure reproduces; its model is
kept in pytest's tmp_path.

In the sanitizer builds the CLI under test is instrumented, so a memory,
undefined-behaviour or thread error fails the case too (allocations fail
with NULL there, as they do in release builds; the allocator's one-line
warning about it is not an error).

Environment: AXLE_CLI, AXLE_SOURCE_DIR (see test_ort_agreement.py).
"""
from __future__ import annotations

import os
import random
import re
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from test_ort_agreement import SOURCE_DIR, needs_cli, run_cli, small_conv_model

CASES = 200
CASES_SEED = 20261127
CASE_TIMEOUT_S = 120
ALLOCATION_WARNING = re.compile(
    r"^==\d+==WARNING: \w+Sanitizer failed to allocate 0x[0-9a-f]+ bytes\n", re.M)
INTERESTING = [0, -1, 1, 2, 3, -2, 7, 64, 1 << 20, (1 << 31) - 1, -(1 << 31), 1 << 62, -(1 << 62)]
DTYPES = [TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32,
          TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE,
          TensorProto.BFLOAT16, 0, 99]
OPS = ["Conv", "Add", "Relu", "MatMul", "Reshape", "Transpose", "Concat", "Gather", "Slice",
       "Pad", "MaxPool", "Gemm", "Softmax", "Flatten", "BatchNormalization", "Resize", "Split",
       "Mul", "GlobalAveragePool", "QuantizeLinear", "DequantizeLinear", "Clip", "Squeeze"]


def layout_model():
    """Transpose, Slice, Concat, Gather, Pad, Reshape and Softmax on one input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in [
        ("starts", [0, 1]), ("ends", [2, 4]), ("axes", [1, 3]), ("idx", [0, 2]),
        ("pads", [0, 0, 1, 1, 0, 0, 1, 1]), ("shape", [2, -1])]]
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Slice", ["t", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Concat", ["s", "s"], ["c"], axis=1),
        helper.make_node("Gather", ["c", "idx"], ["g"], axis=2),
        helper.make_node("Pad", ["g", "pads"], ["p"]),
        helper.make_node("Reshape", ["p", "shape"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], axis=1),
    ]
    m = helper.make_model(helper.make_graph(nodes, "layout", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def seed_models():
    paths = [os.path.join(SOURCE_DIR, "examples", "digits", "digits.onnx"),
             os.path.join(SOURCE_DIR, "tests", "models", "mixed.onnx"),
             os.path.join(SOURCE_DIR, "tests", "models", "relu_chain.onnx")]
    return [onnx.load(p) for p in paths] + [small_conv_model(), layout_model()]


def mutate(m, rng):
    """Changes one field of m in place."""
    g = m.graph
    nodes = list(g.node)
    kind = rng.randrange(13)
    if kind == 0 and nodes:
        n = rng.choice(nodes)
        ints = [a for a in n.attribute
                if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)]
        if ints:
            a = rng.choice(ints)
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(INTERESTING)
            elif len(a.ints):
                a.ints[rng.randrange(len(a.ints))] = rng.choice(INTERESTING)
                if rng.random() < 0.3:
                    a.ints.append(rng.choice(INTERESTING))
    elif kind == 1 and len(g.input):
        dims = rng.choice(list(g.input)).type.tensor_type.shape.dim
        if len(dims):
            # 1 << 40: more than any machine has (a valid model that fits but
            # takes minutes, e.g. a batch of a million, is not what this tests).
            dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 2, 3, 5, 1 << 40])
    elif kind == 2 and len(g.initializer):
        t = rng.choice(list(g.initializer))
        if len(t.dims):
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 2, 3, -1, 1 << 30])
    elif kind == 3 and len(g.initializer):
        rng.choice(list(g.initializer)).data_type = rng.choice(DTYPES)
    elif kind == 4 and nodes:
        n = rng.choice(nodes)
        if len(n.input) and rng.random() < 0.5:
            del n.input[rng.randrange(len(n.input))]
        else:
            n.input.append(rng.choice([x.name for x in g.input] + [""]))
    elif kind == 5 and len(g.input):
        rng.choice(list(g.input)).type.tensor_type.elem_type = rng.choice(DTYPES)
    elif kind == 6 and len(g.input):
        dims = rng.choice(list(g.input)).type.tensor_type.shape.dim
        if len(dims) and rng.random() < 0.5:
            del dims[-1]
        else:
            dims.add().dim_value = rng.choice([1, 2, 3])
    elif kind == 7 and nodes:
        n = rng.choice(nodes)
        if len(n.attribute):
            n.attribute.remove(rng.choice(list(n.attribute)))
    elif kind == 8 and len(g.initializer):
        t = rng.choice(list(g.initializer))
        if t.raw_data:
            t.raw_data = t.raw_data[:rng.randrange(len(t.raw_data) + 1)]
        elif len(t.float_data):
            del t.float_data[rng.randrange(len(t.float_data)):]
    elif kind == 9 and nodes:
        rng.choice(nodes).op_type = rng.choice(OPS)
    elif kind == 10 and nodes:
        i = rng.randrange(len(nodes))
        later = [o for n in nodes[i:] for o in n.output]
        if later and len(nodes[i].input):
            nodes[i].input[rng.randrange(len(nodes[i].input))] = rng.choice(later)
    elif kind == 11 and len(nodes) >= 2:
        a, b = rng.sample(nodes, 2)
        if len(a.output) and len(b.output):
            b.output[0] = a.output[0]
    elif kind == 12 and len(g.initializer):
        rng.choice(list(g.initializer)).dims.append(rng.choice([3, 1 << 31, 1 << 40]))


@needs_cli
def test_malformed_models_fail_cleanly(tmp_path):
    seeds = seed_models()
    rng = random.Random(CASES_SEED)
    env = {v: ":".join(filter(None, [os.environ.get(v), "allocator_may_return_null=1"]))
           for v in ("ASAN_OPTIONS", "TSAN_OPTIONS")}
    failures, ran = [], 0
    for case in range(CASES):
        m = onnx.ModelProto()
        m.CopyFrom(seeds[rng.randrange(len(seeds))])
        for _ in range(rng.randint(1, 3)):
            mutate(m, rng)
        path = tmp_path / f"case_{case}.onnx"
        path.write_bytes(m.SerializeToString())
        try:
            proc = run_cli("bench", path, "-n", "1", "-w", "0", env=env, timeout=CASE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            failures.append(f"{path.name}: no answer in {CASE_TIMEOUT_S} s")
            continue
        # What a sanitizer's allocator prints when it returns that NULL.
        err = ALLOCATION_WARNING.sub("", proc.stderr)
        if proc.returncode == 0:
            ran += 1
            ok = "median" in proc.stdout
        else:
            ok = (proc.returncode == 1 and err.startswith("axle: ")
                  and (str(path) in err or "out of memory" in err))
        ok = ok and "Sanitizer" not in err and "runtime error" not in err
        if ok:
            path.unlink()
        else:
            failures.append(f"{path.name}: exit {proc.returncode}: {err.strip()[-400:]}")
    print(f"{CASES} malformed models: {ran} ran, {CASES - ran} refused with an error")
    assert not failures, f"{len(failures)} of {CASES} cases:\n" + "\n".join(failures[:10])
    # The cases reach past the parser: some still run, most fail later on.
    assert 0 < ran < CASES
