//===- RlTrainer.cpp - BiC-RL: rollouts, verifier rewards, TraceRL --------===//
//
// A step: the schedule's K tasks (by level), G rollouts each from the
// runtime's block-diffusion sampler (the current policy's weights, recording
// each token's unmask step and probability), rewards from the compiler's
// CandidateVerifier, group z-score advantages (groups of equal rewards
// dropped), and a TraceRL update: PPO's clipped surrogate with a k3 KL
// against the pre-update policy, each token scored in the context it was
// decoded in. Ranks split the tasks; verification of one step's rollouts
// runs while the next step's are generated (the update then uses
// rollouts one update old, which PPO's ratio to the recorded behaviour
// probabilities accounts for).
//
//===----------------------------------------------------------------------===//

#include "Rollouts.h"

#include "dice/Train/TraceRL.h"
#include "dice/Train/TrainData.h"
#include "dice/VerifierCore/VerdictStatus.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>

namespace dice {
namespace {

namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

} // namespace

Status runRl(TrainSession &s) {
  const TrainConfig &c = s.config;
  Result<std::vector<TaskPackRow>> loaded = loadTaskPacks(c);
  if (!loaded)
    return loaded.error();
  const std::vector<TaskPackRow> tasks = loaded.take();
  TaskSchedule schedule(tasks, c.levelSteps, c.seed, c.curriculum);
  PromptCache prompts(tasks.size());

  // Each rank verifies its own rollouts, in its own folder.
  const std::string verifyDir = verifierDir(s);
  const unsigned jobs = verifierJobs(s);
#ifdef DICE_TRAIN_HAVE_ANALYSIS
  const bool staticAnalysis = true;
#else
  const bool staticAnalysis = false;
  s.say("this build has no static analysis (no Clang): rewards rest on the "
        "verifier's dynamic checks; run `dice-verify --batch <rollout log> "
        "--analysis-only` where the compiler is to find deceptive rollouts");
#endif

  // One log per rank: ranks that shared a file would interleave their lines,
  // and on resume each would rewrite it under the others' open streams.
  fs::path logFile = c.rolloutLog.empty()
                         ? fs::path(c.checkpointDir) / "rollouts.jsonl"
                         : fs::path(c.rolloutLog);
  if (s.dist->worldSize() > 1)
    logFile.replace_filename(logFile.stem().string() + "-rank" +
                             std::to_string(s.dist->rank()) +
                             logFile.extension().string());
  std::string logPath = logFile.string();
  fs::create_directories(fs::path(logPath).parent_path());
  // A resumed run takes again the steps a killed one logged after its
  // checkpoint.
  if (s.step > 0)
    if (Status ok = dropLoggedStepsAfter(
            logPath, std::string(toString(c.stage)), s.step);
        !ok)
      return ok;
  std::ofstream rolloutLog(logPath, std::ios::app);
  if (!rolloutLog)
    return Error(logPath, "cannot be opened for appending");

  s.say(std::string(toString(c.stage)) + " on " + std::to_string(tasks.size()) +
        " tasks, " + std::to_string(c.globalBatch) + " x " + std::to_string(c.rollouts) +
        " rollouts per step, " + std::to_string(s.dist->worldSize()) + " rank(s)");

  std::vector<std::string> notesSaid;

  // Throughput is measured from one step's end to the next (the first from
  // the start): with overlap, a step's rollouts were generated during the
  // step before.
  Clock::time_point start = Clock::now();
  Generation current = generate(s, tasks, schedule.tasksOfStep(s.step, c.globalBatch), s.step, prompts);
  for (; s.step < c.steps; ++s.step) {
    // Verify this step's rollouts, generating the next step's meanwhile.
    Verification verified;
    Generation next;
    bool haveNext = s.step + 1 < c.steps;
    s.say("step " + std::to_string(s.step + 1) + ": " +
          std::to_string(current.rollouts.size()) + " rollouts (" +
          std::to_string(current.generatedTokens) + " tokens) in " +
          std::to_string(int(current.generateSeconds)) + " s; verifying");
    Result<Verification> judged = Error("");
    if (c.overlapVerification && haveNext) {
      std::future<Result<Verification>> pending = std::async(std::launch::async, [&] {
        return verify(c, tasks, current, verifyDir, jobs);
      });
      next = generate(s, tasks, schedule.tasksOfStep(s.step + 1, c.globalBatch), s.step + 1, prompts);
      judged = pending.get();
    } else {
      judged = verify(c, tasks, current, verifyDir, jobs);
    }
    if (!judged)
      return judged.error();
    verified = judged.take();
    for (const std::string &note : verified.notes)
      if (std::find(notesSaid.begin(), notesSaid.end(), note) == notesSaid.end()) {
        s.say(note);
        notesSaid.push_back(note);
      }

    // Advantages per group; groups of equal rewards teach nothing.
    std::map<int64_t, std::vector<size_t>> groups;
    for (size_t i = 0; i < current.rollouts.size(); ++i)
      groups[current.rollouts[i].group].push_back(i);
    std::vector<double> advantage(current.rollouts.size(), 0.0);
    std::vector<size_t> kept;
    double droppedGroups = 0;
    for (auto &[group, members] : groups) {
      std::vector<double> rewards;
      for (size_t i : members)
        rewards.push_back(current.rollouts[i].reward);
      std::vector<std::optional<double>> adv = groupAdvantages(rewards);
      if (!adv.front()) {
        ++droppedGroups;
        continue;
      }
      for (size_t m = 0; m < members.size(); ++m) {
        advantage[members[m]] = *adv[m];
        kept.push_back(members[m]);
      }
    }

    s.say("step " + std::to_string(s.step + 1) + ": verified in " +
          std::to_string(int(verified.seconds)) + " s; " + std::to_string(kept.size()) +
          " rollouts in groups with a signal");
    // The TraceRL update over the kept rollouts.
    double keptTokens = 0;
    for (size_t i : kept)
      keptTokens += double(current.rollouts[i].trace.tokens.size());
    double globalTokens = sumOverRanks(s, {keptTokens})[0];
    std::vector<const RolloutTrace *> keptTraces;
    std::vector<double> keptAdvantages;
    for (size_t i : kept) {
      keptTraces.push_back(&current.rollouts[i].trace);
      keptAdvantages.push_back(advantage[i]);
    }
    PolicyUpdateStats stats;
    if (globalTokens > 0)
      stats = tracePolicyUpdate(s, keptTraces, keptAdvantages, globalTokens);
    double lr = learningRate(c, s.step);
    double gradNorm = globalTokens > 0 ? s.update(lr) : 0.0;
    if (!c.overlapVerification && haveNext)
      next = generate(s, tasks, schedule.tasksOfStep(s.step + 1, c.globalBatch), s.step + 1, prompts); // with the new weights

    // Metrics over every rank's rollouts.
    std::vector<double> local(16, 0.0);
    for (const Rollout &r : current.rollouts) {
      int64_t level = tasks[r.task].level;
      local[0] += 1;
      local[1] += r.reward;
      local[2] += r.status == VerdictStatus::Accepted || r.status == VerdictStatus::Slow;
      local[3] += r.status == VerdictStatus::CompileError;
      local[4] += r.status == VerdictStatus::Deceptive;
      local[5] += r.status == VerdictStatus::Unverified;
      local[6 + 2 * size_t(level - 1)] += 1;
      local[7 + 2 * size_t(level - 1)] +=
          r.status == VerdictStatus::Accepted || r.status == VerdictStatus::Slow;
    }
    local[12] = droppedGroups;
    local[13] = double(groups.size());
    local[14] = current.generateSeconds;
    local[15] = double(current.generatedTokens);
    std::vector<double> sums = sumOverRanks(s, local);
    std::vector<double> loss =
        sumOverRanks(s, {stats.surrogate, stats.kl, stats.clipped, stats.scored});
    double rollouts = std::max(1.0, sums[0]);
    double elapsed = secondsSince(start);
    start = Clock::now();
    std::map<std::string, MetricsLog::Value> m = {
        {"step", s.step + 1},
        {"stage", std::string(toString(c.stage))},
        {"max_level", schedule.maxLevel(s.step)},
        {"rollouts", int64_t(sums[0])},
        {"reward_mean", sums[1] / rollouts},
        {"accept_rate", sums[2] / rollouts},
        {"compile_error_rate", sums[3] / rollouts},
        {"deceptive_rate", sums[4] / rollouts},
        {"unverified_rate", sums[5] / rollouts},
        {"dropped_groups", int64_t(sums[12])},
        {"groups", int64_t(sums[13])},
        {"reward_basis", std::string(staticAnalysis ? "static+dynamic" : "dynamic")},
        {"lr", lr},
        {"grad_norm", gradNorm},
        {"verify_s", verified.seconds},
        {"generate_s", sums[14] / double(s.dist->worldSize())},
        {"rollouts_per_s", sums[0] / elapsed},
        {"tokens_per_s", sums[15] / elapsed},
        {"step_s", elapsed}};
    for (int level = 1; level <= 3; ++level)
      if (sums[size_t(6 + 2 * (level - 1))] > 0)
        m["accept_rate_l" + std::to_string(level)] =
            sums[size_t(7 + 2 * (level - 1))] / sums[size_t(6 + 2 * (level - 1))];
    if (loss[3] > 0) {
      m["loss"] = (-loss[0] + c.klCoef * loss[1]) / loss[3];
      m["kl"] = loss[1] / loss[3];
      m["clip_fraction"] = loss[2] / loss[3];
    }
    if (s.metrics)
      s.metrics->write(m, c.steps);

    for (const Rollout &r : current.rollouts) {
      const TaskPackRow &t = tasks[r.task];
      nlohmann::json line = {{"step", s.step + 1},
                             {"stage", std::string(toString(c.stage))},
                             {"name", t.id},
                             {"level", t.level},
                             {"fingerprint", t.fingerprint},
                             {"signature", t.signature},
                             {"candidate", r.text},
                             {"status", std::string(verdictStatusName(r.status))},
                             {"reason", r.reason},
                             {"reward", r.reward}};
      rolloutLog << line.dump() << "\n";
    }
    rolloutLog.flush();

    s.dataPosition += c.globalBatch;
    bool last = s.step + 1 == c.steps;
    if ((c.checkpointEvery > 0 && (s.step + 1) % c.checkpointEvery == 0) || last) {
      ++s.step;
      Status ok = s.saveCheckpoint();
      --s.step;
      if (!ok)
        return ok;
    }
    current = std::move(next);
  }
  return {};
}

} // namespace dice
