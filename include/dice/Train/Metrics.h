//===- Metrics.h - per-step metrics and the live status line ----*- C++ -*-===//
//
// One JSON object per step appended to a JSONL file (flushed each step, so a
// killed run keeps every finished step), and a one-line status rewritten in
// place on a terminal. `dice train plot` draws the file.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_METRICS_H
#define DICE_TRAIN_METRICS_H

#include "dice/Support/Result.h"

#include <fstream>
#include <map>
#include <string>
#include <variant>

namespace dice {

/// Takes back what a run killed after its last checkpoint logged: from the
/// JSONL log at `path` (metrics or rollouts), the lines of `stage` with a
/// step past `step` that follow the last line of that step, and a last line
/// cut short. The run resumed from that checkpoint logs those steps again,
/// so the file reads as if the run had never stopped. A file without a line
/// of `step` keeps its whole lines; a missing file is left missing.
Status dropLoggedStepsAfter(const std::string &path, const std::string &stage,
                            int64_t step);

class MetricsLog {
public:
  using Value = std::variant<int64_t, double, std::string>;

  /// Appends to `path` (created with its folder). `status`: "auto" (when
  /// stderr is a terminal), "on" or "off".
  static Result<MetricsLog> open(const std::string &path, const std::string &status);

  /// Writes one step's metrics and refreshes the status line.
  void write(const std::map<std::string, Value> &metrics, int64_t totalSteps);
  /// Ends the status line (before other output).
  void finish();

private:
  std::ofstream out;
  bool live = false;
  bool lineOpen = false;
};

} // namespace dice

#endif // DICE_TRAIN_METRICS_H
