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

/// The options of `dice-pipeline`: each option of its passes, once, typed.
/// A value given here goes to every pass that has the option (`db=` reaches
/// infill, verify and resolve alike); the defaults are the passes' own
/// (Passes.td). Each pass takes its share through the accessor of its name.
struct DicePipelineOptions : public PassPipelineOptions<DicePipelineOptions> {
  Option<Granularity> granularity{*this, "granularity",
                                  llvm::cl::desc("dice-outline: op, fusion or function"),
                                  llvm::cl::init(DiceOutlineOptions().granularity)};
  Option<std::string> config{*this, "config",
                             llvm::cl::desc("dice.toml to read (empty: the built-in "
                                            "defaults)"),
                             llvm::cl::init(DiceScaffoldOptions().configFile)};
  Option<std::string> db{*this, "db",
                         llvm::cl::desc("kernel database (empty: dice.toml's database)"),
                         llvm::cl::init(DiceInfillOptions().database)};
  Option<std::string> artifacts{*this, "artifacts",
                                llvm::cl::desc("directory of kernel libraries, workers' "
                                               "scratch space and manifest.json (empty: "
                                               "dice.toml's artifacts.dir)"),
                                llvm::cl::init(DiceVerifyOptions().artifacts)};
  Option<std::string> engine{*this, "engine",
                             llvm::cl::desc("dice-infill: replay:<file.jsonl>, model (dice.toml's "
                                            "model) or model:<dir>"),
                             llvm::cl::init(DiceInfillOptions().engine)};
  Option<int64_t> candidates{*this, "candidates",
                             llvm::cl::desc("dice-infill: candidates per request (0: "
                                            "dice.toml's sampling.candidates)"),
                             llvm::cl::init(DiceInfillOptions().candidates)};
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("dice-infill: GPU architecture the candidates "
                                             "are for (database key)"),
                              llvm::cl::init(DiceInfillOptions().gpuArch)};
  Option<std::string> nvcc{*this, "nvcc", llvm::cl::desc("dice-verify: nvcc to build candidates with "
                                          "(default: this installation's)"),
                           llvm::cl::init(DiceVerifyOptions().nvcc)};
  Option<bool> staticAnalysis{*this, "static-analysis",
                              llvm::cl::desc("dice-verify: run the static deception "
                                             "analysis before building"),
                              llvm::cl::init(DiceVerifyOptions().staticAnalysis)};
  Option<unsigned> jobs{*this, "jobs", llvm::cl::desc("dice-verify: kernel library builds at once "
                                       "(0: one per CPU core)"),
                        llvm::cl::init(DiceVerifyOptions().jobs)};
  Option<double> minSpeedup{*this, "min-speedup",
                            llvm::cl::desc("dice-resolve: least speedup to use a kernel "
                                           "(negative: dice.toml's verifier.min_speedup)"),
                            llvm::cl::init(DiceResolveOptions().minSpeedup)};
  Option<std::string> report{*this, "report",
                             llvm::cl::desc("dice-resolve: file to write the per-request "
                                            "report to, '-' for stdout (empty: no report)"),
                             llvm::cl::init(DiceResolveOptions().report)};

  // Designated: a field renamed in Passes.td is a compile error here.
  DiceOutlineOptions outline() const { return {.granularity = granularity}; }
  DiceScaffoldOptions scaffold() const { return {.configFile = config}; }
  DiceInfillOptions infill() const {
    return {.engine = engine, .candidates = candidates, .gpuArch = gpuArch,
            .database = db, .configFile = config};
  }
  DiceVerifyOptions verify() const {
    return {.database = db, .configFile = config, .artifacts = artifacts, .nvcc = nvcc,
            .staticAnalysis = staticAnalysis, .jobs = jobs};
  }
  DiceResolveOptions resolve() const {
    return {.minSpeedup = minSpeedup, .database = db, .configFile = config,
            .artifacts = artifacts, .report = report};
  }
  DiceLowerOptions lower() const { return {.artifacts = artifacts, .configFile = config}; }

  /// The option names, sorted: what an error about an unknown one lists.
  std::vector<std::string> names() const;
};

/// Outline, scaffold, infill, verify, resolve and lower, into `pm` (a
/// module pass manager): the passes anchored on functions run nested.
void buildDicePipeline(OpPassManager &pm, const DicePipelineOptions &options);

/// Registers `dice-pipeline` (buildDicePipeline) with its options.
void registerDicePipeline();

/// The top-level `key=value` items of a pass option string.
SmallVector<StringRef> splitPassOptions(StringRef options);

/// The dice dialect and the upstream dialects of torch-mlir's output and of
/// the GPU lowering, with their interface extensions: what DICE tools parse.
void registerDiceDialects(DialectRegistry &registry);

} // namespace mlir::dice

#endif // DICE_TRANSFORMS_PASSES_H
