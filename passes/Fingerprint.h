//===- Fingerprint.h - stable identity of a kernel request ------*- C++ -*-===//

#ifndef DICE_PASSES_FINGERPRINT_H
#define DICE_PASSES_FINGERPRINT_H

#include "Dice/DiceOps.h"

#include <string>

namespace mlir::dice {

/// A hex digest of what `request` computes: its region, shapes and element
/// types, printed in generic form with local numbering and no locations.
/// Independent of SSA names, position, enclosing function, the current
/// fingerprint and the scaffold.
std::string computeFingerprint(KernelRequestOp request);

} // namespace mlir::dice

#endif // DICE_PASSES_FINGERPRINT_H
