//===- ReferenceBuilder.h - MLIR region -> reference program ----*- C++ -*-===//
//
// Renders linalg-on-tensors into the torch-level ReferenceProgram. Compiler
// side only (MLIR). Ops it cannot render exactly are reported with a reason
// instead of being approximated: the outline pass keeps them out of kernel
// requests.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_REFERENCEBUILDER_H
#define DICE_REFERENCE_REFERENCEBUILDER_H

#include "dice/Reference/ReferenceProgram.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace dice {

class DynamicSizes;

/// Whether `op` is one of torch-mlir's ops of a dialect dice-opt does not
/// register (tm_tensor) that the reference builder reads by name and
/// attributes: a scan (torch.cumsum, torch.cumprod), a scatter
/// (Tensor.index_put) or a sort (torch.argsort and a gather by its order).
/// Such an op can go into a request like a linalg op.
bool isReadForeignOp(mlir::Operation *op);

/// Why `op` cannot be rendered on its own, or nullopt when it can. Ops that
/// only produce values (constants, tensor.empty, linalg.fill) are renderable.
/// `sizes`, the DynamicSizes of the op's block, relates its dynamic
/// dimensions (computed for the call when null).
std::optional<std::string> whyNotRenderable(mlir::Operation *op,
                                            DynamicSizes *sizes = nullptr);

/// The program of a single-block region: its arguments are the inputs and
/// its terminator's operands the outputs. On failure `whyNot` names the op.
/// Dynamic dimensions become size symbols, with the examples of the parent
/// op's `dice.example_shapes` (DynamicSizes.h) where it has them.
std::optional<ReferenceProgram> buildReferenceProgram(mlir::Region &region,
                                                      std::string &whyNot);

/// The program of one op outside any request: its tensor operands that are
/// not constants become the inputs (appended to `inputs`), its results that
/// are used become the outputs (appended to `outputs`).
std::optional<ReferenceProgram>
buildOpProgram(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Value> &inputs,
               llvm::SmallVectorImpl<mlir::Value> &outputs, std::string &whyNot,
               DynamicSizes *sizes = nullptr);

/// An op outside a payload that computes one number from numbers (not
/// sizes): arithmetic on a function's scalar arguments.
bool isNumberComputation(mlir::Operation *op);

/// The element type's torch dtype, if it has one.
std::optional<DType> toDType(mlir::Type elementType);

} // namespace dice

#endif // DICE_REFERENCE_REFERENCEBUILDER_H
