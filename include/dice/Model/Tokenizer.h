//===- Tokenizer.h - Qwen2 byte-level BPE tokenizer -------------*- C++ -*-===//
//
// The tokenizer of the DICE/SDAR models: Qwen2 byte-level BPE read from a
// Hugging Face tokenizer folder (vocab.json, merges.txt, tokenizer_config.json
// and added_tokens.json), giving the same ids as transformers'
// AutoTokenizer for that folder. Needs neither LLVM nor LibTorch and throws
// nothing, so both halves of the build use it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_TOKENIZER_H
#define DICE_MODEL_TOKENIZER_H

#include "dice/Support/Result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// A loaded tokenizer. Immutable after load; copies share its tables, and
/// every member may be called from several threads at once.
class Tokenizer {
public:
  /// Reads the tokenizer files of a Hugging Face folder; an error names the
  /// file at fault, and its line or entry where it has one.
  static Result<Tokenizer> load(const std::string &dir);

  /// Token ids of `text`, as transformers' `encode(text)` (no BOS/EOS is
  /// added). Added and special tokens written in the text become their single
  /// ids. Bytes that are not valid UTF-8 are kept: each becomes the id of its
  /// byte, so no input is lost.
  std::vector<int32_t> encode(std::string_view text) const;

  /// The text of `ids`, as transformers' `decode(ids)`: special tokens are
  /// kept, unknown ids skipped, and byte sequences that are not valid UTF-8
  /// (e.g. a character cut in two) become U+FFFD.
  std::string decode(const std::vector<int32_t> &ids) const;

  /// The bytes of `ids` without the U+FFFD replacement; for streaming, where
  /// a character may be split across calls, and for non-UTF-8 input.
  std::string decodeBytes(const std::vector<int32_t> &ids) const;

  /// The id of a token as spelled in vocab.json (byte-level form, e.g.
  /// "Ġworld") or of an added token ("<|im_end|>"); -1 if unknown.
  int32_t tokenId(std::string_view token) const;

  /// One more than the largest id of the vocabulary and the added tokens
  /// (transformers' `len(tokenizer)`); the model's embedding may be larger.
  int64_t vocabSize() const;

  /// The chat template of the SDAR/DICE models for one user turn followed by
  /// the assistant header, as transformers' `apply_chat_template(
  /// [user], tokenize=False, add_generation_prompt=True)` renders it.
  std::string applyChatTemplate(std::string_view userMessage) const;

  /// The same template for a user turn and the assistant's answer, as
  /// `apply_chat_template([user, assistant], tokenize=False,
  /// add_generation_prompt=False)` renders it (a training sample).
  std::string applyChatTemplate(std::string_view userMessage,
                                std::string_view assistantAnswer) const;

  struct Impl;

private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl(std::move(impl)) {}

  std::shared_ptr<const Impl> impl;
};

} // namespace dice

#endif // DICE_MODEL_TOKENIZER_H
