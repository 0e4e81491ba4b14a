//===- ServicesTest.cpp - what the passes ask of their driver -------------===//

#include "dice/Driver/Services.h"
#include "dice/Dialect/Dice/DiceDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace mlir;
using namespace mlir::dice;

namespace {

std::string writeConfig(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name + std::to_string(::getpid());
  std::ofstream(path) << text;
  return path;
}

/// A registry whose contexts get services of their own, as a driver's do.
DialectRegistry driverRegistry() {
  DialectRegistry registry;
  registry.insert<DiceDialect>();
  registerDiceServices(registry, [](Dialect *dialect) {
    return std::make_unique<DiceServices>(dialect);
  });
  return registry;
}

// A pipeline's passes share one reading of dice.toml: the driver's services
// load it once per context, so a file changed under a running pipeline
// cannot give two passes two configurations.
TEST(DiceServices, ADriversContextReadsDiceTomlOnce) {
  std::string path = writeConfig("once.toml", "[sampling]\ncandidates = 3\n");
  DialectRegistry registry = driverRegistry();
  MLIRContext context(registry);
  context.loadDialect<DiceDialect>();
  const DiceServices &services = getDiceServices(&context);

  ::dice::Result<::dice::Config> first = services.loadConfig(path);
  ASSERT_TRUE(first) << first.error().format();
  EXPECT_EQ(first->sampling.candidates, 3);
  std::ofstream(path) << "[sampling]\ncandidates = 5\n";
  ::dice::Result<::dice::Config> second = services.loadConfig(path);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->sampling.candidates, 3) << "read again";

  // A context of its own reads the file as it is now.
  MLIRContext other(registry);
  other.loadDialect<DiceDialect>();
  ::dice::Result<::dice::Config> fresh =
      getDiceServices(&other).loadConfig(path);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->sampling.candidates, 5);
  std::remove(path.c_str());
}

// The passes of a run share one connection to the kernel database: the
// context's services open it once.
TEST(DiceServices, ADriversContextOpensTheKernelStoreOnce) {
  std::string path =
      ::testing::TempDir() + "once" + std::to_string(::getpid()) + ".db";
  DialectRegistry registry = driverRegistry();
  MLIRContext context(registry);
  context.loadDialect<DiceDialect>();
  const DiceServices &services = getDiceServices(&context);
  auto first = services.kernelStore(path);
  ASSERT_TRUE(first) << first.error().format();
  auto second = services.kernelStore(path);
  ASSERT_TRUE(second);
  EXPECT_EQ(first->get(), second->get());
  // Without a driver's services, each call opens its own.
  MLIRContext plain;
  auto own = getDiceServices(&plain).kernelStore(path);
  auto another = getDiceServices(&plain).kernelStore(path);
  ASSERT_TRUE(own && another);
  EXPECT_NE(own->get(), another->get());
  // A file that is not a database is an error naming it, not a store.
  std::string bad =
      ::testing::TempDir() + "not-a-db" + std::to_string(::getpid());
  std::ofstream(bad) << "not SQLite";
  auto refused = services.kernelStore(bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().describe().find(bad), std::string::npos)
      << refused.error().describe();
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

// The standard services, shared by every context without a driver's for
// the life of the process, keep nothing: each call reads the file.
TEST(DiceServices, TheSharedStandardServicesKeepNoConfiguration) {
  std::string path = writeConfig("shared.toml", "[sampling]\ncandidates = 2\n");
  MLIRContext context;
  const DiceServices &services = getDiceServices(&context);
  ::dice::Result<::dice::Config> first = services.loadConfig(path);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->sampling.candidates, 2);
  std::ofstream(path) << "[sampling]\ncandidates = 7\n";
  ::dice::Result<::dice::Config> second = services.loadConfig(path);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->sampling.candidates, 7);
  // A bad file is an error naming it, each time.
  std::ofstream(path) << "[sampling]\ncandidates = 0\n";
  ::dice::Result<::dice::Config> bad = services.loadConfig(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().file, path);
  std::remove(path.c_str());
}

} // namespace
