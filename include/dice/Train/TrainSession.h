//===- TrainSession.h - what every stage of a run shares ------*- C++ -*-===//
//
// The device, the ranks, the policy and its optimizer, the tokenizer, the
// metrics log and checkpointing, set up once per run (and restored from a
// checkpoint when the run resumes).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRAINSESSION_H
#define DICE_TRAIN_TRAINSESSION_H

#include "dice/Model/Tokenizer.h"
#include "dice/Train/Distributed.h"
#include "dice/Train/Metrics.h"
#include "dice/Train/Optimizer.h"
#include "dice/Train/PolicyModel.h"
#include "dice/Train/TrainCheckpoint.h"
#include "dice/Train/TraceRL.h"
#include "dice/Train/TrainConfig.h"

#include <chrono>
#include <memory>
#include <optional>

namespace dice {

/// Seconds since `start` on the steady clock (the loops' timings).
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct TrainSession {
  const TrainConfig &config;
  torch::Device device = torch::kCPU;
  std::unique_ptr<Distributed> dist;
  std::optional<PolicyModel> model;
  std::optional<Tokenizer> tokenizer;
  std::unique_ptr<AdamW> optimizer;
  std::optional<MetricsLog> metrics;
  int64_t step = 0;         ///< updates done (the next step's index)
  int64_t dataPosition = 0; ///< samples or tasks consumed

  explicit TrainSession(const TrainConfig &config) : config(config) {}

  /// Everything above, resumed from a checkpoint when configured.
  Status open();
  /// Writes `<checkpoint dir>/step-NNNNNN` (collective; rank 0 writes).
  Status saveCheckpoint();
  /// Sums the gradients over ranks, clips, steps; returns the gradient norm.
  double update(double lr);
  /// Whether products run under bf16 autocast.
  bool autocast() const;
  /// Note to stderr from rank 0.
  void say(const std::string &text) const;
};

/// Enables bf16 autocast on CUDA while alive (when the session wants it).
class AutocastScope {
public:
  explicit AutocastScope(bool on);
  ~AutocastScope();

private:
  bool on, was;
};

Status runSft(TrainSession &session);
Status runRl(TrainSession &session);
/// Every task of data.tasks once: rl.rollouts candidates each under
/// [sampling], verified; writes `<checkpoint.dir>/eval.jsonl` (a line per
/// candidate) and `eval-summary.json` (build rate, exec accuracy, fast_1,
/// fast_2, per level), and one metrics line. Nothing is updated or saved.
Status runEvaluation(TrainSession &session);

/// What one TraceRL update over a batch of rollouts measured.
struct PolicyUpdateStats {
  double surrogate = 0, kl = 0, clipped = 0, scored = 0; ///< sums over tokens
};

/// Accumulates the gradients of BiC-RL's objective over `traces` (with
/// their group advantages) into the session's policy: packed into rows of
/// data.pack_length slots, micro-batches of optim.micro_batch rows, each
/// token scored in its decoding context (TraceRL), PPO's clipped ratio to
/// the old log-probabilities (rl.old_logprobs) and a k3 KL, divided by
/// `globalTokens` (the answer tokens of every rank's traces). With
/// rl.ppo_epochs > 1 every epoch but the last also updates the weights.
/// The caller then calls TrainSession::update.
PolicyUpdateStats tracePolicyUpdate(TrainSession &session,
                                    const std::vector<const RolloutTrace *> &traces,
                                    const std::vector<double> &advantages,
                                    double globalTokens);

} // namespace dice

#endif // DICE_TRAIN_TRAINSESSION_H
