//===- DiceAttrs.cpp - dice dialect attributes ----------------------------===//

#include "dice/Dialect/Dice/DiceAttrs.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "dice/Scaffold/ReferenceProgram.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::dice;

#include "dice/Dialect/Dice/DiceEnums.cpp.inc"

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
                     StringRef infillPrompt, StringRef endToEndPrompt) {
  std::string why;
  if (!::dice::ReferenceProgram::fromJson(program.str(), why))
    return emitError() << "scaffold program is not a reference program: "
                       << why;
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
  return success();
}

//===----------------------------------------------------------------------===//
// VerdictAttr
//===----------------------------------------------------------------------===//

namespace {
/// How a metric is spelled and stored.
enum class MetricKind { Float, Count };

std::optional<MetricKind> lookupMetric(StringRef name) {
  return llvm::StringSwitch<std::optional<MetricKind>>(name)
      .Cases({"compile_ms", "max_abs_err", "max_rel_err", "kernel_ms",
              "baseline_ms", "speedup"},
             MetricKind::Float)
      .Case("trials", MetricKind::Count)
      .Default(std::nullopt);
}

bool carriesTimings(VerdictStatus status) {
  return status == VerdictStatus::accepted || status == VerdictStatus::slow;
}

/// Statuses for which no candidate code ran, so no measurement can exist.
bool nothingRan(VerdictStatus status) {
  return status == VerdictStatus::compile_error ||
         status == VerdictStatus::unverified;
}
} // namespace

std::optional<double> VerdictAttr::getMetric(StringRef name) const {
  Attribute value = getMetrics().get(name);
  if (auto f = llvm::dyn_cast_or_null<FloatAttr>(value))
    return f.getValueAsDouble();
  if (auto i = llvm::dyn_cast_or_null<IntegerAttr>(value))
    return static_cast<double>(i.getInt());
  return std::nullopt;
}

Attribute VerdictAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  std::string statusName;
  SMLoc statusLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&statusName))
    return {};
  std::optional<VerdictStatus> status = symbolizeVerdictStatus(statusName);
  if (!status) {
    parser.emitError(statusLoc) << "unknown verdict status '" << statusName
                                << "'";
    return {};
  }

  StringAttr reason;
  NamedAttrList metrics;
  Builder b(ctx);
  while (succeeded(parser.parseOptionalComma())) {
    std::string key;
    SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeywordOrString(&key) || parser.parseEqual())
      return {};
    if (key == "reason") {
      std::string text;
      if (parser.parseString(&text))
        return {};
      reason = b.getStringAttr(text);
      continue;
    }
    std::optional<MetricKind> kind = lookupMetric(key);
    if (!kind) {
      parser.emitError(keyLoc) << "unknown verdict metric '" << key << "'";
      return {};
    }
    if (metrics.get(key)) {
      parser.emitError(keyLoc) << "verdict metric '" << key
                               << "' given twice";
      return {};
    }
    if (*kind == MetricKind::Count) {
      int64_t count = 0;
      if (parser.parseInteger(count))
        return {};
      metrics.append(key, b.getI64IntegerAttr(count));
    } else {
      double value;
      if (parser.parseFloat(value))
        return {};
      metrics.append(key, b.getF64FloatAttr(value));
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<VerdictAttr>(ctx, *status, reason,
                                        metrics.getDictionary(ctx));
}

void VerdictAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyVerdictStatus(getStatus());
  if (getReason()) {
    printer << ", reason = ";
    printer.printString(getReason().getValue());
  }
  for (NamedAttribute metric : getMetrics()) {
    printer << ", " << metric.getName().getValue() << " = ";
    if (auto f = llvm::dyn_cast<FloatAttr>(metric.getValue()))
      printer << ::dice::formatFloat(f.getValueAsDouble());
    else if (auto i = llvm::dyn_cast<IntegerAttr>(metric.getValue()))
      printer << i.getInt();
    else
      printer.printAttribute(metric.getValue());
  }
  printer << '>';
}

LogicalResult
VerdictAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    VerdictStatus status, StringAttr reason,
                    DictionaryAttr metrics) {
  StringRef statusName = stringifyVerdictStatus(status);
  if (!metrics)
    return emitError() << "verdict needs a metrics dictionary";

  for (NamedAttribute metric : metrics) {
    StringRef name = metric.getName().getValue();
    std::optional<MetricKind> kind = lookupMetric(name);
    if (!kind)
      return emitError() << "unknown verdict metric '" << name << "'";
    double value;
    if (auto f = llvm::dyn_cast<FloatAttr>(metric.getValue()))
      value = f.getValueAsDouble();
    else if (auto i = llvm::dyn_cast<IntegerAttr>(metric.getValue()))
      value = static_cast<double>(i.getInt());
    else
      return emitError() << "verdict metric '" << name
                         << "' must be a number, got " << metric.getValue();
    if (!std::isfinite(value) || value < 0)
      return emitError() << "verdict metric '" << name
                         << "' must be finite and non-negative, got "
                         << ::dice::formatFloat(value);
  }

  if (status != VerdictStatus::accepted &&
      (!reason || reason.getValue().empty()))
    return emitError() << statusName
                       << " verdict needs a reason a user can act on";

  auto get = [&](StringRef name) -> std::optional<double> {
    Attribute value = metrics.get(name);
    if (auto f = llvm::dyn_cast_or_null<FloatAttr>(value))
      return f.getValueAsDouble();
    if (auto i = llvm::dyn_cast_or_null<IntegerAttr>(value))
      return static_cast<double>(i.getInt());
    return std::nullopt;
  };

  if (carriesTimings(status)) {
    for (StringRef needed : {"kernel_ms", "baseline_ms", "speedup"})
      if (!get(needed))
        return emitError() << statusName << " verdict needs '" << needed
                           << "'";
    if (*get("kernel_ms") <= 0)
      return emitError() << statusName
                         << " verdict needs a positive 'kernel_ms'";
    double implied = *get("baseline_ms") / *get("kernel_ms");
    double speedup = *get("speedup");
    // Timings are printed with limited precision; allow rounding, nothing
    // more, so a hand-edited speedup cannot disagree with its timings.
    if (std::abs(speedup - implied) > 1e-3 * std::max(1.0, implied))
      return emitError() << "verdict speedup " << ::dice::formatFloat(speedup)
                         << " does not match baseline_ms / kernel_ms = "
                         << ::dice::formatFloat(implied);
  }

  if (nothingRan(status))
    for (StringRef timing : {"kernel_ms", "baseline_ms", "speedup"})
      if (get(timing))
        return emitError() << statusName << " verdict cannot carry '"
                           << timing << "': no candidate code ran";
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
  if (verdict && (verdict.getStatus() == VerdictStatus::accepted ||
                  verdict.getStatus() == VerdictStatus::slow) &&
      !hasSource)
    return emitError() << stringifyVerdictStatus(verdict.getStatus())
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
