//===- PipelineOptionsTest.cpp - dice-pipeline's typed options ------------===//
//
// DicePipelineOptions holds each option of the pipeline's passes once
// (Passes.h): every option a pass declares in Passes.td must be one of its
// options, with the pass's default, and a value given to the pipeline must
// reach every pass that has the option. The passes' own printed pipelines
// are the oracle: they are what --dump-pass-pipeline shows a user.
//
//===----------------------------------------------------------------------===//

#include "dice/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace {

using namespace mlir;
using namespace mlir::dice;

/// `{key=value ...}` of each dice pass in a printed pipeline, in order.
std::vector<std::map<std::string, std::string>> passesIn(StringRef printed) {
  std::vector<std::map<std::string, std::string>> passes;
  for (size_t at = printed.find("dice-"); at != StringRef::npos;
       at = printed.find("dice-", at + 1)) {
    std::map<std::string, std::string> values;
    size_t open = printed.find_first_of("{,)", at);
    if (open != StringRef::npos && printed[open] == '{') {
      size_t close = open;
      for (int depth = 0; close < printed.size(); ++close)
        if (printed[close] == '{')
          ++depth;
        else if (printed[close] == '}' && --depth == 0)
          break;
      for (StringRef item : splitPassOptions(printed.slice(open + 1, close))) {
        auto [key, value] = item.split('=');
        values[key.str()] = value.str();
      }
      at = close;
    }
    passes.push_back(std::move(values));
  }
  return passes;
}

std::map<std::string, std::string> printedOptions(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  return passesIn(text).at(0);
}

/// The pipeline's passes, in order, built from `options`.
std::vector<std::map<std::string, std::string>> built(const DicePipelineOptions &options) {
  MLIRContext context;
  PassManager pm(&context);
  buildDicePipeline(pm, options);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return passesIn(text);
}

TEST(PipelineOptions, EveryPassOptionIsAPipelineOptionWithItsDefault) {
  DicePipelineOptions options;
  std::vector<std::string> names = options.names();
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(createDiceOutline());
  passes.push_back(createDiceScaffold());
  passes.push_back(createDiceInfill());
  passes.push_back(createDiceVerify());
  passes.push_back(createDiceResolve());
  passes.push_back(createDiceLower());
  std::vector<std::map<std::string, std::string>> fromPipeline = built(options);
  ASSERT_EQ(fromPipeline.size(), passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    std::map<std::string, std::string> own = printedOptions(*passes[i]);
    for (const auto &[key, value] : own)
      EXPECT_TRUE(llvm::is_contained(names, key))
          << passes[i]->getArgument().str() << " has '" << key << "'";
    // Built from default pipeline options, each pass is as it is by default.
    EXPECT_EQ(fromPipeline[i], own) << passes[i]->getArgument().str();
  }
}

TEST(PipelineOptions, AValueReachesEveryPassThatHasTheOption) {
  DicePipelineOptions options;
  ASSERT_TRUE(succeeded(options.parseFromString(
      "db=k.db config=c.toml artifacts=out jobs=3 min-speedup=1.5 granularity=op")));
  std::vector<std::map<std::string, std::string>> passes = built(options);
  int withDb = 0, withConfig = 0, withArtifacts = 0;
  for (const auto &pass : passes) {
    if (pass.count("db") && ++withDb)
      EXPECT_EQ(pass.at("db"), "k.db");
    if (pass.count("config") && ++withConfig)
      EXPECT_EQ(pass.at("config"), "c.toml");
    if (pass.count("artifacts") && ++withArtifacts)
      EXPECT_EQ(pass.at("artifacts"), "out");
  }
  EXPECT_EQ(withDb, 3);        // infill, verify, resolve
  EXPECT_EQ(withConfig, 5);    // all but outline
  EXPECT_EQ(withArtifacts, 3); // verify, resolve, lower
  EXPECT_EQ(passes[0].at("granularity"), "op");
  EXPECT_EQ(passes[3].at("jobs"), "3");
  EXPECT_DOUBLE_EQ(std::stod(passes[4].at("min-speedup")), 1.5);
}

} // namespace
