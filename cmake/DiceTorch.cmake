# LibTorch from the project's venv (PyPI `torch` wheel), or from
# -DTorch_DIR=... on machines that have LibTorch elsewhere (the GPU nodes).
if(NOT Torch_DIR)
  execute_process(
    COMMAND "${DICE_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE DICE_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE DICE_TORCH_FOUND_RC)
  if(NOT DICE_TORCH_FOUND_RC EQUAL 0)
    message(FATAL_ERROR "dice: cannot import torch with ${DICE_PYTHON}; run "
                        "scripts/setup.sh or pass -DTorch_DIR=...")
  endif()
  set(Torch_DIR "${DICE_TORCH_PREFIX}/Torch")
endif()
# The kernels target Hopper (H100/H200). Naming the arch also keeps
# TorchConfig from probing for a GPU, which fails on machines without one.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
endif()
find_package(Torch REQUIRED CONFIG)
message(STATUS "dice: LibTorch from ${Torch_DIR}")

# A library built against LibTorch: exceptions and RTTI on, whatever LLVM's
# flags say, and no LLVM headers reach it; the project's headers, like every
# library.
function(dice_add_torch_library name)
  add_library(${name} ${ARGN})
  target_link_libraries(${name} PUBLIC DiceHeaders ${TORCH_LIBRARIES})
  target_compile_options(${name} PRIVATE -fexceptions -frtti)
endfunction()
