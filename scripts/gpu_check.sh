#!/usr/bin/env bash
# Runs on a GPU machine over binaries built elsewhere (scripts/stage_device_bins.sh):
# the GPU test suites, then `apnn verify` timings for the issue's reference shapes.
# Usage: scripts/gpu_check.sh BIN_DIR [OUT_DIR]
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
export APNN_VECTORS_DIR=$bin/vectors
export APNN_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
status=0
for t in "$bin"/test_*; do
  echo "== $(basename "$t")"
  "$t" 2>&1 | tee "$out/$(basename "$t").log" | tail -n 15 || status=1
done
echo "== apnn verify timings (median of 5 x 50 back-to-back launches)"
for prec in "1 unsigned 1 unsigned" "1 pm1 2 unsigned" "2 unsigned 2 unsigned"; do
  set -- $prec
  echo "{\"op\":\"apmm\",\"w_bits\":$1,\"w_enc\":\"$2\",\"x_bits\":$3,\"x_enc\":\"$4\"}" > /tmp/spec.json
  for shape in "64 1024 1024" "4096 4096 4096"; do
    set -- $shape
    "$bin/apnn" verify /tmp/spec.json --m $1 --n $2 --k $3 --json | tee -a "$out/verify.jsonl" || status=1
  done
done
exit $status
