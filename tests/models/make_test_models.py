#!/usr/bin/env python3
"""Generates the small ONNX models the C unit tests read (tests/models/*.onnx).

The outputs are committed; rerun this script only to change them:
    python3 tests/models/make_test_models.py
Everything is deterministic (fixed seeds, fixed producer strings), so a rerun
without changes reproduces the same bytes.

Models:
  add.onnx             c = Add(a, b), a/b/c float32 [1,1000]
  relu_chain.onnx      x[1,1000] -> Relu -> Mul(w) -> Relu -> Add(x) -> Relu -> y
                       (every node runs on the reference device "ref"; w is a
                       constant with both signs)
  mixed.onnx           x[1,2,4,4] -> Add(bias) -> Relu -> Conv(3x3, pad 1) ->
                       Mul(scale) -> y[1,3,4,4]: Add/Relu/Mul go to "ref", Conv
                       falls back to "cpu"
  unsupported_op.onnx  y = AxleNoSuchOp(x) in the default domain (no plugin
                       implements it)
  bad_truncated.onnx   add.onnx cut in the middle of a message
  bad_garbage.onnx     bytes that are not a protobuf ModelProto
  bad_dangling.onnx    a node reads a tensor nothing produces
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13


def model(graph, check=True):
    m = helper.make_model(graph, producer_name="axle-tests", producer_version="1",
                          opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 7
    if check:
        onnx.checker.check_model(m)
    return m


def save(m, name):
    path = os.path.join(HERE, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make_add():
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"], name="add0")], "add",
                          [vinfo("a", [1, 1000]), vinfo("b", [1, 1000])], [vinfo("c", [1, 1000])])
    return model(g)


def make_relu_chain(rng):
    w = rng.uniform(-2.0, 2.0, size=(1, 1000)).astype(np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["r1"], name="relu1"),
        helper.make_node("Mul", ["r1", "w"], ["m1"], name="mul1"),
        helper.make_node("Relu", ["m1"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r2", "x"], ["a1"], name="add1"),
        helper.make_node("Relu", ["a1"], ["y"], name="relu3"),
    ]
    g = helper.make_graph(nodes, "relu_chain", [vinfo("x", [1, 1000])], [vinfo("y", [1, 1000])],
                          initializer=[numpy_helper.from_array(w, "w")])
    return model(g)


def make_mixed(rng):
    bias = rng.uniform(-1.0, 1.0, size=(1, 2, 4, 4)).astype(np.float32)
    weight = rng.uniform(-1.0, 1.0, size=(3, 2, 3, 3)).astype(np.float32)
    scale = rng.uniform(-2.0, 2.0, size=(1, 3, 4, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["t0"], name="add_bias"),
        helper.make_node("Relu", ["t0"], ["t1"], name="relu"),
        helper.make_node("Conv", ["t1", "weight"], ["t2"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["t2", "scale"], ["y"], name="mul_scale"),
    ]
    g = helper.make_graph(nodes, "mixed", [vinfo("x", [1, 2, 4, 4])], [vinfo("y", [1, 3, 4, 4])],
                          initializer=[numpy_helper.from_array(bias, "bias"),
                                       numpy_helper.from_array(weight, "weight"),
                                       numpy_helper.from_array(scale, "scale")])
    return model(g)


def make_unsupported():
    g = helper.make_graph([helper.make_node("AxleNoSuchOp", ["x"], ["y"], name="mystery")],
                          "unsupported_op", [vinfo("x", [1, 8])], [vinfo("y", [1, 8])])
    return model(g, check=False)  # the checker rightly rejects an unknown op


def make_dangling():
    g = helper.make_graph([helper.make_node("Add", ["a", "ghost"], ["c"], name="add_ghost")],
                          "dangling", [vinfo("a", [1, 4])], [vinfo("c", [1, 4])])
    return model(g, check=False)


def main():
    rng = np.random.default_rng(20240601)
    add = make_add()
    save(add, "add.onnx")
    save(make_relu_chain(rng), "relu_chain.onnx")
    save(make_mixed(rng), "mixed.onnx")
    save(make_unsupported(), "unsupported_op.onnx")
    save(make_dangling(), "bad_dangling.onnx")
    data = add.SerializeToString()
    with open(os.path.join(HERE, "bad_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(HERE, "bad_garbage.onnx"), "wb") as f:
        f.write(b"this is not an ONNX model\n\xff\xff\xff\xff\x01\x02\x03")


if __name__ == "__main__":
    main()
