#!/usr/bin/env python3
"""ONNX backend node conformance for the ops the CPU plugin claims.

Test data
    The ONNX backend node tests (onnx/backend/test/data/node/test_*/model.onnx
    with test_data_set_N/input_K.pb and output_K.pb). Recent onnx wheels ship
    the generators of that data (onnx.backend.test.case.node) but not always
    the generated files; the runner uses, in this order: --data-dir, the
    wheel's data/node directory when it is there, else the generators
    themselves (in memory, seeded exactly as onnx's own `backend-test-tools
    generate-data` does, so the cases are the same).

Which cases
    tests/onnx/claimed_ops.txt lists the claimed ops, one per line. A case
    belongs to op X when X is one of its model's node op types and every op
    type of the model (default domain only) is claimed: single-op cases are
    listed under their op, multi-op cases (e.g. the _expanded variants whose
    ops are all claimed) under each of their ops.

Inputs given as constants (--const)
    Axle specialises every shape at session creation, so model inputs whose
    *values* determine an output shape must be frozen. The rule, from the ONNX
    operator schemas (onnx.defs.get_schema): a graph input is passed with
    --const when some node consumes it in one of the schema inputs named in
    FROZEN_INPUTS below for that node's op, at the model's opset (shape
    tensors: Reshape and Expand shape, Slice starts/ends/axes/steps,
    Squeeze/Unsqueeze axes, Pad pads/axes, Tile repeats, Split split,
    ConstantOfShape input, Range start/limit/delta, Reduce* axes, TopK K,
    Resize roi/scales/sizes, Upsample scales, OneHot depth). Every other input,
    including value-only parameters such as Clip min/max, Pad constant_value
    and QuantizeLinear/DequantizeLinear scales and zero points, is passed
    with --input, so that the runtime-input path of those ops is tested too.

Checking
    Each case runs `axle run model.onnx --input/--const ... --save-outputs DIR`
    and the outputs listed in DIR/outputs.txt are compared with the expected
    ones: same dtype and shape; floats with |got - want| <= atol + rtol*|want|
    (rtol 1e-4, atol 1e-5), NaN where NaN is expected, equal infinities;
    integers and booleans exactly. .npy has no bfloat16: such inputs are
    written as float32 (exact; axle casts them to the input's dtype) and a
    bfloat16 output may come back as float32 holding bfloat16 values. Inputs
    of dtypes axle's .npy reader lacks (float8, int4, strings, ...) fail the
    case with a "runner:" reason.

Modes
    default   fails (exit 1) when a case of expected_pass.txt fails, when a
              failing case is missing from expected_fail.txt, or when a case
              listed in expected_fail.txt (or in neither list) passes: run
              --update then, so that the list of passes only grows.
    --update  rewrites expected_pass.txt (sorted case names) and
              expected_fail.txt ("case<TAB>reason"). It refuses to drop a case
              from expected_pass.txt unless --allow-regressions is given.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-4
ATOL = 1e-5
CASE_TIMEOUT_S = 120
ONNX_TAG = "onnx"
# dtypes the axle CLI reads from .npy (others, e.g. float8/int4 from
# ml_dtypes, have no .npy form it understands).
NPY_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
              "uint16", "uint32", "uint64", "bool"}

# Failing cases whose cause lies in the ONNX test data, not in Axle: appended
# to the reason in expected_fail.txt.
DATA_NOTES = {
    "test_averagepool_2d_ceil_last_window_starts_on_pad":
        "[test data: the expected values are written out to 4 digits only, "
        "e.g. 0.2841 for 2.5564/9]",
}

# Schema input names (per op) whose values determine output shapes: frozen
# with --const.
_REDUCE_OPS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
               "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")
FROZEN_INPUTS = {
    # shape-determining inputs
    "Reshape": ("shape",),
    "Expand": ("shape",),
    "Slice": ("starts", "ends", "axes", "steps"),
    "Squeeze": ("axes",),
    "Unsqueeze": ("axes",),
    "Pad": ("pads", "axes"),
    "Tile": ("repeats",),
    "Split": ("split",),
    "ConstantOfShape": ("input",),
    "Range": ("start", "limit", "delta"),
    "TopK": ("K",),
    "Resize": ("roi", "scales", "sizes"),
    "Upsample": ("scales",),
    "OneHot": ("depth",),
}
for _op in _REDUCE_OPS:
    FROZEN_INPUTS[_op] = ("axes",)

_frozen_slot_cache: dict = {}


def frozen_slots(op_type: str, opset: int) -> frozenset:
    """Input indices of op_type (at opset) that are passed with --const."""
    key = (op_type, opset)
    if key not in _frozen_slot_cache:
        names = FROZEN_INPUTS.get(op_type, ())
        slots = set()
        if names:
            try:
                schema = onnx.defs.get_schema(op_type, opset, "")
            except Exception:  # unknown op/opset: nothing is frozen
                schema = None
            if schema is not None:
                for i, formal in enumerate(schema.inputs):
                    if formal.name in names:
                        slots.add(i)
        _frozen_slot_cache[key] = frozenset(slots)
    return _frozen_slot_cache[key]


def check_frozen_table() -> None:
    """Every name in FROZEN_INPUTS must be an input of the op's latest schema."""
    for op, names in FROZEN_INPUTS.items():
        formal = {f.name for f in onnx.defs.get_schema(op).inputs}
        unknown = [n for n in names if n not in formal]
        if unknown:
            raise SystemExit(f"run_node_tests: FROZEN_INPUTS[{op}] names {unknown}, "
                             f"not inputs of the schema ({sorted(formal)})")


def model_opset(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return onnx.defs.onnx_opset_version()


def model_ops(model: onnx.ModelProto):
    """Set of op types, or None when a node is outside the default domain."""
    ops = set()
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            return None
        ops.add(node.op_type)
    return ops


def frozen_inputs(model: onnx.ModelProto) -> set:
    opset = model_opset(model)
    frozen = set()
    for node in model.graph.node:
        slots = frozen_slots(node.op_type, opset)
        for i, name in enumerate(node.input):
            if name and i in slots:
                frozen.add(name)
    return frozen


class Case:
    """One node test: model plus data sets [(inputs, outputs)], arrays in graph order."""

    def __init__(self, name, model, data_sets, ops, model_path=None):
        self.name = name
        self.model = model
        self.data_sets = data_sets
        self.ops = ops
        self.model_path = model_path


def _to_array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (np.generic, int, float, bool)):
        return np.asarray(value)
    return None  # sequences, maps, optionals: not tensors


def _tensor_io_only(model):
    graph = model.graph
    return all(v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output))


def wheel_data_dir():
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    return d if os.path.isdir(d) else None


def load_cases_from_dir(data_dir, claimed, name_filter):
    cases = []
    for name in sorted(os.listdir(data_dir)):
        case_dir = os.path.join(data_dir, name)
        model_path = os.path.join(case_dir, "model.onnx")
        if not name.startswith("test_") or not os.path.isfile(model_path):
            continue
        if name_filter and name_filter not in name:
            continue
        model = onnx.load(model_path, load_external_data=False)
        ops = model_ops(model)
        if not ops or not ops <= claimed or not _tensor_io_only(model):
            continue
        data_sets = []
        k = 0
        while os.path.isdir(os.path.join(case_dir, f"test_data_set_{k}")):
            ds = os.path.join(case_dir, f"test_data_set_{k}")
            arrays = []
            for prefix, count in (("input", len(model.graph.input)),
                                  ("output", len(model.graph.output))):
                lst = []
                for j in range(count):
                    t = onnx.TensorProto()
                    with open(os.path.join(ds, f"{prefix}_{j}.pb"), "rb") as f:
                        t.ParseFromString(f.read())
                    lst.append(numpy_helper.to_array(t))
                arrays.append(lst)
            data_sets.append((arrays[0], arrays[1]))
            k += 1
        if data_sets:
            cases.append(Case(name, model, data_sets, ops, model_path))
    return cases


def load_cases_generated(claimed, name_filter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases
        generated = node_cases.collect_testcases(None)
    cases = {}
    for tc in generated:
        if tc.kind != "node" or tc.model is None or not tc.data_sets:
            continue
        if name_filter and name_filter not in tc.name:
            continue
        ops = model_ops(tc.model)
        if not ops or not ops <= claimed or not _tensor_io_only(tc.model):
            continue
        data_sets = []
        ok = True
        for inputs, outputs in tc.data_sets:
            ins = [_to_array(v) for v in inputs]
            outs = [_to_array(v) for v in outputs]
            if any(a is None for a in ins + outs):
                ok = False
                break
            data_sets.append((ins, outs))
        if ok:
            cases[tc.name] = Case(tc.name, tc.model, data_sets, ops)
    return [cases[k] for k in sorted(cases)]


# ---------------------------------------------------------------------------
# Running and comparing


def one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cli_error(stderr, rc, work):
    """The CLI's "axle: ..." message (with its indented continuation lines) on
    one line, without the case's temporary directory."""
    stderr = stderr.replace(work + os.sep, "")
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith("axle:"):
            msg = [ln]
            for cont in lines[i + 1:]:
                if not cont[:1].isspace():
                    break
                msg.append(cont)
            return one_line(" ".join(msg), 400)
    if lines:
        return one_line(lines[-1], 400)
    return f"exit code {rc} without a message"


def _fmt(v):
    return np.format_float_positional(v, precision=6, unique=True, trim="-") \
        if isinstance(v, float) else str(v)


def compare(name, want, got):
    """None when got matches want, else a one-line reason."""
    if want.dtype.name == "bfloat16" and got.dtype == np.float32:
        # .npy has no bfloat16: axle writes such outputs as float32 (exact).
        # They must still hold bfloat16 values (low 16 bits zero).
        if np.any(got.view(np.uint32) & np.uint32(0xFFFF)):
            return f"output {name}: bfloat16 output written as float32 holds non-bfloat16 values"
        want = want.astype(np.float32)
    if got.dtype != want.dtype:
        return f"output {name}: dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"output {name}: shape {list(got.shape)}, expected {list(want.shape)}"
    if want.size == 0:
        return None
    if want.dtype.kind in "biu":
        bad = got != want
        if not bad.any():
            return None
        idx = np.unravel_index(int(np.argmax(bad)), want.shape)
        return (f"output {name}: {int(bad.sum())} of {want.size} values differ, first at "
                f"index {list(map(int, idx))}: got {got[idx]}, expected {want[idx]}")
    try:
        w = want.astype(np.float64)
        g = got.astype(np.float64)
    except (TypeError, ValueError):
        if want.tobytes() == got.tobytes():
            return None
        return f"output {name}: bytes differ (dtype {want.dtype})"
    nan_w, nan_g = np.isnan(w), np.isnan(g)
    if (nan_w != nan_g).any():
        idx = np.unravel_index(int(np.argmax(nan_w != nan_g)), want.shape)
        return (f"output {name}: NaN mismatch at index {list(map(int, idx))}: "
                f"got {g[idx]}, expected {w[idx]}")
    with np.errstate(invalid="ignore", over="ignore"):
        same = (w == g) | nan_w
        err = np.where(same, 0.0, np.abs(g - w))
        tol = ATOL + RTOL * np.abs(np.where(np.isfinite(w), w, 0.0))
    bad = err > tol
    if not bad.any():
        return None
    flat = np.where(bad, err, -1.0).ravel()
    i = int(np.argmax(flat))
    idx = np.unravel_index(i, want.shape)
    return (f"output {name}: max abs err {_fmt(float(flat[i]))} at index "
            f"{list(map(int, idx))} (got {_fmt(float(g[idx]))}, expected "
            f"{_fmt(float(w[idx]))}; {int(bad.sum())} of {want.size} out of tolerance)")


def run_case(case, axle, device, tmp_root, keep):
    """Returns (passed, reason, seconds)."""
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix=case.name + ".", dir=tmp_root)
    try:
        reason = _run_case_in(case, axle, device, work)
    except Exception as e:  # the runner's own trouble with this case
        reason = one_line(f"runner: {type(e).__name__}: {e}")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    if reason is not None and case.name in DATA_NOTES:
        reason = f"{reason} {DATA_NOTES[case.name]}"
    return reason is None, reason, time.monotonic() - t0


def _run_case_in(case, axle, device, work):
    model_path = case.model_path
    if model_path is None:
        model_path = os.path.join(work, "model.onnx")
        with open(model_path, "wb") as f:
            f.write(case.model.SerializeToString())
    graph = case.model.graph
    frozen = frozen_inputs(case.model)
    for k, (inputs, outputs) in enumerate(case.data_sets):
        cmd = [axle, "run", model_path]
        if device:
            cmd += ["--device", device]
        for j, (vi, arr) in enumerate(zip(graph.input, inputs)):
            path = os.path.join(work, f"ds{k}_input_{j}.npy")
            if arr.dtype.name == "bfloat16":
                arr = arr.astype(np.float32)  # exact; axle casts it back for the input
            if arr.dtype.kind in "OUSV" or arr.dtype.name not in NPY_DTYPES:
                return f"runner: input {vi.name} has dtype {arr.dtype}, which .npy files for axle cannot hold"
            np.save(path, arr, allow_pickle=False)
            cmd += ["--const" if vi.name in frozen else "--input", f"{vi.name}={path}"]
        out_dir = os.path.join(work, f"ds{k}_out")
        cmd += ["--save-outputs", out_dir]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=CASE_TIMEOUT_S, errors="replace")
        except subprocess.TimeoutExpired:
            return f"timed out after {CASE_TIMEOUT_S} s"
        if proc.returncode < 0:
            return f"axle crashed with signal {-proc.returncode}: {cli_error(proc.stderr, proc.returncode, work)}"
        if proc.returncode != 0:
            return cli_error(proc.stderr, proc.returncode, work)
        listing = os.path.join(out_dir, "outputs.txt")
        if not os.path.isfile(listing):
            return "axle exited 0 but wrote no outputs.txt"
        files = {}
        with open(listing, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if "\t" in line:
                    oname, fname = line.split("\t", 1)
                    files[oname] = fname
        for vo, want in zip(graph.output, outputs):
            if vo.name not in files:
                return f"output {vo.name} missing from outputs.txt"
            got = np.load(os.path.join(out_dir, files[vo.name]), allow_pickle=False)
            reason = compare(vo.name, want, got)
            if reason is not None:
                return reason
    return None


# ---------------------------------------------------------------------------
# Lists


def read_lines(path):
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]


def read_claimed(path):
    return [ln.strip() for ln in read_lines(path)]


def read_expected_fail(path):
    out = {}
    for ln in read_lines(path):
        name, _, reason = ln.partition("\t")
        out[name.strip()] = reason
    return out


def list_header():
    return (f"# {ONNX_TAG} {onnx.__version__}: written by run_node_tests.py --update; "
            f"edit by running that\n")


def listed_onnx_version(path):
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        if first.startswith(f"# {ONNX_TAG} "):
            return first.split()[2].rstrip(":")
    return None


def write_lists(pass_path, fail_path, passed, failed):
    with open(pass_path, "w", encoding="utf-8") as f:
        f.write(list_header())
        for name in sorted(passed):
            f.write(name + "\n")
    with open(fail_path, "w", encoding="utf-8") as f:
        f.write(list_header())
        for name in sorted(failed):
            f.write(f"{name}\t{failed[name]}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--axle", default=os.environ.get("AXLE_CLI"),
                    help="the axle CLI (default: $AXLE_CLI)")
    ap.add_argument("--device", default=None, help="device passed to axle run --device")
    ap.add_argument("--update", action="store_true",
                    help="rewrite expected_pass.txt and expected_fail.txt")
    ap.add_argument("--allow-regressions", action="store_true",
                    help="with --update: allow dropping cases from expected_pass.txt")
    ap.add_argument("--data-dir", default=None, help="an onnx backend data/node directory")
    ap.add_argument("-k", dest="name_filter", default=None,
                    help="only cases whose name contains this (not with --update)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel cases (default 2)")
    ap.add_argument("--list-dir", default=HERE,
                    help="directory of claimed_ops.txt and the expected lists")
    ap.add_argument("--keep", action="store_true", help="keep each case's temporary files")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = ap.parse_args(argv)

    if not args.axle:
        ap.error("--axle (or $AXLE_CLI) is required")
    if args.update and args.name_filter:
        ap.error("--update runs every case; drop -k")
    axle = os.path.abspath(args.axle)
    if not os.access(axle, os.X_OK):
        print(f"run_node_tests: {axle} is not an executable", file=sys.stderr)
        return 1

    check_frozen_table()
    claimed_path = os.path.join(args.list_dir, "claimed_ops.txt")
    pass_path = os.path.join(args.list_dir, "expected_pass.txt")
    fail_path = os.path.join(args.list_dir, "expected_fail.txt")
    claimed_list = read_claimed(claimed_path)
    claimed = set(claimed_list)

    t_start = time.monotonic()
    data_dir = args.data_dir or wheel_data_dir()
    if data_dir:
        source = data_dir
        cases = load_cases_from_dir(data_dir, claimed, args.name_filter)
    else:
        source = f"generated by onnx {onnx.__version__} (onnx.backend.test.case.node)"
        cases = load_cases_generated(claimed, args.name_filter)
    t_loaded = time.monotonic()
    print(f"{len(cases)} cases for {len(claimed)} claimed ops, data {source} "
          f"({t_loaded - t_start:.1f} s)", flush=True)

    results = {}
    tmp_root = tempfile.mkdtemp(prefix="axle-onnx-node.")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(run_case, c, axle, args.device, tmp_root, args.keep): c
                       for c in cases}
            for fut in concurrent.futures.as_completed(futures):
                case = futures[fut]
                ok, reason, secs = fut.result()
                results[case.name] = (ok, reason, secs)
                if args.verbose:
                    print(f"{'PASS' if ok else 'FAIL'} {case.name} ({secs:.2f} s)"
                          + ("" if ok else f": {reason}"), flush=True)
    finally:
        if args.keep:
            print(f"case files kept in {tmp_root}")
        else:
            shutil.rmtree(tmp_root, ignore_errors=True)
    t_ran = time.monotonic()

    passed = {n for n, r in results.items() if r[0]}
    failed = {n: r[1] for n, r in results.items() if not r[0]}

    # Summary per op (a multi-op case counts under each of its ops).
    print("\nper op:")
    width = max([len(o) for o in claimed_list] + [2])
    for op in claimed_list:
        names = [c.name for c in cases if op in c.ops]
        if not names and args.name_filter:
            continue
        p = sum(1 for n in names if n in passed)
        print(f"  {op:<{width}} {p} passed, {len(names) - p} failed")
    slow = sorted(results.items(), key=lambda kv: -kv[1][2])[:3]
    if slow:
        print("slowest: " + ", ".join(f"{n} {r[2]:.2f} s" for n, r in slow))

    expected_pass = set(read_lines(pass_path))
    expected_fail = read_expected_fail(fail_path)
    ran = set(results)
    regressions = sorted(n for n in expected_pass if n in failed)
    status = 0
    if args.update:
        if regressions and not args.allow_regressions:
            print("\nrefusing to update: these expected passes now fail "
                  "(fix them, or pass --allow-regressions):")
            for n in regressions:
                print(f"  {n}: {failed[n]}")
            status = 1
        else:
            write_lists(pass_path, fail_path, passed, failed)
            gained = sorted(passed - expected_pass)
            print(f"\nwrote {pass_path} ({len(passed)} cases, {len(gained)} new) and "
                  f"{fail_path} ({len(failed)} cases)")
            for n in gained:
                print(f"  new pass: {n}")
            for n in regressions:
                print(f"  dropped (now fails): {n}: {failed[n]}")
    else:
        unlisted_fail = sorted(n for n in failed if n not in expected_fail and n not in expected_pass)
        fixed = sorted(n for n in passed if n not in expected_pass)
        missing = sorted(n for n in (expected_pass | set(expected_fail))
                         if n not in ran and not args.name_filter)
        if regressions:
            status = 1
            print(f"\nREGRESSIONS: {len(regressions)} case(s) of expected_pass.txt fail:")
            for n in regressions:
                print(f"  {n}: {failed[n]}")
        if unlisted_fail:
            status = 1
            print(f"\nNEW FAILURES: {len(unlisted_fail)} failing case(s) missing from "
                  f"expected_fail.txt:")
            for n in unlisted_fail:
                print(f"  {n}: {failed[n]}")
        if fixed:
            status = 1
            print(f"\nNEWLY PASSING: {len(fixed)} case(s) pass but are not in "
                  f"expected_pass.txt; run `{os.path.basename(__file__)} --update` so that "
                  f"the list of passes grows:")
            for n in fixed:
                print(f"  {n}")
        listed = listed_onnx_version(pass_path)
        if listed and listed != onnx.__version__ and (unlisted_fail or fixed or missing):
            print(f"\nnote: the lists were written with onnx {listed}, this is onnx "
                  f"{onnx.__version__}; its node tests may differ")
        if missing:
            print(f"\nnote: {len(missing)} listed case(s) not found in this onnx's test data "
                  f"(first: {missing[0]})")
    print(f"\ntimes: load {t_loaded - t_start:.1f} s, run {t_ran - t_loaded:.1f} s "
          f"({args.jobs} workers)")
    print(f"{'FAILED' if status else 'OK'}: {len(passed)} passed, {len(failed)} failed "
          f"({sum(1 for n in expected_fail if n in ran)} failures expected)")
    return status


if __name__ == "__main__":
    sys.exit(main())
