//===- Trainer.h - dice-train's runs: SFT and BiC-RL ------------*- C++ -*-===//
//
// One run trains one stage (docs/train.md): supervised fine-tuning with the
// BD3-LM loss, or BiC-RL's kernel-infilling or end-to-end stage, whose
// rewards come from the compiler's own verifier. The same code runs alone or
// as one rank of a torchrun job.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRAINER_H
#define DICE_TRAIN_TRAINER_H

#include "dice/Support/Result.h"
#include "dice/Train/TrainConfig.h"

namespace dice {

/// Runs `config`'s stage to its last step, writing checkpoints and metrics.
/// Never throws: LibTorch and IO failures come back as errors.
Status runTraining(const TrainConfig &config);

} // namespace dice

#endif // DICE_TRAIN_TRAINER_H
