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

# Parsing <torch/torch.h> takes about 40 s a translation unit, most of the
# build's time on a machine of few cores; one precompiled copy, made with the
# flags every LibTorch target shares (its definitions, exceptions, RTTI,
# position-independent code), is loaded by each of them instead (about 15 s).
# GCC checks the flags and reparses the headers, with a warning, where they
# differ. On many cores the parses run side by side and the one serial
# precompile step costs more than it saves: turn it off there.
option(DICE_TORCH_PCH "Precompile LibTorch's headers once for every LibTorch target" ON)
if(DICE_TORCH_PCH)
  add_library(DiceTorchPch OBJECT "${CMAKE_CURRENT_LIST_DIR}/torch-pch.cpp")
  target_link_libraries(DiceTorchPch PUBLIC DiceHeaders ${TORCH_LIBRARIES})
  target_compile_options(DiceTorchPch PRIVATE -fexceptions -frtti)
  set_target_properties(DiceTorchPch PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_precompile_headers(DiceTorchPch PRIVATE <torch/torch.h>)
endif()

# A target whose sources include LibTorch's headers takes them precompiled.
function(dice_use_torch_pch target)
  if(DICE_TORCH_PCH)
    target_precompile_headers(${target} REUSE_FROM DiceTorchPch)
  endif()
endfunction()

# A library built against LibTorch: exceptions and RTTI on, whatever LLVM's
# flags say, and no LLVM headers reach it; the project's headers, like every
# library.
function(dice_add_torch_library name)
  add_library(${name} ${ARGN})
  target_link_libraries(${name} PUBLIC DiceHeaders ${TORCH_LIBRARIES})
  target_compile_options(${name} PRIVATE -fexceptions -frtti)
  dice_use_torch_pch(${name})
endfunction()
