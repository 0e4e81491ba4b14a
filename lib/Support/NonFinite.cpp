//===- NonFinite.cpp - the doubles JSON cannot spell ---------------------===//

#include "dice/Support/NonFinite.h"
#include "dice/Support/Text.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dice {

namespace {
constexpr uint64_t kQuietNaNBits = 0x7ff8000000000000ull;
constexpr uint64_t kSignBit = 0x8000000000000000ull;

uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double fromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
} // namespace

std::string nonFiniteSpelling(double value) {
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  if (!std::isnan(value))
    return "";
  uint64_t bits = bitsOf(value);
  if (bits == kQuietNaNBits)
    return "nan";
  if (bits == (kQuietNaNBits | kSignBit))
    return "-nan";
  char buffer[19];
  std::snprintf(buffer, sizeof buffer, "0x%016llx",
                static_cast<unsigned long long>(bits));
  return buffer;
}

std::optional<double> parseNonFiniteSpelling(std::string_view text) {
  if (text == "inf")
    return std::numeric_limits<double>::infinity();
  if (text == "-inf")
    return -std::numeric_limits<double>::infinity();
  if (text == "nan")
    return fromBits(kQuietNaNBits);
  if (text == "-nan")
    return fromBits(kQuietNaNBits | kSignBit);
  if (text.size() != 18 || text.substr(0, 2) != "0x")
    return std::nullopt;
  uint64_t bits = 0;
  for (char c : text.substr(2)) {
    // Written lower-case; read either way, as MLIR prints hex upper-case.
    int digit = hexDigitValue(c);
    if (digit < 0)
      return std::nullopt;
    bits = bits << 4 | static_cast<uint64_t>(digit);
  }
  double value = fromBits(bits);
  if (!std::isnan(value))
    return std::nullopt;
  return value;
}

} // namespace dice
