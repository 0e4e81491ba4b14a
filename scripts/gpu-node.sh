# Sourced on a GPU node without LLVM, from the repository root:
#   source scripts/gpu-node.sh PYTHON LOG
# builds the GPU half (test/gpu/build-gpu-half.sh: the verifier worker, the
# light bridge, the runtime, the model plugin), puts the static dice-opt and
# dice-plan carried in .gpu-tools/ (scripts/static-tools.sh packs them on a
# machine with LLVM) into build-gpu/bin, and exports what the compiler needs
# to find this node's paths instead of the ones it was built with
# (docs/gpu-node.md). Returns non-zero when a step fails.
# DICE_NODE_FRONT_END=0: a node for the data engine and the verifier only,
# without dice-opt and dice-plan (nothing from .gpu-tools/ is needed, so a
# call to a lent machine need not carry it).
dice_gpu_node() {
  local py=$1 log=$2
  source test/gpu/build-gpu-half.sh "$py" "$log" dice-verify-worker dice-verify dice-scaffold-programs \
    DiceLightBridge DiceRuntime DiceModelPlugin dice-reference-run || return 1
  local tool tools=(dice-opt dice-plan)
  case ${DICE_NODE_FRONT_END:-1} in
    1) ;;
    0) tools=() ;;
    *) echo "gpu-node: DICE_NODE_FRONT_END is 0 or 1, not '$DICE_NODE_FRONT_END'" >&2; return 1 ;;
  esac
  for tool in "${tools[@]}"; do
    if [[ -f .gpu-tools/$tool.xz ]]; then
      # Python's lzma, not xz(1): a node's image may lack xz-utils.
      "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        ".gpu-tools/$tool.xz" "build-gpu/bin/$tool" && chmod +x "build-gpu/bin/$tool"
    fi
    [[ -x build-gpu/bin/$tool ]] || { echo "gpu-node: no $tool (.gpu-tools/$tool.xz)" >&2; return 1; }
  done
  local cache=build-gpu/CMakeCache.txt
  value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
  local includes
  includes=$(value DICE_CANDIDATE_INCLUDE_DIRS)
  export DICE_BUILD_DIR=$PWD/build-gpu
  export DICE_NVCC=$(value DICE_NVCC)
  export DICE_CANDIDATE_INCLUDE_DIRS=${includes//;/|}
  export DICE_CANDIDATE_PROLOGUE_DIR=$(value DICE_CANDIDATE_PROLOGUE_DIR)
  export DICE_LIGHT_INCLUDE_DIR=$(value DICE_LIGHT_INCLUDE_DIR)
  export DICE_LIGHT_BRIDGE_LIBRARY=$(value DICE_LIGHT_BRIDGE_LIBRARY)
  export DICE_TORCH_LIBRARY_DIR=$(cd "${includes%%;*}/../lib" && pwd)
  export DICE_VERIFY_WORKER=$PWD/build-gpu/bin/dice-verify-worker
  export DICE_MODEL_PLUGIN=$PWD/build-gpu/lib/libDiceModelPlugin.so
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
  (( ${#tools[@]} == 0 )) || build-gpu/bin/dice-opt --version > /dev/null || return 1
}
dice_gpu_node "$@"
