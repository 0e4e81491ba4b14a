//===- VerifierPathsTest.cpp - build paths from the environment -----------===//

#include "dice/Verifier/CandidateVerifier.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace dice;

namespace {

const char *const kVariables[] = {
    "DICE_NVCC",           "DICE_CANDIDATE_PROLOGUE_DIR",
    "DICE_CANDIDATE_INCLUDE_DIRS", "DICE_TORCH_LIBRARY_DIR",
    "DICE_LIGHT_INCLUDE_DIR",      "DICE_LIGHT_BRIDGE_LIBRARY",
    "DICE_VERIFY_WORKER"};

class VerifierPaths : public ::testing::Test {
protected:
  void SetUp() override {
    for (const char *name : kVariables)
      unsetenv(name);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(VerifierPaths, TheEnvironmentNamesAnotherMachinesPaths) {
  setenv("DICE_NVCC", "/gpu/cuda/bin/nvcc", 1);
  setenv("DICE_CANDIDATE_PROLOGUE_DIR", "/gpu/dice/prologue", 1);
  setenv("DICE_CANDIDATE_INCLUDE_DIRS", "/gpu/torch/include||/gpu/torch/include/api", 1);
  setenv("DICE_TORCH_LIBRARY_DIR", "/gpu/torch/lib", 1);
  setenv("DICE_LIGHT_INCLUDE_DIR", "/gpu/dice/light", 1);
  setenv("DICE_LIGHT_BRIDGE_LIBRARY", "/gpu/build/lib/libDiceLightBridge.so", 1);
  setenv("DICE_VERIFY_WORKER", "/gpu/build/bin/dice-verify-worker", 1);
  KernelBuildOptions build = defaultKernelBuildOptions("/cache");
  EXPECT_EQ(build.nvccPath, "/gpu/cuda/bin/nvcc");
  EXPECT_EQ(build.prologueDir, "/gpu/dice/prologue");
  EXPECT_EQ(build.includeDirs,
            (std::vector<std::string>{"/gpu/torch/include", "/gpu/torch/include/api"}));
  EXPECT_EQ(build.torchLibraryDir, "/gpu/torch/lib");
  EXPECT_EQ(build.lightIncludeDir, "/gpu/dice/light");
  EXPECT_EQ(build.lightBridgeLibrary, "/gpu/build/lib/libDiceLightBridge.so");
  EXPECT_EQ(build.cacheDir, "/cache");
  EXPECT_EQ(defaultWorkerPath(), "/gpu/build/bin/dice-verify-worker");
}

TEST_F(VerifierPaths, UnsetOrEmptyKeepsWhatTheBuildFound) {
  KernelBuildOptions built = defaultKernelBuildOptions("/cache");
  for (const char *name : kVariables)
    setenv(name, "", 1);
  KernelBuildOptions empty = defaultKernelBuildOptions("/cache");
  EXPECT_EQ(empty.nvccPath, built.nvccPath);
  EXPECT_EQ(empty.prologueDir, built.prologueDir);
  EXPECT_EQ(empty.includeDirs, built.includeDirs);
  EXPECT_EQ(empty.torchLibraryDir, built.torchLibraryDir);
  EXPECT_EQ(empty.lightIncludeDir, built.lightIncludeDir);
  EXPECT_EQ(empty.lightBridgeLibrary, built.lightBridgeLibrary);
  // One variable changes only its own path.
  setenv("DICE_NVCC", "/elsewhere/nvcc", 1);
  KernelBuildOptions one = defaultKernelBuildOptions("/cache");
  EXPECT_EQ(one.nvccPath, "/elsewhere/nvcc");
  EXPECT_EQ(one.includeDirs, built.includeDirs);
  EXPECT_EQ(one.prologueDir, built.prologueDir);
}

} // namespace
