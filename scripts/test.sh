#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs every test suite through
# ctest: lit (FileCheck), GoogleTest units and pytest. Ends with the count of
# tests that ran, per suite and in total.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DICE_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"

rm -rf "$build/test-results"
mkdir -p "$build/test-results"
status=0
ctest --test-dir "$build" --output-on-failure -j2 || status=$?
mapfile -t suites < <(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: *//p')
"$root/.venv/bin/python" "$root/scripts/test-summary.py" "$build/test-results" \
  "${suites[@]}" || status=1
exit $status
