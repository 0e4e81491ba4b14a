//===- Result.cpp - the located error's printed form -------------------===//

#include "dice/Support/Result.h"

std::string dice::Error::location() const {
  std::string out = file;
  if (!file.empty() && line) {
    out += ":" + std::to_string(line);
    if (column)
      out += ":" + std::to_string(column);
  }
  return out;
}

std::string dice::Error::format() const {
  std::string out = location();
  out += out.empty() ? "error: " : ": error: ";
  if (!key.empty())
    out += key + ": ";
  return out + message;
}

std::string dice::Error::describe() const {
  std::string out = location();
  if (!out.empty())
    out += ": ";
  if (!key.empty())
    out += key + ": ";
  if (file.empty() && line) {
    out += "line " + std::to_string(line);
    if (column)
      out += ", column " + std::to_string(column);
    out += ": ";
  }
  return out + message;
}
