#!/bin/bash
# The GPU half of dice-curate on a machine without the compiler: builds the
# verifier (the LibTorch half) and runs `dice curate verify` on a work
# folder that `dice curate prepare` filled where the compiler is. The work
# folder, verdicts and times added, goes to $OUT/work.tar.gz; run
# `dice curate report --work WORK --out DIR` on it anywhere.
#   train/curate_h200.sh WORK [verify options...]
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
tar -czf "$OUT/work.tar.gz" -C "$(dirname "$work")" "$(basename "$work")"
