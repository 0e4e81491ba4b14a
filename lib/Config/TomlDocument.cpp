//===- TomlDocument.cpp - screen TOML text, then parse it -----------------===//

#include "dice/Config/TomlDocument.h"

#include <optional>

namespace dice {
namespace {

/// A lexical pass over TOML text that tracks strings, comments and bracket
/// depth, and stops at the first thing toml++ 3.3 cannot be trusted with.
class TomlScreen {
public:
  TomlScreen(std::string_view text, const std::string &source)
      : text(text), source(source) {}

  std::optional<Error> run() {
    bool lineStart = true;
    while (at < text.size()) {
      char c = text[at];
      if (c == '\n') {
        advance();
        lineStart = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
        continue;
      }
      if (lineStart && depth == 0 && c == '[') {
        if (std::optional<Error> bad = tableHeader())
          return bad;
        if (stopped)
          return std::nullopt;
        lineStart = false;
        continue;
      }
      lineStart = false;
      if (c == '#') {
        skipComment();
      } else if (c == '"' || c == '\'') {
        if (!string(c))
          return std::nullopt;
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        return error("a character outside ASCII may only appear in a string "
                     "or a comment");
      } else {
        if (c == '[' || c == '{')
          ++depth;
        else if ((c == ']' || c == '}') && depth > 0)
          --depth;
        advance();
      }
    }
    return std::nullopt;
  }

private:
  bool startsWith(std::string_view prefix) const {
    return text.substr(at, prefix.size()) == prefix;
  }

  void advance(size_t n = 1) {
    for (; n > 0 && at < text.size(); --n, ++at) {
      unsigned char c = static_cast<unsigned char>(text[at]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) { // columns count characters, not bytes
        ++column;
      }
    }
  }

  Error error(std::string message) const {
    return Error(source, line, column, "", std::move(message));
  }

  void skipComment() {
    while (at < text.size() && text[at] != '\n')
      advance();
  }

  /// A string starting at `quote`, single- or multi-line; its contents may
  /// be anything. Returns false when it does not end: toml++ reports that
  /// itself (at the line's end, as users of dice.toml have seen it), and
  /// nothing after it can be screened.
  bool string(char quote) {
    std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
    bool multiLine = startsWith(triple);
    advance(multiLine ? 3 : 1);
    while (at < text.size()) {
      if (multiLine ? startsWith(triple) : text[at] == quote) {
        // A multi-line string may end in up to two more quotes ("""a"""").
        advance(multiLine ? 3 : 1);
        while (multiLine && at < text.size() && text[at] == quote)
          advance();
        return true;
      }
      if (!multiLine && text[at] == '\n')
        break;
      advance(quote == '"' && text[at] == '\\' ? 2 : 1);
    }
    return false;
  }

  /// `[key.key]` or `[[key.key]]` at the start of a line: each key bare
  /// (A-Z a-z 0-9 _ -) or quoted, separated by dots.
  std::optional<Error> tableHeader() {
    bool arrayOfTables = startsWith("[[");
    advance(arrayOfTables ? 2 : 1);
    for (;;) {
      skipBlanks();
      if (at < text.size() && (text[at] == '"' || text[at] == '\'')) {
        if (!string(text[at])) {
          stopped = true;
          return std::nullopt;
        }
      } else {
        size_t start = at;
        while (at < text.size() && isBareKeyCharacter(text[at]))
          advance();
        if (at == start)
          return error("a table header needs a key here (letters, digits, "
                       "'_', '-' or a quoted string)");
      }
      skipBlanks();
      if (at < text.size() && text[at] == '.') {
        advance();
        continue;
      }
      break;
    }
    if (!startsWith(arrayOfTables ? "]]" : "]"))
      return error(arrayOfTables ? "expected ']]' to close the table header"
                                 : "expected ']' to close the table header");
    advance(arrayOfTables ? 2 : 1);
    return std::nullopt;
  }

  void skipBlanks() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      advance();
  }

  static bool isBareKeyCharacter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  }

  std::string_view text;
  const std::string &source;
  size_t at = 0;
  unsigned line = 1, column = 1;
  int depth = 0; ///< open [ and { of values: a '[' inside one is no header
  bool stopped = false; ///< a string did not end: the rest is toml++'s
};

} // namespace

Result<toml::table> parseTomlDocument(std::string_view text,
                                      const std::string &sourceName) {
  if (std::optional<Error> bad = TomlScreen(text, sourceName).run())
    return *bad;
  toml::parse_result parsed = toml::parse(text, std::string_view(sourceName));
  if (!parsed) {
    const toml::parse_error &e = parsed.error();
    return Error(sourceName, static_cast<unsigned>(e.source().begin.line),
                 static_cast<unsigned>(e.source().begin.column), "",
                 std::string(e.description()));
  }
  return std::move(parsed).table();
}

} // namespace dice
