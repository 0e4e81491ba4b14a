//===- Rollouts.h - candidates from the policy, verdicts from dice-verify -===//
//
// What BiC-RL and evaluation share: each task's prompt (infilling or end to
// end), G candidates per task from the runtime's block-diffusion sampler
// over the session's current weights, and their verdicts from the
// compiler's verifier run as its own process.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_LIB_TRAIN_ROLLOUTS_H
#define DICE_LIB_TRAIN_ROLLOUTS_H

#include "dice/Train/TrainData.h"
#include "dice/Train/TrainSession.h"
#include "dice/VerifierCore/VerdictStatus.h"

#include <optional>
#include <string>
#include <vector>

namespace dice {

struct Rollout {
  size_t task = 0;
  int64_t group = 0; ///< index of its task within the step
  RolloutTrace trace;
  std::string text;
  VerdictStatus status = VerdictStatus::Unverified;
  std::string reason;
  std::optional<double> speedup;
  double reward = 0;
};

/// One step's rollouts on this rank, and how long generating them took.
struct Generation {
  int64_t step = 0;
  std::vector<Rollout> rollouts;
  double generateSeconds = 0;
  int64_t generatedTokens = 0;
};

struct Verification {
  double seconds = 0;
  std::vector<std::string> notes;
};

/// Each task's prompt ids, tokenized the first time the task is drawn.
using PromptCache = std::vector<std::optional<std::vector<int32_t>>>;

/// Every task of data.tasks, in order (an error when it names none).
Result<std::vector<TaskPackRow>> loadTaskPacks(const TrainConfig &c);

/// Whether the stage prompts with the compiler's prefix and suffix.
bool promptsForInfilling(TrainStage stage);

/// rl.rollouts candidates for each of `chosen` (indices into `tasks`) that
/// falls to this rank (the k-th to rank k mod world size), seeded by the
/// run's seed, `step` and the task's place in `chosen`.
Generation generate(TrainSession &s, const std::vector<TaskPackRow> &tasks,
                    const std::vector<size_t> &chosen, int64_t step, PromptCache &prompts);

/// Verdicts, speedups and rewards (1 iff correct, plus the optional speed
/// term) for `g`'s rollouts.
Result<Verification> verify(const TrainConfig &c, const std::vector<TaskPackRow> &tasks,
                            Generation &g, const std::string &workDir, unsigned jobs);

/// Sums of one rank's numbers over every rank (collective).
std::vector<double> sumOverRanks(TrainSession &s, std::vector<double> values);

/// This rank's verifier folder under checkpoint.dir (batch, cache, log).
std::string verifierDir(const TrainSession &s);

/// Builds at once per rank: half the cores, split over the ranks.
unsigned verifierJobs(const TrainSession &s);

} // namespace dice

#endif // DICE_LIB_TRAIN_ROLLOUTS_H
