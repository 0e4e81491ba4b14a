#!/usr/bin/env bash
# Runs the front-end tools under valgrind's memcheck: dice-opt (outline and
# scaffold) over the inputs of test/Passes and the committed torch-mlir
# exports, then dice-plan over each scaffolded function. memcheck sees what
# ASan does not: reads of uninitialised memory (docs/sanitizers.md).
#
#   bash scripts/test-memcheck.sh [build dir] [input.mlir...]
#
# Default build dir: build/ (a regular Release build; memcheck needs no
# instrumented one). Default inputs: test/Passes/*.mlir and
# test/Inputs/torch-mlir/*.mlir. MEMCHECK_JOBS=N checks N inputs at a time
# (default 1); MEMCHECK_ORIGINS=no drops --track-origins, about twice as
# fast, for sweeps (rerun a finding with it on to see where the value came
# from); MEMCHECK_PLAN=no checks dice-opt alone. Logs go to
# <build>/memcheck/. The exit
# status is 1 when memcheck reports any error in any run. A tool that fails
# on its input (the invalid-input tests are meant to) is not an error here:
# only memcheck's findings count, read from its own summary.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shift || true
inputs=("$@")
if ((${#inputs[@]} == 0)); then
  inputs=("$root"/test/Passes/*.mlir "$root"/test/Inputs/torch-mlir/*.mlir)
fi
if ! command -v valgrind >/dev/null; then
  echo "error: valgrind is not installed (apt-get install -y valgrind)" >&2
  exit 2
fi
for tool in dice-opt dice-plan; do
  [[ -x $build/bin/$tool ]] || { echo "error: no $build/bin/$tool" >&2; exit 2; }
done

logs=$build/memcheck
rm -rf "$logs"
mkdir -p "$logs"
# --error-exitcode=1 alone cannot tell memcheck's findings from a tool's own
# failure (dice-opt exits 1 on a diagnostic), so each run also writes its log
# and the log's ERROR SUMMARY decides.
jobs=${MEMCHECK_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "error: MEMCHECK_JOBS must be a positive count, not '$jobs'" >&2; exit 2; }
origins=${MEMCHECK_ORIGINS:-yes}
[[ $origins == yes || $origins == no ]] || { echo "error: MEMCHECK_ORIGINS must be yes or no, not '$origins'" >&2; exit 2; }
plan=${MEMCHECK_PLAN:-yes}
[[ $plan == yes || $plan == no ]] || { echo "error: MEMCHECK_PLAN must be yes or no, not '$plan'" >&2; exit 2; }
memcheck=(valgrind --tool=memcheck --error-exitcode=1 --track-origins=$origins
  --leak-check=no --num-callers=30
  --suppressions="$root/scripts/memcheck.supp")

# Checks run in subshells when in parallel: a finding leaves a marker file.
check() { # name, command...
  local name=$1 log=$logs/$1.log
  shift
  "${memcheck[@]}" --log-file="$log" "$@" >/dev/null 2>"$logs/$name.stderr" || true
  if grep -q "ERROR SUMMARY: 0 errors" "$log"; then
    printf 'ok    %s\n' "$name"
  else
    printf 'FAIL  %s (%s)\n' "$name" "$log"
    touch "$logs/.failed"
  fi
}

check_input() { # input.mlir
  local input=$1 name split scaffolded
  name=$(basename "$(dirname "$input")")-$(basename "$input" .mlir)
  split=()
  grep -q -- '-split-input-file' "$input" && split=(-split-input-file)
  scaffolded=$logs/$name.scaffolded.mlir
  check "$name.dice-opt" "$build/bin/dice-opt" "$input" "${split[@]}" \
    --dice-outline=granularity=fusion --dice-scaffold -o "$scaffolded"
  # dice-plan reads one module: only inputs that are not split, and only
  # when dice-opt scaffolded them.
  if [[ $plan == yes ]] && ((${#split[@]} == 0)) && [[ -s $scaffolded ]]; then
    check "$name.dice-plan" "$build/bin/dice-plan" "$scaffolded" -o /dev/null
  fi
}

for input in "${inputs[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  check_input "$input" &
done
wait || true
if [[ -e $logs/.failed ]]; then
  echo "memcheck reported errors; see $logs"
  exit 1
fi
echo "memcheck: no errors in ${#inputs[@]} inputs"
