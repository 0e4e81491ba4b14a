//===- Optimizer.h - AdamW over named parameters, sharded -------*- C++ -*-===//
//
// AdamW (decoupled weight decay) whose state is keyed by checkpoint names, so
// optimizer checkpoints load into any world size. With sharding, each
// parameter's state lives on one rank (its owner, chosen to balance bytes);
// the owner updates it and broadcasts the new values (ZeRO stage 1).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_OPTIMIZER_H
#define DICE_TRAIN_OPTIMIZER_H

#include "dice/Train/Distributed.h"
#include "dice/Train/TrainConfig.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace dice {

/// The learning rate of `step` (0-based): linear warmup to `lr`, then
/// constant or cosine down to lr * min_lr_ratio at the last step.
double learningRate(const TrainConfig &config, int64_t step);

class AdamW {
public:
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> params,
        const TrainConfig &config, Distributed &dist);

  /// One update at learning rate `lr` from the parameters' gradients (the
  /// same on every rank: all-reduced before).
  void step(double lr);
  void zeroGrad();
  /// The global L2 norm of the gradients, then scales them to `maxNorm`.
  double clipGradNorm(double maxNorm);

  /// Every parameter's state by name ("<name>.exp_avg", ".exp_avg_sq"),
  /// gathered from the owners (collective: every
  /// rank calls it; the result is complete on rank 0).
  std::map<std::string, torch::Tensor> stateForCheckpoint();
  /// Loads state saved by any world size (each rank keeps what it owns),
  /// after `steps` updates.
  Status loadState(const std::map<std::string, torch::Tensor> &state,
                   int64_t steps);

  int64_t steps() const { return stepCount; }
  const std::vector<std::pair<std::string, torch::Tensor>> &parameters() const {
    return params;
  }

private:
  struct Moments {
    torch::Tensor expAvg, expAvgSq; // fp32, on the owner only
  };
  std::vector<std::pair<std::string, torch::Tensor>> params;
  std::vector<int> owner;
  std::vector<Moments> moments;
  const TrainConfig &cfg;
  Distributed &dist;
  int64_t stepCount = 0;
};

} // namespace dice

#endif // DICE_TRAIN_OPTIMIZER_H
