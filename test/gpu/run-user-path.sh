#!/usr/bin/env bash
# The PyTorch user's path on a GPU node (docs/gpu-node.md, docs/pytorch.md),
# from the repository root, with .gpu-tools, .deps and .dice/backend-on-node
# carried along (made on the machine with LLVM: scripts/static-tools.sh,
# scripts/gpu-deps.sh, `test/gpu/backend_on_node.py prepare`). Results go
# to $OUT.
#   test/gpu/run-user-path.sh user          the backend with the replayed
#       kernels (backend_on_node.py run), the README's example and 9 tasks
#       with the default model (user_path.py, an injected failure included),
#       then the example compiled again in a new process from the kernel
#       database the first compile filled: $OUT/{backend,user-path}.*,
#       $OUT/second/user-path.*
#   test/gpu/run-user-path.sh bench LEVEL   `dice bench tasks` over
#       tasks/levelLEVEL with the default model: $OUT/bench-levelLEVEL/
# Each phase sets the node up first (a warm machine keeps build-gpu/).
set -uo pipefail
phase=${1:-}
[[ $phase == user || ($phase == bench && -n ${2:-}) ]] ||
  { echo "usage: $0 user | bench LEVEL" >&2; exit 2; }
OUT=${OUT:-/tmp/dice-user-path}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
start=$SECONDS
source scripts/gpu-node.sh python3 "$OUT/build.log" || exit 1
echo "node set up in $((SECONDS - start)) s"
dice_machine_info "$OUT/machine.txt"
exports=.dice/backend-on-node/exports

if [[ $phase == user ]]; then
  python3 test/gpu/backend_on_node.py run --out "$OUT" 2>&1 | grep -v '^W1' | tee "$OUT/backend.log" | tail -12
  python3 test/gpu/user_path.py --out "$OUT" > "$OUT/user-path.log" 2>&1
  echo "user_path.py: exit $?"; tail -16 "$OUT/user-path.md"
  python3 test/gpu/user_path.py --out "$OUT/second" --programs example/convnet \
    > "$OUT/second.log" 2>&1
  echo "second compile: exit $?"; grep -m1 convnet "$OUT/second/user-path.md"
else
  python3 -m dice bench tasks tasks --filter "level$2/" --granularity function \
    --export-cache "$exports" --jobs 16 --runs 30 --trials 2 --no-progress \
    --out "$OUT/bench-level$2" 2>&1 | grep -v '^W1' | tail -20
fi
echo "done in $((SECONDS - start)) s"
