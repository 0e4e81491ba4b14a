# Sourced by the GPU scripts, from the repository root: configures build-gpu
# with the LibTorch half only (GPU machines have no LLVM) and builds the
# targets named. Headers and libraries the GPU image lacks (toml++,
# nlohmann_json, sqlite3, pcre2, utf8proc, CLI11) come from .deps/usr when present,
# whose lib/ then joins LD_LIBRARY_PATH for what runs afterwards.
#   source test/gpu/build-gpu-half.sh PYTHON LOG TARGET...
# Returns non-zero (after printing the log's tail) when the build fails.
# Also defines dice_machine_info FILE.
dice_build_gpu_half() {
  local py log=$2
  # An absolute interpreter: cmake takes a bare name as a path in the build's
  # working folder.
  py=$(command -v "$1") || { echo "build-gpu-half: no interpreter '$1'" >&2; return 1; }
  shift 2
  local deps=()
  if [[ -d .deps/usr ]]; then
    local d=$PWD/.deps/usr
    deps=(-DDICE_TOMLPP_INCLUDE_DIR=$d/include -Dnlohmann_json_DIR=$d/share/cmake/nlohmann_json
          -DCLI11_DIR=$d/share/cmake/CLI11
          -DSQLite3_INCLUDE_DIR=$d/include -DSQLite3_LIBRARY=$d/lib/libsqlite3.so
          -DDICE_PCRE2_INCLUDE_DIR=$d/include -DDICE_PCRE2_LIBRARY=$d/lib/libpcre2-8.so
          -DDICE_UTF8PROC_INCLUDE_DIR=$d/include -DDICE_UTF8PROC_LIBRARY=$d/lib/libutf8proc.so)
    export LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  local torch_dir
  torch_dir=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch
  # No precompiled LibTorch header: a node's many cores parse side by side.
  { cmake -G Ninja -B build-gpu -DDICE_ENABLE_COMPILER=OFF -DDICE_ENABLE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Release -DDICE_TORCH_PCH=OFF -DTorch_DIR="$torch_dir" -DDICE_PYTHON="$py" "${deps[@]}" &&
    ninja -C build-gpu "$@"; } > "$log" 2>&1 || { tail -40 "$log"; return 1; }
}

# The GPU, its driver, the commit and the CPU count, one a line, into FILE
# (and on stdout): what a result file names.
dice_machine_info() {
  {
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "${DICE_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}"
    nproc
  } | tee "$1"
}
dice_build_gpu_half "$@"
