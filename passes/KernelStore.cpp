//===- KernelStore.cpp - state shared by infill, verify, resolve ----------===//

#include "KernelStore.h"
#include "Passes.h"

#include "dice/Scaffold/Scaffold.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dice;

namespace {
/// Set once by the driver, before passes run (and read-only after), so the
/// passes of a multi-threaded pass manager only ever read it.
DriverDefaults &driverDefaults() {
  static DriverDefaults defaults;
  return defaults;
}
} // namespace

void mlir::dice::setDriverDefaults(DriverDefaults defaults) {
  driverDefaults() = std::move(defaults);
}

const DriverDefaults &mlir::dice::getDriverDefaults() {
  return driverDefaults();
}

void mlir::dice::reportProgress(const llvm::Twine &line) {
  if (!driverDefaults().progress)
    return;
  // One write per line: build threads report too.
  std::string text = line.str() + "\n";
  llvm::errs() << text;
}

std::string mlir::dice::formatSeconds(std::chrono::steady_clock::time_point start) {
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.1f s", elapsed.count());
  return text;
}

std::string mlir::dice::databasePathFor(StringRef passOption) {
  if (!passOption.empty())
    return passOption.str();
  const DriverDefaults &defaults = getDriverDefaults();
  if (!defaults.databasePath.empty())
    return defaults.databasePath;
  return defaults.config.databasePath;
}

std::optional<::dice::KernelDatabase>
mlir::dice::openKernelDatabase(ModuleOp module, StringRef path) {
  ::dice::KernelDatabaseOrError db = ::dice::KernelDatabase::open(path.str());
  if (!db) {
    module.emitError() << "kernel database " << db.error().path << ": "
                       << db.error().message;
    return std::nullopt;
  }
  return std::move(*db);
}

::dice::KernelKey mlir::dice::kernelKeyOf(KernelRequestOp request) {
  ::dice::KernelKey key;
  key.fingerprint = request.getFingerprint().str();
  key.gpuArch = request.getGpuArch().value_or("").str();
  key.scaffoldVersion = ::dice::kScaffoldVersion;
  key.modelId = request.getModel().value_or("").str();
  return key;
}

VerdictAttr mlir::dice::toVerdictAttr(MLIRContext *context,
                                      const ::dice::Verdict &verdict) {
  Builder b(context);
  NamedAttrList metrics;
  auto addFloat = [&](StringRef name, const std::optional<double> &value) {
    if (value)
      metrics.append(name, b.getF64FloatAttr(*value));
  };
  addFloat("compile_ms", verdict.compileMs);
  addFloat("max_abs_err", verdict.maxAbsErr);
  addFloat("max_rel_err", verdict.maxRelErr);
  if (verdict.trials)
    metrics.append("trials", b.getI64IntegerAttr(*verdict.trials));
  addFloat("kernel_ms", verdict.kernelMs);
  addFloat("baseline_ms", verdict.baselineMs);
  addFloat("speedup", verdict.speedup);
  // Both enums spell the statuses the same way ("compile_error").
  VerdictStatus status =
      *symbolizeVerdictStatus(::dice::verdictStatusName(verdict.status));
  StringAttr reason =
      verdict.reason.empty() ? StringAttr() : b.getStringAttr(verdict.reason);
  return VerdictAttr::get(context, status, reason,
                          metrics.getDictionary(context));
}
