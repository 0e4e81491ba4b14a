//===- DiceDialect.h - the dice dialect -------------------------*- C++ -*-===//

#ifndef DICE_DIALECT_DICEDIALECT_H
#define DICE_DIALECT_DICEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "Dice/DiceDialect.h.inc"

#endif // DICE_DIALECT_DICEDIALECT_H
