//===- CheckFormatting.cpp - numbers, shapes, dtypes in reasons -----------===//
//
// How verdict reasons and details spell values, shapes and dtypes.
//
//===----------------------------------------------------------------------===//

#include "CheckSteps.h"

#include <cstdio>
#include <sstream>

namespace dice {
namespace dynamic_check {

std::string number(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string dtypeString(at::ScalarType type) {
  std::optional<DType> dtype = fromScalarType(type);
  return dtype ? dtypeName(*dtype) : c10::toString(type);
}

/// `[i, j]` of flat index `flat` in a row-major tensor of `shape`.
std::string indexString(int64_t flat, at::IntArrayRef shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shapeString(index);
}

std::string exceptionMessage(const std::exception &e) {
  if (auto *error = dynamic_cast<const c10::Error *>(&e))
    return error->what_without_backtrace();
  return e.what();
}

} // namespace dynamic_check
} // namespace dice
