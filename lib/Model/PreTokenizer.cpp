//===- PreTokenizer.cpp - Qwen2 pre-tokenization regex --------------------===//

#include "PreTokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace dice {

namespace {

// transformers' Qwen2 tokenizer splits with
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (one line, the third alternative starting with a space).

/// The reference tokenizer runs the pattern through Oniguruma, whose `\s`
/// is Unicode White_Space: \t \n \v \f \r, U+0085 and the Z categories.
/// PCRE2's `\s` in UCP mode also takes U+180E, so spell the class out.
constexpr const char *kSpace = R"(\t\n\x0B\f\r\x{85}\p{Z})";

std::string pcre2Pattern() {
  std::string s = kSpace;
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^)" +
         s + R"(\p{L}\p{N}]+[\r\n]*|[)" + s + R"(]*[\r\n]+|[)" + s +
         R"(]+(?![^)" + s + R"(])|[)" + s + R"(]+)";
}

} // namespace

struct PreTokenizer::Code {
  pcre2_code *code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

struct PreTokenizer::Matcher::State {
  const Code &code;
  pcre2_match_data *data = nullptr;
  pcre2_match_context *context = nullptr;
  pcre2_jit_stack *stack = nullptr;

  explicit State(const Code &code) : code(code) {
    data = pcre2_match_data_create_from_pattern(code.code, nullptr);
    if (code.jit) {
      // Long runs of one class backtrack on this stack; 32 KiB growing to
      // 8 MiB keeps megabyte inputs matchable.
      stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
      context = pcre2_match_context_create(nullptr);
      if (stack && context)
        pcre2_jit_stack_assign(context, nullptr, stack);
    }
  }
  ~State() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create() {
  std::string pattern = pcre2Pattern();
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  auto code = std::make_unique<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                             pattern.size(), PCRE2_UTF | PCRE2_UCP, &errorCode,
                             &errorOffset, nullptr);
  if (!code->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(errorCode, message, sizeof(message));
    return Error("<pre-tokenizer>",
                 "cannot compile the pre-tokenization pattern at offset " +
                     std::to_string(errorOffset) + ": " +
                     reinterpret_cast<const char *>(message));
  }
  // Without JIT (a PCRE2 built without it) matching is slower but the same.
  code->jit = pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE) == 0;
  return std::unique_ptr<PreTokenizer>(new PreTokenizer(std::move(code)));
}

PreTokenizer::PreTokenizer(std::unique_ptr<Code> code) : code(std::move(code)) {}
PreTokenizer::~PreTokenizer() = default;

PreTokenizer::Matcher::Matcher(const PreTokenizer &preTokenizer)
    : state(std::make_unique<State>(*preTokenizer.code)) {}
PreTokenizer::Matcher::~Matcher() = default;

void PreTokenizer::Matcher::split(std::string_view text,
                                  std::vector<std::string_view> &pieces) {
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    // The caller guarantees valid UTF-8: without NO_UTF_CHECK every call
    // would revalidate the rest of the text, quadratic in its length.
    int rc = -1;
    if (state->data && state->code.jit)
      rc = pcre2_jit_match(state->code.code, subject, text.size(), pos,
                           PCRE2_NO_UTF_CHECK, state->data, state->context);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && state->data)
      rc = pcre2_match(state->code.code, subject, text.size(), pos,
                       PCRE2_NO_UTF_CHECK, state->data, nullptr);
    if (rc < 0) {
      // No match (impossible: the alternatives cover every character) or
      // an exhausted match limit: keep the rest whole rather than drop it.
      pieces.push_back(text.substr(pos));
      return;
    }
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(state->data);
    size_t start = ovector[0], end = ovector[1];
    if (start > pos)
      pieces.push_back(text.substr(pos, start - pos));
    if (end <= start) { // an empty match cannot happen; never loop on one
      pieces.push_back(text.substr(start));
      return;
    }
    pieces.push_back(text.substr(start, end - start));
    pos = end;
  }
}

} // namespace dice
