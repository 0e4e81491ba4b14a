#!/usr/bin/env bash
# Sets up a Debian 12 machine for DICE and builds it; safe to run again (each
# step is skipped when already done). Run as root from anywhere.
#   system packages -> .venv (python/requirements.txt) -> build/ (CMake + Ninja)
# Environment: DICE_BUILD_DIR (default build), DICE_BUILD_TYPE (Release),
# DICE_CMAKE_ARGS (extra CMake arguments).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DICE_BUILD_DIR:-$root/build}
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }

apt_packages=(
  # LLVM/MLIR/Clang 22: the compiler core, lit and FileCheck, the Clang
  # analysis of candidate kernels.
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libclang-22-dev libclang-cpp22-dev clang-22
  # Libraries of lib/.
  libtomlplusplus-dev nlohmann-json3-dev libsqlite3-dev libpcre2-dev libutf8proc-dev
  # The command line of the tools that do not link LLVM.
  libcli11-dev
  # Gloo's headers, which c10d's Gloo backend header includes (dice-train's
  # CPU ranks; the library itself is LibTorch's).
  libgloo-dev
  # Build and test tools.
  cmake ninja-build ccache g++ libgtest-dev python3 python3-venv
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing system packages: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Debian's own Python 3.11: torch-mlir publishes cp311 wheels.
venv=$root/.venv
requirements=$root/python/requirements.txt
stamp=$venv/.dice-requirements.sha256
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ ! -x $venv/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  step "creating the Python environment in .venv (torch, torch-mlir, pytest)"
  [[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$want" >"$stamp"
fi
# The dice package itself, editable: `dice` on the venv's PATH and the
# sources used in place.
if ! (cd / && "$venv/bin/python" -c "import dice, sys; sys.exit(not dice.__file__.startswith('$root/python/'))" 2>/dev/null) ||
   [[ ! -x $venv/bin/dice || ! -x $venv/bin/dice-curate ]]; then
  step "installing the dice package into .venv (editable)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    --no-build-isolation -e "$root"
fi

# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# reuses what an earlier build compiled.
export CCACHE_BASEDIR=$root
if [[ ! -f $build/build.ninja ]]; then
  step "configuring $build"
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE="${DICE_BUILD_TYPE:-Release}" ${DICE_CMAKE_ARGS:-}
fi
step "building"
start=$SECONDS
cmake --build "$build"
step "built in $((SECONDS - start)) s"
