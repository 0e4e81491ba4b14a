//===- TraceRL.cpp - policy gradients of block-diffusion rollouts ---------===//

#include "dice/Train/TraceRL.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace dice {
namespace {

/// The decoded slots after the prompt (answer, then its block's trailing
/// tokens), and per slot the rank of its unmask step among the distinct
/// steps of its block (0: decoded in the block's first round; -1: never
/// decoded); per block, its number of rounds.
struct Rounds {
  std::vector<int64_t> tokens, rank;
  std::map<int64_t, int64_t> roundsOfBlock;
};

Rounds decodingRounds(const RolloutTrace &trace, int64_t blockSize) {
  const int64_t p = int64_t(trace.prompt.size());
  Rounds r;
  std::vector<int64_t> steps;
  for (size_t j = 0; j < trace.tokens.size(); ++j) {
    r.tokens.push_back(trace.tokens[j]);
    steps.push_back(trace.unmaskStep[j]);
  }
  for (size_t j = 0; j < trace.trailingTokens.size(); ++j) {
    r.tokens.push_back(trace.trailingTokens[j]);
    steps.push_back(trace.trailingSteps[j]);
  }
  std::map<int64_t, std::vector<int64_t>> stepsOfBlock;
  for (size_t j = 0; j < steps.size(); ++j) {
    std::vector<int64_t> &s = stepsOfBlock[(p + int64_t(j)) / blockSize];
    if (steps[j] >= 0)
      s.push_back(steps[j]);
  }
  for (auto &[block, s] : stepsOfBlock) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    r.roundsOfBlock[block] = int64_t(s.size());
  }
  for (size_t j = 0; j < steps.size(); ++j) {
    const auto &s = stepsOfBlock[(p + int64_t(j)) / blockSize];
    r.rank.push_back(steps[j] < 0 ? -1
                                  : std::lower_bound(s.begin(), s.end(), steps[j]) -
                                        s.begin());
  }
  return r;
}

} // namespace

int64_t traceSlots(const RolloutTrace &trace, int64_t blockSize) {
  int64_t slots = int64_t(trace.prompt.size() + trace.tokens.size());
  for (const auto &[block, rounds] : decodingRounds(trace, blockSize).roundsOfBlock)
    slots += rounds * blockSize;
  return slots;
}

int64_t appendTrace(TrainingRow &row, const RolloutTrace &trace,
                    int64_t sequence, int64_t blockSize, int64_t maskId,
                    int64_t tagBase) {
  const int64_t before = row.size();
  const int64_t p = int64_t(trace.prompt.size());
  const int64_t answer = int64_t(trace.tokens.size());
  Rounds rounds = decodingRounds(trace, blockSize);
  const int64_t decoded = int64_t(rounds.tokens.size());
  auto token = [&](int64_t i) -> int64_t {
    return i < p ? trace.prompt[size_t(i)] : rounds.tokens[size_t(i - p)];
  };
  // The clean sequence: later blocks' context (the last block's trailing
  // tokens are nobody's, so they are left out).
  for (int64_t i = 0; i < p + answer; ++i)
    row.push(token(i), i, blockSize, kClean, sequence);

  int64_t maxRounds = 0;
  for (const auto &[block, n] : rounds.roundsOfBlock)
    maxRounds = std::max(maxRounds, n);
  for (int64_t round = 0; round < maxRounds; ++round)
    for (const auto &[block, n] : rounds.roundsOfBlock) {
      if (round >= n)
        continue;
      // The block as the sampler saw it before this round's unmasking: the
      // prompt's tail and the tokens of earlier rounds visible, the rest
      // masked; the answer tokens this round decoded are the targets.
      for (int64_t i = block * blockSize; i < (block + 1) * blockSize; ++i) {
        if (i < p) {
          row.push(token(i), i, blockSize, round, sequence);
          continue;
        }
        int64_t j = i - p;
        int64_t rank = j < decoded ? rounds.rank[size_t(j)] : -1;
        if (rank >= 0 && rank < round)
          row.push(token(i), i, blockSize, round, sequence);
        else if (rank == round && j < answer)
          row.push(maskId, i, blockSize, round, sequence, token(i), 1.0f,
                   tagBase + j);
        else
          row.push(maskId, i, blockSize, round, sequence);
      }
    }
  return row.size() - before;
}

torch::Tensor targetLogProbs(PolicyModel &model, const TrainingBatch &batch) {
  torch::Tensor hidden = model.hidden(batch.ids, batch.positions, batch.allowed);
  torch::Tensor picked = hidden.index({batch.targetRow, batch.targetSlot});
  torch::Tensor logp = torch::log_softmax(model.logits(picked), -1);
  return logp.gather(1, batch.targets.unsqueeze(1)).squeeze(1);
}

std::vector<std::optional<double>> groupAdvantages(const std::vector<double> &rewards) {
  std::vector<std::optional<double>> out(rewards.size());
  if (rewards.empty() ||
      std::all_of(rewards.begin(), rewards.end(),
                  [&](double r) { return r == rewards.front(); }))
    return out;
  double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) /
                double(rewards.size());
  double var = 0;
  for (double r : rewards)
    var += (r - mean) * (r - mean);
  double sd = std::sqrt(var / double(rewards.size()));
  for (size_t i = 0; i < rewards.size(); ++i)
    out[i] = (rewards[i] - mean) / (sd + 1e-6);
  return out;
}

PolicyLossParts policyLoss(const torch::Tensor &logProbs,
                           const torch::Tensor &oldLogProbs,
                           const torch::Tensor &advantages, double clip) {
  PolicyLossParts parts;
  torch::Tensor ratio = torch::exp(logProbs - oldLogProbs);
  torch::Tensor surrogate =
      torch::min(ratio * advantages,
                 torch::clamp(ratio, 1 - clip, 1 + clip) * advantages);
  torch::Tensor delta = oldLogProbs - logProbs;
  parts.surrogateSum = surrogate.sum();
  parts.klSum = (torch::exp(delta) - delta - 1).sum();
  parts.clipped = ((ratio - 1).abs() > clip).sum().item<int64_t>();
  return parts;
}

} // namespace dice
