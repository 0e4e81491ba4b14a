//===- ReferenceBuilder.cpp - linalg-on-tensors -> reference program ------===//
//
// Named ops that PyTorch has a direct call for (matmul, convolution, pooling,
// transpose, broadcast, fill) are rendered as that call, so the reference the
// model reads looks like the PyTorch it came from. Every other structured op
// goes through one general rule: each operand is viewed in the iteration
// space through its indexing map (squeeze, permute, unsqueeze), the payload
// becomes elementwise torch calls that broadcast over that space, reductions
// become torch reductions over the reduction dims, and the result is laid out
// through the output's indexing map. Anything outside that rule fails with a
// reason; nothing is approximated.
//
//===----------------------------------------------------------------------===//

#include "dice/Scaffold/ReferenceBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace dice {

std::optional<DType> toDType(Type type) {
  if (type.isF32())
    return DType::Float32;
  if (type.isF16())
    return DType::Float16;
  if (type.isBF16())
    return DType::BFloat16;
  if (type.isF64())
    return DType::Float64;
  if (type.isInteger(1))
    return DType::Bool;
  if (type.isInteger(64) || type.isIndex())
    return DType::Int64;
  if (type.isInteger(32))
    return DType::Int32;
  if (type.isInteger(16))
    return DType::Int16;
  if (type.isInteger(8))
    return DType::Int8;
  return std::nullopt;
}

namespace {

std::vector<int64_t> toStd(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

class Builder {
public:
  ReferenceProgram program;
  std::string error;

  /// Binds a region argument (or any outside value) to a new program input.
  LogicalResult addInput(Value value) {
    if (!program.ops.empty()) {
      error = "internal error: an input added after the first op";
      return failure();
    }
    auto type = tensorType(value);
    if (!type)
      return failure();
    values[value] = static_cast<int>(program.inputs.size());
    program.inputs.push_back(*type);
    return success();
  }

  LogicalResult translate(Operation *op);

  LogicalResult addOutput(Value value) {
    auto id = get(value);
    if (!id)
      return failure();
    program.outputs.push_back(*id);
    return success();
  }

private:
  llvm::DenseMap<Value, int> values;
  /// tensor.empty results: materialized (as zeros) only if something reads
  /// them, since most are only destinations.
  llvm::DenseMap<Value, TensorType> empties;

  LogicalResult fail(Operation *op, const Twine &why) {
    error = ("'" + op->getName().getStringRef() + "' " + why).str();
    return failure();
  }

  std::optional<TensorType> tensorType(Value value) {
    Type type = value.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      if (!tensor.hasStaticShape()) {
        error = "dynamic shapes are not supported (" + typeString(type) + ")";
        return std::nullopt;
      }
      auto dtype = toDType(tensor.getElementType());
      if (!dtype) {
        error = "element type " + typeString(tensor.getElementType()) +
                " has no torch dtype";
        return std::nullopt;
      }
      return TensorType{toStd(tensor.getShape()), *dtype};
    }
    if (auto dtype = toDType(type))
      return TensorType{{}, *dtype};
    error = "type " + typeString(type) + " is not a tensor or scalar";
    return std::nullopt;
  }

  static std::string typeString(Type type) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return s;
  }

  std::optional<int> get(Value value) {
    if (auto it = values.find(value); it != values.end())
      return it->second;
    if (auto it = empties.find(value); it != empties.end()) {
      RefOp zeros{"full", {}, {}, 0, it->second};
      int id = program.add(zeros);
      values[value] = id;
      return id;
    }
    error = "a value is used before it is defined in the reference program";
    return std::nullopt;
  }

  const TensorType &type(int id) const { return program.typeOf(id); }
  const RefOp *opOf(int id) const {
    int n = static_cast<int>(program.inputs.size());
    return id >= n ? &program.ops[id - n] : nullptr;
  }
  /// The constant that value `id` holds everywhere, if it is a full/scalar.
  std::optional<double> constantOf(int id) const {
    const RefOp *op = opOf(id);
    if (op && (op->fn == "full" || op->fn == "scalar"))
      return op->value;
    return std::nullopt;
  }

  int emit(std::string fn, std::vector<int> args, TensorType result,
           std::map<std::string, std::vector<int64_t>> ints = {},
           double value = 0) {
    return program.add(RefOp{std::move(fn), std::move(args), std::move(ints),
                             value, std::move(result)});
  }

  int reshape(int id, const std::vector<int64_t> &shape) {
    if (type(id).shape == shape)
      return id;
    return emit("reshape", {id}, TensorType{shape, type(id).dtype});
  }

  int permute(int id, const std::vector<int64_t> &dims) {
    bool identity = true;
    for (size_t i = 0; i < dims.size(); ++i)
      identity &= dims[i] == static_cast<int64_t>(i);
    if (identity)
      return id;
    TensorType t = type(id);
    std::vector<int64_t> shape;
    for (int64_t d : dims)
      shape.push_back(t.shape[d]);
    return emit("permute", {id}, TensorType{shape, t.dtype}, {{"dims", dims}});
  }

  int expand(int id, const std::vector<int64_t> &shape) {
    TensorType t = type(id);
    if (t.shape == shape)
      return id;
    if (t.shape.size() != shape.size())
      id = reshape(id, std::vector<int64_t>(shape.size(), 1));
    return emit("expand", {id}, TensorType{shape, t.dtype});
  }

  int castTo(int id, DType dtype) {
    if (type(id).dtype == dtype)
      return id;
    return emit("to", {id}, TensorType{type(id).shape, dtype});
  }

  static std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a,
                                             const std::vector<int64_t> &b) {
    std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
      int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
      out[i] = std::max(x, y);
    }
    return out;
  }

  LogicalResult translateConstant(arith::ConstantOp op);
  LogicalResult translateFill(linalg::FillOp op);
  LogicalResult translateContraction(linalg::LinalgOp op);
  LogicalResult translateConvolution(linalg::LinalgOp op);
  LogicalResult translatePooling(linalg::LinalgOp op, StringRef fn,
                                 double identity, StringRef combine);
  LogicalResult translateBroadcast(linalg::BroadcastOp op);
  LogicalResult translateStructured(linalg::LinalgOp op);
  LogicalResult translateTensorOp(Operation *op);

  /// Adds `init` to a contraction/pooling result unless the init is the
  /// combiner's identity everywhere.
  std::optional<int> combineWithInit(Value init, int result, double identity,
                                     StringRef combine);

  // The general structured-op rule.
  std::optional<int> toIterationSpace(Operation *op, int id, AffineMap map,
                                      ArrayRef<int64_t> loops);
  std::optional<int> toTensorLayout(Operation *op, int id,
                                    ArrayRef<int64_t> dimsOfValue,
                                    AffineMap outMap,
                                    const TensorType &outType);
  std::optional<int> translatePayload(Operation *owner, Value value,
                                      llvm::DenseMap<Value, int> &scalars);
  std::optional<int> translatePayloadOp(Operation *owner, Operation *op,
                                        llvm::DenseMap<Value, int> &scalars);
};

LogicalResult Builder::translate(Operation *op) {
  for (Value result : op->getResults())
    if (!tensorType(result))
      return fail(op, "result: " + error);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::ConstantOp>([&](auto c) { return translateConstant(c); })
      .Case<tensor::EmptyOp>([&](tensor::EmptyOp e) {
        empties[e.getResult()] = *tensorType(e.getResult());
        return success();
      })
      .Case<linalg::FillOp>([&](auto f) { return translateFill(f); })
      .Case<linalg::CopyOp>([&](linalg::CopyOp c) -> LogicalResult {
        auto in = get(c.getInputs()[0]);
        if (!in)
          return fail(op, error);
        values[c.getResult(0)] = *in;
        return success();
      })
      .Case<linalg::TransposeOp>([&](linalg::TransposeOp t) -> LogicalResult {
        auto in = get(t.getInput());
        if (!in)
          return fail(op, error);
        values[t.getResult()[0]] =
            permute(*in, toStd(t.getPermutation()));
        return success();
      })
      .Case<linalg::BroadcastOp>([&](auto b) { return translateBroadcast(b); })
      .Case<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::MatvecOp,
            linalg::VecmatOp, linalg::BatchMatvecOp, linalg::DotOp>(
          [&](Operation *o) -> LogicalResult {
            auto linalgOp = mlir::cast<linalg::LinalgOp>(o);
            // Transposed/broadcast variants carry their own maps: general rule.
            if (auto m = dyn_cast<linalg::MatmulOp>(o); m && m.hasUserDefinedMaps())
              return translateStructured(linalgOp);
            if (auto m = dyn_cast<linalg::BatchMatmulOp>(o);
                m && m.hasUserDefinedMaps())
              return translateStructured(linalgOp);
            return translateContraction(linalgOp);
          })
      .Case<linalg::Conv1DNcwFcwOp, linalg::Conv2DNchwFchwOp,
            linalg::Conv3DNcdhwFcdhwOp, linalg::DepthwiseConv2DNchwChwOp>(
          [&](Operation *o) {
            return translateConvolution(mlir::cast<linalg::LinalgOp>(o));
          })
      .Case<linalg::PoolingNchwMaxOp, linalg::PoolingNcwMaxOp>(
          [&](Operation *o) {
            return translatePooling(mlir::cast<linalg::LinalgOp>(o), "max_pool",
                                    -std::numeric_limits<double>::infinity(),
                                    "maximum");
          })
      .Case<linalg::PoolingNchwSumOp, linalg::PoolingNcwSumOp>(
          [&](Operation *o) {
            return translatePooling(mlir::cast<linalg::LinalgOp>(o), "sum_pool", 0.0,
                                    "add");
          })
      .Case<linalg::LinalgOp>(
          [&](linalg::LinalgOp l) { return translateStructured(l); })
      .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::PadOp,
            tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
            tensor::CastOp>([&](Operation *o) { return translateTensorOp(o); })
      .Default([&](Operation *o) {
        return fail(o, "has no reference rendering");
      });
}

LogicalResult Builder::translateConstant(arith::ConstantOp op) {
  TensorType t = *tensorType(op.getResult());
  Attribute value = op.getValue();
  auto number = [](Attribute a) -> std::optional<double> {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    if (auto i = dyn_cast<IntegerAttr>(a)) {
      if (i.getType().isInteger(1))
        return static_cast<double>(i.getValue().getBoolValue());
      // The program holds constants as doubles: an integer beyond 2^53 may
      // not survive, and is refused rather than rounded.
      int64_t v = i.getValue().getSExtValue();
      double d = static_cast<double>(v);
      if (d >= 0x1p63 || static_cast<int64_t>(d) != v)
        return std::nullopt;
      return d;
    }
    return std::nullopt;
  };
  if (isa<IntegerAttr>(value) && !number(value))
    return fail(op, "holds an integer that a double does not represent exactly");
  if (auto scalar = number(value)) {
    values[op.getResult()] = emit("scalar", {}, t, {}, *scalar);
    return success();
  }
  if (auto dense = dyn_cast<SplatElementsAttr>(value)) {
    if (auto scalar = number(dense.getSplatValue<Attribute>())) {
      values[op.getResult()] = emit("full", {}, t, {}, *scalar);
      return success();
    }
  }
  return fail(op, "with a non-splat tensor value must be a kernel operand");
}

LogicalResult Builder::translateFill(linalg::FillOp op) {
  auto scalar = get(op.getInputs()[0]);
  if (!scalar)
    return fail(op, error);
  TensorType t = *tensorType(op.getResult(0));
  if (auto c = constantOf(*scalar))
    values[op.getResult(0)] = emit("full", {}, t, {}, *c);
  else
    values[op.getResult(0)] = expand(castTo(*scalar, t.dtype), t.shape);
  return success();
}

std::optional<int> Builder::combineWithInit(Value init, int result,
                                            double identity,
                                            StringRef combine) {
  if (empties.count(init) && !values.count(init))
    return result; // an uninitialized destination contributes nothing
  auto initId = get(init);
  if (!initId)
    return std::nullopt;
  if (auto c = constantOf(*initId); c && *c == identity)
    return result;
  return emit(combine.str(), {*initId, result}, type(result));
}

LogicalResult Builder::translateContraction(linalg::LinalgOp op) {
  TensorType out = *tensorType(op->getResult(0));
  auto a = get(op.getDpsInputOperand(0)->get());
  auto b = get(op.getDpsInputOperand(1)->get());
  if (!a || !b)
    return fail(op, error);
  // linalg casts operands to the accumulator type before multiplying.
  int product = emit("matmul", {castTo(*a, out.dtype), castTo(*b, out.dtype)}, out);
  auto result = combineWithInit(op.getDpsInits()[0], product, 0.0, "add");
  if (!result)
    return fail(op, error);
  values[op->getResult(0)] = *result;
  return success();
}

static std::vector<int64_t> denseInts(Attribute attr, size_t rank) {
  std::vector<int64_t> v;
  if (auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr))
    for (const APInt &x : dense)
      v.push_back(x.getSExtValue());
  if (v.empty())
    v.assign(rank, 1);
  return v;
}

LogicalResult Builder::translateConvolution(linalg::LinalgOp op) {
  TensorType out = *tensorType(op->getResult(0));
  auto x = get(op.getDpsInputOperand(0)->get());
  auto w = get(op.getDpsInputOperand(1)->get());
  if (!x || !w)
    return fail(op, error);
  size_t spatial = type(*x).shape.size() - 2;
  std::vector<int64_t> stride = denseInts(op->getAttr("strides"), spatial);
  std::vector<int64_t> dilation = denseInts(op->getAttr("dilations"), spatial);
  int weight = castTo(*w, out.dtype);
  int64_t groups = 1;
  if (isa<linalg::DepthwiseConv2DNchwChwOp>(op)) {
    // [C, KH, KW] -> [C, 1, KH, KW] with one group per channel.
    std::vector<int64_t> shape = type(weight).shape;
    groups = shape[0];
    shape.insert(shape.begin() + 1, 1);
    weight = reshape(weight, shape);
  }
  int conv = emit("conv", {castTo(*x, out.dtype), weight}, out,
                  {{"stride", stride},
                   {"padding", std::vector<int64_t>(spatial, 0)},
                   {"dilation", dilation},
                   {"groups", {groups}}});
  auto result = combineWithInit(op.getDpsInits()[0], conv, 0.0, "add");
  if (!result)
    return fail(op, error);
  values[op->getResult(0)] = *result;
  return success();
}

LogicalResult Builder::translatePooling(linalg::LinalgOp op, StringRef fn,
                                        double identity, StringRef combine) {
  TensorType out = *tensorType(op->getResult(0));
  auto x = get(op.getDpsInputOperand(0)->get());
  if (!x)
    return fail(op, error);
  // The second input only carries the window shape.
  auto window = mlir::cast<ShapedType>(op.getDpsInputOperand(1)->get().getType());
  size_t spatial = window.getRank();
  std::vector<int64_t> stride = denseInts(op->getAttr("strides"), spatial);
  std::vector<int64_t> dilation = denseInts(op->getAttr("dilations"), spatial);
  std::map<std::string, std::vector<int64_t>> ints = {
      {"kernel", toStd(window.getShape())},
      {"stride", stride},
      {"padding", std::vector<int64_t>(spatial, 0)}};
  if (fn == "max_pool")
    ints["dilation"] = dilation;
  else if (llvm::any_of(dilation, [](int64_t d) { return d != 1; }))
    return fail(op, "with dilation has no torch pooling equivalent");
  int pooled = emit(fn.str(), {castTo(*x, out.dtype)}, out, ints);
  auto result = combineWithInit(op.getDpsInits()[0], pooled, identity, combine);
  if (!result)
    return fail(op, error);
  values[op->getResult(0)] = *result;
  return success();
}

LogicalResult Builder::translateBroadcast(linalg::BroadcastOp op) {
  auto in = get(op.getInput());
  if (!in)
    return fail(op, error);
  TensorType out = *tensorType(op.getResult()[0]);
  // Insert a unit dim at each broadcast dimension, then expand.
  std::vector<int64_t> shape = out.shape;
  for (int64_t d : op.getDimensions())
    shape[d] = 1;
  values[op.getResult()[0]] = expand(reshape(*in, shape), out.shape);
  return success();
}

std::optional<int> Builder::toIterationSpace(Operation *op, int id,
                                             AffineMap map,
                                             ArrayRef<int64_t> loops) {
  std::vector<int64_t> shape = type(id).shape;
  std::vector<int64_t> dims, kept;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (llvm::is_contained(dims, dim.getPosition())) {
        (void)fail(op, "reads a diagonal (a loop dim twice in one map)");
        return std::nullopt;
      }
      dims.push_back(dim.getPosition());
      kept.push_back(shape[j]);
    } else if (auto c = dyn_cast<AffineConstantExpr>(expr);
               c && c.getValue() == 0 && shape[j] == 1) {
      continue; // a unit dim indexed by 0: squeeze it
    } else {
      (void)fail(op, "has an indexing map that is not a projected permutation");
      return std::nullopt;
    }
  }
  id = reshape(id, kept);
  std::vector<int64_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  llvm::sort(order, [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
  id = permute(id, order);
  std::vector<int64_t> full(loops.size(), 1);
  for (int64_t d : dims)
    full[d] = loops[d];
  return reshape(id, full);
}

std::optional<int> Builder::toTensorLayout(Operation *op, int id,
                                           ArrayRef<int64_t> dimsOfValue,
                                           AffineMap outMap,
                                           const TensorType &outType) {
  std::vector<int64_t> order;
  for (AffineExpr expr : outMap.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      auto it = llvm::find(dimsOfValue, dim.getPosition());
      if (it == dimsOfValue.end()) {
        (void)fail(op, "writes through a map that reads a reduced loop dim");
        return std::nullopt;
      }
      order.push_back(it - dimsOfValue.begin());
    } else if (!isa<AffineConstantExpr>(expr)) {
      (void)fail(op, "has an output map that is not a projected permutation");
      return std::nullopt;
    }
  }
  if (order.size() != dimsOfValue.size()) {
    (void)fail(op, "has a parallel loop dim that its output does not index");
    return std::nullopt;
  }
  return reshape(permute(id, order), outType.shape);
}

LogicalResult Builder::translateStructured(linalg::LinalgOp op) {
  SmallVector<int64_t> loopRanges = op.getStaticLoopRanges();
  if (llvm::any_of(loopRanges, ShapedType::isDynamic))
    return fail(op, "has dynamic loop bounds");
  std::vector<int64_t> loops(loopRanges.begin(), loopRanges.end());
  auto iterators = op.getIteratorTypesArray();
  std::vector<int64_t> reduced, parallel;
  for (auto [d, it] : llvm::enumerate(iterators))
    (it == utils::IteratorType::reduction ? reduced : parallel).push_back(d);
  Block *body = op.getBlock();
  Operation *terminator = body->getTerminator();

  llvm::DenseMap<Value, int> scalars;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (arg.use_empty())
      continue;
    auto id = get(input->get());
    if (!id)
      return fail(op, error);
    if (isa<ShapedType>(input->get().getType())) {
      auto view = toIterationSpace(op, *id, op.getMatchingIndexingMap(input), loops);
      if (!view)
        return failure();
      id = view;
    }
    scalars[arg] = *id;
  }

  for (OpResult result : op->getResults()) {
    if (result.use_empty())
      continue; // e.g. the unused argmax of a max reduction
    unsigned r = result.getResultNumber();
    OpOperand *init = op.getDpsInitOperand(r);
    BlockArgument acc = op.getMatchingBlockArgument(init);
    AffineMap outMap = op.getMatchingIndexingMap(init);
    TensorType outType = *tensorType(result);
    Value yielded = terminator->getOperand(r);

    if (reduced.empty()) {
      if (!acc.use_empty()) {
        auto id = get(init->get());
        if (!id)
          return fail(op, error);
        auto view = toIterationSpace(op, *id, outMap, loops);
        if (!view)
          return failure();
        scalars[acc] = *view;
      }
      auto e = translatePayload(op, yielded, scalars);
      if (!e)
        return failure();
      int full = expand(castTo(*e, outType.dtype), loops);
      std::vector<int64_t> all(loops.size());
      for (size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<int64_t>(i);
      auto laid = toTensorLayout(op, full, all, outMap, outType);
      if (!laid)
        return failure();
      values[result] = *laid;
      continue;
    }

    // A reduction: the yield must combine the accumulator with an expression
    // of the inputs alone.
    Operation *combiner = yielded.getDefiningOp();
    if (!combiner || combiner->getBlock() != body ||
        combiner->getNumOperands() != 2)
      return fail(op, "has a reduction payload without a combiner");
    Value other;
    if (combiner->getOperand(0) == acc)
      other = combiner->getOperand(1);
    else if (combiner->getOperand(1) == acc)
      other = combiner->getOperand(0);
    else
      return fail(op, "has a reduction payload that does not accumulate");
    StringRef reduceFn, combineFn;
    double identity;
    const double inf = std::numeric_limits<double>::infinity();
    if (isa<arith::AddFOp, arith::AddIOp>(combiner)) {
      reduceFn = "sum", combineFn = "add", identity = 0;
    } else if (isa<arith::MulFOp, arith::MulIOp>(combiner)) {
      reduceFn = "prod", combineFn = "mul", identity = 1;
    } else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combiner)) {
      reduceFn = "amax", combineFn = "maximum", identity = -inf;
    } else if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combiner)) {
      reduceFn = "amin", combineFn = "minimum", identity = inf;
    } else {
      return fail(op, "reduces with '" +
                          combiner->getName().getStringRef() +
                          "', which has no torch reduction");
    }
    auto e = translatePayload(op, other, scalars);
    if (!e)
      return failure();
    int full = expand(castTo(*e, outType.dtype), loops);
    std::vector<int64_t> keptShape;
    for (int64_t d : parallel)
      keptShape.push_back(loops[d]);
    int reducedId = emit(reduceFn.str(), {full}, TensorType{keptShape, outType.dtype},
                         {{"dims", reduced}});
    auto laid = toTensorLayout(op, reducedId, parallel, outMap, outType);
    if (!laid)
      return failure();
    auto combined = combineWithInit(init->get(), *laid, identity, combineFn);
    if (!combined)
      return fail(op, error);
    values[result] = *combined;
  }
  return success();
}

std::optional<int>
Builder::translatePayload(Operation *owner, Value value,
                          llvm::DenseMap<Value, int> &scalars) {
  if (auto it = scalars.find(value); it != scalars.end())
    return it->second;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner()->getParentOp() == owner) {
      (void)fail(owner, "reads its accumulator outside the combiner");
      return std::nullopt;
    }
  }
  Operation *def = value.getDefiningOp();
  if (!def || !owner->isProperAncestor(def)) {
    // Captured from the enclosing region: a constant defined before.
    auto id = get(value);
    if (!id)
      (void)fail(owner, error);
    return id;
  }
  auto id = translatePayloadOp(owner, def, scalars);
  if (id)
    scalars[value] = *id;
  return id;
}

std::optional<int>
Builder::translatePayloadOp(Operation *owner, Operation *op,
                            llvm::DenseMap<Value, int> &scalars) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0) {
    (void)fail(owner, "has a payload op '" + op->getName().getStringRef() +
                          "' with no torch equivalent");
    return std::nullopt;
  }
  auto resultDType = toDType(op->getResult(0).getType());
  if (!resultDType) {
    (void)fail(owner, "computes a payload value of a type with no torch dtype");
    return std::nullopt;
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (failed(translateConstant(c))) {
      (void)fail(owner, error);
      return std::nullopt;
    }
    return values[c.getResult()];
  }
  std::vector<int> args;
  for (Value operand : op->getOperands()) {
    auto id = translatePayload(owner, operand, scalars);
    if (!id)
      return std::nullopt;
    args.push_back(*id);
  }
  auto shapeOf = [&](const std::vector<int> &ids) {
    std::vector<int64_t> shape;
    for (int id : ids)
      shape = broadcastShape(shape, type(id).shape);
    return shape;
  };
  auto make = [&](StringRef fn, std::vector<int> ids) {
    return emit(fn.str(), ids, TensorType{shapeOf(ids), *resultDType});
  };
  auto logicalNot = [&](int id) {
    return emit("logical_not", {id}, TensorType{type(id).shape, DType::Bool});
  };

  // Elementwise arithmetic with a direct torch call.
  static const llvm::StringMap<StringRef> direct = {
      {"arith.addf", "add"},      {"arith.addi", "add"},
      {"arith.subf", "sub"},      {"arith.subi", "sub"},
      {"arith.mulf", "mul"},      {"arith.muli", "mul"},
      {"arith.divf", "div"},      {"arith.remf", "remainder"},
      {"arith.maximumf", "maximum"}, {"arith.maxnumf", "maximum"},
      {"arith.maxsi", "maximum"}, {"arith.minimumf", "minimum"},
      {"arith.minnumf", "minimum"}, {"arith.minsi", "minimum"},
      {"arith.negf", "neg"},      {"math.exp", "exp"},
      {"math.exp2", "exp2"},      {"math.log", "log"},
      {"math.log1p", "log1p"},    {"math.expm1", "expm1"},
      {"math.tanh", "tanh"},      {"math.sqrt", "sqrt"},
      {"math.rsqrt", "rsqrt"},    {"math.erf", "erf"},
      {"math.absf", "abs"},       {"math.absi", "abs"},
      {"math.sin", "sin"},        {"math.cos", "cos"},
      {"math.tan", "tan"},        {"math.floor", "floor"},
      {"math.ceil", "ceil"},      {"math.roundeven", "round"},
      {"math.trunc", "trunc"},    {"math.powf", "pow"},
      {"math.atan2", "atan2"},    {"arith.select", "where"},
      {"math.fpowi", "pow"},      {"math.ipowi", "pow"},
  };
  StringRef name = op->getName().getStringRef();
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    // select(a >u b, a, b) is max(a, b) and select(a <u b, a, b) min(a, b)
    // when b is not NaN: how torch-mlir spells relu and clamp. Unordered
    // predicates keep a NaN in `a`, as torch.maximum does.
    auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
    if (cmp && cmp.getLhs() == select.getTrueValue() &&
        cmp.getRhs() == select.getFalseValue()) {
      auto b = constantOf(args[2]);
      using P = arith::CmpFPredicate;
      if (b && !std::isnan(*b)) {
        if (cmp.getPredicate() == P::UGT || cmp.getPredicate() == P::UGE)
          return make("maximum", {args[1], args[2]});
        if (cmp.getPredicate() == P::ULT || cmp.getPredicate() == P::ULE)
          return make("minimum", {args[1], args[2]});
      }
    }
  }
  if (auto it = direct.find(name); it != direct.end()) {
    if (it->second == "where") {
      std::vector<int64_t> shape = shapeOf(args);
      return emit("where", args, TensorType{shape, *resultDType});
    }
    return make(it->second, args);
  }
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::FPToSIOp,
          arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp>(op))
    return castTo(args[0], *resultDType);
  if (isa<arith::ExtUIOp, arith::UIToFPOp>(op) &&
      op->getOperand(0).getType().isInteger(1))
    return castTo(args[0], *resultDType); // bool -> 0/1 is what torch does
  if (isa<math::FmaOp>(op)) {
    int product = make("mul", {args[0], args[1]});
    return make("add", {product, args[2]});
  }
  if (auto andOp = dyn_cast<arith::AndIOp>(op); andOp && *resultDType == DType::Bool)
    return make("logical_and", args);
  if (auto orOp = dyn_cast<arith::OrIOp>(op); orOp && *resultDType == DType::Bool)
    return make("logical_or", args);
  if (auto xorOp = dyn_cast<arith::XOrIOp>(op); xorOp && *resultDType == DType::Bool) {
    // x ^ true is `not x`; the general xor has no exact spelling here.
    for (int i = 0; i < 2; ++i)
      if (auto c = constantOf(args[i]); c && *c != 0)
        return logicalNot(args[1 - i]);
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    // Ordered predicates are torch's comparisons (false on NaN); unordered
    // ones are the negation of the opposite ordered one (true on NaN).
    using P = arith::CmpFPredicate;
    switch (cmp.getPredicate()) {
    case P::OGT: return make("gt", args);
    case P::OGE: return make("ge", args);
    case P::OLT: return make("lt", args);
    case P::OLE: return make("le", args);
    case P::OEQ: return make("eq", args);
    case P::UNE: return make("ne", args);
    case P::UGT: return logicalNot(make("le", args));
    case P::UGE: return logicalNot(make("lt", args));
    case P::ULT: return logicalNot(make("ge", args));
    case P::ULE: return logicalNot(make("gt", args));
    default: break;
    }
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    switch (cmp.getPredicate()) {
    case P::sgt: return make("gt", args);
    case P::sge: return make("ge", args);
    case P::slt: return make("lt", args);
    case P::sle: return make("le", args);
    case P::eq: return make("eq", args);
    case P::ne: return make("ne", args);
    default: break;
    }
  }
  (void)fail(owner, "has a payload op '" + name + "' with no exact torch equivalent");
  return std::nullopt;
}

LogicalResult Builder::translateTensorOp(Operation *op) {
  auto in = get(op->getOperand(0));
  if (!in)
    return fail(op, error);
  TensorType out = *tensorType(op->getResult(0));
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(op)) {
    values[op->getResult(0)] = reshape(*in, out.shape);
    return success();
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    if (!pad.getLow().empty() || !pad.getHigh().empty())
      return fail(op, "has dynamic padding");
    Value padValue = pad.getConstantPaddingValue();
    std::optional<double> v;
    if (padValue)
      if (auto id = values.find(padValue); id != values.end())
        v = constantOf(id->second);
    if (!v)
      return fail(op, "pads with a value that is not a constant");
    values[pad.getResult()] =
        emit("pad", {*in}, out,
             {{"low", toStd(pad.getStaticLow())},
              {"high", toStd(pad.getStaticHigh())}},
             *v);
    return success();
  }
  auto staticSlice = [&](auto sliceOp, std::map<std::string, std::vector<int64_t>> &ints) {
    for (auto [key, values] :
         {std::pair{"offsets", sliceOp.getStaticOffsets()},
          std::pair{"sizes", sliceOp.getStaticSizes()},
          std::pair{"strides", sliceOp.getStaticStrides()}}) {
      if (llvm::any_of(values, ShapedType::isDynamic))
        return false;
      ints[key] = toStd(values);
    }
    return true;
  };
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    std::map<std::string, std::vector<int64_t>> ints;
    if (!staticSlice(slice, ints))
      return fail(op, "has dynamic offsets, sizes or strides");
    int sliced = emit("slice", {*in}, TensorType{ints["sizes"], out.dtype}, ints);
    values[slice.getResult()] = reshape(sliced, out.shape); // rank-reducing
    return success();
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    std::map<std::string, std::vector<int64_t>> ints;
    if (!staticSlice(insert, ints))
      return fail(op, "has dynamic offsets, sizes or strides");
    auto dest = get(insert.getDest());
    if (!dest)
      return fail(op, error);
    values[insert.getResult()] = emit("insert_slice", {*in, *dest}, out, ints);
    return success();
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    std::vector<int> args;
    for (Value v : concat.getInputs()) {
      auto id = get(v);
      if (!id)
        return fail(op, error);
      args.push_back(*id);
    }
    values[concat.getResult()] =
        emit("cat", args, out, {{"dim", {static_cast<int64_t>(concat.getDim())}}});
    return success();
  }
  return fail(op, "has no reference rendering");
}

} // namespace

/// Drops ops no output depends on (a fill that a matmul's identity init
/// made unnecessary, a comparison a peephole replaced) and renumbers.
static ReferenceProgram pruneDeadOps(const ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  std::vector<bool> live(numInputs + program.ops.size(), false);
  for (int out : program.outputs)
    live[out] = true;
  for (int i = static_cast<int>(program.ops.size()) - 1; i >= 0; --i)
    if (live[numInputs + i])
      for (int a : program.ops[i].args)
        live[a] = true;
  ReferenceProgram pruned;
  pruned.inputs = program.inputs;
  std::vector<int> renumber(live.size(), -1);
  for (int i = 0; i < numInputs; ++i)
    renumber[i] = i;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (!live[numInputs + i])
      continue;
    RefOp op = program.ops[i];
    for (int &a : op.args)
      a = renumber[a];
    renumber[numInputs + i] = pruned.add(std::move(op));
  }
  for (int out : program.outputs)
    pruned.outputs.push_back(renumber[out]);
  return pruned;
}

std::optional<ReferenceProgram>
buildOpProgram(Operation *op, SmallVectorImpl<Value> &inputs,
               SmallVectorImpl<Value> &outputs, std::string &whyNot) {
  // The op alone, its operands standing in as inputs; the constants it
  // reads or captures in its payload come along. Inputs first: value
  // numbers of ops follow the inputs.
  Builder builder;
  SmallVector<Operation *> constants;
  llvm::DenseSet<Value> seen;
  for (Value operand : op->getOperands()) {
    if (!seen.insert(operand).second)
      continue;
    // Scalars, splats and empties are part of the op; a weight is an input.
    Operation *def = operand.getDefiningOp();
    auto constant = dyn_cast_or_null<arith::ConstantOp>(def);
    bool weight = constant && isa<ElementsAttr>(constant.getValue()) &&
                  !isa<SplatElementsAttr>(constant.getValue());
    if (def && !weight && isa<arith::ConstantOp, tensor::EmptyOp>(def)) {
      constants.push_back(def);
      continue;
    }
    if (failed(builder.addInput(operand))) {
      whyNot = "'" + op->getName().getStringRef().str() + "' operand: " +
               builder.error;
      return std::nullopt;
    }
    inputs.push_back(operand);
  }
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value value : captured)
    if (auto c = value.getDefiningOp<arith::ConstantOp>())
      constants.push_back(c);
  for (Operation *constant : constants)
    if (failed(builder.translate(constant))) {
      whyNot = builder.error;
      return std::nullopt;
    }
  if (failed(builder.translate(op))) {
    whyNot = builder.error;
    return std::nullopt;
  }
  for (Value result : op->getResults()) {
    if (result.use_empty())
      continue;
    if (failed(builder.addOutput(result))) {
      whyNot = builder.error;
      return std::nullopt;
    }
    outputs.push_back(result);
  }
  return pruneDeadOps(builder.program);
}

std::optional<std::string> whyNotRenderable(Operation *op) {
  SmallVector<Value> inputs, outputs;
  std::string whyNot;
  if (!buildOpProgram(op, inputs, outputs, whyNot))
    return whyNot;
  return std::nullopt;
}

std::optional<ReferenceProgram> buildReferenceProgram(Region &region,
                                                      std::string &whyNot) {
  Builder builder;
  Block &block = region.front();
  for (BlockArgument arg : block.getArguments())
    if (failed(builder.addInput(arg))) {
      whyNot = builder.error;
      return std::nullopt;
    }
  for (Operation &op : block.without_terminator())
    if (failed(builder.translate(&op))) {
      whyNot = builder.error;
      return std::nullopt;
    }
  for (Value result : block.getTerminator()->getOperands())
    if (failed(builder.addOutput(result))) {
      whyNot = builder.error;
      return std::nullopt;
    }
  builder.program = pruneDeadOps(builder.program);
  std::string invalid = builder.program.validate();
  if (!invalid.empty()) {
    whyNot = "internal error: " + invalid;
    return std::nullopt;
  }
  return std::move(builder.program);
}

} // namespace dice
