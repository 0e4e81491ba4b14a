//===- TomlDocument.h - TOML text to a table, safely -------------*- C++ -*-===//
//
// The one way the project turns TOML text into a toml++ table (dice.toml,
// dice-train's configuration and both tools' `key=value` overrides).
//
// toml++ 3.3 (Debian 12's libtomlplusplus-dev) reaches undefined behaviour on
// some malformed inputs instead of reporting them (all found by test/fuzz's
// config target): a character outside ASCII where it tests for whitespace
// falls into `TOML_UNREACHABLE` in its Unicode whitespace table (between
// tokens, inside a bare word after a stray quote, after a backslash in a
// multi-line string); a table header that does not start with a key, and
// '}' where an array expects a value, break assumptions of its parser.
// The text is therefore screened first for what TOML forbids anyway (and,
// after a backslash in a multi-line string, for a rare case it allows):
// characters outside ASCII anywhere but in strings and comments, quotes
// that do not start a key or a value, '}' inside an array, table headers
// that are not a dotted key. What passes goes to toml++; every error, ours
// or its, names the file, line and column.
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
