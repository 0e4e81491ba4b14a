//===- Fingerprint.h - stable identity of a kernel request ------*- C++ -*-===//

#ifndef DICE_PASSES_FINGERPRINT_H
#define DICE_PASSES_FINGERPRINT_H

#include "dice/Dialect/Dice/DiceOps.h"

#include <string>

namespace mlir::dice {

/// The fingerprint of what `request` computes (dice/Scaffold/Fingerprint.h):
/// the hash of its reference program. A region that has no reference
/// program is an error on the request.
FailureOr<std::string> computeFingerprint(KernelRequestOp request);

} // namespace mlir::dice

#endif // DICE_PASSES_FINGERPRINT_H
