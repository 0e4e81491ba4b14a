//===- Passes.h - the dice passes -------------------------------*- C++ -*-===//

#ifndef DICE_PASSES_PASSES_H
#define DICE_PASSES_PASSES_H

#include "Dice/DiceDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "dice/Config/Config.h"

#include <chrono>
#include <string>

namespace mlir::dice {

#define GEN_PASS_DECL
#include "Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

/// What dice-opt's own options (--dice-config, --dice-db, --dice-report)
/// give every dice pass. A pass option overrides its counterpart here.
struct DriverDefaults {
  ::dice::Config config;    ///< dice.toml, or the defaults
  std::string databasePath; ///< --dice-db; empty: config.databasePath
  std::string reportPath;   ///< --dice-report; empty: no report
  bool progress = false;    ///< --dice-progress: progress lines on stderr
};

/// A progress line on stderr (`dice-infill: ...`) when the driver asked for
/// them; long work (model calls, builds, GPU checks) says how far it is.
void reportProgress(const llvm::Twine &line);
/// "12.3 s" since `start`, for progress lines.
std::string formatSeconds(std::chrono::steady_clock::time_point start);

/// Set once by the driver before any pass runs.
void setDriverDefaults(DriverDefaults defaults);
const DriverDefaults &getDriverDefaults();

/// Registers `dice-pipeline`: outline, scaffold, infill, verify, resolve,
/// with the options of each passed through.
void registerDicePipeline();

/// The dice dialect and the upstream dialects of torch-mlir's output and of
/// the GPU lowering, with their interface extensions: what DICE tools parse.
void registerDiceDialects(DialectRegistry &registry);

} // namespace mlir::dice

#endif // DICE_PASSES_PASSES_H
