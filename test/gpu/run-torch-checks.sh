#!/usr/bin/env bash
# On a GPU machine without LLVM: builds the LibTorch half and runs the CUDA
# variants of the runtime checks (model numerics and decoding through the
# CUDA-graph path; the reference programs' ATen and Python backends on the
# GPU). Logs go to $OUT (default /tmp/dice-gpu-checks).
#   test/gpu/run-torch-checks.sh [PYTHON]
# Headers the GPU image may lack (toml++, nlohmann_json, sqlite3, pcre2,
# utf8proc) are taken from .deps/usr when that folder is present.
set -uo pipefail
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/dice-gpu-checks}
mkdir -p "$OUT"
deps=()
if [[ -d .deps/usr ]]; then
  d=$PWD/.deps/usr
  deps=(-DDICE_TOMLPP_INCLUDE_DIR=$d/include -Dnlohmann_json_DIR=$d/share/cmake/nlohmann_json
        -DSQLite3_INCLUDE_DIR=$d/include -DSQLite3_LIBRARY=$d/lib/libsqlite3.so
        -DDICE_PCRE2_INCLUDE_DIR=$d/include -DDICE_PCRE2_LIBRARY=$d/lib/libpcre2-8.so
        -DDICE_UTF8PROC_INCLUDE_DIR=$d/include -DDICE_UTF8PROC_LIBRARY=$d/lib/libutf8proc.so)
  export LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
torch_dir=$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch
{ cmake -G Ninja -B build-gpu -DDICE_ENABLE_COMPILER=OFF -DDICE_ENABLE_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" -DDICE_PYTHON="$PY" "${deps[@]}" &&
  ninja -C build-gpu dice-model-check dice-reference-run; } > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
for suite in test_model_numerics test_reference_backends; do
  DICE_BUILD_DIR=build-gpu DICE_TEST_DEVICE=cuda PYTHONPATH=python \
    "$PY" -m pytest -q -p no:cacheprovider "test/python/$suite.py" 2>&1 |
    tee "$OUT/$suite.log" | tail -3 || status=1
done
exit $status
