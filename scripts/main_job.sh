#!/usr/bin/env bash
# The main job: compile a w1a2 APMM (no GPU needed) and, where a GPU is present,
# verify it against the CPU reference and time it.
# Usage: scripts/main_job.sh [BUILD_DIR]
set -u
build=${1:-build}
spec=$(dirname "$0")/../examples/apmm_w1a2.json
"$build/cli/apnn" compile "$spec" --arch sm_90a || exit
"$build/cli/apnn" verify "$spec" --m 4096 --n 4096 --k 4096
rc=$?
if [ $rc -eq 3 ]; then echo "no GPU here: compiled only (verify and timing need a CUDA device)"; exit 0; fi
exit $rc
