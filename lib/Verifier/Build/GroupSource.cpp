//===- GroupSource.cpp - several candidates in one translation unit -------===//

#include "dice/KernelBuild/GroupSource.h"

#include "dice/KernelBuild/KernelBuild.h"
#include "dice/Support/Text.h"

#include <cctype>
#include <regex>
#include <sstream>

namespace dice {

namespace {

/// One line of a candidate and what the preprocessor sees in it.
struct SourceLine {
  std::string text;
  /// The directive's name ("include", "define", ...); empty for code, for
  /// a continuation of the previous line's directive and inside comments.
  std::string directive;
};

/// Splits `source` into lines, naming the directive of each. A line inside
/// a block comment, or continuing a directive with a backslash, is no
/// directive of its own.
std::vector<SourceLine> scanLines(std::string_view source) {
  std::vector<SourceLine> lines;
  bool inComment = false, continues = false;
  std::stringstream in{std::string(source)};
  for (std::string text; std::getline(in, text);) {
    SourceLine line{text, ""};
    size_t first = text.find_first_not_of(" \t");
    if (!inComment && !continues && first != std::string::npos &&
        text[first] == '#') {
      size_t name = text.find_first_not_of(" \t", first + 1);
      size_t end = name;
      while (end != std::string::npos && end < text.size() &&
             (std::isalpha(static_cast<unsigned char>(text[end])) ||
              text[end] == '_'))
        ++end;
      line.directive = name == std::string::npos
                           ? std::string("#")
                           : text.substr(name, end - name);
      if (line.directive.empty())
        line.directive = "#";
    }
    continues = (continues || !line.directive.empty()) && !text.empty() &&
                text.back() == '\\';
    // Block comments, outside line comments and string literals: enough
    // to know whether the next line starts inside one.
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
      if (inComment) {
        if (text.compare(i, 2, "*/") == 0) {
          inComment = false;
          ++i;
        }
      } else if (inString) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '"')
          inString = false;
      } else if (text[i] == '"') {
        inString = true;
      } else if (text.compare(i, 2, "//") == 0) {
        break;
      } else if (text.compare(i, 2, "/*") == 0) {
        inComment = true;
        ++i;
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

/// The name a `#define` line defines.
std::string definedName(const std::string &text) {
  static const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_]\w*))");
  std::smatch m;
  return std::regex_search(text, m, define) ? m[1].str() : "";
}

/// Whether an `#include` line names its header literally (`<...>` or
/// `"..."`), not through a macro.
bool literalInclude(const std::string &text) {
  static const std::regex include(R"(^\s*#\s*include\s*[<"][^>"]+[>"]\s*(//.*)?$)");
  return std::regex_search(text, include);
}

} // namespace

std::string groupIneligibility(std::string_view cudaSource) {
  static const std::regex cLinkage(R"(extern\s*"C")");
  if (std::regex_search(std::string(cudaSource), cLinkage))
    return "it declares C linkage (extern \"C\"), which a namespace does not "
           "isolate";
  for (const SourceLine &line : scanLines(cudaSource)) {
    const std::string &d = line.directive;
    if (d.empty() || d == "define")
      continue;
    if (d == "include") {
      if (!literalInclude(line.text))
        return "it includes a header through a macro";
      continue;
    }
    if (d == "pragma") {
      static const std::regex harmless(R"(^\s*#\s*pragma\s+(unroll\b.*|once\s*)$)");
      if (std::regex_search(line.text, harmless))
        continue;
    }
    return "it uses `" + trim(line.text) +
           "`, whose meaning could change beside other candidates";
  }
  return "";
}

std::string groupNamespace(size_t index) {
  // The trailing '_' keeps the index apart from the length digits that
  // follow a namespace in mangled names (`15dice_member12_7kernel`).
  return "dice_member" + std::to_string(index) + "_";
}

std::string groupTranslationUnit(const std::vector<GroupMember> &members) {
  std::string includes, bodies;
  std::set<std::string> hoisted;
  for (size_t m = 0; m < members.size(); ++m) {
    const GroupMember &member = members[m];
    std::string file = "candidate" + std::to_string(m) + ".cu";
    std::string text;
    std::vector<std::string> macros;
    std::vector<SourceLine> lines = scanLines(member.cudaSource);
    for (size_t i = 0; i < lines.size(); ++i) {
      const SourceLine &line = lines[i];
      if (line.directive == "include") {
        if (hoisted.insert(trim(line.text)).second)
          includes += "#line " + std::to_string(i + 1) + " \"" + file +
                      "\"\n" + trim(line.text) + "\n";
        text += "\n";
        continue;
      }
      if (line.directive == "define")
        if (std::string name = definedName(line.text); !name.empty())
          macros.push_back(name);
      text += line.text + "\n";
    }
    std::string ns = groupNamespace(m);
    bodies += "#line 1 \"dice_group.cu\"\nnamespace " + ns + " {\n" +
              "__attribute__((visibility(\"hidden\"))) " +
              member.signature.declaration + "\n#line 1 \"" + file + "\"\n" +
              text + "#line 1 \"dice_entry" + std::to_string(m) + ".cu\"\n" +
              lightEntrySource(member.fingerprint, member.signature) +
              "} // namespace " + ns + "\n";
    for (const std::string &name : macros)
      bodies += "#undef " + name + "\n";
  }
  return "// Generated: candidates of several requests, built together for "
         "checking.\n" +
         includes + bodies;
}

std::set<size_t> blamedMembers(const std::string &output, size_t members) {
  static const std::regex named(
      R"((?:candidate|dice_entry)(\d+)\.cu|dice_member(\d+)_)");
  std::set<size_t> blamed;
  std::stringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::string lower = line;
    for (char &c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("error") == std::string::npos &&
        lower.find("undefined reference") == std::string::npos)
      continue;
    for (std::sregex_iterator it(line.begin(), line.end(), named), end;
         it != end; ++it) {
      std::string digits = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      if (digits.size() > 6)
        continue;
      size_t index = std::stoul(digits);
      if (index < members)
        blamed.insert(index);
    }
  }
  return blamed;
}

} // namespace dice
