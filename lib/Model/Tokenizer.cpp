//===- Tokenizer.cpp - encoding and decoding ------------------------------===//
//
// The steps of transformers' Qwen2 tokenizer, in its order: added tokens are
// cut out of the raw text first; each remaining span is NFC-normalised,
// split by the pre-tokenization regex, mapped to bytes and merged by BPE.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"
#include "Utf8.h"


namespace dice {

void Tokenizer::Impl::encodeValidUtf8(std::string_view text,
                                      PreTokenizer::Matcher &matcher,
                                      std::vector<int32_t> &ids) const {
  std::string normalized;
  if (utf8::mayNeedNfc(text)) {
    utf8::appendNfc(text, normalized);
    text = normalized;
  }
  std::vector<std::string_view> pieces;
  matcher.split(text, pieces);
  for (std::string_view piece : pieces)
    bpe.encode(piece, ids);
}

void Tokenizer::Impl::encodeText(std::string_view text,
                                 PreTokenizer::Matcher &matcher,
                                 std::vector<int32_t> &ids) const {
  // Python strings cannot hold invalid UTF-8, so the reference has no rule
  // for it; each ill-formed byte becomes its byte token, and the valid runs
  // around it are tokenized on their own.
  size_t runStart = 0;
  for (size_t pos = 0; pos < text.size();) {
    utf8::Step s = utf8::step(text, pos);
    if (s.valid) {
      pos += s.length;
      continue;
    }
    encodeValidUtf8(text.substr(runStart, pos - runStart), matcher, ids);
    for (size_t k = 0; k < s.length; ++k)
      ids.push_back(bpe.byteId(static_cast<unsigned char>(text[pos + k])));
    pos += s.length;
    runStart = pos;
  }
  if (runStart < text.size())
    encodeValidUtf8(text.substr(runStart), matcher, ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  PreTokenizer::Matcher matcher(*impl->preTokenizer);
  // Leftmost-longest match of the added tokens, as the reference does.
  size_t spanStart = 0;
  for (size_t pos = 0; pos < text.size();) {
    const std::vector<uint32_t> &candidates =
        impl->addedByFirstByte[static_cast<unsigned char>(text[pos])];
    const AddedToken *match = nullptr;
    for (uint32_t index : candidates) {
      const AddedToken &token = impl->addedTokens[index];
      if (text.compare(pos, token.content.size(), token.content) == 0) {
        match = &token;
        break;
      }
    }
    if (!match) {
      ++pos;
      continue;
    }
    impl->encodeText(text.substr(spanStart, pos - spanStart), matcher, ids);
    ids.push_back(match->id);
    pos += match->content.size();
    spanStart = pos;
  }
  impl->encodeText(text.substr(spanStart), matcher, ids);
  return ids;
}

std::string Tokenizer::decodeBytes(const std::vector<int32_t> &ids) const {
  std::string out;
  for (int32_t id : ids)
    if (id >= 0 && static_cast<size_t>(id) < impl->known.size() &&
        impl->known[id])
      out += impl->bytesOf[id];
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  return utf8::replaceInvalid(decodeBytes(ids));
}

int32_t Tokenizer::tokenId(std::string_view token) const {
  if (auto it = impl->addedIds.find(token); it != impl->addedIds.end())
    return it->second;
  if (auto it = impl->vocab.find(token); it != impl->vocab.end())
    return it->second;
  return -1;
}

int64_t Tokenizer::vocabSize() const {
  return static_cast<int64_t>(impl->known.size());
}

} // namespace dice
