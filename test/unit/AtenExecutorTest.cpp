//===- AtenExecutorTest.cpp - the ATen backend of the reference program ---===//
//
// Each vocabulary op against the ATen computation it stands for, written
// out here, and the errors a bad program or bad inputs get.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/AtenExecutor.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

using namespace dice;

namespace {

using Ints = std::map<std::string, std::vector<int64_t>>;

/// Builds a program op by op; value numbers as ReferenceProgram numbers them.
struct Builder {
  ReferenceProgram program;

  int input(std::vector<int64_t> shape, DType dtype = DType::Float32) {
    program.inputs.push_back({std::move(shape), dtype});
    return static_cast<int>(program.inputs.size()) - 1;
  }
  int op(RefFn fn, std::vector<int> args, std::vector<int64_t> shape,
         DType dtype = DType::Float32, Ints ints = {}, double value = 0) {
    return program.add(RefOp{std::move(fn), std::move(args), std::move(ints),
                             value, TensorType{std::move(shape), dtype}});
  }
  /// Runs with the given results as outputs; fails the test on error.
  std::vector<at::Tensor> run(std::vector<int> outputs,
                              const std::vector<at::Tensor> &inputs) {
    program.outputs = std::move(outputs);
    ReferenceRun result = runReferenceProgram(program, inputs);
    EXPECT_TRUE(result.ok()) << result.error;
    return result.outputs;
  }
  std::string error(std::vector<int> outputs,
                    const std::vector<at::Tensor> &inputs) {
    program.outputs = std::move(outputs);
    ReferenceRun result = runReferenceProgram(program, inputs);
    EXPECT_FALSE(result.ok());
    EXPECT_TRUE(result.outputs.empty());
    return result.error;
  }
};

void expectSame(const at::Tensor &got, const at::Tensor &want) {
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.scalar_type(), want.scalar_type());
  if (got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type())
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5, /*equal_nan=*/true))
        << "got\n"
        << got << "\nwant\n"
        << want;
}

at::Tensor positive(std::vector<int64_t> shape) {
  return at::rand(shape) + 0.1;
}

class AtenExecutorTest : public ::testing::Test {
protected:
  void SetUp() override { at::manual_seed(7); }
};

TEST_F(AtenExecutorTest, UnaryOps) {
  std::map<RefFn, std::function<at::Tensor(const at::Tensor &)>> ops = {
      {RefFn::Neg, [](auto &x) { return -x; }},
      {RefFn::Exp, [](auto &x) { return x.exp(); }},
      {RefFn::Exp2, [](auto &x) { return at::pow(2.0, x); }},
      {RefFn::Log, [](auto &x) { return x.log(); }},
      {RefFn::Log1p, [](auto &x) { return (x + 1).log(); }},
      {RefFn::Expm1, [](auto &x) { return x.exp() - 1; }},
      {RefFn::Tanh, [](auto &x) { return x.tanh(); }},
      {RefFn::Sqrt, [](auto &x) { return x.sqrt(); }},
      {RefFn::Rsqrt, [](auto &x) { return 1 / x.sqrt(); }},
      {RefFn::Erf, [](auto &x) { return x.erf(); }},
      {RefFn::Abs, [](auto &x) { return x.abs(); }},
      {RefFn::Sin, [](auto &x) { return x.sin(); }},
      {RefFn::Cos, [](auto &x) { return x.cos(); }},
      {RefFn::Tan, [](auto &x) { return x.sin() / x.cos(); }},
      {RefFn::Floor, [](auto &x) { return x.floor(); }},
      {RefFn::Ceil, [](auto &x) { return x.ceil(); }},
      {RefFn::Round, [](auto &x) { return x.round(); }},
      {RefFn::Trunc, [](auto &x) { return x.trunc(); }},
      {RefFn::Sigmoid, [](auto &x) { return 1 / (1 + (-x).exp()); }},
      {RefFn::Reciprocal, [](auto &x) { return 1 / x; }},
  };
  at::Tensor x = positive({3, 4}) * 3;
  for (const auto &[fn, reference] : ops) {
    SCOPED_TRACE(refFnName(fn));
    Builder b;
    int in = b.input({3, 4});
    auto out = b.run({b.op(fn, {in}, {3, 4})}, {x});
    ASSERT_EQ(out.size(), 1u);
    expectSame(out[0], reference(x));
  }
}

TEST_F(AtenExecutorTest, LogicalAndBitwiseNot) {
  Builder b;
  int p = b.input({5}, DType::Bool), q = b.input({5}, DType::Bool),
      i = b.input({5}, DType::Int64);
  int andV = b.op(RefFn::LogicalAnd, {p, q}, {5}, DType::Bool);
  int orV = b.op(RefFn::LogicalOr, {p, q}, {5}, DType::Bool);
  int notV = b.op(RefFn::LogicalNot, {p}, {5}, DType::Bool);
  int bitV = b.op(RefFn::BitwiseNot, {i}, {5}, DType::Int64);
  at::Tensor x = at::rand({5}) > 0.5, y = at::rand({5}) > 0.5,
             n = at::randint(-5, 5, {5}, at::kLong);
  auto out = b.run({andV, orV, notV, bitV}, {x, y, n});
  expectSame(out[0], x.mul(y));
  expectSame(out[1], x.add(y).ne(0));
  expectSame(out[2], x.eq(0));
  expectSame(out[3], -n - 1);
}

TEST_F(AtenExecutorTest, BinaryOpsBroadcast) {
  std::map<RefFn,
           std::function<at::Tensor(const at::Tensor &, const at::Tensor &)>>
      ops = {
          {RefFn::Add, [](auto &a, auto &b) { return a + b; }},
          {RefFn::Sub, [](auto &a, auto &b) { return a - b; }},
          {RefFn::Mul, [](auto &a, auto &b) { return a * b; }},
          {RefFn::Div, [](auto &a, auto &b) { return a / b; }},
          {RefFn::Maximum, [](auto &a, auto &b) { return at::where(a > b, a, b); }},
          {RefFn::Minimum, [](auto &a, auto &b) { return at::where(a < b, a, b); }},
          {RefFn::Pow, [](auto &a, auto &b) { return (b * a.log()).exp(); }},
          {RefFn::Atan2, [](auto &a, auto &b) { return at::atan(a / b); }}, // b > 0
          {RefFn::Remainder,
           [](auto &a, auto &b) { return a - (a / b).trunc() * b; }},
      };
  at::Tensor x = positive({3, 4}) * 4, y = positive({4});
  for (const auto &[fn, reference] : ops) {
    SCOPED_TRACE(refFnName(fn));
    Builder b;
    int p = b.input({3, 4}), q = b.input({4});
    auto out = b.run({b.op(fn, {p, q}, {3, 4})}, {x, y});
    expectSame(out[0], reference(x, y.expand({3, 4})));
  }
}

TEST_F(AtenExecutorTest, Comparisons) {
  std::map<RefFn,
           std::function<at::Tensor(const at::Tensor &, const at::Tensor &)>>
      ops = {
          {RefFn::Gt, [](auto &a, auto &b) { return (a - b).sign() == 1; }},
          {RefFn::Ge, [](auto &a, auto &b) { return (a - b).sign() >= 0; }},
          {RefFn::Lt, [](auto &a, auto &b) { return (a - b).sign() == -1; }},
          {RefFn::Le, [](auto &a, auto &b) { return (a - b).sign() <= 0; }},
          {RefFn::Eq, [](auto &a, auto &b) { return (a - b).sign() == 0; }},
          {RefFn::Ne, [](auto &a, auto &b) { return (a - b).sign() != 0; }},
      };
  at::Tensor x = at::randint(0, 4, {6}, at::kLong),
             y = at::randint(0, 4, {6}, at::kLong);
  for (const auto &[fn, reference] : ops) {
    SCOPED_TRACE(refFnName(fn));
    Builder b;
    int p = b.input({6}, DType::Int64), q = b.input({6}, DType::Int64);
    int two = b.op(RefFn::Scalar, {}, {}, DType::Int64, {}, 2);
    auto out = b.run({b.op(fn, {p, q}, {6}, DType::Bool),
                      b.op(fn, {p, two}, {6}, DType::Bool)},
                     {x, y});
    expectSame(out[0], reference(x, y));
    expectSame(out[1], reference(x, at::full({6}, 2, at::kLong)));
  }
}

TEST_F(AtenExecutorTest, ScalarsPromoteLikePythonNumbers) {
  Builder b;
  int h = b.input({4}, DType::Float16);
  // A float32 scalar beside a float16 tensor is a Python number: float16.
  int c = b.op(RefFn::Scalar, {}, {}, DType::Float32, {}, 0.5);
  int sum = b.op(RefFn::Add, {c, h}, {4}, DType::Float16);
  // Alone it is a 0-d tensor of its own dtype.
  int alone = b.op(RefFn::Exp, {c}, {}, DType::Float32);
  int full = b.op(RefFn::Full, {}, {2, 2}, DType::Int64, {}, 3);
  at::Tensor x = at::randn({4}).to(at::kHalf);
  auto out = b.run({sum, alone, full, c}, {x});
  expectSame(out[0], (x.to(at::kFloat) + 0.5).to(at::kHalf));
  expectSame(out[1], at::scalar_tensor(std::exp(0.5)));
  expectSame(out[2], at::ones({2, 2}, at::kLong) * 3);
  expectSame(out[3], at::scalar_tensor(0.5));
}

TEST_F(AtenExecutorTest, WhereAndTo) {
  Builder b;
  int cond = b.input({2, 3}, DType::Bool), x = b.input({2, 3}),
      y = b.input({3});
  int zero = b.op(RefFn::Scalar, {}, {}, DType::Float32, {}, 0);
  int w = b.op(RefFn::Where, {cond, x, y}, {2, 3});
  int wz = b.op(RefFn::Where, {cond, zero, x}, {2, 3});
  int half = b.op(RefFn::To, {x}, {2, 3}, DType::Float16);
  int asInt = b.op(RefFn::To, {x}, {2, 3}, DType::Int64);
  at::Tensor k = at::rand({2, 3}) > 0.5, p = at::randn({2, 3}) * 4,
             q = at::randn({3});
  auto out = b.run({w, wz, half, asInt}, {k, p, q});
  at::Tensor kf = k.to(at::kFloat);
  expectSame(out[0], kf * p + (1 - kf) * q);
  expectSame(out[1], (1 - kf) * p);
  expectSame(out[2], p.to(at::kHalf));
  expectSame(out[3], p.trunc().to(at::kLong));
}

TEST_F(AtenExecutorTest, Views) {
  Builder b;
  int x = b.input({2, 3, 4}), y = b.input({3, 1});
  int perm =
      b.op(RefFn::Permute, {x}, {4, 2, 3}, DType::Float32, {{"dims", {2, 0, 1}}});
  int flat = b.op(RefFn::Reshape, {perm}, {24});
  int wide = b.op(RefFn::Expand, {y}, {2, 3, 5});
  at::Tensor p = at::randn({2, 3, 4}), q = at::randn({3, 1});
  auto out = b.run({perm, flat, wide}, {p, q});
  expectSame(out[0], p.transpose(1, 2).transpose(0, 1).contiguous());
  expectSame(out[1], p.transpose(1, 2).transpose(0, 1).contiguous().view({24}));
  expectSame(out[2], q.repeat({2, 1, 5}));
}

TEST_F(AtenExecutorTest, Reductions) {
  Builder b;
  int x = b.input({2, 3, 4});
  int sum = b.op(RefFn::Sum, {x}, {3}, DType::Float32, {{"dims", {0, 2}}});
  int max = b.op(RefFn::Amax, {x}, {2, 4}, DType::Float32, {{"dims", {1}}});
  int min = b.op(RefFn::Amin, {x}, {4}, DType::Float32, {{"dims", {0, 1}}});
  int prod = b.op(RefFn::Prod, {x}, {3}, DType::Float32, {{"dims", {0, 2}}});
  at::Tensor p = at::randn({2, 3, 4});
  auto out = b.run({sum, max, min, prod}, {p});
  at::Tensor byMiddle = p.permute({1, 0, 2}).reshape({3, 8});
  expectSame(out[0], byMiddle.sum(1));
  expectSame(out[1], std::get<0>(p.max(1)));
  expectSame(out[2], std::get<0>(p.reshape({6, 4}).min(0)));
  expectSame(out[3], byMiddle.prod(1));
}

TEST_F(AtenExecutorTest, Matmul) {
  Builder b;
  int a = b.input({4, 6}), w = b.input({6, 5}), x = b.input({3, 4, 6}),
      y = b.input({3, 6, 2});
  at::Tensor p = at::randn({4, 6}), q = at::randn({6, 5}),
             r = at::randn({3, 4, 6}), s = at::randn({3, 6, 2});
  auto out =
      b.run({b.op(RefFn::Matmul, {a, w}, {4, 5}), b.op(RefFn::Matmul, {x, y}, {3, 4, 2})},
            {p, q, r, s});
  expectSame(out[0], (p.unsqueeze(2) * q.unsqueeze(0)).sum(1));
  expectSame(out[1], (r.unsqueeze(3) * s.unsqueeze(1)).sum(2));
}

TEST_F(AtenExecutorTest, Convolutions) {
  Builder b;
  int x1 = b.input({2, 4, 11}), w1 = b.input({6, 2, 3});
  int x2 = b.input({1, 4, 9, 8}), w2 = b.input({4, 1, 3, 3});
  int x3 = b.input({1, 2, 5, 6, 5}), w3 = b.input({3, 2, 2, 3, 2});
  int c1 = b.op(
      RefFn::Conv, {x1, w1}, {2, 6, 5}, DType::Float32,
      {{"stride", {2}}, {"padding", {1}}, {"dilation", {2}}, {"groups", {2}}});
  int c2 = b.op(RefFn::Conv, {x2, w2}, {1, 4, 5, 8}, DType::Float32,
                {{"stride", {2, 1}},
                 {"padding", {1, 1}},
                 {"dilation", {1, 1}},
                 {"groups", {4}}});
  int c3 = b.op(RefFn::Conv, {x3, w3}, {1, 3, 4, 4, 4}, DType::Float32,
                {{"stride", {1, 1, 1}},
                 {"padding", {0, 0, 0}},
                 {"dilation", {1, 1, 1}},
                 {"groups", {1}}});
  std::vector<at::Tensor> in = {
      at::randn({2, 4, 11}),      at::randn({6, 2, 3}),
      at::randn({1, 4, 9, 8}),    at::randn({4, 1, 3, 3}),
      at::randn({1, 2, 5, 6, 5}), at::randn({3, 2, 2, 3, 2})};
  auto out = b.run({c1, c2, c3}, in);
  expectSame(out[0],
             at::convolution(in[0], in[1], {}, {2}, {1}, {2}, false, {0}, 2));
  expectSame(out[1], at::convolution(in[2], in[3], {}, {2, 1}, {1, 1}, {1, 1},
                                     false, {0, 0}, 4));
  expectSame(out[2], at::convolution(in[4], in[5], {}, {1, 1, 1}, {0, 0, 0},
                                     {1, 1, 1}, false, {0, 0, 0}, 1));
}

TEST_F(AtenExecutorTest, Pooling) {
  Builder b;
  int x1 = b.input({2, 3, 10}), x2 = b.input({1, 2, 7, 9}),
      x3 = b.input({1, 2, 4, 5, 6});
  int max1 = b.op(
      RefFn::MaxPool, {x1}, {2, 3, 4}, DType::Float32,
      {{"kernel", {3}}, {"stride", {2}}, {"padding", {1}}, {"dilation", {2}}});
  int max2 = b.op(RefFn::MaxPool, {x2}, {1, 2, 3, 4}, DType::Float32,
                  {{"kernel", {2, 2}},
                   {"stride", {2, 2}},
                   {"padding", {0, 0}},
                   {"dilation", {1, 1}}});
  int max3 = b.op(RefFn::MaxPool, {x3}, {1, 2, 3, 4, 5}, DType::Float32,
                  {{"kernel", {2, 2, 2}},
                   {"stride", {1, 1, 1}},
                   {"padding", {0, 0, 0}},
                   {"dilation", {1, 1, 1}}});
  int sum1 = b.op(RefFn::SumPool, {x1}, {2, 3, 5}, DType::Float32,
                  {{"kernel", {3}}, {"stride", {2}}, {"padding", {1}}});
  int sum2 =
      b.op(RefFn::SumPool, {x2}, {1, 2, 4, 5}, DType::Float32,
           {{"kernel", {2, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}}});
  int sum3 = b.op(
      RefFn::SumPool, {x3}, {1, 2, 3, 4, 5}, DType::Float32,
      {{"kernel", {2, 2, 2}}, {"stride", {1, 1, 1}}, {"padding", {0, 0, 0}}});
  std::vector<at::Tensor> in = {at::randn({2, 3, 10}), at::randn({1, 2, 7, 9}),
                                at::randn({1, 2, 4, 5, 6})};
  auto out = b.run({max1, max2, max3, sum1, sum2, sum3}, in);
  // Windows by unfold: padded input, one unfold per spatial dim.
  at::Tensor padded1 = at::constant_pad_nd(in[0], {1, 1}, -INFINITY);
  expectSame(out[0],
             std::get<0>(padded1.unfold(2, 5, 2).slice(3, 0, 5, 2).max(3)));
  expectSame(out[1], in[1]
                         .slice(2, 0, 6)
                         .slice(3, 0, 8)
                         .reshape({1, 2, 3, 2, 4, 2})
                         .amax({3, 5}));
  expectSame(out[2], in[2].unfold(2, 2, 1).unfold(3, 2, 1).unfold(4, 2, 1).amax(
                         {5, 6, 7}));
  expectSame(out[3],
             at::constant_pad_nd(in[0], {1, 1}, 0).unfold(2, 3, 2).sum(3));
  expectSame(out[4], at::constant_pad_nd(in[1], {1, 1, 1, 1}, 0)
                         .unfold(2, 2, 2)
                         .unfold(3, 3, 2)
                         .sum({4, 5}));
  expectSame(out[5], in[2].unfold(2, 2, 1).unfold(3, 2, 1).unfold(4, 2, 1).sum(
                         {5, 6, 7}));
}

TEST_F(AtenExecutorTest, PadSliceInsertCat) {
  Builder b;
  int x = b.input({2, 3, 4}), y = b.input({2, 3}), z = b.input({2, 1});
  int pad = b.op(RefFn::Pad, {x}, {3, 3, 7}, DType::Float32,
                 {{"low", {1, 0, 2}}, {"high", {0, 0, 1}}}, -2);
  int slice = b.op(
      RefFn::Slice, {x}, {1, 2, 2}, DType::Float32,
      {{"offsets", {1, 0, 1}}, {"sizes", {1, 2, 2}}, {"strides", {1, 2, 2}}});
  int insert =
      b.op(RefFn::InsertSlice, {z, y}, {2, 3}, DType::Float32,
           {{"offsets", {0, 1}}, {"sizes", {2, 1}}, {"strides", {1, 1}}});
  int cat = b.op(RefFn::Cat, {y, z, y}, {2, 7}, DType::Float32, {{"dim", {1}}});
  at::Tensor p = at::randn({2, 3, 4}), q = at::randn({2, 3}),
             r = at::randn({2, 1});
  auto out = b.run({pad, slice, insert, cat}, {p, q, r});

  at::Tensor padded = at::full({3, 3, 7}, -2.0);
  padded.narrow(0, 1, 2).narrow(2, 2, 4).copy_(p);
  expectSame(out[0], padded);
  at::Tensor picked = at::stack({at::stack({p[1][0][1], p[1][0][3]}),
                                 at::stack({p[1][2][1], p[1][2][3]})})
                          .unsqueeze(0);
  expectSame(out[1], picked);
  expectSame(out[2],
             at::stack({q.select(1, 0), r.select(1, 0), q.select(1, 2)}, 1));
  at::Tensor joined = at::empty({2, 7});
  joined.narrow(1, 0, 3).copy_(q);
  joined.narrow(1, 3, 1).copy_(r);
  joined.narrow(1, 4, 3).copy_(q);
  expectSame(out[3], joined);
  // insert_slice leaves its destination untouched.
  EXPECT_FALSE(at::equal(out[2], q));
}

TEST_F(AtenExecutorTest, InputMismatchesNameTheInput) {
  Builder b;
  int x = b.input({2, 3}), y = b.input({3}, DType::Int64);
  b.op(RefFn::Add, {x, y}, {2, 3});
  EXPECT_EQ(b.error({2}, {at::zeros({2, 3})}),
            "the program takes 2 inputs, got 1");
  std::string shape =
      b.error({2}, {at::zeros({3, 2}), at::zeros({3}, at::kLong)});
  EXPECT_NE(shape.find("input 0 is float32 [3, 2]"), std::string::npos)
      << shape;
  EXPECT_NE(shape.find("float32 [2, 3]"), std::string::npos) << shape;
  std::string dtype = b.error({2}, {at::zeros({2, 3}), at::zeros({3})});
  EXPECT_NE(dtype.find("input 1 is float32 [3]"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("int64 [3]"), std::string::npos) << dtype;
}

TEST_F(AtenExecutorTest, BadProgramsAreErrors) {
  Result<ReferenceProgram> truncated = ReferenceProgram::fromJson("{\"inputs\": [");
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().line, 1u);

  // A name outside RefOps.def never becomes a program.
  Result<ReferenceProgram> unknown = ReferenceProgram::fromJson(
      R"({"inputs": [], "ops": [{"fn": "frobnicate", "args": [],
          "type": {"shape": [], "dtype": "float32"}}], "outputs": [0]})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().key, "ops[0].fn");
  EXPECT_NE(unknown.error().message.find("unknown operation 'frobnicate'"), std::string::npos);

  Builder undefined;
  int x = undefined.input({2});
  undefined.op(RefFn::Exp, {x + 5}, {2});
  EXPECT_NE(
      undefined.error({1}, {at::zeros({2})}).find("not defined before it"),
      std::string::npos);

  Builder declared;
  int y = declared.input({2, 3});
  declared.op(RefFn::Sum, {y}, {2, 3}, DType::Float32, {{"dims", {1}}});
  std::string wrong = declared.error({1}, {at::zeros({2, 3})});
  EXPECT_NE(wrong.find("op 0 ('sum'): computes float32 [2]"), std::string::npos)
      << wrong;

  Builder torchError;
  int a = torchError.input({2, 3}), c = torchError.input({2, 3});
  torchError.op(RefFn::Matmul, {a, c}, {2, 2});
  std::string mm =
      torchError.error({2}, {at::zeros({2, 3}), at::zeros({2, 3})});
  EXPECT_EQ(mm.rfind("op 0 ('matmul'): ", 0), 0u) << mm;

  Builder attribute;
  int i = attribute.input({1, 2, 5}), w = attribute.input({2, 2, 3});
  attribute.op(
      RefFn::Conv, {i, w}, {1, 2, 3}, DType::Float32,
      {{"stride", {1}}, {"padding", {0}}, {"dilation", {1}}, {"groups", {}}});
  std::string groups =
      attribute.error({2}, {at::zeros({1, 2, 5}), at::zeros({2, 2, 3})});
  EXPECT_NE(groups.find("'groups' must hold one integer"), std::string::npos)
      << groups;
}


// A size symbol is bound from the inputs at each run: one program runs at
// any batch, and gives what the same torch calls give.
TEST_F(AtenExecutorTest, SizeSymbolsBindFromTheInputs) {
  Builder b;
  b.program.symbols = {SizeSymbol{4}, SizeSymbol{12, 0, 3}};
  int64_t s0 = symbolicSize(0), s1 = symbolicSize(1);
  int x = b.input({s0, 3});
  int flat = b.op(RefFn::Reshape, {x}, {s1});
  int ones = b.op(RefFn::Full, {}, {s1}, DType::Float32, {}, 1.5);
  int sum = b.op(RefFn::Add, {flat, ones}, {s1});
  int rows = b.op(RefFn::Sum, {x}, {s0}, DType::Float32, {{"dims", {1}}});
  for (int64_t batch : {1, 4, 9}) {
    at::Tensor in = at::randn({batch, 3});
    std::vector<at::Tensor> out = b.run({sum, rows}, {in});
    ASSERT_EQ(out.size(), 2u);
    expectSame(out[0], in.reshape({batch * 3}) + 1.5);
    expectSame(out[1], in.sum({1}));
  }
  // A size as a value: x broadcast from row 0 where the batch is 1, as
  // torch-mlir's dynamic broadcasts select.
  int n = b.op(RefFn::DimSize, {x}, {}, DType::Int64, {{"dim", {0}}});
  int one = b.op(RefFn::Scalar, {}, {}, DType::Int64, {}, 1);
  int single = b.op(RefFn::Eq, {n, one}, {}, DType::Bool);
  int zero = b.op(RefFn::Scalar, {}, {}, DType::Float32, {}, 0);
  int picked = b.op(RefFn::Where, {single, zero, x}, {s0, 3});
  for (int64_t batch : {1, 5}) {
    at::Tensor in = at::randn({batch, 3});
    std::vector<at::Tensor> out = b.run({n, picked}, {in});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].item<int64_t>(), batch);
    EXPECT_EQ(out[0].scalar_type(), at::kLong);
    expectSame(out[1], batch == 1 ? at::zeros_like(in) : in);
  }
  std::string error = b.error({sum}, {at::randn({4, 5})});
  EXPECT_NE(error.find("input 0 dimension 1 has size 5, the program takes 3"), std::string::npos)
      << error;
}

} // namespace
