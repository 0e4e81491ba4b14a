//===- TraceRL.h - policy gradients of block-diffusion rollouts -*- C++ -*-===//
//
// BiC-RL's update (TraceRL): a rollout records, per answer token, the
// denoising step at which the sampler unmasked it. Training rebuilds one
// noisy copy per decoding round of each block (TokenLayout.h), so each
// token's log-probability is taken under the partially decoded block it was
// decoded from. The objective is PPO's clipped surrogate with group z-score
// advantages and a k3 KL penalty against the pre-update policy.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRACERL_H
#define DICE_TRAIN_TRACERL_H

#include "dice/Train/PolicyModel.h"
#include "dice/Train/TokenLayout.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace dice {

/// What the sampler recorded for one rollout.
struct RolloutTrace {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;     ///< the answer
  std::vector<int32_t> unmaskStep; ///< per answer token
  std::vector<float> probability;  ///< per answer token, when unmasked
  /// The rest of the answer's last block (Candidate::trailingTokens).
  std::vector<int32_t> trailingTokens, trailingSteps;
};

/// Appends `trace` to `row` as packed sequence `sequence`: its clean
/// sequence, then one noisy copy per decoding round, holding only the blocks
/// that decoded something in that round. Answer token j is the target of
/// the round it was decoded in, tagged `tagBase + j`. Returns the slots used.
int64_t appendTrace(TrainingRow &row, const RolloutTrace &trace,
                    int64_t sequence, int64_t blockSize, int64_t maskId,
                    int64_t tagBase);

/// Slots appendTrace would use (for packing).
int64_t traceSlots(const RolloutTrace &trace, int64_t blockSize);

/// Each target's log-probability under `model` ([K], in the batch's target
/// order, with autograd unless under NoGradGuard).
torch::Tensor targetLogProbs(PolicyModel &model, const TrainingBatch &batch);

/// Group z-score advantages: (r - mean) / (std + 1e-6), std over the group
/// (population). A group whose rewards are all equal teaches nothing and
/// gets std::nullopt (dropped).
std::vector<std::optional<double>> groupAdvantages(const std::vector<double> &rewards);

struct PolicyLossParts {
  torch::Tensor surrogateSum; ///< sum over tokens of the clipped surrogate
  torch::Tensor klSum;        ///< sum over tokens of k3(old || new)
  int64_t clipped = 0;        ///< tokens whose ratio left [1 - clip, 1 + clip]
};

/// PPO's clipped surrogate min(r A, clip(r) A) and the k3 estimator
/// exp(old - new) - (old - new) - 1, per token, summed (the caller divides
/// by the step's token count and forms -surrogate + kl * KL).
PolicyLossParts policyLoss(const torch::Tensor &logProbs,
                           const torch::Tensor &oldLogProbs,
                           const torch::Tensor &advantages, double clip);

} // namespace dice

#endif // DICE_TRAIN_TRACERL_H
