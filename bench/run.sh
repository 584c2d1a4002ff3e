#!/usr/bin/env bash
# Runs every benchmark against an existing build (default ./build).
# Figures only: nothing here passes or fails on time.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
echo "== overhead: synchronous run of the 1-node Add model (1x1000 float32) =="
python3 bench/overhead/compare.py "$BUILD/bin/axle_bench_overhead" tests/models/add.onnx "${RUNS:-20000}"

echo "== bindings/python: per-run overhead of the 1-node Add model from Python (C API, Axle Python, ORT Python) =="
# The package is built against $BUILD into $BUILD/bench-python (never the source tree).
py_site=$BUILD/bench-python/site
case $py_site in /*) ;; *) py_site=$PWD/$py_site ;; esac
if python3 tests/python_bindings/install_package.py bindings/python "$BUILD" \
    "$py_site" "$BUILD/bench-python/work" >"$BUILD/bench-python.log" 2>&1; then
  PYTHONPATH="$py_site${PYTHONPATH:+:$PYTHONPATH}" \
    python3 bench/bindings/python_overhead.py "$BUILD/bin/axle_bench_overhead" tests/models/add.onnx "${RUNS:-20000}"
else
  echo "skipped: building the Python package failed (see $BUILD/bench-python.log)"
fi

echo "== bindings/lua: per-run overhead of the 1-node Add model from Lua =="
if command -v lua5.4 >/dev/null && [ -f "$BUILD/lib/lua/5.4/axle.so" ]; then
  LUA_CPATH="$BUILD/lib/lua/5.4/?.so" AXLE_PLUGIN_PATH="$BUILD/lib/axle/plugins" \
    lua5.4 bench/bindings/lua_overhead.lua tests/models/add.onnx "${RUNS:-20000}" "$BUILD/bin/axle_bench_overhead"
else
  echo "skipped: lua5.4 or the Lua module is missing"
fi

echo "== drpai: START round trip, digits on the emulated DRP-AI vs the CPU =="
AXLE_PLUGIN_PATH="$BUILD/lib/axle/plugins" "$BUILD/bin/axle_bench_drpai" examples "${RUNS:-2000}"

echo "== k210: KPU emulator throughput and emulated chip time vs host time =="
AXLE_PLUGIN_PATH="$BUILD/lib/axle/plugins" "$BUILD/bin/axle_bench_k210" || echo "skipped: axle_bench_k210 missing or failed"

# CPU plugin: Axle against ONNX Runtime on MobileNetV2 / ResNet-18 / ResNet-50
# (1 and 2 threads), SGEMM against OpenBLAS and the measured FMA peak, and the
# elementwise / softmax kernels against their scalar references.
# Details and options: bench/cpu/run.py --help; results: docs/cpu-performance.md.
echo
echo "== cpu: networks against ONNX Runtime, SGEMM against OpenBLAS, elementwise kernels =="
python3 bench/cpu/run.py --build "$BUILD" --elementwise
