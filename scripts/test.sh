#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs every test suite through
# ctest: lit (FileCheck), GoogleTest units, the fuzz targets' replays of
# their corpus and pytest; then the ASan + UBSan build of the lit, unit and
# fuzz-replay suites of the compiler half (scripts/test-sanitizers.sh with
# the preset asan-compiler: the LibTorch half's instrumented build would
# double the command's time, so it runs through `DICE_SANITIZER_PRESET=asan
# scripts/test-sanitizers.sh`; DICE_SANITIZERS=0 skips this step). Ends with
# the count of tests that ran, per suite and in total.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DICE_BUILD_DIR:-$root/build}
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }
"$root/scripts/setup.sh"

rm -rf "$build/test-results"
mkdir -p "$build/test-results"
status=0
step "running the suites of $build"
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j2 || status=$?
step "ran in $((SECONDS - start)) s"
mapfile -t suites < <(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: *//p')
"$root/.venv/bin/python" "$root/scripts/test-summary.py" "$build/test-results" \
  "${suites[@]}" || status=1

if [[ ${DICE_SANITIZERS:-1} != 0 ]]; then
  DICE_SANITIZER_PRESET=${DICE_SANITIZER_PRESET:-asan-compiler} \
    "$root/scripts/test-sanitizers.sh" || status=1
fi
exit $status
