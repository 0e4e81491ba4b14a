//===- BaselineTimes.h - the speed to beat, measured elsewhere -*- C++ -*-===//
//
// With `verifier.baseline = "inductor"`, a candidate is timed against its
// partition as Inductor compiles it; with `"measured_eager"`, against eager
// PyTorch as the caller timed it. The verifier cannot run either itself
// (that is Python): the torch.compile backend times each request's
// partition on the GPU, dice-curate each pair's own PyTorch program, and
// they write the times to a file (`verifier.baseline_times`):
//
//   {"version": 1,
//    "times": {"3f9a0c1d2e4b5a69": {"inductor_ms": 0.012, "eager_ms": 0.025}}}
//
// Either time may be absent (dice-curate measures Inductor only on request);
// a request the chosen baseline finds no time for stays unverified.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIER_BASELINETIMES_H
#define DICE_VERIFIER_BASELINETIMES_H

#include "dice/Support/Result.h"

#include <map>
#include <optional>
#include <string>

namespace dice {

/// A request's measured times, in milliseconds; each where it was measured.
struct BaselineTime {
  std::optional<double> inductorMs;
  std::optional<double> eagerMs;
};

/// fingerprint -> times.
using BaselineTimes = std::map<std::string, BaselineTime>;

/// Parses the file's text; errors name `sourceName` and the key at fault.
Result<BaselineTimes> parseBaselineTimes(const std::string &text,
                                         const std::string &sourceName);

/// Reads and parses a file.
Result<BaselineTimes> loadBaselineTimes(const std::string &path);

} // namespace dice

#endif // DICE_VERIFIER_BASELINETIMES_H
