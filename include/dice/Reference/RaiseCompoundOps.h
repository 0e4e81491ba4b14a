//===- RaiseCompoundOps.h - decompositions back to torch functions -*- C++ -*-===//
//
// torch-mlir decomposes compound torch functions into many small ops (a
// tanh-GELU into eight, a softmax into five, a layer norm into twenty). The
// reference program is what the DICE model reads and what the verifier
// times as the eager baseline, so it raises each such decomposition back to
// the single function a person writes and PyTorch runs as one kernel.
//
// A pattern is raised only where it matches exactly: the same dataflow, the
// same constants (at the precision of their dtype), the same dims, shapes and
// dtypes. Anything else is left as it is. docs/reference-program.md lists the
// patterns.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_RAISECOMPOUNDOPS_H
#define DICE_REFERENCE_RAISECOMPOUNDOPS_H

#include "dice/Reference/ReferenceProgram.h"

#include <vector>

namespace dice {

/// Rewrites every exact decomposition in `program` into its compound
/// function, folds torch-mlir's negative-index wraps into the `index` ops
/// they feed and an arange's view into the arange, folds chains of
/// reshapes into one reshape, and drops the ops nothing uses any more.
/// Returns the functions raised, in program order.
std::vector<RefFn> raiseCompoundOps(ReferenceProgram &program);

} // namespace dice

#endif // DICE_REFERENCE_RAISECOMPOUNDOPS_H
