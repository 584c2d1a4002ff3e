#!/usr/bin/env bash
# Runs every benchmark against an existing build (default ./build).
# Figures only: nothing here passes or fails on time.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
echo "== overhead: synchronous run of the 1-node Add model (1x1000 float32) =="
python3 bench/overhead/compare.py "$BUILD/bin/axle_bench_overhead" tests/models/add.onnx "${RUNS:-20000}"
