#!/usr/bin/env python3
"""Writes the small ONNX models the DRP-AI tests run on the emulated DRP-AI
and on the CPU plugin (tests/drpai/test_drpai_session.c):

  ops.onnx     every AI-MAC layer kind and activation table the compiler
               emits: strided grouped Conv, LeakyRelu, AveragePool with
               padding, 1x1 Conv, Sigmoid, MaxPool with dilation,
               GlobalAveragePool, Flatten, MatMul, Clip, Gemm (transB=0,
               alpha/beta), Tanh, HardSigmoid, Softmax; the Gemm result is a
               second output (an output that later layers also read).
  split.onnx   Conv, Relu | Add of a constant (CPU) | Conv, GlobalAveragePool,
               Flatten: DRP-AI partitions around a CPU one.
  eltwise.onnx the AI-MAC's two-operand layers: Add of two activations,
               Mul with a per-channel gate ([1, C, 1, 1], the first operand)
               and of two same-shape activations, Concat of three inputs
               with different calibrations; the Concat result is a second
               output.
  ops_in.npy   four input samples (for both) for calibration and comparison.

Deterministic (fixed seed). Needs numpy and onnx.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(6)

    def init(name, shape, scale=0.5):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        init("w1", [8, 1, 3, 3]), init("b1", [8], 0.1),
        init("w2", [6, 8, 1, 1]), init("b2", [6], 0.1),
        init("m", [6, 5]),
        init("g", [5, 4]), init("gb", [4], 0.2),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(2.0, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv_s2_g2", strides=[2, 2], pads=[1, 1, 1, 1],
                         group=2),
        helper.make_node("LeakyRelu", ["c1"], ["l1"], name="leaky", alpha=0.1),
        helper.make_node("AveragePool", ["l1"], ["a1"], name="avg3", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1]),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], name="conv1x1"),
        helper.make_node("Sigmoid", ["c2"], ["s2"], name="sigmoid"),
        helper.make_node("MaxPool", ["s2"], ["p2"], name="maxpool_dil", kernel_shape=[2, 2], dilations=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "m"], ["mm"], name="matmul"),
        helper.make_node("Clip", ["mm", "lo", "hi"], ["clip"], name="clip"),
        helper.make_node("Gemm", ["clip", "g", "gb"], ["gm"], name="gemm", alpha=0.75, beta=2.0),
        helper.make_node("Tanh", ["gm"], ["t"], name="tanh"),
        helper.make_node("HardSigmoid", ["t"], ["hs"], name="hardsigmoid", alpha=0.3, beta=0.4),
        helper.make_node("Softmax", ["hs"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "drpai_ops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
                               helper.make_tensor_value_info("gm", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "ops.onnx"))
    np.save(os.path.join(HERE, "ops_in.npy"), rng.standard_normal([4, 2, 12, 12]).astype(np.float32))

    # split.onnx: an Add the DRP-AI does not run sits between two convolutions,
    # so a session has DRP-AI, CPU and DRP-AI partitions meeting in the arena.
    inits = [init("sw1", [4, 2, 3, 3]), init("sb1", [4], 0.1), init("sw2", [3, 4, 3, 3]), init("sb2", [3], 0.1),
             init("k", [1, 4, 12, 12], 0.3)]
    nodes = [
        helper.make_node("Conv", ["x", "sw1", "sb1"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu_a"),
        helper.make_node("Add", ["r1", "k"], ["a1"], name="add_on_cpu"),
        helper.make_node("Conv", ["a1", "sw2", "sb2"], ["c2"], name="conv_b", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap_b"),
        helper.make_node("Flatten", ["g"], ["y"], name="flatten_b"),
    ]
    graph = helper.make_graph(nodes, "drpai_split",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "split.onnx"))

    # eltwise.onnx: Add, Mul (per-channel and same-shape) and Concat.
    inits = [init("ew1", [4, 2, 3, 3]), init("eb1", [4], 0.1), init("ew2", [4, 2, 1, 1]), init("eb2", [4], 0.1),
             init("ew3", [4, 4, 1, 1]), init("eb3", [4], 0.1), init("ew4", [3, 12, 3, 3], 0.2),
             init("eb4", [3], 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "ew1", "eb1"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu_a"),
        helper.make_node("Conv", ["x", "ew2", "eb2"], ["c2"], name="conv_b"),
        helper.make_node("Add", ["r1", "c2"], ["s"], name="add"),
        helper.make_node("GlobalAveragePool", ["s"], ["gp"], name="squeeze"),
        helper.make_node("Conv", ["gp", "ew3", "eb3"], ["gc"], name="excite"),
        helper.make_node("Sigmoid", ["gc"], ["gate"], name="gate"),
        helper.make_node("Mul", ["gate", "s"], ["m"], name="mul_per_channel"),
        helper.make_node("Mul", ["r1", "c2"], ["p"], name="mul_same_shape"),
        helper.make_node("Concat", ["m", "p", "r1"], ["cat"], name="concat", axis=1),
        helper.make_node("Conv", ["cat", "ew4", "eb4"], ["c4"], name="conv_c", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c4"], ["g4"], name="gap_c"),
        helper.make_node("Flatten", ["g4"], ["y"], name="flatten_c"),
    ]
    graph = helper.make_graph(nodes, "drpai_eltwise",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3]),
                               helper.make_tensor_value_info("cat", TensorProto.FLOAT, [1, 12, 12, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "eltwise.onnx"))


if __name__ == "__main__":
    main()
