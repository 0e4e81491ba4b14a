//===- TrainConfig.h - dice-train's configuration ---------------*- C++ -*-===//
//
// Every setting of a training run, with its default, read from a TOML file
// (docs/train.md lists them). Unknown sections and keys, wrong types and
// values out of range are errors naming the file, line and key. The
// [sampling] and [verifier] sections are dice.toml's own, so a rollout is
// decoded and judged exactly as the compiler would. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRAINCONFIG_H
#define DICE_TRAIN_TRAINCONFIG_H

#include "dice/Config/Config.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// What a run trains: supervised fine-tuning, or BiC-RL's kernel-infilling
/// (stage 1) or end-to-end (stage 2) reinforcement learning.
/// Training stages, and the evaluation of a checkpoint on task packs in
/// either prompt form (no update, no checkpoint).
enum class TrainStage { Sft, RlInfill, RlEndToEnd, EvalInfill, EvalEndToEnd };

std::string_view toString(TrainStage stage);

struct TrainConfig {
  // [run]
  TrainStage stage = TrainStage::Sft;
  int64_t steps = 100;
  uint64_t seed = 0;
  std::string device = "auto";    ///< "auto", "cpu", "cuda"
  std::string precision = "fp32"; ///< "fp32", or "bf16" (autocast, fp32 master)

  // [model]
  std::string modelPath;          ///< HF folder: config.json, weights, tokenizer
  bool randomInit = false;        ///< weights drawn at random (config.json only)
  bool gradientCheckpointing = false;

  // [data]
  std::vector<std::string> sftFiles;  ///< SFT JSONL (CuKe / DICE rows)
  std::vector<std::string> taskFiles; ///< task packs (dice train prepare)
  int64_t maxLength = 2048; ///< prompt + answer tokens of one sample
  int64_t packLength = 8192; ///< tokens of one packed row (clean + noisy)
  /// Infilling rows (prefix, middle, suffix) also train as end-to-end
  /// samples whose answer is the whole program (cuda_code).
  bool endToEndToo = false;
  /// SFT: steps draw from the easiest samples first (the rows'
  /// `difficulty`), from all of them after curriculumRamp * steps
  /// (SftCurriculum); RL: the tasks of a level from easy to hard.
  bool curriculum = false;
  double curriculumRamp = 0.5;
  /// Prompt template files of the SFT prompts (PromptTemplate.h), as the
  /// compiler's dice.toml names them in [prompt]; empty: the built-in ones.
  std::string infillTemplate;
  std::string endToEndTemplate;

  // [optim]
  double lr = 1e-5;
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double gradClip = 1.0;      ///< 0 turns clipping off
  int64_t warmupSteps = 0;
  std::string schedule = "constant"; ///< "constant" or "cosine"
  double minLrRatio = 0.0;    ///< the cosine schedule's floor, as a share of lr
  int64_t globalBatch = 8;    ///< samples (SFT) or rollouts' tasks (RL) per step
  int64_t microBatch = 1;     ///< samples per forward on one rank
  double bucketMb = 25;       ///< gradient all-reduce bucket size
  bool shardOptimizer = true; ///< optimizer state split over ranks

  // [lora]
  int64_t loraRank = 0; ///< 0: full fine-tuning
  double loraAlpha = 16;
  std::vector<std::string> loraTargets = {"q_proj", "k_proj", "v_proj", "o_proj",
                                          "gate_proj", "up_proj", "down_proj"};
  /// The mask token's rows of the embedding (and of an untied head) train
  /// with the adapters: a base that had no mask token has an untrained row.
  bool loraTrainMaskRow = true;

  // [rl]
  int64_t rollouts = 16;        ///< G: rollouts per task
  double clip = 0.2;            ///< PPO ratio clip
  double klCoef = 0.01;         ///< k3 KL weight against the pre-update policy
  double speedReward = 0.0;     ///< reward += this * log2(speedup) when correct
  int64_t ppoEpochs = 1;        ///< policy updates per batch of rollouts
  bool overlapVerification = true; ///< verify step s while generating step s+1
  std::string oldLogprobs = "recorded"; ///< "recorded" or "recomputed"
  /// Data scheduling by level: below levelSteps[0] only level-1 tasks,
  /// below levelSteps[1] levels 1-2, then all. Empty: the whole task list
  /// in level order (single op, fusion, model), each level shuffled.
  std::vector<int64_t> levelSteps;
  std::string rolloutLog; ///< JSONL of every rollout; empty: beside the metrics

  // [checkpoint]
  std::string checkpointDir = "train-out";
  int64_t checkpointEvery = 0; ///< 0: only at the end
  double shardMb = 2048;       ///< safetensors shard size
  std::string resume;          ///< "", "latest" or a checkpoint folder

  // [metrics]
  std::string metricsPath; ///< empty: <checkpoint dir>/metrics.jsonl
  std::string status = "auto"; ///< live status line: "auto" (a terminal), "on", "off"

  // [sampling], [verifier]: dice.toml's sections.
  Config dice;
};

Result<TrainConfig> parseTrainConfig(std::string_view text,
                                     std::string_view sourceName);
Result<TrainConfig> loadTrainConfigFile(const std::string &path);

/// Sets one dotted key ("optim.lr") from its TOML spelling ("1e-4"), with the
/// file's checks; the command line's `--set key=value`.
Status applyTrainOverride(TrainConfig &config, std::string_view key,
                          std::string_view value);

} // namespace dice

#endif // DICE_TRAIN_TRAINCONFIG_H
