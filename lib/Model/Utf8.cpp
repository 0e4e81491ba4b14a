//===- Utf8.cpp - UTF-8 validation, repair and NFC ------------------------===//

#include "Utf8.h"

#include <utf8proc.h>

#include <cstdlib>

namespace dice::utf8 {

Step step(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) -> unsigned {
    return static_cast<unsigned char>(text[i]);
  };
  unsigned lead = byte(pos);
  if (lead < 0x80)
    return {1, true};
  // The range of the second byte depends on the lead byte: this excludes
  // overlong forms, surrogates and code points above U+10FFFF.
  size_t length;
  unsigned lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0)
      lo = 0xA0;
    else if (lead == 0xED)
      hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0)
      lo = 0x90;
    else if (lead == 0xF4)
      hi = 0x8F;
  } else {
    return {1, false};
  }
  for (size_t k = 1; k < length; ++k) {
    if (pos + k >= text.size())
      return {k, false};
    unsigned c = byte(pos + k);
    if (c < lo || c > hi)
      return {k, false};
    lo = 0x80;
    hi = 0xBF;
  }
  return {length, true};
}

std::string replaceInvalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t runStart = 0, pos = 0;
  while (pos < bytes.size()) {
    Step s = step(bytes, pos);
    if (!s.valid) {
      out.append(bytes.substr(runStart, pos - runStart));
      out.append("\xEF\xBF\xBD");
      runStart = pos + s.length;
    }
    pos += s.length;
  }
  out.append(bytes.substr(runStart));
  return out;
}

void appendNfc(std::string_view text, std::string &out) {
  utf8proc_uint8_t *normalized = nullptr;
  utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &normalized,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0) {
    // Only reachable on allocation failure (the text is valid UTF-8):
    // tokenize it unnormalised rather than lose it.
    out.append(text);
    return;
  }
  out.append(reinterpret_cast<const char *>(normalized),
             static_cast<size_t>(length));
  std::free(normalized);
}

void appendCodePoint(char32_t cp, std::string &out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

} // namespace dice::utf8
