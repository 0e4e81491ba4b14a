#!/bin/bash
# Builds dice-bench and runs the decode benchmark, the transformers baseline
# and the 8B load test on a GPU machine; results go to $OUT.
#   bench/run_h200.sh COMMIT
set -uo pipefail
COMMIT=${1:-unknown}
OUT=${OUT:-/tmp/dice-bench-out}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python}
export PYTHONUNBUFFERED=1
{
  echo "commit $COMMIT"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
} | tee "$OUT/env.txt"

# Until tools/CMakeLists.txt lists dice-bench, add it on this copy.
grep -q 'dice-bench' tools/CMakeLists.txt ||
  sed -i 's|^  add_subdirectory(dice-model-check).*|&\n  add_subdirectory(dice-bench)|' tools/CMakeLists.txt
# Headers and libraries the GPU image lacks, carried in .deps/usr (toml++,
# nlohmann_json, sqlite3, pcre2, utf8proc, CLI11) when present.
DEPS_ARGS=
if [ -d .deps/usr ]; then
  D=$PWD/.deps/usr
  DEPS_ARGS="-DDICE_TOMLPP_INCLUDE_DIR=$D/include -Dnlohmann_json_DIR=$D/share/cmake/nlohmann_json
    -DCLI11_DIR=$D/share/cmake/CLI11
    -DSQLite3_INCLUDE_DIR=$D/include -DSQLite3_LIBRARY=$D/lib/libsqlite3.so
    -DDICE_PCRE2_INCLUDE_DIR=$D/include -DDICE_PCRE2_LIBRARY=$D/lib/libpcre2-8.so
    -DDICE_UTF8PROC_INCLUDE_DIR=$D/include -DDICE_UTF8PROC_LIBRARY=$D/lib/libutf8proc.so"
fi
cmake -G Ninja -B build-gpu -DDICE_ENABLE_COMPILER=OFF -DDICE_ENABLE_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Release \
  -DTorch_DIR=$($PY -c 'import torch.utils;print(torch.utils.cmake_prefix_path)')/Torch \
  -DDICE_PYTHON=$PY $DEPS_ARGS > "$OUT/build.log" 2>&1 &&
  ninja -C build-gpu dice-bench >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

CASES=${CASES:-8b:1:static,8b:16:static,8b:1:dynamic,8b:16:dynamic,4b:128:static,4b:128:dynamic,1.7b:1:static,1.7b:16:static}
build-gpu/bin/dice-bench --cases "$CASES" --json "$OUT/dice.json" 2> "$OUT/dice.log" | tee "$OUT/dice.md"
tail -c 3000 "$OUT/dice.log"

$PY bench/transformers_decode.py --cases ${HF_CASES:-8b:1,8b:16,4b:128,1.7b:1,1.7b:16} \
  --new-tokens ${HF_TOKENS:-32} --json "$OUT/transformers.json" --dice-json "$OUT/dice.json" \
  2> "$OUT/transformers.log" | tee "$OUT/transformers.md"
tail -5 "$OUT/transformers.log"

if [ -z "${SKIP_LOAD:-}" ]; then
  PYTHONPATH=python $PY bench/write_random_checkpoint.py /tmp/ckpt-8b 2>> "$OUT/load.log"
  build-gpu/bin/dice-bench --load /tmp/ckpt-8b | tee "$OUT/load.json"
  build-gpu/bin/dice-bench --load /tmp/ckpt-8b | tee -a "$OUT/load.json"
fi
