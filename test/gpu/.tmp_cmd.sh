#!/bin/bash
# Retrain the shipped model on the regenerated corpus (temporary).
set -uo pipefail
export DICE_COMMIT=${DICE_COMMIT:-unknown}
mode=${1:-sft}
if [[ $mode == sft ]]; then
  EVAL="" train/run_h200.sh 270 0 0 2>&1 | tail -40
else
  SFT_MODEL=model/default EVAL="infill:val infill:heldout" EVAL_S=200 train/run_h200.sh 0 0 0 2>&1 | tail -40
fi
