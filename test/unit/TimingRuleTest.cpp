//===- TimingRuleTest.cpp - when a timing has run long enough -------------===//

#include "dice/VerifierCore/TimingRule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace dice {
namespace {

/// P(lo <= B < hi) for B ~ Binomial(n, 1/2): the chance that the true
/// median lies between the order statistics of 1-based ranks lo and hi.
double coverage(int64_t n, int64_t lo, int64_t hi) {
  double total = 0;
  for (int64_t b = lo; b < hi; ++b)
    total += std::exp(std::lgamma(n + 1.0) - std::lgamma(b + 1.0) -
                      std::lgamma(n - b + 1.0) - n * std::log(2.0));
  return total;
}

TEST(TimingRule, MedianIntervalCoversAtLeastNinetyFivePercent) {
  for (int64_t n = 6; n <= 1000; ++n) {
    auto [lo, hi] = medianIntervalRanks(n);
    ASSERT_LE(0, lo) << n;
    ASSERT_LT(lo, hi) << n;
    ASSERT_LT(hi, n) << n;
    EXPECT_GE(coverage(n, lo + 1, hi + 1), 0.95) << "n = " << n;
  }
}

TEST(TimingRule, MedianIntervalMatchesTheTabulatedRanks) {
  // The tabulated 95% intervals of the median: ranks 6 and 15 of 20,
  // 40 and 61 of 100 (0-based here).
  using Ranks = std::pair<int64_t, int64_t>;
  EXPECT_EQ(medianIntervalRanks(20), Ranks(5, 14));
  EXPECT_EQ(medianIntervalRanks(100), Ranks(39, 60));
}

std::vector<double> sorted(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times;
}

TEST(TimingRule, SteadyRunsStopAtTheMinimum) {
  TimingPlan plan{100, 0.01};
  EXPECT_EQ(plan.minRuns(), 20);
  std::vector<double> steady(19, 1.0);
  EXPECT_FALSE(timingIsDone(steady, plan));
  steady.push_back(1.0);
  EXPECT_TRUE(timingIsDone(steady, plan));
}

TEST(TimingRule, NoisyRunsGoOnToTheMaximum) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> spread(0.5, 1.5);
  std::vector<double> times;
  TimingPlan plan{100, 0.01};
  while (!timingIsDone(sorted(times), plan))
    times.push_back(spread(random));
  EXPECT_EQ(times.size(), 100u);
}

TEST(TimingRule, ZeroPrecisionRunsEveryRun) {
  TimingPlan plan{50, 0};
  std::vector<double> steady(49, 2.0);
  EXPECT_FALSE(timingIsDone(steady, plan));
  steady.push_back(2.0);
  EXPECT_TRUE(timingIsDone(steady, plan));
}

TEST(TimingRule, FewerRunsThanTheMinimumAreAllRun) {
  TimingPlan plan{8, 0.01};
  EXPECT_EQ(plan.minRuns(), 8);
  EXPECT_FALSE(timingIsDone(std::vector<double>(7, 1.0), plan));
  EXPECT_TRUE(timingIsDone(std::vector<double>(8, 3.0), plan));
}

TEST(TimingRule, OutliersOutsideTheIntervalDoNotKeepItRunning) {
  // A tenth of the runs disturbed (a clock tick, a page fault) does not
  // move the median's interval: 18 steady runs and 2 slow ones stop.
  std::vector<double> times(18, 1.0);
  times.push_back(5.0);
  times.push_back(9.0);
  EXPECT_TRUE(timingIsDone(sorted(times), TimingPlan{100, 0.01}));
  // But a spread within the interval does: half at 1.0, half at 1.1.
  std::vector<double> split(10, 1.0);
  split.insert(split.end(), 10, 1.1);
  EXPECT_FALSE(timingIsDone(sorted(split), TimingPlan{100, 0.01}));
  EXPECT_TRUE(timingIsDone(sorted(split), TimingPlan{100, 0.1}));
}

} // namespace
} // namespace dice
