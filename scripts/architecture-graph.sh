#!/usr/bin/env bash
# Regenerates docs/architecture-deps.svg, the link graph of the project's own
# libraries and tools, from CMake (`cmake --graphviz`, filtered by
# CMakeGraphVizOptions.cmake at the repository root) through Graphviz `dot`.
# Configures a throwaway build directory; builds nothing. Run it after
# changing a target or its links, and commit the SVG.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/docs/architecture-deps.svg

if ! command -v dot >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends graphviz
  else
    echo "architecture-graph.sh: needs Graphviz dot (Debian: apt-get install graphviz)" >&2
    exit 1
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Both halves, no tests: the graph shows what ships.
cmake -G Ninja -S "$root" -B "$tmp" -DCMAKE_BUILD_TYPE=Release \
  -DDICE_ENABLE_TESTS=OFF --graphviz="$tmp/dice.dot" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; exit 1; }
# Left to right reads as "uses"; the build directory's path is not in the graph.
sed -e 's/^digraph "dice" {/digraph "dice" {\n  rankdir = "LR";/' "$tmp/dice.dot" |
  dot -Tsvg -o "$out"
echo "wrote ${out#"$root"/}"
