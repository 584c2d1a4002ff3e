"""Benchmark models: MobileNetV2 1.0 (224x224), ResNet-18 and ResNet-50 with
random weights and fixed seeds.

MobileNetV2 and ResNet-18 are the builders of tests/python/test_ort_agreement.py
(imported, so the benchmark measures exactly the networks the agreement test
checks); ResNet-50 adds the bottleneck block on the same GraphBuilder.
"""
from __future__ import annotations

import os
import sys

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


MODELS = {
    "mobilenet_v2": build_mobilenet_v2,
    "resnet18": build_resnet18,
    "resnet50": build_resnet50,
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
