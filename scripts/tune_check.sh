#!/usr/bin/env bash
# Runs on a GPU machine: `apnn tune` on four problems, then untuned `apnn verify` requests
# of the same problems, whose printed spec shows the tile they picked (the recorded winner).
# Usage: scripts/tune_check.sh BIN_DIR [OUT_DIR]
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
export APNN_CACHE_DIR=$(mktemp -d)
echo '{"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"}' > /tmp/w1a2.json
echo '{"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned"}' > /tmp/w2a2.json
echo '{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]}' > /tmp/conv.json
problems=("/tmp/w1a2.json --m 64 --n 1024 --k 1024"
          "/tmp/w1a2.json --m 1024 --n 4096 --k 4096"
          "/tmp/w2a2.json --m 4096 --n 4096 --k 4096"
          "/tmp/conv.json --batch 1 --in-channels 256 --height 16 --width 16 --out-channels 256")
status=0
for p in "${problems[@]}"; do
  echo "== apnn tune $p"
  "$bin/apnn" tune $p --top 3 2>"$out/tune_progress.log" | tee -a "$out/tune.txt" || status=1
done
echo "== untuned requests after tuning (the tile each one picked)"
for p in "${problems[@]}"; do
  "$bin/apnn" verify $p --json | tee -a "$out/verify_after_tune.jsonl" \
    | python3 -c "import json,sys; r=json.load(sys.stdin); t=r['spec']['tile']; print('%s: tile bm=%d bn=%d bk=%d stages=%d warps=%dx%d, %.2f us, mismatches %d' % (json.dumps(r['shape']), t['bm'], t['bn'], t['bk'], t['stages'], t['warps_m'], t['warps_n'], r['kernel_us'], r['mismatches']))" || status=1
done
exit $status
