#!/usr/bin/env bash
# Builds stripped Release binaries here (no GPU needed) and stages them with the golden
# vectors in .devbin/ (or $DEVBIN), small enough to carry to the device machine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${DEVBIN:-$root/.devbin}
cmake -S "$root" -B "$root/build-release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$root/build-release" ${1:-}
rm -rf "$dest" && mkdir -p "$dest"
# apnn carries `apnn bench` (cuBLASLt and cuDNN are dlopened there, not carried).
cp "$root/build-release/cli/apnn" "$root"/build-release/tests/*/test_*gpu* "$dest/" 2>/dev/null || true
cp "$root/build-release/bench/apnn_bench_lookup" "$dest/" 2>/dev/null || true
strip "$dest"/* 2>/dev/null || true
cp -r "$root/../shared/vectors" "$dest/vectors"
du -sh "$dest"
