#!/bin/bash
# dice-train's torchrun path on one GPU: the same SFT run (the project's
# small model, fixed seed, 4 steps) started plainly and through torchrun
# with one rank, then resumed through torchrun from the plain run's step-2
# checkpoint. With one rank dice-train forms no process group, and NCCL
# refuses two ranks on one GPU, so NCCL itself is not exercised here. The losses of every step must agree within bf16 noise
# (relative 1e-3: the GPU's atomics make runs differ in the last bits):
# what the two-GPU comparison (2 NCCL ranks against 1) needs two GPUs for.
# Results go to $OUT (torchrun-h200.json, torchrun-h200.md).
#   bench/train_torchrun_h200.sh
set -uo pipefail
OUT=${OUT:-/tmp/dice-torchrun}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python}
TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
# NVLink multicast stays off (shared hosts); NCCL is asked for nothing else.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-train || exit 1
dice_machine_info "$OUT/machine.txt"
TRAIN=$PWD/build-gpu/bin/dice-train
RUNS=$(mktemp -d)
settings=(--set run.steps=4 --set checkpoint.every=2 --set optim.global_batch=8
          --set optim.micro_batch=4 --set optim.warmup_steps=1 --set metrics.status=off)

run() { # NAME LAUNCHER... -- EXTRA...
  local name=$1; shift
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  "${launcher[@]}" "$TRAIN" --config train/configs/sft.toml "${settings[@]}" \
    --set checkpoint.dir="\"$RUNS/$name\"" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? ($(grep -c '' "$RUNS/$name/metrics.jsonl" 2>/dev/null || echo 0) steps logged)"
}
run plain -- 
run torchrun "$TORCHRUN" --nproc-per-node 1 --no-python --
cp -r "$RUNS/plain" "$RUNS/resumed"
rm -rf "$RUNS/resumed"/step-000004
run resumed "$TORCHRUN" --nproc-per-node 1 --no-python -- \
  --set checkpoint.resume="\"$RUNS/resumed/step-000002\""

"$PY" - "$RUNS" "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
runs, out = Path(sys.argv[1]), Path(sys.argv[2])
def losses(name):
    path = runs / name / "metrics.jsonl"
    if not path.exists():
        return {}
    return {m["step"]: m["loss"] for m in map(json.loads, path.read_text().splitlines())}
plain, torchrun, resumed = losses("plain"), losses("torchrun"), losses("resumed")
def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-3 * max(abs(a), abs(b))
machine = (out / "machine.txt").read_text().split("\n")
summary = {"gpu": machine[0], "commit": machine[1], "plain": plain, "torchrun_1_rank": torchrun,
           "resumed_at_step_2_through_torchrun": resumed,
           "relative_tolerance": 1e-3,
           "torchrun_equal": len(plain) == 4 and all(close(plain[s], torchrun.get(s)) for s in plain),
           "resume_equal": len(plain) == 4 and all(close(plain[s], resumed.get(s)) for s in (3, 4))}
(out / "torchrun-h200.json").write_text(json.dumps(summary, indent=1) + "\n")
rows = ["| step | plain | torchrun, 1 rank | resumed at 2 through torchrun |",
        "| ---: | ---: | ---: | ---: |"]
for s in sorted(plain):
    rows.append(f"| {s} | {plain[s]:.6f} | {torchrun.get(s, float('nan')):.6f} | "
                + (f"{resumed[s]:.6f} |" if s in resumed else "- |"))
text = "\n".join(rows) + (f"\n\nlosses equal within 1e-3: torchrun {summary['torchrun_equal']}, "
                          f"resume {summary['resume_equal']}\n")
(out / "torchrun-h200.md").write_text(text)
print(text)
sys.exit(0 if summary["torchrun_equal"] and summary["resume_equal"] else 1)
PYEOF
