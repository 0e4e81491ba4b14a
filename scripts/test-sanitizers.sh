#!/usr/bin/env bash
# Builds build-asan/ (CMake preset `asan`: ASan + UBSan, DICE_ENABLE_SANITIZERS)
# and runs the lit, GoogleTest and fuzz-replay suites under the sanitizers
# (scripts/test.sh, the README's test command, ends with it). pytest is not
# part of it: it loads the project's shared libraries into an uninstrumented
# Python (scripts/test.sh runs it against the regular build).
# Only what those suites need is built (targets dice-test-depends and
# dice-unit-tests, which holds the fuzz replays), not the remaining tools.
# Environment: DICE_JOBS (parallel compile jobs, default 2).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-asan   # the preset's binaryDir
jobs=${DICE_JOBS:-2}
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# System packages and .venv come from scripts/setup.sh; run it only when
# something it provides is missing (it also builds build/, which the regular
# test command uses).
if [[ ! -x /usr/lib/llvm-22/bin/lit || ! -x $root/.venv/bin/python ]] ||
  ! command -v cmake ninja >/dev/null; then
  "$root/scripts/setup.sh"
fi

export CCACHE_BASEDIR=$root
cd "$root"   # presets are read from the source directory
if [[ ! -f $build/build.ninja ]]; then
  step "configuring $build (preset asan)"
  cmake --preset asan
fi
step "building the lit and unit suites with ASan + UBSan"
start=$SECONDS
cmake --build --preset asan -j "$jobs"
step "built in $((SECONDS - start)) s"

rm -rf "$build/test-results"
mkdir -p "$build/test-results"
step "running lit, the unit tests and the fuzz replays under ASan + UBSan"
start=$SECONDS
status=0
ctest --preset asan -j "$jobs" || status=$?
step "ran in $((SECONDS - start)) s"
mapfile -t suites < <(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: *//p')
"$root/.venv/bin/python" "$root/scripts/test-summary.py" "$build/test-results" \
  "${suites[@]}" || status=1
exit $status
