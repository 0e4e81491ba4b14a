//===- OutputComparisonTest.cpp - results against the reference -----------===//
//
// The verifier's comparison of a candidate's results with the reference's,
// on the CPU: tolerances that follow the reference's scale and its own
// rounding (float64 runs), the normalised error, KernelBench's allclose,
// and the change test behind the input-sensitivity check. The expected
// verdicts come from the arithmetic of each case, not from the code: zeros
// against results near 1e-6 are wrong at any scale-aware tolerance; a sum
// rounded in another order is right.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Verifier/Worker/CheckSteps.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace dice;
using namespace dice::dynamic_check;

namespace {

DynamicCheckRequest scaledRequest() { return DynamicCheckRequest(); }

DynamicCheckRequest kernelbenchRequest() {
  DynamicCheckRequest request;
  request.comparison = Comparison::KernelBench;
  return request;
}

/// Compares `got` with `want`, whose float64 value is `precise`.
Difference compare(const at::Tensor &got, const at::Tensor &want,
                   const at::Tensor &precise,
                   const DynamicCheckRequest &request = scaledRequest(),
                   Distribution distribution = Distribution::Normal) {
  return compareTensors(got, want,
                        trialTolerance(want, &precise, distribution, request),
                        "result 0");
}

at::Tensor normal(std::vector<int64_t> shape, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  return at::normal(0, 1, shape, generator);
}

TEST(OutputComparison, ZerosForSmallResultsAreWrong) {
  // A task whose results are near 1e-6: atol 1e-4 alone accepted zeros.
  at::Tensor x = normal({256, 64}, 1);
  at::Tensor want = x * 1e-6;
  at::Tensor precise = x.to(at::kDouble) * 1e-6;
  at::Tensor zeros = at::zeros_like(want);
  EXPECT_FALSE(compare(zeros, want, precise).problem.empty());
  // Without a float64 reference the tolerance stays fixed and cannot tell.
  Tolerance fixed =
      trialTolerance(want, nullptr, Distribution::Normal, scaledRequest());
  EXPECT_TRUE(compareTensors(zeros, want, fixed, "result 0").problem.empty());
  // The same results computed right pass at that scale.
  at::Tensor right = (x.to(at::kDouble) * 1e-6).to(at::kFloat);
  EXPECT_TRUE(compare(right, want, precise).problem.empty());
}

TEST(OutputComparison, AnotherSummationOrderIsRight) {
  at::Tensor x = normal({64, 4096}, 2);
  at::Tensor want = x.sum(1);
  at::Tensor precise = x.to(at::kDouble).sum(1);
  // Pairs first, then the rest: another order, another rounding.
  at::Tensor other = x.reshape({64, 2048, 2}).sum(2).flip(1).cumsum(1).select(1, 2047);
  ASSERT_FALSE(at::equal(other, want));
  Difference d = compare(other, want, precise);
  EXPECT_TRUE(d.problem.empty()) << d.problem;
  EXPECT_LT(d.normErr, 1e-5);
}

TEST(OutputComparison, TheReferencesOwnRoundingIsAllowed) {
  // x - mean(x), summed: zero but for rounding. The reference's rounding
  // and a kernel's differ, and neither is more right.
  at::Tensor x = normal({32, 1024}, 3) + 100;
  at::Tensor centred = x - x.mean(1, true);
  at::Tensor want = centred.sum(1);
  at::Tensor precise =
      (x.to(at::kDouble) - x.to(at::kDouble).mean(1, true)).sum(1);
  at::Tensor kernel = (x.to(at::kDouble) - x.to(at::kDouble).mean(1, true))
                          .to(at::kFloat)
                          .sum(1);
  ASSERT_GT((want - kernel).abs().max().item<double>(), 1e-7);
  Difference d = compare(kernel, want, precise);
  EXPECT_TRUE(d.problem.empty()) << d.problem;
  EXPECT_FALSE(compare(kernel, want, want.to(at::kDouble)).problem.empty());
}

TEST(OutputComparison, BFloat16RoundedOnceMatchesAChainRoundedAtEachStep) {
  // A kernel computes a chain in float and rounds once; the reference
  // rounds to bfloat16 after every op. Its float64 run is the exact chain.
  at::Tensor x = (normal({512, 256}, 4) + 1).to(at::kBFloat16);
  at::Tensor want = ((x * x) * 0.3 + x).exp().sqrt();
  at::Tensor exact = ((x.to(at::kDouble) * x.to(at::kDouble)) * 0.3 +
                      x.to(at::kDouble))
                         .exp()
                         .sqrt();
  at::Tensor kernel = exact.to(at::kFloat).to(at::kBFloat16);
  ASSERT_FALSE(at::equal(kernel, want));
  Difference d = compare(kernel, want, exact);
  EXPECT_TRUE(d.problem.empty()) << d.problem;
  // Held to the stepwise reference as if it were exact, it fails.
  EXPECT_FALSE(compare(kernel, want, want.to(at::kDouble)).problem.empty());
}

TEST(OutputComparison, AnErrorEverywhereUnderTheElementLimitFailsTheNorm) {
  // Every element 90% of the way to its limit: each passes, the whole
  // result is off by about 1.8e-4 of its norm, above rtol 1e-4.
  at::Tensor want = at::ones({1000});
  at::Tensor precise = want.to(at::kDouble);
  DynamicCheckRequest request = scaledRequest();
  Tolerance tol = trialTolerance(want, &precise, Distribution::Normal, request);
  at::Tensor got = want + 0.9 * (tol.atol + tol.rtol);
  Difference d = compareTensors(got, want, tol, "result 0");
  EXPECT_NE(d.problem.find("of the reference's norm"), std::string::npos)
      << d.problem;
  EXPECT_NEAR(d.normErr, 0.9 * (tol.atol + tol.rtol), 1e-6);
}

TEST(OutputComparison, HeavyTailedTrialsScaleWithTheLargestMagnitude) {
  at::Tensor want = at::tensor({100.f, 0.5f, -3.f});
  at::Tensor precise = want.to(at::kDouble);
  Tolerance heavy = trialTolerance(want, &precise, Distribution::HeavyTailed,
                                   scaledRequest());
  EXPECT_DOUBLE_EQ(heavy.atol, 1e-4 * 100);
  Tolerance normal =
      trialTolerance(want, &precise, Distribution::Normal, scaledRequest());
  double rms = std::sqrt((100.0 * 100 + 0.25 + 9) / 3);
  EXPECT_NEAR(normal.atol, 1e-4 * rms, 1e-12);
}

TEST(OutputComparison, KernelBenchIsPlainAllclose) {
  DynamicCheckRequest request = kernelbenchRequest();
  at::Tensor x = normal({128}, 5);
  at::Tensor want = x * 1e-6;
  at::Tensor precise = want.to(at::kDouble);
  Tolerance tol = trialTolerance(want, &precise, Distribution::Normal, request);
  EXPECT_TRUE(tol.allclose);
  EXPECT_DOUBLE_EQ(tol.atol, 1e-2);
  EXPECT_DOUBLE_EQ(tol.rtol, 1e-2);
  // KernelBench's own hole: zeros pass for small results.
  EXPECT_TRUE(compareTensors(at::zeros_like(want), want, tol, "r").problem.empty());
  // NaN never matches, not even NaN.
  at::Tensor withNan = want.clone();
  withNan[3] = NAN;
  EXPECT_FALSE(compareTensors(withNan, withNan, tol, "r").problem.empty());
  // Beyond atol + rtol * |want|.
  at::Tensor off = want.clone();
  off[0] = want[0].item<float>() + 0.03f;
  EXPECT_FALSE(compareTensors(off, want, tol, "r").problem.empty());
}

TEST(OutputComparison, IntegersStayExact) {
  at::Tensor want = at::arange(10, at::kLong);
  Tolerance tol = trialTolerance(want, nullptr, Distribution::Normal, scaledRequest());
  EXPECT_EQ(tol.atol, 0);
  EXPECT_EQ(tol.normTol, 0);
  at::Tensor got = want.clone();
  got[9] = 10;
  EXPECT_FALSE(compareTensors(got, want, tol, "r").problem.empty());
}

TEST(OutputComparison, ReferenceChangedIgnoresRoundingOnly) {
  at::Tensor a = normal({4096}, 6);
  EXPECT_FALSE(referenceChanged(a, a.clone(), at::kFloat));
  // One unit in the last place in a few elements: rounding, not a change.
  at::Tensor nudged = a.clone();
  nudged.slice(0, 0, 4) = at::nextafter(nudged.slice(0, 0, 4),
                                        at::full({4}, INFINITY));
  EXPECT_FALSE(referenceChanged(a, nudged, at::kFloat));
  // A bias-dominated result moving by 1e-5: a change.
  at::Tensor biased = 1 + 1e-5 * a;
  at::Tensor other = 1 + 1e-5 * normal({4096}, 7);
  EXPECT_TRUE(referenceChanged(biased, other, at::kFloat));
  EXPECT_TRUE(referenceChanged(at::arange(4), at::arange(4) * 2, at::kLong));
  EXPECT_FALSE(referenceChanged(at::arange(4), at::arange(4), at::kLong));
}

TEST(OutputComparison, AResultConstantByAlgebraDoesNotChangeInFloat64) {
  // ((x + 1e6) - 1e6) - x + 1 is 1 whatever x. In float32 the reference
  // rounds x + 1e6 to a multiple of 1/16, so its result moves from trial to
  // trial; run in float64 it stays within float32's rounding. A kernel
  // that returns ones is right, and the check, which reads the float64
  // runs where it has them, must not call it insensitive.
  auto constant = [](const at::Tensor &x) { return ((x + 1e6) - 1e6) - x + 1; };
  at::Tensor x = normal({4096}, 8), y = normal({4096}, 9);
  EXPECT_TRUE(referenceChanged(constant(x), constant(y), at::kFloat));
  EXPECT_FALSE(referenceChanged(constant(x.to(at::kDouble)),
                                constant(y.to(at::kDouble)), at::kFloat));
}

TEST(OutputComparison, Float64ProgramWidensOnlyFloatingTypes) {
  ReferenceProgram program;
  program.inputs = {TensorType{{4}, DType::Float16}, TensorType{{4}, DType::Int64}};
  RefOp op;
  op.type = TensorType{{4}, DType::BFloat16};
  program.ops.push_back(op);
  RefOp count;
  count.type = TensorType{{}, DType::Int32};
  program.ops.push_back(count);
  ReferenceProgram wide = inFloat64(program);
  EXPECT_EQ(wide.inputs[0].dtype, DType::Float64);
  EXPECT_EQ(wide.inputs[1].dtype, DType::Int64);
  EXPECT_EQ(wide.ops[0].type.dtype, DType::Float64);
  EXPECT_EQ(wide.ops[1].type.dtype, DType::Int32);
  std::vector<at::Tensor> inputs = inFloat64(
      {at::ones({2}, at::kHalf), at::ones({2}, at::kLong)});
  EXPECT_EQ(inputs[0].scalar_type(), at::kDouble);
  EXPECT_EQ(inputs[1].scalar_type(), at::kLong);
}

} // namespace
