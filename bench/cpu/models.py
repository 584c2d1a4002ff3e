"""Benchmark models: MobileNetV2 1.0 (224x224), ResNet-18 and ResNet-50 with
random weights and fixed seeds, and an int8 QDQ MobileNetV2.

MobileNetV2 and ResNet-18 are the builders of tests/python/test_ort_agreement.py
(imported, so the benchmark measures exactly the networks the agreement test
checks); ResNet-50 adds the bottleneck block on the same GraphBuilder.
mobilenet_v2_qdq is that same MobileNetV2 with BatchNormalization folded into
the convolutions (onnxruntime's quant_pre_process), quantized by
onnxruntime's quantize_static: QDQ format, per-channel int8 weights, uint8
activations, calibrated on a few fixed-seed random inputs.
"""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python")
sys.path.insert(0, os.path.normpath(_TESTS))
from test_ort_agreement import GraphBuilder, build_mobilenet_v2, build_resnet18  # noqa: E402


def build_resnet50():
    g = GraphBuilder(seed=20240603)
    x = g.node("Relu", [g.bn(g.conv("input", 3, 64, 7, stride=2), 64)])
    x = g.node("MaxPool", [x], prefix="maxpool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    # (bottleneck width, blocks, first stride); output channels are 4x width.
    for width, blocks, s in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        cout = width * 4
        for i in range(blocks):
            stride = s if i == 0 else 1
            h = g.node("Relu", [g.bn(g.conv(x, cin, width, 1), width)])
            # torchvision's v1.5: the stride sits on the 3x3 convolution.
            h = g.node("Relu", [g.bn(g.conv(h, width, width, 3, stride=stride), width)])
            h = g.bn(g.conv(h, width, cout, 1), cout)
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = g.bn(g.conv(x, cin, cout, 1, stride=stride), cout)
            x = g.node("Relu", [g.node("Add", [shortcut, h], prefix="residual")])
            cin = cout
    x = g.node("GlobalAveragePool", [x], prefix="gap")
    x = g.node("Flatten", [x], axis=1)
    y = g.gemm(x, 2048, 1000)
    return g.model("resnet50_shaped", "input", [1, 3, 224, 224], y, [1, 1000])


CALIBRATION_SEEDS = (101, 102, 103, 104)


def build_mobilenet_v2_qdq():
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Samples(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"input": np.random.default_rng(s).normal(
                0.0, 1.0, (1, 3, 224, 224)).astype(np.float32)} for s in CALIBRATION_SEEDS)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, folded, dst = (os.path.join(tmp, n) for n in ("f.onnx", "folded.onnx", "q.onnx"))
        onnx.save(build_mobilenet_v2(), src)
        # Its graph optimisations fold each BatchNormalization into its Conv.
        quant_pre_process(src, folded, skip_symbolic_shape=True)
        assert not any(n.op_type == "BatchNormalization" for n in onnx.load(folded).graph.node)
        quantize_static(folded, dst, Samples(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return onnx.load(dst)


MODELS = {
    "mobilenet_v2": build_mobilenet_v2,
    "resnet18": build_resnet18,
    "resnet50": build_resnet50,
    "mobilenet_v2_qdq": build_mobilenet_v2_qdq,
}


def input_for(model_name):
    """The one input every run of a model uses (fixed seed)."""
    del model_name
    return np.random.default_rng(7).normal(0.0, 1.0, (1, 3, 224, 224)).astype(np.float32)


def build_all(out_dir):
    import onnx
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, builder in MODELS.items():
        path = os.path.join(out_dir, name + ".onnx")
        if not os.path.isfile(path):
            onnx.save(builder(), path)
        paths[name] = path
    return paths


if __name__ == "__main__":
    for n, p in build_all(sys.argv[1] if len(sys.argv) > 1 else "bench-models").items():
        print(n, p)
