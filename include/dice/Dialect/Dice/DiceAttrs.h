//===- DiceAttrs.h - dice dialect attributes --------------------*- C++ -*-===//

#ifndef DICE_DIALECT_DICE_DICEATTRS_H
#define DICE_DIALECT_DICE_DICEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "dice/VerifierCore/VerdictStatus.h"

namespace mlir::dice {
/// The verdict JSON's statuses are the IR's: one enum, one set of rules.
using ::dice::VerdictStatus;
} // namespace mlir::dice

#include "dice/Dialect/Dice/DiceEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dice/Dialect/Dice/DiceAttrs.h.inc"

#endif // DICE_DIALECT_DICE_DICEATTRS_H
