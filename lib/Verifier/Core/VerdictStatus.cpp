//===- VerdictStatus.cpp - verdict statuses and their rules ---------------===//

#include "dice/VerifierCore/VerdictStatus.h"

#include "dice/VerifierCore/VerdictNumbers.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dice {

namespace {
constexpr std::array<std::string_view, kVerdictStatuses.size()> kStatusNames =
    {"accepted",      "slow",    "incorrect", "deceptive",
     "compile_error", "crashed", "unverified"};

using Measurement = std::optional<double> VerdictMeasurements::*;
using Count = std::optional<int64_t> VerdictMeasurements::*;

constexpr std::pair<const char *, Measurement> kTimings[] = {
    {"compile_ms", &VerdictMeasurements::compileMs},
    {"kernel_ms", &VerdictMeasurements::kernelMs},
    {"baseline_ms", &VerdictMeasurements::baselineMs},
    {"speedup", &VerdictMeasurements::speedup}};
constexpr std::pair<const char *, Measurement> kErrors[] = {
    {"max_abs_err", &VerdictMeasurements::maxAbsErr},
    {"max_rel_err", &VerdictMeasurements::maxRelErr}};
constexpr std::pair<const char *, Count> kCounts[] = {
    {"trials", &VerdictMeasurements::trials},
    {"launched_kernels", &VerdictMeasurements::launchedKernels}};
/// What a candidate whose code ran and matched the reference is timed by.
constexpr std::pair<const char *, Measurement> kSpeedupTimings[] = {
    {"kernel_ms", &VerdictMeasurements::kernelMs},
    {"baseline_ms", &VerdictMeasurements::baselineMs},
    {"speedup", &VerdictMeasurements::speedup}};

std::string metric(const char *name) {
  return std::string("verdict metric '") + name + "'";
}
} // namespace

std::string_view verdictStatusName(VerdictStatus status) {
  return kStatusNames[static_cast<size_t>(status)];
}

std::optional<VerdictStatus> parseVerdictStatus(std::string_view name) {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == name)
      return kVerdictStatuses[i];
  return std::nullopt;
}

std::string verdictStatusNames() {
  std::string names;
  for (std::string_view name : kStatusNames)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool carriesTimings(VerdictStatus status) {
  return status == VerdictStatus::Accepted || status == VerdictStatus::Slow;
}

bool nothingRan(VerdictStatus status) {
  return status == VerdictStatus::CompileError ||
         status == VerdictStatus::Unverified;
}

std::optional<VerdictProblem>
checkVerdictConsistency(VerdictStatus status, std::string_view reason,
                        const VerdictMeasurements &m) {
  std::string statusName(verdictStatusName(status));
  auto problem = [](std::string field, std::string message) {
    return VerdictProblem{std::move(field), std::move(message)};
  };
  for (const auto &[name, field] : kTimings)
    if (const std::optional<double> &value = m.*field;
        value && (!std::isfinite(*value) || *value < 0))
      return problem(name, metric(name) +
                               " must be finite and non-negative, got " +
                               formatVerdictNumber(*value));
  // An error is +inf where the candidate overflowed and NaN where it is
  // undefined; both are measurements of an incorrect candidate.
  for (const auto &[name, field] : kErrors)
    if (const std::optional<double> &value = m.*field; value && *value < 0)
      return problem(name, metric(name) + " must be non-negative, got " +
                               formatVerdictNumber(*value));
  for (const auto &[name, field] : kCounts)
    if (const std::optional<int64_t> &value = m.*field; value && *value < 0)
      return problem(name, metric(name) + " must be non-negative, got " +
                               std::to_string(*value));

  if (status != VerdictStatus::Accepted && reason.empty())
    return problem("reason",
                   statusName + " verdict needs a reason a user can act on");

  if (carriesTimings(status)) {
    for (const auto &[name, field] : kErrors)
      if (const std::optional<double> &value = m.*field;
          value && !std::isfinite(*value))
        return problem(name, statusName + " verdict needs a finite '" + name +
                                 "': its results matched the reference");
    for (const auto &[name, field] : kSpeedupTimings)
      if (!(m.*field))
        return problem(name, statusName + " verdict needs '" + name + "'");
    if (*m.kernelMs <= 0)
      return problem("kernel_ms",
                     statusName + " verdict needs a positive 'kernel_ms'");
    double implied = *m.baselineMs / *m.kernelMs;
    // Timings may have been rounded when written; allow that, nothing more,
    // so an edited speedup cannot disagree with its timings.
    if (std::abs(*m.speedup - implied) > 1e-3 * std::max(1.0, implied))
      return problem("speedup", "verdict speedup " +
                                    formatVerdictNumber(*m.speedup) +
                                    " does not match baseline_ms / kernel_ms = " +
                                    formatVerdictNumber(implied));
  }

  if (nothingRan(status))
    for (const auto &[name, field] : kSpeedupTimings)
      if (m.*field)
        return problem(name, statusName + " verdict cannot carry '" + name +
                                 "': no candidate code ran");
  return std::nullopt;
}

} // namespace dice
