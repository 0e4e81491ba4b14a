//===- KernelStore.h - what infill, verify and resolve share ----*- C++ -*-===//
//
// The configuration and the kernel store as the passes see them (read once
// per pass run, errors as diagnostics on the module), the key of a request,
// and the conversions between the verifier's verdicts and `#dice.verdict`.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_PASSES_KERNELSTORE_H
#define DICE_PASSES_KERNELSTORE_H

#include "dice/Config/Config.h"
#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/KernelDB/KernelDatabase.h"
#include "dice/VerifierCore/Verdict.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>

namespace mlir::dice {

/// Emits `error` at its own file, line and column (so editors jump to it),
/// its key first; returns failure.
LogicalResult emitAtErrorLocation(MLIRContext *context, const ::dice::Error &error);

/// The dice.toml a pass's `config` option names (empty: the defaults), as
/// the driver's services loaded it (once per context); a bad file is an
/// error at its file and line.
FailureOr<::dice::Config> loadPassConfig(MLIRContext *context, llvm::StringRef path);
inline FailureOr<::dice::Config> loadPassConfig(ModuleOp module, llvm::StringRef path) {
  return loadPassConfig(module.getContext(), path);
}

/// The kernel store of a pass's `db` option (empty: dice.toml's
/// `database`), as the driver's services hold it (opened once per context,
/// shared by the passes); a damaged or foreign file is an error on `module`
/// naming the file, and null is returned.
std::shared_ptr<::dice::KernelStore>
openKernelStore(ModuleOp module, llvm::StringRef option,
                const ::dice::Config &config);

/// (fingerprint, gpu_arch, scaffold version, model) of an infilled request.
::dice::KernelKey kernelKeyOf(KernelRequestOp request);

/// The attribute form of a verdict; measurements the attribute has no room
/// for (GPU, driver, launched kernels) stay in the database's JSON.
VerdictAttr toVerdictAttr(MLIRContext *context, const ::dice::Verdict &verdict);

/// The verdict of an attribute, for its JSON: status, reason and the
/// measurements the attribute holds.
::dice::Verdict fromVerdictAttr(VerdictAttr verdict);

} // namespace mlir::dice

#endif // DICE_PASSES_KERNELSTORE_H
