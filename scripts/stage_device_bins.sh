#!/usr/bin/env bash
# Builds stripped Release binaries here (no GPU needed) and stages them with the golden
# vectors in .devbin/, small enough to carry to the device machine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build-release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$root/build-release" ${1:-}
rm -rf "$root/.devbin" && mkdir -p "$root/.devbin"
cp "$root/build-release/cli/apnn" "$root"/build-release/tests/*/test_*gpu* "$root/.devbin/" 2>/dev/null || true
[ -d "$root/build-release/bench" ] && find "$root/build-release/bench" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/.devbin/" \;
strip "$root"/.devbin/* 2>/dev/null || true
cp -r "$root/../shared/vectors" "$root/.devbin/vectors"
du -sh "$root/.devbin"
