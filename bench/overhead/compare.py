"""bench/overhead: Axle's per-run overhead through the C API next to ONNX
Runtime's (Python) on the same model in the same run, printed as ratios."""
import re
import subprocess
import sys

from ort_overhead import main as ort_main


def run(binary, model, runs):
    out = subprocess.run([binary, model, str(runs)], check=True, capture_output=True, text=True).stdout
    print(out, end="")
    return [float(m) for m in re.findall(r"median\s+([0-9.]+) us", out)]


if __name__ == "__main__":
    binary, model = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    axle = run(binary, model, runs)
    sys.argv = [sys.argv[0], model, str(runs)]
    ort_median = ort_main()
    if axle:
        print("ratio Axle C (caller-owned output) / ORT Python: %.3f" % (axle[0] / ort_median))
        print("ratio Axle C (allocated output) / ORT Python:    %.3f" % (axle[1] / ort_median))
