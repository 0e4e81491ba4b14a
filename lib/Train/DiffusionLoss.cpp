//===- DiffusionLoss.cpp - the BD3-LM loss of supervised training ---------===//

#include "dice/Train/DiffusionLoss.h"

namespace dice {

int64_t SftSample::slots(int64_t blockSize) const {
  int64_t length = int64_t(prompt.size() + answer.size());
  int64_t firstNoisy = int64_t(prompt.size()) / blockSize * blockSize;
  return length + (length - firstNoisy);
}

double appendDiffusionSample(TrainingRow &row, const SftSample &sample,
                             int64_t sequence, int64_t blockSize,
                             int64_t maskId, torch::Generator &generator) {
  const int64_t p = int64_t(sample.prompt.size());
  const int64_t length = p + int64_t(sample.answer.size());
  auto token = [&](int64_t i) -> int64_t {
    return i < p ? sample.prompt[size_t(i)] : sample.answer[size_t(i - p)];
  };
  for (int64_t i = 0; i < length; ++i)
    row.push(token(i), i, blockSize, kClean, sequence);

  torch::Tensor draws = torch::rand({int64_t(sample.answer.size()) + 1},
                                    generator, torch::kFloat64);
  auto u = draws.accessor<double, 1>();
  const double t = kMinMaskRate + (1 - kMinMaskRate) * u[0];
  // Only the blocks that hold answer tokens get a noisy copy: the prompt's
  // whole blocks are context, never predicted.
  for (int64_t i = p / blockSize * blockSize; i < length; ++i) {
    if (i >= p && u[i - p + 1] < t)
      row.push(maskId, i, blockSize, 0, sequence, token(i), float(1.0 / t));
    else
      row.push(token(i), i, blockSize, 0, sequence);
  }
  return t;
}

torch::Tensor diffusionLossSum(PolicyModel &model, const TrainingBatch &batch) {
  torch::Tensor hidden = model.hidden(batch.ids, batch.positions, batch.allowed);
  if (batch.targets.numel() == 0)
    return (hidden.sum() * 0).to(torch::kFloat32);
  torch::Tensor picked = hidden.index({batch.targetRow, batch.targetSlot}); // [K, H]
  torch::Tensor logits = model.logits(picked);                               // [K, V]
  torch::Tensor ce = torch::nn::functional::cross_entropy(
      logits, batch.targets,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return (ce * batch.weights).sum();
}

} // namespace dice
