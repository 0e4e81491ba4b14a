//===- FusionPolicy.h - which ops form one fusion request -------*- C++ -*-===//

#ifndef DICE_PASSES_FUSIONPOLICY_H
#define DICE_PASSES_FUSIONPOLICY_H

#include "dice/Reference/DynamicSizes.h"

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace mlir::dice {

/// Ops that only move data (transposes, broadcasts, reshapes, slices,
/// copies): at `fusion` granularity they go into the request that reads
/// them.
bool isPureDataMovement(Operation *op);

/// What dice-outline knows about the block it outlines.
struct FusionInput {
  Block &block;
  /// The ops to group, in block order.
  ArrayRef<Operation *> work;
  /// Each op's index in the block.
  const llvm::DenseMap<Operation *, unsigned> &position;
  /// tensor.pad ops that belong to their only consumer's group.
  const llvm::DenseSet<Operation *> &ownedPads;
  /// Called for each copy of a data-movement op made for a second consumer
  /// request; the copy stands right after `original`.
  llvm::function_ref<void(Operation *copy, Operation *original)> onCopy;
  /// Which dynamic dimensions of the block are the same size.
  ::dice::DynamicSizes &sizes;
};

/// The fusion groups of `input.work` (docs/passes.md, "Fusion policy"),
/// each in block order. Outlining every group never makes a cycle between
/// requests.
std::vector<std::vector<Operation *>> formFusionGroups(const FusionInput &input);

} // namespace mlir::dice

#endif // DICE_PASSES_FUSIONPOLICY_H
