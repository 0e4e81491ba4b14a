//===- DiceDialect.h - the dice dialect -------------------------*- C++ -*-===//

#ifndef DICE_DIALECT_DICE_DICEDIALECT_H
#define DICE_DIALECT_DICE_DICEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dice/Dialect/Dice/DiceDialect.h.inc"

#endif // DICE_DIALECT_DICE_DICEDIALECT_H
