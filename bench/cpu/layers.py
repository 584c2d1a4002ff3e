"""Per-layer table from a trace written by axle_bench_layers: time per node
(averaged over the profiled runs), and for convolutions and GEMMs their
shape and GFLOP/s. Shows where a model's time goes and which layers run far
from the FMA peak.

    python3 bench/cpu/layers.py MODEL.onnx TRACE.json [--top N]
                                [--ort THREADS [--ort-runs R]]

--ort also profiles ONNX Runtime on the model (default graph
optimisations, THREADS intra-op threads, zero inputs as axle_bench_layers
uses) and sets its time beside each Axle step: ORT's kernels are matched to
the model's nodes they came from (a fused ORT node is named after one of
them, or for NCHWc layers after the tensor it writes), and each model node
to the Axle step that ran it, its fused nodes included. On QDQ models ORT
runs its own int8 kernels, which saturate on AVX2-only machines (see
run.py): a time, not a reference. ORT's layout
conversions, which have no node of the model, are summed on a line of
their own. Both sides are profiled runs: per-node timing costs a little on
each, so compare the columns, not these totals with `axle bench`.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import tempfile

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


def ort_node_times(model_path, threads, runs, warmup=5):
    """Model node name -> ORT kernel microseconds per run (mean over `runs`
    profiled runs), and the microseconds of ORT kernels with no node of the
    model (layout conversions)."""
    import numpy as np
    import onnxruntime as ort

    model = onnx.load(model_path, load_external_data=False)
    nodes = {n.name for n in model.graph.node}
    producer = {out: n.name for n in model.graph.node for out in n.output}
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    tmp = tempfile.TemporaryDirectory()
    so.profile_file_prefix = os.path.join(tmp.name, "ort")
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        # "tensor(float)" -> float32, "tensor(int64)" -> int64, ...
        name = i.type[len("tensor("):-1]
        dtype = np.dtype({"float": "float32", "double": "float64"}.get(name, name))
        feeds[i.name] = np.zeros([d if isinstance(d, int) else 1 for d in i.shape], dtype)
    for _ in range(warmup):
        sess.run(None, feeds)
    for _ in range(runs):
        sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    tmp.cleanup()
    # The profile holds every run since the session started: only the
    # kernels from the first timed run on count.
    model_runs = [e["ts"] for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run"]
    start_us = model_runs[-runs]
    times = collections.defaultdict(float)
    other = 0.0
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        if e["ts"] < start_us:
            continue
        base = name[: -len("_kernel_time")]
        # ORT's NCHWc layers are named "<tensor>_nchwc", its QLinear ones
        # (fused QDQ groups) "<node>_token_<n>".
        plain = re.sub(r"(_nchwc|_token_\d+)$", "", base)
        node = base if base in nodes else plain if plain in nodes else producer.get(plain)
        if node is None:
            other += e["dur"]
        else:
            times[node] += e["dur"]
    return {k: v / runs for k, v in times.items()}, other / runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--ort", type=int, metavar="THREADS",
                    help="also profile ONNX Runtime at THREADS intra-op threads")
    ap.add_argument("--ort-runs", type=int, default=50)
    a = ap.parse_args()
    info = conv_info(onnx.load(a.model, load_external_data=False))
    # Nodes fused into a step have an event of no time of their own
    # ("fused_into"); the step's event names them all ("fused": "conv4+bn4+...").
    events = [e for e in json.load(open(a.trace))["traceEvents"]
              if e.get("ph") == "X" and "op" in e.get("args", {})
              and "fused_into" not in e["args"]]
    time = collections.defaultdict(float)
    count = collections.Counter()
    label = {}
    members = {}  # step -> the model nodes it ran
    for e in events:
        time[e["name"]] += e["dur"]
        count[e["name"]] += 1
        label[e["name"]] = e["args"].get("fused", e["args"]["op"])
        members[e["name"]] = set(e["args"].get("fused", "").split("+")) - {""} | {e["name"]}
    runs = max(count.values()) if count else 1
    total = sum(time.values()) / runs

    def step_flops(step):
        """The FLOPs of every Conv and Gemm a step ran (a chain's three)."""
        return sum(info[m][1] for m in members[step] if m in info)
    ort_step = {}
    if a.ort:
        ort_nodes, ort_other = ort_node_times(a.model, a.ort, a.ort_runs)
        step_of = {m: step for step, ms in members.items() for m in ms}
        unmatched = 0.0
        for node, t in ort_nodes.items():
            if node in step_of:
                ort_step[step_of[node]] = ort_step.get(step_of[node], 0.0) + t
            else:
                unmatched += t
        ort_total = sum(ort_step.values()) + unmatched + ort_other
    print(f"{len(time)} steps, {runs} runs, {total / 1e3:.2f} ms per run"
          + (f"; ORT {ort_total / 1e3:.2f} ms per run ({a.ort_runs} runs, {a.ort} threads)"
             if a.ort else ""))
    rows = sorted(time.items(), key=lambda kv: -kv[1])[: a.top]
    ort_head = f" {'ORT ms':>7} {'Axle/ORT':>8}" if a.ort else ""
    print(f"{'node':<14} {'ms':>7} {'%':>5} {'GFLOP/s':>8}{ort_head}  layer")
    for name, t in rows:
        t /= runs
        desc = info.get(name, (label[name], 0))[0]
        flops = step_flops(name)
        gf = f"{flops / t / 1e3:8.1f}" if flops and t else " " * 8
        ort_col = ""
        if a.ort:
            o = ort_step.get(name)
            ort_col = f" {o / 1e3:7.3f} {t / o:8.2f}" if o else f" {'-':>7} {'':>8}"
        print(f"{name:<14} {t / 1e3:7.3f} {100 * t / total:5.1f} {gf}{ort_col}  {desc}"
              f"  [{label[name]}]")
    if a.ort and (unmatched or ort_other):
        print(f"ORT kernels of no Axle step: {(unmatched + ort_other) / 1e3:.3f} ms per run"
              " (layout conversions, nodes Axle removed)")
    kinds = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for name, t in time.items():
        if name in info:
            k = info[name][0].split(" ")[0] + " " + info[name][0].split(" ")[1]
            kinds[k][0] += t / runs
            kinds[k][1] += step_flops(name)
            kinds[k][2] += ort_step.get(name, 0.0)
    print("by kind of a step's first layer:")
    for k, (t, f, o) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        ort_col = f"   ORT {o / 1e3:8.3f} ms  Axle/ORT {t / o:5.2f}" if a.ort and o else ""
        print(f"  {k:<10} {t / 1e3:8.3f} ms  {f / t / 1e3 if t else 0:6.1f} GFLOP/s{ort_col}")


if __name__ == "__main__":
    main()
