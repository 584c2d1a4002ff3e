#!/usr/bin/env python3
"""Writes the networks test_cpu_concurrent_runs.c runs into the folder given:
MobileNetV2 (224x224, fixed-seed random weights) and its int8 QDQ form, the
benchmark's builders (bench/cpu/models.py). A ctest fixture: Python only
writes the files, the instrumented test program runs them."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "cpu"))
import models  # noqa: E402


def main():
    import onnx
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in ("mobilenet_v2", "mobilenet_v2_qdq"):
        path = os.path.join(out, name + ".onnx")
        onnx.save(models.MODELS[name](), path)
        print(path)


if __name__ == "__main__":
    main()
