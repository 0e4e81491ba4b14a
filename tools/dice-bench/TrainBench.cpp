//===- TrainBench.cpp - dice-train's steps timed on random weights --------===//
//
// The library calls dice-train's loops make (lib/Train), on random weights
// in the SDAR shapes and random tokens, so the step can be compared with the
// same step written in plain PyTorch (bench/train_step_python.py) in one run.
//
//===----------------------------------------------------------------------===//

#include "TrainBench.h"
#include "BenchSupport.h"

#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Train/DiffusionLoss.h"
#include "dice/Train/Optimizer.h"
#include "dice/Train/PolicyModel.h"
#include "dice/Train/TraceRL.h"

#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

namespace dice {
namespace {

double peakGiB() {
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return double(stats.allocated_bytes[0].peak) / double(1ull << 30);
}

struct Autocast {
  Autocast() {
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
  }
  ~Autocast() {
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    at::autocast::clear_cache();
  }
};

std::vector<int32_t> randomTokens(int64_t n, int64_t vocab, torch::Generator &g) {
  torch::Tensor t = torch::randint(0, vocab - 300, {n}, g, torch::kInt32);
  return std::vector<int32_t>(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + n);
}

int sftBench(const TrainBenchOptions &o, ModelConfig config, nlohmann::json &out) {
  LoraOptions lora{o.loraRank, 16, {"q_proj", "k_proj", "v_proj", "o_proj",
                                    "gate_proj", "up_proj", "down_proj"}};
  PolicyModel model = PolicyModel::random(config, torch::kCUDA, lora, 0);
  model.setGradientCheckpointing(o.recompute);
  TrainConfig tc;
  tc.lr = 1e-5;
  auto dist = Distributed::fromEnvironment(torch::kCPU).take();
  AdamW opt(model.trainable(), tc, *dist);
  torch::Generator g = at::make_generator<at::CPUGeneratorImpl>(1);
  std::vector<SftSample> samples;
  for (int64_t k = 0; k < o.samples; ++k)
    samples.push_back({randomTokens(o.promptTokens, config.vocabSize, g),
                       randomTokens(o.answerTokens, config.vocabSize, g)});
  std::vector<double> times;
  for (int64_t step = 0; step < o.steps + 2; ++step) {
    deviceSync();
    double t0 = now();
    std::vector<TrainingRow> rows;
    for (int64_t k = 0; k < o.samples; ++k) {
      TrainingRow row;
      appendDiffusionSample(row, samples[size_t(k)], 0, config.blockSize,
                            config.maskTokenId, g);
      rows.push_back(std::move(row));
    }
    TrainingBatch batch = makeBatch(rows, config.maskTokenId, torch::kCUDA);
    {
      Autocast autocast;
      torch::Tensor loss = diffusionLossSum(model, batch) /
                           double(o.samples * o.answerTokens);
      loss.backward();
    }
    opt.clipGradNorm(1.0);
    opt.step(tc.lr);
    opt.zeroGrad();
    deviceSync();
    if (step >= 2) // two warm-up steps
      times.push_back(now() - t0);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  double tokens = double(o.samples * (o.promptTokens + o.answerTokens));
  out["step_s"] = median;
  out["tokens_per_s"] = tokens / median;
  out["peak_gib"] = peakGiB();
  std::printf("dice-train SFT step (%s, lora %ld, %ld x %ld+%ld tokens): %.3f s, "
              "%.0f tokens/s, peak %.1f GiB\n",
              o.shape.c_str(), long(o.loraRank), long(o.samples), long(o.promptTokens),
              long(o.answerTokens), median, tokens / median, peakGiB());
  return 0;
}

int rlBench(const TrainBenchOptions &o, ModelConfig config, nlohmann::json &out) {
  LoraOptions lora{o.loraRank, 32, {"q_proj", "k_proj", "v_proj", "o_proj",
                                    "gate_proj", "up_proj", "down_proj"}};
  double t0 = now();
  PolicyModel model = PolicyModel::random(config, torch::kCUDA, lora, 0);
  model.setGradientCheckpointing(o.recompute);
  deviceSync();
  out["init_s"] = now() - t0;
  TrainConfig tc;
  tc.lr = 1e-6;
  auto dist = Distributed::fromEnvironment(torch::kCPU).take();
  AdamW opt(model.trainable(), tc, *dist);
  torch::Generator g = at::make_generator<at::CPUGeneratorImpl>(2);
  std::vector<int32_t> prompt = randomTokens(o.promptTokens, config.vocabSize, g);

  for (int repeat = 0; repeat < 2; ++repeat) { // the first warms up
    deviceSync();
    double start = now();
    std::vector<Candidate> rollouts;
    {
      Transformer policy(config, model.inferenceWeights(torch::kBFloat16));
      TransformerDenoiser denoiser(policy);
      SamplerOptions so;
      so.stopTokenIds = {}; // random weights: decode max_tokens every time
      BlockDiffusionSampler sampler(denoiser, so);
      SamplingConfig sc;
      sc.remasking = Remasking::Dynamic;
      sc.topK = 0;
      sc.maxTokens = o.maxTokens;
      Result<std::vector<Candidate>> r =
          sampler.generateCandidates(prompt, int(o.rollouts), sc);
      if (!r) {
        std::fprintf(stderr, "dice-bench: %s\n", r.error().format().c_str());
        return 1;
      }
      rollouts = r.take();
      deviceSync();
    }
    double generated = now();
    // Alternating rewards: every rollout has an advantage of +-1.
    int64_t tokens = 0;
    for (const Candidate &c : rollouts)
      tokens += int64_t(c.tokens.size());
    for (size_t i = 0; i < rollouts.size(); ++i) {
      const Candidate &c = rollouts[i];
      RolloutTrace trace{prompt, c.tokens, c.unmaskStep, c.probability,
                         c.trailingTokens, c.trailingSteps};
      TrainingRow row;
      appendTrace(row, trace, 0, config.blockSize, config.maskTokenId, 0);
      TrainingBatch batch = makeBatch({row}, config.maskTokenId, torch::kCUDA);
      torch::Tensor old = torch::log(
          torch::tensor(c.probability, torch::kFloat32).clamp_min(1e-30)).to(torch::kCUDA);
      torch::Tensor adv = torch::full({int64_t(c.tokens.size())}, i % 2 ? 1.0f : -1.0f,
                                      torch::TensorOptions().device(torch::kCUDA));
      Autocast autocast;
      torch::Tensor logp = targetLogProbs(model, batch);
      // Targets come back in slot order; the trace's tags give each token.
      torch::Tensor order = batch.tags;
      PolicyLossParts parts = policyLoss(logp, old.index({order}), adv.index({order}), 0.2);
      ((-parts.surrogateSum + 0.01 * parts.klSum) / double(tokens)).backward();
    }
    opt.clipGradNorm(1.0);
    opt.step(tc.lr);
    opt.zeroGrad();
    deviceSync();
    double updated = now();
    if (repeat == 1) {
      out["generate_s"] = generated - start;
      out["update_s"] = updated - generated;
      out["step_s"] = updated - start;
      out["rollout_tokens"] = tokens;
      out["peak_gib"] = peakGiB();
      std::printf("dice-train RL step (%s, LoRA rank %ld, %ld rollouts x %ld tokens, "
                  "prompt %ld): generate %.2f s, TraceRL update %.2f s, peak %.1f GiB\n",
                  o.shape.c_str(), long(o.loraRank), long(o.rollouts), long(o.maxTokens),
                  long(o.promptTokens), generated - start, updated - generated, peakGiB());
    }
  }
  return 0;
}

} // namespace

int runTrainBench(const TrainBenchOptions &o) {
  try {
    ModelConfig config = sdarShape(o.shape);
    config.blockSize = 4;
    config.maskTokenId = 151669;
    config.torchDtype = ModelDType::BFloat16;
    nlohmann::json out = {{"mode", o.mode}, {"shape", o.shape}, {"lora_rank", o.loraRank},
                          {"recompute", o.recompute}, {"samples", o.samples},
                          {"prompt_tokens", o.promptTokens},
                          {"answer_tokens", o.answerTokens}, {"rollouts", o.rollouts},
                          {"max_tokens", o.maxTokens}};
    int rc = o.mode == "sft" ? sftBench(o, config, out) : rlBench(o, config, out);
    if (rc == 0 && !o.jsonPath.empty())
      std::ofstream(o.jsonPath) << out.dump(2) << "\n";
    return rc;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dice-bench: %s\n", e.what());
    return 1;
  }
}

} // namespace dice
