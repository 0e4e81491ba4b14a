//===- AtenExecutor.h - run a reference program with ATen -------*- C++ -*-===//
//
// The second backend of the reference program (the first is the Python
// printer): each op is the ATen call behind the torch call the printer
// prints, so the verifier's reference outputs and eager baseline compute
// exactly what the DICE model was shown. Torch-side code only: this header
// includes LibTorch.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_ATENEXECUTOR_H
#define DICE_REFERENCE_ATENEXECUTOR_H

#include "dice/Reference/ReferenceProgram.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

namespace dice {

/// The program's outputs, or why it could not run (`error` non-empty).
struct ReferenceRun {
  std::vector<at::Tensor> outputs;
  std::string error;

  bool ok() const { return error.empty(); }
};

c10::ScalarType toScalarType(DType dtype);
std::optional<DType> fromScalarType(c10::ScalarType type);

/// Checks `inputs` against `program.inputs` (count, shape, dtype, one
/// device; a size symbol takes any size, the same wherever it occurs); an
/// empty string means they match. Messages name the input.
std::string checkReferenceInputs(const ReferenceProgram &program,
                                 const std::vector<at::Tensor> &inputs);

/// Runs `program` on `inputs`, its size symbols bound from the inputs' sizes
/// (ReferenceProgram::bindSizes). Constants are made on `device`, by default
/// the inputs' device (CPU for a program without inputs). Every op's result
/// is checked against the type the program declares for it, so a program
/// whose torch semantics disagree with its declared types fails here with
/// the op named instead of producing a silently different reference.
/// Never throws: torch errors come back as `error`, naming the op.
ReferenceRun
runReferenceProgram(const ReferenceProgram &program,
                    const std::vector<at::Tensor> &inputs,
                    std::optional<c10::Device> device = std::nullopt);

} // namespace dice

#endif // DICE_REFERENCE_ATENEXECUTOR_H
