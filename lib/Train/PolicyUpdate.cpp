//===- PolicyUpdate.cpp - one TraceRL update over a batch of rollouts -----===//

#include "dice/Train/TrainSession.h"

#include <cmath>

namespace dice {

PolicyUpdateStats tracePolicyUpdate(TrainSession &s,
                                    const std::vector<const RolloutTrace *> &traces,
                                    const std::vector<double> &advantages,
                                    double globalTokens) {
  const TrainConfig &c = s.config;
  const int64_t blockSize = s.model->config().blockSize;
  const int64_t maskId = s.model->config().maskTokenId;
  PolicyUpdateStats stats;

  std::vector<int64_t> slots;
  for (const RolloutTrace *t : traces)
    slots.push_back(traceSlots(*t, blockSize));
  std::vector<std::vector<size_t>> rows = packLongestFirst(slots, c.packLength);

  // The batches, with each target's old log-probability and advantage: a
  // target's tag is its trace's index (high bits) and its answer position.
  constexpr int tagShift = 20;
  std::vector<TrainingBatch> batches;
  std::vector<torch::Tensor> oldLogProbs, tokenAdvantages;
  for (size_t first = 0; first < rows.size(); first += size_t(c.microBatch)) {
    std::vector<TrainingRow> batchRows;
    for (size_t r = first; r < std::min(rows.size(), first + size_t(c.microBatch)); ++r) {
      TrainingRow row;
      for (size_t k = 0; k < rows[r].size(); ++k)
        appendTrace(row, *traces[rows[r][k]], int64_t(k), blockSize, maskId,
                    int64_t(rows[r][k]) << tagShift);
      batchRows.push_back(std::move(row));
    }
    TrainingBatch batch = makeBatch(batchRows, maskId, s.device);
    torch::Tensor tags = batch.tags.cpu();
    const int64_t *tag = tags.data_ptr<int64_t>();
    std::vector<float> recorded, adv;
    for (int64_t t = 0; t < tags.numel(); ++t) {
      size_t trace = size_t(tag[t] >> tagShift), token = size_t(tag[t] & ((1 << tagShift) - 1));
      recorded.push_back(std::log(std::max(1e-30f, traces[trace]->probability[token])));
      adv.push_back(float(advantages[trace]));
    }
    torch::Tensor old = torch::tensor(recorded, torch::kFloat32).to(s.device);
    if (c.oldLogprobs == "recomputed") {
      torch::NoGradGuard noGrad;
      AutocastScope autocast(s.autocast());
      old = targetLogProbs(*s.model, batch).detach();
    }
    oldLogProbs.push_back(old);
    tokenAdvantages.push_back(torch::tensor(adv, torch::kFloat32).to(s.device));
    batches.push_back(std::move(batch));
  }

  for (int64_t epoch = 0; epoch < c.ppoEpochs; ++epoch) {
    for (size_t b = 0; b < batches.size(); ++b) {
      AutocastScope autocast(s.autocast());
      torch::Tensor logp = targetLogProbs(*s.model, batches[b]);
      PolicyLossParts parts = policyLoss(logp, oldLogProbs[b], tokenAdvantages[b], c.clip);
      ((-parts.surrogateSum + c.klCoef * parts.klSum) / globalTokens).backward();
      if (epoch == c.ppoEpochs - 1) {
        stats.surrogate += parts.surrogateSum.item<double>();
        stats.kl += parts.klSum.item<double>();
        stats.clipped += double(parts.clipped);
        stats.scored += double(logp.numel());
      }
    }
    if (epoch + 1 < c.ppoEpochs)
      s.update(learningRate(c, s.step));
  }
  return stats;
}

} // namespace dice
