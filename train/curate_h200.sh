#!/bin/bash
# The GPU half of dice-curate on a machine without the compiler: builds the
# verifier (the LibTorch half) and runs `dice curate verify` on a work
# folder that `dice curate prepare` filled where the compiler is. The work
# folder, verdicts and times added, goes to $OUT/work.tar.gz; run
# `dice curate report --work WORK --out DIR` on it anywhere.
#   train/curate_h200.sh WORK [verify options...]
# EVAL_TIMES=PACKS.jsonl... also times those task packs' programs eagerly and
# with Inductor (for dice-train's evaluations against either baseline),
# writing $OUT/pack-times.json.
set -uo pipefail
OUT=${OUT:-/tmp/dice-curate-out}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python}
work=$1; shift
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
{
  echo "commit ${DICE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} | tee "$OUT/env.txt"
start=$(date +%s)
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-verify dice-verify-worker || exit 1
echo "built in $(( $(date +%s) - start )) s" | tee -a "$OUT/env.txt"
export DICE_BUILD_DIR=$PWD/build-gpu
t0=$(date +%s)
$PY -m dice.curate verify --work "$work" --jobs "$(nproc)" "$@" 2> "$OUT/verify.log"
echo "verify: exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
tail -5 "$OUT/verify.log"
if [[ -n ${EVAL_TIMES:-} ]]; then
  t0=$(date +%s)
  $PY - "$OUT/pack-times" $EVAL_TIMES <<'PY' 2> "$OUT/pack-times.log"
import json, sys
from pathlib import Path
from dice.curate.measure import measure
out = Path(sys.argv[1]); out.mkdir(exist_ok=True)
lines = [json.loads(l) for p in sys.argv[2:] for l in Path(p).read_text().splitlines() if l.strip()]
measure(lines, out, inductor=True)
PY
  echo "pack times: exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
  cp "$OUT/pack-times/times.json" "$OUT/pack-times.json" 2>/dev/null
  tail -3 "$OUT/pack-times.log"
fi
tar -czf "$OUT/work.tar.gz" -C "$(dirname "$work")" "$(basename "$work")"
