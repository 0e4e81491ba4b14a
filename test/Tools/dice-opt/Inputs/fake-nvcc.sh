#!/bin/sh
# Stands in for nvcc in CPU-only tests: reports a version and "builds" every
# output it is asked for as a small file, so candidates reach the run stage.
# A source containing FAKE_NVCC_ERROR fails to compile instead.
if [ "$1" = "--version" ]; then
  echo "Cuda compilation tools, release 0.0 (fake nvcc of the DICE tests)"
  exit 0
fi
out=""
prev=""
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then out="$arg"; fi
  case "$arg" in
    *.cu) if grep -q FAKE_NVCC_ERROR "$arg" 2>/dev/null; then
            echo "$arg(1): error: FAKE_NVCC_ERROR is not a type" >&2
            exit 1
          fi ;;
  esac
  prev="$arg"
done
[ -n "$out" ] && echo "fake library" > "$out"
exit 0
