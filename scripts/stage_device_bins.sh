#!/usr/bin/env bash
# Builds stripped Release binaries here (no GPU needed) and stages them with the golden
# vectors in .devbin/ (or $DEVBIN), small enough to carry to the device machine.
# Usage: scripts/stage_device_bins.sh [ninja targets]; BUILD_DIR (default build-release).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-release}
dest=${DEVBIN:-$root/.devbin}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" ${1:-}
rm -rf "$dest" && mkdir -p "$dest"
# apnn carries `apnn bench` (cuBLASLt and cuDNN are dlopened there, not carried).
# The GPU suites, and the CLI suites whose end-to-end GPU checks run where a GPU is
# (test_bench_placement: APNN_BENCH_PLACEMENT names the carried apnn_bench_placement).
cp "$build/cli/apnn" "$build"/tests/*/test_*gpu* "$build/tests/cli/test_cli_epilogue" "$build/tests/cli/test_cli" \
  "$build/tests/bench/test_bench_placement" "$dest/" 2>/dev/null || true
[ -d "$build/bench" ] && find "$build/bench" -maxdepth 1 -type f -perm -u+x -name 'apnn_bench_*' -exec cp {} "$dest/" \;
strip "$dest"/* 2>/dev/null || true
cp -r "$root/../shared/vectors" "$dest/vectors"
du -sh "$dest"
