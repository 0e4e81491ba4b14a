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
# archives: dice-opt links in seconds on a 2-core machine. DICE_STATIC_TOOLS
# links the static archives instead, for dice-opt and dice-plan binaries
# that run where no LLVM is installed (a GPU node that builds only the
# LibTorch half; docs/gpu-node.md).
option(DICE_STATIC_TOOLS
       "Link dice-opt and dice-plan against LLVM/MLIR's static archives" OFF)
if(NOT DICE_STATIC_TOOLS)
  set(MLIR_LINK_MLIR_DYLIB ON)
  # Likewise for LLVM and Clang (libLLVM.so, libclang-cpp.so).
  set(LLVM_LINK_LLVM_DYLIB ON)
else()
  # Debian's MLIR archives name the LLVM dylib (the target "LLVM") as what
  # they need. A linker script points that target at LLVM's own archives
  # instead (in one group: their order does not matter), with the system
  # libraries llvm-config names; --as-needed keeps the unused ones out.
  execute_process(
    COMMAND "${LLVM_TOOLS_BINARY_DIR}/llvm-config" --link-static --libfiles
    OUTPUT_VARIABLE dice_llvm_archives OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE dice_llvm_config_status)
  if(dice_llvm_config_status)
    message(FATAL_ERROR "dice: DICE_STATIC_TOOLS needs llvm-config --link-static")
  endif()
  # llvm-config also names archives of parts Debian packages apart (Polly).
  separate_arguments(dice_llvm_archives UNIX_COMMAND "${dice_llvm_archives}")
  set(dice_llvm_inputs "")
  foreach(archive IN LISTS dice_llvm_archives)
    if(EXISTS "${archive}")
      string(APPEND dice_llvm_inputs " ${archive}")
    endif()
  endforeach()
  # Compression and XML support: static where the archive is installed,
  # else the runtime library itself (no development symlink needed).
  foreach(name z zstd xml2)
    find_library(DICE_STATIC_TOOLS_${name}
                 NAMES lib${name}.a ${name} lib${name}.so.1 lib${name}.so.2)
    if(DICE_STATIC_TOOLS_${name})
      string(APPEND dice_llvm_inputs " ${DICE_STATIC_TOOLS_${name}}")
    endif()
  endforeach()
  set(dice_llvm_script "${CMAKE_BINARY_DIR}/libLLVM-static.ld")
  file(WRITE "${dice_llvm_script}" "GROUP(${dice_llvm_inputs} -lrt -ldl -lm)\n")
  get_target_property(dice_llvm_configs LLVM IMPORTED_CONFIGURATIONS)
  foreach(config IN LISTS dice_llvm_configs)
    set_target_properties(LLVM PROPERTIES
      IMPORTED_LOCATION_${config} "${dice_llvm_script}"
      IMPORTED_SONAME_${config} "")
  endforeach()
endif()

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(DICE_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${DICE_LLVM_DEFINITIONS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})

# Where the FileCheck, not and count used by lit live.
set(DICE_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")
