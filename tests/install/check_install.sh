#!/usr/bin/env bash
# Installs the build tree into a scratch prefix and builds a user program
# against it twice: through find_package(Axle) and through pkg-config. Both
# must find the installed CPU plugin without AXLE_PLUGIN_PATH.
set -euo pipefail
build=$1 src=$2 model=$3 extra_cflags=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
unset AXLE_PLUGIN_PATH
export LD_LIBRARY_PATH=$prefix/lib

cmake -S "$src/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="$extra_cflags" -DCMAKE_EXE_LINKER_FLAGS="$extra_cflags" >/dev/null
cmake --build "$work/cmake" >/dev/null
out=$("$work/cmake/consumer" "$model")
echo "find_package: $out"
grep -q ' cpu' <<<"$out"
grep -q 'session ok' <<<"$out"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046,SC2086
cc $extra_cflags "$src/consumer/consumer.c" $(pkg-config --cflags --libs axle) -o "$work/pc_consumer"
out=$("$work/pc_consumer" "$model")
echo "pkg-config: $out"
grep -q ' cpu' <<<"$out"
grep -q 'session ok' <<<"$out"
echo "install checks passed"
