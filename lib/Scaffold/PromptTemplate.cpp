//===- PromptTemplate.cpp - the wording of the model's requests -----------===//

#include "dice/Scaffold/PromptTemplate.h"

#include "dice/Support/File.h"
#include "dice/Support/Sha256.h"

#include <algorithm>

namespace dice {
namespace {

// The built-in templates' text, embedded by CMake from templates/*.txt.
#include "BuiltinPromptTemplates.inc"

std::vector<std::string> slotsOf(PromptKind kind) {
  if (kind == PromptKind::Infill)
    return {"reference", "prefix", "suffix", "function", "signature"};
  return {"reference", "function", "signature"};
}

std::string kindName(PromptKind kind) {
  return kind == PromptKind::Infill ? "a kernel-infilling" : "an end-to-end";
}

} // namespace

Result<PromptTemplate> PromptTemplate::parse(PromptKind kind,
                                             const std::string &text,
                                             const std::string &sourceName) {
  PromptTemplate t;
  t.source = text;
  std::string body = text.ends_with("\n") ? text.substr(0, text.size() - 1) : text;
  std::vector<std::string> known = slotsOf(kind);
  auto where = [&](size_t offset) {
    unsigned line = 1 + std::count(body.begin(), body.begin() + offset, '\n');
    size_t lineStart = offset == 0 ? std::string::npos : body.rfind('\n', offset - 1);
    lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
    return std::make_pair(line, static_cast<unsigned>(offset - lineStart + 1));
  };
  size_t at = 0;
  while (at < body.size()) {
    size_t open = body.find("{{", at);
    if (open == std::string::npos) {
      t.pieces.push_back({false, body.substr(at)});
      break;
    }
    if (open > at)
      t.pieces.push_back({false, body.substr(at, open - at)});
    size_t close = body.find("}}", open + 2);
    auto [line, column] = where(open);
    if (close == std::string::npos)
      return Error(sourceName, line, column, "", "`{{` without its `}}`");
    std::string name = body.substr(open + 2, close - open - 2);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string &k : known)
        list += (list.empty() ? "" : ", ") + ("{{" + k + "}}");
      return Error(sourceName, line, column, "",
                   "unknown slot `{{" + name + "}}` in " + kindName(kind) +
                       " template (known: " + list + ")");
    }
    t.pieces.push_back({true, name});
    at = close + 2;
  }
  return t;
}

Result<PromptTemplate> PromptTemplate::load(PromptKind kind,
                                            const std::string &path) {
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  return parse(kind, *text, path);
}

const PromptTemplate &PromptTemplate::builtin(PromptKind kind) {
  // Checked by the tests: the built-in files parse.
  static const PromptTemplate infill =
      parse(PromptKind::Infill, kBuiltinInfillTemplate, "templates/infill.txt").take();
  static const PromptTemplate endToEnd =
      parse(PromptKind::EndToEnd, kBuiltinEndToEndTemplate,
            "templates/end_to_end.txt")
          .take();
  return kind == PromptKind::Infill ? infill : endToEnd;
}

std::string
PromptTemplate::render(const std::map<std::string, std::string> &slots) const {
  std::string out;
  for (const Piece &p : pieces) {
    if (!p.slot) {
      out += p.text;
      continue;
    }
    auto it = slots.find(p.text);
    if (it != slots.end())
      out += it->second;
  }
  return out;
}

const PromptTemplates &PromptTemplates::builtin() {
  static const PromptTemplates templates;
  return templates;
}

Result<PromptTemplates> PromptTemplates::load(const std::string &infillPath,
                                              const std::string &endToEndPath) {
  PromptTemplates t;
  if (infillPath.empty() && endToEndPath.empty())
    return t;
  if (!infillPath.empty()) {
    Result<PromptTemplate> infill = PromptTemplate::load(PromptKind::Infill, infillPath);
    if (!infill)
      return infill.error();
    t.infill = infill.take();
  }
  if (!endToEndPath.empty()) {
    Result<PromptTemplate> e2e =
        PromptTemplate::load(PromptKind::EndToEnd, endToEndPath);
    if (!e2e)
      return e2e.error();
    t.endToEnd = e2e.take();
  }
  // Both texts, each with its length, so no two pairs hash alike.
  std::string both = std::to_string(t.infill.text().size()) + ":" +
                     t.infill.text() + std::to_string(t.endToEnd.text().size()) +
                     ":" + t.endToEnd.text();
  t.identity = sha256Hex(both).substr(0, 16);
  return t;
}

} // namespace dice
