//===- TrainCheckpoint.h - checkpoints of a training run --------*- C++ -*-===//
//
// A checkpoint is a Hugging Face model folder (config.json, safetensors
// sharded at a configurable size with their index, the tokenizer files), so
// the runtime and transformers load it as it is, plus what an exact resume
// needs, in its `trainer/` folder: the optimizer's moments
// (`optimizer.safetensors`) and `trainer_state.json` (step, stage, data
// position, seed). A LoRA run's checkpoint also holds its `adapter/` folder
// (Adapter.h: PEFT's format), what is shipped and what a resume reads back. Folders are written under a temporary name and renamed,
// so a killed run never leaves a half checkpoint behind a valid name.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRAINCHECKPOINT_H
#define DICE_TRAIN_TRAINCHECKPOINT_H

#include "dice/Model/Adapter.h"
#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dice {

/// The checkpoint's subfolder of resume state.
inline constexpr const char *kTrainerDir = "trainer";
/// A LoRA checkpoint's adapter folder.
inline constexpr const char *kAdapterDir = "adapter";

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct TrainState {
  int64_t step = 0;         ///< updates done
  std::string stage;        ///< "sft", "rl-infill", "rl-e2e"
  int64_t dataPosition = 0; ///< samples (SFT) or tasks (RL) consumed
  uint64_t seed = 0;
  int worldSize = 1;        ///< of the run that wrote it (any may resume)
  bool lora = false;
};

struct CheckpointContents {
  NamedTensors model;     ///< checkpoint names, merged weights
  NamedTensors optimizer; ///< "<name>.exp_avg", "<name>.exp_avg_sq"
  NamedTensors adapters;  ///< LoRA runs only (PolicyModel::adapterTensors)
  AdapterSettings adapterSettings;
  TrainState state;
};

/// Writes `contents` as `dir` (replacing it), copying config.json,
/// generation_config.json and the tokenizer files from `modelDir`.
Status writeCheckpoint(const std::string &dir, const std::string &modelDir,
                       const CheckpointContents &contents, double shardMb);

/// Reads the training state of `dir`.
Result<TrainState> readTrainState(const std::string &dir);

/// The newest checkpoint folder under `root` ("step-000120"), or "" when
/// there is none.
std::string latestCheckpoint(const std::string &root);

} // namespace dice

#endif // DICE_TRAIN_TRAINCHECKPOINT_H
