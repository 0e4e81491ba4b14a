//===- Passes.h - the dice passes -------------------------------*- C++ -*-===//

#ifndef DICE_PASSES_PASSES_H
#define DICE_PASSES_PASSES_H

#include "Dice/DiceDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dice {

#define GEN_PASS_DECL
#include "Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

/// The dice dialect and the upstream dialects of torch-mlir's output and of
/// the GPU lowering, with their interface extensions: what DICE tools parse.
void registerDiceDialects(DialectRegistry &registry);

} // namespace mlir::dice

#endif // DICE_PASSES_PASSES_H
