//===- Outline.cpp - form dice.kernel_request ops -------------------------===//
//
// Each op of a function body gets a role: a rematerializable producer
// (scalar or splat constant, tensor.empty, a fill of those), a weight (a
// dense constant, or an op computing only from weights), or work (structured
// linalg ops and tensor data movement). Work is grouped by granularity; each
// group becomes a request whose operands are the tensors it reads from
// outside, weights included, with its rematerializable producers cloned
// inside. Work the reference program cannot render stays outside with a
// remark. Every op of an outlined block gets its original index
// (`dice.position`) for dice-resolve.
//
//===----------------------------------------------------------------------===//

#include "FusionPolicy.h"

#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Reference/DynamicSizes.h"
#include "dice/Reference/Fingerprint.h"
#include "dice/Reference/ReferenceBuilder.h"
#include "dice/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <numeric>

namespace mlir::dice {
#define GEN_PASS_DEF_DICEOUTLINE
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

bool llvm::cl::parser<Granularity>::parse(Option &option, StringRef argName,
                                          StringRef arg, Granularity &value) {
  if (std::optional<Granularity> parsed = symbolizeGranularity(arg)) {
    value = *parsed;
    return false;
  }
  SmallVector<std::string> names;
  for (uint32_t i = 0; i <= getMaxEnumValForGranularity(); ++i)
    if (std::optional<Granularity> known = symbolizeGranularity(i))
      names.push_back(("'" + stringifyGranularity(*known) + "'").str());
  std::string valid = llvm::join(ArrayRef(names).drop_back(), ", ") + " or " +
                      names.back();
  return option.error("must be " + valid + ", got '" + arg + "'");
}

void llvm::cl::parser<Granularity>::printOptionDiff(
    const Option &option, Granularity value, const OptVal &defaultValue,
    size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= " << stringifyGranularity(value) << " (default: ";
  if (defaultValue.hasValue())
    outs() << stringifyGranularity(defaultValue.getValue());
  else
    outs() << "*no default*";
  outs() << ")\n";
}

void llvm::cl::parser<Granularity>::print(raw_ostream &os, Granularity value) {
  os << stringifyGranularity(value);
}

namespace {

enum class Role {
  Rematerializable, ///< cloned into every request that uses it
  Scalar,           ///< arithmetic on the function's scalar arguments: cloned into requests
  Size,             ///< a dynamic size, or index arithmetic on sizes: read again inside a request
  Weight,           ///< stays outside; its value becomes an operand
  Work,             ///< goes into a request
  Other             ///< stays outside (terminators, unrenderable ops)
};

bool isDataMovement(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
             tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp,
             tensor::ConcatOp>(op);
}

bool isReshape(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(op);
}

bool isTensorOrScalar(Type type) {
  return isa<RankedTensorType>(type) || type.isIntOrIndexOrFloat();
}

/// A number torch has a dtype for (a Python float, int or bool), not a size.
bool isNumber(Type type) { return type.isIntOrFloat(); }

/// Where a request reads a dynamic size: a dimension of one of its
/// operands, times a factor (a flattened dimension's size).
struct SizeSource {
  unsigned operand = 0, dim = 0;
  int64_t factor = 1, divisor = 1; ///< the size is dim * factor / divisor
};

class BlockOutliner {
public:
  BlockOutliner(Block &block, Granularity granularity, bool &changed,
                llvm::Statistic &numRequests, llvm::Statistic &numLeftOut)
      : block(block), granularity(granularity), changed(changed),
        numRequests(numRequests), numLeftOut(numLeftOut), sizes(block) {}

  LogicalResult run() {
    assignRoles();
    std::vector<std::vector<Operation *>> groups = formGroups();
    if (groups.empty())
      return success();
    // Every op, inside a request or not, remembers where it was, so that
    // dice-resolve puts back what falls back exactly as it was.
    setPositions();
    bool outlined = false;
    for (auto &group : groups)
      outlined |= createRequest(group);
    if (!outlined) {
      eraseUnusedWrappers();
      for (Operation &op : block)
        op.removeAttr(DiceDialect::kPositionAttrName);
      return success();
    }
    changed = true;
    // Requests sit where their first op was; order them after their operands.
    // The fusion policy never merges groups into a cycle, so this cannot
    // fail on valid input.
    if (!sortTopologically(&block))
      return block.getParentOp()->emitError()
             << "dice-outline: requests formed a cycle (internal error)";
    eraseDeadProducers();
    return success();
  }

private:
  Block &block;
  Granularity granularity;
  bool &changed;
  llvm::Statistic &numRequests, &numLeftOut;
  /// Which dynamic dimensions of the block are the same size.
  ::dice::DynamicSizes sizes;
  llvm::DenseMap<Operation *, Role> roles;
  llvm::DenseMap<Operation *, unsigned> position;
  /// tensor.pad ops that belong to their only consumer's group.
  llvm::DenseSet<Operation *> ownedPads;
  /// Data movement copied into several requests, and its copies: they
  /// share a position, which dice-resolve uses to merge them back.
  llvm::DenseSet<Operation *> shared;
  /// Each scalar argument's 0-d tensor (scalarOperand).
  llvm::DenseMap<Value, Value> wrappedArguments;

  /// `inputs` in the order a depth-first walk of the outputs' expressions
  /// (operands left to right, then values the op's regions capture) reaches
  /// them; inputs no output depends on keep their order, at the end.
  SmallVector<Value>
  operandsInExpressionOrder(ArrayRef<Value> outputs,
                            const llvm::SetVector<Value> &inputs,
                            const llvm::DenseSet<Operation *> &members,
                            const llvm::SetVector<Operation *> &producers) {
    llvm::SetVector<Value> ordered;
    llvm::DenseSet<Operation *> visited;
    SmallVector<std::pair<Value, bool>> stack; // (value, operands pushed)
    auto visit = [&](Value root) {
      stack.push_back({root, false});
      while (!stack.empty()) {
        auto [value, expanded] = stack.pop_back_val();
        if (inputs.contains(value)) {
          ordered.insert(value);
          continue;
        }
        Operation *def = value.getDefiningOp();
        if (expanded || !def ||
            !(members.contains(def) || producers.contains(def)) ||
            !visited.insert(def).second)
          continue;
        SmallVector<Value> reads(def->getOperands());
        llvm::SetVector<Value> captured;
        getUsedValuesDefinedAbove(def->getRegions(), captured);
        reads.append(captured.begin(), captured.end());
        // Reversed onto the stack, so the first operand is walked first.
        for (Value read : llvm::reverse(reads))
          stack.push_back({read, false});
      }
    };
    for (Value output : outputs)
      visit(output);
    for (Value input : inputs)
      ordered.insert(input);
    return SmallVector<Value>(ordered.begin(), ordered.end());
  }

  /// An op's index in the block before outlining; a request formed in this
  /// run stands at its first op's.
  unsigned placeOf(Operation *op) const {
    if (auto it = position.find(op); it != position.end())
      return it->second;
    if (auto attr =
            op->getAttrOfType<IntegerAttr>(DiceDialect::kPositionAttrName))
      return attr.getInt();
    return ~0u - 1;
  }

  /// The first use of `value` outside `members`: its user's place in the
  /// block, then the operand's number.
  std::pair<unsigned, unsigned>
  firstOutsideUse(Value value,
                  const llvm::DenseSet<Operation *> &members) const {
    std::pair<unsigned, unsigned> first{~0u, ~0u};
    for (OpOperand &use : value.getUses()) {
      Operation *user = block.findAncestorOpInBlock(*use.getOwner());
      if (!user || members.contains(user))
        continue;
      first = std::min(first, std::pair<unsigned, unsigned>(
                                  placeOf(user), use.getOperandNumber()));
    }
    return first;
  }

  /// Whether `user` is one of the group's ops or nested in one: a value
  /// that a member's region reads (a gather's source, read by the
  /// tensor.extract in its body) is read inside the request, not after it.
  bool inGroup(Operation *user, const llvm::DenseSet<Operation *> &members) const {
    Operation *top = block.findAncestorOpInBlock(*user);
    return top && members.contains(top);
  }

  Role roleOf(Operation *op) const {
    auto it = roles.find(op);
    return it == roles.end() ? Role::Other : it->second;
  }
  Role roleOf(Value value) const {
    Operation *def = value.getDefiningOp();
    return def && def->getBlock() == &block ? roleOf(def) : Role::Other;
  }

  /// A scalar argument of the function (a Python number torch-mlir kept in
  /// the signature): a request that reads it takes it as an operand.
  bool isScalarArgument(Value value) const {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &block && isNumber(arg.getType());
  }

  void assignRoles() {
    unsigned index = 0;
    for (Operation &op : block) {
      position[&op] = index++;
      roles[&op] = classify(&op);
    }
  }

  void setPositions() {
    Builder builder(block.getParentOp()->getContext());
    for (Operation &op : block)
      op.setAttr(DiceDialect::kPositionAttrName,
                 builder.getI64IntegerAttr(position[&op]));
  }

  Role classify(Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      return Role::Other;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      Attribute value = constant.getValue();
      if (!isa<ElementsAttr>(value))
        return Role::Rematerializable; // a scalar
      auto dense = dyn_cast<DenseElementsAttr>(value);
      return dense && dense.isSplat() ? Role::Rematerializable : Role::Weight;
    }
    if (isa<tensor::EmptyOp>(op))
      return Role::Rematerializable;
    // Numbers computed from the function's scalar arguments (`n + 1` of a
    // Python int): each request that reads one computes it again from the
    // arguments, which become its operands.
    auto isTensor = [](Type t) { return isa<mlir::TensorType>(t); };
    auto fromArguments = [&](Value v) {
      return isScalarArgument(v) || roleOf(v) == Role::Scalar;
    };
    if (::dice::isNumberComputation(op) && llvm::any_of(op->getOperands(), fromArguments) &&
        llvm::all_of(op->getOperands(), [&](Value v) {
          return fromArguments(v) || roleOf(v) == Role::Rematerializable;
        }))
      return Role::Scalar;
    // Sizes and what is computed from them alone (index arithmetic, the
    // checks torch-mlir asserts on them): read again inside requests.
    if (isa<tensor::DimOp>(op) ||
        (!llvm::any_of(op->getOperandTypes(), isTensor) &&
         !llvm::any_of(op->getResultTypes(), isTensor) && op->getNumRegions() == 0 &&
         op->getNumOperands() > 0 && llvm::all_of(op->getOperands(), [&](Value v) {
           Role r = roleOf(v);
           return r == Role::Size || r == Role::Rematerializable;
         })))
      return Role::Size;
    if (!op->getDialect() && !::dice::isReadForeignOp(op)) {
      op->emitRemark() << "stays outside kernel requests: '" << op->getName()
                       << "' is an op of dialect '" << op->getName().getDialectNamespace()
                       << "', which dice-opt does not know";
      ++numLeftOut;
      return Role::Other;
    }
    if (!isa<linalg::LinalgOp>(op) && !isDataMovement(op) && !::dice::isReadForeignOp(op))
      return Role::Other;

    auto constantDerived = [&](Value v) {
      Role r = roleOf(v);
      return r == Role::Rematerializable || r == Role::Weight;
    };
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    auto dynamic = [](Type type) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      return tensor && !tensor.hasStaticShape();
    };
    if (llvm::all_of(op->getOperands(), constantDerived) &&
        llvm::all_of(captured, constantDerived)) {
      if (isa<linalg::FillOp>(op))
        return Role::Rematerializable;
      // What depends on a run-time size is no weight, whatever it reads;
      // nor is a broadcast (a conv's bias spread over the result): it is
      // cheaper read where it is used than made and read at its size.
      if (llvm::none_of(op->getResultTypes(), dynamic) && !isa<linalg::BroadcastOp>(op) &&
          llvm::any_of(op->getOperands(),
                       [&](Value v) { return roleOf(v) == Role::Weight; }))
        return Role::Weight; // e.g. the transpose of a weight matrix
    }
    if (!llvm::all_of(op->getResultTypes(), isTensorOrScalar))
      return Role::Other;
    if (std::optional<std::string> why = ::dice::whyNotRenderable(op, &sizes)) {
      op->emitRemark() << "stays outside kernel requests: " << *why;
      ++numLeftOut;
      return Role::Other;
    }
    return Role::Work;
  }

  bool isOwnedPad(Operation *op) {
    if (!isa<tensor::PadOp>(op) || !op->hasOneUse())
      return false;
    Operation *user = *op->getUsers().begin();
    return user->getBlock() == &block && roleOf(user) == Role::Work &&
           isa<linalg::LinalgOp>(user);
  }

  std::vector<std::vector<Operation *>> formGroups() {
    std::vector<Operation *> work;
    for (Operation &op : block)
      if (roleOf(&op) == Role::Work)
        work.push_back(&op);
    for (Operation *op : work)
      if (isOwnedPad(op))
        ownedPads.insert(op);

    std::vector<std::vector<Operation *>> groups;
    if (granularity == Granularity::function) {
      // The whole body or nothing: an op left outside would sit between
      // parts of the request.
      for (Operation &op : block)
        if (roleOf(&op) == Role::Other &&
            !op.hasTrait<OpTrait::IsTerminator>()) {
          op.emitRemark() << "the function stays outside a whole-function "
                             "request: this op cannot be part of it";
          ++numLeftOut;
          return groups;
        }
      if (!work.empty())
        groups.push_back(work);
      return groups;
    }

    if (granularity == Granularity::fusion)
      return formFusionGroups(
          {block, work, position, ownedPads,
           [&](Operation *copy, Operation *original) {
             unsigned place = position.lookup(original);
             roles[copy] = Role::Work;
             position[copy] = place;
             shared.insert(copy);
             shared.insert(original);
           },
           sizes});

    for (Operation *op : work) {
      if (ownedPads.contains(op))
        continue; // joins its consumer below
      if (isReshape(op))
        continue; // a reshape alone is no kernel; it stays a view
      groups.emplace_back();
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && ownedPads.contains(def))
          groups.back().push_back(def);
      groups.back().push_back(op);
    }
    return groups;
  }

  /// Adds `op`, and the rematerializable and scalar producers it reads, to
  /// `producers`; the scalar arguments they read, to `arguments`.
  void collectProducers(Operation *op, llvm::SetVector<Operation *> &producers,
                        llvm::SetVector<Value> &arguments) {
    if (!producers.insert(op))
      return;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && (roleOf(def) == Role::Rematerializable || roleOf(def) == Role::Scalar))
        collectProducers(def, producers, arguments);
      else if (isScalarArgument(operand))
        arguments.insert(operand);
    }
  }

  /// `argument` (a scalar) as the 0-d tensor a request takes it in, made
  /// once per function at its start: kernels take tensors, and a reference
  /// program takes a Python number as a 0-d tensor of its dtype.
  Value scalarOperand(Value argument) {
    Value &wrapped = wrappedArguments[argument];
    if (!wrapped) {
      OpBuilder builder = OpBuilder::atBlockBegin(&block);
      wrapped = tensor::FromElementsOp::create(
          builder, argument.getLoc(), RankedTensorType::get({}, argument.getType()),
          ValueRange{argument});
    }
    return wrapped;
  }

  /// Where a request with `operands` reads `times / per` of the size of
  /// class `cls`: a dimension of an operand whose size is a multiple of the
  /// same free size (the dimension itself preferred).
  std::optional<SizeSource> sourceOfSize(ArrayRef<Value> operands, int cls,
                                         int64_t times = 1, int64_t per = 1) {
    auto [root, factor] = sizes.rootOf(cls);
    std::optional<SizeSource> found;
    for (auto [i, operand] : llvm::enumerate(operands)) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      for (unsigned d = 0; type && d < type.getRank(); ++d) {
        std::optional<int> held =
            type.isDynamicDim(d) ? sizes.classOf(operand, d) : std::nullopt;
        if (!held)
          continue;
        auto [heldRoot, heldFactor] = sizes.rootOf(*held);
        if (heldRoot != root)
          continue;
        // size = times / per * factor * root = (times * factor) / (per * heldFactor) * held
        int64_t num = times * factor, den = per * heldFactor;
        int64_t common = std::gcd(num, den);
        SizeSource source{static_cast<unsigned>(i), d, num / common, den / common};
        if (source.factor == 1 && source.divisor == 1)
          return source;
        if (!found)
          found = source;
      }
    }
    return found;
  }

  /// Where a request with `operands` reads dimension `dim` of `value`.
  std::optional<SizeSource> sameSizeIn(ArrayRef<Value> operands, Value value, unsigned dim) {
    std::optional<int> cls = sizes.classOf(value, dim);
    return cls ? sourceOfSize(operands, *cls) : std::nullopt;
  }

  /// Reads a size inside the request: dimension `source.dim` of operand
  /// `source.operand`, times `source.factor`, divided by `source.divisor`.
  /// The op that yields it takes `original`'s position, when given: the
  /// size of the function it stands for, which dice-resolve puts back.
  Value readSize(OpBuilder &builder, Location loc, Block *body, SizeSource source,
                 Operation *original = nullptr) {
    Value size = tensor::DimOp::create(builder, loc, body->getArgument(source.operand),
                                       source.dim);
    if (source.factor != 1)
      size = arith::MulIOp::create(
          builder, loc, size, arith::ConstantIndexOp::create(builder, loc, source.factor));
    if (source.divisor != 1)
      size = arith::DivSIOp::create(
          builder, loc, size, arith::ConstantIndexOp::create(builder, loc, source.divisor));
    if (original)
      size.getDefiningOp()->setDiscardableAttrs(original->getDiscardableAttrDictionary());
    return size;
  }

  /// Appends to `operands` an argument of the function that has a size of
  /// class `cls`: the kernel reads that size from it. Where, if one has.
  std::optional<SizeSource> sizeHolder(SmallVectorImpl<Value> &operands, int cls) {
    auto holder = sizes.firstHolder(cls, block);
    if (!holder)
      return std::nullopt;
    operands.push_back(holder->first);
    return SizeSource{static_cast<unsigned>(operands.size() - 1), holder->second};
  }

  /// The size the function was exported with at dimension `dim` of
  /// `value` (its arguments' `dice.example_shape`), if one is known.
  std::optional<int64_t> exampleSize(Value value, unsigned dim) {
    std::optional<int> cls = sizes.classOf(value, dim);
    if (!cls)
      return std::nullopt;
    ::dice::DynamicSizes::Size size = sizes.resolve(*cls);
    if (size.staticSize)
      return *size.staticSize;
    int free = size.base >= 0 ? size.base : *cls;
    auto function = dyn_cast<FunctionOpInterface>(block.getParentOp());
    for (BlockArgument arg : block.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      auto example = function ? function.getArgAttrOfType<DenseI64ArrayAttr>(
                                    arg.getArgNumber(), ::dice::kExampleShapeAttr)
                              : DenseI64ArrayAttr();
      if (!type || !example || example.size() != type.getRank())
        continue;
      for (unsigned d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d) && sizes.classOf(arg, d) == free)
          return example[d] * size.factor;
    }
    return std::nullopt;
  }

  /// The example shape of each operand (dynamic sizes at their examples,
  /// unknown ones -1), or null when every operand is static.
  ArrayAttr exampleShapes(OpBuilder &builder, ArrayRef<Value> operands) {
    SmallVector<Attribute> shapes;
    bool dynamic = false;
    for (Value operand : operands) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      SmallVector<int64_t> shape(type ? type.getShape() : ArrayRef<int64_t>{});
      for (unsigned d = 0; d < shape.size(); ++d)
        if (ShapedType::isDynamic(shape[d])) {
          dynamic = true;
          shape[d] = exampleSize(operand, d).value_or(-1);
        }
      shapes.push_back(builder.getDenseI64ArrayAttr(shape));
    }
    return dynamic ? builder.getArrayAttr(shapes) : ArrayAttr();
  }

  /// Outlines `group` into one request; false when it is not outlined.
  bool createRequest(std::vector<Operation *> &group) {
    llvm::DenseSet<Operation *> members(group.begin(), group.end());
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> producers;
    llvm::SetVector<Value> sizeValues;
    auto consider = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (def && members.contains(def))
        return;
      if (def && (roleOf(def) == Role::Rematerializable || roleOf(def) == Role::Scalar))
        collectProducers(def, producers, inputs);
      else if (def && roleOf(def) == Role::Size)
        sizeValues.insert(value);
      else
        inputs.insert(value);
    };
    for (Operation *op : group) {
      for (Value operand : op->getOperands())
        consider(operand);
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      for (Value value : captured)
        consider(value);
    }

    if (llvm::any_of(inputs, [&](Value v) {
          return !isa<RankedTensorType>(v.getType()) && !isScalarArgument(v);
        })) {
      group.front()->emitRemark()
          << "stays outside kernel requests: it reads a scalar that is "
             "computed at run time";
      ++numLeftOut;
      return false;
    }

    SmallVector<Value> outputs;
    for (Operation *op : group)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *u) { return !inGroup(u, members); }))
          outputs.push_back(result);
    if (outputs.empty())
      return false; // nothing outside reads it

    // Results in the order they are first read outside, operands in the
    // order a reader of the results' expressions meets them, not in the
    // order the group's ops happen to be listed: the same computation
    // written with its independent ops the other way round makes the same
    // request, and so the same fingerprint.
    llvm::stable_sort(outputs, [&](Value a, Value b) {
      return firstOutsideUse(a, members) < firstOutsideUse(b, members);
    });
    SmallVector<Value> operands =
        operandsInExpressionOrder(outputs, inputs, members, producers);

    // A size read at run time (tensor.dim) is read inside the request from
    // an operand of the same size; with none, the request could not know it.
    llvm::MapVector<Value, SizeSource> sizeSources;
    for (Value size : sizeValues) {
      std::optional<::dice::DynamicSizes::SizeExpr> expr = sizes.sizeExpr(size);
      std::optional<SizeSource> source;
      if (expr)
        source = sourceOfSize(operands, expr->cls, expr->times, expr->per);
      if (!source && expr && expr->times == 1 && expr->per == 1)
        source = sizeHolder(operands, expr->cls);
      if (!source) {
        group.front()->emitRemark()
            << "stays outside kernel requests: it reads a dynamic size that none "
               "of its operands has";
        ++numLeftOut;
        return false;
      }
      sizeSources[size] = *source;
    }
    // A tensor.empty of a dynamic shape is sized from operands of its sizes
    // (the sizes it was made with are outside values).
    llvm::DenseMap<std::pair<Operation *, unsigned>, SizeSource> emptySizes;
    for (Operation *producer : producers) {
      auto empty = dyn_cast<tensor::EmptyOp>(producer);
      for (unsigned d = 0; empty && d < empty.getType().getRank(); ++d) {
        if (!empty.getType().isDynamicDim(d))
          continue;
        auto source = sameSizeIn(operands, empty.getResult(), d);
        if (!source)
          if (std::optional<int> cls = sizes.classOf(empty.getResult(), d))
            source = sizeHolder(operands, *cls);
        if (!source) {
          group.front()->emitRemark()
              << "stays outside kernel requests: dynamic dimension " << d << " of "
              << empty.getType() << " is a size none of its operands has";
          ++numLeftOut;
          return false;
        }
        emptySizes[{producer, d}] = *source;
      }
    }

    SmallVector<Location> locs;
    for (Operation *op : group)
      locs.push_back(op->getLoc());
    OpBuilder builder(group.front());
    Location loc = builder.getFusedLoc(locs);
    // Each granularity's value is the KernelBench level it forms.
    int32_t level = static_cast<int32_t>(granularity);
    if (level == 2 && llvm::count_if(group, [](Operation *op) {
                        return isa<linalg::LinalgOp>(op) &&
                               !isPureDataMovement(op);
                      }) == 1)
      level = 1; // one compute op, its operands rearranged: a single-op task
    SmallVector<Value> requestOperands;
    for (Value operand : operands)
      requestOperands.push_back(isScalarArgument(operand) ? scalarOperand(operand) : operand);
    auto request = KernelRequestOp::create(
        builder, loc, ValueRange(outputs).getTypes(), requestOperands, "00000000", level,
        /*scaffold=*/nullptr, /*model=*/nullptr, /*gpu_arch=*/nullptr, /*candidates=*/nullptr);

    // Where a kernel call would stand: the first op of the group that is
    // no shared data movement, so that no request has the position of
    // ops of other requests (every group has one: a copy goes to a group
    // with an op that reads it).
    Operation *anchor = *llvm::find_if(
        group, [&](Operation *op) { return !shared.contains(op); });
    request->setAttr(DiceDialect::kPositionAttrName,
                     builder.getI64IntegerAttr(position[anchor]));
    if (ArrayAttr examples = exampleShapes(builder, requestOperands))
      request->setAttr(::dice::kExampleShapesAttr, examples);
    Block *body = builder.createBlock(&request.getBody());
    IRMapping mapping;
    for (auto [input, operand] : llvm::zip_equal(operands, requestOperands)) {
      BlockArgument arg = body->addArgument(operand.getType(), input.getLoc());
      if (input == operand)
        mapping.map(input, arg);
      else // a scalar argument: its number again
        mapping.map(input, tensor::ExtractOp::create(builder, input.getLoc(), arg,
                                                     ValueRange{}).getResult());
    }
    SmallVector<Operation *> ordered(producers.begin(), producers.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    for (auto [size, source] : sizeSources)
      mapping.map(size, readSize(builder, size.getLoc(), body, source, size.getDefiningOp()));
    for (Operation *producer : ordered) {
      auto empty = dyn_cast<tensor::EmptyOp>(producer);
      if (!empty || empty.getType().hasStaticShape()) {
        builder.clone(*producer, mapping);
        continue;
      }
      SmallVector<Value> dynamicSizes;
      for (unsigned d = 0; d < empty.getType().getRank(); ++d)
        if (empty.getType().isDynamicDim(d))
          dynamicSizes.push_back(
              readSize(builder, empty.getLoc(), body, emptySizes.lookup({producer, d})));
      auto sized = tensor::EmptyOp::create(builder, empty.getLoc(), empty.getType(),
                                           dynamicSizes);
      sized->setDiscardableAttrs(empty->getDiscardableAttrDictionary()); // its position
      mapping.map(empty.getResult(), sized.getResult());
    }
    for (Operation *op : group)
      builder.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value output : outputs)
      yielded.push_back(mapping.lookup(output));
    YieldOp::create(builder, loc, yielded);
    // Each op renders alone; the request as a whole may still not (a
    // dynamic size its operands do not relate): then it is not formed.
    std::string whyNot;
    std::optional<::dice::ReferenceProgram> program =
        ::dice::buildReferenceProgram(request.getBody(), whyNot);
    if (!program) {
      request.erase();
      group.front()->emitRemark() << "stays outside kernel requests: " << whyNot;
      ++numLeftOut;
      return false;
    }

    for (auto [output, result] : llvm::zip(outputs, request.getResults())) {
      sizes.rename(output, result);
      output.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !inGroup(use.getOwner(), members);
      });
    }
    for (Operation *op : llvm::reverse(group))
      op->erase();
    // The fingerprint is the program's (the body did not change since).
    request.setFingerprint(::dice::fingerprintOf(*program));
    ++numRequests;
    return true;
  }

  void eraseDeadProducers() {
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      // A dynamic tensor.empty and the sizes stay: dice-resolve restores
      // them where the requests fall back (the requests read their own).
      if ((roleOf(&op) == Role::Rematerializable || roleOf(&op) == Role::Scalar) &&
          isOpTriviallyDead(&op) && !(isa<tensor::EmptyOp>(op) && op.getNumOperands()))
        op.erase();
    eraseUnusedWrappers();
  }

  /// Scalar arguments wrapped for requests that were then not formed.
  void eraseUnusedWrappers() {
    for (auto [argument, wrapped] : wrappedArguments)
      if (wrapped.use_empty())
        wrapped.getDefiningOp()->erase();
    wrappedArguments.clear();
  }
};

struct OutlinePass : public mlir::dice::impl::DiceOutlineBase<OutlinePass> {
  using Base::Base;

  void runOnOperation() override {
    bool changed = false;
    for (Block &block : getOperation().getBody())
      if (failed(BlockOutliner(block, granularity, changed, numRequests,
                               numLeftOut)
                     .run()))
        return signalPassFailure();
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
