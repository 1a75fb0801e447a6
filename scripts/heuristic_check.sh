#!/usr/bin/env bash
# Runs on a GPU machine: `apnn tune` over `apnn bench` shapes (w1a2 GEMMs and convs), then
# the distribution of heuristic time / tuned winner time (issue 6's target: within 15%).
# Usage: scripts/heuristic_check.sh BIN_DIR [OUT_DIR] [SHAPE_SET]  (SHAPE_SET: quick | gemm | conv | full)
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
set_name=${3:-full}
export APNN_CACHE_DIR=${APNN_CACHE_DIR:-$(mktemp -d)}
echo '{"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"}' > /tmp/hc_w1a2.json
echo '{"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned"}' > /tmp/hc_w2a2.json
echo '{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]}' > /tmp/hc_conv.json
echo '{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[2,2],"pad":[1,1]}' > /tmp/hc_conv_s2.json
# The CPU reference checks every candidate's whole output, so batch-128 convs and M=8192
# GEMMs beyond K=1024 are left out (minutes of reference each).
gemm=()
for m in 64 1024 8192; do for nk in 256 1024 4096; do
  [ $m = 8192 ] && [ $nk = 4096 ] && continue
  gemm+=("/tmp/hc_w1a2.json --m $m --n $nk --k $nk"); done; done
gemm+=("/tmp/hc_w2a2.json --m 1024 --n 4096 --k 4096" "/tmp/hc_w2a2.json --m 64 --n 1024 --k 1024")
conv=()
for c in 128 256 512 1024; do conv+=("/tmp/hc_conv.json --batch 1 --in-channels $c --height 16 --width 16 --out-channels $c"); done
for hc in "56 64" "28 128" "14 256" "7 512"; do set -- $hc
  conv+=("/tmp/hc_conv.json --batch 8 --in-channels $2 --height $1 --width $1 --out-channels $2"); done
conv+=("/tmp/hc_conv_s2.json --batch 8 --in-channels 64 --height 56 --width 56 --out-channels 128"
       "/tmp/hc_conv_s2.json --batch 8 --in-channels 256 --height 14 --width 14 --out-channels 512")
case "$set_name" in
  quick) problems=("${gemm[@]:0:2}") ;;
  gemm) problems=("${gemm[@]}") ;;
  conv) problems=("${conv[@]}") ;;
  *) problems=("${gemm[@]}" "${conv[@]}") ;;
esac
status=0
: > "$out/heuristic.jsonl"
for p in "${problems[@]}"; do
  "$bin/apnn" tune $p --json --top 100000 2>>"$out/tune_progress.log" >> "$out/heuristic.jsonl" || status=1
done
python3 - "$out/heuristic.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ratios = []
for r in rows:
    win, heu = r["top"][0], r["heuristic"]
    ratio = heu["us"] / win["us"]
    ratios.append(ratio)
    t = lambda x: "%dx%d/%d %dx%d s%d" % (x["bm"], x["bn"], x["bk"], x["warps_m"], x["warps_n"], x["stages"])
    print("%-70s winner %-22s %8.2f us  heuristic %-22s %8.2f us  %.2fx" % (r["key"][:70], t(win["tile"]), win["us"], t(heu["tile"]), heu["us"], ratio))
ratios.sort()
within = sum(1 for x in ratios if x <= 1.15)
print("heuristic / winner over %d shapes: min %.2f, median %.2f, max %.2f; within 15%%: %d of %d" % (len(ratios), ratios[0], ratios[len(ratios)//2], ratios[-1], within, len(ratios)))
PY
exit $status
