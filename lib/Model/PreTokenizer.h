//===- PreTokenizer.h - Qwen2 pre-tokenization regex ------------*- C++ -*-===//
//
// Splits text into the pieces that BPE merges within: Qwen2's regex
// (contractions, letter runs, single digits, punctuation runs, newlines,
// whitespace), run through PCRE2's JIT.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_PRETOKENIZER_H
#define DICE_MODEL_PRETOKENIZER_H

#include "dice/Support/Result.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

class PreTokenizer {
public:
  /// Compiles the pattern, or says why PCRE2 cannot.
  static Result<std::unique_ptr<PreTokenizer>> create();
  ~PreTokenizer();

  /// Scratch state of one thread's matching (PCRE2 match data, JIT stack).
  class Matcher {
  public:
    explicit Matcher(const PreTokenizer &preTokenizer);
    ~Matcher();
    Matcher(const Matcher &) = delete;
    Matcher &operator=(const Matcher &) = delete;

    /// Appends the pieces of valid UTF-8 `text` to `pieces`; together they
    /// cover `text` exactly.
    void split(std::string_view text, std::vector<std::string_view> &pieces);

  private:
    struct State;
    std::unique_ptr<State> state;
  };

private:
  struct Code;
  explicit PreTokenizer(std::unique_ptr<Code> code);
  std::unique_ptr<Code> code;
};

} // namespace dice

#endif // DICE_MODEL_PRETOKENIZER_H
