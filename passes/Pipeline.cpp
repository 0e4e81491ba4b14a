//===- Pipeline.cpp - dice-pipeline: request to kernel or fallback --------===//
//
// The pipeline declares no options of its own: each `key=value` it is given
// goes to every one of its passes that declares `key` (so `db=` reaches
// infill, verify and resolve alike), and a key that none declares is an
// error. A pass's options are declared once, in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dice/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

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

llvm::StringMap<std::string> mlir::dice::passOptionValues(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  StringRef printed(text);
  llvm::StringMap<std::string> values;
  size_t open = printed.find('{');
  if (open == StringRef::npos || !printed.ends_with("}"))
    return values;
  for (StringRef item :
       splitPassOptions(printed.slice(open + 1, printed.size() - 1))) {
    auto [key, value] = item.split('=');
    values[key] = value.str();
  }
  return values;
}

namespace {

/// The passes of the pipeline, in order, with their default options.
SmallVector<std::unique_ptr<Pass>> createPipelinePasses() {
  SmallVector<std::unique_ptr<Pass>> passes;
  passes.push_back(createDiceOutline());
  passes.push_back(createDiceScaffold());
  passes.push_back(createDiceInfill());
  passes.push_back(createDiceVerify());
  passes.push_back(createDiceResolve());
  passes.push_back(createDiceLower());
  return passes;
}

LogicalResult
buildDicePipeline(OpPassManager &pm, StringRef options,
                  function_ref<LogicalResult(const Twine &)> errorHandler) {
  SmallVector<std::unique_ptr<Pass>> passes = createPipelinePasses();
  SmallVector<llvm::StringMap<std::string>> declared;
  for (std::unique_ptr<Pass> &pass : passes)
    declared.push_back(passOptionValues(*pass));

  for (StringRef item : splitPassOptions(options)) {
    StringRef key = item.split('=').first;
    bool taken = false;
    for (auto [pass, names] : llvm::zip_equal(passes, declared)) {
      if (!names.contains(key))
        continue;
      taken = true;
      if (failed(pass->initializeOptions(item, errorHandler)))
        return failure();
    }
    if (!taken) {
      llvm::StringSet<> all;
      for (llvm::StringMap<std::string> &names : declared)
        for (auto &entry : names)
          all.insert(entry.getKey());
      SmallVector<StringRef> sorted(all.keys());
      llvm::sort(sorted);
      return errorHandler("dice-pipeline: no pass of the pipeline has an "
                          "option '" + key + "'; its options are: " +
                          llvm::join(sorted, ", "));
    }
  }
  // Passes anchored on functions (outline, scaffold) run in one nested
  // pipeline over the module's functions; the others on the module.
  OpPassManager *functionPasses = nullptr;
  for (std::unique_ptr<Pass> &pass : passes) {
    if (pass->getOpName() != func::FuncOp::getOperationName()) {
      pm.addPass(std::move(pass));
      functionPasses = nullptr;
      continue;
    }
    if (!functionPasses)
      functionPasses = &pm.nest<func::FuncOp>();
    functionPasses->addPass(std::move(pass));
  }
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
      buildDicePipeline,
      [](function_ref<void(const mlir::detail::PassOptions &)>) {});
}
