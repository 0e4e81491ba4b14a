//===- VerdictNumbers.cpp - verdict numbers JSON cannot spell -------------===//

#include "dice/VerifierCore/VerdictNumbers.h"

#include "dice/Reference/ReferenceProgram.h"

#include <cmath>

namespace dice {

std::string formatVerdictNumber(double value) {
  return std::isfinite(value) ? formatFloat(value) : nonFiniteSpelling(value);
}

} // namespace dice
