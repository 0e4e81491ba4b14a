//===- Evaluation.cpp - a checkpoint's kernels on task packs, verified ----===//
//
// The model card's numbers: every task of the packs once, rl.rollouts
// candidates each from the sampler under [sampling] (greedy when the
// temperature is 0), judged by the compiler's verifier as in RL. Rates per
// candidate (build rate, exec accuracy) and per task, KernelBench's way:
// a task counts as correct when one of its candidates is, and as fast_p when
// a correct candidate beats the verifier's baseline by more than p.
//
//===----------------------------------------------------------------------===//

#include "Rollouts.h"

#include "dice/Train/TrainSession.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace dice {
namespace {

namespace fs = std::filesystem;

bool isCorrect(VerdictStatus s) {
  return s == VerdictStatus::Accepted || s == VerdictStatus::Slow;
}

/// Counts over candidates and tasks (one level, or all of them).
struct Tally {
  double candidates = 0, built = 0, correct = 0;
  double tasks = 0, tasksCorrect = 0, fast1 = 0, fast2 = 0;
  std::map<std::string, int64_t> statuses;

  void addTask(const std::vector<const Rollout *> &rs) {
    double best = -1;
    bool anyCorrect = false;
    for (const Rollout *r : rs) {
      candidates += 1;
      built += r->status != VerdictStatus::CompileError;
      correct += isCorrect(r->status);
      ++statuses[std::string(verdictStatusName(r->status))];
      if (isCorrect(r->status)) {
        anyCorrect = true;
        if (r->speedup)
          best = std::max(best, *r->speedup);
      }
    }
    tasks += 1;
    tasksCorrect += anyCorrect;
    fast1 += best > 1.0;
    fast2 += best > 2.0;
  }

  nlohmann::json json() const {
    auto rate = [](double n, double d) { return d > 0 ? n / d : 0.0; };
    return {{"tasks", int64_t(tasks)},
            {"candidates", int64_t(candidates)},
            {"build_rate", rate(built, candidates)},
            {"exec_accuracy", rate(correct, candidates)},
            {"task_accuracy", rate(tasksCorrect, tasks)},
            {"fast_1", rate(fast1, tasks)},
            {"fast_2", rate(fast2, tasks)},
            {"statuses", statuses}};
  }
};

} // namespace

Status runEvaluation(TrainSession &s) {
  const TrainConfig &c = s.config;
  Result<std::vector<TaskPackRow>> loaded = loadTaskPacks(c);
  if (!loaded)
    return loaded.error();
  const std::vector<TaskPackRow> tasks = loaded.take();
  fs::create_directories(c.checkpointDir);
  const std::string verifyDir = verifierDir(s);
  PromptCache prompts(tasks.size());
  s.say(std::string(toString(c.stage)) + " of " + std::to_string(tasks.size()) + " tasks, " +
        std::to_string(c.rollouts) + " candidate(s) each");

  // Chunks of optim.global_batch tasks: progress after each, and a fault in
  // one chunk's verification loses only that chunk's time.
  std::vector<Rollout> all;
  double generateSeconds = 0, verifySeconds = 0, tokens = 0;
  const size_t chunk = size_t(std::max<int64_t>(1, c.globalBatch));
  for (size_t first = 0; first < tasks.size(); first += chunk) {
    std::vector<size_t> chosen;
    for (size_t i = first; i < std::min(tasks.size(), first + chunk); ++i)
      chosen.push_back(i);
    Generation g = generate(s, tasks, chosen, int64_t(first / chunk), prompts);
    Result<Verification> v = verify(c, tasks, g, verifyDir, verifierJobs(s));
    if (!v)
      return v.error();
    generateSeconds += g.generateSeconds;
    verifySeconds += v->seconds;
    tokens += double(g.generatedTokens);
    size_t correct = 0;
    for (Rollout &r : g.rollouts) {
      correct += isCorrect(r.status);
      all.push_back(std::move(r));
    }
    s.say("tasks " + std::to_string(first + 1) + "-" +
          std::to_string(first + chosen.size()) + " of " + std::to_string(tasks.size()) +
          ": " + std::to_string(correct) + " of " + std::to_string(g.rollouts.size()) +
          " candidates correct");
  }

  // This rank's results; ranks write their own files (rank 0 the plain names).
  std::string suffix =
      s.dist->worldSize() > 1 ? "-rank" + std::to_string(s.dist->rank()) : std::string();
  std::map<size_t, std::vector<const Rollout *>> byTask;
  for (const Rollout &r : all)
    byTask[r.task].push_back(&r);
  Tally overall;
  std::map<int64_t, Tally> perLevel;
  std::ofstream lines(fs::path(c.checkpointDir) / ("eval" + suffix + ".jsonl"));
  for (auto &[task, rs] : byTask) {
    const TaskPackRow &t = tasks[task];
    overall.addTask(rs);
    perLevel[t.level].addTask(rs);
    for (const Rollout *r : rs)
      lines << nlohmann::json{{"name", t.id},
                              {"level", t.level},
                              {"fingerprint", t.fingerprint},
                              {"candidate", r->text},
                              {"status", std::string(verdictStatusName(r->status))},
                              {"reason", r->reason},
                              {"speedup", r->speedup ? nlohmann::json(*r->speedup)
                                                     : nlohmann::json()}}
                   .dump()
            << "\n";
  }
  if (!lines)
    return Error((fs::path(c.checkpointDir) / ("eval" + suffix + ".jsonl")).string(),
                 "cannot be written");

  nlohmann::json summary = overall.json();
  summary["stage"] = std::string(toString(c.stage));
  summary["model"] = c.modelPath;
  summary["task_files"] = c.taskFiles;
  summary["temperature"] = c.dice.sampling.temperature;
  summary["baseline"] = std::string(toString(c.dice.verifier.baseline));
  summary["generate_s"] = generateSeconds;
  summary["verify_s"] = verifySeconds;
  summary["generated_tokens"] = int64_t(tokens);
  for (auto &[level, tally] : perLevel)
    summary["level_" + std::to_string(level)] = tally.json();
  std::string summaryPath =
      (fs::path(c.checkpointDir) / ("eval-summary" + suffix + ".json")).string();
  std::ofstream(summaryPath) << summary.dump(2) << "\n";
  s.say("wrote " + summaryPath + ": build rate " +
        std::to_string(summary["build_rate"].get<double>()) + ", exec accuracy " +
        std::to_string(summary["exec_accuracy"].get<double>()) + ", fast_1 " +
        std::to_string(summary["fast_1"].get<double>()));
  if (s.metrics)
    s.metrics->write({{"step", int64_t(0)},
                      {"stage", std::string(toString(c.stage))},
                      {"rollouts", int64_t(overall.candidates)},
                      {"reward_mean", overall.candidates > 0 ? overall.correct / overall.candidates
                                                             : 0.0},
                      {"accept_rate", overall.candidates > 0
                                          ? overall.correct / overall.candidates
                                          : 0.0},
                      {"compile_error_rate", overall.candidates > 0
                                                 ? 1 - overall.built / overall.candidates
                                                 : 0.0},
                      {"generate_s", generateSeconds},
                      {"verify_s", verifySeconds}},
                     1);
  return {};
}

} // namespace dice
