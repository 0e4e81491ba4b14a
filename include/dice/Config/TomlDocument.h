//===- TomlDocument.h - TOML text to a table, safely -------------*- C++ -*-===//
//
// The one way the project turns TOML text into a toml++ table (dice.toml,
// dice-train's configuration and both tools' `key=value` overrides).
//
// toml++ 3.3 (Debian 12's libtomlplusplus-dev) reaches undefined behaviour on
// some malformed inputs instead of reporting them: a non-ASCII character
// between tokens falls into `TOML_UNREACHABLE` in its Unicode whitespace
// table, and a table header that does not start with a key breaks an
// assumption of its key parser (both found by test/fuzz's config target).
// The text is therefore screened first for what TOML forbids anyway:
// characters outside ASCII anywhere but in strings and comments, and table
// headers that are not a dotted key. What passes goes to toml++; every
// error, ours or its, names the file, line and column.
//
// Only libraries that read TOML include this (it pulls in toml++).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_CONFIG_TOMLDOCUMENT_H
#define DICE_CONFIG_TOMLDOCUMENT_H

#include "dice/Support/Result.h"

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace dice {

/// Parses `text`; `sourceName` is the file errors name.
Result<toml::table> parseTomlDocument(std::string_view text,
                                      const std::string &sourceName);

} // namespace dice

#endif // DICE_CONFIG_TOMLDOCUMENT_H
