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

std::string fenced(const std::string &language, const std::string &code) {
  return "```" + language + "\n" + code + (code.ends_with("\n") ? "" : "\n") + "```";
}

} // namespace

std::string diceForwardSignature(const ReferenceProgram &program) {
  std::string result = program.outputs.size() == 1 ? "torch::Tensor"
                                                   : "std::vector<torch::Tensor>";
  return result + " dice_forward(" + parameterList(program, true) + ");";
}

ScaffoldText renderScaffold(const ReferenceProgram &program,
                            const std::string &fingerprint) {
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

  s.infillPrompt =
      chatUserTurn(infillMessage(s.reference, s.prefix, s.suffix, s.signature));
  s.endToEndPrompt = chatUserTurn(endToEndMessage(s.reference));
  return s;
}

namespace {

std::string taskStatement(const std::string &reference) {
  return "You write custom CUDA kernels to replace the PyTorch operators in the "
         "given architecture and make it faster.\n\n"
         "Here is the architecture:\n\n" +
         fenced("python", reference) + "\n\n";
}

} // namespace

std::string infillMessage(const std::string &reference, const std::string &prefix,
                          const std::string &suffix, const std::string &signature) {
  std::string function =
      signature.empty() ? "`dice_forward` declared in the suffix"
                        : "`" + signature.substr(0, signature.size() - 1) + "`";
  return taskStatement(reference) +
         "Fill in the missing part between the prefix and the suffix below. "
         "Define `source`, a Python string holding CUDA C++: the kernels and the "
         "function " + function +
         " that launches them. The computation must run in your kernels, not "
         "in PyTorch operators.\n\n"
         "Prefix:\n" + fenced("python", prefix) + "\n\n"
         "Suffix:\n" + fenced("python", suffix) + "\n\n"
         "Output only the missing part in a ```python``` block.";
}

std::string endToEndMessage(const std::string &reference) {
  return taskStatement(reference) +
         "Write `ModelNew`, a drop-in replacement of `Model` that computes the "
         "same outputs with custom CUDA kernels compiled through "
         "`torch.utils.cpp_extension.load_inline`. The computation must run in "
         "your kernels, not in PyTorch operators. Output the complete program "
         "in a ```python``` block.";
}

std::string chatUserTurn(const std::string &message) {
  return "<|im_start|>user\n" + message + "<|im_end|>\n<|im_start|>assistant\n";
}

} // namespace dice
