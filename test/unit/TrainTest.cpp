//===- TrainTest.cpp - dice-train's pieces on a tiny random model ---------===//
//
// Oracles: the runtime's own transformer (the policy's forward must give its
// logits), the runtime's sampler (TraceRL must rebuild the probability it
// recorded for every token), LibTorch's AdamW (the named, sharded optimizer
// must take its steps), and masks and advantages worked out by hand.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Adapter.h"
#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Train/DiffusionLoss.h"
#include "dice/Train/Optimizer.h"
#include "dice/Train/PolicyModel.h"
#include "dice/Train/TokenLayout.h"
#include "dice/Train/TraceRL.h"
#include "dice/Train/TrainCheckpoint.h"
#include "dice/Train/TrainConfig.h"
#include "dice/Train/TrainData.h"
#include "dice/Train/TrainSession.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace dice;
namespace fs = std::filesystem;

namespace {

ModelConfig tinyConfig(int64_t blockSize = 4) {
  ModelConfig c;
  c.hiddenSize = 32;
  c.intermediateSize = 48;
  c.numHiddenLayers = 2;
  c.numAttentionHeads = 4;
  c.numKeyValueHeads = 2;
  c.headDim = 16;
  c.vocabSize = 40;
  c.blockSize = blockSize;
  c.maskTokenId = 39;
  c.stopTokenIds = {37, 38};
  c.torchDtype = ModelDType::Float32;
  return c;
}

/// tinyConfig as a Qwen2 checkpoint (q/k/v biases, no q/k norms, a tied
/// head) or a Llama one with attention biases (on o_proj too).
ModelConfig tinyFamily(const std::string &family) {
  ModelConfig c = tinyConfig();
  c.modelType = family;
  c.qkNorm = family == "sdar";
  c.qkvBias = family != "sdar";
  c.outputBias = family == "llama";
  c.tieWordEmbeddings = family == "qwen2";
  return c;
}

/// A policy with weights scaled so its distributions are far from uniform,
/// and biases that are not zero (the checks then depend on every weight).
PolicyModel tinyPolicy(const LoraOptions &lora = {}, uint64_t seed = 3,
                       const ModelConfig &config = tinyConfig()) {
  PolicyModel m = PolicyModel::random(config, torch::kCPU, lora, seed);
  torch::NoGradGuard noGrad;
  for (auto &[name, t] : m.trainable())
    if (name.ends_with(".bias"))
      t.normal_(0, 0.5);
    else if (name.find("norm") == std::string::npos)
      t.mul_(name.find("embed") != std::string::npos ? 50 : 25);
  return m;
}

/// A row of one clean sequence (block-causal).
TrainingRow cleanRow(const std::vector<int64_t> &ids, int64_t blockSize) {
  TrainingRow row;
  for (size_t i = 0; i < ids.size(); ++i)
    row.push(ids[i], int64_t(i), blockSize, kClean, 0);
  return row;
}

/// `n` rollouts of `prompt` from the runtime's sampler over `policy`'s
/// weights (temperature 1, no top-k: the RL setting).
std::vector<Candidate> sampleRollouts(const PolicyModel &policy, uint64_t seed,
                                      SamplingConfig sampling,
                                      const std::vector<int32_t> &prompt, int n) {
  Transformer runtime(policy.config(), policy.inferenceWeights(torch::kFloat32));
  TransformerDenoiser denoiser(runtime);
  SamplerOptions options;
  options.maskTokenId = 39;
  options.stopTokenIds = {37, 38};
  options.seed = seed;
  BlockDiffusionSampler sampler(denoiser, options);
  sampling.topK = 0;
  sampling.temperature = 1.0;
  Result<std::vector<Candidate>> out = sampler.generateCandidates(prompt, n, sampling);
  EXPECT_TRUE(out) << out.error().format();
  return out ? out.take() : std::vector<Candidate>();
}

std::string tempDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("dice-train-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

} // namespace

TEST(PolicyModel, GivesTheRuntimeTransformersLogits) {
  for (const std::string family : {"sdar", "qwen2", "llama"}) {
    PolicyModel policy = tinyPolicy({}, 3, tinyFamily(family));
    Transformer runtime(policy.config(), policy.inferenceWeights(torch::kFloat32));
    std::vector<int64_t> ids = {1, 5, 9, 2, 7, 7, 3, 0, 11, 4, 6, 8};
    KVCache cache = runtime.allocateCache(1, 16);
    torch::Tensor expected =
        runtime.prefill(torch::tensor(ids).unsqueeze(0), cache, 4, /*wantLogits=*/true);
    TrainingBatch b = makeBatch({cleanRow(ids, 4)}, 39, torch::kCPU);
    torch::NoGradGuard noGrad;
    torch::Tensor got = policy.logits(policy.hidden(b.ids, b.positions, b.allowed));
    EXPECT_LT((got - expected).abs().max().item<double>(), 1e-4) << family;
    EXPECT_GT(expected.std().item<double>(), 1.0) << family; // far from uniform
    // The block-step path (the sampler's) gives the same logits for the
    // last block as the prefill did.
    KVCache stepCache = runtime.allocateCache(1, 16);
    runtime.prefill(torch::tensor(std::vector<int64_t>(ids.begin(), ids.begin() + 8))
                        .unsqueeze(0),
                    stepCache, 4);
    torch::Tensor step = runtime.denoiseBlock(
        torch::tensor(std::vector<int64_t>(ids.begin() + 8, ids.end())).unsqueeze(0),
        stepCache);
    EXPECT_LT((step - expected.narrow(1, 8, 4)).abs().max().item<double>(), 1e-4)
        << family;
  }
}

TEST(PolicyModel, ParametersAreTheFusedMatricesAndCheckpointsSplitThem) {
  PolicyModel policy = tinyPolicy({}, 3, tinyFamily("qwen2"));
  std::set<std::string> names;
  for (auto &[name, t] : policy.trainable())
    names.insert(name);
  EXPECT_TRUE(names.count("model.layers.1.self_attn.qkv_proj.weight"));
  EXPECT_TRUE(names.count("model.layers.1.self_attn.qkv_proj.bias"));
  EXPECT_TRUE(names.count("model.layers.0.mlp.gate_up_proj.weight"));
  EXPECT_FALSE(names.count("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(names.count("lm_head.weight")); // tied
  // A step on a fused matrix is a step on the checkpoint tensors it holds.
  std::map<std::string, torch::Tensor> before;
  for (auto &[name, t] : policy.checkpointTensors(torch::kFloat32))
    before[name] = t.clone(); // the tensors may share the weights' memory
  {
    torch::NoGradGuard noGrad;
    for (auto &[name, t] : policy.trainable())
      if (name == "model.layers.1.self_attn.qkv_proj.bias")
        t.add_(1.0);
  }
  ModelConfig c = policy.config();
  for (auto &[name, t] : policy.checkpointTensors(torch::kFloat32)) {
    bool moved = name.starts_with("model.layers.1.self_attn.") && name.ends_with("_proj.bias");
    EXPECT_EQ(torch::equal(t, before.at(name)), !moved) << name;
    if (moved)
      EXPECT_TRUE(torch::allclose(t, before.at(name) + 1.0)) << name;
  }
  EXPECT_TRUE(before.count("model.layers.0.self_attn.k_proj.bias"));
  EXPECT_EQ(before.at("model.layers.0.self_attn.q_proj.bias").size(0),
            c.numAttentionHeads * c.headDim);
}

TEST(PolicyModel, LayerRecomputeGivesTheSameGradients) {
  std::vector<int64_t> ids = {1, 5, 9, 2, 7, 7, 3, 0};
  TrainingBatch b = makeBatch({cleanRow(ids, 4)}, 39, torch::kCPU);
  auto gradients = [&](bool recompute, const LoraOptions &lora) {
    PolicyModel m = tinyPolicy(lora);
    // LoRA's B starts at zero; move it so the adapters carry gradients back.
    if (lora.rank > 0) {
      torch::NoGradGuard noGrad;
      for (auto &[name, t] : m.trainable())
        if (name.ends_with(".lora_B.weight"))
          t.fill_(0.01);
    }
    m.setGradientCheckpointing(recompute);
    m.logits(m.hidden(b.ids, b.positions, b.allowed)).pow(2).mean().backward();
    std::vector<torch::Tensor> g;
    for (auto &[name, t] : m.trainable())
      g.push_back(t.grad().clone());
    return g;
  };
  for (const LoraOptions &lora :
       {LoraOptions{}, LoraOptions{4, 8, {"q_proj", "down_proj"}}}) {
    std::vector<torch::Tensor> plain = gradients(false, lora),
                               recomputed = gradients(true, lora);
    ASSERT_EQ(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i)
      EXPECT_TRUE(torch::allclose(plain[i], recomputed[i], 1e-5, 1e-6)) << i;
  }
}

TEST(PolicyModel, LoraStartsAsTheBaseAndMergesItsUpdate) {
  LoraOptions lora{4, 8, {"q_proj", "v_proj", "gate_proj"}};
  PolicyModel m = tinyPolicy(lora);
  // Only adapters train: two per targeted projection per layer.
  EXPECT_EQ(m.trainable().size(), size_t(2 * 3 * 2));
  std::vector<int64_t> ids = {1, 5, 9, 2, 7, 7};
  TrainingBatch b = makeBatch({cleanRow(ids, 4)}, 39, torch::kCPU);
  torch::NoGradGuard noGrad;
  torch::Tensor base = m.logits(m.hidden(b.ids, b.positions, b.allowed));
  for (auto &[name, t] : m.trainable())
    if (name.ends_with(".lora_B.weight"))
      t.normal_(0, 0.05);
  torch::Tensor adapted = m.logits(m.hidden(b.ids, b.positions, b.allowed));
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3);
  // The merged weights (what checkpoints and the sampler get) compute the
  // adapted model.
  Transformer merged(m.config(), m.inferenceWeights(torch::kFloat32));
  KVCache cache = merged.allocateCache(1, 8);
  torch::Tensor fromMerged =
      merged.prefill(torch::tensor(ids).unsqueeze(0), cache, 4, true);
  EXPECT_LT((fromMerged - adapted).abs().max().item<double>(), 1e-4);
}

TEST(TokenLayout, MasksFollowTheBlockDiffusionRules) {
  // One sequence of 6 tokens, blocks of 2, a noisy copy of blocks 1 and 2;
  // then a second sequence of 2 tokens.
  TrainingRow row;
  for (int64_t i = 0; i < 6; ++i)
    row.push(i, i, 2, kClean, 0);
  for (int64_t i = 2; i < 6; ++i)
    row.push(39, i, 2, 0, 0);
  for (int64_t i = 0; i < 2; ++i)
    row.push(i, i, 2, kClean, 1);
  torch::Tensor m = attentionMask(row);
  auto sees = [&](int q, int k) { return m[q][k].item<bool>(); };
  // Clean slot 3 (block 1) sees clean blocks 0-1, not block 2.
  for (int k = 0; k < 4; ++k)
    EXPECT_TRUE(sees(3, k)) << k;
  EXPECT_FALSE(sees(3, 4));
  // Noisy slot 6 (position 2, block 1) sees clean block 0 and its own noisy
  // block, not clean block 1 (its own clean tokens) nor noisy block 2.
  EXPECT_TRUE(sees(6, 0));
  EXPECT_TRUE(sees(6, 1));
  EXPECT_FALSE(sees(6, 2));
  EXPECT_FALSE(sees(6, 3));
  EXPECT_TRUE(sees(6, 7));
  EXPECT_FALSE(sees(6, 8));
  // Noisy slot 8 (block 2) sees clean blocks 0-1 and noisy block 2 only.
  for (int k = 0; k < 4; ++k)
    EXPECT_TRUE(sees(8, k)) << k;
  EXPECT_FALSE(sees(8, 4));
  EXPECT_FALSE(sees(8, 6));
  EXPECT_TRUE(sees(8, 9));
  // No slot sees another sequence; clean slots never see noisy ones.
  for (int q = 0; q < 10; ++q)
    for (int k = 10; k < 12; ++k)
      EXPECT_FALSE(sees(q, k) || sees(k, q));
  for (int q = 0; q < 6; ++q)
    for (int k = 6; k < 10; ++k)
      EXPECT_FALSE(sees(q, k));
}

TEST(TokenLayout, PacksInOrderThenPutsTheLongestRowsFirst) {
  // Capacity 10: [3, 4] fill a row, 9 does not fit beside them, 12 is longer
  // than a row and stands alone, [2, 5] share the last row.
  std::vector<int64_t> slots = {3, 4, 9, 12, 2, 5};
  EXPECT_EQ(packInOrder(slots, 10),
            (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3}, {4, 5}}));
  // Longest first; rows of equal length keep their order.
  EXPECT_EQ(packLongestFirst(slots, 10),
            (std::vector<std::vector<size_t>>{{3}, {2}, {0, 1}, {4, 5}}));
  EXPECT_EQ(packLongestFirst({2, 2, 2}, 2),
            (std::vector<std::vector<size_t>>{{0}, {1}, {2}}));
}

TEST(DiffusionLoss, MasksOnlyAnswerTokensAndWeightsThemByOneOverT) {
  SftSample sample{{1, 2, 3, 4, 5}, std::vector<int32_t>(400, 7)};
  double ratesSeen = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    TrainingRow row;
    torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    double t = appendDiffusionSample(row, sample, 0, 4, 39, gen);
    EXPECT_GE(t, kMinMaskRate);
    EXPECT_LE(t, 1.0);
    EXPECT_EQ(row.size(), sample.slots(4));
    int64_t masked = 0;
    for (int64_t s = 0; s < row.size(); ++s) {
      bool isMask = row.ids[size_t(s)] == 39;
      EXPECT_EQ(isMask, row.targets[size_t(s)] >= 0);
      if (!isMask)
        continue;
      ++masked;
      EXPECT_NE(row.copies[size_t(s)], kClean);
      EXPECT_GE(row.positions[size_t(s)], 5); // never a prompt token
      EXPECT_EQ(row.targets[size_t(s)], 7);
      EXPECT_FLOAT_EQ(row.weights[size_t(s)], float(1 / t));
    }
    ratesSeen += std::abs(double(masked) / 400 - t);
  }
  EXPECT_LT(ratesSeen / 20, 0.06); // each token masked with probability t
}

TEST(DiffusionLoss, FallsWhenTrainedOnASample) {
  PolicyModel m = tinyPolicy({}, 5);
  TrainConfig config;
  config.lr = 3e-3;
  auto dist = Distributed::fromEnvironment(torch::kCPU).take();
  AdamW opt(m.trainable(), config, *dist);
  SftSample sample{{1, 2, 3}, {4, 5, 6, 7, 8, 9, 10, 11}};
  auto lossAt = [&](uint64_t seed) {
    TrainingRow row;
    torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    appendDiffusionSample(row, sample, 0, 4, 39, gen);
    return diffusionLossSum(m, makeBatch({row}, 39, torch::kCPU)) / 8.0;
  };
  double before = 0, after = 0;
  {
    torch::NoGradGuard noGrad;
    for (uint64_t s = 100; s < 110; ++s)
      before += lossAt(s).item<double>();
  }
  for (uint64_t step = 0; step < 40; ++step) {
    lossAt(step).backward();
    opt.step(config.lr);
    opt.zeroGrad();
  }
  torch::NoGradGuard noGrad;
  for (uint64_t s = 100; s < 110; ++s)
    after += lossAt(s).item<double>();
  EXPECT_LT(after, 0.5 * before);
}

class TraceRebuild : public ::testing::TestWithParam<Remasking> {};

TEST_P(TraceRebuild, GivesEveryTokenTheProbabilityTheSamplerRecorded) {
  PolicyModel policy = tinyPolicy({}, 11);
  SamplingConfig sampling;
  sampling.remasking = GetParam();
  sampling.threshold = 0.3;
  sampling.maxTokens = 23; // not a whole number of blocks
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2}; // nor is the prompt
  std::vector<Candidate> out = sampleRollouts(policy, 7, sampling, prompt, 3);
  ASSERT_EQ(out.size(), 3u);

  int64_t checked = 0;
  for (const Candidate &c : out) {
    RolloutTrace trace{prompt, c.tokens, c.unmaskStep, c.probability,
                       c.trailingTokens, c.trailingSteps};
    TrainingRow row;
    int64_t slots = appendTrace(row, trace, 0, 4, 39, 0);
    EXPECT_EQ(slots, traceSlots(trace, 4));
    TrainingBatch b = makeBatch({row}, 39, torch::kCPU);
    ASSERT_EQ(b.targets.numel(), int64_t(c.tokens.size())); // each token once
    torch::NoGradGuard noGrad;
    torch::Tensor logp = targetLogProbs(policy, b);
    for (int64_t k = 0; k < logp.numel(); ++k) {
      int64_t j = b.tags[k].item<int64_t>();
      EXPECT_EQ(b.targets[k].item<int64_t>(), c.tokens[size_t(j)]);
      EXPECT_NEAR(std::exp(logp[k].item<double>()), c.probability[size_t(j)], 1e-4)
          << "token " << j << " unmasked at step " << c.unmaskStep[size_t(j)];
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Remasking, TraceRebuild,
                         ::testing::Values(Remasking::Static, Remasking::Dynamic));

TEST(TraceRL, AdvantagesAreZScoresAndEqualGroupsAreDropped) {
  std::vector<std::optional<double>> a = groupAdvantages({1, 0, 0, 1});
  ASSERT_TRUE(a[0] && a[1]);
  EXPECT_NEAR(*a[0], 1.0, 1e-5); // mean 0.5, population std 0.5
  EXPECT_NEAR(*a[1], -1.0, 1e-5);
  std::vector<std::optional<double>> b = groupAdvantages({1, 0, 0, 0});
  EXPECT_NEAR(*b[0], 0.75 / std::sqrt(0.1875), 1e-5);
  for (const auto &x : groupAdvantages({1, 1, 1}))
    EXPECT_FALSE(x);
  for (const auto &x : groupAdvantages({0, 0}))
    EXPECT_FALSE(x);
}

TEST(TraceRL, PolicyLossClipsAndItsKLVanishesOnThePolicyItself) {
  torch::Tensor old = torch::log(torch::tensor({0.5, 0.5, 0.5, 0.5}));
  torch::Tensor now = torch::log(torch::tensor({0.5, 0.9, 0.2, 0.55}));
  torch::Tensor adv = torch::tensor({1.0, 1.0, -1.0, -1.0});
  PolicyLossParts p = policyLoss(now, old, adv, 0.2);
  // ratios 1, 1.8 (clipped to 1.2 for A > 0), 0.4 (clipped to 0.8: min is
  // -0.8 for A < 0), 1.1.
  EXPECT_NEAR(p.surrogateSum.item<double>(), 1.0 + 1.2 - 0.8 - 1.1, 1e-5);
  EXPECT_EQ(p.clipped, 2);
  PolicyLossParts same = policyLoss(old, old, adv, 0.2);
  EXPECT_NEAR(same.klSum.item<double>(), 0.0, 1e-7);
  EXPECT_GT(p.klSum.item<double>(), 0.0);
}

TEST(Optimizer, TakesLibTorchAdamWsSteps) {
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({5, 3}).set_requires_grad(true);
  torch::Tensor b = torch::randn({7}).set_requires_grad(true);
  torch::Tensor a2 = a.detach().clone().set_requires_grad(true);
  torch::Tensor b2 = b.detach().clone().set_requires_grad(true);
  TrainConfig config;
  config.lr = 1e-2;
  config.weightDecay = 0.1;
  config.beta1 = 0.8;
  config.beta2 = 0.95;
  config.eps = 1e-6;
  auto dist = Distributed::fromEnvironment(torch::kCPU).take();
  AdamW ours({{"a", a}, {"b", b}}, config, *dist);
  torch::optim::AdamW theirs(
      std::vector<torch::Tensor>{a2, b2},
      torch::optim::AdamWOptions(1e-2).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1));
  for (int step = 0; step < 5; ++step) {
    (a.pow(3).sum() + (b * b.sin()).sum()).backward();
    (a2.pow(3).sum() + (b2 * b2.sin()).sum()).backward();
    ours.step(1e-2);
    theirs.step();
    ours.zeroGrad();
    theirs.zero_grad();
  }
  EXPECT_TRUE(torch::allclose(a, a2, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(b, b2, 1e-5, 1e-6));
}

TEST(Optimizer, LearningRateWarmsUpThenFollowsTheSchedule) {
  TrainConfig c;
  c.lr = 1.0;
  c.steps = 11;
  c.warmupSteps = 2;
  EXPECT_DOUBLE_EQ(learningRate(c, 0), 0.5);
  EXPECT_DOUBLE_EQ(learningRate(c, 1), 1.0);
  EXPECT_DOUBLE_EQ(learningRate(c, 7), 1.0); // constant
  c.schedule = "cosine";
  c.minLrRatio = 0.1;
  EXPECT_NEAR(learningRate(c, 2), 1.0, 1e-12);
  EXPECT_NEAR(learningRate(c, 10), 0.1, 1e-12);
  EXPECT_NEAR(learningRate(c, 6), 0.55, 1e-12); // halfway
}

TEST(TaskSchedule, DrawsSingleOpsThenFusionsThenModels) {
  std::vector<TaskPackRow> tasks(9);
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].level = int64_t(3 - i % 3); // levels 3, 2, 1, 3, 2, 1, ...
  TaskSchedule order(tasks, {}, 1);
  std::vector<int64_t> levels;
  for (int64_t step = 0; step < 3; ++step)
    for (size_t t : order.tasksOfStep(step, 3))
      levels.push_back(tasks[t].level);
  EXPECT_EQ(levels, (std::vector<int64_t>{1, 1, 1, 2, 2, 2, 3, 3, 3}));

  TaskSchedule staged(tasks, {2, 4}, 1);
  for (int64_t step = 0; step < 6; ++step)
    for (size_t t : staged.tasksOfStep(step, 5))
      EXPECT_LE(tasks[t].level, staged.maxLevel(step)) << step;
  EXPECT_EQ(staged.maxLevel(0), 1);
  EXPECT_EQ(staged.maxLevel(3), 2);
  EXPECT_EQ(staged.maxLevel(4), 3);

  // The curriculum: easy to hard within a level, levels first.
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].difficulty = int64_t((i * 5) % 7);
  TaskSchedule curriculum(tasks, {}, 1, true);
  std::vector<size_t> drawn = curriculum.tasksOfStep(0, 9);
  for (size_t k = 1; k < drawn.size(); ++k) {
    const TaskPackRow &a = tasks[drawn[k - 1]], &b = tasks[drawn[k]];
    EXPECT_TRUE(a.level < b.level || (a.level == b.level && a.difficulty <= b.difficulty)) << k;
  }
  std::vector<size_t> plain = TaskSchedule(tasks, {}, 1).tasksOfStep(0, 9);
  EXPECT_NE(drawn, plain); // without it, a level stays shuffled
}

TEST(SftCurriculum, DrawsTheEasiestFirstAndEverythingAfterTheRamp) {
  std::vector<SftSample> samples(100);
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i].difficulty = int64_t((i * 7) % 10); // ten of each, interleaved
  SftCurriculum curriculum(samples, 3, 10);
  EXPECT_EQ(curriculum.allowed(0), 10u); // the easiest tenth
  EXPECT_EQ(curriculum.allowed(5), 55u);
  EXPECT_EQ(curriculum.allowed(10), 100u);
  EXPECT_EQ(curriculum.allowed(400), 100u);
  std::set<size_t> first, last;
  for (int64_t place = 0; place < 2000; ++place) {
    size_t early = curriculum.draw(0, place);
    EXPECT_EQ(samples[early].difficulty, 0) << place;
    first.insert(early);
    last.insert(curriculum.draw(10, place));
  }
  EXPECT_EQ(first.size(), 10u); // every easiest sample, not one over and over
  EXPECT_EQ(last.size(), 100u); // after the ramp, every sample
  // A function of the step and the place: a resumed run draws the same.
  SftCurriculum again(samples, 3, 10);
  for (int64_t place = 0; place < 50; ++place)
    EXPECT_EQ(again.draw(7, place), curriculum.draw(7, place));
}

TEST(TrainConfig, ErrorsNameTheFileLineAndKey) {
  Result<TrainConfig> bad = parseTrainConfig("[optim]\nlr = 1e-4\nlearning_rate = 2\n", "t.toml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().line, 3u);
  EXPECT_EQ(bad.error().key, "optim.learning_rate");
  Result<TrainConfig> type = parseTrainConfig("[rl]\nrollouts = \"many\"\n", "t.toml");
  ASSERT_FALSE(type);
  EXPECT_EQ(type.error().key, "rl.rollouts");
  Result<TrainConfig> sampling =
      parseTrainConfig("[sampling]\ntop_k = -1\n", "t.toml");
  ASSERT_FALSE(sampling);
  EXPECT_EQ(sampling.error().line, 2u);
  Result<TrainConfig> good = parseTrainConfig(
      "[run]\nstage = \"rl-infill\"\n[sampling]\nremasking = \"dynamic\"\n"
      "[lora]\nrank = 8\ntargets = [\"q_proj\"]\n[rl]\nlevel_steps = [10, 20]\n",
      "t.toml");
  ASSERT_TRUE(good) << good.error().format();
  EXPECT_EQ(good->stage, TrainStage::RlInfill);
  EXPECT_EQ(good->dice.sampling.remasking, Remasking::Dynamic);
  EXPECT_EQ(good->loraRank, 8);
  EXPECT_EQ(good->levelSteps, (std::vector<int64_t>{10, 20}));
  EXPECT_FALSE(parseTrainConfig("[lora]\ntargets = [\"qproj\"]\n", "t.toml"));
  EXPECT_FALSE(parseTrainConfig("[rl]\nlevel_steps = [20, 10]\n", "t.toml"));
  TrainConfig c;
  EXPECT_TRUE(applyTrainOverride(c, "optim.lr", "0.5"));
  EXPECT_DOUBLE_EQ(c.lr, 0.5);
  EXPECT_FALSE(applyTrainOverride(c, "optim.nope", "1"));
}

// dice-train's keys and dice.toml's are read by one schema mechanism: the
// same words for the same mistake, and dice.toml's relations between its
// keys hold in the sections dice-train takes from it.
TEST(TrainConfig, SaysWhatDiceTomlSaysForTheSameMistake) {
  auto message = [](const char *text) {
    Result<TrainConfig> train = parseTrainConfig(text, "t.toml");
    Result<Config> dice = parseConfig(text, "dice.toml");
    EXPECT_FALSE(train);
    EXPECT_FALSE(dice);
    if (train || dice)
      return std::string();
    EXPECT_EQ(train.error().message, dice.error().message) << text;
    EXPECT_EQ(train.error().line, dice.error().line) << text;
    EXPECT_EQ(train.error().column, dice.error().column) << text;
    return train.error().message;
  };
  EXPECT_EQ(message("[sampling]\ntop_k = 1.5\n"), "must be an integer, got a float");
  EXPECT_EQ(message("[verifier]\nrtol = 2\n"), "must be in [0, 1], got 2");
  EXPECT_EQ(message("[sampling]\nblock_length = 4\ndenoising_steps = 8\n"),
            "must not exceed sampling.block_length (4): each step unmasks at "
            "least one token");
  // The kinds only dice-train has, worded the same way.
  Result<TrainConfig> flag =
      parseTrainConfig("[model]\nrandom_init = 1\n", "t.toml");
  ASSERT_FALSE(flag);
  EXPECT_EQ(flag.error().message, "must be true or false, got an integer");
  Result<TrainConfig> order =
      parseTrainConfig("[rl]\nlevel_steps = [20, 10]\n", "t.toml");
  ASSERT_FALSE(order);
  EXPECT_EQ(order.error().message, "must be increasing, got 10 after 20");
  EXPECT_EQ(order.error().column, 20u) << "at the entry at fault";
  // An override that fails leaves the configuration as it was.
  TrainConfig c;
  c.dice.sampling.blockLength = 4;
  EXPECT_FALSE(applyTrainOverride(c, "sampling.denoising_steps", "8"));
  EXPECT_EQ(c.dice.sampling.denoisingSteps, TrainConfig().dice.sampling.denoisingSteps);
}

TEST(TrainData, ReadsPublishedRowsAndNamesTheLineOfABadOne) {
  std::string dir = tempDir("data");
  std::string good = dir + "/dice.jsonl";
  std::ofstream(good)
      << R"({"id": 7, "pytorch_code": "class Model: pass", "cuda_code": "full", )"
         R"("prefix": "import torch\n", "middle": "source = \"\"\"k\"\"\"", "suffix": "s"})"
      << "\n\n"
      << R"({"pytorch_code": "p", "cuda_code": "c", "level": "2", "difficulty": 5})" << "\n";
  Result<std::vector<SftRow>> rows = loadSftRows(good);
  ASSERT_TRUE(rows) << rows.error().format();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_TRUE((*rows)[0].infill());
  EXPECT_EQ((*rows)[0].id, "7");
  EXPECT_FALSE((*rows)[1].infill());
  EXPECT_EQ((*rows)[1].level, 2);
  EXPECT_EQ((*rows)[0].difficulty, 0);
  EXPECT_EQ((*rows)[1].difficulty, 5);

  std::string bad = dir + "/bad.jsonl";
  std::ofstream(bad) << R"({"pytorch_code": "p", "cuda_code": "c", "level": 1})" << "\n"
                     << R"({"pytorch_code": "p", "cuda_code": 3, "level": 1})" << "\n";
  Result<std::vector<SftRow>> e = loadSftRows(bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().file, bad);
  EXPECT_EQ(e.error().line, 2u);
  EXPECT_EQ(e.error().key, "cuda_code");
  std::string harder = dir + "/difficulty.jsonl";
  std::ofstream(harder) << R"({"pytorch_code": "p", "cuda_code": "c", "difficulty": -1})" << "\n";
  Result<std::vector<SftRow>> d = loadSftRows(harder);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().key, "difficulty");

  std::string pack = dir + "/pack.jsonl";
  std::ofstream(pack) << R"({"id": "t", "level": 1, "fingerprint": "f", "signature": "s",)"
                         R"( "infill_prompt": "a", "end_to_end_prompt": "b"})" << "\n";
  Result<std::vector<TaskPackRow>> p = loadTaskPack(pack);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().key, "program");
  EXPECT_EQ(p.error().line, 1u);
}

TEST(TrainCheckpoint, RoundTripsWeightsAndShards) {
  std::string dir = tempDir("ckpt");
  PolicyModel m = tinyPolicy();
  // A config.json to copy: the tiny config as the runtime reads it.
  std::string source = dir + "/source";
  fs::create_directories(source);
  std::ofstream(source + "/config.json")
      << R"({"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,)"
         R"( "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,)"
         R"( "vocab_size": 40, "block_size": 4, "mask_token_id": 39,)"
         R"( "eos_token_id": 38, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6})";
  CheckpointContents c;
  c.model = m.checkpointTensors(torch::kFloat32);
  c.state = {12, "sft", 96, 5, 2, false};
  ASSERT_TRUE(writeCheckpoint(dir + "/step-000012", source, c, /*shardMb=*/0.01));
  EXPECT_TRUE(fs::exists(dir + "/step-000012/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir + "/step-000012.partial"));
  EXPECT_EQ(latestCheckpoint(dir), dir + "/step-000012");
  Result<PolicyModel> back = PolicyModel::load(dir + "/step-000012", torch::kCPU, {});
  ASSERT_TRUE(back) << back.error().format();
  auto theirs = back->checkpointTensors(torch::kFloat32);
  ASSERT_EQ(theirs.size(), c.model.size());
  for (size_t i = 0; i < theirs.size(); ++i) {
    EXPECT_EQ(theirs[i].first, c.model[i].first);
    EXPECT_TRUE(torch::equal(theirs[i].second, c.model[i].second)) << theirs[i].first;
  }
  Result<TrainState> s = readTrainState(dir + "/step-000012");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 12);
  EXPECT_EQ(s->dataPosition, 96);
  EXPECT_EQ(s->worldSize, 2);
}

TEST(TrainCheckpoint, LoraAdapterRoundTripsOverItsBase) {
  // For a tied head (qwen2) and an untied one (sdar): the adapter folder a
  // LoRA checkpoint holds, merged into its base by the runtime or restored
  // into a policy over the base (a resume), computes the trained policy.
  for (const std::string family : {"qwen2", "sdar"}) {
    SCOPED_TRACE(family);
    std::string dir = tempDir("adapter-" + family);
    LoraOptions lora{4, 8, {"q_proj", "v_proj", "down_proj"}, /*trainMaskRow=*/true};
    PolicyModel m = tinyPolicy(lora, 3, tinyFamily(family));
    std::string source = dir + "/source";
    fs::create_directories(source);
    std::ofstream(source + "/config.json")
        << R"({"model_type": ")" << family
        << R"(", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,)"
           R"( "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,)"
           R"( "vocab_size": 40, "block_size": 4, "mask_token_id": 39,)"
           R"( "tie_word_embeddings": )"
        << (family == "qwen2" ? "true" : "false")
        << R"(, "eos_token_id": 38, "torch_dtype": "float32", "rms_norm_eps": 1e-6})";
    // The base: what the policy computes before any update.
    CheckpointContents base;
    base.model = m.checkpointTensors(torch::kFloat32);
    base.state = {0, "sft", 0, 0, 1, false};
    ASSERT_TRUE(writeCheckpoint(dir + "/base", source, base, 100));

    // Only the adapters and the mask's rows train (one row per table).
    std::vector<int64_t> ids = {1, 5, 39, 39, 7, 39, 3, 0};
    TrainingBatch b = makeBatch({cleanRow(ids, 4)}, 39, torch::kCPU);
    size_t rows = family == "qwen2" ? 1 : 2;
    ASSERT_EQ(m.trainable().size(), size_t(2 * 3 * 2) + rows);
    m.logits(m.hidden(b.ids, b.positions, b.allowed)).pow(2).mean().backward();
    for (auto &[name, t] : m.trainable()) {
      if (name.find("trainable_tokens_delta") != std::string::npos) {
        EXPECT_GT(t.grad().abs().max().item<double>(), 0) << name;
      }
    }
    {
      torch::NoGradGuard noGrad;
      for (auto &[name, t] : m.trainable())
        if (!name.ends_with(".lora_A.weight"))
          t.add_(torch::randn_like(t) * (name.ends_with("lora_B.weight") ? 0.05 : 1.0));
    }
    torch::Tensor trained;
    {
      torch::NoGradGuard noGrad;
      trained = m.logits(m.hidden(b.ids, b.positions, b.allowed));
    }
    CheckpointContents c;
    c.model = m.checkpointTensors(torch::kFloat32);
    c.adapters = m.adapterTensors();
    c.adapterSettings = m.adapterSettings();
    c.state = {5, "sft", 40, 0, 1, true};
    ASSERT_TRUE(writeCheckpoint(dir + "/step-000005", source, c, 100));
    std::string adapter = dir + "/step-000005/adapter";

    // The runtime merges the adapter into the base at load.
    Result<std::unique_ptr<Transformer>> merged =
        Transformer::load(dir + "/base", torch::kCPU, torch::kFloat32, adapter);
    ASSERT_TRUE(merged) << merged.error().format();
    KVCache cache = (*merged)->allocateCache(1, 8);
    torch::Tensor fromRuntime =
        (*merged)->prefill(torch::tensor(ids).unsqueeze(0), cache, 4, true);
    EXPECT_LT((fromRuntime - trained).abs().max().item<double>(), 1e-4);

    // A resume: the base, then the adapter's tensors restored by name.
    Result<PolicyModel> resumed = PolicyModel::load(dir + "/base", torch::kCPU, lora);
    ASSERT_TRUE(resumed) << resumed.error().format();
    auto saved = readTensorFile(adapter + "/" + kAdapterWeightsFile);
    ASSERT_TRUE(saved) << saved.error().format();
    ASSERT_TRUE(resumed->restore(*saved));
    torch::NoGradGuard noGrad;
    torch::Tensor again = resumed->logits(resumed->hidden(b.ids, b.positions, b.allowed));
    EXPECT_LT((again - trained).abs().max().item<double>(), 1e-5);

    // An adapter over a base of other shapes is refused, naming the tensor.
    ModelConfig wider = tinyFamily(family);
    wider.intermediateSize = 64;
    Result<Adapter> wrong = readAdapter(adapter, wider);
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().key.find("lora_"), std::string::npos) << wrong.error().format();
  }
}

TEST(TraceRL, UpdatesMoveLikelihoodWithTheAdvantage) {
  // Two rollouts of one prompt from the sampler; the update's objective is
  // the advantage-weighted log-likelihood, so with advantage +1 a rollout
  // gets likelier, with -1 rarer, and with both the gap between them grows.
  SamplingConfig sampling;
  sampling.maxTokens = 12;
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9};
  std::vector<Candidate> out = sampleRollouts(tinyPolicy({}, 13), 21, sampling, prompt, 2);
  ASSERT_EQ(out.size(), 2u);
  std::vector<RolloutTrace> traces;
  for (const Candidate &c : out)
    traces.push_back({prompt, c.tokens, c.unmaskStep, c.probability, c.trailingTokens,
                      c.trailingSteps});
  ASSERT_NE(traces[0].tokens, traces[1].tokens);

  TrainConfig config;
  config.lr = 1e-3;
  config.klCoef = 0;
  config.packLength = 4096;
  auto likelihoodsAfter = [&](const std::vector<double> &advantages) {
    TrainSession session(config);
    session.dist = Distributed::fromEnvironment(torch::kCPU).take();
    session.model = tinyPolicy({}, 13);
    session.optimizer =
        std::make_unique<AdamW>(session.model->trainable(), config, *session.dist);
    std::vector<const RolloutTrace *> batch;
    double tokens = 0;
    for (size_t i = 0; i < advantages.size(); ++i) {
      batch.push_back(&traces[i]);
      tokens += double(traces[i].tokens.size());
    }
    for (int step = 0; step < 2; ++step) {
      PolicyUpdateStats stats = tracePolicyUpdate(session, batch, advantages, tokens);
      EXPECT_EQ(stats.scored, tokens); // every answer token scored once
      session.update(config.lr);
    }
    std::vector<double> ll;
    for (const RolloutTrace &t : traces) {
      TrainingRow row;
      appendTrace(row, t, 0, 4, 39, 0);
      torch::NoGradGuard noGrad;
      ll.push_back(targetLogProbs(*session.model, makeBatch({row}, 39, torch::kCPU))
                       .sum()
                       .item<double>());
    }
    return ll;
  };
  std::vector<double> before;
  for (const RolloutTrace &t : traces) {
    double sum = 0;
    for (float p : t.probability)
      sum += std::log(p);
    before.push_back(sum);
  }
  EXPECT_GT(likelihoodsAfter({1.0})[0], before[0]);
  EXPECT_LT(likelihoodsAfter({0.0, -1.0})[1], before[1]);
  std::vector<double> both = likelihoodsAfter({1.0, -1.0});
  EXPECT_GT(both[0] - both[1], before[0] - before[1]);
}

// What SFT teaches, the runtime's sampler must decode: a policy trained on one
// sample (prompt and answer not whole blocks) reproduces its answer greedily.
// A mismatch between the training layout and the sampler's (block alignment,
// which context a block sees, where the answer starts) fails here.
TEST(DiffusionLoss, TheSamplerDecodesWhatSftTaught) {
  PolicyModel m = PolicyModel::random(tinyConfig(), torch::kCPU, {}, 9);
  TrainConfig config;
  config.lr = 1e-2;
  auto dist = Distributed::fromEnvironment(torch::kCPU).take();
  AdamW opt(m.trainable(), config, *dist);
  SftSample sample{{3, 1, 4, 1, 5, 9, 2},
                   {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 37}};
  for (uint64_t step = 0; step < 300; ++step) {
    TrainingRow row;
    for (uint64_t k = 0; k < 4; ++k) { // four noisy draws per step
      torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(step * 4 + k);
      appendDiffusionSample(row, sample, int64_t(k), 4, 39, gen);
    }
    (diffusionLossSum(m, makeBatch({row}, 39, torch::kCPU)) / 60.0).backward();
    opt.step(config.lr);
    opt.zeroGrad();
  }
  for (Remasking remasking : {Remasking::Static, Remasking::Dynamic}) {
    Transformer runtime(m.config(), m.inferenceWeights(torch::kFloat32));
    TransformerDenoiser denoiser(runtime);
    SamplerOptions options;
    options.maskTokenId = 39;
    options.stopTokenIds = {37, 38};
    BlockDiffusionSampler sampler(denoiser, options);
    SamplingConfig sampling;
    sampling.remasking = remasking;
    sampling.temperature = 0;
    sampling.maxTokens = 32;
    Result<std::vector<Candidate>> out = sampler.generateCandidates(sample.prompt, 1, sampling);
    ASSERT_TRUE(out) << out.error().format();
    std::vector<int32_t> got = (*out)[0].tokens;
    std::vector<int32_t> want = sample.answer;
    ASSERT_GE(got.size(), want.size() - 1);
    got.resize(want.size() - 1); // the answer up to its stop token
    want.pop_back();
    EXPECT_EQ(got, want) << "remasking " << int(remasking);
  }
}

// SFT must train on the prompt the compiler gives: each corpus row's prompt
// (infilling, and end to end) is its task pack's, which the compiler's own
// scaffold wrote.
TEST(TrainData, SftPromptsAreTheCompilersPrompts) {
  const std::string dir = DICE_TRAIN_DIR;
  Result<Tokenizer> tok = Tokenizer::load(dir + "/base");
  ASSERT_TRUE(tok) << tok.error().format();
  Result<std::vector<SftRow>> rows = loadSftRows(dir + "/data/corpus-val.jsonl");
  Result<std::vector<TaskPackRow>> packs = loadTaskPack(dir + "/data/packs-val.jsonl");
  ASSERT_TRUE(rows && packs);
  std::map<std::string, const TaskPackRow *> byId;
  for (const TaskPackRow &p : *packs)
    byId[p.id] = &p;
  ASSERT_GT(rows->size(), 10u);
  for (const SftRow &row : *rows) {
    ASSERT_TRUE(row.infill());
    ASSERT_TRUE(byId.count(row.id)) << row.id;
    EXPECT_EQ(sftPromptAndAnswer(row, *tok).first, byId[row.id]->infillPrompt) << row.id;
    SftRow whole = row;
    whole.prefix = whole.middle = whole.suffix = "";
    EXPECT_EQ(sftPromptAndAnswer(whole, *tok).first, byId[row.id]->endToEndPrompt) << row.id;
  }
}

// With the compiler's [prompt] template files named in data.*_template,
// SFT prompts take their wording; the answer stays the row's code.
TEST(TrainData, SftPromptsFollowTheTemplateFiles) {
  const std::string dir = DICE_TRAIN_DIR;
  Result<Tokenizer> tok = Tokenizer::load(dir + "/base");
  Result<std::vector<SftRow>> rows = loadSftRows(dir + "/data/corpus-val.jsonl");
  ASSERT_TRUE(tok && rows);
  std::string path = testing::TempDir() + "/dice-sft-infill-template.txt";
  std::ofstream(path) << "Kernel of\n{{reference}}between\n{{prefix}}and\n{{suffix}}\n";
  Result<PromptTemplates> templates = PromptTemplates::load(path, "");
  ASSERT_TRUE(templates) << templates.error().format();
  const SftRow &row = rows->front();
  auto [prompt, answer] = sftPromptAndAnswer(row, *tok, *templates);
  auto withLine = [](std::string s) { return s.ends_with("\n") ? s : s + "\n"; };
  EXPECT_EQ(prompt, tok->applyChatTemplate("Kernel of\n" + withLine(row.reference) + "between\n" +
                                           withLine(row.prefix) + "and\n" +
                                           withLine(row.suffix)));
  EXPECT_EQ(answer, sftPromptAndAnswer(row, *tok).second);
  std::remove(path.c_str());
}
