#!/usr/bin/env bash
# Runs on a GPU machine over binaries built elsewhere (scripts/stage_device_bins.sh):
# the GPU test suites, `apnn verify` timings for the issue's reference shapes, then
# `apnn bench` (APNN_BENCH_FLAGS, e.g. --quick, are passed on).
# Usage: scripts/gpu_check.sh BIN_DIR [OUT_DIR]
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
export APNN_VECTORS_DIR=$bin/vectors
export APNN_CACHE_DIR=$(mktemp -d)
export APNN_CLI=$(cd "$bin" && pwd)/apnn  # the CLI end-to-end suites run the carried binary
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
    "$bin/apnn" verify /tmp/spec.json --m $1 --n $2 --k $3 --json | tee -a "$out/verify.jsonl" \
      | python3 -c "import json,sys; r=json.load(sys.stdin); s=r['spec']; print('w%da%d %s: %.2f us (%.1f TOPS) over %d input sets, mismatches %d' % (s['w_bits'], s['x_bits'], 'x'.join(str(r['shape'][k]) for k in 'mnk'), r['kernel_us'], r['tops'], r['timing']['sets'], r['mismatches']))" || status=1
  done
done
if command -v cuobjdump >/dev/null; then
  echo "== SASS of the cached w1a2 APMM kernel"
  python3 "$(dirname "$0")/sass_summary.py" "$APNN_CACHE_DIR" '"op":"apmm"' '"w_bits":1' '"x_bits":2' | head -n 12
fi
echo "== apnn verify: APConv, the paper's layers (N=1, 16x16, 3x3/1 pad 1)"
for prec in "1 pm1 2 unsigned" "2 signed 2 unsigned" "1 pm1 4 unsigned" "2 signed 8 unsigned"; do
  set -- $prec
  echo "{\"op\":\"apconv\",\"w_bits\":$1,\"w_enc\":\"$2\",\"x_bits\":$3,\"x_enc\":\"$4\",\"kernel\":[3,3],\"stride\":[1,1],\"pad\":[1,1]}" > /tmp/conv.json
  for c in 128 256 512 1024; do
    "$bin/apnn" verify /tmp/conv.json --batch 1 --in-channels $c --height 16 --width 16 --out-channels $c --json \
      | tee -a "$out/verify.jsonl" | python3 -c "import json,sys; r=json.load(sys.stdin); print('w%da%d C=O=%d: %.2f us over %d input sets, mismatches %d' % (r['spec']['w_bits'], r['spec']['x_bits'], r['shape']['in_channels'], r['kernel_us'], r['timing']['sets'], r['mismatches']))" || status=1
  done
done
echo "== apnn bench: ours vs cuBLASLt int8/fp8/fp16 and cuDNN fp16/int8, one process, one timing rule"
# cuDNN on the GPU machine is PyTorch's: apnn bench dlopens libcudnn.so.9 from LD_LIBRARY_PATH.
cudnn=$(find / -name 'libcudnn.so.9' -not -path '*/proc/*' 2>/dev/null | head -1)
LD_LIBRARY_PATH=$(dirname "${cudnn:-/usr/lib/x}"):${LD_LIBRARY_PATH:-} \
  "$bin/apnn" bench ${APNN_BENCH_FLAGS:-} --json "$out/bench.json" --chart "$out/bench.svg" || status=1
exit $status
