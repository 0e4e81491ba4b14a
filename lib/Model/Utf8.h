//===- Utf8.h - UTF-8 validation, repair and NFC ----------------*- C++ -*-===//
//
// The UTF-8 handling the tokenizer needs: where text stops being valid,
// the U+FFFD repair transformers applies when decoding, and NFC
// normalisation (through utf8proc).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_UTF8_H
#define DICE_MODEL_UTF8_H

#include <cstddef>
#include <string>
#include <string_view>

namespace dice::utf8 {

/// How many bytes at `pos` form one well-formed character, or, when they do
/// not, how many form the maximal ill-formed subpart (Unicode's "maximal
/// subpart" rule, also what Rust's from_utf8_lossy replaces).
struct Step {
  size_t length;
  bool valid;
};
Step step(std::string_view text, size_t pos);

/// `bytes` with each maximal ill-formed subpart replaced by U+FFFD.
std::string replaceInvalid(std::string_view bytes);

/// Appends the NFC form of valid UTF-8 `text` to `out`.
void appendNfc(std::string_view text, std::string &out);

/// False when `text` is NFC for certain without looking further: every
/// code point below U+0300 is stable under NFC and composes with nothing
/// before it, so only text with a lead byte >= 0xCC can change.
inline bool mayNeedNfc(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0xCC)
      return true;
  return false;
}

/// Appends the UTF-8 encoding of `codePoint` (<= U+10FFFF).
void appendCodePoint(char32_t codePoint, std::string &out);

} // namespace dice::utf8

#endif // DICE_MODEL_UTF8_H
