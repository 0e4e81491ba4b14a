#!/usr/bin/env bash
# The GPU phases of the dice-pipeline end-to-end test (docs/end-to-end.md),
# on a GPU machine without LLVM, from the repository root, with
# .dice/pipeline-e2e/$CASE/gpu/ (written by `test/gpu/pipeline_e2e.py prepare`
# and `resolve` on the CPU machine) carried along; CASE is block (the
# default) or convnet. Results go to $OUT.
#   test/gpu/run-pipeline-e2e.sh verify [PYTHON]   the verification batch through
#       dice-verify: $OUT/verdicts.jsonl and each built library as
#       libs/<candidate_hash>.so in $OUT/libs.tar (feed $OUT to
#       `pipeline_e2e.py resolve --gpu`)
#   test/gpu/run-pipeline-e2e.sh run [PYTHON]      the lowered plan through the
#       manifest's kernel libraries vs the PyTorch model, in Python and with
#       dice-reference-run (C++): $OUT/e2e.{json,md}
# Both build the GPU half first (as test/gpu/run-verifier.sh does): the
# light-built libraries find libDiceLightBridge.so in build-gpu/lib.
set -uo pipefail
phase=${1:-}
[[ $phase == verify || $phase == run ]] || { echo "usage: $0 verify|run [PYTHON]" >&2; exit 2; }
PY=${2:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/dice-pipeline-e2e}
CASE=${CASE:-block}
GPU_DIR=.dice/pipeline-e2e/$CASE/gpu
mkdir -p "$OUT"
[[ -f $GPU_DIR/batch.jsonl ]] || { echo "no $GPU_DIR/batch.jsonl: run pipeline_e2e.py prepare first" >&2; exit 1; }
start=$SECONDS
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build-$phase.log" dice-verify-worker dice-verify DiceLightBridge \
  dice-reference-run DiceRuntime || exit 1
echo "built in $((SECONDS - start)) s"
# The Python runtime loads libDiceRuntime from the build it is given.
export DICE_BUILD_DIR=$PWD/build-gpu
dice_machine_info "$OUT/machine.txt"

if [[ $phase == verify ]]; then
  rm -rf "$OUT/libs"
  start=$SECONDS
  build-gpu/bin/dice-verify --batch "$GPU_DIR/batch.jsonl" --jobs "$(nproc)" --json \
    --cache /tmp/dice-pipeline-e2e-cache --artifacts "$OUT/libs" \
    > "$OUT/verdicts.jsonl" 2> "$OUT/verify.log"
  status=$?
  echo "verified in $((SECONDS - start)) s (dice-verify exit $status: 0 only if all accepted)"
  tail -5 "$OUT/verify.log"
  "$PY" - "$OUT/verdicts.jsonl" <<'EOF' | tee "$OUT/verdicts.txt"
import json, sys
for line in open(sys.argv[1]):
    v = json.loads(line)
    reason = (v.get("reason") or "").splitlines()
    print(f"{v['fingerprint']}  {v['candidate_hash'][:12]}  {v['status']:<13}  "
          f"{v.get('speedup') or '-'}  {reason[0][:80] if reason else ''}")
EOF
  # The same batch against each partition as Inductor compiles it, timed on
  # this GPU (dice/backend/baseline.py): the torch.compile backend's speed to
  # beat, reported beside the eager one.
  PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} "$PY" test/gpu/pipeline_e2e.py baseline \
    --case "$CASE" --out "$OUT/inductor" | tee "$OUT/baseline.txt"
  build-gpu/bin/dice-verify --batch "$GPU_DIR/batch.jsonl" --jobs "$(nproc)" --json \
    --cache /tmp/dice-pipeline-e2e-cache --config "$OUT/inductor/inductor.toml" \
    > "$OUT/verdicts-inductor.jsonl" 2> "$OUT/verify-inductor.log"
  echo "verified against Inductor (dice-verify exit $?)"
  PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} "$PY" test/gpu/pipeline_e2e.py compare \
    --case "$CASE" --eager "$OUT/verdicts.jsonl" --inductor "$OUT/verdicts-inductor.jsonl" \
    --times "$OUT/inductor/baseline-times.json" --out "$OUT/baselines.md"
  # At most a few files come back from a GPU machine: the libraries travel as one archive.
  tar -C "$OUT" -cf "$OUT/libs.tar" libs && rm -rf "$OUT/libs"
  [[ -s $OUT/verdicts.jsonl ]] || exit 1
  exit 0
fi

[[ -f $GPU_DIR/plan.json ]] || { echo "no $GPU_DIR/plan.json: run pipeline_e2e.py resolve first" >&2; exit 1; }
PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} "$PY" test/gpu/pipeline_e2e.py run --case "$CASE" --out "$OUT" \
  --reference-run build-gpu/bin/dice-reference-run
