//===- ForwardSignature.cpp - the dice_forward declaration ----------------===//

#include "dice/VerifierCore/ForwardSignature.h"

#include "dice/Support/Text.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

namespace dice {

namespace {

/// Collapses runs of whitespace, so declarations that differ only in
/// spacing share a registration object.
std::string collapseSpaces(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ')
        out += ' ';
    } else {
      out += c;
    }
  }
  return trim(out);
}

bool isTensorType(std::string_view type) {
  static const std::regex tensor(
      R"((const\s+)?((torch|at)::)?Tensor(\s*&)?)");
  return std::regex_match(std::string(type), tensor);
}

} // namespace

bool isIdentifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])))
    return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Result<DiceForwardSignature>
parseDiceForwardSignature(std::string_view declaration) {
  std::string text = collapseSpaces(declaration);
  while (!text.empty() && text.back() == ';')
    text = trim(text.substr(0, text.size() - 1));
  size_t name = text.find("dice_forward");
  size_t open = text.find('(', name);
  size_t close = text.rfind(')');
  if (name == std::string::npos || open == std::string::npos ||
      close == std::string::npos || close < open ||
      trim(text.substr(name + 12, open - name - 12)) != "" ||
      close != text.size() - 1) {
    return Error("signature is not a declaration of dice_forward: '" +
                 std::string(declaration) + "'");
  }
  DiceForwardSignature signature;
  std::string result = trim(text.substr(0, name));
  std::string compact;
  for (char c : result)
    if (c != ' ')
      compact += c;
  if (compact == "torch::Tensor" || compact == "at::Tensor") {
    signature.returnsList = false;
  } else if (compact == "std::vector<torch::Tensor>" ||
             compact == "std::vector<at::Tensor>") {
    signature.returnsList = true;
  } else {
    return Error("dice_forward must return torch::Tensor or "
                 "std::vector<torch::Tensor>, not '" +
                 result + "'");
  }
  std::string params = trim(text.substr(open + 1, close - open - 1));
  std::stringstream in(params);
  for (std::string param; std::getline(in, param, ',');) {
    param = trim(param);
    size_t split = param.find_last_of(" &");
    std::string type = split == std::string::npos ? "" : trim(param.substr(0, split + 1));
    std::string pname = split == std::string::npos ? param : param.substr(split + 1);
    if (!isIdentifier(pname) || !isTensorType(type)) {
      return Error("dice_forward parameter '" + param +
                   "' is not a named torch::Tensor");
    }
    signature.parameters.push_back(pname);
  }
  signature.declaration = text + ";";
  return signature;
}

} // namespace dice
