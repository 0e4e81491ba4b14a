//===- SamplerTest.cpp - block-diffusion sampling rules -------------------===//
//
// The sampler runs against a scripted denoiser whose logits the test chooses,
// and every rule is checked token by token against a plain-loop reference
// written here.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/BlockDiffusionSampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

using namespace dice;

namespace {

constexpr int64_t vocab = 16, maskId = 15;
const std::vector<int64_t> stopIds = {13, 14};

/// Logits of one position: (row, absolute position, denoising call since
/// the last commit) -> [V].
using Script = std::function<std::vector<float>(int64_t, int64_t, int64_t)>;

/// A pseudo-random but reproducible logit in [0, 6), far from ties.
float hashLogit(int64_t row, int64_t position, int64_t call, int64_t token) {
  uint64_t h = uint64_t(row * 1000003 + position * 10007 + call * 101 + token);
  h ^= h >> 13;
  h *= 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return float(h % 6000) / 1000.0f;
}

/// Ordinary tokens only: stop ids and the mask never win.
std::vector<float> noStops(int64_t row, int64_t position, int64_t call) {
  std::vector<float> logits(vocab);
  for (int64_t t = 0; t < vocab; ++t)
    logits[size_t(t)] = hashLogit(row, position, call, t);
  for (int64_t t : {int64_t(13), int64_t(14), maskId})
    logits[size_t(t)] = -20;
  return logits;
}

class ScriptedDenoiser : public Denoiser {
public:
  explicit ScriptedDenoiser(Script script) : script(std::move(script)) {}

  torch::Device device() const override { return torch::kCPU; }
  void start(const torch::Tensor &prefix, int64_t batch, int64_t capacity,
             int64_t blockSize) override {
    EXPECT_EQ(prefix.numel() % blockSize, 0);
    length = prefix.numel();
    this->batch = batch;
    this->capacity = capacity;
    prefixes.push_back(prefix.clone());
    calls = 0;
  }
  torch::Tensor denoise(const torch::Tensor &block) override {
    EXPECT_EQ(block.size(0), batch);
    EXPECT_LE(length + block.size(1), capacity);
    torch::Tensor logits = torch::empty({batch, block.size(1), vocab});
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t j = 0; j < block.size(1); ++j)
        logits[r][j] = torch::tensor(script(r, length + j, calls));
    ++calls;
    ++totalCalls;
    return logits;
  }
  void commit(const torch::Tensor &block) override {
    commits.push_back(block.clone());
    length += block.size(1);
    calls = 0;
  }

  Script script;
  int64_t length = 0, batch = 0, capacity = 0, calls = 0, totalCalls = 0;
  std::vector<torch::Tensor> prefixes, commits;
};

// --- A reference written with loops -------------------------------------

/// Positions a rule unmasks in one row (static/dynamic by confidence, ties
/// to the left; sequential from the left).
std::vector<bool> referenceSelect(Remasking rule, const std::vector<bool> &masked,
                                  const std::vector<float> &conf, int64_t n,
                                  double threshold) {
  size_t b = masked.size();
  std::vector<size_t> order;
  for (size_t j = 0; j < b; ++j)
    if (masked[j])
      order.push_back(j);
  std::vector<bool> chosen(b, false);
  if (rule == Remasking::Sequential) {
    for (size_t k = 0; k < order.size() && int64_t(k) < n; ++k)
      chosen[order[k]] = true;
    return chosen;
  }
  if (rule == Remasking::Dynamic) {
    int64_t confident = 0;
    for (size_t j : order)
      confident += conf[j] > threshold;
    if (confident >= n) {
      for (size_t j : order)
        chosen[j] = conf[j] > threshold;
      return chosen;
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t c) { return conf[a] > conf[c]; });
  for (size_t k = 0; k < order.size() && int64_t(k) < n; ++k)
    chosen[order[k]] = true;
  return chosen;
}

/// Greedy block-diffusion decoding of `n` rows, one row at a time.
std::vector<Candidate> referenceDecode(const Script &script,
                                       const std::vector<int32_t> &prompt, int n,
                                       const SamplingConfig &c) {
  const int64_t b = c.blockLength, p = int64_t(prompt.size());
  const int64_t prefilled = p / b * b, tail = p - prefilled;
  const int64_t blocks = (tail + c.maxTokens + b - 1) / b;
  std::vector<int64_t> schedule(size_t(c.denoisingSteps), b / c.denoisingSteps);
  for (int64_t s = 0; s < b % c.denoisingSteps; ++s)
    ++schedule[size_t(s)];
  auto isStop = [](int64_t t) { return t == 13 || t == 14; };

  std::vector<std::vector<int64_t>> x(static_cast<size_t>(n)), step(static_cast<size_t>(n));
  std::vector<std::vector<float>> prob(static_cast<size_t>(n));
  std::vector<bool> running(size_t(n), true);
  std::vector<int64_t> rowSteps(size_t(n), 0);
  for (auto &row : x) {
    row.assign(size_t(blocks * b), maskId);
    std::copy(prompt.begin() + prefilled, prompt.end(), row.begin());
  }
  for (int r = 0; r < n; ++r) {
    step[size_t(r)].assign(size_t(blocks * b), -1);
    prob[size_t(r)].assign(size_t(blocks * b), 0);
  }
  int64_t done = 0;
  for (int64_t k = 0; k < blocks; ++k) {
    for (int64_t s = 0; s < c.denoisingSteps; ++s) {
      bool anyMasked = false;
      for (int r = 0; r < n; ++r)
        for (int64_t j = 0; j < b; ++j)
          anyMasked |= running[size_t(r)] && x[size_t(r)][size_t(k * b + j)] == maskId;
      if (!anyMasked)
        break;
      for (int r = 0; r < n; ++r) {
        std::vector<bool> masked(static_cast<size_t>(b));
        std::vector<float> conf(static_cast<size_t>(b));
        std::vector<int64_t> best(static_cast<size_t>(b));
        for (int64_t j = 0; j < b; ++j) {
          masked[size_t(j)] = running[size_t(r)] && x[size_t(r)][size_t(k * b + j)] == maskId;
          std::vector<float> l = script(r, prefilled + k * b + j, s);
          auto top = std::max_element(l.begin(), l.end());
          double z = 0;
          for (float v : l)
            z += std::exp(double(v) - *top);
          best[size_t(j)] = top - l.begin();
          conf[size_t(j)] = float(1.0 / z);
        }
        if (std::none_of(masked.begin(), masked.end(), [](bool m) { return m; }))
          continue;
        std::vector<bool> chosen =
            referenceSelect(c.remasking, masked, conf, schedule[size_t(s)], c.threshold);
        for (int64_t j = 0; j < b; ++j)
          if (chosen[size_t(j)]) {
            x[size_t(r)][size_t(k * b + j)] = best[size_t(j)];
            step[size_t(r)][size_t(k * b + j)] = rowSteps[size_t(r)];
            prob[size_t(r)][size_t(k * b + j)] = conf[size_t(j)];
          }
        ++rowSteps[size_t(r)];
      }
    }
    done = k + 1;
    for (int r = 0; r < n; ++r)
      for (int64_t j = k == 0 ? tail : 0; j < b; ++j)
        if (running[size_t(r)] && isStop(x[size_t(r)][size_t(k * b + j)]))
          running[size_t(r)] = false;
    if (done * b - tail >= c.maxTokens ||
        std::none_of(running.begin(), running.end(), [](bool v) { return v; }))
      break;
  }
  std::vector<Candidate> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    for (int64_t j = tail; j < tail + std::min(done * b - tail, c.maxTokens); ++j) {
      out[size_t(r)].tokens.push_back(int32_t(x[size_t(r)][size_t(j)]));
      out[size_t(r)].unmaskStep.push_back(int32_t(step[size_t(r)][size_t(j)]));
      out[size_t(r)].probability.push_back(prob[size_t(r)][size_t(j)]);
      if (isStop(x[size_t(r)][size_t(j)])) {
        out[size_t(r)].stopped = true;
        break;
      }
    }
  }
  return out;
}

SamplingConfig greedy(Remasking rule, int64_t block, int64_t steps, int64_t maxTokens) {
  SamplingConfig c;
  c.blockLength = block;
  c.denoisingSteps = steps;
  c.remasking = rule;
  c.temperature = 0;
  c.topK = 0;
  c.topP = 1;
  c.maxTokens = maxTokens;
  c.threshold = 0.3;
  return c;
}

std::vector<Candidate> run(ScriptedDenoiser &denoiser, const std::vector<int32_t> &prompt,
                           int n, const SamplingConfig &config, uint64_t seed = 0) {
  BlockDiffusionSampler sampler(denoiser, {maskId, stopIds, seed});
  Result<std::vector<Candidate>> out =
      sampler.generateCandidates(prompt, n, config);
  EXPECT_TRUE(out) << (out ? "" : out.error().format());
  return out ? *out : std::vector<Candidate>{};
}

void expectSame(const std::vector<Candidate> &got, const std::vector<Candidate> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].tokens, want[r].tokens) << "row " << r;
    EXPECT_EQ(got[r].unmaskStep, want[r].unmaskStep) << "row " << r;
    ASSERT_EQ(got[r].probability.size(), want[r].probability.size());
    for (size_t j = 0; j < got[r].probability.size(); ++j)
      EXPECT_NEAR(got[r].probability[j], want[r].probability[j], 1e-5) << r << "," << j;
    EXPECT_EQ(got[r].stopped, want[r].stopped) << "row " << r;
  }
}

// --- Pure functions -------------------------------------------------------

TEST(UnmaskSchedule, SpreadsTheRemainderOverTheFirstSteps) {
  EXPECT_EQ(unmaskSchedule(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(unmaskSchedule(4, 3), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(unmaskSchedule(5, 2), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(unmaskSchedule(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST(SelectUnmasked, EveryRuleMatchesTheReference) {
  torch::manual_seed(0);
  for (Remasking rule : {Remasking::Static, Remasking::Dynamic, Remasking::Sequential})
    for (int trial = 0; trial < 50; ++trial) {
      const int64_t n = 3, b = 6;
      // Quarter steps make ties common: they must go to the left.
      torch::Tensor conf = torch::randint(0, 5, {n, b}).to(torch::kFloat32) / 4;
      torch::Tensor masked = torch::rand({n, b}) < 0.6;
      for (int64_t count = 0; count <= b; ++count) {
        torch::Tensor got = selectUnmasked(rule, masked, conf, count, 0.5);
        for (int64_t r = 0; r < n; ++r) {
          std::vector<bool> m(static_cast<size_t>(b));
          std::vector<float> c(static_cast<size_t>(b));
          for (int64_t j = 0; j < b; ++j) {
            m[size_t(j)] = masked[r][j].item<bool>();
            c[size_t(j)] = conf[r][j].item<float>();
          }
          std::vector<bool> want = referenceSelect(rule, m, c, count, 0.5);
          for (int64_t j = 0; j < b; ++j)
            ASSERT_EQ(got[r][j].item<bool>(), want[size_t(j)])
                << toString(rule) << " trial " << trial << " n " << count
                << " row " << r << " pos " << j;
        }
      }
    }
}

TEST(SampleTokens, GreedyTakesTheArgmaxWithItsProbability) {
  torch::Tensor logits = torch::tensor({{1.0f, 3.0f, 2.0f}, {0.5f, 0.0f, -1.0f}});
  auto [tokens, probs] = sampleTokens(logits, 0, 0, 1, std::nullopt);
  EXPECT_EQ(tokens[0].item<int64_t>(), 1);
  EXPECT_EQ(tokens[1].item<int64_t>(), 0);
  torch::Tensor want = torch::softmax(logits, -1).amax(-1);
  EXPECT_TRUE(torch::allclose(probs, want));
}

TEST(SampleTokens, TopKOneIsCertain) {
  torch::Tensor logits = torch::tensor({{1.0f, 3.0f, 2.0f}});
  auto gen = at::detail::createCPUGenerator(1);
  auto [tokens, probs] = sampleTokens(logits, 1.0, 1, 1, gen);
  EXPECT_EQ(tokens[0].item<int64_t>(), 1);
  EXPECT_FLOAT_EQ(probs[0].item<float>(), 1.0f);
}

TEST(SampleTokens, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: mass before each is 0, .5, .8, .95.
  torch::Tensor logits =
      torch::log(torch::tensor({0.5f, 0.3f, 0.15f, 0.05f})).expand({2000, 4});
  auto gen = at::detail::createCPUGenerator(3);
  auto [tokens, probs] = sampleTokens(logits, 1.0, 0, 0.6, gen);
  EXPECT_EQ(tokens.max().item<int64_t>(), 1); // only tokens 0 and 1 remain
  EXPECT_EQ(tokens.min().item<int64_t>(), 0);
  torch::Tensor first = probs.masked_select(tokens == 0);
  EXPECT_NEAR(first[0].item<float>(), 0.5 / 0.8, 1e-5);
  double share = (tokens == 0).to(torch::kFloat32).mean().item<double>();
  EXPECT_NEAR(share, 0.625, 0.05);
}

TEST(SampleTokens, TemperatureScalesTheLogits) {
  torch::Tensor logits = torch::tensor({{1.0f, 2.0f}}).expand({4000, 2});
  auto gen = at::detail::createCPUGenerator(5);
  auto [tokens, probs] = sampleTokens(logits, 2.0, 0, 1, gen);
  float p1 = torch::softmax(torch::tensor({0.5f, 1.0f}), 0)[1].item<float>();
  EXPECT_NEAR(probs.masked_select(tokens == 1)[0].item<float>(), p1, 1e-6);
  EXPECT_NEAR((tokens == 1).to(torch::kFloat32).mean().item<double>(), p1, 0.03);
}

// --- The sampler against the reference -----------------------------------

struct Case {
  Remasking rule;
  int64_t block, steps, maxTokens, promptLength;
};

class SamplerVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(SamplerVsReference, TokenByToken) {
  Case c = GetParam();
  std::vector<int32_t> prompt(size_t(c.promptLength));
  std::iota(prompt.begin(), prompt.end(), 1);
  SamplingConfig config = greedy(c.rule, c.block, c.steps, c.maxTokens);
  ScriptedDenoiser denoiser(noStops);
  std::vector<Candidate> got = run(denoiser, prompt, 3, config);
  expectSame(got, referenceDecode(noStops, prompt, 3, config));
  for (const Candidate &cand : got) {
    EXPECT_EQ(int64_t(cand.tokens.size()), c.maxTokens);
    EXPECT_FALSE(cand.stopped);
  }
  // The prefilled prefix is the prompt's whole blocks.
  ASSERT_EQ(denoiser.prefixes.size(), 1u);
  EXPECT_EQ(denoiser.prefixes[0].numel(), c.promptLength / c.block * c.block);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, SamplerVsReference,
    ::testing::Values(Case{Remasking::Static, 4, 4, 16, 8},
                      Case{Remasking::Static, 4, 2, 13, 6},
                      Case{Remasking::Static, 4, 3, 12, 7},
                      Case{Remasking::Dynamic, 4, 4, 16, 8},
                      Case{Remasking::Dynamic, 4, 2, 11, 5},
                      Case{Remasking::Dynamic, 8, 4, 24, 3},
                      Case{Remasking::Sequential, 4, 4, 16, 8},
                      Case{Remasking::Sequential, 4, 2, 9, 10},
                      Case{Remasking::Static, 1, 1, 5, 3}));

TEST(Sampler, StaticRecordsOneStepPerScheduledToken) {
  ScriptedDenoiser denoiser(noStops);
  std::vector<Candidate> got =
      run(denoiser, {1, 2, 3, 4}, 1, greedy(Remasking::Static, 4, 2, 8));
  ASSERT_EQ(got.size(), 1u);
  std::vector<int32_t> steps = got[0].unmaskStep;
  std::sort(steps.begin(), steps.begin() + 4);
  std::sort(steps.begin() + 4, steps.end());
  EXPECT_EQ(steps, (std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  // Two denoising forwards and one store per block.
  EXPECT_EQ(denoiser.totalCalls, 4);
  EXPECT_EQ(denoiser.commits.size(), 2u);
}

TEST(Sampler, PromptTailOpensTheFirstBlock) {
  ScriptedDenoiser denoiser(noStops);
  std::vector<Candidate> got =
      run(denoiser, {1, 2, 3, 4, 5, 6}, 1, greedy(Remasking::Static, 4, 4, 6));
  ASSERT_EQ(denoiser.commits.size(), 2u);
  // The first committed block holds the prompt's last two tokens.
  EXPECT_EQ(denoiser.commits[0][0][0].item<int64_t>(), 5);
  EXPECT_EQ(denoiser.commits[0][0][1].item<int64_t>(), 6);
  // Two masks in the first block: two steps, then four in the second.
  std::vector<int32_t> steps = got[0].unmaskStep;
  std::sort(steps.begin(), steps.begin() + 2);
  std::sort(steps.begin() + 2, steps.end());
  EXPECT_EQ(steps, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(denoiser.totalCalls, 2 + 4);
  EXPECT_EQ(got[0].tokens.size(), 6u);
}

TEST(Sampler, EachSequenceStopsOnItsOwn) {
  // Row 0 writes a stop id at answer position 5, row 1 never does.
  const int64_t stopAt = 8 + 5;
  Script script = [&](int64_t row, int64_t position, int64_t call) {
    std::vector<float> l = noStops(row, position, call);
    if (row == 0 && position == stopAt)
      l[13] = 50;
    return l;
  };
  ScriptedDenoiser denoiser(script);
  SamplingConfig config = greedy(Remasking::Static, 4, 4, 20);
  std::vector<Candidate> got = run(denoiser, {1, 2, 3, 4, 5, 6, 7, 8}, 2, config);
  expectSame(got, referenceDecode(script, {1, 2, 3, 4, 5, 6, 7, 8}, 2, config));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].stopped);
  EXPECT_EQ(got[0].tokens.size(), 6u);
  EXPECT_EQ(got[0].tokens.back(), 13);
  EXPECT_FALSE(got[1].stopped);
  EXPECT_EQ(got[1].tokens.size(), 20u);

  // When every row has stopped, decoding ends after that block.
  Script both = [&](int64_t row, int64_t position, int64_t call) {
    std::vector<float> l = noStops(row, position, call);
    if (position == stopAt)
      l[14] = 50;
    return l;
  };
  ScriptedDenoiser early(both);
  got = run(early, {1, 2, 3, 4, 5, 6, 7, 8}, 2, config);
  EXPECT_EQ(early.commits.size(), 2u);
  for (const Candidate &c : got) {
    EXPECT_TRUE(c.stopped);
    EXPECT_EQ(c.tokens.size(), 6u);
  }
}

TEST(Sampler, DeterministicForASeed) {
  SamplingConfig config = greedy(Remasking::Dynamic, 4, 4, 16);
  config.temperature = 1.0;
  config.threshold = 0.2;
  ScriptedDenoiser denoiser(noStops);
  BlockDiffusionSampler sampler(denoiser, {maskId, stopIds, 42});
  auto first = sampler.generateCandidates({1, 2, 3}, 4, config);
  auto again = sampler.generateCandidates({1, 2, 3}, 4, config);
  ASSERT_TRUE(first && again);
  expectSame(*again, *first);
  sampler.setSeed(43);
  auto other = sampler.generateCandidates({1, 2, 3}, 4, config);
  ASSERT_TRUE(other);
  bool differs = false;
  for (size_t r = 0; r < 4; ++r)
    differs |= (*other)[r].tokens != (*first)[r].tokens;
  EXPECT_TRUE(differs);
  // Rows of one batch draw different samples.
  EXPECT_NE((*first)[0].tokens, (*first)[1].tokens);
}

TEST(Sampler, InvalidConfigIsAnErrorValue) {
  ScriptedDenoiser denoiser(noStops);
  BlockDiffusionSampler sampler(denoiser, {maskId, stopIds, 0});
  SamplingConfig config;
  config.denoisingSteps = 0;
  auto out = sampler.generateCandidates({1, 2}, 2, config);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("denoising_steps"), std::string::npos);
  EXPECT_FALSE(sampler.generateCandidates({1, 2}, 0, SamplingConfig{}));
}

} // namespace
