//===- dice-verify.cpp - verify candidate kernels -------------------------===//
//
// Runs the verifier on model answers or CUDA sources and prints one verdict
// per candidate, as a table or as JSON lines. Exit status 0 iff every
// candidate is accepted (or unverified, with --allow-unverified).
//
//===----------------------------------------------------------------------===//

#include "dice/Support/CommandLine.h"
#include "dice/Support/File.h"
#include "dice/Verifier/CandidateVerifier.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace dice;

namespace {

const char *kOverview =
    "verifies candidate kernels of a kernel request: extracts the CUDA "
    "source of each answer, checks it for deception (static analysis, with "
    "the compiler half), builds its kernel library with nvcc, and prints one "
    "verdict each. Without a CUDA device the verdict of a candidate that "
    "builds and passes the analysis is `unverified`";

const char *kExitStatus =
    "Exit status: 0 iff every candidate is accepted (with --allow-unverified:\n"
    "accepted or unverified), 1 otherwise, 2 on usage errors. Without a GPU\n"
    "every candidate that builds is unverified, so the status is 1 unless\n"
    "--allow-unverified is given.";

std::string defaultCache() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "dice" / "kernels").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "dice" / "kernels").string();
  return (fs::temp_directory_path() / "dice-kernels").string();
}

/// Reads a batch file: one JSON object per non-empty line.
bool readBatchFile(const fs::path &path, std::vector<VerificationRequest> &out,
                   std::string &error) {
  Result<std::string> text = readFile(path.string());
  if (!text) {
    error = text.error().describe();
    return false;
  }
  std::stringstream in(*text);
  unsigned lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string where = path.string() + ":" + std::to_string(lineNo) + ": ";
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.is_object()) {
      error = where + "not a JSON object";
      return false;
    }
    VerificationRequest c;
    auto text = [&](const char *key, std::string &into) {
      auto it = entry.find(key);
      if (it != entry.end() && it->is_string())
        into = it->get<std::string>();
    };
    text("fingerprint", c.fingerprint);
    text("signature", c.signature);
    text("name", c.name);
    if (entry.contains("cuda_source")) {
      text("cuda_source", c.text);
      c.isCudaSource = true;
    } else {
      text("candidate", c.text);
    }
    if (auto it = entry.find("program"); it != entry.end())
      c.programJson = it->is_string() ? it->get<std::string>() : it->dump();
    if (c.fingerprint.empty() || c.signature.empty() || c.text.empty()) {
      error = where + "needs fingerprint, signature and candidate (or cuda_source)";
      return false;
    }
    if (c.name.empty())
      c.name = path.filename().string() + ":" + std::to_string(lineNo);
    out.push_back(std::move(c));
  }
  return true;
}

void printTable(const std::vector<VerificationRequest> &candidates,
                const std::vector<VerificationResult> &results) {
  size_t width = 9;
  for (const VerificationRequest &c : candidates)
    width = std::max(width, c.name.size());
  std::printf("%-*s  %-13s  %10s  %s\n", int(width), "candidate", "status",
              "compile_ms", "reason");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Verdict &v = results[i].verdict;
    std::string reason = v.reason.substr(0, v.reason.find('\n'));
    char ms[32] = "-";
    if (v.compileMs)
      std::snprintf(ms, sizeof ms, "%.0f", *v.compileMs);
    std::printf("%-*s  %-13s  %10s  %s\n", int(width), candidates[i].name.c_str(),
                std::string(verdictStatusName(v.status)).c_str(), ms,
                reason.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string fingerprint, signature, candidatePath, programPath, batch;
  std::string artifactsDir, configPath;
  std::string cache = defaultCache();
  CandidateVerifierOptions options;
  options.build = defaultKernelBuildOptions(cache);
  options.workerPath = defaultWorkerPath();
  bool json = false, allowUnverified = false, timings = false;
  bool progress = isatty(STDERR_FILENO);

  CommandLine cl("dice-verify", kOverview,
                 "(--candidate <file> | --batch <file.jsonl|dir>) [options]",
                 /*usageExitCode=*/2);
  cl.footer(kExitStatus);
  cl.add_option("--fingerprint", fingerprint, "the request's fingerprint")
      ->type_name("fp");
  cl.add_option("--signature", signature,
                "the kernel's declaration, 'torch::Tensor "
                "dice_forward(torch::Tensor x0);'")
      ->type_name("decl");
  CLI::Option *candidateOption =
      cl.add_option("--candidate", candidatePath,
                    "the model's answer (.txt) or its CUDA source (.cu)")
          ->type_name("file");
  cl.add_option("--program", programPath,
                "the request's reference program (JSON), checked against the "
                "signature")
      ->type_name("file");
  cl.add_option("--batch", batch,
                "a .jsonl file, one object per line: fingerprint, signature, "
                "candidate (an answer) or cuda_source, program (object or "
                "JSON text; optional), name (optional); or a folder: every "
                ".txt (answer) and .cu (source) file in it, all for "
                "--fingerprint and --signature")
      ->type_name("file.jsonl|dir")
      ->excludes(candidateOption);
  cl.add_option("--jobs", options.jobs, "nvcc processes at once")
      ->type_name("n")
      ->check(positiveNumber)
      ->capture_default_str();
  int64_t workers = 0;
  CLI::Option *workersOption =
      cl.add_option("--workers", workers,
                    "sandboxed workers that run candidates at once; wins "
                    "over dice.toml's verifier.workers (default 0: one per "
                    "CPU core with --cpu-run, up to " +
                        std::to_string(kGpuWorkers) +
                        " on a GPU, which take turns to time)")
          ->type_name("n")
          ->check(CLI::Validator(
              [](std::string &input) {
                char *end = nullptr;
                long long value = std::strtoll(input.c_str(), &end, 10);
                if (input.empty() || *end || value < 0 || value > 4096)
                  return "expected an integer from 0 to 4096, got '" + input +
                         "'";
                return std::string();
              },
              ""));
  cl.add_option("--cache", cache,
                "build cache ($XDG_CACHE_HOME/dice/kernels or "
                "~/.cache/dice/kernels by default)")
      ->type_name("dir");
  cl.add_option("--timeout", options.build.timeoutSeconds,
                "seconds per nvcc run")
      ->type_name("s")
      ->check(positiveNumber)
      ->capture_default_str();
  cl.add_flag("--no-analysis{false}", options.staticAnalysis,
              "skip the static deception analysis");
  cl.add_flag("--analysis-only", options.analysisOnly,
              "stop after the static analysis (nothing is built)");
  cl.add_flag("--single-tu{false}", options.build.separateRegistration,
              "compile the registration into the candidate's TU (full "
              "builds)");
  cl.add_option("--build-mode", options.build.mode,
                "auto: the light tensor API, the full LibTorch headers where "
                "it does not compile; light; or full")
      ->type_name("auto|light|full")
      ->transform(oneOf<KernelBuildMode>({{"auto", KernelBuildMode::Auto},
                                          {"light", KernelBuildMode::Light},
                                          {"full", KernelBuildMode::Full}}))
      ->default_str("auto");
  cl.add_option("--nvcc", options.build.nvccPath, "nvcc to use")
      ->type_name("path");
  cl.add_option("--config", configPath,
                "dice.toml: the [verifier] section (trials, tolerances, "
                "timing runs, min_speedup, timeout_s, workers)")
      ->type_name("file");
  cl.add_option("--worker", options.workerPath,
                "the GPU worker (the installation's by default)")
      ->type_name("path");
  cl.add_flag("--cpu-run", options.cpuSmokeRun,
              "without a GPU, still run candidates in CPU-mode workers: host "
              "code runs in the sandbox (a crash or hang is `crashed`), "
              "kernels are not checked");
  cl.add_flag("--no-sandbox{false}", options.sandbox,
              "run workers without the sandbox (debugging)");
  cl.add_option("--seed", options.seed, "seed of the first trial's inputs")
      ->type_name("n")
      ->capture_default_str();
  cl.add_flag("--json", json, "JSON lines of verdicts instead of a table");
  cl.add_flag("--timings", timings,
              "print where each verdict's time went to stderr: the build's "
              "ms and the worker's ms per check phase, one JSON object a line");
  cl.add_option("--artifacts", artifactsDir,
                "copy each built kernel library to <dir>/<candidate_hash>.so")
      ->type_name("dir");
  cl.add_flag("--allow-unverified", allowUnverified,
              "count unverified verdicts as success");
  cl.add_flag("--progress", progress,
              "say on stderr how many candidates are built and checked "
              "(the default when stderr is a terminal)");
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  if (!configPath.empty()) {
    Result<Config> config = loadConfigFile(configPath);
    if (!config) {
      std::fprintf(stderr, "%s\n", config.error().format().c_str());
      return 2;
    }
    options.checks = config->verifier;
  }
  if (workersOption->count())
    options.checks.workers = workers;
  options.build.cacheDir = cache;
  options.scratchDir = (fs::path(cache) / "workers").string();

  std::string program;
  if (!programPath.empty()) {
    Result<std::string> text = readFile(programPath);
    if (!text)
      return cl.usageError(text.error().describe());
    program = *text;
  }

  std::vector<VerificationRequest> candidates;
  if (!candidatePath.empty()) {
    Result<std::string> text = readFile(candidatePath);
    if (!text)
      return cl.usageError(text.error().describe());
    candidates.push_back({fs::path(candidatePath).filename().string(),
                          fingerprint, signature, program, *text,
                          fs::path(candidatePath).extension() == ".cu"});
  } else if (!batch.empty() && fs::is_directory(batch)) {
    std::vector<fs::path> files;
    for (const auto &entry : fs::directory_iterator(batch))
      if (entry.path().extension() == ".txt" || entry.path().extension() == ".cu")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path &file : files) {
      Result<std::string> text = readFile(file.string());
      candidates.push_back({file.filename().string(), fingerprint, signature,
                            program, text ? text.take() : std::string(),
                            file.extension() == ".cu"});
    }
  } else if (!batch.empty()) {
    std::string error;
    if (!readBatchFile(batch, candidates, error))
      return cl.usageError(error);
  } else {
    return cl.usageError("nothing to verify: give --candidate or --batch");
  }
  for (const VerificationRequest &c : candidates)
    if (c.fingerprint.empty() || c.signature.empty())
      return cl.usageError(c.name + ": needs --fingerprint and --signature");

  if (!artifactsDir.empty()) {
    std::error_code ec;
    fs::create_directories(artifactsDir, ec);
    if (ec) {
      std::fprintf(stderr, "dice-verify: cannot create %s: %s\n",
                   artifactsDir.c_str(), ec.message().c_str());
      return 1;
    }
  }

  // Libraries of their own only for a caller that takes them away.
  options.ownLibraries = !artifactsDir.empty();
  if (progress)
    options.progress = [](const char *stage, size_t done, size_t total) {
      std::fprintf(stderr, "dice-verify: %s %zu/%zu\n", stage, done, total);
    };
  std::unique_ptr<CandidateVerifier> verifier =
      createCandidateVerifier(options);
  std::vector<VerificationResult> results = verifier->verify(candidates);
  for (const std::string &note : verifier->takeNotes())
    std::fprintf(stderr, "dice-verify: note: %s\n", note.c_str());
  bool copied = true;
  if (!artifactsDir.empty()) {
    std::error_code ec;
    for (const VerificationResult &r : results) {
      if (r.artifactPath.empty())
        continue;
      fs::path to = fs::path(artifactsDir) / (r.verdict.candidateHash + ".so");
      fs::copy_file(r.artifactPath, to, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        std::fprintf(stderr, "dice-verify: cannot copy %s to %s: %s\n",
                     r.artifactPath.c_str(), to.c_str(), ec.message().c_str());
        copied = false;
      }
    }
  }
  if (timings)
    for (size_t i = 0; i < results.size(); ++i) {
      nlohmann::json line = {{"name", candidates[i].name},
                             {"status", verdictStatusName(results[i].verdict.status)},
                             {"phase_ms", results[i].checkTimings.phaseMs},
                             {"lock_wait_ms", results[i].checkTimings.lockWaitMs}};
      if (results[i].verdict.compileMs)
        line["compile_ms"] = *results[i].verdict.compileMs;
      if (results[i].checkTimings.startedUnixS)
        line["started_unix_s"] = *results[i].checkTimings.startedUnixS;
      std::fprintf(stderr, "dice-verify: timings: %s\n", line.dump().c_str());
    }
  if (json)
    for (const VerificationResult &r : results)
      std::printf("%s\n", r.verdict.toJson().c_str());
  else
    printTable(candidates, results);

  bool success = std::all_of(
      results.begin(), results.end(), [&](const VerificationResult &r) {
        return r.verdict.status == VerdictStatus::Accepted ||
               (allowUnverified &&
                r.verdict.status == VerdictStatus::Unverified);
      });
  return success && copied ? 0 : 1;
}
