# DICE_ENABLE_FUZZING: libFuzzer targets (scripts/fuzz.sh, preset `fuzz`).
#
# Needs Clang (Debian clang-22, libfuzzer-22-dev, libclang-rt-22-dev). Every
# target the project defines gets libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link) as a directory option, like the sanitizer
# flags, so the fuzzer sees branches inside the libraries, not only in the
# target's own file; only the fuzz executables link libFuzzer's main
# (test/fuzz/CMakeLists.txt). Without this option the same targets link a
# replay main instead and ctest runs them over the committed corpus.
option(DICE_ENABLE_FUZZING "Build the fuzz targets with libFuzzer (Clang)" OFF)

if(DICE_ENABLE_FUZZING)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "dice: DICE_ENABLE_FUZZING needs Clang "
                        "(CC=clang-22 CXX=clang++-22)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "dice: building the fuzz targets with libFuzzer")
endif()
