//===- TokenizerImpl.h - the tables behind dice::Tokenizer ------*- C++ -*-===//

#ifndef DICE_MODEL_TOKENIZERIMPL_H
#define DICE_MODEL_TOKENIZERIMPL_H

#include "ByteLevelBPE.h"
#include "PreTokenizer.h"

#include "dice/Model/Tokenizer.h"

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dice {

/// A token matched verbatim in the text before any other processing
/// (`<|im_start|>`, `<think>`, `<|MASK|>`, ...).
struct AddedToken {
  std::string content;
  int32_t id;
};

struct Tokenizer::Impl {
  using IdMap = std::unordered_map<std::string, int32_t, TransparentStringHash,
                                   std::equal_to<>>;

  std::unique_ptr<PreTokenizer> preTokenizer;
  BytePairEncoder bpe;
  IdMap vocab;      ///< byte-level spelling -> id, as in vocab.json
  IdMap addedIds;   ///< added token content -> id
  std::vector<AddedToken> addedTokens;
  /// Indices into addedTokens by first byte, longest first, so the first
  /// that matches at a position is the longest.
  std::array<std::vector<uint32_t>, 256> addedByFirstByte;
  /// The bytes each id decodes to; `known[id]` false for gaps.
  std::vector<std::string> bytesOf;
  std::vector<bool> known;

  void encodeText(std::string_view text, PreTokenizer::Matcher &matcher,
                  std::vector<int32_t> &ids) const;
  void encodeValidUtf8(std::string_view text, PreTokenizer::Matcher &matcher,
                       std::vector<int32_t> &ids) const;
};

} // namespace dice

#endif // DICE_MODEL_TOKENIZERIMPL_H
