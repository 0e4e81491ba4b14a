//===- KernelStore.cpp - what infill, verify and resolve share ------------===//

#include "KernelStore.h"

#include "dice/Driver/Services.h"
#include "dice/Scaffold/Scaffold.h"
#include "dice/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dice;

std::string mlir::dice::formatSeconds(std::chrono::steady_clock::time_point start) {
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.1f s", elapsed.count());
  return text;
}

LogicalResult mlir::dice::emitAtErrorLocation(MLIRContext *context,
                                              const ::dice::Error &error) {
  InFlightDiagnostic diag =
      emitError(FileLineColLoc::get(context, error.file, error.line, error.column));
  if (!error.key.empty())
    diag << error.key << ": ";
  diag << error.message;
  return failure();
}

FailureOr<::dice::Config> mlir::dice::loadPassConfig(MLIRContext *context,
                                                    StringRef path) {
  if (path.empty())
    return ::dice::Config();
  ::dice::Result<::dice::Config> config =
      getDiceServices(context).loadConfig(path.str());
  if (!config)
    return emitAtErrorLocation(context, config.error());
  return *config;
}

std::shared_ptr<::dice::KernelStore>
mlir::dice::openKernelStore(ModuleOp module, StringRef option,
                            const ::dice::Config &config) {
  std::string path = option.empty() ? config.databasePath : option.str();
  ::dice::Result<std::shared_ptr<::dice::KernelStore>> store =
      getDiceServices(module.getContext()).kernelStore(path);
  if (!store) {
    module.emitError() << "kernel database " << store.error().describe();
    return nullptr;
  }
  return store.take();
}

::dice::KernelKey mlir::dice::kernelKeyOf(KernelRequestOp request) {
  ::dice::KernelKey key;
  key.fingerprint = request.getFingerprint().str();
  key.gpuArch = request.getGpuArch().value_or("").str();
  key.scaffoldVersion = ::dice::kScaffoldVersion;
  key.modelId = request.getModel().value_or("").str();
  if (ScaffoldAttr scaffold = request.getScaffoldAttr())
    key.promptTemplate = scaffold.getPromptTemplate().str();
  return key;
}

VerdictAttr mlir::dice::toVerdictAttr(MLIRContext *context,
                                      const ::dice::Verdict &verdict) {
  Builder b(context);
  auto measurement = [&](const std::optional<double> &value) {
    return value ? b.getF64FloatAttr(*value) : FloatAttr();
  };
  StringAttr reason =
      verdict.reason.empty() ? StringAttr() : b.getStringAttr(verdict.reason);
  // The attribute has no launched_kernels: resolve and lower never read it,
  // and the database keeps the whole verdict JSON.
  return VerdictAttr::get(
      context, verdict.status, reason, measurement(verdict.baselineMs),
      measurement(verdict.compileMs), measurement(verdict.kernelMs),
      measurement(verdict.maxAbsErr), measurement(verdict.maxRelErr),
      measurement(verdict.speedup), verdict.trials);
}

::dice::Verdict mlir::dice::fromVerdictAttr(VerdictAttr attr) {
  ::dice::Verdict verdict;
  static_cast<::dice::VerdictMeasurements &>(verdict) = attr.getMeasurements();
  verdict.status = attr.getStatus();
  if (attr.getReason())
    verdict.reason = attr.getReason().getValue().str();
  return verdict;
}
