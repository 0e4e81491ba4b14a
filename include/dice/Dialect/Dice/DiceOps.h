//===- DiceOps.h - dice dialect operations ----------------------*- C++ -*-===//

#ifndef DICE_DIALECT_DICE_DICEOPS_H
#define DICE_DIALECT_DICE_DICEOPS_H

#include "dice/Dialect/Dice/DiceAttrs.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dice/Dialect/Dice/DiceOps.h.inc"

#endif // DICE_DIALECT_DICE_DICEOPS_H
