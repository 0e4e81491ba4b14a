//===- VerdictStatus.h - verdict statuses and their rules -------*- C++ -*-===//
//
// The one definition of what a verdict's status is and which measurements
// each status may carry. The verdict JSON (`dice::Verdict`) and the
// `#dice.verdict` attribute both check themselves with
// `checkVerdictConsistency`, so a verdict one accepts is one the other
// accepts. Plain C++ without exceptions or JSON, so the LLVM-built dialect
// includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_VERDICTSTATUS_H
#define DICE_VERIFIERCORE_VERDICTSTATUS_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dice {

enum class VerdictStatus {
  Accepted,     ///< correct and faster than the baseline
  Slow,         ///< correct, not fast enough
  Incorrect,    ///< ran, results differ from the reference
  Deceptive,    ///< passes checks without computing in its own kernels
  CompileError, ///< no source, or it does not parse or build
  Crashed,      ///< faulted, hung or killed the worker
  Unverified    ///< could not be run here (no GPU)
};

/// Every status, best first: the order of reasons and reports.
inline constexpr std::array<VerdictStatus, 7> kVerdictStatuses = {
    VerdictStatus::Accepted,     VerdictStatus::Slow,
    VerdictStatus::Incorrect,    VerdictStatus::Deceptive,
    VerdictStatus::CompileError, VerdictStatus::Crashed,
    VerdictStatus::Unverified};

/// "accepted", "compile_error", ...: the names of the JSON and the attribute.
std::string_view verdictStatusName(VerdictStatus status);
std::optional<VerdictStatus> parseVerdictStatus(std::string_view name);
/// "accepted, slow, ..., unverified", for errors that list the valid names.
std::string verdictStatusNames();

/// Correct results, so the timings and their speedup are known.
bool carriesTimings(VerdictStatus status);
/// None of the candidate's code ran, so nothing of it was measured.
bool nothingRan(VerdictStatus status);

/// What the verifier measured; absent where it did not measure.
struct VerdictMeasurements {
  std::optional<double> compileMs;
  /// May be +inf or NaN for an incorrect candidate (its outputs overflowed
  /// or were NaN where the reference's were not).
  std::optional<double> maxAbsErr;
  std::optional<double> maxRelErr;
  std::optional<int64_t> trials;
  std::optional<double> kernelMs;
  std::optional<double> baselineMs;
  /// baselineMs / kernelMs.
  std::optional<double> speedup;
  std::optional<int64_t> launchedKernels;
};

/// Why a verdict's fields do not fit its status.
struct VerdictProblem {
  std::string field;   ///< the JSON key and attribute parameter at fault
  std::string message; ///< a sentence fragment naming the field
};

/// Nothing when `measurements` and `reason` fit `status`; otherwise what is
/// wrong ("deceptive verdict needs a reason a user can act on"). The rules:
/// timings finite and non-negative, errors non-negative (+inf and NaN
/// allowed, but finite for accepted and slow), counts non-negative; a
/// reason for every status but accepted; accepted and slow carry
/// kernel_ms > 0, baseline_ms and a speedup equal to baseline_ms /
/// kernel_ms; compile_error and unverified carry no timings, since none of
/// the candidate's code ran.
std::optional<VerdictProblem>
checkVerdictConsistency(VerdictStatus status, std::string_view reason,
                        const VerdictMeasurements &measurements);

} // namespace dice

#endif // DICE_VERIFIERCORE_VERDICTSTATUS_H
