//===- VerifierProcess.cpp - rewards from dice-verify in its own process -===//

#include "VerifierProcess.h"

#include "dice/Sandbox/Subprocess.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

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
      << "timing_runs = " << v.timingRuns << "\n"
      << "min_speedup = " << v.minSpeedup << "\n"
      << "timeout_s = " << v.timeoutSeconds << "\n"
      << "workers = " << v.workers << "\n"
      << "baseline = \"" << toString(v.baseline) << "\"\n";
  if (!v.baselineTimes.empty())
    out << "baseline_times = " << nlohmann::json(v.baselineTimes).dump() << "\n";
  return out.str();
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
                                 log.string(), 0);
  Result<std::string> text = readFile(log.string());
  std::string output = text ? *text : "";
  // dice-verify exits 1 when some candidate is not accepted: that is a
  // verdict, not a failure.
  if (!run.spawnError.empty() || run.signal || run.timedOut ||
      (run.exitCode != 0 && run.exitCode != 1))
    return Error(log.string(), "dice-verify failed (" +
                                   (run.spawnError.empty() ? "exit " + std::to_string(run.exitCode) +
                                                                 ", signal " + std::to_string(run.signal)
                                                           : run.spawnError) +
                                   "): " + output.substr(output.size() > 2000 ? output.size() - 2000 : 0));
  std::stringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.front() == '{') {
      Result<Verdict> v = Verdict::fromJson(line);
      if (!v)
        return Error(log.string(), 0, 0, "", "unreadable verdict: " + v.error().describe());
      out.verdicts.push_back(v.take());
    } else if (line.rfind("dice-verify: note: ", 0) == 0) {
      out.notes.push_back(line.substr(19));
    }
  }
  if (out.verdicts.size() != requests.size())
    return Error(log.string(), "dice-verify returned " + std::to_string(out.verdicts.size()) +
                                   " verdicts for " + std::to_string(requests.size()) +
                                   " candidates");
  return out;
}

} // namespace dice
