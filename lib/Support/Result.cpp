//===- Result.cpp - the located error's printed form -------------------===//

#include "dice/Support/Result.h"

std::string dice::Error::describe() const {
  std::string out = key.empty() ? "" : key + ": ";
  if (line) {
    out += "line " + std::to_string(line);
    if (column)
      out += ", column " + std::to_string(column);
    out += ": ";
  }
  return out + message;
}

std::string dice::Error::format() const {
  std::string out = file;
  if (!file.empty() && line) {
    out += ":" + std::to_string(line);
    if (column)
      out += ":" + std::to_string(column);
  }
  out += out.empty() ? "error: " : ": error: ";
  if (!key.empty())
    out += key + ": ";
  return out + message;
}
