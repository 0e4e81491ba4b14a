//===- SftTrainer.cpp - supervised fine-tuning with the BD3-LM loss -------===//
//
// Each step takes the next `global_batch` samples of the epoch order; rank r
// takes every world-size-th of them, packs them into rows and runs them in
// micro-batches, accumulating gradients. Each sample's masking is drawn from
// a generator seeded by its place in the data stream, so the step is the
// same computation on any number of ranks, and after a resume.
//
//===----------------------------------------------------------------------===//

#include "dice/Train/TrainSession.h"

#include "dice/Train/DiffusionLoss.h"
#include "dice/Train/TrainData.h"

#include <chrono>
#include <cmath>
#include <optional>

namespace dice {

using Clock = std::chrono::steady_clock;

Status runSft(TrainSession &s) {
  const TrainConfig &c = s.config;
  if (c.sftFiles.empty())
    return Error("", 0, 0, "data.sft", "names no SFT file");
  std::vector<SftRow> rows;
  for (const std::string &file : c.sftFiles) {
    Result<std::vector<SftRow>> loaded = loadSftRows(file);
    if (!loaded)
      return loaded.error();
    rows.insert(rows.end(), loaded->begin(), loaded->end());
  }
  if (c.endToEndToo) {
    size_t given = rows.size();
    for (size_t i = 0; i < given; ++i)
      if (rows[i].infill() && !rows[i].cudaCode.empty()) {
        SftRow whole = rows[i];
        whole.prefix = whole.middle = whole.suffix = "";
        rows.push_back(std::move(whole));
      }
  }
  Result<PromptTemplates> templates =
      PromptTemplates::load(c.infillTemplate, c.endToEndTemplate);
  if (!templates)
    return templates.error();
  int64_t tooLong = 0;
  std::vector<SftSample> samples =
      tokenizeSft(rows, *s.tokenizer, c.maxLength, tooLong, *templates);
  if (tooLong)
    s.say(std::to_string(tooLong) + " of " + std::to_string(rows.size()) +
          " samples are longer than data.max_length (" + std::to_string(c.maxLength) +
          " tokens) and are left out");
  if (samples.empty())
    return Error("", 0, 0, "data.sft", "holds no sample short enough to train on");
  s.say("SFT on " + std::to_string(samples.size()) + " samples, " +
        std::to_string(c.globalBatch) + " per step, " +
        std::to_string(s.dist->worldSize()) + " rank(s) (" + s.dist->backendName() +
        "), " + (s.device.is_cuda() ? "cuda" : "cpu"));

  const int64_t blockSize = s.model->config().blockSize;
  const int64_t maskId = s.model->config().maskTokenId;
  const int64_t n = int64_t(samples.size());
  const int world = s.dist->worldSize(), rank = s.dist->rank();
  std::vector<size_t> order;
  int64_t orderEpoch = -1;
  std::optional<SftCurriculum> curriculum;
  if (c.curriculum)
    curriculum.emplace(samples, c.seed,
                       int64_t(std::llround(c.curriculumRamp * double(c.steps))));

  for (; s.step < c.steps; ++s.step) {
    Clock::time_point start = Clock::now();
    // This rank's samples of the step, with their place in the stream.
    std::vector<const SftSample *> mine;
    std::vector<int64_t> places;
    int64_t answerTokens = 0, tokens = 0;
    for (int64_t k = 0; k < c.globalBatch; ++k) {
      int64_t place = s.dataPosition + k;
      if (!curriculum && place / n != orderEpoch) {
        orderEpoch = place / n;
        order = epochOrder(size_t(n), c.seed, orderEpoch);
      }
      const SftSample &sample =
          samples[curriculum ? curriculum->draw(s.step, place) : order[size_t(place % n)]];
      answerTokens += int64_t(sample.answer.size());
      tokens += int64_t(sample.prompt.size() + sample.answer.size());
      if (k % world == rank) {
        mine.push_back(&sample);
        places.push_back(place);
      }
    }

    std::vector<int64_t> slots;
    for (const SftSample *sample : mine)
      slots.push_back(sample->slots(blockSize));
    std::vector<std::vector<size_t>> packed = packLongestFirst(slots, c.packLength);
    double lossSum = 0;
    {
      AutocastScope autocast(s.autocast());
      for (size_t first = 0; first < packed.size(); first += size_t(c.microBatch)) {
        std::vector<TrainingRow> batchRows;
        for (size_t r = first; r < std::min(packed.size(), first + size_t(c.microBatch)); ++r) {
          TrainingRow row;
          for (size_t k = 0; k < packed[r].size(); ++k) {
            size_t i = packed[r][k];
            torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
                c.seed * 0x9E3779B97F4A7C15ull + uint64_t(places[i]));
            appendDiffusionSample(row, *mine[i], int64_t(k), blockSize, maskId, gen);
          }
          batchRows.push_back(std::move(row));
        }
        TrainingBatch batch = makeBatch(batchRows, maskId, s.device);
        torch::Tensor sum = diffusionLossSum(*s.model, batch);
        (sum / double(answerTokens)).backward();
        lossSum += sum.item<double>();
      }
    }
    torch::Tensor total = torch::tensor({lossSum}, torch::kFloat64).to(s.device);
    s.dist->allReduceSum({total}, 1 << 20);
    double lr = learningRate(c, s.step);
    double gradNorm = s.update(lr);
    s.dataPosition += c.globalBatch;
    double elapsed = secondsSince(start);

    if (s.metrics)
      s.metrics->write({{"step", s.step + 1},
                        {"stage", std::string("sft")},
                        {"loss", total.item<double>() / double(answerTokens)},
                        {"lr", lr},
                        {"grad_norm", gradNorm},
                        {"samples", c.globalBatch},
                        {"tokens", tokens},
                        {"answer_tokens", answerTokens},
                        {"tokens_per_s", double(tokens) / elapsed},
                        {"step_s", elapsed}},
                       c.steps);
    bool last = s.step + 1 == c.steps;
    if ((c.checkpointEvery > 0 && (s.step + 1) % c.checkpointEvery == 0) || last) {
      ++s.step; // the checkpoint holds the steps done
      Status ok = s.saveCheckpoint();
      --s.step;
      if (!ok)
        return ok;
    }
  }
  return {};
}

} // namespace dice
