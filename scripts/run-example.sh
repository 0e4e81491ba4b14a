#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then compiles an example PyTorch
# program with dice and prints what happened to each kernel request.
# Arguments go to `dice compile --example convnet` (e.g. --granularity op).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
exec "$root/.venv/bin/dice" compile --example convnet "$@"
