//===- Text.h - small string helpers -----------------------------*- C++ -*-===//

#ifndef DICE_SUPPORT_TEXT_H
#define DICE_SUPPORT_TEXT_H

#include <string>
#include <string_view>

namespace dice {

/// `text` without leading and trailing spaces, tabs and line breaks.
std::string trim(std::string_view text);

/// The value of hex digit `c` (either case), or -1 when it is not one.
int hexDigitValue(char c);

} // namespace dice

#endif // DICE_SUPPORT_TEXT_H
