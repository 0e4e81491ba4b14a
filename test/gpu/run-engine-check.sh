#!/usr/bin/env bash
# The data engine on a GPU node (docs/corpus.md, "The data engine"), from
# the repository root, with .deps carried along (the engine and the
# verifier need no compiler front end, so not .gpu-tools). Results go
# to $OUT:
#   $OUT/engine-summary.json   100,000 distinct requests drawn on this
#       node's cores (the corpus itself stays on the node: it is ~1 GB)
#   $OUT/engine-verify.{jsonl,md}   dice-verify on a stratified sample:
#       PER_CELL rows of every emitter x dtype x shape class
# FAMILIES (comma-separated) checks only rows of those families.
# CORPUS names the corpus's folder (default /tmp/dice-engine-corpus); it is
# drawn with its task packs, so train/run_h200.sh can train on it when
# CORPUS=train/runs/engine-data and the machine is still warm.
set -uo pipefail
OUT=${OUT:-/tmp/dice-engine-check}
COUNT=${COUNT:-100000}
PER_CELL=${PER_CELL:-5}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
start=$SECONDS
DICE_NODE_FRONT_END=0 source scripts/gpu-node.sh python3 "$OUT/build.log" || exit 1
echo "node set up in $((SECONDS - start)) s"
dice_machine_info "$OUT/machine.txt"
corpus=${CORPUS:-/tmp/dice-engine-corpus}
rm -rf "$corpus"
t=$SECONDS
python3 -m dice corpus engine "$corpus" --count "$COUNT" --packs --jobs "$(nproc)" 2>&1 | tail -2
echo "engine: $COUNT requests in $((SECONDS - t)) s on $(nproc) cores"
cp "$corpus/summary.json" "$OUT/engine-summary.json"
t=$SECONDS
python3 -m dice corpus engine-check "$corpus" "$OUT/engine-verify.jsonl" \
  --per-cell "$PER_CELL" --build --jobs "$(nproc)" ${FAMILIES:+--families "$FAMILIES"} 2>&1 |
  tail -3
echo "verify: $((SECONDS - t)) s"
cat "$OUT/engine-verify.md"
echo "done in $((SECONDS - start)) s"
