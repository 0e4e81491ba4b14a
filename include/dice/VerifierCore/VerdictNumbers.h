//===- VerdictNumbers.h - verdict numbers JSON cannot spell -----*- C++ -*-===//
//
// A verdict's errors may be +inf or NaN (and a broken verdict may hold any
// double), but JSON has no literal for them and nlohmann-json writes them as
// `null`, which reads back as "not measured". Both verdict formats spell
// them with dice/Support/NonFinite.h's words instead: the JSON as a string,
// `#dice.verdict` as a bare token.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_VERDICTNUMBERS_H
#define DICE_VERIFIERCORE_VERDICTNUMBERS_H

#include "dice/Support/NonFinite.h"

#include <string>

namespace dice {

/// The shortest decimal that reads back as `value` when finite (what
/// formatFloat writes), the non-finite spelling otherwise: how messages and
/// `#dice.verdict` print a measurement.
std::string formatVerdictNumber(double value);

} // namespace dice

#endif // DICE_VERIFIERCORE_VERDICTNUMBERS_H
