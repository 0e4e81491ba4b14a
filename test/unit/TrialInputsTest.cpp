//===- TrialInputsTest.cpp - the seeded inputs of the worker's trials -----===//
//
// The trials' inputs come from a counter-based generator computed where
// the inputs live. What a trial needs of them: the same values for the
// same seed and trial, other values for another trial, input or seed, the
// documented distributions (moments and ranges, checked against the
// distributions' own arithmetic), and the same values for a tensor whatever
// else the program takes after it.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Verifier/Worker/CheckSteps.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace dice;
using namespace dice::dynamic_check;

namespace {

const c10::Device kCpu(c10::kCPU);

ReferenceProgram programOf(std::vector<TensorType> inputs) {
  ReferenceProgram program;
  program.inputs = std::move(inputs);
  return program;
}

at::Tensor inputOf(DType dtype, Distribution distribution, uint64_t seed,
                   std::vector<int64_t> shape = {256, 1024}) {
  return makeInputs(programOf({TensorType{std::move(shape), dtype}}),
                    distribution, seed, kCpu)[0];
}

TEST(TrialInputs, SameSeedSameValuesOtherSeedOtherValues) {
  at::Tensor a = inputOf(DType::Float32, Distribution::Normal, 7);
  at::Tensor b = inputOf(DType::Float32, Distribution::Normal, 7);
  at::Tensor c = inputOf(DType::Float32, Distribution::Normal, 8);
  EXPECT_TRUE(at::equal(a, b));
  // Independent streams agree on about none of 262144 values.
  EXPECT_LT(at::eq(a, c).sum().item<int64_t>(), 10);
  // Trials draw from their own seeds.
  EXPECT_NE(seedOfTrial(0, 0), seedOfTrial(0, 1));
}

TEST(TrialInputs, InputsOfOneTrialAreIndependent) {
  std::vector<at::Tensor> inputs = makeInputs(
      programOf({TensorType{{512, 512}, DType::Float32},
                 TensorType{{512, 512}, DType::Float32}}),
      Distribution::Normal, 3, kCpu);
  EXPECT_LT(at::eq(inputs[0], inputs[1]).sum().item<int64_t>(), 10);
  double correlation = (inputs[0] * inputs[1]).mean().item<double>();
  EXPECT_LT(std::abs(correlation), 0.01); // sd of the mean is 1/512
  // The first input does not depend on what follows it.
  at::Tensor alone = makeInputs(programOf({TensorType{{512, 512}, DType::Float32}}),
                                Distribution::Normal, 3, kCpu)[0];
  EXPECT_TRUE(at::equal(alone, inputs[0]));
}

TEST(TrialInputs, NormalHasTheMomentsOfNormal) {
  at::Tensor x = inputOf(DType::Float32, Distribution::Normal, 1).to(at::kDouble);
  int64_t n = x.numel();
  // Standard errors for n = 262144: mean 0.002, variance 0.003.
  EXPECT_NEAR(x.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(x.var().item<double>(), 1.0, 0.015);
  // P(|z| > 1.96) = 0.05 and P(|z| > 3) = 0.0027.
  EXPECT_NEAR(at::gt(x.abs(), 1.96).sum().item<double>() / n, 0.05, 0.003);
  EXPECT_NEAR(at::gt(x.abs(), 3.0).sum().item<double>() / n, 0.0027, 0.0006);
  // Adjacent elements are uncorrelated.
  at::Tensor flat = x.reshape({-1});
  double lag1 = (flat.slice(0, 1) * flat.slice(0, 0, n - 1)).mean().item<double>();
  EXPECT_LT(std::abs(lag1), 0.01);
}

TEST(TrialInputs, UniformDistributionsKeepTheirRanges) {
  at::Tensor u = inputOf(DType::Float32, Distribution::Uniform, 2).to(at::kDouble);
  EXPECT_GE(u.min().item<double>(), -1.0);
  EXPECT_LE(u.max().item<double>(), 1.0);
  EXPECT_NEAR(u.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(u.var().item<double>(), 1.0 / 3.0, 0.01); // (b - a)^2 / 12
  at::Tensor away = inputOf(DType::Float32, Distribution::AwayFromZero, 2).to(at::kDouble);
  EXPECT_GE(away.min().item<double>(), 1.0);
  EXPECT_LE(away.max().item<double>(), 2.0);
  EXPECT_NEAR(away.mean().item<double>(), 1.5, 0.01);
}

TEST(TrialInputs, HeavyTailedIsClippedAndHasTails) {
  at::Tensor h = inputOf(DType::Float32, Distribution::HeavyTailed, 4).to(at::kDouble);
  EXPECT_LE(h.abs().max().item<double>(), 100.0);
  // normal / sqrt(u) with u >= 0.01 exceeds 3 far more often than a normal.
  EXPECT_GT(at::gt(h.abs(), 3.0).sum().item<double>() / h.numel(), 0.02);
  EXPECT_NEAR(h.mean().item<double>(), 0.0, 0.1);
}

TEST(TrialInputs, IntegersAndBoolsCoverTheirRanges) {
  at::Tensor i = inputOf(DType::Int32, Distribution::Normal, 5);
  EXPECT_EQ(i.scalar_type(), at::kInt);
  EXPECT_EQ(i.min().item<int64_t>(), -64);
  EXPECT_EQ(i.max().item<int64_t>(), 63);
  at::Tensor positive = inputOf(DType::Int64, Distribution::AwayFromZero, 5);
  EXPECT_EQ(positive.min().item<int64_t>(), 1);
  EXPECT_EQ(positive.max().item<int64_t>(), 63);
  at::Tensor bytes = inputOf(DType::UInt8, Distribution::Normal, 5);
  EXPECT_EQ(bytes.min().item<int64_t>(), 0);
  EXPECT_EQ(bytes.max().item<int64_t>(), 63);
  at::Tensor bits = inputOf(DType::Bool, Distribution::Normal, 5);
  EXPECT_EQ(bits.scalar_type(), at::kBool);
  EXPECT_NEAR(bits.to(at::kDouble).mean().item<double>(), 0.5, 0.01);
  // Every value of [-64, 64) is drawn about equally often.
  at::Tensor counts = at::bincount((i.reshape({-1}) + 64).to(at::kLong));
  EXPECT_EQ(counts.numel(), 128);
  double expected = double(i.numel()) / 128;
  EXPECT_LT((counts.to(at::kDouble) - expected).abs().max().item<double>(),
            6 * std::sqrt(expected));
}

TEST(TrialInputs, HalfPrecisionAndScalarsAndEmptyShapes) {
  at::Tensor h = inputOf(DType::Float16, Distribution::Normal, 6);
  EXPECT_EQ(h.scalar_type(), at::kHalf);
  // The same stream, rounded to half once (within half's precision).
  at::Tensor single = inputOf(DType::Float32, Distribution::Normal, 6);
  EXPECT_TRUE(at::allclose(h.to(at::kFloat), single, /*rtol=*/1e-3, /*atol=*/1e-7));
  at::Tensor scalar = inputOf(DType::Float32, Distribution::Uniform, 6, {});
  EXPECT_EQ(scalar.dim(), 0);
  at::Tensor empty = inputOf(DType::Float32, Distribution::Normal, 6, {0, 8});
  EXPECT_EQ(empty.numel(), 0);
}

RefOp opOf(RefFn fn, std::vector<int> args, TensorType type,
          std::map<std::string, std::vector<int64_t>> ints = {}) {
  RefOp op;
  op.fn = std::move(fn);
  op.args = std::move(args);
  op.type = std::move(type);
  op.ints = std::move(ints);
  return op;
}

// table[idx.reshape(4, 5, 1), arange(8)] (F.embedding of a 16-row table),
// and a second table of 6 rows indexed by a slice of the same indices
// through a where, as torch-mlir wraps negative indices.
ReferenceProgram embeddingProgram() {
  ReferenceProgram program = programOf({TensorType{{4, 5}, DType::Int64},
                                        TensorType{{16, 8}, DType::Float32},
                                        TensorType{{6, 8}, DType::Float32},
                                        TensorType{{4, 5}, DType::Int64}});
  int lifted = program.add(opOf(RefFn::Reshape, {0}, {{4, 5, 1}, DType::Int64}));
  int column = program.add(opOf(RefFn::Arange, {}, {{1, 1, 8}, DType::Int64}, {{"dim", {2}}}));
  program.outputs.push_back(
      program.add(opOf(RefFn::Index, {1, lifted, column}, {{4, 5, 8}, DType::Float32})));
  int zero = program.add(opOf(RefFn::Full, {}, {{4, 5}, DType::Bool}));
  int wrapped = program.add(opOf(RefFn::Where, {zero, 3, 0}, {{4, 5}, DType::Int64}));
  int rows = program.add(opOf(RefFn::Reshape, {wrapped}, {{4, 5, 1}, DType::Int64}));
  program.outputs.push_back(
      program.add(opOf(RefFn::Index, {2, rows, column}, {{4, 5, 8}, DType::Float32})));
  return program;
}

TEST(TrialInputs, IndicesStayInTheRangeTheyIndex) {
  ReferenceProgram program = embeddingProgram();
  ASSERT_EQ(program.validate(), "");
  // Input 0 indexes both tables (the smaller bounds it), input 3 the second;
  // the tables index nothing.
  EXPECT_EQ(program.indexBounds(), (std::vector<int64_t>{6, 0, 0, 6}));
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<at::Tensor> inputs = makeInputs(program, distributionOfTrial(trial),
                                                seedOfTrial(5, trial), kCpu);
    for (int i : {0, 3}) {
      EXPECT_GE(inputs[i].min().item<int64_t>(), 0) << trial;
      EXPECT_LT(inputs[i].max().item<int64_t>(), 6) << trial;
    }
  }
  // Every row is drawn, not only some: the whole range is used.
  at::Tensor many = makeInputs(programOf({TensorType{{4096}, DType::Int64},
                                          TensorType{{6, 8}, DType::Float32}}),
                               Distribution::Normal, 9, kCpu)[0];
  EXPECT_EQ(many.min().item<int64_t>(), -64); // no index: the usual range
  ReferenceProgram gather = programOf({TensorType{{4096}, DType::Int64},
                                       TensorType{{6, 8}, DType::Float32}});
  int lifted = gather.add(opOf(RefFn::Reshape, {0}, {{4096, 1}, DType::Int64}));
  int column = gather.add(opOf(RefFn::Arange, {}, {{1, 8}, DType::Int64}, {{"dim", {1}}}));
  gather.outputs.push_back(
      gather.add(opOf(RefFn::Index, {1, lifted, column}, {{4096, 8}, DType::Float32})));
  at::Tensor rows = makeInputs(gather, Distribution::Normal, 9, kCpu)[0];
  EXPECT_EQ(at::bincount(rows).numel(), 6);
  EXPECT_GT(at::bincount(rows).min().item<int64_t>(), 500); // 4096 / 6 each, about
}

} // namespace
