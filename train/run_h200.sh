#!/bin/bash
# The project's training run on one GPU: builds dice-train and the verifier
# worker (the LibTorch half), then SFT from random weights on the corpus's
# training split, BiC-RL kernel infilling, then end to end, each stage from
# the last checkpoint of the one before. Each stage has a wall-clock budget;
# a stage stopped by it keeps every finished step's metrics and the next
# stage starts from its newest checkpoint. Results go to $OUT.
#   train/run_h200.sh [SFT_S RL_INFILL_S RL_E2E_S]
# SFT_S = 0 skips SFT: RL starts from $SFT_MODEL (an SFT checkpoint folder).
# RESUME=1 continues SFT from its newest checkpoint (a run that an earlier
# call's budget stopped, on the same machine).
# EVAL (default "infill:train-sample infill:heldout") lists the greedy
# evaluations of the final model, MODE:SPLIT each (MODE infill or e2e; SPLIT
# a packs-SPLIT.jsonl of train/data, train-sample being every sixth training
# task). EVAL_START=1 also evaluates the model RL started from. Everything
# but the model ends up in $OUT/results.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/dice-train-out}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python}
SFT_S=${1:-240}; INFILL_S=${2:-150}; E2E_S=${3:-80}
export PYTHONUNBUFFERED=1
root=$PWD
{
  echo "commit ${DICE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} | tee "$OUT/env.txt"

start=$(date +%s)
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-train dice-verify dice-verify-worker dice-bench || exit 1
echo "built in $(( $(date +%s) - start )) s" | tee -a "$OUT/env.txt"
TRAIN=$root/build-gpu/bin/dice-train

newest() { ls -d "$1"/step-* 2>/dev/null | grep -v partial | sort | tail -1; }

cd train/configs
stage() { # name seconds model-path
  local name=$1 seconds=$2 model=${3:-}
  (( seconds > 0 )) || return 0
  local args=(--config "$name.toml" --set "metrics.status=\"off\"")
  [[ -n $model ]] && args+=(--set "model.path=\"$model\"")
  [[ $name == sft && ${RESUME:-0} == 1 ]] && args+=(--set 'checkpoint.resume="latest"')
  local t0=$(date +%s)
  timeout --signal=INT "$seconds" "$TRAIN" "${args[@]}" 2> "$OUT/$name.log"
  echo "$name: exit $?, $(( $(date +%s) - t0 )) s, $(wc -l < ../runs/$name/metrics.jsonl) steps" | tee -a "$OUT/env.txt"
  tail -3 "$OUT/$name.log"
  # A crash report's offsets, as source lines.
  grep -oE '(pc|stack) [^ ]*dice-train\+0x[0-9a-f]+' "$OUT/$name.log" | sed 's/.*+//' |
    xargs -r addr2line -f -C -i -e "$TRAIN" 2>&1 | tee -a "$OUT/$name.log" | head -40
  cp ../runs/$name/metrics.jsonl "$OUT/$name-metrics.jsonl" 2>/dev/null
}
if (( SFT_S > 0 )); then
  stage sft "$SFT_S"
  sft_model=$(newest ../runs/sft)
else
  sft_model=$root/$SFT_MODEL
fi
stage rl-infill "$INFILL_S" "$sft_model"
infill_model=$(newest ../runs/rl-infill)
stage rl-e2e "$E2E_S" "${infill_model:-$sft_model}"

final=$(newest ../runs/rl-e2e); [[ -z $final ]] && final=$(newest ../runs/rl-infill)
[[ -z $final ]] && final=${sft_model:-}
[[ -n $final ]] && final=$(cd "$final" && pwd)
awk 'NR % 6 == 1' ../data/packs-train.jsonl > ../data/packs-train-sample.jsonl
# EVAL_BASELINE=inductor|measured_eager and BASELINE_TIMES=FILE (dice curate
# times) judge the evaluations' speed against that baseline; EVAL_TAG names them.
eval_set=()
[[ -n ${EVAL_BASELINE:-} ]] && eval_set=(--set "verifier.baseline=\"$EVAL_BASELINE\""
  --set "verifier.baseline_times=\"$BASELINE_TIMES\"")
evaluate() { # tag model-path
  local tag=$1 model=$2 e mode split name
  for e in ${EVAL-infill:train-sample infill:heldout}; do
    mode=${e%%:*} split=${e#*:} name=eval-$mode-$split$tag${EVAL_TAG:-}
    t0=$(date +%s)
    timeout --signal=INT "${EVAL_S:-240}" "$TRAIN" --config "eval-$mode.toml" --set 'metrics.status="off"' \
      --set "model.path=\"$model\"" --set "data.tasks=[\"../data/packs-$split.jsonl\"]" \
      --set "checkpoint.dir=\"../runs/$name\"" "${eval_set[@]}" 2> "$OUT/$name.log"
    echo "eval $mode $split of $model: exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
    tail -2 "$OUT/$name.log"
    cp ../runs/$name/eval-summary.json "$OUT/$name-summary.json" 2>/dev/null
    cp ../runs/$name/eval.jsonl "$OUT/$name.jsonl" 2>/dev/null
  done
}
# EVAL_START=1 also judges the model RL started from (tagged -start), first.
if [[ ${EVAL_START:-0} == 1 && -n ${sft_model:-} && $final != "$(cd "$sft_model" && pwd)" ]]; then
  evaluate -start "$(cd "$sft_model" && pwd)"
fi
[[ -n $final ]] && evaluate "" "$final"
cd "$root"
# Rollout logs (for the static analysis where the compiler is) and the
# final model in the shipped dtype.
cp train/runs/rl-infill/rollouts.jsonl "$OUT/rl-infill-rollouts.jsonl" 2>/dev/null
cp train/runs/rl-e2e/rollouts.jsonl "$OUT/rl-e2e-rollouts.jsonl" 2>/dev/null
echo "final checkpoint: $final" | tee -a "$OUT/env.txt"
$PY - "$final" "$OUT/model" <<'PYEOF'
import json, shutil, sys
from pathlib import Path
from safetensors.torch import load_file, save_file
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dst.mkdir(parents=True, exist_ok=True)
state = {}
for f in sorted(src.glob("model*.safetensors")):
    state.update(load_file(str(f)))
save_file({k: v.bfloat16().contiguous() for k, v in state.items()}, str(dst / "model.safetensors"),
          metadata={"format": "pt"})
config = json.loads((src / "config.json").read_text())
config["torch_dtype"] = "bfloat16"
(dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
print("model:", sum(v.numel() for v in state.values()), "parameters")
PYEOF
# At most a few files come back from a lent machine: one archive and the model.
(cd "$OUT" && tar czf /tmp/results.tar.gz --exclude=model . && mv /tmp/results.tar.gz .)
find "$OUT" -maxdepth 1 -type f ! -name results.tar.gz ! -name env.txt -delete
ls -la "$OUT" "$OUT/model"
