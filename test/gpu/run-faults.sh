#!/usr/bin/env bash
# On a GPU machine without LLVM: builds the verifier's GPU half (as
# run-verifier.sh does) and runs the fault-injection suite through one
# sandboxed GPU worker: honest corpus candidates, every fault_*.cu of the
# corpus, the honest candidates again (test/gpu/fault_suite.py). Writes
# faults.json (verdicts, wall seconds, dice-verify's exit, the pool's
# throughput before and after the faults) and faults.md into the results
# folder; the static findings come from test/gpu/results/corpus-static.jsonl
# (made where Clang is: `dice-verify --analysis-only` over the corpus batch).
# The CPU side of the suite is test/python/test_fault_injection.py.
#   test/gpu/run-faults.sh [RESULTS_DIR] [PYTHON]
set -uo pipefail
OUT=${1:-${OUT:-/tmp/dice-faults}}
PY=${2:-/opt/torch/.venv/bin/python}
# Outside the results: a fault writes a 1 GiB log into its worker's scratch.
CACHE=${DICE_FAULT_CACHE:-/tmp/dice-faults-cache}
mkdir -p "$OUT" "$CACHE"
start=$SECONDS
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-verify-worker dice-verify DiceLightBridge || exit 1
echo "built in $((SECONDS - start)) s"
dice_machine_info "$OUT/machine.txt"

start=$SECONDS
"$PY" test/gpu/fault_suite.py --build build-gpu --cache "$CACHE" --out "$OUT" \
  --static test/gpu/results/corpus-static.jsonl --jobs "$(nproc)"
status=$?
echo "fault suite ran in $((SECONDS - start)) s (status $status)"
exit $status
