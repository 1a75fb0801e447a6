#!/usr/bin/env bash
# Runs on a GPU machine: `apnn tune` over `apnn bench` shapes (w1a2 GEMMs and convs), then
# the distribution of heuristic time / tuned winner time (issue 6's target: within 15%).
# Usage: scripts/heuristic_check.sh BIN_DIR [OUT_DIR] [SHAPE_SET]  (SHAPE_SET: quick | full)
set -u -o pipefail
bin=${1:?binary dir}
out=${2:-/tmp}
set_name=${3:-full}
export APNN_CACHE_DIR=${APNN_CACHE_DIR:-$(mktemp -d)}
echo '{"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"}' > /tmp/hc_w1a2.json
echo '{"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned"}' > /tmp/hc_w2a2.json
echo '{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]}' > /tmp/hc_conv.json
problems=()
for m in 64 1024; do for nk in 256 1024 4096; do problems+=("/tmp/hc_w1a2.json --m $m --n $nk --k $nk"); done; done
problems+=("/tmp/hc_w2a2.json --m 1024 --n 4096 --k 4096")
for c in 128 256 512 1024; do problems+=("/tmp/hc_conv.json --batch 1 --in-channels $c --height 16 --width 16 --out-channels $c"); done
problems+=("/tmp/hc_conv.json --batch 8 --in-channels 64 --height 56 --width 56 --out-channels 64"
           "/tmp/hc_conv.json --batch 8 --in-channels 256 --height 14 --width 14 --out-channels 256")
[ "$set_name" = quick ] && problems=("${problems[@]:0:2}")
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
