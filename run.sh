#!/usr/bin/env bash
# Builds Axle and runs its main job, its tests or its benchmarks.
#
#   ./run.sh         install what is missing, build ./build, classify a sample digit
#   ./run.sh test    the same build, every test (ctest), then again in ./build-asan
#                    with AddressSanitizer + UndefinedBehaviorSanitizer, and in
#                    ./build-tsan with ThreadSanitizer
#   ./run.sh asan    only the ASan + UBSan build and its tests
#   ./run.sh tsan    only the ThreadSanitizer build and its tests
#   ./run.sh bench   build, then the benchmarks in bench/
#   ./run.sh build   build only
#
# Environment: JOBS (parallel build jobs, default: CPU count), CTEST_PARALLEL_LEVEL
# (ctest's own), AXLE_NO_DEPS=1 (skip the dependency check).
set -euo pipefail
cd "$(dirname "$0")"

JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PYTHON=${PYTHON:-$(command -v python3 || true)}

APT_PACKAGES=(cmake gcc g++ pkg-config libprotobuf-c-dev protobuf-c-compiler libonnx-dev libcunit1-dev
  liblua5.4-dev lua5.4)
# "module:pip name" pairs: what Python imports, what pip installs.
PIP_PACKAGES=(numpy:numpy onnx:onnx onnxruntime:onnxruntime sklearn:scikit-learn pyflakes:pyflakes
  pytest:pytest setuptools:setuptools nbclient:nbclient nbformat:nbformat ipykernel:ipykernel
  matplotlib:matplotlib)

log() { printf '== %s\n' "$*" >&2; }

install_deps() {
  [ "${AXLE_NO_DEPS:-0}" = 1 ] && return 0
  local missing=() p
  if command -v dpkg-query >/dev/null 2>&1; then
    for p in "${APT_PACKAGES[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    if [ -z "$PYTHON" ]; then missing+=(python3 python3-pip); fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  PYTHON=${PYTHON:-$(command -v python3)}

  local pip_missing=() pair
  for pair in "${PIP_PACKAGES[@]}"; do
    "$PYTHON" -c "import ${pair%%:*}" >/dev/null 2>&1 || pip_missing+=("${pair#*:}")
  done
  if [ "${#pip_missing[@]}" -gt 0 ]; then
    log "installing ${pip_missing[*]} (pip)"
    # Debian's own python3 refuses plain pip installs (PEP 668); a virtualenv
    # or pyenv python does not need the override.
    "$PYTHON" -m pip install -q --disable-pip-version-check "${pip_missing[@]}" 2>/dev/null ||
      "$PYTHON" -m pip install -q --disable-pip-version-check --break-system-packages \
        "${pip_missing[@]}"
  fi
}

# build DIR [cmake options...]: configure (once) and build everything.
build() {
  local dir=$1
  shift
  log "building $dir"
  cmake -S . -B "$dir" --log-level=WARNING -DPython3_EXECUTABLE="$PYTHON" "$@"
  cmake --build "$dir" --parallel "$JOBS"
}

build_release() { build build -DCMAKE_BUILD_TYPE=RelWithDebInfo; }

run_tests() {
  local dir=$1
  log "testing $dir"
  ctest --test-dir "$dir" --output-on-failure
}

asan() {
  build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAXLE_SANITIZE=ON
  run_tests build-asan
}

# The tests that cannot run under ThreadSanitizer (the Python bindings, two Lua
# scripts, the DRP-AI tests that fork) are listed as disabled in this build;
# a race report makes the reporting process exit with 66, failing its test.
tsan() {
  build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAXLE_SANITIZE_THREAD=ON
  run_tests build-tsan
}

main_job() {
  local model=examples/digits/digits.onnx samples
  if [ ! -f "$model" ]; then
    log "examples/digits/digits.onnx is missing: training it (examples/digits/train.py)"
    "$PYTHON" examples/digits/train.py
  fi
  samples=(examples/digits/samples/7_*.pgm)
  log "axle run $model --input ${samples[0]}   (a held-out 7)"
  local out top
  out=$(build/bin/axle run "$model" --input "${samples[0]}")
  printf '%s\n' "$out"
  # The first line under "top-5" is the predicted class.
  top=$(printf '%s\n' "$out" | awk '/top-/ { getline; sub(":.*", ""); print $1; exit }')
  if [ "$top" != 7 ]; then
    echo "run.sh: expected the digit 7, the model said '${top}'" >&2
    exit 1
  fi
  log "predicted digit: $top"
}

case "${1:-}" in
  "")
    install_deps
    build_release
    main_job
    ;;
  test)
    install_deps
    build_release
    # Every build's tests run even when an earlier one has failures: a
    # sanitizer report often explains them.
    status=0
    run_tests build || status=$?
    asan || status=$?
    tsan || status=$?
    exit "$status"
    ;;
  asan)
    install_deps
    asan
    ;;
  tsan)
    install_deps
    tsan
    ;;
  bench)
    # The SGEMM benchmark compares with Debian's OpenBLAS (never linked by Axle).
    APT_PACKAGES+=(libopenblas-dev)
    install_deps
    build_release
    if [ -x bench/run.sh ]; then
      BUILD=build bench/run.sh
    else
      build/bin/axle bench examples/digits/digits.onnx --runs 1000
    fi
    ;;
  build)
    install_deps
    build_release
    ;;
  -h | --help | help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "run.sh: unknown command '$1' (try ./run.sh --help)" >&2
    exit 2
    ;;
esac
