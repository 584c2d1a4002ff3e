"""Baseline for bench/overhead: ONNX Runtime's per-run overhead on the same
model, measured in the same bench run (Python InferenceSession.run)."""
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.zeros(shape, dtype=np.float32)
    for _ in range(1000):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    n = len(times)
    print("%-34s median %7.3f us  p10 %7.3f us  p90 %7.3f us  (%d runs)"
          % ("ONNX Runtime, Python run()", times[n // 2], times[n // 10], times[n * 9 // 10], n))
    return times[n // 2]


if __name__ == "__main__":
    main()
