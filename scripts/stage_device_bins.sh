#!/usr/bin/env bash
# Builds stripped Release binaries here (no GPU needed) and stages them with the golden
# vectors in .devbin/, small enough to carry to the device machine.
set -eu
# Usage: scripts/stage_device_bins.sh [ninja targets]; BUILD_DIR (default build-release).
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-release}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" ${1:-}
rm -rf "$root/.devbin" && mkdir -p "$root/.devbin"
cp "$build/cli/apnn" "$build"/tests/*/test_*gpu* "$root/.devbin/" 2>/dev/null || true
[ -d "$build/bench" ] && find "$build/bench" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/.devbin/" \;
strip "$root"/.devbin/* 2>/dev/null || true
cp -r "$root/../shared/vectors" "$root/.devbin/vectors"
du -sh "$root/.devbin"
