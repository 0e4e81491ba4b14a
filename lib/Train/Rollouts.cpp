//===- Rollouts.cpp - candidates from the policy, verdicts from dice-verify ===//

#include "Rollouts.h"
#include "VerifierProcess.h"

#include "dice/Model/BlockDiffusionSampler.h"

#include <chrono>
#include <filesystem>
#include <cmath>
#include <thread>

namespace dice {

using Clock = std::chrono::steady_clock;

Result<std::vector<TaskPackRow>> loadTaskPacks(const TrainConfig &c) {
  if (c.taskFiles.empty())
    return Error("", 0, 0, "data.tasks", "names no task pack");
  std::vector<TaskPackRow> tasks;
  for (const std::string &file : c.taskFiles) {
    Result<std::vector<TaskPackRow>> loaded = loadTaskPack(file);
    if (!loaded)
      return loaded.error();
    tasks.insert(tasks.end(), loaded->begin(), loaded->end());
  }
  return tasks;
}

bool promptsForInfilling(TrainStage stage) {
  return stage == TrainStage::RlInfill || stage == TrainStage::EvalInfill;
}

std::string verifierDir(const TrainSession &s) {
  return (std::filesystem::path(s.config.checkpointDir) /
          ("verifier-rank" + std::to_string(s.dist->rank())))
      .string();
}

unsigned verifierJobs(const TrainSession &s) {
  return std::max(1u, std::thread::hardware_concurrency() /
                          unsigned(2 * s.dist->worldSize()));
}

Generation generate(TrainSession &s, const std::vector<TaskPackRow> &tasks,
                    const std::vector<size_t> &chosen, int64_t step, PromptCache &prompts) {
  const TrainConfig &c = s.config;
  Clock::time_point start = Clock::now();
  Generation g;
  g.step = step;
  torch::ScalarType dtype = s.device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  Transformer policy(s.model->config(), s.model->inferenceWeights(dtype));
  TransformerDenoiser denoiser(policy);
  SamplerOptions options;
  options.maskTokenId = s.model->config().maskTokenId;
  if (!s.model->config().stopTokenIds.empty())
    options.stopTokenIds = s.model->config().stopTokenIds;
  BlockDiffusionSampler sampler(denoiser, options);

  for (size_t k = 0; k < chosen.size(); ++k) {
    if (int(k) % s.dist->worldSize() != s.dist->rank())
      continue;
    const TaskPackRow &task = tasks[chosen[k]];
    std::optional<std::vector<int32_t>> &cached = prompts[chosen[k]];
    if (!cached)
      cached = s.tokenizer->encode(promptsForInfilling(c.stage) ? task.infillPrompt
                                                                   : task.endToEndPrompt);
    const std::vector<int32_t> &ids = *cached;
    sampler.setSeed(c.seed * 0x9E3779B97F4A7C15ull + uint64_t(step) * 4096 + k);
    Result<std::vector<Candidate>> out =
        sampler.generateCandidates(ids, int(c.rollouts), c.dice.sampling);
    if (!out) {
      s.say("task " + task.id + ": " + out.error().format());
      continue;
    }
    for (Candidate &cand : *out) {
      Rollout r;
      r.task = chosen[k];
      r.group = int64_t(k);
      r.trace = {ids, cand.tokens, cand.unmaskStep, cand.probability,
                 cand.trailingTokens, cand.trailingSteps};
      r.text = s.tokenizer->decode(cand.tokens);
      g.generatedTokens += int64_t(cand.tokens.size());
      g.rollouts.push_back(std::move(r));
    }
  }
  g.generateSeconds = secondsSince(start);
  return g;
}

Result<Verification> verify(const TrainConfig &c, const std::vector<TaskPackRow> &tasks,
                            Generation &g, const std::string &workDir, unsigned jobs) {
  Clock::time_point start = Clock::now();
  std::vector<VerificationRequest> requests;
  for (const Rollout &r : g.rollouts) {
    const TaskPackRow &t = tasks[r.task];
    requests.push_back({t.id, t.fingerprint, t.signature, t.programJson, r.text, false});
  }
  Result<ProcessVerdicts> results =
      verifyInProcess(requests, c.dice.verifier, workDir, c.seed + uint64_t(g.step), jobs);
  if (!results)
    return results.error();
  for (size_t i = 0; i < g.rollouts.size(); ++i) {
    Rollout &r = g.rollouts[i];
    const Verdict &v = results->verdicts[i];
    r.status = v.status;
    r.reason = v.reason;
    r.speedup = v.speedup;
    bool correct = v.status == VerdictStatus::Accepted || v.status == VerdictStatus::Slow;
    r.reward = correct ? 1.0 : 0.0;
    if (correct && c.speedReward > 0 && v.speedup && *v.speedup > 0)
      r.reward += c.speedReward * std::log2(*v.speedup);
  }
  Verification out;
  out.seconds = secondsSince(start);
  out.notes = results->notes;
  return out;
}

std::vector<double> sumOverRanks(TrainSession &s, std::vector<double> values) {
  torch::Tensor t = torch::tensor(values, torch::kFloat64).to(s.device);
  s.dist->allReduceSum({t}, 1 << 20);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

} // namespace dice
