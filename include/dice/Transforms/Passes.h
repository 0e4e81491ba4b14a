//===- Passes.h - the dice passes -------------------------------*- C++ -*-===//

#ifndef DICE_TRANSFORMS_PASSES_H
#define DICE_TRANSFORMS_PASSES_H

#include "dice/Dialect/Dice/DiceAttrs.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringMap.h"

#include <chrono>
#include <string>

namespace llvm::cl {
/// dice-outline's `granularity` option takes the names of the Granularity
/// enum (DiceAttrs.td); any other value is an error that lists them, where
/// cl's enum parser would only say that it has no such option.
template <>
class parser<mlir::dice::Granularity>
    : public basic_parser<mlir::dice::Granularity> {
public:
  parser(Option &option) : basic_parser(option) {}
  bool parse(Option &option, StringRef argName, StringRef arg,
             mlir::dice::Granularity &value);
  StringRef getValueName() const override { return "op|fusion|function"; }
  void printOptionDiff(const Option &option, mlir::dice::Granularity value,
                       const OptVal &defaultValue, size_t globalWidth) const;
  /// How a pass pipeline prints the value (what `parse` reads back).
  static void print(raw_ostream &os, mlir::dice::Granularity value);
};
} // namespace llvm::cl

namespace mlir::dice {

#define GEN_PASS_DECL
#include "dice/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dice/Transforms/Passes.h.inc"

/// "12.3 s" since `start`, for progress lines.
std::string formatSeconds(std::chrono::steady_clock::time_point start);

/// Registers `dice-pipeline`: outline, scaffold, infill, verify, resolve
/// and lower. Its options are those of its passes: each `key=value` goes to
/// every pass that declares `key`.
void registerDicePipeline();

/// The top-level `key=value` items of a pass option string.
SmallVector<StringRef> splitPassOptions(StringRef options);

/// The options `pass` declares, with their current values as printed.
llvm::StringMap<std::string> passOptionValues(Pass &pass);

/// The dice dialect and the upstream dialects of torch-mlir's output and of
/// the GPU lowering, with their interface extensions: what DICE tools parse.
void registerDiceDialects(DialectRegistry &registry);

} // namespace mlir::dice

#endif // DICE_TRANSFORMS_PASSES_H
