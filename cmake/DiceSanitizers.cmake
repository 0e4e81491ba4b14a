# DICE_ENABLE_SANITIZERS: AddressSanitizer + UndefinedBehaviorSanitizer for the
# project's own targets (the `asan` preset, scripts/test-sanitizers.sh).
#
# The flags are directory options of the top-level CMakeLists, so every target
# the project defines gets them and imported ones (LLVM, MLIR, Clang, LibTorch,
# GTest) do not: those are prebuilt and run uninstrumented inside our
# instrumented executables, which is what ASan supports. Include this before
# the first add_subdirectory, since targets copy directory options when they
# are created.
#
# -fno-sanitize-recover=undefined makes every UBSan finding fatal, so a test
# that reaches undefined behaviour fails instead of printing and passing.
# -g1 keeps line tables (file:line in reports) at little compile-time cost.
# -O1 (after the build type's -O3, so it wins) is what ASan's documentation
# suggests for tests, and compiles faster: the Clang-based static analysis's
# largest file took 66 s instead of 88 s. The fuzz build keeps -O3, for
# executions per second.
option(DICE_ENABLE_SANITIZERS
       "Build the project's own targets with ASan and UBSan" OFF)

if(DICE_ENABLE_SANITIZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "dice: DICE_ENABLE_SANITIZERS needs GCC or Clang")
  endif()
  set(DICE_SANITIZE -fsanitize=address,undefined)
  add_compile_options(${DICE_SANITIZE} -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -g1)
  if(NOT DICE_ENABLE_FUZZING)
    add_compile_options(-O1)
  endif()
  add_link_options(${DICE_SANITIZE})
  # What lit's llvm_config reads to offer the `asan` and `ubsan` features
  # (`UNSUPPORTED: asan` in a test that cannot run instrumented).
  set(DICE_LIT_SANITIZERS "Address;Undefined")
  message(STATUS "dice: building with ASan and UBSan")
else()
  set(DICE_LIT_SANITIZERS "")
endif()
