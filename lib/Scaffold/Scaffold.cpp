//===- Scaffold.cpp - the DICE-format scaffold of a request ---------------===//
//
// The layout follows KernelBench's `ModelNew` convention that DICE was
// trained on: the model writes `source`, a string of CUDA C++ holding the
// kernels and `dice_forward`; the compiler owns everything around it, so the
// entry point the verifier builds against is never the model's to choose.
//
//===----------------------------------------------------------------------===//

#include "dice/Scaffold/Scaffold.h"

namespace dice {
namespace {

std::string parameterList(const ReferenceProgram &program, bool typed) {
  std::string list;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    list += (i ? ", " : "") + std::string(typed ? "torch::Tensor " : "") + "x" +
            std::to_string(i);
  return list;
}

} // namespace

std::string diceForwardSignature(const ReferenceProgram &program) {
  std::string result = program.outputs.size() == 1 ? "torch::Tensor"
                                                   : "std::vector<torch::Tensor>";
  return result + " dice_forward(" + parameterList(program, true) + ");";
}

ScaffoldText renderScaffold(const ReferenceProgram &program,
                            const std::string &fingerprint,
                            const PromptTemplates &templates) {
  ScaffoldText s;
  s.reference = renderPythonModel(program);
  s.signature = diceForwardSignature(program);
  s.prefix = "import torch\n"
             "import torch.nn as nn\n"
             "from torch.utils.cpp_extension import load_inline\n\n";
  std::string call = "dice_module.dice_forward(" + parameterList(program, false) + ")";
  if (program.outputs.size() != 1)
    call = "tuple(" + call + ")";
  s.suffix = "\n\ncpp_source = \"" + s.signature + "\"\n\n"
             "dice_module = load_inline(\n"
             "    name=\"dice_k_" + fingerprint + "\",\n"
             "    cpp_sources=cpp_source,\n"
             "    cuda_sources=source,\n"
             "    functions=[\"dice_forward\"],\n"
             "    verbose=False,\n"
             ")\n\n\n"
             "class ModelNew(nn.Module):\n"
             "    def __init__(self):\n"
             "        super().__init__()\n\n"
             "    def forward(self" +
             std::string(program.inputs.empty() ? "" : ", ") +
             parameterList(program, false) + "):\n"
             "        return " + call + "\n";

  s.infillPrompt = chatUserTurn(
      infillMessage(s.reference, s.prefix, s.suffix, s.signature, templates));
  s.endToEndPrompt =
      chatUserTurn(endToEndMessage(s.reference, templates, s.signature));
  return s;
}

namespace {

/// Code as a fenced block's body: ending in exactly the newline before the
/// closing fence.
std::string codeSlot(const std::string &code) {
  return code.ends_with("\n") ? code : code + "\n";
}

/// How a message names the entry point: its declaration in backquotes, or
/// `unknown` where there is no signature.
std::string functionSlot(const std::string &signature, const std::string &unknown) {
  return signature.empty() ? unknown
                           : "`" + signature.substr(0, signature.size() - 1) + "`";
}

} // namespace

std::string infillMessage(const std::string &reference, const std::string &prefix,
                          const std::string &suffix, const std::string &signature,
                          const PromptTemplates &templates) {
  return templates.infill.render(
      {{"reference", codeSlot(reference)},
       {"prefix", codeSlot(prefix)},
       {"suffix", codeSlot(suffix)},
       {"function", functionSlot(signature, "`dice_forward` declared in the suffix")},
       {"signature", signature}});
}

std::string endToEndMessage(const std::string &reference,
                            const PromptTemplates &templates,
                            const std::string &signature) {
  return templates.endToEnd.render({{"reference", codeSlot(reference)},
                                    {"function", functionSlot(signature, "`dice_forward`")},
                                    {"signature", signature}});
}

std::string chatUserTurn(const std::string &message) {
  return "<|im_start|>user\n" + message + "<|im_end|>\n<|im_start|>assistant\n";
}

} // namespace dice
