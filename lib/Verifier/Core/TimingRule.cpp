//===- TimingRule.cpp - when a timing has run long enough -----------------===//

#include "dice/VerifierCore/TimingRule.h"

#include <algorithm>
#include <cmath>

namespace dice {

int64_t TimingPlan::minRuns() const {
  return std::min<int64_t>(20, std::max<int64_t>(maxRuns, 1));
}

std::pair<int64_t, int64_t> medianIntervalRanks(int64_t n) {
  if (n < 1)
    return {0, 0};
  // How many runs fall below the true median is Binomial(n, 1/2): 1.96
  // standard deviations, sqrt(n) / 2 each, either side of n / 2, as 1-based
  // ranks rounded to the nearest (20 runs: 6 and 15; 100: 40 and 61).
  double half = 0.98 * std::sqrt(static_cast<double>(n));
  int64_t lo = std::llround(n / 2.0 - half);
  int64_t hi = std::llround(1 + n / 2.0 + half);
  return {std::clamp<int64_t>(lo, 1, n) - 1, std::clamp<int64_t>(hi, 1, n) - 1};
}

bool timingIsDone(const std::vector<double> &sortedMs, const TimingPlan &plan) {
  int64_t n = static_cast<int64_t>(sortedMs.size());
  if (n >= plan.maxRuns)
    return true;
  if (plan.precision <= 0 || n < plan.minRuns())
    return false;
  auto [lo, hi] = medianIntervalRanks(n);
  double median = n % 2 ? sortedMs[n / 2]
                        : 0.5 * (sortedMs[n / 2 - 1] + sortedMs[n / 2]);
  if (!(median > 0))
    return false;
  return sortedMs[hi] - median <= plan.precision * median &&
         median - sortedMs[lo] <= plan.precision * median;
}

} // namespace dice
