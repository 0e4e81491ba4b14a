//===- NonFinite.h - the doubles JSON cannot spell ---------------*- C++ -*-===//
//
// JSON has no literal for infinities and NaNs, and nlohmann-json writes them
// as `null`. Every format of the project that holds doubles (reference
// programs, verdicts, `#dice.verdict`) spells them with these words instead:
// a JSON string, or a bare token in MLIR's syntax.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SUPPORT_NONFINITE_H
#define DICE_SUPPORT_NONFINITE_H

#include <optional>
#include <string>
#include <string_view>

namespace dice {

/// The spelling of a non-finite double: "inf", "-inf", "nan" (the quiet NaN
/// 0x7ff8000000000000), "-nan" (0xfff8000000000000), and for every other NaN
/// its IEEE-754 bits as "0x" and 16 lower-case hex digits, so that each reads
/// back bit for bit. Empty for a finite value, which is written as a number.
std::string nonFiniteSpelling(double value);

/// The double `text` spells in nonFiniteSpelling's words (a hex spelling must
/// be a NaN's bits); nothing for any other text.
std::optional<double> parseNonFiniteSpelling(std::string_view text);

} // namespace dice

#endif // DICE_SUPPORT_NONFINITE_H
