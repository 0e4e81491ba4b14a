#!/usr/bin/env bash
# On a GPU machine without LLVM: builds the verifier's GPU half (dice-verify,
# dice-verify-worker, the light-build bridge), verifies every corpus kernel
# through the sandboxed workers and checks the verdicts against labels.json
# (with the static findings of test/gpu/results/corpus-static.jsonl, made
# where Clang is: `dice-verify --analysis-only`); then, with --bench, times
# dice-verify against the load_inline flow. Results go to $OUT.
#   test/gpu/run-verifier.sh [--bench] [PYTHON]
set -uo pipefail
bench=0
[[ ${1:-} == --bench ]] && { bench=1; shift; }
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/dice-verifier}
mkdir -p "$OUT"
start=$SECONDS
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-verify-worker dice-verify DiceLightBridge || exit 1
echo "built in $((SECONDS - start)) s"
dice_machine_info "$OUT/machine.txt"

"$PY" test/gpu/check_corpus_verdicts.py --write-batch "$OUT/corpus-batch.jsonl"
start=$SECONDS
build-gpu/bin/dice-verify --batch "$OUT/corpus-batch.jsonl" --jobs "$(nproc)" --json \
  --cache "$OUT/cache" > "$OUT/corpus-gpu.jsonl" 2> "$OUT/corpus-gpu.log"
echo "corpus verified in $((SECONDS - start)) s"
tail -5 "$OUT/corpus-gpu.log"
status=0
"$PY" test/gpu/check_corpus_verdicts.py --gpu "$OUT/corpus-gpu.jsonl" \
  --static test/gpu/results/corpus-static.jsonl --markdown "$OUT/corpus.md" || status=1
# The worker logs of crashed candidates, for the record.
find "$OUT/cache/workers" -name worker.log -exec tail -n 3 {} + > "$OUT/worker-logs.txt" 2>/dev/null; true

if ((bench)); then
  "$PY" bench/verify_vs_load_inline.py --build build-gpu --python "$PY" --corpus-batch 64 \
    --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -25
fi
exit $status
