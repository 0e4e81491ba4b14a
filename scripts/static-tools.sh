#!/usr/bin/env bash
# Builds dice-opt and dice-plan against LLVM/MLIR's static archives (the
# static-tools preset, build-static/) and packs them, xz-compressed, into
# .gpu-tools/ for a GPU node without LLVM (scripts/gpu-node.sh,
# docs/gpu-node.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CCACHE_BASEDIR=$root
[[ -f build-static/build.ninja ]] || cmake --preset static-tools
cmake --build --preset static-tools
mkdir -p .gpu-tools
for tool in dice-opt dice-plan; do
  xz -T0 -6 -c "build-static/bin/$tool" > ".gpu-tools/$tool.xz"
done
ls -l .gpu-tools
