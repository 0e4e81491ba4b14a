# LLVM, MLIR and Clang 22 from the Debian packages (llvm-22-dev,
# libmlir-22-dev, libclang-22-dev). Override the *_DIR variables to use
# another installation.
set(MLIR_DIR "/usr/lib/llvm-22/lib/cmake/mlir" CACHE PATH "MLIRConfig.cmake dir")
set(LLVM_DIR "/usr/lib/llvm-22/lib/cmake/llvm" CACHE PATH "LLVMConfig.cmake dir")
set(Clang_DIR "/usr/lib/llvm-22/lib/cmake/clang" CACHE PATH "ClangConfig.cmake dir")
set(LLVM_EXTERNAL_LIT "/usr/lib/llvm-22/bin/lit" CACHE FILEPATH "lit driver")

find_package(MLIR REQUIRED CONFIG)
find_package(LLVM REQUIRED CONFIG)
find_package(Clang REQUIRED CONFIG)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "dice: needs LLVM/MLIR 22, found ${LLVM_PACKAGE_VERSION} "
                      "in ${LLVM_DIR}")
endif()
message(STATUS "dice: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(MLIR_BINARY_DIR "${CMAKE_BINARY_DIR}")   # where add_mlir_doc writes
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)   # -fno-exceptions, like LLVM itself

set(LLVM_RUNTIME_OUTPUT_INTDIR "${CMAKE_BINARY_DIR}/bin")
set(LLVM_LIBRARY_OUTPUT_INTDIR "${CMAKE_BINARY_DIR}/lib")
if(NOT TARGET mlir-doc)
  add_custom_target(mlir-doc)
endif()

# Link against the one shared libMLIR instead of hundreds of static
# archives: dice-opt links in seconds on a 2-core machine.
set(MLIR_LINK_MLIR_DYLIB ON)
# Likewise for LLVM and Clang (libLLVM.so, libclang-cpp.so).
set(LLVM_LINK_LLVM_DYLIB ON)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(DICE_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${DICE_LLVM_DEFINITIONS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})

# Where the FileCheck, not and count used by lit live.
set(DICE_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")
