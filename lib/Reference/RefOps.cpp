//===- RefOps.cpp - the table of RefOps.def as data ----------------------===//

#include "dice/Reference/RefOps.h"

#include <map>
#include <sstream>

namespace dice {
namespace {

std::vector<std::string> words(const char *text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

const std::vector<RefFnInfo> &table() {
  static const std::vector<RefFnInfo> infos = [] {
    std::vector<RefFnInfo> t;
#define DICE_REF_OP(Enum, Name, MinArgs, MaxArgs, Attrs, Category)                         \
  t.push_back({Name, MinArgs, MaxArgs, words(Attrs), RefCategory::Category, RefNumbers::Tensors});
#define DICE_REF_BINARY(Enum, Name, Torch, Aten, Numbers)                                  \
  t.push_back({Name, 2, 2, {}, RefCategory::Elementwise, RefNumbers::Numbers});
#include "dice/Reference/RefOps.def"
    return t;
  }();
  return infos;
}

} // namespace

const RefFnInfo &refFnInfo(RefFn fn) { return table()[static_cast<size_t>(fn)]; }

std::optional<RefFn> parseRefFn(std::string_view name) {
  static const std::map<std::string, RefFn, std::less<>> byName = [] {
    std::map<std::string, RefFn, std::less<>> m;
    for (RefFn fn : allRefFns())
      m.emplace(refFnName(fn), fn);
    return m;
  }();
  auto it = byName.find(name);
  if (it == byName.end())
    return std::nullopt;
  return it->second;
}

const std::vector<RefFn> &allRefFns() {
  static const std::vector<RefFn> fns = {
#define DICE_REF_OP(Enum, Name, MinArgs, MaxArgs, Attrs, Category) RefFn::Enum,
#include "dice/Reference/RefOps.def"
  };
  return fns;
}

} // namespace dice
