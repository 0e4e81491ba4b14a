//===- fuzz_tokenizer.cpp - the byte-level BPE tokenizer ------------------===//
//
// Encoding never loses a byte: for any input, the bytes decoded from its ids
// encode to the same ids again (NFC normalisation may change a non-ASCII
// input once, so this is the round trip that holds for every input), ASCII
// text comes back byte for byte, and every id is inside the vocabulary.
// Runs on the shipped model's tokenizer (model/default).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Model/Tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace {

const dice::Tokenizer &tokenizer() {
  static const dice::Tokenizer loaded = [] {
    dice::Result<dice::Tokenizer> t = dice::Tokenizer::load(DICE_FUZZ_TOKENIZER_DIR);
    if (!t) {
      std::fprintf(stderr, "%s\n", t.error().format().c_str());
      std::abort();
    }
    return t.take();
  }();
  return loaded;
}

std::string idsText(const std::vector<int32_t> &ids) {
  std::string text;
  for (int32_t id : ids)
    text += std::to_string(id) + " ";
  return text;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const dice::Tokenizer &t = tokenizer();
  std::string_view text = dice::fuzz::asText(data, size);
  std::vector<int32_t> ids = t.encode(text);
  for (int32_t id : ids)
    DICE_FUZZ_CHECK(id >= 0 && id < t.vocabSize(),
                    "id " + std::to_string(id) + " outside the vocabulary");
  std::string bytes = t.decodeBytes(ids);
  bool ascii = std::all_of(text.begin(), text.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii)
    DICE_FUZZ_CHECK(bytes == text, "ASCII text does not come back byte for byte");
  std::vector<int32_t> again = t.encode(bytes);
  DICE_FUZZ_CHECK(again == ids, "encode(decode(encode(x))) != encode(x):\n  " +
                                    idsText(ids) + "\n  " + idsText(again));
  // decode() only replaces what is not UTF-8; it must not fail or grow
  // without bound (each byte becomes at most one U+FFFD, 3 bytes).
  std::string shown = t.decode(ids);
  DICE_FUZZ_CHECK(shown.size() <= 3 * bytes.size(), "decode() grew the text");
  return 0;
}
