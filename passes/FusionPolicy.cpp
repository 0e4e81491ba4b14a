//===- FusionPolicy.cpp - which ops form one fusion request ---------------===//
//
// The policy of docs/passes.md ("Fusion policy"). Groups grow by merging,
// one candidate at a time, and a merge is made only when the graph of
// groups stays acyclic: a group that a path leaves and re-enters would be a
// request that depends on itself once outlined.
//
//===----------------------------------------------------------------------===//

#include "FusionPolicy.h"

#include "dice/Reference/ReferenceBuilder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
using namespace mlir::dice;

namespace {

/// A linalg.generic that copies its one input into its output through a
/// permutation or a broadcast: data movement written as a loop nest.
bool isCopyGeneric(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return false;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (&body.front() != yield.getOperation() || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != body.getArgument(0))
    return false;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  return maps[0].isProjectedPermutation() && maps[1].isPermutation();
}

} // namespace

bool mlir::dice::isPureDataMovement(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
             tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp,
             tensor::ConcatOp, linalg::TransposeOp, linalg::BroadcastOp,
             linalg::CopyOp>(op) ||
         isCopyGeneric(op);
}

namespace {

/// What a reduction reduces: the shape of the input it reads whole and the
/// dims of that input it reduces. Two reductions with the same rows are two
/// passes over the same rows (softmax's max and sum, layer norm's mean and
/// variance).
struct Rows {
  SmallVector<int64_t> shape;
  SmallVector<unsigned> reduced;
  bool operator==(const Rows &other) const {
    return shape == other.shape && reduced == other.reduced;
  }
};

/// `sizes` tells which dynamic dimensions are the same size: rows of a
/// dynamic shape are the same rows when their dynamic sizes are.
std::optional<Rows> rowsOf(linalg::LinalgOp op, ::dice::DynamicSizes &sizes) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || !map.isPermutation())
      continue;
    Rows rows{SmallVector<int64_t>(type.getShape()), {}};
    bool known = true;
    for (unsigned d = 0; d < rows.shape.size(); ++d)
      if (type.isDynamicDim(d)) {
        std::optional<int> cls = sizes.classOf(input->get(), d);
        known &= cls.has_value();
        rows.shape[d] = cls ? -2 - int64_t(*cls) : 0; // a class, never a size
      }
    if (!known)
      continue;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      if (iterators[map.getDimPosition(i)] == utils::IteratorType::reduction)
        rows.reduced.push_back(i);
    return rows;
  }
  return std::nullopt;
}

enum class Kind {
  Elementwise,  ///< joins a producer's group
  RowReduction, ///< a reduction over rows (sum, max, mean of a dim)
  Heavy,        ///< matmul, convolution, pooling: starts a group
  DataMovement  ///< goes into the group of each op that reads it
};

Kind kindOf(Operation *op, ::dice::DynamicSizes &sizes) {
  if (isPureDataMovement(op))
    return Kind::DataMovement;
  // A scan, a scatter or a sort (tm_tensor, read by name) walks whole rows: it
  // starts a group, as a matmul does, and takes elementwise epilogues.
  if (::dice::isReadForeignOp(op))
    return Kind::Heavy;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumReductionLoops() == 0)
    return Kind::Elementwise;
  if (isa<linalg::GenericOp, linalg::ReduceOp>(op) &&
      !linalg::isaContractionOpInterface(linalgOp) &&
      !linalg::isaConvolutionOpInterface(linalgOp) && rowsOf(linalgOp, sizes))
    return Kind::RowReduction;
  return Kind::Heavy;
}

struct Group {
  SmallVector<Operation *> members;
  /// Holds a matmul, convolution or pooling: only elementwise epilogues
  /// join it.
  bool heavy = false;
  /// The rows its reductions reduce, when it has any.
  std::optional<Rows> rows;
  unsigned first = ~0u, last = 0; ///< the members' least and greatest place
};

class FusionGrouper {
public:
  explicit FusionGrouper(const FusionInput &input) : input(input) {}

  std::vector<std::vector<Operation *>> run() {
    for (Operation *op : input.work)
      if (kindOf(op, input.sizes) == Kind::DataMovement && !input.ownedPads.contains(op))
        pending.insert(op);
    for (Operation *op : input.work)
      if (!pending.contains(op) && !input.ownedPads.contains(op))
        place(op);
    for (Operation *op : llvm::reverse(input.work))
      if (pending.contains(op))
        placeDataMovement(op);
    return collect();
  }

private:
  const FusionInput &input;
  /// Data movement not placed yet: the graph of groups looks through it, to
  /// the groups of the ops that read it, where it will go.
  llvm::DenseSet<Operation *> pending;
  /// Union-find: each grouped op's parent; a root maps to itself.
  llvm::DenseMap<Operation *, Operation *> parent;
  llvm::DenseMap<Operation *, Group> groups; ///< by root

  unsigned placeOf(Operation *op) const { return input.position.lookup(op); }

  Operation *rootOf(Operation *op) {
    auto it = parent.find(op);
    if (it == parent.end())
      return nullptr;
    if (it->second == op)
      return op;
    Operation *root = rootOf(it->second);
    parent[op] = root;
    return root;
  }

  /// A node of the graph of groups: an op's group, or the op itself when
  /// it is in none (ops left outside, terminators).
  Operation *nodeOf(Operation *op) {
    Operation *root = rootOf(op);
    return root ? root : op;
  }

  unsigned firstPlace(Operation *node) {
    auto it = groups.find(node);
    return it == groups.end() ? placeOf(node) : it->second.first;
  }

  /// Calls `fn` with each op of the block that reads a result of `op`
  /// (inside a region too), looking through pending data movement.
  void forEachReader(Operation *op, llvm::function_ref<void(Operation *)> fn) {
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        Operation *reader = input.block.findAncestorOpInBlock(*user);
        if (!reader || reader == op)
          continue;
        if (pending.contains(reader))
          forEachReader(reader, fn);
        else
          fn(reader);
      }
  }

  /// Calls `fn` with each op of the block whose result `op` reads (inside
  /// its regions too), looking through pending data movement and owned pads.
  void forEachProducer(Operation *op, llvm::function_ref<void(Operation *)> fn) {
    llvm::SetVector<Value> reads(op->getOperands().begin(),
                                 op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), reads);
    for (Value value : reads) {
      Operation *def = value.getDefiningOp();
      if (!def || def->getBlock() != &input.block)
        continue;
      if (pending.contains(def) || input.ownedPads.contains(def))
        forEachProducer(def, fn);
      else
        fn(def);
    }
  }

  SmallVector<Operation *> successors(Operation *node) {
    llvm::SetVector<Operation *> found;
    auto visit = [&](Operation *op) {
      forEachReader(op, [&](Operation *reader) {
        if (Operation *next = nodeOf(reader); next != node)
          found.insert(next);
      });
    };
    if (auto it = groups.find(node); it != groups.end())
      for (Operation *member : SmallVector<Operation *>(it->second.members))
        visit(member);
    else
      visit(node);
    return found.takeVector();
  }

  /// Whether merging the groups `nodes` would make a cycle: a path from one
  /// of them to another through a group outside them.
  bool wouldCycle(ArrayRef<Operation *> nodes) {
    llvm::DenseSet<Operation *> merged(nodes.begin(), nodes.end());
    unsigned last = 0;
    for (Operation *node : nodes)
      last = std::max(last, groups.lookup(node).last);
    SmallVector<Operation *> stack;
    for (Operation *node : nodes)
      for (Operation *next : successors(node))
        if (!merged.contains(next))
          stack.push_back(next);
    llvm::DenseSet<Operation *> seen;
    while (!stack.empty()) {
      Operation *node = stack.pop_back_val();
      if (merged.contains(node))
        return true;
      // Paths only go forward in the block: a node that starts after the
      // last merged op cannot lead back to one.
      if (!seen.insert(node).second || firstPlace(node) > last)
        continue;
      llvm::append_range(stack, successors(node));
    }
    return false;
  }

  Operation *newGroup(Operation *op, Kind kind) {
    parent[op] = op;
    Group &group = groups[op];
    group.members.push_back(op);
    group.heavy = kind == Kind::Heavy;
    if (kind == Kind::RowReduction)
      group.rows = rowsOf(cast<linalg::LinalgOp>(op), input.sizes);
    group.first = group.last = placeOf(op);
    return op;
  }

  void addMember(Operation *root, Operation *op) {
    parent[op] = root;
    Group &group = groups[root];
    group.members.push_back(op);
    group.first = std::min(group.first, placeOf(op));
    group.last = std::max(group.last, placeOf(op));
  }

  Operation *merge(Operation *a, Operation *b) {
    Group other = groups[b];
    groups.erase(b);
    for (Operation *member : other.members)
      addMember(a, member);
    Group &group = groups[a];
    group.heavy |= other.heavy;
    if (!group.rows)
      group.rows = other.rows;
    return a;
  }

  /// Whether the group `root` of an op of `kind`, which has `joined`
  /// others already, may join group `into`, whose op `producer` it reads
  /// (before the cycle check).
  bool mayJoin(Operation *root, Kind kind, bool joined, Operation *into,
               Operation *producer) {
    const Group &mine = groups[root], &theirs = groups[into];
    if (theirs.heavy)
      // An epilogue: one elementwise op, not reading a value that a
      // normalization reads too (that value is written out anyway, so the
      // op goes with the normalization and nothing more is written).
      return kind == Kind::Elementwise && !joined &&
             !readByRowReduction(producer);
    if (mine.heavy)
      return false;
    return !mine.rows || !theirs.rows || *mine.rows == *theirs.rows;
  }

  bool readByRowReduction(Operation *producer) {
    bool found = false;
    forEachReader(producer, [&](Operation *reader) {
      found |= kindOf(reader, input.sizes) == Kind::RowReduction;
    });
    return found;
  }

  /// Forms the group of `op` and merges it with the groups it reads from
  /// that the policy allows and the graph of groups can take.
  void place(Operation *op) {
    Kind kind = kindOf(op, input.sizes);
    if (kind == Kind::RowReduction && !rowsOf(cast<linalg::LinalgOp>(op), input.sizes))
      kind = Kind::Heavy;
    Operation *root = newGroup(op, kind);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && input.ownedPads.contains(def))
        addMember(root, def);
    if (kind == Kind::Heavy)
      return;
    llvm::SetVector<Operation *> candidates;
    llvm::DenseMap<Operation *, Operation *> producerIn;
    forEachProducer(op, [&](Operation *def) {
      if (Operation *group = rootOf(def); group && candidates.insert(group))
        producerIn[group] = def;
    });
    bool joined = false;
    for (Operation *candidate : candidates) {
      Operation *into = rootOf(candidate); // merged since, maybe
      if (into == root ||
          !mayJoin(root, kind, joined, into, producerIn.lookup(candidate)) ||
          wouldCycle({root, into}))
        continue;
      root = merge(into, root);
      joined = true;
      if (groups[root].heavy)
        break; // an epilogue joins one group
    }
  }

  /// Puts data movement `op` into the group of each op that reads it, as a
  /// copy for every group after the first. Data movement that ops outside
  /// every group read too is not copied: it goes into one group, which
  /// writes it out for the others.
  void placeDataMovement(Operation *op) {
    pending.erase(op);
    llvm::SetVector<Operation *> readerGroups;
    bool readOutside = false;
    for (Operation *user : op->getUsers()) {
      Operation *reader = input.block.findAncestorOpInBlock(*user);
      Operation *group = reader ? rootOf(reader) : nullptr;
      if (group)
        readerGroups.insert(group);
      else
        readOutside = true;
    }
    if (readOutside || readerGroups.empty())
      return placeOnce(op, readerGroups.getArrayRef());
    for (auto [i, group] : llvm::enumerate(readerGroups))
      addMember(group, i == 0 ? op : copyFor(op, group));
  }

  /// A copy of `op` that the readers in `group` read instead.
  Operation *copyFor(Operation *op, Operation *group) {
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Operation *copy = builder.clone(*op);
    input.onCopy(copy, op);
    for (auto [result, copied] :
         llvm::zip(op->getResults(), copy->getResults()))
      result.replaceUsesWithIf(copied, [&](OpOperand &use) {
        Operation *reader =
            input.block.findAncestorOpInBlock(*use.getOwner());
        return reader && rootOf(reader) == group;
      });
    return copy;
  }

  /// Puts `op` into its producer's group, as its epilogue, or else into
  /// the first group reading it that keeps the graph acyclic, or else
  /// into a group of its own (which cannot close a cycle: it reads one
  /// producer and is read by what read through it before).
  void placeOnce(Operation *op, ArrayRef<Operation *> readerGroups) {
    Operation *root = newGroup(op, Kind::DataMovement);
    SmallVector<Operation *> targets;
    if (Operation *source = op->getOperand(0).getDefiningOp())
      if (Operation *producer = rootOf(source))
        targets.push_back(producer);
    llvm::append_range(targets, readerGroups);
    for (Operation *target : targets)
      if (!wouldCycle({root, target})) {
        merge(target, root);
        return;
      }
  }

  std::vector<std::vector<Operation *>> collect() {
    std::vector<std::vector<Operation *>> result;
    for (auto &[root, group] : groups) {
      std::vector<Operation *> members(group.members.begin(),
                                       group.members.end());
      llvm::stable_sort(members, [&](Operation *a, Operation *b) {
        return placeOf(a) < placeOf(b);
      });
      result.push_back(std::move(members));
    }
    llvm::sort(result, [&](const auto &a, const auto &b) {
      return placeOf(a.front()) < placeOf(b.front());
    });
    return result;
  }
};

} // namespace

std::vector<std::vector<Operation *>>
mlir::dice::formFusionGroups(const FusionInput &input) {
  return FusionGrouper(input).run();
}
