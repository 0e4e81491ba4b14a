# Route compiles through ccache when it is installed: rebuilds after a clean
# checkout (CI, a fresh build directory) then cost seconds instead of minutes.
find_program(DICE_CCACHE ccache)
if(DICE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER "${DICE_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${DICE_CCACHE}")
  message(STATUS "dice: compiling through ${DICE_CCACHE}")
endif()
