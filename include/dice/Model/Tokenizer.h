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

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dice {

/// Why a tokenizer folder could not be loaded, and where.
struct TokenizerError {
  std::string file;    ///< the file at fault, e.g. ".../merges.txt"
  unsigned line = 0;   ///< 1-based; 0 when the problem has no line
  std::string message; ///< names the entry at fault where there is one

  /// `file:line: error: message`, the form compilers print.
  std::string format() const;
};

class TokenizerOrError;

/// A loaded tokenizer. Immutable after load; copies share its tables, and
/// every member may be called from several threads at once.
class Tokenizer {
public:
  /// Reads the tokenizer files of a Hugging Face folder.
  static TokenizerOrError load(const std::string &dir);

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

/// A tokenizer or the error that prevented loading it.
class TokenizerOrError {
public:
  TokenizerOrError(Tokenizer tokenizer) : value(std::move(tokenizer)) {}
  TokenizerOrError(TokenizerError error) : value(std::move(error)) {}

  explicit operator bool() const {
    return std::holds_alternative<Tokenizer>(value);
  }
  const Tokenizer &operator*() const { return std::get<Tokenizer>(value); }
  const Tokenizer *operator->() const { return &std::get<Tokenizer>(value); }
  const TokenizerError &error() const { return std::get<TokenizerError>(value); }

private:
  std::variant<Tokenizer, TokenizerError> value;
};

} // namespace dice

#endif // DICE_MODEL_TOKENIZER_H
