//===- TrainBench.h - dice-train's steps timed on random weights -*- C++ -*-===//

#ifndef DICE_TOOLS_DICE_BENCH_TRAINBENCH_H
#define DICE_TOOLS_DICE_BENCH_TRAINBENCH_H

#include <cstdint>
#include <string>

namespace dice {

struct TrainBenchOptions {
  std::string mode;  ///< "sft" or "rl"
  std::string shape; ///< 1.7b, 4b, 8b
  int64_t loraRank = 0;
  bool recompute = false;
  int64_t samples = 8, promptTokens = 512, answerTokens = 512;
  int64_t steps = 6;
  int64_t rollouts = 16, maxTokens = 256;
  std::string jsonPath;
};

/// sft: the SFT step of dice-train (BD3-LM layout and loss, backward, AdamW
/// with fp32 masters, bf16 autocast) on random samples: tokens/s.
/// rl: one BiC-RL step (rollouts from the sampler, TraceRL update with
/// alternating rewards): seconds per part and the peak device memory.
int runTrainBench(const TrainBenchOptions &options);

} // namespace dice

#endif // DICE_TOOLS_DICE_BENCH_TRAINBENCH_H
