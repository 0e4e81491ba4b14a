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

#include "dice/Reference/ReferenceBuilder.h"
#include "dice/Reference/RaiseCompoundOps.h"
#include "dice/Reference/DynamicSizes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
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

bool isNumberComputation(Operation *op) {
  auto isNumber = [](Type type) { return type.isIntOrFloat(); };
  return op->getNumRegions() == 0 && op->getNumResults() == 1 &&
         isNumber(op->getResult(0).getType()) &&
         llvm::all_of(op->getOperandTypes(), isNumber) && isMemoryEffectFree(op);
}

namespace {

std::vector<int64_t> toStd(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

static unsigned bitWidth(DType dtype) {
  switch (dtype) {
  case DType::Int64: return 64;
  case DType::Int32: return 32;
  case DType::Int16: return 16;
  case DType::Int8: return 8;
  default: return 0;
  }
}

class Builder {
public:
  ReferenceProgram program;
  std::string error;

  /// `sizes` says which dynamic dimensions of the values met are the same.
  explicit Builder(DynamicSizes &sizes) : sizes(sizes) {}

  /// Binds a region argument (or any outside value) to a new program input.
  /// Its dynamic dimensions become size symbols (one per class of equal
  /// sizes) whose examples `exampleShape` gives, where it has them.
  LogicalResult addInput(Value value, ArrayRef<int64_t> exampleShape = {}) {
    if (!program.ops.empty()) {
      error = "internal error: an input added after the first op";
      return failure();
    }
    if (auto tensor = dyn_cast<RankedTensorType>(value.getType()))
      for (unsigned d = 0; d < tensor.getRank(); ++d)
        if (tensor.isDynamicDim(d))
          bindInputSize(value, d,
                        d < exampleShape.size() && exampleShape[d] > 0 ? exampleShape[d]
                                                                       : kDefaultExampleSize);
    auto type = tensorType(value);
    if (!type)
      return failure();
    values[value] = static_cast<int>(program.inputs.size());
    inputValues.push_back(value);
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
  DynamicSizes &sizes;
  /// The size symbol (symbolicSize) of each class of equal dynamic sizes met
  /// so far, and of each multiple of one.
  llvm::DenseMap<int, int64_t> symbolOfClass;
  std::map<std::pair<int64_t, int64_t>, int64_t> multiples;
  /// Dimensions of inputs that no op relates to anything: a symbol each.
  llvm::DenseMap<std::pair<Value, unsigned>, int64_t> looseInputSizes;
  llvm::DenseMap<Value, int> values;
  /// tensor.empty results: materialized (as zeros) only if something reads
  /// them, since most are only destinations.
  llvm::DenseMap<Value, TensorType> empties;
  /// Constants (and fills of them) a double cannot hold, such as int64's
  /// extremes: an error only if something reads them, since most are the
  /// identity init of a min/max reduction, which the program leaves out.
  llvm::DenseMap<Value, std::string> unrepresentable;
  /// The values bound to the program's inputs, in input order.
  std::vector<Value> inputValues;

  LogicalResult fail(Operation *op, const Twine &why) {
    error = ("'" + op->getName().getStringRef() + "' " + why).str();
    return failure();
  }

  int64_t newSymbol(int64_t example, int base = -1, int64_t factor = 1) {
    program.symbols.push_back(SizeSymbol{example, base, factor});
    return symbolicSize(static_cast<int>(program.symbols.size() - 1));
  }

  void bindInputSize(Value value, unsigned dim, int64_t example) {
    std::optional<int> cls = sizes.classOf(value, dim);
    if (!cls) {
      looseInputSizes[{value, dim}] = newSymbol(example);
      return;
    }
    if (symbolOfClass.count(*cls))
      return;
    DynamicSizes::Size size = sizes.resolve(*cls);
    if (size.staticSize)
      return;
    if (size.base >= 0) {
      // A multiple of a size (a flattened batch): the size itself is the
      // symbol, bound through this dimension; the multiple derives from it.
      if (!symbolOfClass.count(size.base))
        symbolOfClass[size.base] = newSymbol(std::max<int64_t>(1, example / size.factor));
      return;
    }
    symbolOfClass[*cls] = newSymbol(example);
  }

  /// Dimension `dim` of `value`: static, or the size symbol of its class.
  std::optional<int64_t> dynamicSize(Value value, unsigned dim) {
    if (auto it = looseInputSizes.find({value, dim}); it != looseInputSizes.end())
      return it->second;
    std::optional<int> cls = sizes.classOf(value, dim);
    if (!cls)
      return std::nullopt;
    if (auto it = symbolOfClass.find(*cls); it != symbolOfClass.end())
      return it->second;
    DynamicSizes::Size size = sizes.resolve(*cls);
    if (size.staticSize)
      return *size.staticSize;
    if (size.base < 0)
      return std::nullopt;
    auto base = symbolOfClass.find(size.base);
    if (base == symbolOfClass.end())
      return std::nullopt;
    return multipleOf(base->second, size.factor);
  }

  /// The size `factor` times free symbol `size` (symbolicSize), as a
  /// symbol derived from it; nullopt for a multiple of a multiple, which
  /// the program does not keep.
  std::optional<int64_t> multipleOf(int64_t size, int64_t factor) {
    int baseSymbol = symbolOfSize(size);
    if (program.symbols[baseSymbol].base >= 0)
      return std::nullopt;
    if (factor == 1)
      return size;
    auto [it, inserted] = multiples.try_emplace({size, factor}, 0);
    if (inserted)
      it->second = newSymbol(program.symbols[baseSymbol].example * factor, baseSymbol, factor);
    return it->second;
  }

  std::optional<TensorType> tensorType(Value value) {
    Type type = value.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      std::vector<int64_t> shape = toStd(tensor.getShape());
      for (unsigned d = 0; d < shape.size(); ++d) {
        if (!tensor.isDynamicDim(d))
          continue;
        std::optional<int64_t> size = dynamicSize(value, d);
        if (!size) {
          error = "dynamic dimension " + std::to_string(d) + " of " + typeString(type) +
                  " is a size none of the inputs has";
          return std::nullopt;
        }
        shape[d] = *size;
      }
      auto dtype = toDType(tensor.getElementType());
      if (!dtype) {
        error = "element type " + typeString(tensor.getElementType()) +
                " has no torch dtype";
        return std::nullopt;
      }
      return TensorType{shape, *dtype};
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
    if (auto it = unrepresentable.find(value); it != unrepresentable.end()) {
      error = it->second;
      return std::nullopt;
    }
    if (auto it = empties.find(value); it != empties.end()) {
      RefOp zeros{RefFn::Full, {}, {}, 0, it->second};
      int id = program.add(zeros);
      values[value] = id;
      return id;
    }
    // A size computed outside (the batch of an attention's heads divided
    // back out of a flattened dim): read from an input that has it.
    if (value.getType().isIndex())
      if (std::optional<int> size = sizeFromInputs(value)) {
        values[value] = *size;
        return *size;
      }
    error = "a value is used before it is defined in the reference program";
    return std::nullopt;
  }

  /// An index value that DynamicSizes relates to a dimension of an input
  /// (`times / per` of a class of sizes), as a 0-d int64 value of the
  /// program: that dimension's size, scaled by constants.
  std::optional<int> sizeFromInputs(Value value) {
    std::optional<DynamicSizes::SizeExpr> expr = sizes.sizeExpr(value);
    if (!expr)
      return std::nullopt;
    auto [root, factor] = sizes.rootOf(expr->cls);
    int64_t num = factor * expr->times, den = expr->per;
    for (Value input : inputValues) {
      auto tensor = dyn_cast<RankedTensorType>(input.getType());
      for (unsigned d = 0; tensor && d < tensor.getRank(); ++d) {
        std::optional<int> cls = tensor.isDynamicDim(d) ? sizes.classOf(input, d) : std::nullopt;
        if (!cls)
          continue;
        auto [inputRoot, inputFactor] = sizes.rootOf(*cls);
        if (inputRoot != root)
          continue;
        // size = dim * num / (den * inputFactor), in exact integer steps.
        int id = dimSize(values[input], d);
        int64_t divisor = den * inputFactor;
        if (num % divisor == 0)
          return scaleSize(id, num / divisor, RefFn::Mul);
        return scaleSize(scaleSize(id, num, RefFn::Mul), divisor, RefFn::DivTrunc);
      }
    }
    return std::nullopt;
  }

  /// `fn(id, k)` for an int64 size `id`; `id` itself when k is 1.
  int scaleSize(int id, int64_t k, RefFn fn) {
    if (k == 1)
      return id;
    int constant = emit(RefFn::Scalar, {}, TensorType{{}, DType::Int64}, {}, static_cast<double>(k));
    return emit(fn, {id, constant}, TensorType{{}, DType::Int64});
  }

  const TensorType &type(int id) const { return program.typeOf(id); }
  const RefOp *opOf(int id) const {
    int n = static_cast<int>(program.inputs.size());
    return id >= n ? &program.ops[id - n] : nullptr;
  }
  /// The constant that value `id` holds everywhere, if it is a full/scalar.
  std::optional<double> constantOf(int id) const {
    const RefOp *op = opOf(id);
    if (op && (op->fn == RefFn::Full || op->fn == RefFn::Scalar))
      return op->value;
    return std::nullopt;
  }

  int emit(RefFn fn, std::vector<int> args, TensorType result,
           std::map<std::string, std::vector<int64_t>> ints = {},
           double value = 0) {
    return program.add(RefOp{fn, std::move(args), std::move(ints),
                             value, std::move(result)});
  }

  /// Dimension `dim` of value `id` as a 0-d int64 value (a size a payload
  /// reads).
  int dimSize(int id, int64_t dim) {
    return emit(RefFn::DimSize, {id}, TensorType{{}, DType::Int64}, {{"dim", {dim}}});
  }

  int reshape(int id, const std::vector<int64_t> &shape) {
    if (type(id).shape == shape)
      return id;
    return emit(RefFn::Reshape, {id}, TensorType{shape, type(id).dtype});
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
    return emit(RefFn::Permute, {id}, TensorType{shape, t.dtype}, {{"dims", dims}});
  }

  int expand(int id, const std::vector<int64_t> &shape) {
    TensorType t = type(id);
    if (t.shape == shape)
      return id;
    if (t.shape.size() != shape.size())
      id = reshape(id, std::vector<int64_t>(shape.size(), 1));
    return emit(RefFn::Expand, {id}, TensorType{shape, t.dtype});
  }

  int castTo(int id, DType dtype) {
    if (type(id).dtype == dtype)
      return id;
    return emit(RefFn::To, {id}, TensorType{type(id).shape, dtype});
  }

  static std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a,
                                             const std::vector<int64_t> &b) {
    std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
      int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
      // A size symbol is never 1 where it meets another size (the loops tie
      // both to one extent), so a broadcast keeps the other side.
      out[i] = x == 1 ? y : y == 1 ? x : isSymbolicSize(x) ? y : x;
    }
    return out;
  }

  /// The result type torch's windowed op (conv, pooling) gives for input
  /// `x`: every window that fits. linalg computes only the windows its
  /// output holds, which may be fewer (torch-mlir pads a ceil-mode pooling's
  /// input so far that the last windows would start in the padding).
  TensorType windowedType(int x, const TensorType &out,
                          const std::vector<int64_t> &kernel,
                          const std::vector<int64_t> &stride,
                          const std::vector<int64_t> &dilation) const {
    TensorType natural = out;
    const std::vector<int64_t> &in = type(x).shape;
    size_t first = in.size() - kernel.size();
    for (size_t d = 0; d < kernel.size(); ++d)
      if (!isSymbolicSize(in[first + d])) // a dynamic window count stays as linalg says
        natural.shape[first + d] =
          (in[first + d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
    return natural;
  }

  /// The leading windows of a windowed op's result, as many as `shape` has.
  int firstWindows(int id, const std::vector<int64_t> &shape) {
    const TensorType &t = type(id);
    if (t.shape == shape)
      return id;
    return emit(RefFn::Slice, {id}, TensorType{shape, t.dtype},
                {{"offsets", std::vector<int64_t>(shape.size(), 0)},
                 {"sizes", shape},
                 {"strides", std::vector<int64_t>(shape.size(), 1)}});
  }

  /// Whether `init` is a fill with the integer identity of `combine`:
  /// the signed extremes of its width for maximum/minimum (int64's are no
  /// doubles), 0 for add, 1 for mul.
  static bool isIntegerIdentity(Value init, RefFn combine) {
    auto fill = init.getDefiningOp<linalg::FillOp>();
    if (!fill)
      return false;
    auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
    auto attr = c ? dyn_cast<IntegerAttr>(c.getValue()) : IntegerAttr();
    if (!attr || attr.getType().isInteger(1))
      return false;
    const APInt &v = attr.getValue();
    unsigned width = v.getBitWidth();
    if (combine == RefFn::Maximum)
      return v == APInt::getSignedMinValue(width);
    if (combine == RefFn::Minimum)
      return v == APInt::getSignedMaxValue(width);
    if (combine == RefFn::Add)
      return v.isZero();
    if (combine == RefFn::Mul)
      return v.isOne();
    return false;
  }

  /// Each loop's extent: static, or the size symbol of an operand
  /// dimension that the loop indexes.
  std::optional<std::vector<int64_t>> loopSizes(linalg::LinalgOp op) {
    std::vector<int64_t> loops(op.getNumLoops(), ShapedType::kDynamic);
    for (OpOperand &operand : op->getOpOperands()) {
      auto tensor = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!tensor)
        continue;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (auto [position, expr] : llvm::enumerate(map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        if (!dim || !ShapedType::isDynamic(loops[dim.getPosition()]))
          continue;
        if (!tensor.isDynamicDim(position))
          loops[dim.getPosition()] = tensor.getDimSize(position);
        else if (std::optional<int64_t> size = dynamicSize(operand.get(), position))
          loops[dim.getPosition()] = *size;
      }
    }
    if (llvm::any_of(loops, ShapedType::isDynamic))
      return std::nullopt;
    return loops;
  }

  LogicalResult translateConstant(arith::ConstantOp op);
  LogicalResult translateFill(linalg::FillOp op);
  LogicalResult translateContraction(linalg::LinalgOp op);
  LogicalResult translateConvolution(linalg::LinalgOp op);
  LogicalResult translatePooling(linalg::LinalgOp op, RefFn fn,
                                 double identity, RefFn combine,
                                 bool channelsLast = false);
  /// The pooling `fn` of `op`'s first input over windows of its second
  /// input's shape.
  LogicalResult pool(linalg::LinalgOp op, RefFn fn, double identity,
                     RefFn combine, bool channelsLast,
                     const std::vector<int64_t> &stride,
                     const std::vector<int64_t> &dilation);
  LogicalResult translateWindowGeneric(linalg::GenericOp op);
  /// `sum` plus the init of `op` (a convolution's: left out where it is
  /// zeros) as the op's result.
  LogicalResult accumulated(linalg::LinalgOp op, int sum) {
    auto result = combineWithInit(op.getDpsInits()[0], sum, 0.0, RefFn::Add);
    if (!result)
      return fail(op, error);
    values[op->getResult(0)] = *result;
    return success();
  }
  /// A grouped convolution written as a generic (torch-mlir's for 1-D and
  /// 3-D, which linalg has no named op for): x [N, G, C/G, S...] windowed
  /// by w [G, F/G, C/G, K...] into [N, G, F/G, O...], multiplied and summed.
  LogicalResult translateGroupedConvGeneric(linalg::GenericOp op);
  /// F.conv<k>d(x, w, groups=G) of x [N, G, C/G, S...] and w
  /// [G, F/G, C/G, K...], the groups folded into the channels and unfolded
  /// from the result [N, G, F/G, O...] (`out`).
  std::optional<int> groupedConvolution(Operation *op, int x, int w, const TensorType &out,
                                        const std::vector<int64_t> &stride,
                                        const std::vector<int64_t> &dilation);
  LogicalResult translateBroadcast(linalg::BroadcastOp op);
  LogicalResult translateStructured(linalg::LinalgOp op);
  LogicalResult translateTensorOp(Operation *op);
  /// torch-mlir's cumulative sum or product (tm_tensor.scan, of a dialect
  /// dice-opt does not register: read by name and attributes) as
  /// torch.cumsum or torch.cumprod; only where its semantics are theirs.
  LogicalResult translateScan(Operation *op);
  /// torch-mlir's scatter, index_put and index_add (tm_tensor.scatter, read
  /// by name) as Tensor.index_put, where updates go to whole trailing
  /// slices at leading index dimensions and the body overwrites or adds.
  LogicalResult translateScatter(Operation *op);
  /// torch-mlir's sort, topk and argsort (tm_tensor.sort, read by name): a
  /// stable torch.argsort of the first operand by the comparator's order,
  /// and each operand gathered along the sorted dim by it.
  LogicalResult translateSort(Operation *op);

  /// Adds `init` to a contraction/pooling result unless the init is the
  /// combiner's identity everywhere.
  std::optional<int> combineWithInit(Value init, int result, double identity,
                                     RefFn combine);

  // The general structured-op rule.
  std::optional<int> toIterationSpace(Operation *op, int id, AffineMap map,
                                      ArrayRef<int64_t> loops);
  std::optional<int> toTensorLayout(Operation *op, int id,
                                    ArrayRef<int64_t> dimsOfValue,
                                    AffineMap outMap,
                                    const TensorType &outType);
  LogicalResult translateUnsignedReduction(
      linalg::LinalgOp op, OpResult result, Operation *combiner, Value other,
      llvm::DenseMap<Value, int> &scalars, ArrayRef<int64_t> loops,
      ArrayRef<int64_t> reduced, ArrayRef<int64_t> parallel);
  LogicalResult translateIndexReduction(linalg::LinalgOp op, OpResult result,
                                        arith::SelectOp select,
                                        llvm::DenseMap<Value, int> &scalars,
                                        ArrayRef<int64_t> loops,
                                        ArrayRef<int64_t> reduced,
                                        ArrayRef<int64_t> parallel);
  std::optional<int> loopIndex(Operation *owner, unsigned dim);
  std::optional<int> gather(Operation *owner, tensor::ExtractOp extract,
                            ArrayRef<int> args);
  std::optional<int> translateIntegerOp(Operation *op, ArrayRef<int> args,
                                        DType result);
  int unsignedLess(int a, int b, bool orEqual);
  std::optional<int> asUnsigned(Operation *op, int id, DType wider);
  std::optional<int> translatePayload(Operation *owner, Value value,
                                      llvm::DenseMap<Value, int> &scalars);
  std::optional<int> translatePayloadOp(Operation *owner, Operation *op,
                                        llvm::DenseMap<Value, int> &scalars);
};

LogicalResult Builder::translate(Operation *op) {
  // Index arithmetic on sizes (a request reading a flattened size): the
  // size symbols carry what it computes.
  if (isa<arith::MulIOp, arith::DivSIOp, affine::AffineApplyOp>(op) &&
      llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); }))
    return success();
  for (Value result : op->getResults())
    if (!tensorType(result))
      return fail(op, "result: " + error);
  // The number a 0-d tensor holds (a scalar argument's, as a request takes
  // it): that tensor.
  if (auto extract = dyn_cast<tensor::ExtractOp>(op); extract && extract.getIndices().empty()) {
    auto in = get(extract.getTensor());
    if (!in)
      return fail(op, error);
    values[extract.getResult()] = *in;
    return success();
  }
  // Arithmetic on numbers (`n + 1` of a Python int) outside any payload:
  // the same ops on 0-d tensors as in one.
  if (!isa<arith::ConstantOp>(op) && isNumberComputation(op)) {
    llvm::DenseMap<Value, int> none;
    std::optional<int> id = translatePayloadOp(op, op, none);
    if (!id)
      return failure();
    values[op->getResult(0)] = *id;
    return success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::ConstantOp>([&](auto c) { return translateConstant(c); })
      .Case<tensor::DimOp>([&](tensor::DimOp dim) -> LogicalResult {
        // A size as a value (a payload compares with it): read from the
        // tensor at run time. A size only a destination uses costs nothing:
        // unread ops are pruned.
        std::optional<int64_t> index = dim.getConstantIndex();
        auto source = values.find(dim.getSource());
        if (index && source != values.end())
          values[dim.getResult()] = dimSize(source->second, *index);
        return success();
      })
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
            linalg::Conv3DNcdhwFcdhwOp, linalg::DepthwiseConv2DNchwChwOp,
            linalg::Conv2DNgchwGfchwOp>(
          [&](Operation *o) {
            return translateConvolution(mlir::cast<linalg::LinalgOp>(o));
          })
      .Case<linalg::PoolingNchwMaxOp, linalg::PoolingNcwMaxOp>(
          [&](Operation *o) {
            return translatePooling(mlir::cast<linalg::LinalgOp>(o), RefFn::MaxPool,
                                    -std::numeric_limits<double>::infinity(),
                                    RefFn::Maximum);
          })
      .Case<linalg::PoolingNchwSumOp, linalg::PoolingNcwSumOp>(
          [&](Operation *o) {
            return translatePooling(mlir::cast<linalg::LinalgOp>(o), RefFn::SumPool, 0.0,
                                    RefFn::Add);
          })
      // Channels last (torch-mlir's 3-D pooling): the same pooling between
      // two permutes.
      .Case<linalg::PoolingNdhwcMaxOp>([&](Operation *o) {
        return translatePooling(mlir::cast<linalg::LinalgOp>(o), RefFn::MaxPool,
                                -std::numeric_limits<double>::infinity(), RefFn::Maximum,
                                /*channelsLast=*/true);
      })
      .Case<linalg::PoolingNdhwcSumOp>([&](Operation *o) {
        return translatePooling(mlir::cast<linalg::LinalgOp>(o), RefFn::SumPool, 0.0, RefFn::Add,
                                /*channelsLast=*/true);
      })
      .Case<linalg::LinalgOp>([&](linalg::LinalgOp l) {
        // A pooling written as a generic renders as the pooling; the
        // translation fails without a word when the generic is not one.
        if (auto generic = dyn_cast<linalg::GenericOp>(l.getOperation())) {
          std::string before = error;
          if (succeeded(translateWindowGeneric(generic)) ||
              succeeded(translateGroupedConvGeneric(generic)))
            return success();
          error = before;
        }
        return translateStructured(l);
      })
      .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::PadOp,
            tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
            tensor::CastOp>([&](Operation *o) { return translateTensorOp(o); })
      .Default([&](Operation *o) {
        if (isReadForeignOp(o)) {
          StringRef name = o->getName().getStringRef();
          return name == "tm_tensor.scan"  ? translateScan(o)
                 : name == "tm_tensor.sort" ? translateSort(o)
                                            : translateScatter(o);
        }
        return fail(o, "has no reference rendering");
      });
}

/// The one op of a tm_tensor body that combines the body's two arguments,
/// in either order, and whose result the body yields; null for any other
/// body.
static Operation *combinerOfBothArguments(Block &body) {
  if (body.getNumArguments() != 2 || body.getOperations().size() != 2)
    return nullptr;
  Operation *step = &body.front();
  Operation *yield = body.getTerminator();
  Value a = body.getArgument(0), b = body.getArgument(1);
  bool ofBoth = step->getNumOperands() == 2 && step->getNumResults() == 1 &&
                ((step->getOperand(0) == a && step->getOperand(1) == b) ||
                 (step->getOperand(0) == b && step->getOperand(1) == a));
  bool yielded = yield->getNumOperands() == 1 && yield->getOperand(0) == step->getResult(0);
  return ofBoth && yielded ? step : nullptr;
}

LogicalResult Builder::translateScatter(Operation *op) {
  // ins(updates [N, rest...], indices [N, k]) outs(original): update n goes
  // to original[indices[n, 0], ..., indices[n, k - 1], rest...] when the
  // dimension map is [0, ..., k - 1]. The body's arguments are the update
  // and the original element.
  auto dimensionMap = op->getAttrOfType<DenseI64ArrayAttr>("dimension_map");
  if (!dimensionMap || op->getNumOperands() != 3 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock() ||
      op->getRegion(0).front().getNumArguments() != 2)
    return fail(op, "is not a scatter of updates by an index tensor (tm_tensor.scatter's form)");
  // Overwrite (the body yields the update) or accumulate (their sum), as
  // index_put does; or combine by product, max or min, as index_reduce does;
  // or count (add a constant, the update unread), as index_put of it does.
  Block &body = op->getRegion(0).front();
  Operation *step = combinerOfBothArguments(body);
  std::optional<int64_t> accumulate;
  std::optional<IndexReduction> reduction;
  if (body.getOperations().size() == 1 &&
      body.getTerminator()->getNumOperands() == 1 &&
      body.getTerminator()->getOperand(0) == body.getArgument(0))
    accumulate = 0;
  else if (step && isa<arith::AddFOp, arith::AddIOp>(step))
    accumulate = 1;
  else if (step && isa<arith::MulFOp, arith::MulIOp>(step))
    reduction = IndexReduction::Prod;
  else if (step && isa<arith::MaximumFOp, arith::MaxSIOp>(step))
    reduction = IndexReduction::Amax;
  else if (step && isa<arith::MinimumFOp, arith::MinSIOp>(step))
    reduction = IndexReduction::Amin;
  // The original element plus a constant, the update unread (a mean's
  // count of updates): accumulating that constant instead of the updates.
  std::optional<double> counted;
  if (!accumulate && !reduction && body.getOperations().size() == 2) {
    Operation *add = &body.front();
    Value original = body.getArgument(1);
    if (isa<arith::AddFOp, arith::AddIOp>(add) && body.getArgument(0).use_empty() &&
        body.getTerminator()->getNumOperands() == 1 &&
        body.getTerminator()->getOperand(0) == add->getResult(0) &&
        llvm::is_contained(add->getOperands(), original)) {
      Value other = add->getOperand(0) == original ? add->getOperand(1) : add->getOperand(0);
      Attribute value;
      if (other != original && matchPattern(other, m_Constant(&value))) {
        if (auto f = dyn_cast<FloatAttr>(value))
          counted = f.getValueAsDouble();
        else if (auto i = dyn_cast<IntegerAttr>(value))
          counted = static_cast<double>(i.getValue().getSExtValue());
      }
    }
    if (counted)
      accumulate = 1;
  }
  if (!accumulate && !reduction)
    return fail(op, "combines an update with the original element by other "
                    "than overwriting, adding, multiplying or a NaN-propagating "
                    "or signed max or min");
  auto updates = get(op->getOperand(0));
  auto indices = updates ? get(op->getOperand(1)) : std::nullopt;
  auto original = indices ? get(op->getOperand(2)) : std::nullopt;
  if (!original)
    return fail(op, error);
  const TensorType &u = type(*updates), &i = type(*indices), &o = type(*original);
  int64_t depth = static_cast<int64_t>(dimensionMap.size());
  int64_t rank = static_cast<int64_t>(o.shape.size());
  bool leading = depth <= rank &&
                 llvm::equal(dimensionMap.asArrayRef(), llvm::seq<int64_t>(0, depth));
  // An update's window is its shape after the first dimension, laid over
  // the original's trailing dimensions: 1 wide at an indexed dimension (the
  // start is the index), whole at any other; index_put writes the window
  // without those unit dimensions.
  bool shaped = leading && i.shape.size() == 2 && i.shape[1] == depth &&
                !u.shape.empty() && u.shape[0] == i.shape[0] &&
                !isFloatingPoint(i.dtype) && i.dtype != DType::Bool;
  int64_t offset = rank - (static_cast<int64_t>(u.shape.size()) - 1);
  shaped = shaped && offset >= 0 && offset <= depth;
  for (int64_t d = offset; shaped && d < rank; ++d) {
    int64_t window = u.shape[1 + d - offset];
    shaped = d < depth ? window == 1 : window == o.shape[d];
  }
  if (!shaped)
    return fail(op, "scatters into other than whole trailing slices at leading "
                    "index dimensions, which index_put does not express");
  std::vector<int64_t> slices = {u.shape[0]};
  slices.insert(slices.end(), o.shape.begin() + depth, o.shape.end());
  int windows = counted ? emit(RefFn::Full, {}, TensorType{slices, u.dtype}, {}, *counted)
                : u.shape == slices ? *updates
                                    : reshape(*updates, slices);
  if (accumulate) {
    values[op->getResult(0)] = emit(RefFn::IndexPut, {*original, *indices, windows},
                                    *tensorType(op->getResult(0)),
                                    {{"accumulate", {*accumulate}}});
    return success();
  }
  // index_reduce reduces along one dim: the indexed dims flattened into
  // one, each update's position there ((i0 * d1 + i1) * d2 + ...). Only the
  // first may be dynamic (a batch): the others are the multipliers.
  int64_t inner = 1;
  for (int64_t d = 1; d < depth; ++d) {
    if (isSymbolicSize(o.shape[d]))
      return fail(op, "scatters by product, max or min into a dynamic indexed "
                      "dimension other than the first");
    inner *= o.shape[d];
  }
  std::optional<int64_t> flat = isSymbolicSize(o.shape[0]) ? multipleOf(o.shape[0], inner)
                                                           : o.shape[0] * inner;
  if (!flat)
    return fail(op, "scatters by product, max or min into a dynamic indexed dimension "
                    "that is itself a multiple of a dynamic size");
  std::vector<int64_t> rows(1, u.shape[0]);
  int row = emit(RefFn::Arange, {}, TensorType{rows, DType::Int64}, {{"dim", {0}}});
  int at = castTo(*indices, DType::Int64);
  std::optional<int> position;
  for (int64_t d = 0; d < depth; ++d) {
    int column = emit(RefFn::Scalar, {}, TensorType{{}, DType::Int64}, {}, static_cast<double>(d));
    int index = emit(RefFn::Index, {at, row, column}, TensorType{rows, DType::Int64});
    if (position) {
      int size = emit(RefFn::Scalar, {}, TensorType{{}, DType::Int64}, {},
                      static_cast<double>(o.shape[d]));
      int scaled = emit(RefFn::Mul, {*position, size}, TensorType{rows, DType::Int64});
      index = emit(RefFn::Add, {scaled, index}, TensorType{rows, DType::Int64});
    }
    position = index;
  }
  std::vector<int64_t> flatShape = {*flat};
  flatShape.insert(flatShape.end(), o.shape.begin() + depth, o.shape.end());
  int reduced = emit(RefFn::IndexReduce, {reshape(*original, flatShape), *position, windows},
                     TensorType{flatShape, o.dtype},
                     {{"reduce", {static_cast<int64_t>(*reduction)}}});
  values[op->getResult(0)] = reshape(reduced, o.shape);
  return success();
}

/// Whether a sort's comparator, `less(a, b)` on the key's two elements,
/// orders ascending (true) or descending (false): one comparison of the
/// body's first two arguments, yielded; nullopt for any other body.
static std::optional<bool> sortsAscending(Block &body) {
  if (body.getNumArguments() < 2 || body.getOperations().size() != 2)
    return std::nullopt;
  Operation *compare = &body.front();
  Operation *yield = body.getTerminator();
  if (yield->getNumOperands() != 1 || yield->getOperand(0) != compare->getResult(0) ||
      compare->getNumOperands() != 2)
    return std::nullopt;
  Value a = body.getArgument(0), b = body.getArgument(1);
  bool swapped = compare->getOperand(0) == b && compare->getOperand(1) == a;
  if (!swapped && !(compare->getOperand(0) == a && compare->getOperand(1) == b))
    return std::nullopt;
  std::optional<bool> less;
  if (auto f = dyn_cast<arith::CmpFOp>(compare)) {
    using P = arith::CmpFPredicate;
    P p = f.getPredicate();
    if (p == P::OLT || p == P::OLE || p == P::ULT || p == P::ULE)
      less = true;
    else if (p == P::OGT || p == P::OGE || p == P::UGT || p == P::UGE)
      less = false;
  } else if (auto i = dyn_cast<arith::CmpIOp>(compare)) {
    // Signed only: the program holds a uint8 as int8, which torch.argsort
    // would order by sign.
    using P = arith::CmpIPredicate;
    P p = i.getPredicate();
    if (p == P::slt || p == P::sle)
      less = true;
    else if (p == P::sgt || p == P::sge)
      less = false;
  }
  if (!less)
    return std::nullopt;
  return swapped ? !*less : *less;
}

LogicalResult Builder::translateSort(Operation *op) {
  // outs(key, others...): sorted in place along `dimension`, each by the
  // key's order; the body compares the key's two elements (its arguments
  // are each operand's two elements in turn). torch-mlir's order keeps
  // equal keys in place, as a stable argsort does.
  auto dimension = op->getAttrOfType<IntegerAttr>("dimension");
  if (!dimension || op->getNumOperands() == 0 ||
      op->getNumResults() != op->getNumOperands() || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock() ||
      op->getRegion(0).front().getNumArguments() != 2 * op->getNumOperands())
    return fail(op, "is not a sort of its operands in place (tm_tensor.sort's form)");
  std::optional<bool> ascending = sortsAscending(op->getRegion(0).front());
  if (!ascending)
    return fail(op, "compares by something other than the order of its first "
                    "operand's elements");
  std::vector<int> operands;
  for (Value v : op->getOperands()) {
    std::optional<int> id = get(v);
    if (!id)
      return fail(op, error);
    operands.push_back(*id);
  }
  const std::vector<int64_t> &shape = type(operands[0]).shape;
  int64_t dim = dimension.getInt();
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return fail(op, "sorts a dimension the tensor does not have");
  // torch-mlir's verifier holds the operands to one shape; a dynamic size
  // may be named by another symbol in each (an input's, an iota's).
  for (int id : operands)
    if (type(id).shape.size() != shape.size())
      return fail(op, "sorts operands of different ranks");
  int order = emit(RefFn::Argsort, {operands[0]}, TensorType{shape, DType::Int64},
                   {{"dim", {dim}}, {"descending", {*ascending ? 0 : 1}}});
  // operand[i0, ..., order, ...]: the order at `dim`, an arange at each
  // other dim.
  std::vector<int> at;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d == dim) {
      at.push_back(order);
      continue;
    }
    std::vector<int64_t> along(shape.size(), 1);
    along[d] = shape[d];
    at.push_back(emit(RefFn::Arange, {}, TensorType{along, DType::Int64}, {{"dim", {d}}}));
  }
  for (auto [result, id] : llvm::zip(op->getResults(), operands)) {
    std::vector<int> args{id};
    args.insert(args.end(), at.begin(), at.end());
    values[result] = emit(RefFn::Index, args, TensorType{type(id).shape, type(id).dtype});
  }
  return success();
}

LogicalResult Builder::translateScan(Operation *op) {
  auto dimension = op->getAttrOfType<IntegerAttr>("dimension");
  auto inclusive = op->getAttrOfType<BoolAttr>("inclusive");
  if (!dimension || !inclusive || op->getNumOperands() != 3 ||
      op->getNumResults() != 2 || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock())
    return fail(op, "is not a scan of one input (tm_tensor.scan's form)");
  // Exclusive: output[0] is the accumulator's initial value, each later
  // element the running value before it; no torch function computes that.
  if (!inclusive.getValue())
    return fail(op, "is an exclusive scan, which no torch function computes");
  // The running value after the last element; torch.cumsum returns none
  // (and on a dimension of size 1 it would be the initial value).
  if (!op->getResult(1).use_empty())
    return fail(op, "has its running value read, which torch.cumsum does not return");
  // Inclusive: output[0] = input[0], output[i] = f(output[i - 1], input[i]);
  // f must be the sum or the product of exactly those two.
  Operation *step = combinerOfBothArguments(op->getRegion(0).front());
  std::optional<RefFn> fn = !step ? std::nullopt
                            : isa<arith::AddFOp, arith::AddIOp>(step) ? std::optional(RefFn::Cumsum)
                            : isa<arith::MulFOp, arith::MulIOp>(step) ? std::optional(RefFn::Cumprod)
                                                                     : std::nullopt;
  if (!fn)
    return fail(op, "steps by something other than the sum or the product of "
                    "the running value and the next element");
  auto in = get(op->getOperand(0));
  if (!in)
    return fail(op, error);
  std::optional<TensorType> out = tensorType(op->getResult(0));
  int64_t dim = dimension.getInt();
  if (dim < 0 || dim >= static_cast<int64_t>(out->shape.size()))
    return fail(op, "scans a dimension the tensor does not have");
  values[op->getResult(0)] = emit(*fn, {*in}, *out, {{"dim", {dim}}});
  return success();
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
  auto wide = [&](Attribute a) {
    return isa<IntegerAttr>(a) && !number(a);
  };
  auto splat = dyn_cast<SplatElementsAttr>(value);
  if (wide(value) || (splat && wide(splat.getSplatValue<Attribute>()))) {
    unrepresentable[op.getResult()] =
        "'arith.constant' holds an integer that a double does not represent "
        "exactly";
    return success();
  }
  if (auto scalar = number(value)) {
    values[op.getResult()] = emit(RefFn::Scalar, {}, t, {}, *scalar);
    return success();
  }
  if (auto dense = dyn_cast<SplatElementsAttr>(value)) {
    if (auto scalar = number(dense.getSplatValue<Attribute>())) {
      values[op.getResult()] = emit(RefFn::Full, {}, t, {}, *scalar);
      return success();
    }
  }
  return fail(op, "with a non-splat tensor value must be a kernel operand");
}

LogicalResult Builder::translateFill(linalg::FillOp op) {
  if (auto it = unrepresentable.find(op.getInputs()[0]);
      it != unrepresentable.end()) {
    unrepresentable[op.getResult(0)] = it->second;
    return success();
  }
  auto scalar = get(op.getInputs()[0]);
  if (!scalar)
    return fail(op, error);
  TensorType t = *tensorType(op.getResult(0));
  if (auto c = constantOf(*scalar))
    values[op.getResult(0)] = emit(RefFn::Full, {}, t, {}, *c);
  else
    values[op.getResult(0)] = expand(castTo(*scalar, t.dtype), t.shape);
  return success();
}

std::optional<int> Builder::combineWithInit(Value init, int result,
                                            double identity,
                                            RefFn combine) {
  if (empties.count(init) && !values.count(init))
    return result; // an uninitialized destination contributes nothing
  if (isIntegerIdentity(init, combine))
    return result;
  auto initId = get(init);
  if (!initId)
    return std::nullopt;
  if (auto c = constantOf(*initId); c && *c == identity)
    return result;
  return emit(combine, {*initId, result}, type(result));
}

LogicalResult Builder::translateContraction(linalg::LinalgOp op) {
  TensorType out = *tensorType(op->getResult(0));
  auto a = get(op.getDpsInputOperand(0)->get());
  auto b = get(op.getDpsInputOperand(1)->get());
  if (!a || !b)
    return fail(op, error);
  // linalg casts operands to the accumulator type before multiplying.
  int product = emit(RefFn::Matmul, {castTo(*a, out.dtype), castTo(*b, out.dtype)}, out);
  auto result = combineWithInit(op.getDpsInits()[0], product, 0.0, RefFn::Add);
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
  // Grouped, with the groups as a dim of their own.
  if (isa<linalg::Conv2DNgchwGfchwOp>(op)) {
    std::optional<int> conv = groupedConvolution(op, *x, weight, out, stride, dilation);
    if (!conv)
      return failure();
    return accumulated(op, *conv);
  }
  int input = *x;
  if (isa<linalg::DepthwiseConv2DNchwChwOp>(op)) {
    // [C, KH, KW] -> [C, 1, KH, KW] with one group per channel.
    std::vector<int64_t> shape = type(weight).shape;
    groups = shape[0];
    shape.insert(shape.begin() + 1, 1);
    weight = reshape(weight, shape);
  }
  std::vector<int64_t> kernel(type(weight).shape.begin() + 2,
                              type(weight).shape.end());
  int conv = emit(RefFn::Conv, {castTo(input, out.dtype), weight},
                  windowedType(input, out, kernel, stride, dilation),
                  {{"stride", stride},
                   {"padding", std::vector<int64_t>(spatial, 0)},
                   {"dilation", dilation},
                   {"groups", {groups}}});
  return accumulated(op, firstWindows(conv, out.shape));
}

std::optional<int> Builder::groupedConvolution(Operation *op, int x, int w,
                                               const TensorType &out,
                                               const std::vector<int64_t> &stride,
                                               const std::vector<int64_t> &dilation) {
  std::vector<int64_t> xs = type(x).shape, ws = type(w).shape;
  size_t rank = xs.size();
  auto dynamic = [](const std::vector<int64_t> &shape, std::initializer_list<size_t> dims) {
    return llvm::any_of(dims, [&](size_t d) { return isSymbolicSize(shape[d]); });
  };
  if (rank < 4 || ws.size() != rank || out.shape.size() != rank || dynamic(xs, {1, 2}) ||
      dynamic(ws, {0, 1}) || dynamic(out.shape, {1, 2})) {
    (void)fail(op, "with dynamic group sizes has no torch equivalent here");
    return std::nullopt;
  }
  // [A, B, C, rest...] -> [A, B * C, rest...]
  auto folded = [](std::vector<int64_t> shape, size_t at) {
    shape[at] *= shape[at + 1];
    shape.erase(shape.begin() + at + 1);
    return shape;
  };
  int input = reshape(x, folded(xs, 1));
  int weight = reshape(castTo(w, out.dtype), folded(ws, 0));
  TensorType natural{folded(out.shape, 1), out.dtype};
  std::vector<int64_t> kernel(ws.begin() + 3, ws.end());
  int conv = emit(RefFn::Conv, {castTo(input, out.dtype), weight},
                  windowedType(input, natural, kernel, stride, dilation),
                  {{"stride", stride},
                   {"padding", std::vector<int64_t>(rank - 3, 0)},
                   {"dilation", dilation},
                   {"groups", {ws[0]}}});
  std::vector<int64_t> shape = type(conv).shape;
  std::vector<int64_t> unfolded = {shape[0], out.shape[1], out.shape[2]};
  unfolded.insert(unfolded.end(), shape.begin() + 2, shape.end());
  return firstWindows(reshape(conv, unfolded), out.shape);
}

LogicalResult Builder::translatePooling(linalg::LinalgOp op, RefFn fn,
                                        double identity, RefFn combine,
                                        bool channelsLast) {
  size_t spatial = mlir::cast<ShapedType>(op.getDpsInputOperand(1)->get().getType()).getRank();
  return pool(op, fn, identity, combine, channelsLast,
              denseInts(op->getAttr("strides"), spatial),
              denseInts(op->getAttr("dilations"), spatial));
}

LogicalResult Builder::pool(linalg::LinalgOp op, RefFn fn, double identity,
                            RefFn combine, bool channelsLast,
                            const std::vector<int64_t> &stride,
                            const std::vector<int64_t> &dilation) {
  TensorType out = *tensorType(op->getResult(0));
  auto x = get(op.getDpsInputOperand(0)->get());
  if (!x)
    return fail(op, error);
  // Channels last: [N, D..., C] pooled as [N, C, D...], permuted back after.
  int input = *x;
  std::vector<int64_t> toLast;
  if (channelsLast) {
    size_t rank = out.shape.size();
    std::vector<int64_t> toFirst = {0, static_cast<int64_t>(rank - 1)};
    for (size_t d = 1; d + 1 < rank; ++d)
      toFirst.push_back(static_cast<int64_t>(d));
    toLast.resize(rank);
    for (size_t d = 0; d < rank; ++d)
      toLast[toFirst[d]] = static_cast<int64_t>(d);
    input = permute(input, toFirst);
    std::vector<int64_t> shape;
    for (int64_t d : toFirst)
      shape.push_back(out.shape[d]);
    out.shape = shape;
  }
  // The second input only carries the window shape.
  auto window = mlir::cast<ShapedType>(op.getDpsInputOperand(1)->get().getType());
  size_t spatial = window.getRank();
  std::map<std::string, std::vector<int64_t>> ints = {
      {"kernel", toStd(window.getShape())},
      {"stride", stride},
      {"padding", std::vector<int64_t>(spatial, 0)}};
  if (fn == RefFn::MaxPool)
    ints["dilation"] = dilation;
  else if (llvm::any_of(dilation, [](int64_t d) { return d != 1; }))
    return fail(op, "with dilation has no torch pooling equivalent");
  int pooled = emit(fn, {castTo(input, out.dtype)},
                    windowedType(input, out, ints["kernel"], stride, dilation), ints);
  pooled = firstWindows(pooled, out.shape);
  if (channelsLast)
    pooled = permute(pooled, toLast);
  auto result = combineWithInit(op.getDpsInits()[0], pooled, identity, combine);
  if (!result)
    return fail(op, error);
  values[op->getResult(0)] = *result;
  return success();
}

/// A pooling written as a generic (torch-mlir's 3-D max pooling): inputs
/// (x, window), the window's loops the trailing reductions, x read at
/// `d * stride + k * dilation` along each pooled dim and at the output's
/// own index elsewhere, and a payload that combines x into the output with
/// one maximumf or addf. Anything else is an ordinary generic.
/// A window's read along one dim, `out * stride + tap * dilation`: the
/// output's loop dim and the window's (the lower-numbered is the output's).
struct WindowRead {
  unsigned out, tap;
  int64_t stride, dilation;
};

/// `e` as a window read, or nullopt for any other expression.
static std::optional<WindowRead> windowRead(AffineExpr e) {
  // `d * s` or `d`: the dim and its coefficient.
  auto scaled = [](AffineExpr e) -> std::optional<std::pair<unsigned, int64_t>> {
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      return std::pair{dim.getPosition(), int64_t{1}};
    auto mul = dyn_cast<AffineBinaryOpExpr>(e);
    if (!mul || mul.getKind() != AffineExprKind::Mul)
      return std::nullopt;
    auto dim = dyn_cast<AffineDimExpr>(mul.getLHS());
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    if (!dim || !c || c.getValue() < 1)
      return std::nullopt;
    return std::pair{dim.getPosition(), c.getValue()};
  };
  auto add = dyn_cast<AffineBinaryOpExpr>(e);
  if (!add || add.getKind() != AffineExprKind::Add)
    return std::nullopt;
  auto lhs = scaled(add.getLHS()), rhs = scaled(add.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  if (lhs->first > rhs->first)
    std::swap(lhs, rhs);
  return WindowRead{lhs->first, rhs->first, lhs->second, rhs->second};
}

LogicalResult Builder::translateWindowGeneric(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return failure();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto window = dyn_cast<ShapedType>(op.getDpsInputOperand(1)->get().getType());
  if (!window)
    return failure();
  unsigned outRank = maps[2].getNumResults(), reduced = window.getRank();
  unsigned loops = op.getNumLoops();
  if (reduced == 0 || reduced > outRank || loops != outRank + reduced ||
      maps[0].getNumResults() != outRank)
    return failure();
  for (unsigned d = 0; d < outRank; ++d) // the output: the leading loops
    if (maps[2].getResult(d) != getAffineDimExpr(d, op.getContext()))
      return failure();
  for (unsigned i = 0; i < loops; ++i)
    if ((op.getIteratorTypesArray()[i] == utils::IteratorType::reduction) != (i >= outRank))
      return failure();
  for (unsigned k = 0; k < reduced; ++k)
    if (maps[1].getResult(k) != getAffineDimExpr(outRank + k, op.getContext()))
      return failure();
  std::vector<int64_t> strides, dilations;
  unsigned first = outRank - reduced;
  for (unsigned d = 0; d < outRank; ++d) {
    AffineExpr e = maps[0].getResult(d);
    if (d < first) {
      if (e != getAffineDimExpr(d, op.getContext()))
        return failure();
      continue;
    }
    std::optional<WindowRead> read = windowRead(e);
    if (!read || read->out != d || read->tap != outRank + (d - first))
      return failure();
    strides.push_back(read->stride);
    dilations.push_back(read->dilation);
  }
  Block &body = op.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  Operation *combiner = yield && yield.getNumOperands() == 1
                            ? yield.getOperand(0).getDefiningOp()
                            : nullptr;
  if (!combiner || &body.front() != combiner || combiner->getNumOperands() != 2)
    return failure();
  Value in = body.getArgument(0), acc = body.getArgument(2);
  bool reads = (combiner->getOperand(0) == in && combiner->getOperand(1) == acc) ||
               (combiner->getOperand(0) == acc && combiner->getOperand(1) == in);
  if (!reads)
    return failure();
  if (isa<arith::MaximumFOp>(combiner))
    return pool(op, RefFn::MaxPool, -std::numeric_limits<double>::infinity(), RefFn::Maximum,
                /*channelsLast=*/false, strides, dilations);
  if (isa<arith::AddFOp>(combiner))
    return pool(op, RefFn::SumPool, 0.0, RefFn::Add, /*channelsLast=*/false, strides, dilations);
  return failure();
}

LogicalResult Builder::translateGroupedConvGeneric(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return failure();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned outRank = maps[2].getNumResults();
  if (outRank < 4 || maps[0].getNumResults() != outRank ||
      maps[1].getNumResults() != outRank)
    return failure();
  unsigned spatial = outRank - 3, loops = op.getNumLoops();
  if (loops != outRank + 1 + spatial)
    return failure();
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  unsigned channel = outRank; // the reduced C/G loop, then the kernel's
  for (unsigned i = 0; i < loops; ++i)
    if ((op.getIteratorTypesArray()[i] == utils::IteratorType::reduction) != (i >= outRank))
      return failure();
  for (unsigned d = 0; d < outRank; ++d)
    if (maps[2].getResult(d) != dim(d))
      return failure();
  // w [G, F/G, C/G, K...]; x [N, G, C/G, o * stride + k * dilation...].
  if (maps[1].getResult(0) != dim(1) || maps[1].getResult(1) != dim(2) ||
      maps[1].getResult(2) != dim(channel) || maps[0].getResult(0) != dim(0) ||
      maps[0].getResult(1) != dim(1) || maps[0].getResult(2) != dim(channel))
    return failure();
  std::vector<int64_t> stride, dilation;
  for (unsigned j = 0; j < spatial; ++j) {
    if (maps[1].getResult(3 + j) != dim(channel + 1 + j))
      return failure();
    std::optional<WindowRead> read = windowRead(maps[0].getResult(3 + j));
    if (!read || read->out != 3 + j || read->tap != channel + 1 + j)
      return failure();
    stride.push_back(read->stride);
    dilation.push_back(read->dilation);
  }
  // acc + x * w, either way round.
  Block &body = op.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1 || body.getOperations().size() != 3)
    return failure();
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  Value acc = body.getArgument(2);
  if (!add || !mul || !llvm::is_contained(add->getOperands(), acc) ||
      !llvm::is_contained(add->getOperands(), mul.getResult()) ||
      !llvm::is_contained(mul->getOperands(), body.getArgument(0)) ||
      !llvm::is_contained(mul->getOperands(), body.getArgument(1)))
    return failure();
  auto x = get(op.getDpsInputOperand(0)->get());
  auto w = x ? get(op.getDpsInputOperand(1)->get()) : std::nullopt;
  if (!w)
    return fail(op, error);
  TensorType out = *tensorType(op->getResult(0));
  std::optional<int> conv = groupedConvolution(op, *x, *w, out, stride, dilation);
  if (!conv)
    return failure();
  return accumulated(op, *conv);
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
  std::optional<std::vector<int64_t>> loopExtents = loopSizes(op);
  if (!loopExtents)
    return fail(op, "has a dynamic loop extent that is no input's size");
  std::vector<int64_t> loops = *loopExtents;
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
    // of the inputs alone, do so where a condition holds (a masked
    // reduction: `select %c, (acc + x), acc`, as embedding bags lower), or
    // pick the loop index of a running max/min.
    Operation *combiner = yielded.getDefiningOp();
    Value mask;
    if (auto select = yielded.getDefiningOp<arith::SelectOp>();
        select && select->getBlock() == body) {
      Operation *update = select.getTrueValue().getDefiningOp();
      if (select.getFalseValue() == acc && update &&
          update->getBlock() == body && update->getNumOperands() == 2 &&
          llvm::is_contained(update->getOperands(), Value(acc))) {
        combiner = update, mask = select.getCondition();
      } else {
        if (failed(translateIndexReduction(op, result, select, scalars, loops,
                                           reduced, parallel)))
          return failure();
        continue;
      }
    }
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
    RefFn reduceFn, combineFn;
    double identity;
    const double inf = std::numeric_limits<double>::infinity();
    if (isa<arith::AddFOp, arith::AddIOp>(combiner)) {
      reduceFn = RefFn::Sum, combineFn = RefFn::Add, identity = 0;
    } else if (isa<arith::MulFOp, arith::MulIOp>(combiner)) {
      reduceFn = RefFn::Prod, combineFn = RefFn::Mul, identity = 1;
    } else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combiner)) {
      reduceFn = RefFn::Amax, combineFn = RefFn::Maximum, identity = -inf;
    } else if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combiner)) {
      reduceFn = RefFn::Amin, combineFn = RefFn::Minimum, identity = inf;
    } else if (isa<arith::MaxUIOp, arith::MinUIOp>(combiner) && !mask) {
      return translateUnsignedReduction(op, result, combiner, other, scalars,
                                        loops, reduced, parallel);
    } else if (isa<arith::AndIOp, arith::OrIOp>(combiner) &&
               outType.dtype == DType::Bool) {
      // On booleans `and` is the minimum and `or` the maximum (torch.all and
      // torch.any); on wider integers they are bitwise, which no torch
      // reduction computes.
      bool all = isa<arith::AndIOp>(combiner);
      reduceFn = all ? RefFn::Amin : RefFn::Amax;
      combineFn = all ? RefFn::Minimum : RefFn::Maximum;
      identity = all ? 1 : 0;
    } else {
      return fail(op, "reduces with '" +
                          combiner->getName().getStringRef() +
                          "', which has no torch reduction");
    }
    auto e = translatePayload(op, other, scalars);
    if (!e)
      return failure();
    int term = castTo(*e, outType.dtype);
    if (mask) {
      // Where the condition fails the term is the combiner's identity, which
      // an integer max/min has none of as a double.
      if (!isFloatingPoint(outType.dtype) && std::isinf(identity))
        return fail(op, "has a masked integer max/min reduction");
      auto c = translatePayload(op, mask, scalars);
      if (!c)
        return failure();
      int neutral = emit(RefFn::Scalar, {}, TensorType{{}, outType.dtype}, {}, identity);
      term = emit(RefFn::Where, {*c, term, neutral},
                  TensorType{broadcastShape(type(*c).shape, type(term).shape),
                             outType.dtype});
    }
    int full = expand(term, loops);
    std::vector<int64_t> keptShape;
    for (int64_t d : parallel)
      keptShape.push_back(loops[d]);
    // torch sums and multiplies integers in int64; the low bits are what
    // the IR's wrapping accumulation yields.
    DType accumulated = outType.dtype;
    if ((reduceFn == RefFn::Sum || reduceFn == RefFn::Prod) && !isFloatingPoint(accumulated))
      accumulated = DType::Int64;
    int reducedId = emit(reduceFn, {full}, TensorType{keptShape, accumulated},
                         {{"dims", reduced}});
    reducedId = castTo(reducedId, outType.dtype);
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

/// torch.argmax/argmin as torch-mlir lowers them: one generic whose outputs
/// are the running max (min) and its index,
///   %i = arith.index_cast (linalg.index d)
///   %v = arith.maximumf %x, %value        // or maxsi / minimumf / minsi
///   %c = arith.cmpf ogt, %x, %value       // or sgt / olt / slt
///   yield %v, (arith.select %c, %i, %index)
/// The strict comparison keeps the first extremum, as torch does, when the
/// running value starts at the order's identity and the index at 0.
LogicalResult Builder::translateIndexReduction(
    linalg::LinalgOp op, OpResult result, arith::SelectOp select,
    llvm::DenseMap<Value, int> &scalars, ArrayRef<int64_t> loops,
    ArrayRef<int64_t> reduced, ArrayRef<int64_t> parallel) {
  const char *unknown = "has a reduction payload without a combiner";
  OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
  if (select.getFalseValue() != op.getMatchingBlockArgument(init))
    return fail(op, unknown);
  if (reduced.size() != 1)
    return fail(op, "picks an index over several reduced dims");
  Operation *cast = select.getTrueValue().getDefiningOp();
  auto index = cast && isa<arith::IndexCastOp, arith::IndexCastUIOp>(cast)
                   ? cast->getOperand(0).getDefiningOp<linalg::IndexOp>()
                   : linalg::IndexOp();
  if (!index || index.getDim() != reduced[0])
    return fail(op, unknown);

  // The condition compares an expression of the inputs with the running
  // value, another output's accumulator.
  Value lhs, rhs;
  bool max;
  if (auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>()) {
    auto p = cmp.getPredicate();
    if (p != arith::CmpFPredicate::OGT && p != arith::CmpFPredicate::OLT)
      return fail(op, unknown);
    max = p == arith::CmpFPredicate::OGT, lhs = cmp.getLhs(), rhs = cmp.getRhs();
  } else if (auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>()) {
    auto p = cmp.getPredicate();
    if (p != arith::CmpIPredicate::sgt && p != arith::CmpIPredicate::slt)
      return fail(op, unknown);
    max = p == arith::CmpIPredicate::sgt, lhs = cmp.getLhs(), rhs = cmp.getRhs();
  } else {
    return fail(op, unknown);
  }
  auto running = dyn_cast<BlockArgument>(rhs);
  if (!running || running.getOwner() != op.getBlock() ||
      running.getArgNumber() < op.getNumDpsInputs())
    return fail(op, unknown);
  OpOperand *valueInit =
      op.getDpsInitOperand(running.getArgNumber() - op.getNumDpsInputs());
  // The running value must be the max (min) of the same expression.
  Operation *update = op.getBlock()->getTerminator()->getOperand(
      valueInit->getOperandNumber() - op.getNumDpsInputs()).getDefiningOp();
  bool updates =
      update && update->getNumOperands() == 2 &&
      (max ? isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(update)
           : isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(update)) &&
      llvm::is_contained(update->getOperands(), lhs) &&
      llvm::is_contained(update->getOperands(), Value(running));
  if (!updates)
    return fail(op, "picks an index of a value that is not its running " +
                        Twine(max ? "max" : "min"));
  TensorType valueType = *tensorType(op->getResult(
      valueInit->getOperandNumber() - op.getNumDpsInputs()));
  TensorType outType = *tensorType(result);
  if (valueType.shape != outType.shape)
    return fail(op, "picks an index into an output of another shape than "
                    "its running value's");
  // A start at the order's identity: -inf/+inf, or an integer type's
  // extreme (which a double may not hold, so it is read from the fill).
  const double inf = std::numeric_limits<double>::infinity();
  bool fromIdentity = isIntegerIdentity(valueInit->get(), max ? RefFn::Maximum : RefFn::Minimum);
  std::optional<int> valueStart;
  if (!fromIdentity) {
    valueStart = get(valueInit->get());
    if (!valueStart)
      return fail(op, error);
    fromIdentity = isFloatingPoint(valueType.dtype) &&
                   constantOf(*valueStart) == (max ? -inf : inf);
  }
  auto indexStart = get(init->get());
  if (!indexStart)
    return fail(op, error);

  auto e = translatePayload(op, lhs, scalars);
  if (!e)
    return failure();
  int full = expand(*e, toStd(loops));
  std::vector<int64_t> keptShape;
  for (int64_t d : parallel)
    keptShape.push_back(loops[d]);
  int picked = emit(max ? RefFn::Argmax : RefFn::Argmin, {full},
                    TensorType{keptShape, DType::Int64}, {{"dim", {reduced[0]}}});
  auto laid = toTensorLayout(op, castTo(picked, outType.dtype), parallel,
                             op.getMatchingIndexingMap(init), outType);
  if (!laid)
    return failure();
  // The running value changes (at the first extremum, which torch.argmax
  // picks too) iff the extremum beats its start; else the index keeps its
  // start. Starting from the order's identity and 0, that is argmax alone.
  if (!fromIdentity || constantOf(*indexStart) != 0) {
    if (!valueStart)
      valueStart = get(valueInit->get());
    if (!valueStart)
      return fail(op, error);
    int extreme = emit(max ? RefFn::Amax : RefFn::Amin, {full},
                       TensorType{keptShape, valueType.dtype}, {{"dims", toStd(reduced)}});
    auto laidExtreme = toTensorLayout(op, extreme, parallel,
                                      op.getMatchingIndexingMap(valueInit), valueType);
    if (!laidExtreme)
      return failure();
    int beats = emit(max ? RefFn::Gt : RefFn::Lt, {*laidExtreme, *valueStart},
                     TensorType{valueType.shape, DType::Bool});
    laid = emit(RefFn::Where, {beats, *laid, *indexStart}, outType);
  }
  values[result] = *laid;
  return success();
}

/// A maxui/minui reduction: flipping the sign bit maps the unsigned order
/// onto the signed one, so it is amax/amin between two flips; the init is
/// combined with the unsigned comparison.
LogicalResult Builder::translateUnsignedReduction(
    linalg::LinalgOp op, OpResult result, Operation *combiner, Value other,
    llvm::DenseMap<Value, int> &scalars, ArrayRef<int64_t> loops,
    ArrayRef<int64_t> reduced, ArrayRef<int64_t> parallel) {
  OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
  TensorType outType = *tensorType(result);
  unsigned width = bitWidth(outType.dtype);
  if (width == 0)
    return fail(op, "reduces a non-integer with an unsigned combiner");
  auto e = translatePayload(op, other, scalars);
  if (!e)
    return failure();
  int signBit = emit(RefFn::Scalar, {}, TensorType{{}, outType.dtype}, {},
                     -std::ldexp(1.0, width - 1));
  auto flip = [&](int id) {
    return emit(RefFn::BitwiseXor, {id, signBit}, type(id));
  };
  int full = flip(expand(castTo(*e, outType.dtype), toStd(loops)));
  std::vector<int64_t> keptShape;
  for (int64_t d : parallel)
    keptShape.push_back(loops[d]);
  bool max = isa<arith::MaxUIOp>(combiner);
  int reducedId = flip(emit(max ? RefFn::Amax : RefFn::Amin, {full},
                            TensorType{keptShape, outType.dtype},
                            {{"dims", toStd(reduced)}}));
  auto laid = toTensorLayout(op, reducedId, parallel,
                             op.getMatchingIndexingMap(init), outType);
  if (!laid)
    return failure();
  // The unsigned identities: 0 for max, all ones (-1) for min.
  Value initValue = init->get();
  auto fill = initValue.getDefiningOp<linalg::FillOp>();
  auto c = fill ? fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()
                : arith::ConstantOp();
  auto attr = c ? dyn_cast<IntegerAttr>(c.getValue()) : IntegerAttr();
  if ((empties.count(initValue) && !values.count(initValue)) ||
      (attr && (max ? attr.getValue().isZero() : attr.getValue().isAllOnes()))) {
    values[result] = *laid;
    return success();
  }
  auto initId = get(initValue);
  if (!initId)
    return fail(op, error);
  int less = max ? unsignedLess(*initId, *laid, false)
                 : unsignedLess(*laid, *initId, false);
  values[result] = emit(RefFn::Where, {less, *laid, *initId}, outType);
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
    std::optional<int> id;
    if (succeeded(translateConstant(c)))
      id = get(c.getResult());
    if (!id)
      (void)fail(owner, error);
    return id;
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
  auto make = [&](RefFn fn, std::vector<int> ids) {
    return emit(fn, ids, TensorType{shapeOf(ids), *resultDType});
  };
  auto logicalNot = [&](int id) {
    return emit(RefFn::LogicalNot, {id}, TensorType{type(id).shape, DType::Bool});
  };

  // Elementwise arithmetic with a direct torch call.
  static const llvm::StringMap<RefFn> direct = {
      {"arith.addf", RefFn::Add},      {"arith.addi", RefFn::Add},
      {"arith.subf", RefFn::Sub},      {"arith.subi", RefFn::Sub},
      {"arith.mulf", RefFn::Mul},      {"arith.muli", RefFn::Mul},
      {"arith.divf", RefFn::Div},      {"arith.remf", RefFn::Remainder},
      {"arith.maximumf", RefFn::Maximum}, {"arith.maxnumf", RefFn::Maximum},
      {"arith.maxsi", RefFn::Maximum}, {"arith.minimumf", RefFn::Minimum},
      {"arith.minnumf", RefFn::Minimum}, {"arith.minsi", RefFn::Minimum},
      {"arith.negf", RefFn::Neg},      {"math.exp", RefFn::Exp},
      {"math.exp2", RefFn::Exp2},      {"math.log", RefFn::Log},
      {"math.log1p", RefFn::Log1p},    {"math.expm1", RefFn::Expm1},
      {"math.tanh", RefFn::Tanh},      {"math.sqrt", RefFn::Sqrt},
      {"math.rsqrt", RefFn::Rsqrt},    {"math.erf", RefFn::Erf},
      {"math.absf", RefFn::Abs},       {"math.absi", RefFn::Abs},
      {"math.sin", RefFn::Sin},        {"math.cos", RefFn::Cos},
      {"math.tan", RefFn::Tan},        {"math.floor", RefFn::Floor},
      {"math.ceil", RefFn::Ceil},      {"math.roundeven", RefFn::Round},
      {"math.trunc", RefFn::Trunc},    {"math.powf", RefFn::Pow},
      {"math.atan2", RefFn::Atan2},    {"arith.select", RefFn::Where},
      {"math.fpowi", RefFn::Pow},      {"math.ipowi", RefFn::Pow},
      {"math.atan", RefFn::Atan},      {"math.asin", RefFn::Asin},
      {"math.acos", RefFn::Acos},      {"math.sinh", RefFn::Sinh},
      {"math.cosh", RefFn::Cosh},      {"math.asinh", RefFn::Asinh},
      {"math.acosh", RefFn::Acosh},    {"math.atanh", RefFn::Atanh},
      {"math.log2", RefFn::Log2},      {"math.log10", RefFn::Log10},
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
          return make(RefFn::Maximum, {args[1], args[2]});
        if (cmp.getPredicate() == P::ULT || cmp.getPredicate() == P::ULE)
          return make(RefFn::Minimum, {args[1], args[2]});
      }
    }
  }
  if (auto it = direct.find(name); it != direct.end()) {
    if (it->second == RefFn::Where) {
      std::vector<int64_t> shape = shapeOf(args);
      return emit(RefFn::Where, args, TensorType{shape, *resultDType});
    }
    return make(it->second, args);
  }
  if (auto index = dyn_cast<linalg::IndexOp>(op))
    return loopIndex(owner, index.getDim());
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return gather(owner, extract, args);
  if (auto dim = dyn_cast<tensor::DimOp>(op); dim && dim.getConstantIndex() && !args.empty())
    return dimSize(args[0], *dim.getConstantIndex());
  if (auto integer = translateIntegerOp(op, args, *resultDType))
    return *integer;
  if (!error.empty()) {
    error = "'" + owner->getName().getStringRef().str() + "' has a payload op " +
            error;
    return std::nullopt;
  }
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::FPToSIOp,
          arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp>(op))
    return castTo(args[0], *resultDType);
  if (isa<arith::ExtUIOp, arith::UIToFPOp>(op) &&
      op->getOperand(0).getType().isInteger(1))
    return castTo(args[0], *resultDType); // bool -> 0/1 is what torch does
  if (isa<math::FmaOp>(op)) {
    int product = make(RefFn::Mul, {args[0], args[1]});
    return make(RefFn::Add, {product, args[2]});
  }
  if (auto andOp = dyn_cast<arith::AndIOp>(op); andOp && *resultDType == DType::Bool)
    return make(RefFn::LogicalAnd, args);
  if (auto orOp = dyn_cast<arith::OrIOp>(op); orOp && *resultDType == DType::Bool)
    return make(RefFn::LogicalOr, args);
  if (auto xorOp = dyn_cast<arith::XOrIOp>(op); xorOp && *resultDType == DType::Bool) {
    // x ^ true is `not x`; otherwise xor of booleans is `ne`.
    for (int i = 0; i < 2; ++i)
      if (auto c = constantOf(args[i]); c && *c != 0)
        return logicalNot(args[1 - i]);
    return make(RefFn::Ne, args);
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    // Ordered predicates are torch's comparisons (false on NaN); unordered
    // ones are the negation of the opposite ordered one (true on NaN).
    using P = arith::CmpFPredicate;
    switch (cmp.getPredicate()) {
    case P::OGT: return make(RefFn::Gt, args);
    case P::OGE: return make(RefFn::Ge, args);
    case P::OLT: return make(RefFn::Lt, args);
    case P::OLE: return make(RefFn::Le, args);
    case P::OEQ: return make(RefFn::Eq, args);
    case P::UNE: return make(RefFn::Ne, args);
    case P::UGT: return logicalNot(make(RefFn::Le, args));
    case P::UGE: return logicalNot(make(RefFn::Lt, args));
    case P::ULT: return logicalNot(make(RefFn::Ge, args));
    case P::ULE: return logicalNot(make(RefFn::Gt, args));
    // Ordered unequal: a < b or a > b, both false on NaN (x != y is not:
    // it is true on NaN). Unordered equal is its negation.
    case P::ONE: return make(RefFn::LogicalOr, {make(RefFn::Lt, args), make(RefFn::Gt, args)});
    case P::UEQ:
      return logicalNot(make(RefFn::LogicalOr, {make(RefFn::Lt, args), make(RefFn::Gt, args)}));
    // Neither (either) is NaN: x == x is false on NaN only.
    case P::ORD:
      return make(RefFn::LogicalAnd, {make(RefFn::Eq, {args[0], args[0]}), make(RefFn::Eq, {args[1], args[1]})});
    case P::UNO:
      return make(RefFn::LogicalOr, {make(RefFn::Ne, {args[0], args[0]}), make(RefFn::Ne, {args[1], args[1]})});
    default: break;
    }
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    switch (cmp.getPredicate()) {
    case P::sgt: return make(RefFn::Gt, args);
    case P::sge: return make(RefFn::Ge, args);
    case P::slt: return make(RefFn::Lt, args);
    case P::sle: return make(RefFn::Le, args);
    case P::eq: return make(RefFn::Eq, args);
    case P::ne: return make(RefFn::Ne, args);
    default: break;
    }
  }
  (void)fail(owner, "has a payload op '" + name + "' with no exact torch equivalent");
  return std::nullopt;
}

/// linalg.index d: the loop index along d, an arange laid along that dim of
/// the iteration space (broadcasting against the other operands).
std::optional<int> Builder::loopIndex(Operation *owner, unsigned dim) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
  if (!linalgOp) {
    (void)fail(owner, "reads a loop index outside a structured op");
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> extents = loopSizes(linalgOp);
  if (!extents) {
    (void)fail(owner, "has a dynamic loop extent that is no input's size");
    return std::nullopt;
  }
  const std::vector<int64_t> &loops = *extents;
  std::vector<int64_t> shape(loops.size(), 1);
  shape[dim] = loops[dim];
  return emit(RefFn::Arange, {}, TensorType{shape, DType::Int64},
              {{"dim", {static_cast<int64_t>(dim)}}});
}


/// tensor.extract in a payload: the element of a tensor from outside at
/// indices computed per point of the iteration space, torch's advanced
/// indexing `src[i0, i1, ...]` (the indices broadcast to that space).
std::optional<int> Builder::gather(Operation *owner, tensor::ExtractOp extract,
                                   ArrayRef<int> args) {
  int source = args[0];
  if (args.size() == 1)
    return source; // a 0-d tensor: its one element, broadcast
  std::vector<int> indices(args.begin() + 1, args.end());
  std::vector<int64_t> shape;
  for (int i : indices)
    shape = broadcastShape(shape, type(i).shape);
  std::vector<int> operands{source};
  for (int i : indices)
    operands.push_back(castTo(i, DType::Int64));
  return emit(RefFn::Index, operands, TensorType{shape, type(source).dtype});
}

/// a <u b (or <=u) on signed tensors of one width: where both have the same
/// sign the unsigned order is the signed one; otherwise the negative one
/// (high bit set) is the larger.
int Builder::unsignedLess(int a, int b, bool orEqual) {
  std::vector<int64_t> shape = broadcastShape(type(a).shape, type(b).shape);
  TensorType boolean{shape, DType::Bool};
  int zero = emit(RefFn::Scalar, {}, TensorType{{}, type(a).dtype}, {}, 0);
  int aNeg = emit(RefFn::Lt, {a, zero}, TensorType{type(a).shape, DType::Bool});
  int bNeg = emit(RefFn::Lt, {b, zero}, TensorType{type(b).shape, DType::Bool});
  int same = emit(RefFn::Eq, {aNeg, bNeg}, boolean);
  int ordered = emit(orEqual ? RefFn::Le : RefFn::Lt, {a, b}, boolean);
  return emit(RefFn::Where, {same, ordered, bNeg}, boolean);
}

/// The unsigned value of a signless integer tensor, in the wider dtype
/// `wider` (a signed integer of more bits, or a float).
std::optional<int> Builder::asUnsigned(Operation *op, int id, DType wider) {
  unsigned width = bitWidth(type(id).dtype);
  if (width == 0 || width >= 64 || (!isFloatingPoint(wider) && bitWidth(wider) <= width)) {
    (void)fail(op, "that reads an unsigned " + std::to_string(width) +
                       "-bit value, which no wider torch dtype holds");
    return std::nullopt;
  }
  int zero = emit(RefFn::Scalar, {}, TensorType{{}, type(id).dtype}, {}, 0);
  int negative = emit(RefFn::Lt, {id, zero}, TensorType{type(id).shape, DType::Bool});
  int widened = castTo(id, wider);
  int wrap = emit(RefFn::Scalar, {}, TensorType{{}, wider}, {}, std::ldexp(1.0, width));
  int shifted = emit(RefFn::Add, {widened, wrap}, type(widened));
  return emit(RefFn::Where, {negative, shifted, widened}, type(widened));
}

/// Integer division, remainder, bitwise and unsigned ops, each with torch's
/// exact semantics for the signless value the IR computes. Returns nullopt
/// with `error` empty for an op this does not handle.
std::optional<int> Builder::translateIntegerOp(Operation *op,
                                               ArrayRef<int> argsRef,
                                               DType result) {
  error.clear(); // set below only when a handled op cannot be rendered
  std::vector<int> args(argsRef.begin(), argsRef.end());
  auto shapeOf = [&](ArrayRef<int> ids) {
    std::vector<int64_t> shape;
    for (int id : ids)
      shape = broadcastShape(shape, type(id).shape);
    return shape;
  };
  auto make = [&](RefFn fn, std::vector<int> ids, DType dtype) {
    return emit(fn, ids, TensorType{shapeOf(ids), dtype});
  };
  // Signed: C division truncates, floordivsi floors, remsi takes a's sign.
  if (isa<arith::DivSIOp>(op))
    return make(RefFn::DivTrunc, args, result);
  if (isa<arith::FloorDivSIOp>(op))
    return make(RefFn::DivFloor, args, result);
  if (isa<arith::RemSIOp>(op))
    return make(RefFn::Remainder, args, result);
  if (isa<arith::CeilDivSIOp>(op)) {
    // trunc(a / b), plus one where the remainder is nonzero and has b's
    // sign (the quotient was rounded down).
    int q = make(RefFn::DivTrunc, args, result);
    int r = make(RefFn::Remainder, args, result);
    int zero = emit(RefFn::Scalar, {}, TensorType{{}, result}, {}, 0);
    DType b = DType::Bool;
    int nonzero = make(RefFn::Ne, {r, zero}, b);
    int same = make(RefFn::Eq, {make(RefFn::Lt, {r, zero}, b), make(RefFn::Lt, {args[1], zero}, b)}, b);
    int up = make(RefFn::LogicalAnd, {nonzero, same}, b);
    return make(RefFn::Add, {q, castTo(up, result)}, result);
  }
  if (bitWidth(result) != 0) {
    if (isa<arith::AndIOp>(op))
      return make(RefFn::BitwiseAnd, args, result);
    if (isa<arith::OrIOp>(op))
      return make(RefFn::BitwiseOr, args, result);
    if (isa<arith::XOrIOp>(op))
      return make(RefFn::BitwiseXor, args, result);
    // torch shifts a signed value arithmetically, as shrsi does.
    if (isa<arith::ShLIOp>(op))
      return make(RefFn::ShiftLeft, args, result);
    if (isa<arith::ShRSIOp>(op))
      return make(RefFn::ShiftRight, args, result);
  }
  // Unsigned comparisons and min/max, composed from signed ones.
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    switch (cmp.getPredicate()) {
    case P::ult: return unsignedLess(args[0], args[1], false);
    case P::ule: return unsignedLess(args[0], args[1], true);
    case P::ugt: return unsignedLess(args[1], args[0], false);
    case P::uge: return unsignedLess(args[1], args[0], true);
    default: return std::nullopt;
    }
  }
  if (isa<arith::MaxUIOp, arith::MinUIOp>(op)) {
    int less = unsignedLess(args[0], args[1], false);
    bool max = isa<arith::MaxUIOp>(op);
    return make(RefFn::Where, {less, args[max ? 1 : 0], args[max ? 0 : 1]}, result);
  }
  // Zero extension and unsigned conversions: the unsigned value, widened.
  if (isa<arith::ExtUIOp, arith::UIToFPOp>(op) &&
      !op->getOperand(0).getType().isInteger(1)) {
    auto wide = asUnsigned(op, args[0], result);
    if (!wide)
      return std::nullopt;
    return castTo(*wide, result);
  }
  if (isa<arith::ShRUIOp>(op) && bitWidth(result) != 0) {
    // A logical shift by b: the arithmetic one with the n - b low bits
    // kept, ~(-1 << (n - b)), where -1 << (n - b) is shifted in two steps
    // so that no shift reaches n (it is 0 for b = 0).
    auto number = [&](double v) { return emit(RefFn::Scalar, {}, TensorType{{}, result}, {}, v); };
    int n = int(bitWidth(result));
    int high = make(RefFn::ShiftLeft, {number(-1), make(RefFn::Sub, {number(n - 1), args[1]}, result)},
                    result);
    int mask = make(RefFn::BitwiseNot, {make(RefFn::ShiftLeft, {high, number(1)}, result)}, result);
    return make(RefFn::BitwiseAnd, {make(RefFn::ShiftRight, args, result), mask}, result);
  }
  if (isa<arith::DivUIOp, arith::RemUIOp>(op)) {
    auto a = asUnsigned(op, args[0], DType::Int64);
    auto b = a ? asUnsigned(op, args[1], DType::Int64) : std::nullopt;
    if (!b)
      return std::nullopt;
    int q = make(isa<arith::DivUIOp>(op) ? RefFn::DivTrunc : RefFn::Remainder, {*a, *b},
                 DType::Int64);
    return castTo(q, result); // the low bits: what the unsigned op yields
  }
  if (isa<arith::FPToUIOp>(op)) {
    if (bitWidth(result) >= 64) {
      (void)fail(op, "that converts to an unsigned 64-bit value, which no "
                     "torch dtype holds");
      return std::nullopt;
    }
    // In range [0, 2^n) the value fits int64; narrowing keeps its bits.
    return castTo(castTo(args[0], DType::Int64), result);
  }
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
        emit(RefFn::Pad, {*in}, out,
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
    // A dynamic size of a slice that keeps its rank is the result's size
    // symbol; offsets and strides must be static.
    bool keepsRank = slice.getResultType().getRank() == slice.getSourceType().getRank();
    if (keepsRank && !llvm::any_of(slice.getStaticOffsets(), ShapedType::isDynamic) &&
        !llvm::any_of(slice.getStaticStrides(), ShapedType::isDynamic)) {
      ints["offsets"] = toStd(slice.getStaticOffsets());
      ints["strides"] = toStd(slice.getStaticStrides());
      ints["sizes"] = out.shape;
    } else if (!staticSlice(slice, ints)) {
      return fail(op, "has dynamic offsets, sizes or strides");
    }
    int sliced = emit(RefFn::Slice, {*in}, TensorType{ints["sizes"], out.dtype}, ints);
    values[slice.getResult()] = reshape(sliced, out.shape); // rank-reducing
    return success();
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    std::map<std::string, std::vector<int64_t>> ints;
    // As for extract_slice: a dynamic size of a slice of the destination's
    // rank is the source's size symbol (a transposed convolution's
    // zero-stuffed input with a dynamic batch).
    bool keepsRank = insert.getSourceType().getRank() == insert.getType().getRank();
    if (keepsRank && !llvm::any_of(insert.getStaticOffsets(), ShapedType::isDynamic) &&
        !llvm::any_of(insert.getStaticStrides(), ShapedType::isDynamic)) {
      ints["offsets"] = toStd(insert.getStaticOffsets());
      ints["strides"] = toStd(insert.getStaticStrides());
      ints["sizes"] = type(*in).shape;
    } else if (!staticSlice(insert, ints)) {
      return fail(op, "has dynamic offsets, sizes or strides");
    }
    auto dest = get(insert.getDest());
    if (!dest)
      return fail(op, error);
    values[insert.getResult()] = emit(RefFn::InsertSlice, {*in, *dest}, out, ints);
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
        emit(RefFn::Cat, args, out, {{"dim", {static_cast<int64_t>(concat.getDim())}}});
    return success();
  }
  return fail(op, "has no reference rendering");
}

} // namespace

/// The program with only the ops of `order` (indices into its ops), in that
/// order; every reader of an op comes after it in `order`.
static ReferenceProgram withOps(const ReferenceProgram &program,
                                const std::vector<int> &order) {
  int numInputs = static_cast<int>(program.inputs.size());
  ReferenceProgram out;
  out.inputs = program.inputs;
  out.symbols = program.symbols;
  std::vector<int> renumber(numInputs + program.ops.size(), -1);
  for (int i = 0; i < numInputs; ++i)
    renumber[i] = i;
  for (int i : order) {
    RefOp op = program.ops[i];
    for (int &a : op.args)
      a = renumber[a];
    renumber[numInputs + i] = out.add(std::move(op));
  }
  for (int result : program.outputs)
    out.outputs.push_back(renumber[result]);
  return out;
}

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
  std::vector<int> order;
  for (size_t i = 0; i < program.ops.size(); ++i)
    if (live[numInputs + i])
      order.push_back(static_cast<int>(i));
  return withOps(program, order);
}

/// Constants (`scalar`, `full`) first, in the order the other ops first read
/// them; every other op where it stood. The block's constants stand where
/// MLIR's folding and hoisting left them, which reverses them each time a
/// printed program is exported again: ordered by use, a program rendered
/// from its own printed form comes back as itself (the data engine's
/// prompts rest on this, docs/corpus.md).
static ReferenceProgram orderConstantsByUse(const ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  int numOps = static_cast<int>(program.ops.size());
  auto isConstant = [&](int i) {
    const RefOp &op = program.ops[i];
    return op.args.empty() && (op.fn == RefFn::Scalar || op.fn == RefFn::Full);
  };
  std::vector<int> firstReader(numOps, numOps);
  for (int i = 0; i < numOps; ++i)
    if (!isConstant(i))
      for (int a : program.ops[i].args)
        if (a >= numInputs && firstReader[a - numInputs] == numOps)
          firstReader[a - numInputs] = i;
  std::vector<int> order;
  for (int i = 0; i < numOps; ++i)
    if (isConstant(i))
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return firstReader[a] < firstReader[b]; });
  for (int i = 0; i < numOps; ++i)
    if (!isConstant(i))
      order.push_back(i);
  return withOps(program, order);
}

std::optional<ReferenceProgram>
buildOpProgram(Operation *op, SmallVectorImpl<Value> &inputs,
               SmallVectorImpl<Value> &outputs, std::string &whyNot,
               DynamicSizes *sizes) {
  // The op alone, its operands standing in as inputs; the constants it
  // reads or captures in its payload come along. Inputs first: value
  // numbers of ops follow the inputs.
  std::optional<DynamicSizes> ownSizes;
  if (!sizes)
    sizes = &ownSizes.emplace(*op->getBlock());
  Builder builder(*sizes);
  SmallVector<Operation *> constants;
  llvm::DenseSet<Value> seen;
  // Values its payload captures count as operands: a gather's source tensor
  // is one (tensor.extract in the payload).
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  SmallVector<Value> operands(op->getOperands());
  operands.append(captured.begin(), captured.end());
  SmallVector<Operation *> numbers;
  for (size_t i = 0; i < operands.size(); ++i) {
    Value operand = operands[i]; // grows as number computations are walked
    if (!seen.insert(operand).second)
      continue;
    if (auto dim = operand.getDefiningOp<tensor::DimOp>()) {
      // A dynamic size: read from its tensor, which is an input too.
      Value source = dim.getSource();
      if (seen.insert(source).second) {
        if (failed(builder.addInput(source))) {
          whyNot = "'" + op->getName().getStringRef().str() + "' size: " + builder.error;
          return std::nullopt;
        }
        inputs.push_back(source);
      }
      constants.push_back(dim);
      continue;
    }
    if (operand.getType().isIndex() && !operand.getDefiningOp<arith::ConstantOp>())
      continue; // a size computed otherwise: the symbols carry what they can
    // Scalars, splats and empties are part of the op; a weight is an input.
    Operation *def = operand.getDefiningOp();
    if (def && !isa<arith::ConstantOp>(def) && isNumberComputation(def)) {
      // Arithmetic on numbers (`n + 1` of a Python int) is part of the op
      // too; what it reads (the scalar arguments) is walked as operands.
      numbers.push_back(def);
      operands.append(def->getOperands().begin(), def->getOperands().end());
      continue;
    }
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
  // A destination sized at run time by no input of the op is sized by an
  // argument of the function that has that size: it becomes an input too.
  auto hasSize = [&](int cls) {
    for (Value input : inputs)
      if (auto type = dyn_cast<RankedTensorType>(input.getType()))
        for (unsigned d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d) && sizes->classOf(input, d) == cls)
            return true;
    return false;
  };
  for (Operation *constant : constants) {
    auto empty = dyn_cast<tensor::EmptyOp>(constant);
    for (unsigned d = 0; empty && d < empty.getType().getRank(); ++d) {
      std::optional<int> cls =
          empty.getType().isDynamicDim(d) ? sizes->classOf(empty.getResult(), d) : std::nullopt;
      if (!cls || hasSize(*cls) || sizes->resolve(*cls).staticSize)
        continue;
      auto holder = sizes->firstHolder(*cls, *op->getBlock());
      if (!holder) {
        // A multiple of a size an argument has (a count of flattened
        // updates): that argument comes in, the program derives the rest.
        auto [root, factor] = sizes->rootOf(*cls);
        if (root != *cls && !hasSize(root) && !sizes->resolve(root).staticSize)
          holder = sizes->firstHolder(root, *op->getBlock());
      }
      if (!holder || failed(builder.addInput(holder->first)))
        continue; // the translation says why
      inputs.push_back(holder->first);
    }
  }
  for (Operation *constant : constants)
    if (failed(builder.translate(constant))) {
      whyNot = builder.error;
      return std::nullopt;
    }
  // Each number computation after what it reads (walked readers first).
  llvm::sort(numbers, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *number : numbers)
    if (failed(builder.translate(number))) {
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
  ReferenceProgram program = pruneDeadOps(builder.program);
  raiseCompoundOps(program);
  return orderConstantsByUse(program);
}

bool isReadForeignOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return !op->getDialect() &&
         (name == "tm_tensor.scan" || name == "tm_tensor.scatter" || name == "tm_tensor.sort");
}

std::optional<std::string> whyNotRenderable(Operation *op, DynamicSizes *sizes) {
  SmallVector<Value> inputs, outputs;
  std::string whyNot;
  if (!buildOpProgram(op, inputs, outputs, whyNot, sizes))
    return whyNot;
  return std::nullopt;
}

std::optional<ReferenceProgram> buildReferenceProgram(Region &region,
                                                      std::string &whyNot) {
  Block &block = region.front();
  DynamicSizes sizes(block);
  Builder builder(sizes);
  // The example sizes of the inputs' dynamic dimensions, where the request
  // (or function) holding the region records them.
  auto examples = region.getParentOp()->getAttrOfType<ArrayAttr>(kExampleShapesAttr);
  for (BlockArgument arg : block.getArguments()) {
    ArrayRef<int64_t> example;
    if (examples && arg.getArgNumber() < examples.size())
      if (auto shape = dyn_cast<DenseI64ArrayAttr>(examples[arg.getArgNumber()]))
        example = shape.asArrayRef();
    if (failed(builder.addInput(arg, example))) {
      whyNot = builder.error;
      return std::nullopt;
    }
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
  // What the model reads and the verifier times is the user's function
  // (softmax), not torch-mlir's decomposition of it.
  raiseCompoundOps(builder.program);
  builder.program = orderConstantsByUse(builder.program);
  std::string invalid = builder.program.validate();
  if (!invalid.empty()) {
    whyNot = "internal error: " + invalid;
    return std::nullopt;
  }
  return std::move(builder.program);
}

} // namespace dice
