//===- DiffusionLoss.h - the BD3-LM loss of supervised training -*- C++ -*-===//
//
// SFT of a block-diffusion model (SDAR, DICE): each sample's answer tokens
// are masked with probability t ~ U(1e-3, 1) in a noisy copy laid beside the
// clean sequence (TokenLayout.h); the loss is the cross-entropy of the masked
// answer tokens, each weighted 1/t, summed and divided by the batch's answer
// tokens. Prompt tokens are never masked and never scored.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_DIFFUSIONLOSS_H
#define DICE_TRAIN_DIFFUSIONLOSS_H

#include "dice/Train/PolicyModel.h"
#include "dice/Train/TokenLayout.h"

#include <cstdint>
#include <vector>

namespace dice {

/// A tokenized training sample.
struct SftSample {
  std::vector<int32_t> prompt;
  std::vector<int32_t> answer;
  int64_t difficulty = 0; ///< its row's place in the curriculum (0: none given)
  int64_t slots(int64_t blockSize) const; ///< clean + noisy slots it takes
};

inline constexpr double kMinMaskRate = 1e-3;

/// Appends `sample` (clean, then its noisy copy) to `row` as packed
/// sequence `sequence`; answer tokens are masked at a rate t drawn from
/// `generator`, then each independently. Returns t.
double appendDiffusionSample(TrainingRow &row, const SftSample &sample,
                             int64_t sequence, int64_t blockSize,
                             int64_t maskId, torch::Generator &generator);

/// Sum over the batch's targets of weight * cross-entropy (the caller
/// divides by the answer-token count of the whole step, on every rank).
torch::Tensor diffusionLossSum(PolicyModel &model, const TrainingBatch &batch);

} // namespace dice

#endif // DICE_TRAIN_DIFFUSIONLOSS_H
