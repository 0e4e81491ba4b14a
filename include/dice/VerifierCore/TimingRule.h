//===- TimingRule.h - when a timing has run long enough ---------*- C++ -*-===//
//
// A timed run's median is what decides a verdict, so timing may stop as
// soon as the median is known well enough: once the distribution-free 95%
// confidence interval of the median (two order statistics of the runs)
// lies within +/- `precision` of it. Fast, steady kernels stop after the
// minimum; noisy ones run to the maximum. Plain C++, shared by the GPU
// worker and its tests.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_TIMINGRULE_H
#define DICE_VERIFIERCORE_TIMINGRULE_H

#include <cstdint>
#include <utility>
#include <vector>

namespace dice {

/// How many runs a timing takes.
struct TimingPlan {
  int64_t maxRuns = 100;  ///< `verifier.timing_runs`
  double precision = 0;   ///< `verifier.timing_precision`; 0: all of maxRuns
  /// The runs before the rule is first asked: enough for its interval to
  /// exclude the extremes (rank 6 to 15 of 20), never more than maxRuns.
  int64_t minRuns() const;
};

/// The 0-based ranks, in sorted order, of the 95% confidence interval of
/// the median of `n` runs (the normal approximation of the binomial,
/// widened to whole ranks); {0, n - 1} when `n` is too small to do better.
std::pair<int64_t, int64_t> medianIntervalRanks(int64_t n);

/// Whether `sortedMs` (ascending) has run long enough under `plan`: all of
/// maxRuns, or at least minRuns with the median's interval within
/// +/- precision of the median.
bool timingIsDone(const std::vector<double> &sortedMs, const TimingPlan &plan);

} // namespace dice

#endif // DICE_VERIFIERCORE_TIMINGRULE_H
