"""bench/bindings: per-run overhead of the Python binding on the 1-node Add
model, next to the C API (axle_bench_overhead) and ONNX Runtime's Python API,
all measured in the same run. Prints figures and ratios; never fails on time.

usage: python_overhead.py AXLE_BENCH_OVERHEAD_BINARY MODEL [RUNS]

Targets (issue 3): Python adds <= 5 us per run over the C API; Axle-Python
<= 0.5 x ORT-Python. The Python figures interleave Axle and ONNX Runtime in
blocks so that machine noise hits both alike.
"""
import re
import subprocess
import sys
import time

import numpy as np


def stats(times_us):
    t = sorted(times_us)
    n = len(t)
    return t[n // 2], t[n // 10], t[n * 9 // 10]


def line(label, times_us):
    med, p10, p90 = stats(times_us)
    print("%-44s median %7.3f us  p10 %7.3f us  p90 %7.3f us  (%d runs)"
          % (label, med, p10, p90, len(times_us)))
    return med


def c_api(binary, model, runs):
    out = subprocess.run([binary, model, str(runs)], check=True, capture_output=True,
                         text=True).stdout
    print(out, end="")
    medians = [float(m) for m in re.findall(r"median\s+([0-9.]+) us", out)]
    if len(medians) < 2:
        raise SystemExit("python_overhead: unexpected output from %s" % binary)
    return medians[0], medians[1]   # caller-owned output, library-allocated output


def timed(fn, n, out):
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        fn()
        out.append((clock() - t0) * 1e6)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    import axle
    import onnxruntime as ort

    c_owned, c_alloc = c_api(binary, model, runs)

    sess = axle.Session(model)
    feeds = {i.name: np.zeros(i.shape, i.dtype) for i in sess.inputs}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    ort_sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    ort_feeds = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
                 for i in ort_sess.get_inputs()}

    def axle_run():
        sess.run(None, feeds)

    def axle_async():
        sess.run_async(None, feeds).result()

    def ort_run():
        ort_sess.run(None, ort_feeds)

    for fn in (axle_run, ort_run, axle_async):
        for _ in range(1000):
            fn()
    t_axle, t_ort, t_async = [], [], []
    blocks = 10
    for _ in range(blocks):
        timed(axle_run, runs // blocks, t_axle)
        timed(ort_run, runs // blocks, t_ort)
    timed(axle_async, max(runs // 10, 100), t_async)

    py = line("Axle Python, Session.run()", t_axle)
    ort_med = line("ONNX Runtime Python, InferenceSession.run()", t_ort)
    line("Axle Python, run_async().result()", t_async)
    print("Python over C (library-allocated output): %+7.3f us  (target <= 5 us)" % (py - c_alloc))
    print("Python over C (caller-owned output):      %+7.3f us" % (py - c_owned))
    print("ratio Axle Python / ORT Python:           %7.3f     (target <= 0.5)" % (py / ort_med))
    print("ratio Axle C (library-allocated) / ORT Python: %.3f" % (c_alloc / ort_med))


if __name__ == "__main__":
    main()
