//===- FingerprintTest.cpp - request fingerprints of reference programs ---===//
//
// The fingerprint names a computation: programs that compute the same values
// from the same inputs share it however their ops are listed; any change to
// what is computed (an op, a constant, a shape, a dtype, operand order)
// changes it.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/Fingerprint.h"

#include <gtest/gtest.h>

#include <limits>

namespace dice {
namespace {

TensorType f32(std::vector<int64_t> shape) {
  return TensorType{std::move(shape), DType::Float32};
}

RefOp unary(RefFn fn, int arg, TensorType type) {
  RefOp op;
  op.fn = fn;
  op.args = {arg};
  op.type = std::move(type);
  return op;
}

RefOp binary(RefFn fn, int a, int b, TensorType type) {
  RefOp op = unary(fn, a, std::move(type));
  op.args.push_back(b);
  return op;
}

/// exp(x) + tanh(y) * 2.0, with the exp listed first or last.
ReferenceProgram expPlusTanh(bool expFirst, double scale = 2.0,
                             TensorType type = f32({4, 8})) {
  ReferenceProgram p;
  p.inputs = {type, type};
  RefOp two;
  two.fn = RefFn::Scalar;
  two.value = scale;
  two.type = TensorType{{}, type.dtype};
  int e = -1, t = -1, s = -1;
  if (expFirst)
    e = p.add(unary(RefFn::Exp, 0, type));
  t = p.add(unary(RefFn::Tanh, 1, type));
  s = p.add(two);
  if (!expFirst)
    e = p.add(unary(RefFn::Exp, 0, type));
  int m = p.add(binary(RefFn::Mul, t, s, type));
  p.outputs = {p.add(binary(RefFn::Add, e, m, type))};
  EXPECT_EQ(p.validate(), "");
  return p;
}

TEST(Fingerprint, IsSixteenHexDigits) {
  std::string fp = fingerprintOf(expPlusTanh(true));
  ASSERT_EQ(fp.size(), 16u);
  for (char c : fp)
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << fp;
}

TEST(Fingerprint, IgnoresTheOrderOfIndependentOps) {
  EXPECT_EQ(fingerprintOf(expPlusTanh(true)), fingerprintOf(expPlusTanh(false)));
}

TEST(Fingerprint, IgnoresOpsNoOutputNeeds) {
  ReferenceProgram p = expPlusTanh(true);
  std::string before = fingerprintOf(p);
  p.add(unary(RefFn::Neg, 0, p.inputs[0]));
  EXPECT_EQ(fingerprintOf(p), before);
}

TEST(Fingerprint, ChangesWithWhatIsComputed) {
  std::string base = fingerprintOf(expPlusTanh(true));
  EXPECT_NE(fingerprintOf(expPlusTanh(true, 3.0)), base) << "a constant";
  EXPECT_NE(fingerprintOf(expPlusTanh(true, 2.0000000000000004)), base)
      << "a constant one ulp away";
  EXPECT_NE(fingerprintOf(expPlusTanh(true, 2.0, f32({8, 4}))), base)
      << "a shape";
  EXPECT_NE(fingerprintOf(expPlusTanh(true, 2.0,
                                      TensorType{{4, 8}, DType::Float16})),
            base)
      << "a dtype";

  ReferenceProgram renamed = expPlusTanh(true);
  renamed.ops[0].fn = RefFn::Exp2;
  EXPECT_NE(fingerprintOf(renamed), base) << "an op";

  ReferenceProgram swapped = expPlusTanh(true);
  std::swap(swapped.ops.back().args[0], swapped.ops.back().args[1]);
  EXPECT_NE(fingerprintOf(swapped), base)
      << "operand order (not every op commutes)";

  ReferenceProgram inputsSwapped = expPlusTanh(true);
  inputsSwapped.ops[0].args = {1};
  inputsSwapped.ops[1].args = {0};
  EXPECT_NE(fingerprintOf(inputsSwapped), base) << "which input goes where";
}

TEST(Fingerprint, AttributesCountByNameAndValue) {
  auto summed = [](std::vector<int64_t> dims) {
    ReferenceProgram p;
    p.inputs = {f32({4, 8, 2})};
    RefOp sum = unary(RefFn::Sum, 0, f32({8}));
    sum.ints["dims"] = std::move(dims);
    if (sum.ints["dims"].size() == 1)
      sum.type = f32({4, 2});
    p.outputs = {p.add(sum)};
    return fingerprintOf(p);
  };
  EXPECT_NE(summed({0, 2}), summed({1}));
}

TEST(Fingerprint, NonFiniteConstantsAreValuesLikeAnyOther) {
  double inf = std::numeric_limits<double>::infinity();
  std::string plus = fingerprintOf(expPlusTanh(true, inf));
  EXPECT_NE(plus, fingerprintOf(expPlusTanh(true, -inf)));
  EXPECT_EQ(plus, fingerprintOf(expPlusTanh(false, inf)));
}

} // namespace
} // namespace dice
