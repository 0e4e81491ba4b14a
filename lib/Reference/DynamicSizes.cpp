//===- DynamicSizes.cpp - which dynamic dimensions are the same size -----===//

#include "dice/Reference/DynamicSizes.h"
#include "dice/Reference/ReferenceBuilder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;

namespace dice {

DynamicSizes::DynamicSizes(Block &block) {
  for (BlockArgument argument : block.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(argument.getType()))
      for (unsigned d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          node(argument, d);
  for (Operation &op : block)
    visit(&op);
}

int DynamicSizes::fresh() {
  parent.push_back(static_cast<int>(parent.size()));
  known.emplace_back();
  return parent.back();
}

int DynamicSizes::node(Value value, unsigned dim) {
  auto [it, inserted] = nodes.try_emplace({value, dim}, 0);
  if (inserted)
    it->second = fresh();
  return it->second;
}

int DynamicSizes::find(int n) {
  while (parent[n] != n)
    n = parent[n] = parent[parent[n]];
  return n;
}

void DynamicSizes::unite(int a, int b) {
  a = find(a);
  b = find(b);
  if (a == b)
    return;
  // The lower node (met first) stays the root; what either side knew is
  // kept, a static size first.
  if (b < a)
    std::swap(a, b);
  parent[b] = a;
  Size &root = known[a];
  const Size &other = known[b];
  if (!root.staticSize && other.staticSize)
    root.staticSize = other.staticSize;
  if (root.base < 0 && other.base >= 0 && find(other.base) != a) {
    root.base = other.base;
    root.factor = other.factor;
    return;
  }
  // Both sides were multiples: `fa * ba == fb * bb` relates the two bases
  // (a flattened batch met once as 2 x batch, once as 2 x a size computed
  // from it), which would be lost if only one side's base were kept.
  if (root.base >= 0 && other.base >= 0) {
    int ba = root.base, bb = other.base;
    int64_t fa = root.factor, fb = other.factor;
    if (fa == fb)
      unite(ba, bb);
    else if (fa % fb == 0)
      setMultiple(bb, ba, fa / fb);
    else if (fb % fa == 0)
      setMultiple(ba, bb, fb / fa);
  }
}

void DynamicSizes::setStatic(int n, int64_t size) {
  known[find(n)].staticSize = size;
}

void DynamicSizes::setMultiple(int child, int base, int64_t factor) {
  // Two sizes that are the same multiple of one size are one size.
  auto [it, added] = multiples.try_emplace({find(base), factor}, child);
  if (!added) {
    unite(child, it->second);
    return;
  }
  Size &size = known[find(child)];
  if (size.base >= 0 && size.factor == factor) {
    unite(size.base, base); // the same multiple of two sizes: they are equal
    return;
  }
  if (size.base < 0 && find(base) != find(child)) {
    size.base = find(base);
    size.factor = factor;
  }
}

void DynamicSizes::tie(Value value, unsigned dim, int n) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || dim >= type.getRank())
    return;
  if (type.isDynamicDim(dim))
    unite(node(value, dim), n);
  else
    setStatic(n, type.getDimSize(dim));
}

std::optional<int> DynamicSizes::classOf(Value value, unsigned dim) {
  auto it = nodes.find({value, dim});
  if (it == nodes.end())
    return std::nullopt;
  return find(it->second);
}

std::optional<std::pair<Value, unsigned>> DynamicSizes::firstHolder(int cls, Block &block) {
  for (BlockArgument argument : block.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(argument.getType()))
      for (unsigned d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d) && classOf(argument, d) == find(cls))
          return std::pair<Value, unsigned>(argument, d);
  return std::nullopt;
}

std::pair<int, int64_t> DynamicSizes::rootOf(int cls) {
  Size size = resolve(cls);
  if (size.base >= 0)
    return {find(size.base), size.factor};
  return {find(cls), 1};
}

void DynamicSizes::rename(Value from, Value to) {
  auto type = dyn_cast<RankedTensorType>(from.getType());
  for (unsigned d = 0; type && d < type.getRank(); ++d)
    if (auto it = nodes.find({from, d}); it != nodes.end()) {
      int n = it->second; // read before the insertion may move the table
      nodes[{to, d}] = n;
    }
}

DynamicSizes::Size DynamicSizes::resolve(int cls) {
  int root = find(cls), current = root;
  int64_t factor = 1;
  for (size_t steps = 0; steps <= parent.size(); ++steps) {
    const Size &size = known[current];
    if (size.staticSize)
      return Size{*size.staticSize * factor, -1, 1};
    if (size.base < 0)
      return current == root ? Size{} : Size{std::nullopt, current, factor};
    factor *= size.factor;
    current = find(size.base);
  }
  return Size{}; // a cycle of multiples: treated as free
}

void DynamicSizes::visitReassociation(
    Value collapsed, Value expanded,
    ArrayRef<SmallVector<int64_t, 2>> groups) {
  auto collapsedType = cast<RankedTensorType>(collapsed.getType());
  auto expandedType = cast<RankedTensorType>(expanded.getType());
  for (auto [i, group] : llvm::enumerate(groups)) {
    int64_t staticProduct = 1;
    SmallVector<int64_t> dynamic;
    for (int64_t d : group) {
      if (expandedType.isDynamicDim(d))
        dynamic.push_back(d);
      else
        staticProduct *= expandedType.getDimSize(d);
    }
    if (dynamic.size() != 1)
      continue; // a product of several unknowns: not tracked
    int part = node(expanded, dynamic[0]);
    if (!collapsedType.isDynamicDim(i)) {
      if (staticProduct != 0)
        setStatic(part, collapsedType.getDimSize(i) / staticProduct);
      continue;
    }
    int whole = node(collapsed, i);
    if (staticProduct == 1)
      unite(whole, part);
    else if (staticProduct > 1)
      setMultiple(whole, part, staticProduct);
  }
}

/// Ties `a`'s dynamic dimensions to `b`'s (one value seen twice).
void DynamicSizes::tieValues(Value a, Value b) {
  auto type = dyn_cast<RankedTensorType>(a.getType());
  if (!type || a.getType() != b.getType())
    return;
  for (unsigned d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      unite(node(a, d), node(b, d));
}

std::optional<DynamicSizes::SizeExpr> DynamicSizes::sizeExpr(Value value) {
  auto constant = [](Value v) -> std::optional<int64_t> {
    if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
      return c.value();
    return std::nullopt;
  };
  auto scaled = [&](Value v, int64_t times, int64_t per) -> std::optional<SizeExpr> {
    std::optional<SizeExpr> inner = sizeExpr(v);
    if (!inner || times <= 0 || per <= 0)
      return std::nullopt;
    inner->times *= times;
    inner->per *= per;
    int64_t common = std::gcd(inner->times, inner->per);
    inner->times /= common;
    inner->per /= common;
    return inner;
  };
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (!index || !type || *index >= type.getRank() || !type.isDynamicDim(*index))
      return std::nullopt;
    return SizeExpr{find(node(dim.getSource(), *index)), 1, 1};
  }
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    if (std::optional<int64_t> c = constant(mul.getRhs()))
      return scaled(mul.getLhs(), *c, 1);
    if (std::optional<int64_t> c = constant(mul.getLhs()))
      return scaled(mul.getRhs(), *c, 1);
    return std::nullopt;
  }
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    // `size < 0 ? other : size` (torch-mlir's guard of a view's -1): a
    // size is never negative, so it is the size.
    auto compare = select.getCondition().getDefiningOp<arith::CmpIOp>();
    Value tested = compare ? compare.getLhs() : Value();
    if (auto cast = tested ? tested.getDefiningOp<arith::IndexCastOp>() : nullptr)
      tested = cast.getIn();
    if (compare && compare.getPredicate() == arith::CmpIPredicate::slt &&
        matchPattern(compare.getRhs(), m_Zero()) && tested == select.getFalseValue())
      return sizeExpr(select.getFalseValue());
    return std::nullopt;
  }
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp>(def))
    if (std::optional<int64_t> c = constant(def->getOperand(1)))
      return scaled(def->getOperand(0), 1, *c);
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
    // One operand, times or divided by a constant.
    AffineMap map = apply.getAffineMap();
    if (map.getNumResults() != 1 || apply.getMapOperands().size() != 1)
      return std::nullopt;
    AffineExpr expr = map.getResult(0);
    if (isa<AffineDimExpr, AffineSymbolExpr>(expr))
      return scaled(apply.getMapOperands()[0], 1, 1);
    auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
    auto c = binary ? dyn_cast<AffineConstantExpr>(binary.getRHS()) : AffineConstantExpr();
    if (!binary || !c || !isa<AffineDimExpr, AffineSymbolExpr>(binary.getLHS()))
      return std::nullopt;
    if (expr.getKind() == AffineExprKind::Mul)
      return scaled(apply.getMapOperands()[0], c.getValue(), 1);
    if (expr.getKind() == AffineExprKind::FloorDiv)
      return scaled(apply.getMapOperands()[0], 1, c.getValue());
  }
  return std::nullopt;
}

void DynamicSizes::tieToSize(Value value, unsigned dim, Value size) {
  std::optional<SizeExpr> expr = sizeExpr(size);
  if (!expr)
    return;
  int here = node(value, dim);
  if (expr->times == expr->per)
    unite(here, expr->cls);
  else if (expr->per == 1)
    setMultiple(here, expr->cls, expr->times);
  else if (expr->times == 1)
    setMultiple(expr->cls, here, expr->per);
}

void DynamicSizes::visit(Operation *op) {
  // torch-mlir's scan, scatter and sort (tm_tensor, read by name) write
  // their results into their last operands, in place: each result has the
  // shape of its operand.
  if (isReadForeignOp(op)) {
    unsigned first = op->getNumOperands() - op->getNumResults();
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      tieValues(result, op->getOperand(first + i));
    return;
  }
  // An op holding one block that takes the op's operands and yields its
  // results (a kernel request): its body relates the sizes too.
  if (!isa<linalg::LinalgOp>(op) && op->getNumRegions() == 1 &&
      op->getRegion(0).hasOneBlock()) {
    Block &body = op->getRegion(0).front();
    Operation *terminator = body.empty() ? nullptr : &body.back();
    if (body.getNumArguments() == op->getNumOperands() && terminator &&
        terminator->getNumOperands() == op->getNumResults()) {
      for (auto [operand, argument] : llvm::zip(op->getOperands(), body.getArguments()))
        tieValues(operand, argument);
      for (Operation &inner : body)
        visit(&inner);
      for (auto [result, yielded] : llvm::zip(op->getResults(), terminator->getOperands()))
        tieValues(result, yielded);
      return;
    }
  }
  llvm::TypeSwitch<Operation *>(op)
      .Case<linalg::LinalgOp>([&](linalg::LinalgOp linalg) {
        SmallVector<int> loops;
        for (unsigned l = 0; l < linalg.getNumLoops(); ++l)
          loops.push_back(fresh());
        for (OpOperand &operand : linalg->getOpOperands()) {
          AffineMap map = linalg.getMatchingIndexingMap(&operand);
          for (auto [position, expr] : llvm::enumerate(map.getResults()))
            if (auto dimExpr = dyn_cast<AffineDimExpr>(expr))
              tie(operand.get(), position, loops[dimExpr.getPosition()]);
        }
        // A result has its init's shape.
        for (auto [result, init] :
             llvm::zip(linalg->getResults(), linalg.getDpsInits()))
          if (auto type = dyn_cast<RankedTensorType>(result.getType()))
            for (unsigned d = 0; d < type.getRank(); ++d)
              if (type.isDynamicDim(d))
                tie(init, d, node(result, d));
      })
      .Case<tensor::EmptyOp>([&](tensor::EmptyOp empty) {
        RankedTensorType type = empty.getType();
        for (unsigned d = 0; d < type.getRank(); ++d) {
          if (!type.isDynamicDim(d))
            continue;
          tieToSize(empty.getResult(), d, empty.getDynamicSize(d));
        }
      })
      .Case<tensor::ExpandShapeOp>([&](tensor::ExpandShapeOp expand) {
        visitReassociation(expand.getSrc(), expand.getResult(),
                           expand.getReassociationIndices());
      })
      .Case<tensor::CollapseShapeOp>([&](tensor::CollapseShapeOp collapse) {
        visitReassociation(collapse.getResult(), collapse.getSrc(),
                           collapse.getReassociationIndices());
      })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp slice) {
        // A dynamic size of the slice is the size it was given.
        RankedTensorType type = slice.getResultType();
        if (type.getRank() != slice.getSourceType().getRank())
          return; // rank-reducing: positions do not line up
        for (auto [d, size] : llvm::enumerate(slice.getMixedSizes()))
          if (auto value = dyn_cast<Value>(size); value && type.isDynamicDim(d))
            tieToSize(slice.getResult(), d, value);
      })
      .Case<tensor::PadOp>([&](tensor::PadOp pad) {
        // An unpadded dimension keeps its size.
        for (unsigned d = 0; d < pad.getResultType().getRank(); ++d)
          if (pad.getResultType().isDynamicDim(d) && pad.getStaticLow()[d] == 0 &&
              pad.getStaticHigh()[d] == 0)
            tie(pad.getSource(), d, node(pad.getResult(), d));
      })
      .Case<tensor::ConcatOp>([&](tensor::ConcatOp concat) {
        // Every dimension but the one concatenated along is every input's.
        RankedTensorType type = concat.getResultType();
        for (unsigned d = 0; d < type.getRank(); ++d)
          if (d != concat.getDim() && type.isDynamicDim(d))
            for (Value input : concat.getInputs())
              tie(input, d, node(concat.getResult(), d));
      })
      .Case<tensor::InsertSliceOp>([&](tensor::InsertSliceOp insert) {
        tieValues(insert.getDest(), insert.getResult());
      })
      .Case<tensor::CastOp>([&](tensor::CastOp cast) {
        auto type = dyn_cast<RankedTensorType>(cast.getType());
        auto source = dyn_cast<RankedTensorType>(cast.getSource().getType());
        if (!type || !source || type.getRank() != source.getRank())
          return;
        for (unsigned d = 0; d < type.getRank(); ++d) {
          if (type.isDynamicDim(d))
            tie(cast.getSource(), d, node(cast.getResult(), d));
          else if (source.isDynamicDim(d))
            setStatic(node(cast.getSource(), d), type.getDimSize(d));
        }
      });
}

} // namespace dice
