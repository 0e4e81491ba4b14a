//===- Pipeline.cpp - dice-pipeline: request to kernel or fallback --------===//
//
// The pipeline's options are a typed struct (DicePipelineOptions, Passes.h):
// each option of its passes once, with the passes' defaults; each pass is
// created with its share of them, so `db=` reaches infill, verify and
// resolve alike. A key that no pass has is an error that lists them.
//
//===----------------------------------------------------------------------===//

#include "dice/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::dice;

/// Splits `options` ("a=1 b={x y} c='p q'") into its top-level `key=value`
/// items, as MLIR's pass option syntax nests them: whitespace separates
/// items except inside quotes and braces.
SmallVector<StringRef> mlir::dice::splitPassOptions(StringRef options) {
  SmallVector<StringRef> items;
  size_t start = 0, depth = 0;
  char quote = 0;
  auto flush = [&](size_t end) {
    StringRef item = options.slice(start, end).trim();
    if (!item.empty())
      items.push_back(item);
    start = end + 1;
  };
  for (size_t i = 0; i < options.size(); ++i) {
    char c = options[i];
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      depth -= depth > 0;
    } else if (depth == 0 && llvm::isSpace(c)) {
      flush(i);
    }
  }
  flush(options.size());
  return items;
}

std::vector<std::string> DicePipelineOptions::names() const {
  // Each Option registers itself in the struct's llvm::cl sub-command.
  std::vector<std::string> out;
  for (const auto &entry : OptionsMap)
    out.push_back(entry.first.str());
  llvm::sort(out);
  return out;
}

void mlir::dice::buildDicePipeline(OpPassManager &pm, const DicePipelineOptions &options) {
  // Passes anchored on functions (outline, scaffold) run in one nested
  // pipeline over the module's functions; the others on the module.
  OpPassManager &functions = pm.nest<func::FuncOp>();
  functions.addPass(createDiceOutline(options.outline()));
  functions.addPass(createDiceScaffold(options.scaffold()));
  pm.addPass(createDiceInfill(options.infill()));
  pm.addPass(createDiceVerify(options.verify()));
  pm.addPass(createDiceResolve(options.resolve()));
  pm.addPass(createDiceLower(options.lower()));
}

namespace {

/// `dice-pipeline{text}`: a key the options lack is an error that lists
/// them (MLIR's own parser names the key alone).
LogicalResult parseAndBuild(OpPassManager &pm, StringRef text,
                            function_ref<LogicalResult(const Twine &)> errorHandler) {
  DicePipelineOptions options;
  std::vector<std::string> names = options.names();
  for (StringRef item : splitPassOptions(text)) {
    StringRef key = item.split('=').first;
    if (!llvm::is_contained(names, key))
      return errorHandler("dice-pipeline: no pass of the pipeline has an option '" + key +
                          "'; its options are: " + llvm::join(names, ", "));
  }
  std::string message;
  llvm::raw_string_ostream errors(message);
  if (failed(options.parseFromString(text, errors)))
    return errorHandler("dice-pipeline: " + StringRef(message).trim());
  buildDicePipeline(pm, options);
  return success();
}

} // namespace

void mlir::dice::registerDicePipeline() {
  registerPassPipeline(
      "dice-pipeline",
      "Outline, scaffold, infill, verify, resolve and lower: each kernel "
      "request becomes a call of a verified kernel or its original ops. "
      "Takes the options of its passes (see dice-outline, dice-infill, "
      "dice-verify, dice-resolve and dice-lower): each goes to every pass "
      "that declares it",
      parseAndBuild,
      [](function_ref<void(const mlir::detail::PassOptions &)> printHelp) {
        printHelp(DicePipelineOptions());
      });
}
