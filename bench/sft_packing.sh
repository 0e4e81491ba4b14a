#!/usr/bin/env bash
# SFT throughput of two packings of the same corpus, measured in one run on
# one GPU: rows of data.pack_length 8192 (the old default) against the
# sft-engine config's rows of about one sample. Both start from the same
# random weights, without the curriculum, so they see the same samples.
# From the repository root, with .deps carried and the engine's corpus in
# train/runs/engine-data (test/gpu/run-engine-check.sh with
# CORPUS=train/runs/engine-data, on the same warm machine):
#   OUT=... bash bench/sft_packing.sh [STEPS]
# Prints tokens/s of each (the median over the steps after the first two)
# and their ratio; $OUT/sft-packing.json keeps them with the hardware.
set -uo pipefail
OUT=${OUT:-/tmp/dice-sft-packing}
STEPS=${1:-16}
PY=${PY:-/opt/torch/.venv/bin/python}
mkdir -p "$OUT"
root=$PWD
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-train || exit 1
cd train/configs
run() { # name pack_length micro_batch
  rm -rf "../runs/packing-$1"
  "$root/build-gpu/bin/dice-train" --config sft-engine.toml --set 'metrics.status="off"' \
    --set "run.steps=$STEPS" --set data.curriculum=false --set data.end_to_end_too=false \
    --set "data.pack_length=$2" --set "optim.micro_batch=$3" \
    --set "checkpoint.dir=\"../runs/packing-$1\"" --set checkpoint.every=0 \
    2> "$OUT/packing-$1.log" || { tail -5 "$OUT/packing-$1.log"; exit 1; }
}
run rows-8192 8192 4
run rows-3072 3072 8
"$PY" - "$OUT" "${DICE_COMMIT:-unknown}" <<'EOF'
import json, statistics, subprocess, sys
from pathlib import Path
out, commit = Path(sys.argv[1]), sys.argv[2]
def rate(name):
    steps = [json.loads(l) for l in Path(f"../runs/packing-{name}/metrics.jsonl").read_text().splitlines()]
    return statistics.median(s["tokens_per_s"] for s in steps[2:])
old, new = rate("rows-8192"), rate("rows-3072")
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
result = {"gpu": gpu, "commit": commit, "tokens_per_s": {"pack_8192_micro_4": old,
          "pack_3072_micro_8": new}, "ratio": new / old}
(out / "sft-packing.json").write_text(json.dumps(result, indent=2) + "\n")
print(f"{gpu}: rows of 8192 slots {old:,.0f} tok/s, rows of 3072 {new:,.0f} tok/s: {new / old:.2f}x")
EOF
