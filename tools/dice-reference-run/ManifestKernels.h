//===- ManifestKernels.h - kernel steps through the C runtime ---*- C++ -*-===//
//
// The kernel steps of a lowered function's plan call accepted kernels the
// way lowered code does: through lib/Runtime's C ABI over the manifest that
// dice-lower wrote.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TOOLS_MANIFESTKERNELS_H
#define DICE_TOOLS_MANIFESTKERNELS_H

#include "FunctionPlan.h"

#include "dice/Support/Result.h"

#include <string>

namespace dice {

/// Opens `manifestPath` (loading its kernel libraries) and returns a caller
/// for its kernels, or says why it cannot be opened.
Result<KernelCaller> openManifestKernels(const std::string &manifestPath);

} // namespace dice

#endif // DICE_TOOLS_MANIFESTKERNELS_H
