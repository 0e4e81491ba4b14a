//===- ChatTemplate.cpp - the SDAR/DICE chat template ---------------------===//
//
// The Qwen3 chat template that ships with the SDAR checkpoints
// (chat_template.jinja), rendered for the two conversations the model
// runtime needs: a user turn awaiting the answer (inference) and a user turn
// with its answer (training). Written out rather than interpreted: these
// two paths of the template are all DICE uses, and the parity test renders
// them with transformers to keep them identical.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Tokenizer.h"

namespace dice {
namespace {

constexpr std::string_view kThinkEnd = "</think>";

std::string_view stripLeft(std::string_view s) {
  while (!s.empty() && s.front() == '\n')
    s.remove_prefix(1);
  return s;
}

std::string_view stripRight(std::string_view s) {
  while (!s.empty() && s.back() == '\n')
    s.remove_suffix(1);
  return s;
}

std::string userTurn(std::string_view message) {
  std::string out = "<|im_start|>user\n";
  out += message;
  out += "<|im_end|>\n";
  return out;
}

} // namespace

std::string Tokenizer::applyChatTemplate(std::string_view userMessage) const {
  // With add_generation_prompt and enable_thinking undefined, the template
  // ends on the bare assistant header: no empty think block.
  return userTurn(userMessage) + "<|im_start|>assistant\n";
}

std::string Tokenizer::applyChatTemplate(std::string_view userMessage,
                                         std::string_view answer) const {
  std::string out = userTurn(userMessage);
  // The template looks back for the last user turn that is not a tool
  // response; only an answer after such a turn gets the think block.
  bool toolResponse = userMessage.starts_with("<tool_response>") &&
                      userMessage.ends_with("</tool_response>");
  // An answer that closes a think block is split into reasoning and content.
  std::string_view content = answer, reasoning;
  if (size_t first = answer.find(kThinkEnd); first != std::string_view::npos) {
    size_t last = answer.rfind(kThinkEnd);
    content = stripLeft(answer.substr(last + kThinkEnd.size()));
    reasoning = stripRight(answer.substr(0, first));
    if (size_t open = reasoning.rfind("<think>"); open != std::string_view::npos)
      reasoning.remove_prefix(open + std::string_view("<think>").size());
    reasoning = stripLeft(reasoning);
  }
  out += "<|im_start|>assistant\n";
  if (!toolResponse) {
    out += "<think>\n";
    out += stripRight(stripLeft(reasoning));
    out += "\n</think>\n\n";
    out += stripLeft(content);
  } else {
    out += content;
  }
  out += "<|im_end|>\n";
  return out;
}

} // namespace dice
