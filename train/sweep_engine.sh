#!/bin/bash
# The model-size sweep on the data engine's corpus (docs/train.md, "Training
# on the data engine's corpus"): for each size, SFT from random weights
# (train/configs/sft-engine.toml at a constant learning rate and without
# the curriculum, so that runs cut at the same wall-clock time compare),
# then the greedy infilling evaluation of its newest checkpoint on a sample
# of each held-out split. On a GPU node,
# from the repository root, with .deps carried:
#   OUT=DIR train/sweep_engine.sh SECONDS_PER_SIZE [NAME=HIDDEN,LAYERS,HEADS,MLP ...]
# Sizes default to 7m=320,6,5,864 16m=448,7,7,1216 30m=576,8,9,1536 (head dim
# 64, one KV head, the tokenizer of train/base-engine). ENGINE_COUNT (40000)
# requests are drawn on the node first; EVAL_TASKS (24) tasks of each split
# are judged, EVAL_S (150) seconds each. $OUT gets each size's metrics and
# evaluations and sweep.json, one line a size. PHASE=train only trains,
# PHASE=eval only evaluates checkpoints an earlier call left on the same
# warm machine (so that a sweep fits calls of ten minutes); both by default.
set -uo pipefail
OUT=${OUT:-/tmp/dice-sweep}
mkdir -p "$OUT"
# An absolute interpreter (the loop runs in train/configs), its venv kept.
PY=$(command -v "${PY:-/opt/torch/.venv/bin/python}") || { echo "sweep: no Python" >&2; exit 1; }
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
SECONDS_PER=${1:?usage: train/sweep_engine.sh SECONDS_PER_SIZE [NAME=HIDDEN,LAYERS,HEADS,MLP ...]}
shift
SIZES=("$@")
PHASE=${PHASE:-all}
[[ $PHASE == all || $PHASE == train || $PHASE == eval ]] ||
  { echo "sweep: PHASE must be all, train or eval, not $PHASE" >&2; exit 2; }
((${#SIZES[@]})) || SIZES=(7m=320,6,5,864 16m=448,7,7,1216 30m=576,8,9,1536)
root=$PWD
export PYTHONUNBUFFERED=1

source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-train dice-verify \
  dice-verify-worker dice-scaffold-programs || exit 1
dice_machine_info "$OUT/machine.txt"
TRAIN=$root/build-gpu/bin/dice-train
data=train/runs/engine-data
if [[ ! -f $data/summary.json ]]; then
  DICE_BUILD_DIR=$root/build-gpu PYTHONPATH=$root/python "$PY" -m dice corpus engine "$data" \
    --count "${ENGINE_COUNT:-40000}" --packs --jobs "$(nproc)" 2>&1 | tail -1 || exit 1
fi
splits=(heldout-primitives heldout-compositions)
for split in "${splits[@]}"; do  # every k-th task, in curriculum order
  from=$data/packs-$split.jsonl
  every=$(( ($(wc -l < "$from") + ${EVAL_TASKS:-24} - 1) / ${EVAL_TASKS:-24} ))
  awk -v k="$every" 'NR % k == 1' "$from" > "$data/packs-$split-sample.jsonl"
done

newest() { ls -d "$1"/step-* 2>/dev/null | grep -v partial | sort | tail -1; }

train_size() {  # NAME HIDDEN LAYERS HEADS MLP: SFT from random weights for SECONDS_PER
  local name=$1 base=../runs/base-$1 runs=../runs/sft-$1
  rm -rf "$base" "$runs"
  mkdir -p "$base" && cp ../base-engine/* "$base/"
  "$PY" - "$base/config.json" "$2" "$3" "$4" "$5" <<'PYEOF'
import json, sys
path, hidden, layers, heads, mlp = sys.argv[1], *map(int, sys.argv[2:])
config = json.load(open(path))
config.update(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
              intermediate_size=mlp, head_dim=64, num_key_value_heads=1)
open(path, "w").write(json.dumps(config, indent=2) + "\n")
PYEOF
  local t0; t0=$(date +%s)
  timeout --signal=INT "$SECONDS_PER" "$TRAIN" --config sft-engine.toml \
    --set 'metrics.status="off"' --set "model.path=\"$base\"" --set "checkpoint.dir=\"$runs\"" \
    --set run.steps=100000 --set 'optim.schedule="constant"' --set checkpoint.every=50 \
    --set data.curriculum=false \
    2> "$OUT/sft-$name.log"
  echo "$name: exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"
  cp "$runs/metrics.jsonl" "$OUT/sft-$name-metrics.jsonl"
}

eval_size() {  # NAME: the newest checkpoint on each held-out sample, one line of sweep.json
  local name=$1 model split
  model=$(newest "../runs/sft-$name")
  [[ -n $model ]] || { echo "$name: no checkpoint to evaluate" >&2; return 1; }
  for split in "${splits[@]}"; do
    timeout --signal=INT "${EVAL_S:-150}" "$TRAIN" --config eval-infill.toml \
      --set 'metrics.status="off"' --set "model.path=\"$model\"" \
      --set "data.tasks=[\"../runs/engine-data/packs-$split-sample.jsonl\"]" \
      --set "checkpoint.dir=\"../runs/eval-$name-$split\"" --set sampling.max_tokens=2304 \
      2> "$OUT/eval-$name-$split.log"
    cp "../runs/eval-$name-$split/eval-summary.json" "$OUT/eval-$name-$split-summary.json"
    cp "../runs/eval-$name-$split/eval.jsonl" "$OUT/eval-$name-$split.jsonl"
  done
  [[ -f $OUT/sft-$name-metrics.jsonl ]] || cp "../runs/sft-$name/metrics.jsonl" "$OUT/sft-$name-metrics.jsonl"
  "$PY" - "$OUT" "$name" "$model" <<'PYEOF'
import json, math, sys
from pathlib import Path
from safetensors import safe_open
out, name, model = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
params = 0
for f in model.glob("*.safetensors"):
    with safe_open(str(f), "pt") as st:
        params += sum(math.prod(st.get_slice(k).get_shape()) for k in st.keys())
metrics = [json.loads(l) for l in open(out / f"sft-{name}-metrics.jsonl")]
row = {"size": name, "parameters": params, "checkpoint": model.name, "steps": len(metrics),
       "final_loss": sum(m["loss"] for m in metrics[-20:]) / max(1, len(metrics[-20:]))}
for split in ("heldout-primitives", "heldout-compositions"):
    path = out / f"eval-{name}-{split}-summary.json"
    if path.exists():
        s = json.loads(path.read_text())
        row[split] = {k: s[k] for k in ("tasks", "build_rate", "exec_accuracy", "fast_1")}
print(json.dumps(row))
with open(out / f"sweep-{name}.json", "w") as f:
    f.write(json.dumps(row) + "\n")
PYEOF
}

cd train/configs
if [[ $PHASE != eval ]]; then
  for size in "${SIZES[@]}"; do
    IFS=, read -r hidden layers heads mlp <<< "${size#*=}"
    train_size "${size%%=*}" "$hidden" "$layers" "$heads" "$mlp"
  done
fi
if [[ $PHASE != train ]]; then
  # The sizes are judged side by side: small models leave the GPU mostly idle,
  # and greedy decoding gives the same candidates whatever else runs.
  for size in "${SIZES[@]}"; do eval_size "${size%%=*}" & done
  wait
  for size in "${SIZES[@]}"; do cat "$OUT/sweep-${size%%=*}.json" 2>/dev/null; done > "$OUT/sweep.json"
  runs=(); for size in "${SIZES[@]}"; do runs+=("${size%%=*}=$OUT/sft-${size%%=*}-metrics.jsonl"); done
  PYTHONPATH=$root/python "$PY" -m dice train plot-sweep "${runs[@]}" --out "$OUT/sweep-loss.png"
fi
cd "$root"
(cd "$OUT" && tar czf /tmp/sweep.tar.gz . && mv /tmp/sweep.tar.gz . &&
  find . -maxdepth 1 -type f ! -name sweep.tar.gz ! -name sweep.json ! -name sweep-loss.png -delete)
ls -la "$OUT"
