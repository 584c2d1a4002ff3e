#!/usr/bin/env python3
"""End-to-end test of the `axle` tool on the digits example.

Checks every command, the top-1 class of every sample image, that saved
outputs equal onnxruntime's (when onnxruntime is installed), the .npy
variants the reader accepts, and the error conventions (exit code 1 with
"axle: <status>: <message>", 2 for usage errors), including models that ask
for more memory than there is.

Usage: test_cli.py --axle build/bin/axle --examples examples --workdir DIR
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAILURES = []


def check(cond, what, detail=""):
    if cond:
        print(f"ok    {what}")
    else:
        print(f"FAIL  {what}" + (f"\n      {detail}" if detail else ""))
        FAILURES.append(what)
    return cond


def axle(args, *cmd, env=None):
    proc = subprocess.run([args.axle, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=300, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def show(rc, out, err):
    return f"rc={rc}\n--- stdout\n{out}--- stderr\n{err}"


def top1(stdout):
    """First class index under the "top-N" heading of the output listing."""
    m = re.search(r"top-\d+ \([^)]*\):\n\s+(\d+): ([0-9.]+)", stdout)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--axle", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()

    model = os.path.join(args.examples, "digits", "digits.onnx")
    samples = sorted(glob.glob(os.path.join(args.examples, "digits", "samples", "*.pgm")))
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    work = args.workdir
    if not check(os.path.isfile(model) and len(samples) == 10, "digits example present",
                 f"{model}, {len(samples)} samples"):
        return 1

    # ---- global options and usage errors ----
    rc, out, err = axle(args, "--version")
    check(rc == 0 and re.fullmatch(r"axle \d+\.\d+\.\d+\n", out), "--version", show(rc, out, err))
    rc, out, err = axle(args)
    check(rc == 2 and "usage: axle" in err, "no command is a usage error (2)", show(rc, out, err))
    rc, out, err = axle(args, "frobnicate")
    check(rc == 2 and "unknown command" in err, "unknown command (2)", show(rc, out, err))
    for cmd in ("devices", "info", "run", "bench"):
        rc, out, err = axle(args, cmd, "--help")
        check(rc == 0 and out.startswith(f"usage: axle {cmd}"), f"{cmd} --help", show(rc, out, err))
        rc2, out2, _ = axle(args, "help", cmd)
        check(rc2 == 0 and out2 == out, f"help {cmd}")
    rc, out, err = axle(args, "run")
    check(rc == 2 and "missing MODEL" in err, "run without MODEL (2)", show(rc, out, err))
    rc, out, err = axle(args, "run", model, "--bogus")
    check(rc == 2 and "--bogus" in err, "unknown option (2)", show(rc, out, err))
    rc, out, err = axle(args, "run", model, "--threads", "many", "--input", samples[0])
    check(rc == 2, "bad --threads value (2)", show(rc, out, err))
    rc, out, err = axle(args, "bench", model, "--runs")
    check(rc == 2 and "needs a value" in err, "option without value (2)", show(rc, out, err))

    # ---- devices / info ----
    rc, out, err = axle(args, "devices")
    check(rc == 0 and re.search(r"^cpu\s+cpu\s+cpu\s+(real|emulated)\s", out, re.M),
          "devices lists the cpu device", show(rc, out, err))
    rc, out, err = axle(args, "devices", "--verbose")
    check(rc == 0 and "plugin" in out and "float32" in out, "devices --verbose",
          show(rc, out, err))
    # A file that is no plugin is refused with its name and a reason on
    # stderr, and the other plugins keep working.
    bad_dir = os.path.join(work, "bad-plugins")
    os.makedirs(bad_dir)
    with open(os.path.join(bad_dir, "axle_plugin_garbage.so"), "w") as f:
        f.write("not an ELF file\n")
    env = dict(os.environ)
    env["AXLE_PLUGIN_PATH"] = bad_dir + (":" + env["AXLE_PLUGIN_PATH"]
                                         if env.get("AXLE_PLUGIN_PATH") else "")
    rc, out, err = axle(args, "devices", env=env)
    check(rc == 0 and re.search(r"^cpu\s", out, re.M)
          and re.search(r"^axle: plugin refused: .*axle_plugin_garbage\.so: ", err, re.M),
          "devices reports a refused plugin on stderr", show(rc, out, err))
    rc, out, err = axle(args, "info", model)
    check(rc == 0 and "opset: 13" in out and re.search(r"image\s+float32\s+\[1, 1, 8, 8\]", out)
          and re.search(r"scores\s+float32\s+\[1, 10\]", out) and "nodes: 8 (6 op types)" in out
          and re.search(r"^\s+Conv\s+2$", out, re.M), "info digits.onnx", show(rc, out, err))
    rc, out, err = axle(args, "info", "--nodes", model)
    check(rc == 0 and re.search(r"conv1\s+Conv", out), "info --nodes", show(rc, out, err))

    # ---- run: every sample image is classified as its label ----
    for pgm in samples:
        label = int(os.path.basename(pgm).split("_")[0])
        rc, out, err = axle(args, "run", model, "--input", pgm)
        check(rc == 0 and top1(out) == label and "already sum to 1" in out,
              f"run {os.path.basename(pgm)} -> {label}", show(rc, out, err))

    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    except ImportError:
        sess = None
        print("note: onnxruntime not installed; outputs are compared with the labels only")

    # .npy inputs, saved outputs compared with onnxruntime's.
    for npy in sorted(glob.glob(os.path.join(args.examples, "digits", "samples", "*.npy"))):
        stem = os.path.splitext(os.path.basename(npy))[0]
        label = int(stem.split("_")[0])
        out_dir = os.path.join(work, "out_" + stem)
        rc, out, err = axle(args, "run", model, "--input", f"image={npy}", "--save-outputs", out_dir)
        if not check(rc == 0, f"run {stem}.npy --save-outputs", show(rc, out, err)):
            continue
        with open(os.path.join(out_dir, "outputs.txt")) as f:
            mapping = f.read()
        check(mapping == "scores\tscores.npy\n", "outputs.txt maps name to file", repr(mapping))
        got = np.load(os.path.join(out_dir, "scores.npy"))
        check(got.dtype == np.float32 and got.shape == (1, 10) and int(got.argmax()) == label,
              f"{stem}: saved scores", f"{got.dtype} {got.shape} {got}")
        if sess is not None:
            want = sess.run(["scores"], {"image": np.load(npy)})[0]
            diff = float(np.abs(want - got).max())
            check(diff <= 1e-5, f"{stem}: equal to onnxruntime (max diff {diff:.2g})")

    # .npy variants: float64 (cast), a version 2.0 header, no batch/channel
    # dims (reshaped by element count), and the input frozen as a constant.
    ref_npy = sorted(glob.glob(os.path.join(args.examples, "digits", "samples", "3_*.npy")))[0]
    ref = np.load(ref_npy)
    f64 = os.path.join(work, "f64.npy")
    np.save(f64, ref.astype(np.float64))
    v2 = os.path.join(work, "v2.npy")
    with open(v2, "wb") as f:
        np.lib.format.write_array(f, ref, version=(2, 0))
    flat = os.path.join(work, "flat.npy")
    np.save(flat, ref.reshape(8, 8))
    for what, cmd in (("float64 .npy is cast", ["--input", f64]),
                      ("version 2.0 .npy header", ["--input", v2]),
                      ("[8,8] .npy reshaped to [1,1,8,8]", ["--input", flat]),
                      ("--const freezes the input", ["--const", f"image={ref_npy}"])):
        rc, out, err = axle(args, "run", model, *cmd)
        check(rc == 0 and top1(out) == 3, what, show(rc, out, err))

    # --invert on an inverted image gives back the original.
    pgm3 = [p for p in samples if os.path.basename(p).startswith("3_")][0]
    with open(pgm3, "rb") as f:
        data = f.read()
    inv = os.path.join(work, "inverted.pgm")
    with open(inv, "wb") as f:
        f.write(data[:-64] + bytes(255 - b for b in data[-64:]))
    rc, out, err = axle(args, "run", model, "--input", inv, "--invert")
    check(rc == 0 and top1(out) == 3, "--invert", show(rc, out, err))
    # A colour PPM with equal channels: its luma is the grey image.
    ppm = os.path.join(work, "colour.ppm")
    with open(ppm, "wb") as f:
        f.write(b"P6\n8 8\n255\n" + bytes(b for b in data[-64:] for _ in range(3)))
    rc, out, err = axle(args, "run", model, "--input", ppm)
    check(rc == 0 and top1(out) == 3, "PPM into a 1-channel input", show(rc, out, err))
    rc, out, err = axle(args, "run", model, "--input", pgm3, "--scale", "1/255")
    check(rc == 0 and top1(out) == 3, "--scale 1/255", show(rc, out, err))

    # ---- reports ----
    trace = os.path.join(work, "trace.json")
    rc, out, err = axle(args, "run", model, "--input", pgm3, "--explain", "--trace", trace)
    check(rc == 0 and "placement:" in out and "planned peak" in out, "--explain",
          show(rc, out, err))
    try:
        with open(trace) as f:
            doc = json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        check(isinstance(events, list) and len(events) > 0, "--trace writes Chrome trace JSON",
              f"{len(events)} events")
    except (OSError, ValueError, KeyError) as e:
        check(False, "--trace writes Chrome trace JSON", repr(e))

    # ---- errors ----
    rc, out, err = axle(args, "run", os.path.join(work, "missing.onnx"), "--input", pgm3)
    check(rc == 1 and re.match(r"axle: [a-z ]+: ", err), "missing model: exit 1, axle: status: msg",
          show(rc, out, err))
    rc, out, err = axle(args, "run", model, "--input", f"nope={pgm3}")
    check(rc == 1 and "no model input is called 'nope'" in err, "unknown input name (1)",
          show(rc, out, err))
    rc, out, err = axle(args, "run", model)
    check(rc == 1 and "no value for input 'image'" in err, "missing input (1)", show(rc, out, err))
    small = os.path.join(work, "small.pgm")
    with open(small, "wb") as f:
        f.write(b"P5\n4 4\n255\n" + bytes(16))
    rc, out, err = axle(args, "run", model, "--input", small)
    check(rc == 1 and "resize" in err, "wrong image size (1)", show(rc, out, err))
    rc, out, err = axle(args, "run", model, "--input", pgm3, "--device", "no-such-device")
    check(rc == 1 and err.startswith("axle: "), "unknown device (1)", show(rc, out, err))

    # ---- bench ----
    rc, out, err = axle(args, "bench", model, "--runs", "20", "--warmup", "2")
    check(rc == 0 and re.search(r"median [0-9.]+\s+p10 [0-9.]+\s+p90 [0-9.]+\s+min [0-9.]+", out)
          and "runs/s" in out and "1 random" in out and err == "",
          "bench (random input, no progress bar off a terminal)", show(rc, out, err))
    rc, out, err = axle(args, "bench", model, "-n", "5", "-w", "0", "--input", pgm3, "--threads", "1")
    check(rc == 0 and "1 given, 0 random" in out, "bench with a given input", show(rc, out, err))

    # ---- a model asking for more memory than there is: an error naming the tensor ----
    big = 1 << 40  # float32 elements: 4 TiB
    huge_in = os.path.join(work, "huge_input.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "huge_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 20, 1 << 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 20, 1 << 20])]),
        opset_imports=[helper.make_opsetid("", 13)]), huge_in)
    huge_out = os.path.join(work, "huge_output.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Tile", ["x", "repeats"], ["y"])], "huge_output",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [big])],
        [numpy_helper.from_array(np.array([big], dtype=np.int64), "repeats")]),
        opset_imports=[helper.make_opsetid("", 13)]), huge_out)
    # Under the sanitizers a failed allocation must come back as NULL, as it
    # does in release builds.
    env = dict(os.environ)
    for v in ("ASAN_OPTIONS", "TSAN_OPTIONS"):
        env[v] = ":".join(filter(None, [env.get(v), "allocator_may_return_null=1"]))
    rc, out, err = axle(args, "bench", huge_in, "-n", "1", "-w", "0", env=env)
    check(rc == 1 and "out of memory" in err and "input 'x'" in err,
          "bench: an input too large to allocate (1, names it)", show(rc, out, err))
    rc, out, err = axle(args, "bench", huge_out, "-n", "1", "-w", "0", env=env)
    check(rc == 1 and "out of memory" in err and "output 'y'" in err and huge_out in err,
          "bench: an output too large to allocate (1, names it and the model)", show(rc, out, err))

    print(f"\n{len(FAILURES)} failure(s)" if FAILURES else "\nall passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
