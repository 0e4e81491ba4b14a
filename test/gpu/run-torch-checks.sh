#!/usr/bin/env bash
# On a GPU machine without LLVM: builds the LibTorch half and runs the CUDA
# variants of the runtime checks (model numerics and decoding through the
# CUDA-graph path; the reference programs' ATen and Python backends on the
# GPU). Logs go to $OUT (default /tmp/dice-gpu-checks).
#   test/gpu/run-torch-checks.sh [PYTHON]
# Headers the GPU image may lack (toml++, nlohmann_json, sqlite3, pcre2,
# utf8proc, CLI11) are taken from .deps/usr when that folder is present.
set -uo pipefail
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/dice-gpu-checks}
mkdir -p "$OUT"
source test/gpu/build-gpu-half.sh "$PY" "$OUT/build.log" dice-model-check dice-reference-run || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
for suite in test_model_numerics test_reference_backends; do
  DICE_BUILD_DIR=build-gpu DICE_TEST_DEVICE=cuda PYTHONPATH=python \
    "$PY" -m pytest -q -p no:cacheprovider "test/python/$suite.py" 2>&1 |
    tee "$OUT/$suite.log" | tail -3 || status=1
done
exit $status
