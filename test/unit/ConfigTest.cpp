//===- ConfigTest.cpp - dice.toml parsing ---------------------------------===//

#include "dice/Config/Config.h"
#include "dice/Config/TomlDocument.h"

#include <gtest/gtest.h>

using namespace dice;

namespace {

Error expectError(std::string_view text) {
  Result<Config> result = parseConfig(text, "dice.toml");
  EXPECT_FALSE(result) << "accepted:\n" << text;
  return result ? Error() : result.error();
}

TEST(Config, EmptyFileGivesDefaults) {
  Result<Config> result = parseConfig("", "dice.toml");
  ASSERT_TRUE(result) << result.error().format();
  // The DICE evaluation setting (block 4, 4 steps, static, top_k 1).
  EXPECT_EQ(result->sampling.blockLength, 4);
  EXPECT_EQ(result->sampling.denoisingSteps, 4);
  EXPECT_EQ(result->sampling.remasking, Remasking::Static);
  EXPECT_EQ(result->sampling.topK, 1);
  EXPECT_EQ(result->verifier.trials, 5);
  EXPECT_DOUBLE_EQ(result->verifier.atol, 1e-4);
  EXPECT_DOUBLE_EQ(result->verifier.halfAtol, 1e-2);
  EXPECT_EQ(result->verifier.baseline, Baseline::Eager);
  EXPECT_EQ(result->verifier.comparison, Comparison::Scaled);
  EXPECT_DOUBLE_EQ(result->verifier.kernelbenchTolerance, 1e-2);
  EXPECT_DOUBLE_EQ(result->verifier.timingPrecision, 0.01);
  EXPECT_EQ(result->verifier.buildGroup, 8);
  EXPECT_EQ(result->databasePath, ".dice/kernels.db");
  EXPECT_EQ(result->modelDevice, "auto");
  EXPECT_EQ(result->modelDType, "auto");
}

TEST(Config, EveryKeyIsRead) {
  Result<Config> result = loadConfigFile(DICE_TEST_INPUTS "/full.toml");
  ASSERT_TRUE(result) << result.error().format();
  const Config &c = *result;
  EXPECT_EQ(c.modelPath, "/models/dice-8b");
  EXPECT_EQ(c.modelDevice, "cpu");
  EXPECT_EQ(c.modelDType, "float16");
  EXPECT_EQ(c.sampling.blockLength, 8);
  EXPECT_EQ(c.sampling.denoisingSteps, 2);
  EXPECT_EQ(c.sampling.remasking, Remasking::Dynamic);
  EXPECT_DOUBLE_EQ(c.sampling.threshold, 0.95);
  EXPECT_DOUBLE_EQ(c.sampling.temperature, 0.7);
  EXPECT_EQ(c.sampling.topK, 0);
  EXPECT_DOUBLE_EQ(c.sampling.topP, 0.9);
  EXPECT_EQ(c.sampling.maxTokens, 2048);
  EXPECT_EQ(c.sampling.candidates, 16);
  EXPECT_EQ(c.verifier.trials, 3);
  EXPECT_DOUBLE_EQ(c.verifier.atol, 1e-5);
  EXPECT_DOUBLE_EQ(c.verifier.rtol, 2e-5);
  EXPECT_DOUBLE_EQ(c.verifier.halfAtol, 5e-3);
  EXPECT_DOUBLE_EQ(c.verifier.halfRtol, 6e-3);
  EXPECT_EQ(c.verifier.comparison, Comparison::KernelBench);
  EXPECT_DOUBLE_EQ(c.verifier.kernelbenchTolerance, 2e-2);
  EXPECT_EQ(c.verifier.timingRuns, 50);
  EXPECT_DOUBLE_EQ(c.verifier.timingPrecision, 0.05);
  EXPECT_DOUBLE_EQ(c.verifier.minSpeedup, 1.1);
  EXPECT_EQ(c.verifier.baseline, Baseline::Eager);
  EXPECT_DOUBLE_EQ(c.verifier.timeoutSeconds, 30);
  EXPECT_EQ(c.verifier.workers, 4);
  EXPECT_EQ(c.verifier.buildGroup, 3);
  EXPECT_EQ(c.databasePath, "cache/kernels.db");
  EXPECT_EQ(c.artifactDir, "cache/artifacts");
}

TEST(Config, IntegerAcceptedWhereFloatExpected) {
  Result<Config> result =
      parseConfig("[sampling]\ntemperature = 1\n", "dice.toml");
  ASSERT_TRUE(result) << result.error().format();
  EXPECT_DOUBLE_EQ(result->sampling.temperature, 1.0);
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
  Error e = expectError("[sampling]\ntop_k = 2\ntopk = 3\n");
  EXPECT_EQ(e.file, "dice.toml");
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.column, 1u);
  EXPECT_EQ(e.key, "sampling.topk");
  EXPECT_NE(e.message.find("unknown key"), std::string::npos);
  EXPECT_NE(e.message.find("top_k"), std::string::npos) << "lists known keys";
  EXPECT_EQ(e.format().rfind("dice.toml:3:1: error: sampling.topk: ", 0), 0u)
      << e.format();
}

TEST(Config, UnknownSection) {
  Error e = expectError("[model]\npath = \"x\"\n\n[sampler]\ntop_k = 1\n");
  EXPECT_EQ(e.line, 4u);
  EXPECT_EQ(e.key, "sampler");
  EXPECT_NE(e.message.find("unknown section"), std::string::npos);
}

TEST(Config, SectionMustBeATable) {
  Error e = expectError("sampling = 3\n");
  EXPECT_EQ(e.key, "sampling");
  EXPECT_NE(e.message.find("must be a table"), std::string::npos);
}

TEST(Config, WrongTypes) {
  Error e = expectError("[sampling]\ntop_k = 1.5\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.key, "sampling.top_k");
  EXPECT_EQ(e.message, "must be an integer, got a float");

  e = expectError("[verifier]\n\natol = \"small\"\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.message, "must be a number, got a string");

  e = expectError("[model]\npath = 3\n");
  EXPECT_EQ(e.message, "must be a string, got an integer");
}

TEST(Config, OutOfRange) {
  Error e = expectError("[sampling]\ntop_p = 1.5\n");
  EXPECT_EQ(e.key, "sampling.top_p");
  EXPECT_EQ(e.message, "must be in (0, 1], got 1.5");

  e = expectError("[verifier]\ntrials = 0\n");
  EXPECT_EQ(e.message, "must be in [1, 1000], got 0");

  e = expectError("[verifier]\ntiming_precision = 2\n");
  EXPECT_EQ(e.key, "verifier.timing_precision");
  EXPECT_EQ(e.message, "must be in [0, 1], got 2");

  e = expectError("[verifier]\nmin_speedup = -1\n");
  EXPECT_EQ(e.message, "must be in (0, inf), got -1");
}

TEST(Config, BadChoice) {
  Error e = expectError("[sampling]\nremasking = \"random\"\n");
  EXPECT_EQ(e.key, "sampling.remasking");
  EXPECT_EQ(e.message,
            "must be one of \"static\", \"dynamic\", \"sequential\", got \"random\"");
  e = expectError("[model]\ndevice = \"tpu\"\n");
  EXPECT_EQ(e.key, "model.device");
  EXPECT_EQ(e.message, "must be one of \"auto\", \"cuda\", \"cpu\", got \"tpu\"");
  e = expectError("[model]\ndtype = \"fp8\"\n");
  EXPECT_EQ(e.key, "model.dtype");
  EXPECT_EQ(e.message, "must be one of \"auto\", \"bfloat16\", \"float16\", \"float32\", "
                       "got \"fp8\"");
  e = expectError("[verifier]\ncomparison = \"loose\"\n");
  EXPECT_EQ(e.key, "verifier.comparison");
  EXPECT_EQ(e.message, "must be one of \"scaled\", \"kernelbench\", got \"loose\"");
  e = expectError("[verifier]\nkernelbench_tolerance = 0\n");
  EXPECT_EQ(e.key, "verifier.kernelbench_tolerance");
}

TEST(Config, StepsCannotExceedBlock) {
  Error e = expectError("[sampling]\nblock_length = 4\ndenoising_steps = 8\n");
  EXPECT_EQ(e.key, "sampling.denoising_steps");
  EXPECT_EQ(e.line, 3u);
}

TEST(Config, AnAdapterAndItsBaseAreNamedTogether) {
  Result<Config> c = parseConfig(
      "model = { base = \"qwen-base\", adapter = \"runs/step-000100/adapter\" }\n",
      "dice.toml");
  ASSERT_TRUE(c) << c.error().format();
  EXPECT_EQ(c->modelBase, "qwen-base");
  EXPECT_EQ(c->modelAdapter, "runs/step-000100/adapter");
  EXPECT_TRUE(c->modelPath.empty());

  Error e = expectError("[model]\ndevice = \"cpu\"\nadapter = \"a\"\n");
  EXPECT_EQ(e.key, "model.adapter");
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(e.message.find("model.base"), std::string::npos) << e.message;
  e = expectError("[model]\nbase = \"b\"\n");
  EXPECT_EQ(e.key, "model.base");
  EXPECT_NE(e.message.find("model.adapter"), std::string::npos) << e.message;
  e = expectError("[model]\npath = \"m\"\nbase = \"b\"\nadapter = \"a\"\n");
  EXPECT_EQ(e.key, "model.base");
  EXPECT_EQ(e.line, 3u);
}

TEST(Config, SyntaxErrorHasLine) {
  Error e = expectError("[sampling]\ntop_k = = 3\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_TRUE(e.key.empty());
  EXPECT_FALSE(e.message.empty());
}

// Inputs that toml++ 3.3 meets with undefined behaviour (found by the
// config fuzz target) are located errors, and what TOML allows there still
// reads: non-ASCII text in strings and comments, quoted keys in headers.
TEST(Config, NonAsciiBetweenTokensIsALocatedError) {
  Error e = expectError("[sampling]\ntop_k = 3\n\u03a3cres = 2\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.column, 1u);
  EXPECT_NE(e.message.find("outside ASCII"), std::string::npos) << e.message;
  Error after = expectError("[sampling]\ntop_k = 3 \u00a1\n");
  EXPECT_EQ(after.line, 2u);
  EXPECT_EQ(after.column, 11u);

  Result<Config> allowed = parseConfig(
      "# caf\u00e9 \u03a3\n[database]\npath = \"caf\u00e9/\u03a3.db\" # \u00a1\n"
      "[artifacts]\ndir = '''\n\u00e9'''\n",
      "dice.toml");
  ASSERT_TRUE(allowed) << allowed.error().format();
  EXPECT_EQ(allowed->databasePath, "caf\u00e9/\u03a3.db");
  EXPECT_EQ(allowed->artifactDir, "\u00e9");
}

TEST(Config, TableHeaderWithoutAKeyIsALocatedError) {
  Error e = expectError("[sampling]\ntop_k = 3\n[%u\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.column, 2u);
  EXPECT_NE(e.message.find("table header"), std::string::npos) << e.message;
  EXPECT_EQ(expectError("[ sampling . ]\n").line, 1u);
  EXPECT_EQ(expectError("[sampling\n").line, 1u);
  // Quoted keys and spaces inside a header are TOML.
  Result<Config> ok = parseConfig(
      "[ \"sampling\" ]\ntop_k = 3\n[verifier]\nbaseline = \"eager\"\n", "dice.toml");
  ASSERT_TRUE(ok) << ok.error().format();
  EXPECT_EQ(ok->sampling.topK, 3);
}

TEST(Config, WhatTomlppMeetsWithUndefinedBehaviourIsALocatedError) {
  // '}' where an array expects a value.
  Error brace = expectError("[sampling]\nstop = [\"a\",\n  }]\n");
  EXPECT_EQ(brace.line, 3u);
  EXPECT_EQ(brace.column, 3u);
  EXPECT_NE(brace.message.find("inside an array"), std::string::npos) << brace.message;
  // A quote inside a bare word starts no string: what follows is bare text.
  Error quote = expectError("[sampling]\ntop_k = 22nd\"\u00a1\"\n");
  EXPECT_EQ(quote.line, 2u);
  EXPECT_EQ(quote.column, 13u);
  EXPECT_NE(quote.message.find("does not start a string"), std::string::npos)
      << quote.message;
  // At a key, `"""` is an empty key and a quote, not a multi-line string.
  Error key = expectError("\"\"\"n\n\n\u00a1\"\"\" = 1\n");
  EXPECT_EQ(key.line, 1u);
  // Non-ASCII after a backslash (and the blanks after it) in a multi-line
  // string.
  Error slash = expectError("[database]\npath = \"\"\"a\\\n  \u00a1\"\"\"\n");
  EXPECT_EQ(slash.line, 3u);
  EXPECT_EQ(slash.column, 3u);
  EXPECT_NE(slash.message.find("backslash"), std::string::npos) << slash.message;

  // TOML's own uses of the same characters still read: quotes that start
  // keys and values (in arrays, after line breaks and comments, in inline
  // tables, dotted), '}' closing an inline table in an array, a
  // line-ending backslash before ASCII, escaped backslashes before non-ASCII.
  Result<toml::table> fine = parseTomlDocument(
      "stop = [\n  \"a\",  # c\n  'b\"', [{ \"k\" = 1, l.\"m\" = 2 }],\n]\n"
      "\"quoted key\" = \"\"\"x\\\n  y\u00e9\\\\\u00e9\"\"\"\n",
      "t.toml");
  ASSERT_TRUE(fine) << fine.error().format();
  EXPECT_EQ((*fine)["stop"][1].value<std::string>(), "b\"");
  EXPECT_EQ((*fine)["stop"][2][0]["l"]["m"].value<int64_t>(), 2);
  EXPECT_EQ((*fine)["quoted key"].value<std::string>(), "xy\u00e9\\\u00e9");
}

TEST(Config, BaselineNotMeasuredYetIsAnError) {
  // Accepted and ignored, it would compare against eager while saying
  // otherwise.
  std::string text = "[verifier]\ntrials = 5\nbaseline = \"default-lowering\"\n";
  Result<Config> result = parseConfig(text, "dice.toml");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().key, "verifier.baseline");
  EXPECT_EQ(result.error().line, 3u);
  EXPECT_NE(result.error().message.find("not implemented yet"),
            std::string::npos)
      << result.error().message;
}

TEST(Config, InductorBaselineWithItsTimes) {
  Result<Config> result = parseConfig(
      "[verifier]\nbaseline = \"inductor\"\nbaseline_times = \"t.json\"\n",
      "dice.toml");
  ASSERT_TRUE(result) << result.error().format();
  EXPECT_EQ(result->verifier.baseline, Baseline::Inductor);
  EXPECT_EQ(result->verifier.baselineTimes, "t.json");
  EXPECT_EQ(toString(result->verifier.baseline), "inductor");
  Result<Config> number =
      parseConfig("[verifier]\nbaseline_times = 3\n", "dice.toml");
  ASSERT_FALSE(number);
  EXPECT_EQ(number.error().key, "verifier.baseline_times");
}

TEST(Config, FastestBaselineWithOrWithoutTimes) {
  Result<Config> alone = parseConfig("[verifier]\nbaseline = \"fastest\"\n", "dice.toml");
  ASSERT_TRUE(alone) << alone.error().format();
  EXPECT_EQ(alone->verifier.baseline, Baseline::Fastest);
  EXPECT_EQ(toString(alone->verifier.baseline), "fastest");
  EXPECT_TRUE(alone->verifier.baselineTimes.empty());
  Result<Config> timed = parseConfig(
      "[verifier]\nbaseline = \"fastest\"\nbaseline_times = \"t.json\"\n", "dice.toml");
  ASSERT_TRUE(timed) << timed.error().format();
  EXPECT_EQ(timed->verifier.baselineTimes, "t.json");
}

TEST(Config, MeasuredEagerBaseline) {
  Result<Config> result = parseConfig(
      "[verifier]\nbaseline = \"measured_eager\"\nbaseline_times = \"t.json\"\n",
      "dice.toml");
  ASSERT_TRUE(result) << result.error().format();
  EXPECT_EQ(result->verifier.baseline, Baseline::MeasuredEager);
  EXPECT_EQ(toString(result->verifier.baseline), "measured_eager");
}

TEST(Config, MissingFile) {
  Result<Config> result = loadConfigFile("/nonexistent/dice.toml");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().format(),
            "/nonexistent/dice.toml: error: cannot open configuration file");
}

TEST(Config, OverridesUseTheSameChecks) {
  Config c;
  EXPECT_TRUE(applyConfigOverride(c, "sampling.top_k", "7"));
  EXPECT_EQ(c.sampling.topK, 7);
  EXPECT_TRUE(applyConfigOverride(c, "sampling.remasking", "\"dynamic\""));
  EXPECT_EQ(c.sampling.remasking, Remasking::Dynamic);

  Status e = applyConfigOverride(c, "sampling.top_k", "-1");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().key, "sampling.top_k");
  EXPECT_EQ(e.error().line, 0u) << "lines of the synthetic text mean nothing";
  EXPECT_EQ(c.sampling.topK, 7) << "a rejected override changes nothing";

  e = applyConfigOverride(c, "top_k", "1");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("dotted key"), std::string::npos);
}

} // namespace
