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
# a packs-SPLIT.jsonl of the data folder; SPLIT-sample is every sixth task
# of SPLIT, or with EVAL_TASKS=N every k-th for N of them, in file order).
# EVAL_START=1 also evaluates the model RL started from. Everything but the
# model ends up in $OUT/results.tar.gz.
# The data engine's corpus instead of train/data (docs/corpus.md):
# ENGINE_COUNT=N draws N requests on this node into train/runs/engine-data
# first (ENGINE_SEED picks the draw, default 0: a run that goes on from
# earlier weights sees new programs under another seed); with
# SFT_CONFIG=sft-engine the stages train on it and DATA names its folder
# (relative to train/configs) for the evaluations' packs. BASE_GGUF (below)
# brings a pretrained base for SFT_CONFIG=sft-engine-lora.
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
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-train dice-verify dice-verify-worker dice-bench \
  dice-scaffold-programs || exit 1
echo "built in $(( $(date +%s) - start )) s" | tee -a "$OUT/env.txt"
TRAIN=$root/build-gpu/bin/dice-train
DATA=${DATA:-../data}
if [[ -n ${ENGINE_COUNT:-} ]]; then
  t0=$(date +%s)
  rm -rf train/runs/engine-data
  DICE_BUILD_DIR=$root/build-gpu PYTHONPATH=$root/python "$PY" -m dice corpus engine \
    train/runs/engine-data --count "$ENGINE_COUNT" --seed "${ENGINE_SEED:-0}" --packs \
    --jobs "$(nproc)" 2>&1 | tail -1 |
    tee -a "$OUT/env.txt" || exit 1
  cp train/runs/engine-data/summary.json "$OUT/engine-summary.json"
  echo "engine: $ENGINE_COUNT requests in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
fi

# BASE_GGUF=FILE: a pretrained base as a GGUF file on this node, imported
# into train/runs/base with `dice model import` (the gguf package from the
# wheel in .deps/wheels, scripts/gpu-deps.sh) for SFT_CONFIG=sft-engine-lora.
if [[ -n ${BASE_GGUF:-} ]]; then
  t0=$(date +%s)
  "$PY" -m pip install -q --no-index --no-deps .deps/wheels/gguf-*.whl || exit 1
  rm -rf train/runs/base
  PYTHONPATH=$root/python "$PY" -m dice model import "$BASE_GGUF" train/runs/base 2>&1 |
    tail -1 | tee -a "$OUT/env.txt"
  [[ -f train/runs/base/config.json ]] || exit 1
  echo "base imported in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
fi

newest() { ls -d "$1"/step-* 2>/dev/null | grep -v partial | sort | tail -1; }

# SFT_FROM=ARCHIVE: SFT goes on from the weights of a model folder packed
# as a tar.xz (carried along), unpacked into train/runs with Python (the
# node may have no xz), drawing from every sample at once (the curriculum
# ramp is for a model that has seen none). SFT_SET's own keys win.
if [[ -n ${SFT_FROM:-} ]]; then
  from=$("$PY" - "$SFT_FROM" <<'PYEOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as archive:
    tops = {m.name.split("/")[0] for m in archive.getmembers()}
    if len(tops) != 1:
        sys.exit(f"{sys.argv[1]}: holds {sorted(tops)}, not one model folder")
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    archive.extractall("train/runs", **safe)
print(tops.pop())
PYEOF
) || exit 1
  SFT_SET="model.path=\"../runs/$from\" model.random_init=false data.curriculum=false ${SFT_SET:-}"
  echo "sft from $SFT_FROM ($from)" | tee -a "$OUT/env.txt"
fi

cd train/configs
stage() { # name seconds model-path
  local name=$1 seconds=$2 model=${3:-}
  (( seconds > 0 )) || return 0
  local config=$name
  [[ $name == sft ]] && config=${SFT_CONFIG:-sft}
  local args=(--config "$config.toml" --set "metrics.status=\"off\"")
  [[ -n $model ]] && args+=(--set "model.path=\"$model\"")
  [[ $name == sft && ${RESUME:-0} == 1 ]] && args+=(--set 'checkpoint.resume="latest"')
  # SFT_SET: more `--set KEY=VALUE` overrides for SFT, space-separated.
  [[ $name == sft ]] && for o in ${SFT_SET:-}; do args+=(--set "$o"); done
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
# SPLIT-sample: every k-th task of SPLIT, in the file's (curriculum) order.
sample_packs() { # split
  local from=$DATA/packs-${1%-sample}.jsonl every=6
  [[ -n ${EVAL_TASKS:-} ]] && every=$(( ($(wc -l < "$from") + EVAL_TASKS - 1) / EVAL_TASKS ))
  awk -v k="$every" 'NR % k == 1' "$from" > "$DATA/packs-$1.jsonl"
}
# EVAL_BASELINE=inductor|measured_eager and BASELINE_TIMES=FILE (dice curate
# times) judge the evaluations' speed against that baseline; EVAL_TAG names them.
eval_set=()
# EVAL_MAX_TOKENS: the evaluations' answer budget (the engine's are longer).
[[ -n ${EVAL_MAX_TOKENS:-} ]] && eval_set+=(--set "sampling.max_tokens=$EVAL_MAX_TOKENS")
[[ -n ${EVAL_BASELINE:-} ]] && eval_set+=(--set "verifier.baseline=\"$EVAL_BASELINE\""
  --set "verifier.baseline_times=\"$BASELINE_TIMES\"")
evaluate() { # tag model-path
  local tag=$1 model=$2 e mode split name
  for e in ${EVAL-infill:train-sample infill:heldout}; do
    mode=${e%%:*} split=${e#*:} name=eval-$mode-$split$tag${EVAL_TAG:-}
    [[ $split == *-sample ]] && sample_packs "$split"
    t0=$(date +%s)
    timeout --signal=INT "${EVAL_S:-240}" "$TRAIN" --config "eval-$mode.toml" --set 'metrics.status="off"' \
      --set "model.path=\"$model\"" --set "data.tasks=[\"$DATA/packs-$split.jsonl\"]" \
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
state = {k: v.bfloat16().contiguous() for k, v in state.items()}
# Shards of at most 15 MiB (a lent machine returns files of at most 16 MiB,
# and the shipped model's files are as small), with the Hugging Face index.
limit, shards = 15 << 20, [{}]
for name, tensor in state.items():
    size = tensor.numel() * tensor.element_size()
    if shards[-1] and sum(t.numel() * t.element_size() for t in shards[-1].values()) + size > limit:
        shards.append({})
    shards[-1][name] = tensor
if len(shards) == 1:
    save_file(shards[0], str(dst / "model.safetensors"), metadata={"format": "pt"})
else:
    weight_map = {}
    for i, shard in enumerate(shards, 1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(dst / file), metadata={"format": "pt"})
        weight_map.update({name: file for name in shard})
    total = sum(v.numel() * v.element_size() for v in state.values())
    (dst / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
config = json.loads((src / "config.json").read_text())
config["torch_dtype"] = "bfloat16"
(dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
for f in src.iterdir():  # the tokenizer and chat template, so the folder loads as it is
    if f.is_file() and not f.name.startswith("model") and f.name != "config.json":
        shutil.copy(f, dst / f.name)
print("model:", sum(v.numel() for v in state.values()), "parameters in", len(shards), "files")
PYEOF
# At most eight files come back from a lent machine: env.txt, one archive,
# the model's weight files, and its small files in one more archive.
(cd "$OUT/model" && tar cf files.tar --exclude='model*.safetensors' --exclude=files.tar . &&
  find . -type f ! -name 'model*.safetensors' ! -name files.tar -delete)
(cd "$OUT" && tar czf /tmp/results.tar.gz --exclude=model . && mv /tmp/results.tar.gz .)
find "$OUT" -maxdepth 1 -type f ! -name results.tar.gz ! -name env.txt -delete
ls -la "$OUT" "$OUT/model"
