//===- VerifierProcess.cpp - rewards from dice-verify in its own process -===//

#include "VerifierProcess.h"

#include "dice/Sandbox/Subprocess.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dice {
namespace fs = std::filesystem;
namespace {

/// The [verifier] section dice-verify reads, from the parsed settings.
std::string verifierToml(const VerifierConfig &v) {
  std::ostringstream out;
  out.precision(17);
  out << "[verifier]\n"
      << "trials = " << v.trials << "\n"
      << "atol = " << v.atol << "\nrtol = " << v.rtol << "\n"
      << "half_atol = " << v.halfAtol << "\nhalf_rtol = " << v.halfRtol << "\n"
      << "comparison = \"" << toString(v.comparison) << "\"\n"
      << "kernelbench_tolerance = " << v.kernelbenchTolerance << "\n"
      << "timing_runs = " << v.timingRuns << "\n"
      << "timing_precision = " << v.timingPrecision << "\n"
      << "min_speedup = " << v.minSpeedup << "\n"
      << "timeout_s = " << v.timeoutSeconds << "\n"
      << "workers = " << v.workers << "\n"
      << "baseline = \"" << toString(v.baseline) << "\"\n";
  if (!v.baselineTimes.empty())
    out << "baseline_times = " << nlohmann::json(v.baselineTimes).dump() << "\n";
  return out.str();
}

/// How long dice-verify may take before the trainer calls it hung: each
/// of its stages is bounded (two nvcc runs per candidate at most, `jobs` at
/// once, at KernelBuildOptions' 600 s each; each check by the watchdog, and
/// the start of the replacement worker after a crash by the pool's 120 s),
/// plus five minutes for the analysis and the tool's own start.
double verifierDeadlineSeconds(size_t candidates, const VerifierConfig &v, unsigned jobs) {
  const double nvccSeconds = 600, workerStartSeconds = 120;
  double buildRounds = double((candidates + jobs - 1) / std::max(1u, jobs));
  return 300 + buildRounds * 2 * nvccSeconds +
         double(candidates) * (v.timeoutSeconds + workerStartSeconds);
}

/// What a rollout gets when dice-verify itself failed: no verdict of its
/// own, so no reward; the training run goes on.
ProcessVerdicts unjudged(const std::vector<VerificationRequest> &requests,
                         const std::string &why) {
  ProcessVerdicts out;
  for (const VerificationRequest &r : requests) {
    Verdict v;
    v.fingerprint = r.fingerprint;
    v.status = VerdictStatus::Unverified;
    v.reason = "not judged: " + why;
    out.verdicts.push_back(std::move(v));
  }
  out.notes.push_back(why);
  return out;
}

} // namespace

Result<ProcessVerdicts> verifyInProcess(const std::vector<VerificationRequest> &requests,
                                        const VerifierConfig &verifier,
                                        const std::string &workDir, uint64_t seed,
                                        unsigned jobs) {
  ProcessVerdicts out;
  if (requests.empty())
    return out;
  std::error_code ec;
  fs::create_directories(workDir, ec);
  fs::path batch = fs::path(workDir) / "batch.jsonl", config = fs::path(workDir) / "verifier.toml",
           log = fs::path(workDir) / "dice-verify.log";
  {
    std::ofstream b(batch);
    for (const VerificationRequest &r : requests) {
      nlohmann::json line = {{"name", r.name},
                             {"fingerprint", r.fingerprint},
                             {"signature", r.signature},
                             {"candidate", r.text}};
      if (!r.programJson.empty())
        line["program"] = r.programJson;
      b << line.dump() << "\n";
    }
    std::ofstream(config) << verifierToml(verifier);
    if (!b)
      return Error(batch.string(), "cannot be written");
  }
  fs::remove(log, ec);
  std::string tool = (fs::path(defaultWorkerPath()).parent_path() / "dice-verify").string();
  if (defaultWorkerPath().empty() || !fs::exists(tool))
    return Error(tool, "is missing: build dice-verify beside dice-train");
  ProcessResult run = runProcess({tool, "--batch", batch.string(), "--json", "--config",
                                  config.string(), "--cache",
                                  (fs::path(workDir) / "kernel-cache").string(), "--jobs",
                                  std::to_string(jobs), "--seed", std::to_string(seed)},
                                 log.string(), verifierDeadlineSeconds(requests.size(), verifier, jobs));
  Result<std::string> text = readFile(log.string());
  std::string output = text ? *text : "";
  std::string tail = output.substr(output.size() > 2000 ? output.size() - 2000 : 0);
  // dice-verify exits 1 when some candidate is not accepted: that is a
  // verdict, not a failure; 2 is a usage error, the trainer's own.
  if (!run.spawnError.empty() || run.exitCode == 2)
    return Error(log.string(), "dice-verify cannot run (" +
                                   (run.spawnError.empty() ? "exit 2" : run.spawnError) +
                                   "): " + tail);
  // A crash or a hang of the verifier costs this batch its rewards.
  if (run.timedOut)
    return unjudged(requests, "dice-verify did not finish within its deadline of " +
                                  std::to_string(int(verifierDeadlineSeconds(
                                      requests.size(), verifier, jobs))) +
                                  " s (log: " + log.string() + ")");
  if (run.signal)
    return unjudged(requests, "dice-verify was killed by signal " +
                                  std::to_string(run.signal) + " (log: " + log.string() + ")");
  if (run.exitCode != 0 && run.exitCode != 1)
    return unjudged(requests, "dice-verify exited " + std::to_string(run.exitCode) +
                                  " (log: " + log.string() + ")");
  std::stringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.front() == '{') {
      Result<Verdict> v = Verdict::fromJson(line);
      if (!v)
        return unjudged(requests, "dice-verify wrote an unreadable verdict (" +
                                      v.error().describe() + "; log: " + log.string() + ")");
      out.verdicts.push_back(v.take());
    } else if (line.rfind("dice-verify: note: ", 0) == 0) {
      out.notes.push_back(line.substr(19));
    }
  }
  if (out.verdicts.size() != requests.size())
    return unjudged(requests, "dice-verify returned " + std::to_string(out.verdicts.size()) +
                                  " verdicts for " + std::to_string(requests.size()) +
                                  " candidates (log: " + log.string() + ")");
  return out;
}

} // namespace dice
