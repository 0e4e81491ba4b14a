//===- ForwardSignature.h - the dice_forward declaration --------*- C++ -*-===//
//
// The signature a candidate's `dice_forward` must have, as the scaffold
// declares it: tensors in, one tensor or a vector of tensors out. The kernel
// build generates the declaration header and the registration from it; the
// verifier checks it against the request's reference program. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_FORWARDSIGNATURE_H
#define DICE_VERIFIERCORE_FORWARDSIGNATURE_H

#include "dice/Support/Result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// The parts of a `dice_forward` declaration the registration needs.
struct DiceForwardSignature {
  std::string declaration;             ///< normalised, ending in ';'
  std::vector<std::string> parameters; ///< names, in operand order
  bool returnsList = false;            ///< std::vector<torch::Tensor>
};

/// Parses `torch::Tensor dice_forward(torch::Tensor x0, ...);` (the
/// scaffold's signature): tensors in, a tensor or a vector of tensors out.
Result<DiceForwardSignature>
parseDiceForwardSignature(std::string_view declaration);

/// Whether `text` is a C++ identifier (a parameter or operator name).
bool isIdentifier(std::string_view text);

} // namespace dice

#endif // DICE_VERIFIERCORE_FORWARDSIGNATURE_H
