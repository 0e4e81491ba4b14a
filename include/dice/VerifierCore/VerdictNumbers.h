//===- VerdictNumbers.h - verdict numbers JSON cannot spell -----*- C++ -*-===//
//
// A verdict's errors may be +inf or NaN (and a broken verdict may hold any
// double), but JSON has no literal for them and nlohmann-json writes them as
// `null`, which reads back as "not measured". Both verdict formats spell
// them the same way instead: the JSON as a string, `#dice.verdict` as a bare
// token.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_VERDICTNUMBERS_H
#define DICE_VERIFIERCORE_VERDICTNUMBERS_H

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

/// The shortest decimal that reads back as `value` when finite (what
/// formatFloat writes), the non-finite spelling otherwise: how messages and
/// `#dice.verdict` print a measurement.
std::string formatVerdictNumber(double value);

} // namespace dice

#endif // DICE_VERIFIERCORE_VERDICTNUMBERS_H
