#!/usr/bin/env bash
# Runs the front-end tools of an ASan + UBSan build over MLIR inputs (the
# coverage suite's exports, say): dice-opt outlines and scaffolds each input
# at granularity op, fusion and function, and dice-plan plans each result.
# A sanitizer report or a crash in any run fails the script; a tool that
# rejects its input (exit 1 with a diagnostic) does not.
#
#   bash scripts/test-sanitized-front-end.sh [build dir] input.mlir...
#
# Default build dir: build-asan-compiler/ (scripts/test-sanitizers.sh with
# DICE_SANITIZER_PRESET=asan-compiler builds it). JOBS=N runs N inputs at a
# time (default 2). Logs of failing runs go to <build>/sanitized-front-end/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-asan-compiler
if (($# > 0)) && [[ -d $1 ]]; then
  build=$(cd "$1" && pwd)
  shift
fi
(($# > 0)) || { echo "usage: $0 [build dir] input.mlir..." >&2; exit 2; }
jobs=${JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "error: JOBS must be a positive count, not '$jobs'" >&2; exit 2; }
for tool in dice-opt dice-plan; do
  [[ -x $build/bin/$tool ]] || { echo "error: no $build/bin/$tool" >&2; exit 2; }
done
grep -q 'DICE_ENABLE_SANITIZERS:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  { echo "error: $build is not a sanitizer build (DICE_ENABLE_SANITIZERS)" >&2; exit 2; }

logs=$build/sanitized-front-end
rm -rf "$logs"
mkdir -p "$logs"
# As the test suites run them (docs/sanitizers.md, "The test environment"):
# MLIR poisons its own arenas, which ASan would report as user poisoning.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# A run is bad when a sanitizer reports or the tool dies of a signal.
run() { # log, command...
  local log=$1 status=0
  shift
  "$@" >"$log.out" 2>"$log" || status=$?
  if ((status > 1)) || grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log"; then
    printf 'FAIL  %s (exit %d, %s)\n' "$(basename "$log")" "$status" "$log"
    touch "$logs/.failed"
    return 1
  fi
  rm -f "$log" "$log.out"
}

check_input() { # input.mlir
  local input=$1 name g
  name=$(basename "$input" .mlir)
  for g in op fusion function; do
    run "$logs/$name.$g.dice-opt" "$build/bin/dice-opt" "$input" \
      "--dice-outline=granularity=$g" --dice-scaffold -o "$logs/$name.$g.mlir" || continue
    [[ -s $logs/$name.$g.mlir ]] &&
      run "$logs/$name.$g.dice-plan" "$build/bin/dice-plan" "$logs/$name.$g.mlir" -o /dev/null
    rm -f "$logs/$name.$g.mlir"
  done
  return 0
}

for input in "$@"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  check_input "$input" &
done
wait || true
if [[ -e $logs/.failed ]]; then
  echo "sanitizers reported errors; see $logs"
  exit 1
fi
echo "sanitized front end: no reports in $# inputs x 3 granularities"
