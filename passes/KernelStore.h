//===- KernelStore.h - state shared by infill, verify, resolve --*- C++ -*-===//
//
// The kernel database as the passes see it (opened once per pass, errors as
// diagnostics on the module), the key of a request, and the conversions
// between the verifier's verdicts and `#dice.verdict`.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_PASSES_KERNELSTORE_H
#define DICE_PASSES_KERNELSTORE_H

#include "Dice/DiceOps.h"
#include "dice/KernelDB/KernelDatabase.h"
#include "dice/Verifier/Verdict.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::dice {

/// The database path a pass uses: its own option, else --dice-db, else
/// dice.toml's `database`.
std::string databasePathFor(llvm::StringRef passOption);

/// Opens the database; a damaged or foreign file is an error on `module`
/// naming the file.
std::optional<::dice::KernelDatabase> openKernelDatabase(ModuleOp module,
                                                         llvm::StringRef path);

/// (fingerprint, gpu_arch, scaffold version, model) of an infilled request.
::dice::KernelKey kernelKeyOf(KernelRequestOp request);

/// The attribute form of a verdict; measurements the attribute has no room
/// for (GPU, driver, launched kernels) stay in the database's JSON.
VerdictAttr toVerdictAttr(MLIRContext *context, const ::dice::Verdict &verdict);

} // namespace mlir::dice

#endif // DICE_PASSES_KERNELSTORE_H
