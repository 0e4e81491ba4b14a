//===- DefaultModelTest.cpp - where engine=model finds the default model --===//
//
// A tool copied to another machine (a GPU node without LLVM) must find that
// machine's model, not the build machine's: the lookup goes by the
// binary's own folder before the source tree compiled into it.
//
//===----------------------------------------------------------------------===//

#include "dice/Infill/EngineFactory.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace dice;
namespace fs = std::filesystem;

namespace {

class DefaultModel : public ::testing::Test {
protected:
  void SetUp() override {
    unsetenv("DICE_DEFAULT_MODEL_DIR");
    root = fs::temp_directory_path() /
           ("dice-default-model-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
  }
  void TearDown() override {
    unsetenv("DICE_DEFAULT_MODEL_DIR");
    fs::remove_all(root);
  }
  /// A folder holding a model's config.json; returns its canonical path.
  std::string modelAt(const fs::path &dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << "{}\n";
    return fs::canonical(dir).string();
  }
  std::string folder(const fs::path &dir) {
    fs::create_directories(dir);
    return dir.string();
  }
  fs::path root;
};

TEST_F(DefaultModel, ABinaryInACheckoutFindsThatCheckoutsModel) {
  std::string model = modelAt(root / "checkout" / "model" / "default");
  Result<std::string> found =
      defaultModelDir(folder(root / "checkout" / "build-gpu" / "bin"));
  ASSERT_TRUE(found) << found.error().describe();
  EXPECT_EQ(*found, model);
}

TEST_F(DefaultModel, AnInstalledBinaryFindsTheInstalledModel) {
  std::string model = modelAt(root / "prefix" / "share" / "dice" / "model" / "default");
  Result<std::string> found = defaultModelDir(folder(root / "prefix" / "bin"));
  ASSERT_TRUE(found) << found.error().describe();
  EXPECT_EQ(*found, model);
}

TEST_F(DefaultModel, TheEnvironmentComesFirst) {
  modelAt(root / "checkout" / "model" / "default");
  std::string chosen = modelAt(root / "elsewhere");
  setenv("DICE_DEFAULT_MODEL_DIR", chosen.c_str(), 1);
  Result<std::string> found =
      defaultModelDir(folder(root / "checkout" / "build" / "bin"));
  ASSERT_TRUE(found) << found.error().describe();
  EXPECT_EQ(*found, chosen);
}

TEST_F(DefaultModel, AnEnvironmentNamingNoModelIsAnError) {
  // Not passed over for another model: the setting must do what it says.
  modelAt(root / "checkout" / "model" / "default");
  std::string empty = folder(root / "empty");
  setenv("DICE_DEFAULT_MODEL_DIR", empty.c_str(), 1);
  Result<std::string> found =
      defaultModelDir(folder(root / "checkout" / "build" / "bin"));
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().describe().find("DICE_DEFAULT_MODEL_DIR names no model"),
            std::string::npos);
  EXPECT_NE(found.error().describe().find(empty + "/config.json"), std::string::npos);
}

TEST_F(DefaultModel, ElseTheSourceTreeTheBuildWasMadeFrom) {
  // A binary outside any checkout: the shipped model of the sources.
  Result<std::string> found = defaultModelDir(folder(root / "loose" / "bin"));
  ASSERT_TRUE(found) << found.error().describe();
  EXPECT_TRUE(fs::exists(fs::path(*found) / "config.json"));
  EXPECT_EQ(fs::path(*found).filename(), "default");
}

} // namespace
