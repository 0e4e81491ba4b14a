# Dependencies shared by every part of the build.

# The project's Python environment (scripts/setup.sh creates it); tests and
# the torch-mlir exporter run with this interpreter.
set(DICE_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python interpreter of the project's virtual environment")
# A FILEPATH given as a bare name (-DDICE_PYTHON=python3) is made absolute
# against the folder cmake runs in, which names no interpreter.
if(NOT EXISTS "${DICE_PYTHON}")
  message(FATAL_ERROR "dice: DICE_PYTHON is '${DICE_PYTHON}', which does not "
          "exist: run scripts/setup.sh, or pass the interpreter's absolute path")
endif()

# TOML++ (Debian: libtomlplusplus-dev) is header-only here; compiled without
# exceptions so the same code serves LLVM-built and LibTorch-built targets.
find_path(DICE_TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
add_library(dice_tomlplusplus INTERFACE)
target_include_directories(dice_tomlplusplus SYSTEM INTERFACE
                           "${DICE_TOMLPP_INCLUDE_DIR}")
target_compile_definitions(dice_tomlplusplus INTERFACE TOML_EXCEPTIONS=0
                           TOML_HEADER_ONLY=1)

find_package(nlohmann_json 3.11 REQUIRED)
# CLI11 (Debian: libcli11-dev, header-only): the command line of the tools
# that do not link LLVM; dice-opt and dice-plan keep llvm::cl.
find_package(CLI11 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
