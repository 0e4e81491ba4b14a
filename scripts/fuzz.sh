#!/usr/bin/env bash
# Fuzzes every target of test/fuzz with libFuzzer, ASan and UBSan
# (CMake preset `fuzz`: Clang 22, build-fuzz/), each for FUZZ_SECONDS
# (default 600), and writes build-fuzz/fuzz-results/summary.json: per target
# the seconds, executions, coverage and findings. New inputs go to a work
# copy of the committed corpus; findings (crash-*, leak-*, timeout-*, oom-*)
# to build-fuzz/fuzz-results/<target>/. A finding's input, once its cause is
# fixed, belongs in test/fuzz/corpus/<target>/, where ctest replays it.
#
# Usage: scripts/fuzz.sh [TARGET...]   (default: every target)
# Environment: FUZZ_SECONDS, FUZZ_JOBS (targets fuzzed at once, default 1),
# DICE_JOBS (compile jobs, default 2).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-fuzz
seconds=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-1}
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }

missing=()
for p in clang-22 libfuzzer-22-dev libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[[ -x $root/.venv/bin/python && -x /usr/lib/llvm-22/bin/lit ]] || "$root/scripts/setup.sh"

export CCACHE_BASEDIR=$root
cd "$root"
[[ -f $build/build.ninja ]] || { step "configuring $build (preset fuzz)"; cmake --preset fuzz; }
step "building the fuzz targets"
cmake --build --preset fuzz -j "${DICE_JOBS:-2}"

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(ls "$root/test/fuzz/corpus")
fi
results=$build/fuzz-results
mkdir -p "$results"

fuzz_one() {
  local target=$1 out=$results/$1
  rm -rf "$out" && mkdir -p "$out/work"
  cp -r "$root/test/fuzz/corpus/$target/." "$out/work/"
  local dict=()
  [[ -f $root/test/fuzz/dicts/$target.dict ]] && dict=(-dict="$root/test/fuzz/dicts/$target.dict")
  # -fork=1 with -ignore_*: a finding does not end the run, so one run
  # collects every finding of the time given; -timeout: one input may take
  # this long (the deception target parses CUDA); -rss_limit_mb: an input
  # may use this much memory.
  ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 \
  UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/dice-fuzz-$target" "$out/work" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="$out/" >"$out/fuzz.log" 2>&1 || true
  echo "$target: $(grep -c '' "$out/fuzz.log") log lines"
}

step "fuzzing ${#targets[@]} targets, $seconds s each, $jobs at a time"
running=0
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  if (( ++running >= jobs )); then wait -n; ((running--)); fi
done
wait

"$root/.venv/bin/python" "$root/test/fuzz/summarize.py" "$results" "${targets[@]}"
