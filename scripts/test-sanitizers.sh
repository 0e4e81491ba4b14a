#!/usr/bin/env bash
# Builds an ASan + UBSan build (DICE_ENABLE_SANITIZERS) and runs the lit,
# GoogleTest and fuzz-replay suites under the sanitizers. pytest is not part
# of it: it loads the project's shared libraries into an uninstrumented
# Python (scripts/test.sh runs it against the regular build).
# Only what those suites need is built (targets dice-test-depends and
# dice-unit-tests, which holds the fuzz replays), not the remaining tools.
# Environment:
#   DICE_SANITIZER_PRESET  asan (default): both halves, build-asan/;
#                          asan-compiler: the compiler half without LibTorch,
#                          build-asan-compiler/ (what scripts/test.sh runs:
#                          the LibTorch half's instrumented build alone takes
#                          longer than the rest of the test command)
#   DICE_JOBS              parallel compile jobs (default 2)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${DICE_SANITIZER_PRESET:-asan}
case $preset in
  asan | asan-compiler) build=$root/build-$preset ;;  # the preset's binaryDir
  *) echo "test-sanitizers.sh: error: DICE_SANITIZER_PRESET is '$preset'; expected asan or asan-compiler" >&2
     exit 2 ;;
esac
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
  step "configuring $build (preset $preset)"
  cmake --preset "$preset"
fi
step "building the lit and unit suites with ASan + UBSan"
start=$SECONDS
cmake --build --preset "$preset" -j "$jobs"
step "built in $((SECONDS - start)) s"

rm -rf "$build/test-results"
mkdir -p "$build/test-results"
step "running lit, the unit tests and the fuzz replays under ASan + UBSan"
start=$SECONDS
status=0
ctest --preset "$preset" -j "$jobs" || status=$?
step "ran in $((SECONDS - start)) s"
mapfile -t suites < <(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: *//p')
"$root/.venv/bin/python" "$root/scripts/test-summary.py" "$build/test-results" \
  "${suites[@]}" || status=1
exit $status
