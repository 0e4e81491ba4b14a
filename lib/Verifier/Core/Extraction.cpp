//===- Extraction.cpp - the CUDA source of a model answer -----------------===//
//
// A small Python lexer, not a regex: the CUDA source is a string literal in
// Python text, and only a lexer knows where a string, a comment or a
// parenthesised continuation ends (a `"""` inside a `#` comment, an
// apostrophe in a docstring, `\n` escapes that Python turns into newlines
// before load_inline ever sees the text).
//
//===----------------------------------------------------------------------===//

#include "dice/VerifierCore/Extraction.h"
#include "dice/Support/Text.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace dice {
namespace {

enum class TokenKind { Name, String, Op, Newline };

struct Token {
  TokenKind kind;
  std::string text; ///< the name or operator; the prefix of a string
  unsigned line;
  // Strings only.
  std::string value;
  bool terminated = true;
  bool triple = false;
};

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }

bool isStringPrefix(std::string_view ident) {
  if (ident.size() > 2)
    return false;
  for (char c : ident)
    if (std::string_view("rRuUbBfF").find(c) == std::string_view::npos)
      return false;
  return true;
}

bool hasPrefixChar(std::string_view prefix, char lower) {
  for (char c : prefix)
    if (c == lower || c == lower - ('a' - 'A'))
      return true;
  return false;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}


/// The value Python gives the body of a non-raw str literal.
std::string decodeEscapes(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
    case '\n': break; // line continuation inside the string
    case '\\': out += '\\'; break;
    case '\'': out += '\''; break;
    case '"': out += '"'; break;
    case 'a': out += '\a'; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'v': out += '\v'; break;
    case 'x':
    case 'u':
    case 'U': {
      size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      size_t j = 0;
      for (; j < digits && i + 1 + j < body.size(); ++j) {
        int v = hexDigitValue(body[i + 1 + j]);
        if (v < 0)
          break;
        cp = cp * 16 + v;
      }
      if (j != digits) { // Python rejects it; keep the text for the compiler
        out += '\\';
        out += e;
        break;
      }
      i += digits;
      appendUtf8(out, cp);
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t cp = e - '0';
        for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' &&
                        body[i + 1] <= '7';
             ++k)
          cp = cp * 8 + (body[++i] - '0');
        appendUtf8(out, cp);
      } else { // unknown escapes keep their backslash, as in Python
        out += '\\';
        out += e;
      }
    }
  }
  return out;
}

/// Lexes Python text leniently: it never fails, so junk after the hole (or
/// prose around an unfenced answer) cannot hide the hole.
class PythonLexer {
public:
  PythonLexer(std::string_view text, unsigned firstLine)
      : text(text), line(firstLine) {}

  std::vector<Token> lex() {
    std::vector<Token> tokens;
    int depth = 0;
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '#') {
        while (pos < text.size() && text[pos] != '\n')
          ++pos;
      } else if (c == '\\' && pos + 1 < text.size() && text[pos + 1] == '\n') {
        pos += 2;
        ++line;
      } else if (c == '\n') {
        if (depth == 0)
          tokens.push_back({TokenKind::Newline, "", line});
        ++pos;
        ++line;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        ++pos;
      } else if (c == '"' || c == '\'') {
        tokens.push_back(lexString(""));
      } else if (isIdentStart(c)) {
        size_t start = pos;
        while (pos < text.size() && isIdentChar(text[pos]))
          ++pos;
        std::string_view ident = text.substr(start, pos - start);
        if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'') &&
            isStringPrefix(ident))
          tokens.push_back(lexString(ident));
        else
          tokens.push_back({TokenKind::Name, std::string(ident), line});
      } else {
        std::string op(1, c);
        ++pos;
        if (pos < text.size() && text[pos] == '=' &&
            std::string_view("=!<>:+-*/%&|^@").find(c) != std::string_view::npos)
          op += text[pos++];
        if (c == '(' || c == '[' || c == '{')
          ++depth;
        else if ((c == ')' || c == ']' || c == '}') && depth > 0)
          --depth;
        tokens.push_back({TokenKind::Op, op, line});
      }
    }
    return tokens;
  }

private:
  Token lexString(std::string_view prefix) {
    Token tok{TokenKind::String, std::string(prefix), line};
    bool raw = hasPrefixChar(prefix, 'r');
    char quote = text[pos];
    tok.triple = text.substr(pos, 3) == std::string_view(std::string(3, quote));
    size_t quoteLen = tok.triple ? 3 : 1;
    pos += quoteLen;
    size_t start = pos;
    tok.terminated = false;
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\\' && pos + 1 < text.size()) {
        if (text[pos + 1] == '\n')
          ++line;
        pos += 2;
        continue;
      }
      if (c == '\n') {
        if (!tok.triple)
          break; // a one-line string ends at the line end, closed or not
        ++line;
      }
      if (c == quote &&
          (!tok.triple || text.substr(pos, 3) == std::string_view(std::string(3, quote)))) {
        tok.terminated = true;
        break;
      }
      ++pos;
    }
    std::string_view body = text.substr(start, pos - start);
    tok.value = raw ? std::string(body) : decodeEscapes(body);
    if (tok.terminated)
      pos += quoteLen;
    return tok;
  }

  std::string_view text;
  size_t pos = 0;
  unsigned line;
};

/// One region of the output to read as Python, with its first line.
struct PythonRegion {
  std::string_view text;
  unsigned firstLine;
};

/// The ```python (or untagged) fenced blocks of a chat answer; the whole
/// text when it has no fence.
std::vector<PythonRegion> pythonRegions(std::string_view output) {
  std::vector<PythonRegion> regions;
  bool sawFence = false;
  size_t pos = 0;
  unsigned line = 1;
  std::optional<PythonRegion> open;
  size_t openStart = 0;
  while (pos <= output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos)
      end = output.size();
    std::string_view text = output.substr(pos, end - pos);
    size_t indent = text.find_first_not_of(" \t");
    bool fence = indent != std::string_view::npos && text.substr(indent, 3) == "```";
    if (fence) {
      sawFence = true;
      if (open) {
        open->text = output.substr(openStart, pos - openStart);
        regions.push_back(*open);
        open.reset();
      } else {
        std::string_view tag = text.substr(indent + 3);
        while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\r'))
          tag.remove_suffix(1);
        if (tag.empty() || tag == "python" || tag == "py" || tag == "python3" ||
            tag == "Python") {
          open = PythonRegion{{}, line + 1};
          openStart = end + 1 <= output.size() ? end + 1 : output.size();
        } else {
          open = PythonRegion{{}, 0}; // another language: skipped
          openStart = end + 1 <= output.size() ? end + 1 : output.size();
        }
      }
    }
    if (end == output.size())
      break;
    pos = end + 1;
    ++line;
  }
  if (open) // an answer cut off inside its block keeps what it has
    regions.push_back({output.substr(openStart), open->firstLine});
  if (!sawFence)
    return {{output, 1}};
  std::vector<PythonRegion> python;
  for (const PythonRegion &r : regions)
    if (r.firstLine != 0)
      python.push_back(r);
  return python;
}

bool atStatementStart(const std::vector<Token> &tokens, size_t i) {
  return i == 0 || tokens[i - 1].kind == TokenKind::Newline ||
         (tokens[i - 1].kind == TokenKind::Op && tokens[i - 1].text == ";");
}

bool isOp(const std::vector<Token> &tokens, size_t i, std::string_view op) {
  return i < tokens.size() && tokens[i].kind == TokenKind::Op && tokens[i].text == op;
}

/// Where `name = <string>` is assigned: the first such statement.
std::optional<size_t> findAssignment(const std::vector<Token> &tokens,
                                     std::string_view name) {
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    if (tokens[i].kind == TokenKind::Name && tokens[i].text == name &&
        atStatementStart(tokens, i) && isOp(tokens, i + 1, "="))
      return i + 2;
  return std::nullopt;
}

/// The `cuda_sources=` argument of the model's own `load_inline` call, as
/// the token index of its value (a name or a string, maybe in a list).
std::optional<size_t> findLoadInlineSource(const std::vector<Token> &tokens) {
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::Name || tokens[i].text != "load_inline" ||
        !isOp(tokens, i + 1, "("))
      continue;
    int depth = 0;
    for (size_t j = i + 1; j < tokens.size(); ++j) {
      if (isOp(tokens, j, "(") || isOp(tokens, j, "[") || isOp(tokens, j, "{"))
        ++depth;
      else if (isOp(tokens, j, ")") || isOp(tokens, j, "]") || isOp(tokens, j, "}"))
        --depth;
      if (depth == 0)
        break;
      if (depth == 1 && tokens[j].kind == TokenKind::Name &&
          tokens[j].text == "cuda_sources" && isOp(tokens, j + 1, "=")) {
        size_t v = j + 2;
        if (isOp(tokens, v, "["))
          ++v;
        if (v < tokens.size())
          return v;
      }
    }
  }
  return std::nullopt;
}

/// Does the C++ text name `dice_forward` outside comments and literals?
bool mentionsDiceForward(std::string_view cpp) {
  constexpr std::string_view name = "dice_forward";
  for (size_t i = 0; i < cpp.size(); ++i) {
    char c = cpp[i];
    if (c == '/' && i + 1 < cpp.size() && cpp[i + 1] == '/') {
      i = cpp.find('\n', i);
      if (i == std::string_view::npos)
        return false;
    } else if (c == '/' && i + 1 < cpp.size() && cpp[i + 1] == '*') {
      i = cpp.find("*/", i + 2);
      if (i == std::string_view::npos)
        return false;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < cpp.size() && cpp[i] != c && cpp[i] != '\n'; ++i)
        if (cpp[i] == '\\')
          ++i;
    } else if (isIdentStart(c)) {
      size_t start = i;
      while (i < cpp.size() && isIdentChar(cpp[i]))
        ++i;
      if (cpp.substr(start, i - start) == name)
        return true;
      --i;
    }
  }
  return false;
}

ExtractionResult failure(std::string reason) {
  ExtractionResult result;
  result.reason = std::move(reason);
  return result;
}

std::string at(unsigned line) { return "line " + std::to_string(line) + ": "; }

/// Reads the string value starting at token `i`: one literal or adjacent
/// literals, optionally parenthesised, as Python would concatenate them.
ExtractionResult readSourceValue(const std::vector<Token> &tokens, size_t i,
                                 const std::string &variable, unsigned nameLine) {
  const std::string quoted = "`" + variable + "`";
  bool paren = isOp(tokens, i, "(");
  size_t j = paren ? i + 1 : i;
  if (j >= tokens.size() || tokens[j].kind != TokenKind::String)
    return failure(at(nameLine) + quoted +
                   " is not assigned a string literal holding the CUDA source");
  ExtractionResult result;
  result.variable = variable;
  result.line = tokens[j].line;
  for (; j < tokens.size() && tokens[j].kind == TokenKind::String; ++j) {
    const Token &tok = tokens[j];
    if (!tok.terminated)
      return failure(at(tok.line) + "the string assigned to " + quoted +
                     " is never closed");
    if (hasPrefixChar(tok.text, 'f'))
      return failure(at(tok.line) + quoted +
                     " is an f-string; the CUDA source must be a plain string "
                     "literal");
    if (hasPrefixChar(tok.text, 'b'))
      return failure(at(tok.line) + quoted +
                     " is a bytes literal; the CUDA source must be a str literal");
    result.cudaSource += tok.value;
  }
  if (paren && !isOp(tokens, j, ")"))
    return failure(at(nameLine) + quoted +
                   " is not a plain string literal (only adjacent literals "
                   "are concatenated)");
  j += paren ? 1 : 0;
  if (j < tokens.size() && tokens[j].kind != TokenKind::Newline && !isOp(tokens, j, ";"))
    return failure(at(nameLine) + quoted +
                   " is an expression, not a plain string literal");
  if (result.cudaSource.find_first_not_of(" \t\r\n") == std::string::npos)
    return failure(at(result.line) + "the string assigned to " + quoted + " is empty");
  if (!mentionsDiceForward(result.cudaSource))
    return failure(at(result.line) + "the CUDA source assigned to " + quoted +
                   " defines no `dice_forward`");
  result.status = ExtractionStatus::Extracted;
  return result;
}

/// The hole of one Python region, or nothing when the region has none.
std::optional<ExtractionResult> extractFromRegion(const PythonRegion &region) {
  std::vector<Token> tokens = PythonLexer(region.text, region.firstLine).lex();
  // DICE names the hole `source`; KernelBench-style programs often use these.
  for (std::string_view name : {"source", "cuda_source", "cuda_sources"})
    if (std::optional<size_t> value = findAssignment(tokens, name))
      return readSourceValue(tokens, *value, std::string(name), tokens[*value - 2].line);
  if (std::optional<size_t> arg = findLoadInlineSource(tokens)) {
    const Token &tok = tokens[*arg];
    if (tok.kind == TokenKind::String)
      return readSourceValue(tokens, *arg, "cuda_sources", tok.line);
    if (tok.kind == TokenKind::Name) {
      if (std::optional<size_t> value = findAssignment(tokens, tok.text))
        return readSourceValue(tokens, *value, tok.text, tokens[*value - 2].line);
      return failure(at(tok.line) + "`load_inline` compiles `" + tok.text +
                     "`, which is never assigned a string literal");
    }
  }
  for (const Token &tok : tokens)
    if (tok.kind == TokenKind::String && tok.triple && !tok.terminated)
      return failure(at(tok.line) + "a triple-quoted string is never closed, and "
                                    "no `source = \"\"\"...\"\"\"` precedes it");
  return std::nullopt;
}

} // namespace

std::string_view extractionStatusName(ExtractionStatus status) {
  return status == ExtractionStatus::Extracted ? "extracted" : "compile_error";
}

ExtractionResult extractCandidateSource(std::string_view modelOutput) {
  std::vector<PythonRegion> regions = pythonRegions(modelOutput);
  std::optional<ExtractionResult> firstFailure;
  for (const PythonRegion &region : regions) {
    std::optional<ExtractionResult> result = extractFromRegion(region);
    if (result && result->ok())
      return *result;
    if (result && !firstFailure)
      firstFailure = std::move(result);
  }
  if (firstFailure)
    return *firstFailure;
  unsigned lines = 1;
  for (char c : modelOutput)
    lines += c == '\n';
  if (regions.empty())
    return failure(at(1) + "the answer has fenced code but no ```python``` "
                           "block (" + std::to_string(lines) + " lines)");
  return failure(at(1) + "no `source = \"\"\"...\"\"\"` assignment (or "
                         "`load_inline(cuda_sources=...)`) in the answer (" +
                 std::to_string(lines) + " lines)");
}

} // namespace dice
