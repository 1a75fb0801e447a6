#!/usr/bin/env bash
# Runs on a GPU machine: `apnn tune` on `apnn bench` problems, then `apnn bench` on the same
# shapes without a tile: each of its rows says which tile it ran and whether that tile came
# from the tuning database ("tuned") or not ("untuned").
# Usage: scripts/tune_check.sh BIN_DIR [OUT_DIR]
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
export APNN_CACHE_DIR=${APNN_CACHE_DIR:-$(mktemp -d)}
echo '{"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"}' > /tmp/w1a2.json
echo '{"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned"}' > /tmp/w2a2.json
echo '{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]}' > /tmp/conv.json
problems=("/tmp/w1a2.json --m 64 --n 1024 --k 1024"
          "/tmp/w2a2.json --m 1024 --n 4096 --k 4096"
          "/tmp/conv.json --batch 1 --in-channels 256 --height 16 --width 16 --out-channels 256"
          "/tmp/conv.json --batch 8 --in-channels 256 --height 14 --width 14 --out-channels 256")
status=0
for p in "${problems[@]}"; do
  echo "== apnn tune $p"
  "$bin/apnn" tune $p --top 3 2>>"$out/tune_progress.log" | tee -a "$out/tune.txt" || status=1
done
echo "== apnn bench on the same shapes, no tile given: which tile each row ran"
"$bin/apnn" bench --shapes 64x1024x1024,1024x4096x4096,n1-16x16x256-o256-k3s1,n8-14x14x256-o256-k3s1 \
  --prec w1a2,w2a2 --json "$out/bench_after_tune.json" > "$out/bench_after_tune.txt" 2> "$out/bench_after_tune.log" || status=1
grep -E "^(gemm|conv) .* tile " "$out/bench_after_tune.log"
exit $status
