#!/usr/bin/env bash
# On a GPU machine without LLVM: builds the verifier's GPU half (dice-verify,
# dice-verify-worker, the light-build bridge), verifies every corpus kernel
# through the sandboxed workers and checks the verdicts against labels.json
# (with the static findings of test/gpu/results/corpus-static.jsonl, made
# where Clang is: `dice-verify --analysis-only`); then, with --bench, times
# dice-verify against the load_inline flow. Results go to $OUT.
#   test/gpu/run-verifier.sh [--bench] [PYTHON]
set -uo pipefail
bench=0
[[ ${1:-} == --bench ]] && { bench=1; shift; }
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/dice-verifier}
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
start=$SECONDS
{ cmake -G Ninja -B build-gpu -DDICE_ENABLE_COMPILER=OFF -DDICE_ENABLE_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" -DDICE_PYTHON="$PY" "${deps[@]}" &&
  ninja -C build-gpu dice-verify-worker dice-verify DiceLightBridge; } > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "${DICE_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}"
  nproc
} | tee "$OUT/machine.txt"

"$PY" test/gpu/check_corpus_verdicts.py --write-batch "$OUT/corpus-batch.jsonl"
start=$SECONDS
build-gpu/bin/dice-verify --batch "$OUT/corpus-batch.jsonl" --jobs "$(nproc)" --json \
  --cache "$OUT/cache" > "$OUT/corpus-gpu.jsonl" 2> "$OUT/corpus-gpu.log"
echo "corpus verified in $((SECONDS - start)) s"
tail -5 "$OUT/corpus-gpu.log"
status=0
"$PY" test/gpu/check_corpus_verdicts.py --gpu "$OUT/corpus-gpu.jsonl" \
  --static test/gpu/results/corpus-static.jsonl --markdown "$OUT/corpus.md" || status=1
# The worker logs of crashed candidates, for the record.
find "$OUT/cache/workers" -name worker.log -exec tail -n 3 {} + > "$OUT/worker-logs.txt" 2>/dev/null; true

if ((bench)); then
  "$PY" bench/verify_vs_load_inline.py --build build-gpu --python "$PY" \
    --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -25
fi
exit $status
