//===- Scaffold.h - the DICE-format scaffold of a request -------*- C++ -*-===//
//
// What the DICE model is shown for one kernel request: the reference program,
// the compiler-written code before and after the hole (prefix, suffix), and
// the two prompts of the DICE training stages (kernel infilling: reference +
// prefix + suffix; end to end: reference only) in the Qwen3 chat format.
// Plain C++ (no LLVM, no LibTorch).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SCAFFOLD_SCAFFOLD_H
#define DICE_SCAFFOLD_SCAFFOLD_H

#include "dice/Scaffold/PromptTemplate.h"
#include "dice/Reference/ReferenceProgram.h"

#include <string>

namespace dice {

/// Version of the scaffold and the built-in prompt templates; part of the
/// kernel database key, so kernels generated for another wording are not
/// reused silently.
inline constexpr int kScaffoldVersion = 1;

struct ScaffoldText {
  std::string reference; ///< KernelBench-format PyTorch program
  std::string prefix;    ///< code before the hole
  std::string suffix;    ///< code after the hole, declaring dice_forward
  std::string signature; ///< the C++ declaration of dice_forward
  std::string infillPrompt;
  std::string endToEndPrompt;
};

/// The C++ declaration of `dice_forward` for `program`: one torch::Tensor
/// parameter per input in operand order; a tensor, or a vector of tensors
/// when the request has several results.
std::string diceForwardSignature(const ReferenceProgram &program);

/// Renders the whole scaffold. `fingerprint` names the extension module;
/// `templates` word the two prompts.
ScaffoldText renderScaffold(const ReferenceProgram &program,
                            const std::string &fingerprint,
                            const PromptTemplates &templates = PromptTemplates::builtin());

/// The kernel-infilling request for a reference program and the code around
/// the hole (the user message of `infillPrompt`). `signature` may be empty
/// where only the suffix declares the function (rows of published data).
std::string infillMessage(const std::string &reference, const std::string &prefix,
                          const std::string &suffix, const std::string &signature,
                          const PromptTemplates &templates = PromptTemplates::builtin());

/// The end-to-end request (the user message of `endToEndPrompt`);
/// `signature`, where known, fills the template's `{{function}}` and
/// `{{signature}}` slots (the built-in wording uses neither).
std::string endToEndMessage(const std::string &reference,
                            const PromptTemplates &templates = PromptTemplates::builtin(),
                            const std::string &signature = "");

/// One user turn and the assistant header, as the Qwen3 chat template of the
/// DICE/SDAR checkpoints renders it with add_generation_prompt.
std::string chatUserTurn(const std::string &message);

} // namespace dice

#endif // DICE_SCAFFOLD_SCAFFOLD_H
