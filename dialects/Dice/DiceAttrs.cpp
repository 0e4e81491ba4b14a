//===- DiceAttrs.cpp - dice dialect attributes ----------------------------===//

#include "dice/Dialect/Dice/DiceAttrs.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "dice/Reference/ReferenceProgram.h"
#include "dice/VerifierCore/VerdictNumbers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <tuple>

using namespace mlir;
using namespace mlir::dice;

#include "dice/Dialect/Dice/DiceEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// What ODS cannot say of #dice.verdict's syntax
//===----------------------------------------------------------------------===//

/// The status, by its verdict JSON name (`compile_error`).
static ParseResult parseVerdictStatus(AsmParser &parser,
                                      ::dice::VerdictStatus &status) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseKeywordOrString(&name))
    return failure();
  std::optional<::dice::VerdictStatus> parsed = ::dice::parseVerdictStatus(name);
  if (!parsed)
    return parser.emitError(loc)
           << "unknown verdict status '" << name << "'; expected one of "
           << ::dice::verdictStatusNames();
  status = *parsed;
  return success();
}

static void printVerdictStatus(AsmPrinter &printer,
                               ::dice::VerdictStatus status) {
  printer << ::dice::verdictStatusName(status);
}

namespace mlir::dice {
/// A number (`0.25`, `1.0e-300`), or a non-finite value in the verdict JSON's
/// words (`inf`, `-inf`, `nan`, `-nan`, a NaN's bits as a hex integer).
FailureOr<FloatAttr> parseMeasurement(AsmParser &parser) {
  Builder b(parser.getContext());
  SMLoc loc = parser.getCurrentLocation();
  bool negative = succeeded(parser.parseOptionalMinus());
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    std::optional<double> value = ::dice::parseNonFiniteSpelling(
        (negative ? "-" : "") + keyword.str());
    if (!value)
      return parser.emitError(loc)
             << "expected a number, inf, -inf, nan or -nan, got '"
             << (negative ? "-" : "") << keyword << "'";
    return b.getF64FloatAttr(*value);
  }
  // A hex integer is a double's bits, as in MLIR's own float literals.
  APFloat value(0.0);
  if (parser.parseFloat(APFloat::IEEEdouble(), value))
    return failure();
  if (negative)
    value.changeSign();
  return b.getF64FloatAttr(value.convertToDouble());
}

void printMeasurement(AsmPrinter &printer, FloatAttr value) {
  std::string text = ::dice::formatVerdictNumber(value.getValueAsDouble());
  // MLIR reads `5e-324` as the integer 5 and a stray `e-324`: a float
  // literal needs its dot.
  if (size_t exponent = text.find('e');
      exponent != std::string::npos && text.find('.') == std::string::npos)
    text.insert(exponent, ".0");
  printer << text;
}
} // namespace mlir::dice

#define GET_ATTRDEF_CLASSES
#include "dice/Dialect/Dice/DiceAttrs.cpp.inc"

void DiceDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dice/Dialect/Dice/DiceAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ScaffoldAttr
//===----------------------------------------------------------------------===//

LogicalResult
ScaffoldAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     StringRef program, StringRef reference, StringRef prefix,
                     StringRef suffix, StringRef signature,
                     StringRef infillPrompt, StringRef endToEndPrompt,
                     StringRef promptTemplate) {
  if (::dice::Result<::dice::ReferenceProgram> parsed =
          ::dice::ReferenceProgram::fromJson(program.str());
      !parsed)
    return emitError() << "scaffold program is not a reference program: "
                       << parsed.error().describe();
  if (reference.empty())
    return emitError() << "scaffold has an empty reference program";
  if (!signature.contains("dice_forward"))
    return emitError() << "scaffold signature must declare dice_forward, got '"
                       << signature << "'";
  // The verifier builds the candidate against `signature`, and the model sees
  // `suffix`: they must agree, or a kernel could pass one and fail the other.
  if (!suffix.contains(signature))
    return emitError() << "scaffold suffix does not contain its signature '"
                       << signature << "'";
  if (!promptTemplate.empty() &&
      (promptTemplate.size() != 16 ||
       !llvm::all_of(promptTemplate, [](char c) { return llvm::isHexDigit(c); })))
    return emitError() << "scaffold prompt_template must be 16 hex digits (the "
                          "templates' identity), got '"
                       << promptTemplate << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// VerdictAttr
//===----------------------------------------------------------------------===//

static std::optional<double> valueOf(FloatAttr measurement) {
  if (!measurement)
    return std::nullopt;
  return measurement.getValueAsDouble();
}

::dice::VerdictMeasurements VerdictAttr::getMeasurements() const {
  ::dice::VerdictMeasurements m;
  m.compileMs = valueOf(getCompileMs());
  m.maxAbsErr = valueOf(getMaxAbsErr());
  m.maxRelErr = valueOf(getMaxRelErr());
  m.trials = getTrials();
  m.kernelMs = valueOf(getKernelMs());
  m.baselineMs = valueOf(getBaselineMs());
  m.speedup = valueOf(getSpeedup());
  return m;
}

LogicalResult
VerdictAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    ::dice::VerdictStatus status, StringAttr reason,
                    FloatAttr baselineMs, FloatAttr compileMs,
                    FloatAttr kernelMs, FloatAttr maxAbsErr,
                    FloatAttr maxRelErr, FloatAttr speedup,
                    std::optional<int64_t> trials) {
  ::dice::VerdictMeasurements m;
  for (auto [name, attr, into] :
       {std::tuple{"baseline_ms", baselineMs, &m.baselineMs},
        std::tuple{"compile_ms", compileMs, &m.compileMs},
        std::tuple{"kernel_ms", kernelMs, &m.kernelMs},
        std::tuple{"max_abs_err", maxAbsErr, &m.maxAbsErr},
        std::tuple{"max_rel_err", maxRelErr, &m.maxRelErr},
        std::tuple{"speedup", speedup, &m.speedup}}) {
    // Anything narrower would not hold what the verdict JSON holds.
    if (attr && !attr.getType().isF64())
      return emitError() << "verdict metric '" << name
                         << "' must be an f64, got " << attr.getType();
    *into = valueOf(attr);
  }
  m.trials = trials;
  if (std::optional<::dice::VerdictProblem> problem =
          ::dice::checkVerdictConsistency(
              status, reason ? reason.getValue() : StringRef(), m))
    return emitError() << problem->message;
  return success();
}

//===----------------------------------------------------------------------===//
// CandidateAttr
//===----------------------------------------------------------------------===//

LogicalResult
CandidateAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringAttr answer, StringAttr source, VerdictAttr verdict,
                      StringAttr artifact) {
  // An empty answer is still an answer (the model wrote nothing); it fails
  // extraction like any other answer without a hole.
  if (!answer && !source)
    return emitError() << "candidate needs an answer or a source";
  bool hasSource = source && !source.getValue().trim().empty();
  if (verdict && ::dice::carriesTimings(verdict.getStatus()) && !hasSource)
    return emitError() << ::dice::verdictStatusName(verdict.getStatus())
                       << " candidate needs its source: its code ran";
  if (artifact) {
    if (artifact.getValue().empty())
      return emitError() << "candidate artifact path must not be empty when "
                            "given";
    // The library is built from the source; without a verdict nothing says
    // which build, or whether, it came from.
    if (!verdict)
      return emitError() << "candidate has an artifact but no verdict";
  }
  return success();
}
