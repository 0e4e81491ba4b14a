//===- DiceAttrs.h - dice dialect attributes --------------------*- C++ -*-===//

#ifndef DICE_DIALECT_DICEATTRS_H
#define DICE_DIALECT_DICEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "Dice/DiceEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dice/DiceAttrs.h.inc"

#endif // DICE_DIALECT_DICEATTRS_H
