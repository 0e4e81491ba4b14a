#!/bin/bash
# dice-train's speed against plain PyTorch, measured in one run on one GPU:
#   - the SFT step (BD3-LM, AdamW, bf16 autocast) of dice-train's library
#     against the same step on transformers' Qwen3 (bench/train_step_python.py);
#   - rollouts: the runtime's block-diffusion sampler against transformers'
#     decode loop (bench/transformers_decode.py), 16 rollouts of one prompt;
#   - one BiC-RL step with LoRA at the 8B shape: time and peak memory.
# Random weights in the SDAR shapes. Results go to $OUT.
#   bench/train_h200.sh
set -uo pipefail
OUT=${OUT:-/tmp/dice-train-bench}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python}
export PYTHONUNBUFFERED=1
{
  echo "commit ${DICE_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
} | tee "$OUT/env.txt"
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-bench || exit 1
BENCH=build-gpu/bin/dice-bench
SHAPE=${SHAPE:-1.7b}

$BENCH --train sft --cases $SHAPE --samples 8 --prompt 512 --answer 512 --json "$OUT/dice-sft.json" 2>&1 | tee -a "$OUT/log.txt"
$PY bench/train_step_python.py --shape $SHAPE --samples 8 --prompt 512 --answer 512 --json "$OUT/python-sft.json" 2>&1 | tail -2 | tee -a "$OUT/log.txt"
$BENCH --cases $SHAPE:16:static --prompt 512 --new-tokens 128 --no-check --json "$OUT/dice-decode.json" 2>/dev/null | tee -a "$OUT/log.txt"
(cd bench && $PY transformers_decode.py --cases $SHAPE:16 --prompt 512 --new-tokens 64 --attn sdpa \
   --dice-json "$OUT/dice-decode.json" --json "$OUT/hf-decode.json" 2>/dev/null) | tee -a "$OUT/log.txt"
$BENCH --train rl --cases 8b --lora 16 --recompute --rollouts 16 --prompt 512 --new-tokens 256 \
  --json "$OUT/dice-rl-8b.json" 2>&1 | tee -a "$OUT/log.txt"

$PY - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
load = lambda n: json.loads((out / n).read_text()) if (out / n).exists() else None
dice, py, dec, hf, rl = (load(n) for n in ["dice-sft.json", "python-sft.json", "dice-decode.json",
                                           "hf-decode.json", "dice-rl-8b.json"])
summary = {"env": (out / "env.txt").read_text().splitlines()}
if dice and py:
    summary["sft_tokens_per_s"] = {"dice_train": dice["tokens_per_s"], "pytorch": py["tokens_per_s"],
                                   "ratio": dice["tokens_per_s"] / py["tokens_per_s"]}
if hf and hf["cases"] and "dice_tokens_per_s" in hf["cases"][0]:
    c = hf["cases"][0]
    # Rollouts of equal length: the ratio of rollouts/s is that of tokens/s.
    summary["rollouts"] = {"batch": c["batch"], "dice_tokens_per_s": c["dice_tokens_per_s"],
                           "transformers_tokens_per_s": c["tokens_per_s"], "ratio": c["dice_speedup"]}
if rl:
    summary["lora_rl_step_8b"] = rl
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary, indent=2))
PYEOF
