//===- TomlDocument.cpp - screen TOML text, then parse it -----------------===//

#include "dice/Config/TomlDocument.h"

#include <optional>
#include <vector>

namespace dice {
namespace {

/// A lexical pass over TOML text that tracks strings, comments and bracket
/// depth, and stops at the first thing toml++ 3.3 cannot be trusted with.
class TomlScreen {
public:
  TomlScreen(std::string_view text, const std::string &source)
      : text(text), source(source) {}

  std::optional<Error> run() {
    while (at < text.size()) {
      char c = text[at];
      if (c == '\n') {
        advance();
        previous = '\n';
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
        continue;
      }
      if (previous == '\n' && open.empty() && c == '[') {
        if (std::optional<Error> bad = tableHeader())
          return bad;
        if (stopped)
          return std::nullopt;
        previous = ']';
        continue;
      }
      if (c == '#') {
        skipComment();
      } else if (c == '"' || c == '\'') {
        if (std::optional<Error> bad = quoted(c))
          return bad;
        if (stopped)
          return std::nullopt;
        previous = '"';
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        return error("a character outside ASCII may only appear in a string "
                     "or a comment");
      } else {
        if (c == '}' && !open.empty() && open.back() == '[')
          return error("'}' inside an array: expected a value, ',' or ']'");
        if (c == '[' || c == '{')
          open.push_back(c);
        else if ((c == ']' || c == '}') && !open.empty())
          open.pop_back();
        previous = c;
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

  /// A string where a key or a value starts; a quote anywhere else (inside
  /// a bare word: `22nd"...`) is an error, since toml++ then reads what
  /// follows as bare text, and meets non-ASCII characters there with
  /// undefined behaviour. Only a value may be a multi-line string: at a key
  /// `"""` is an empty key and a quote.
  std::optional<Error> quoted(char quote) {
    bool inArray = !open.empty() && open.back() == '[';
    bool value = previous == '=' || previous == '[' ||
                 (inArray && (previous == ',' || previous == '\n'));
    bool key = !value && (previous == '\n' || previous == '{' ||
                          previous == ',' || previous == '.');
    if (!value && !key)
      return error("a quote here does not start a string: strings start "
                   "keys and values");
    if (!string(quote, /*multiLineAllowed=*/value)) {
      if (failed)
        return error("a character outside ASCII cannot follow a backslash in "
                     "a multi-line string, nor the blanks after one");
      stopped = true;
    }
    return std::nullopt;
  }

  /// A string starting at `quote`, single- or multi-line; its contents may
  /// be anything. Returns false when it does not end: toml++ reports that
  /// itself (at the line's end, as users of dice.toml have seen it), and
  /// nothing after it can be screened.
  bool string(char quote, bool multiLineAllowed = false) {
    std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
    bool multiLine = multiLineAllowed && startsWith(triple);
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
      if (quote == '"' && text[at] == '\\') {
        if (multiLine && !afterBackslashIsAscii())
          return failed = true, false;
        advance(2);
        continue;
      }
      advance();
    }
    return false;
  }

  /// In a multi-line basic string, toml++ tests what follows a backslash,
  /// and the blank lines after a line-ending one, for whitespace, and meets
  /// a character outside ASCII there with undefined behaviour.
  bool afterBackslashIsAscii() {
    size_t next = at + 1;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t' ||
                                  text[next] == '\r' || text[next] == '\n'))
      ++next;
    if (next < text.size() && static_cast<unsigned char>(text[next]) >= 0x80) {
      advance(next - at);
      return false;
    }
    return true;
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
  /// The [ and { of values still open: a '[' inside one is no header.
  std::vector<char> open;
  /// The last character outside blanks, comments and strings ('"' for a
  /// string, '\n' at a line's start): where a string may start.
  char previous = '\n';
  bool stopped = false; ///< a string did not end: the rest is toml++'s
  bool failed = false;  ///< a string held what toml++ cannot be trusted with
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
