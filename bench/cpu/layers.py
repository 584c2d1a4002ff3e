"""Per-layer table from a trace written by axle_bench_layers: time per node
(averaged over the profiled runs), and for convolutions and GEMMs their
shape and GFLOP/s. Shows where a model's time goes and which layers run far
from the FMA peak.

    python3 bench/cpu/layers.py MODEL.onnx TRACE.json [--top N]
"""
from __future__ import annotations

import argparse
import collections
import json

import onnx
from onnx import shape_inference


def conv_info(model):
    """name -> (description, flops) for Conv and Gemm nodes."""
    m = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    inits = {i.name: list(i.dims) for i in m.graph.initializer}
    # In a QDQ model the weights reach Conv/Gemm through DequantizeLinear.
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            inits[n.output[0]] = inits[n.input[0]]
    info = {}
    for n in m.graph.node:
        if n.op_type == "Conv":
            w = inits[n.input[1]]
            y = shapes.get(n.output[0])
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            g = attrs.get("group", 1)
            s = attrs.get("strides", [1, 1])[0]
            pix = y[2] * y[3] if y else 0
            flops = 2 * w[0] * w[1] * w[2] * w[3] * pix
            kind = "dw" if g > 1 and w[1] == 1 else f"{w[2]}x{w[3]}"
            info[n.name] = (f"{kind} s{s} {w[1] * g}->{w[0]} @{y[2]}x{y[3]}" if y else kind, flops)
        elif n.op_type == "Gemm":
            w = inits.get(n.input[1])
            if w:
                info[n.name] = (f"gemm {w}", 2 * w[0] * w[1])
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    info = conv_info(onnx.load(a.model, load_external_data=False))
    events = [e for e in json.load(open(a.trace))["traceEvents"]
              if e.get("ph") == "X" and "op" in e.get("args", {})]
    time = collections.defaultdict(float)
    count = collections.Counter()
    label = {}
    for e in events:
        time[e["name"]] += e["dur"]
        count[e["name"]] += 1
        label[e["name"]] = e["args"].get("fused", e["args"]["op"])
    runs = max(count.values()) if count else 1
    total = sum(time.values()) / runs
    print(f"{len(time)} nodes, {runs} runs, {total / 1e3:.2f} ms per run")
    rows = sorted(time.items(), key=lambda kv: -kv[1])[: a.top]
    print(f"{'node':<14} {'ms':>7} {'%':>5} {'GFLOP/s':>8}  layer")
    for name, t in rows:
        t /= runs
        desc, flops = info.get(name, (label[name], 0))
        gf = f"{flops / t / 1e3:8.1f}" if flops and t else " " * 8
        print(f"{name:<14} {t / 1e3:7.3f} {100 * t / total:5.1f} {gf}  {desc}  [{label[name]}]")
    kinds = collections.defaultdict(lambda: [0.0, 0.0])
    for name, t in time.items():
        if name in info:
            k = info[name][0].split(" ")[0] + " " + info[name][0].split(" ")[1]
            kinds[k][0] += t / runs
            kinds[k][1] += info[name][1]
    print("by layer kind:")
    for k, (t, f) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"  {k:<10} {t / 1e3:8.3f} ms  {f / t / 1e3 if t else 0:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
