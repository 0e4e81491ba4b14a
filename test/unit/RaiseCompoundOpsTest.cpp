//===- RaiseCompoundOpsTest.cpp - decompositions back to functions ---------===//
//
// The structural rules of raising, on programs built by hand: what is
// raised is exactly the decomposition, a value used elsewhere stays
// computed, reshape chains and spreads fold, and the norms' attributes are
// checked.
// test/python/test_raised_functions.py runs the real exports against eager
// PyTorch.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/RaiseCompoundOps.h"
#include "dice/Reference/ReferenceProgram.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dice {
namespace {

const TensorType kRows{{4, 8}, DType::Float32};
const TensorType kKept{{4, 1}, DType::Float32};
const TensorType kRow{{4}, DType::Float32};

struct Builder {
  ReferenceProgram p;
  explicit Builder(std::vector<TensorType> inputs) { p.inputs = std::move(inputs); }
  int op(RefFn fn, std::vector<int> args, TensorType type,
         std::map<std::string, std::vector<int64_t>> ints = {}) {
    return p.add(RefOp{fn, std::move(args), std::move(ints), 0, std::move(type)});
  }
  int scalar(double value, DType dtype = DType::Float32) {
    return p.add(RefOp{RefFn::Scalar, {}, {}, value, TensorType{{}, dtype}});
  }
  /// `fn(x, dims=[1])` reshaped to [4] and back to [4, 1], as torch-mlir's
  /// keepdim reductions render.
  int keptRowReduce(RefFn fn, int x) {
    int r = op(fn, {x}, kRow, {{"dims", {1}}});
    int k = op(RefFn::Reshape, {r}, kKept);
    return op(RefFn::Reshape, {op(RefFn::Reshape, {k}, kRow)}, kKept);
  }
  /// The softmax of x over dim 1, its sum over `sumDim`.
  int softmax(int x, int64_t sumDim = 1) {
    int shifted = op(RefFn::Sub, {x, keptRowReduce(RefFn::Amax, x)}, kRows);
    int e = op(RefFn::Exp, {shifted}, kRows);
    TensorType summed = sumDim == 1 ? kRow : TensorType{{8}, DType::Float32};
    TensorType kept = sumDim == 1 ? kKept : TensorType{{1, 8}, DType::Float32};
    int s = op(RefFn::Sum, {e}, summed, {{"dims", {sumDim}}});
    return op(RefFn::Div, {e, op(RefFn::Reshape, {s}, kept)}, kRows);
  }
};

std::vector<RefFn> fns(const ReferenceProgram &p) {
  std::vector<RefFn> out;
  for (const RefOp &op : p.ops)
    out.push_back(op.fn);
  return out;
}

TEST(RaiseCompoundOps, SoftmaxBecomesOneCall) {
  Builder b({kRows});
  b.p.outputs = {b.softmax(0)};
  EXPECT_EQ(raiseCompoundOps(b.p), std::vector<RefFn>{RefFn::Softmax});
  ASSERT_EQ(fns(b.p), std::vector<RefFn>{RefFn::Softmax});
  EXPECT_EQ(b.p.ops[0].args, std::vector<int>{0});
  EXPECT_EQ(b.p.ops[0].ints.at("dim"), std::vector<int64_t>{1});
  EXPECT_EQ(b.p.outputs, std::vector<int>{1});
  EXPECT_EQ(b.p.validate(), "");
  EXPECT_NE(renderPythonModel(b.p).find("torch.softmax(x0, dim=1)"), std::string::npos);
}

TEST(RaiseCompoundOps, ASumOverAnotherDimIsNotASoftmax) {
  Builder b({kRows});
  b.p.outputs = {b.softmax(0, /*sumDim=*/0)};
  ReferenceProgram before = b.p;
  EXPECT_TRUE(raiseCompoundOps(b.p).empty());
  EXPECT_EQ(b.p.ops.size(), before.ops.size() - 2); // only the reshape chain folded
}

TEST(RaiseCompoundOps, IntermediatesUsedElsewhereStayComputed) {
  // softmax(x) and exp(x - max(x)) both returned: the raise keeps the
  // shifted exponentials for the second output.
  Builder b({kRows});
  int sm = b.softmax(0);
  int e = b.p.ops[sm - 1].args[0]; // div(e, sum)
  ASSERT_EQ(b.p.ops[e - 1].fn, RefFn::Exp);
  b.p.outputs = {sm, e};
  EXPECT_EQ(raiseCompoundOps(b.p), std::vector<RefFn>{RefFn::Softmax});
  EXPECT_EQ(b.p.ops.back().fn, RefFn::Softmax);
  EXPECT_EQ(b.p.ops[b.p.outputs[1] - 1].fn, RefFn::Exp);
  EXPECT_EQ(b.p.validate(), "");
}

TEST(RaiseCompoundOps, SiluOnlyOfItsOwnInput) {
  Builder same({kRows});
  same.p.outputs = {same.op(RefFn::Mul, {same.op(RefFn::Sigmoid, {0}, kRows), 0}, kRows)};
  EXPECT_EQ(raiseCompoundOps(same.p), std::vector<RefFn>{RefFn::Silu});

  Builder other({kRows, kRows});
  other.p.outputs = {other.op(RefFn::Mul, {0, other.op(RefFn::Sigmoid, {1}, kRows)}, kRows)};
  EXPECT_TRUE(raiseCompoundOps(other.p).empty());
  EXPECT_EQ(fns(other.p), (std::vector<RefFn>{RefFn::Sigmoid, RefFn::Mul}));
}

TEST(RaiseCompoundOps, ConstantsMatchAtTheirDtypesPrecision) {
  // 0.5 * x * (1 + erf(x / c)): c = sqrt(2) rounded to float16 matches in a
  // float16 program; 1.5 does not.
  for (auto [c, raised] : {std::pair{1.4140625, true}, std::pair{1.5, false}}) {
    TensorType half{{4, 8}, DType::Float16};
    Builder b({half});
    int q = b.op(RefFn::Div, {0, b.scalar(c, DType::Float16)}, half);
    int t = b.op(RefFn::Add, {b.op(RefFn::Erf, {q}, half), b.scalar(1, DType::Float16)}, half);
    int h = b.op(RefFn::Mul, {t, b.scalar(0.5, DType::Float16)}, half);
    b.p.outputs = {b.op(RefFn::Mul, {0, h}, half)};
    EXPECT_EQ(raiseCompoundOps(b.p).size(), raised ? 1u : 0u) << c;
  }
}

/// softmax(x.to(wide)).to(x's dtype), the softmax decomposed in `wide`.
ReferenceProgram castSoftmax(DType narrow, DType wide) {
  TensorType in{{4, 8}, narrow}, w{{4, 8}, wide};
  Builder b({in});
  int up = b.op(RefFn::To, {0}, w);
  TensorType row{{4}, wide}, kept{{4, 1}, wide};
  int m = b.op(RefFn::Reshape, {b.op(RefFn::Amax, {up}, row, {{"dims", {1}}})}, kept);
  int e = b.op(RefFn::Exp, {b.op(RefFn::Sub, {up, m}, w)}, w);
  int s = b.op(RefFn::Reshape, {b.op(RefFn::Sum, {e}, row, {{"dims", {1}}})}, kept);
  b.p.outputs = {b.op(RefFn::To, {b.op(RefFn::Div, {e, s}, w)}, in)};
  return b.p;
}

TEST(RaiseCompoundOps, HalfPrecisionComputedInFloatIsTheHalfFunction) {
  // PyTorch computes a float16 softmax in float32 and rounds once.
  ReferenceProgram half = castSoftmax(DType::Float16, DType::Float32);
  raiseCompoundOps(half);
  ASSERT_EQ(fns(half), std::vector<RefFn>{RefFn::Softmax});
  EXPECT_EQ(half.ops[0].type.dtype, DType::Float16);
  EXPECT_EQ(half.ops[0].args, std::vector<int>{0});
  // A float32 softmax computed in float64 is not float32's softmax.
  ReferenceProgram single = castSoftmax(DType::Float32, DType::Float64);
  raiseCompoundOps(single);
  EXPECT_EQ(fns(single), (std::vector<RefFn>{RefFn::To, RefFn::Softmax, RefFn::To}));
}

TEST(RaiseCompoundOps, ReshapeChainsFold) {
  Builder b({kRows});
  int r1 = b.op(RefFn::Reshape, {0}, TensorType{{32}, DType::Float32});
  int r2 = b.op(RefFn::Reshape, {r1}, TensorType{{2, 16}, DType::Float32});
  int same = b.op(RefFn::Reshape, {r2}, TensorType{{2, 16}, DType::Float32}); // to its own type
  int e = b.op(RefFn::Exp, {same}, TensorType{{2, 16}, DType::Float32});
  b.p.outputs = {e};
  EXPECT_TRUE(raiseCompoundOps(b.p).empty());
  EXPECT_EQ(fns(b.p), (std::vector<RefFn>{RefFn::Reshape, RefFn::Exp}));
  EXPECT_EQ(b.p.ops[0].args, std::vector<int>{0});
  EXPECT_EQ(b.p.ops[1].args, std::vector<int>{1});
}

TEST(RaiseCompoundOps, AReturnedReshapeToItsOwnTypeStays) {
  // An output is a tensor of its own, never the input itself.
  Builder b({kRows});
  b.p.outputs = {b.op(RefFn::Reshape, {0}, kRows)};
  raiseCompoundOps(b.p);
  EXPECT_EQ(fns(b.p), std::vector<RefFn>{RefFn::Reshape});
  EXPECT_EQ(b.p.outputs, std::vector<int>{1});
}

/// x [2, 3] written along dim 1 into a [2, 7] tensor of `inner`, every
/// second column from 1, that written along dim 0 into a [5, 7] tensor of
/// `outer`, every third row from 1: how the printed `t[1:5:3, 1:6:2] = x`
/// exports.
ReferenceProgram spreadADimAtATime(double inner, double outer) {
  const TensorType wide{{2, 7}, DType::Float32}, spread{{5, 7}, DType::Float32};
  Builder b({TensorType{{2, 3}, DType::Float32}});
  int zeros = b.p.add(RefOp{RefFn::Full, {}, {}, inner, wide});
  int columns = b.op(RefFn::InsertSlice, {0, zeros}, wide,
                     {{"offsets", {0, 1}}, {"sizes", {2, 3}}, {"strides", {1, 2}}});
  int more = b.p.add(RefOp{RefFn::Full, {}, {}, outer, spread});
  b.p.outputs = {b.op(RefFn::InsertSlice, {columns, more}, spread,
                      {{"offsets", {1, 0}}, {"sizes", {2, 7}}, {"strides", {3, 1}}})};
  return b.p;
}

TEST(RaiseCompoundOps, ASpreadWrittenADimAtATimeIsOneWrite) {
  // x[i, j] lands at (1 + 3 i, 1 + 2 j) either way.
  ReferenceProgram p = spreadADimAtATime(0, 0);
  ASSERT_EQ(p.validate(), "");
  raiseCompoundOps(p);
  ASSERT_EQ(fns(p), (std::vector<RefFn>{RefFn::Full, RefFn::InsertSlice}));
  const RefOp &write = p.ops[1];
  EXPECT_EQ(write.args, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.ops[0].type.shape, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(write.ints.at("offsets"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(write.ints.at("strides"), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(write.ints.at("sizes"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.validate(), "");
}

TEST(RaiseCompoundOps, ASpreadIntoAnotherValueStaysTwoWrites) {
  // The columns between x's are 1, the rows between 0: not one write.
  ReferenceProgram p = spreadADimAtATime(1, 0);
  raiseCompoundOps(p);
  EXPECT_EQ(fns(p), (std::vector<RefFn>{RefFn::Full, RefFn::InsertSlice, RefFn::Full,
                                         RefFn::InsertSlice}));
}

/// table[where(i < 0, i + wrapAt, i), arange(8).reshape(1, 8)] of a
/// [16, 8] table and indices i: [5] viewed as [5, 1], as torch-mlir renders
/// `table[i]`.
ReferenceProgram wrappedGather(double wrapAt) {
  const TensorType indices{{5, 1}, DType::Int64}, column{{1, 8}, DType::Int64};
  Builder b({TensorType{{5}, DType::Int64}, TensorType{{16, 8}, DType::Float32}});
  int zero = b.scalar(0, DType::Int64), size = b.scalar(wrapAt, DType::Int64);
  int i = b.op(RefFn::Reshape, {0}, indices);
  int negative = b.op(RefFn::Lt, {i, zero}, TensorType{{5, 1}, DType::Bool});
  int wrapped = b.op(RefFn::Where, {negative, b.op(RefFn::Add, {i, size}, indices), i}, indices);
  int range = b.op(RefFn::Arange, {}, TensorType{{8}, DType::Int64}, {{"dim", {0}}});
  int laid = b.op(RefFn::Reshape, {range}, column);
  b.p.outputs = {b.op(RefFn::Index, {1, wrapped, laid}, TensorType{{5, 8}, DType::Float32})};
  return b.p;
}

TEST(RaiseCompoundOps, AGathersNegativeIndexWrapIsItsOwn) {
  // x[i] counts a negative index from the end: the wrap is the index's own.
  ReferenceProgram p = wrappedGather(16);
  ASSERT_EQ(p.validate(), "");
  EXPECT_TRUE(raiseCompoundOps(p).empty());
  EXPECT_EQ(fns(p), (std::vector<RefFn>{RefFn::Reshape, RefFn::Arange, RefFn::Index}));
  const RefOp &index = p.ops[2];
  EXPECT_EQ(index.args, (std::vector<int>{1, 2, 3}));
  // The arange laid along the view's dim, in the view's place.
  EXPECT_EQ(p.ops[1].type.shape, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(p.ops[1].ints.at("dim"), std::vector<int64_t>{1});
}

TEST(RaiseCompoundOps, AnotherShiftIsNotTheWrap) {
  // i + 15 where i < 0 is not the wrap of a 16-row table: kept as it is.
  ReferenceProgram p = wrappedGather(15);
  raiseCompoundOps(p);
  EXPECT_EQ(fns(p), (std::vector<RefFn>{RefFn::Scalar, RefFn::Scalar, RefFn::Reshape, RefFn::Lt, RefFn::Add,
                                              RefFn::Where, RefFn::Arange, RefFn::Index}));
}

/// rms_norm(x) over the last dim times a weight reshaped to [1, 8]; the
/// norm's value is also returned when `alsoReturned`.
ReferenceProgram rmsNorm(bool alsoReturned) {
  Builder b({kRows, TensorType{{8}, DType::Float32}});
  int sq = b.op(RefFn::Mul, {0, 0}, kRows);
  int mean = b.op(RefFn::Div, {b.op(RefFn::Reshape, {b.op(RefFn::Sum, {sq}, kRow, {{"dims", {1}}})}, kKept),
                          b.scalar(8)},
                  kKept);
  int eps = b.op(RefFn::To, {b.scalar(1e-6, DType::Float64)}, TensorType{{}, DType::Float32});
  int rstd = b.op(RefFn::Rsqrt, {b.op(RefFn::Add, {mean, eps}, kKept)}, kKept);
  int norm = b.op(RefFn::Mul, {0, rstd}, kRows);
  int w = b.op(RefFn::Reshape, {1}, TensorType{{1, 8}, DType::Float32});
  int out = b.op(RefFn::Mul, {norm, w}, kRows);
  b.p.outputs = {out};
  if (alsoReturned)
    b.p.outputs.push_back(norm);
  return b.p;
}

TEST(RaiseCompoundOps, ANormTakesInItsWeight) {
  ReferenceProgram p = rmsNorm(false);
  EXPECT_EQ(raiseCompoundOps(p), std::vector<RefFn>{RefFn::RmsNorm});
  ASSERT_EQ(fns(p), std::vector<RefFn>{RefFn::RmsNorm});
  EXPECT_EQ(p.ops[0].args, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.ops[0].ints.at("affine"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.ops[0].value, 1e-6);
  EXPECT_EQ(p.validate(), "");
  EXPECT_NE(renderPythonModel(p).find("torch.nn.functional.rms_norm(x0, (8,), x1, eps=1e-06)"),
            std::string::npos)
      << renderPythonModel(p);
}

TEST(RaiseCompoundOps, ANormAlsoReturnedKeepsItsWeightApart) {
  // Taking the weight in would compute the norm twice.
  ReferenceProgram p = rmsNorm(true);
  EXPECT_EQ(raiseCompoundOps(p), std::vector<RefFn>{RefFn::RmsNorm});
  EXPECT_EQ(fns(p), (std::vector<RefFn>{RefFn::RmsNorm, RefFn::Reshape, RefFn::Mul}));
}

TEST(RaiseCompoundOps, NormAttributesAreChecked) {
  ReferenceProgram p = rmsNorm(false);
  raiseCompoundOps(p);
  ReferenceProgram noWeight = p;
  noWeight.ops[0].args = {0};
  EXPECT_NE(noWeight.validate().find("one argument per affine parameter"), std::string::npos);
  ReferenceProgram tooMany = p;
  tooMany.ops[0].ints["normalized"] = {3};
  EXPECT_NE(tooMany.validate().find("trailing dims"), std::string::npos);
  ReferenceProgram bias = p;
  bias.ops[0].ints["affine"] = {1, 1};
  EXPECT_NE(bias.validate().find("'affine'"), std::string::npos);
  Result<ReferenceProgram> back = ReferenceProgram::fromJson(p.toJson());
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(back->ops[0].ints, p.ops[0].ints);
}

} // namespace
} // namespace dice
