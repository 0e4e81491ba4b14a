//===- dice-verify.cpp - verify candidate kernels -------------------------===//
//
// Runs the verifier on model answers or CUDA sources and prints one verdict
// per candidate, as a table or as JSON lines. Exit status 0 iff every
// candidate is accepted (or unverified, with --allow-unverified).
//
//===----------------------------------------------------------------------===//

#include "dice/Verifier/CandidateVerifier.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace dice;

namespace {

const char *kUsage = R"(usage: dice-verify [options]

Verifies candidate kernels of a kernel request: extracts the CUDA source of
each answer, checks it for deception (static analysis, with the compiler
half), builds its kernel library with nvcc, and prints one verdict each.
Without a CUDA device the verdict of a candidate that builds and passes the
analysis is `unverified`.

one candidate:
  --fingerprint FP        the request's fingerprint
  --signature DECL        'torch::Tensor dice_forward(torch::Tensor x0);'
  --candidate FILE        the model's answer (.txt) or its CUDA source (.cu)
  --program FILE          the request's reference program (JSON), checked
                          against the signature
many:
  --batch FILE.jsonl      one object per line: fingerprint, signature,
                          candidate (an answer) or cuda_source, program
                          (object or JSON text; optional), name (optional)
  --batch DIR             every .txt (answer) and .cu (source) file in DIR,
                          all for --fingerprint / --signature

  --jobs N                nvcc processes at once (default 1)
  --cache DIR             build cache (default $XDG_CACHE_HOME/dice/kernels
                          or ~/.cache/dice/kernels)
  --timeout S             per nvcc run (default 600)
  --no-analysis           skip the static deception analysis
  --analysis-only         stop after the static analysis (nothing is built)
  --single-tu             compile the registration into the candidate's TU
                          (full builds)
  --build-mode MODE       auto (default: the light tensor API, the full
                          LibTorch headers where it does not compile),
                          light or full
  --nvcc PATH             nvcc to use
  --config FILE           dice.toml: the [verifier] section (trials,
                          tolerances, timing runs, min_speedup, timeout_s)
  --worker PATH           the GPU worker (default: the installation's)
  --cpu-run               without a GPU, still run candidates in CPU-mode
                          workers: host code runs in the sandbox (a crash or
                          hang is `crashed`), kernels are not checked
  --no-sandbox            run workers without the sandbox (debugging)
  --seed N                seed of the first trial's inputs (default 0)
  --json                  JSON lines of verdicts instead of a table
  --artifacts DIR         copy each built kernel library to
                          DIR/<candidate_hash>.so
  --allow-unverified      count unverified verdicts as success
  --progress              say on stderr how many candidates are built and
                          checked (default when stderr is a terminal)

exit status: 0 iff every candidate is accepted (with --allow-unverified:
accepted or unverified), 1 otherwise, 2 on usage errors. Without a GPU
every candidate that builds is unverified, so the status is 1 unless
--allow-unverified is given.
)";

std::optional<std::string> readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int usageError(const std::string &message) {
  std::fprintf(stderr, "dice-verify: %s\n(see dice-verify --help)\n",
               message.c_str());
  return 2;
}

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
  std::optional<std::string> text = readFile(path);
  if (!text) {
    error = "cannot read " + path.string();
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
  std::string artifactsDir;
  std::string cache = defaultCache();
  CandidateVerifierOptions options;
  options.build = defaultKernelBuildOptions(cache);
  options.workerPath = defaultWorkerPath();
  bool json = false, allowUnverified = false;
  bool progress = isatty(STDERR_FILENO);

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &into) {
      if (i + 1 >= argc)
        return false;
      into = argv[++i];
      return true;
    };
    std::string number;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--fingerprint") {
      if (!value(fingerprint))
        return usageError("--fingerprint needs a value");
    } else if (arg == "--signature") {
      if (!value(signature))
        return usageError("--signature needs a value");
    } else if (arg == "--candidate") {
      if (!value(candidatePath))
        return usageError("--candidate needs a file");
    } else if (arg == "--program") {
      if (!value(programPath))
        return usageError("--program needs a file");
    } else if (arg == "--batch") {
      if (!value(batch))
        return usageError("--batch needs a file or folder");
    } else if (arg == "--artifacts") {
      if (!value(artifactsDir))
        return usageError("--artifacts needs a folder");
    } else if (arg == "--cache") {
      if (!value(cache))
        return usageError("--cache needs a folder");
    } else if (arg == "--nvcc") {
      if (!value(options.build.nvccPath))
        return usageError("--nvcc needs a path");
    } else if (arg == "--jobs" || arg == "--timeout") {
      if (!value(number))
        return usageError(arg + " needs a number");
      char *end = nullptr;
      double parsed = std::strtod(number.c_str(), &end);
      if (*end || parsed <= 0)
        return usageError(arg + " needs a positive number, got '" + number + "'");
      if (arg == "--jobs")
        options.jobs = static_cast<unsigned>(parsed);
      else
        options.build.timeoutSeconds = parsed;
    } else if (arg == "--config") {
      std::string path;
      if (!value(path))
        return usageError("--config needs a file");
      ConfigResult config = loadConfigFile(path);
      if (!config) {
        std::fprintf(stderr, "%s\n", config.error().format().c_str());
        return 2;
      }
      options.checks = config->verifier;
    } else if (arg == "--worker") {
      if (!value(options.workerPath))
        return usageError("--worker needs a path");
    } else if (arg == "--cpu-run") {
      options.cpuSmokeRun = true;
    } else if (arg == "--no-sandbox") {
      options.sandbox = false;
    } else if (arg == "--seed") {
      if (!value(number))
        return usageError("--seed needs a number");
      options.seed = std::strtoull(number.c_str(), nullptr, 10);
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--allow-unverified") {
      allowUnverified = true;
    } else if (arg == "--no-analysis") {
      options.staticAnalysis = false;
    } else if (arg == "--analysis-only") {
      options.analysisOnly = true;
    } else if (arg == "--build-mode") {
      std::string mode;
      if (!value(mode))
        return usageError("--build-mode needs auto, light or full");
      if (mode == "auto")
        options.build.mode = KernelBuildMode::Auto;
      else if (mode == "light")
        options.build.mode = KernelBuildMode::Light;
      else if (mode == "full")
        options.build.mode = KernelBuildMode::Full;
      else
        return usageError("--build-mode needs auto, light or full, got '" +
                          mode + "'");
    } else if (arg == "--progress") {
      progress = true;
    } else if (arg == "--single-tu") {
      options.build.separateRegistration = false;
    } else {
      return usageError("unknown argument '" + arg + "'");
    }
  }
  options.build.cacheDir = cache;
  options.scratchDir = (fs::path(cache) / "workers").string();

  std::string program;
  if (!programPath.empty()) {
    std::optional<std::string> text = readFile(programPath);
    if (!text)
      return usageError("cannot read " + programPath);
    program = *text;
  }

  std::vector<VerificationRequest> candidates;
  if (!batch.empty() && !candidatePath.empty())
    return usageError("give --candidate or --batch, not both");
  if (!candidatePath.empty()) {
    std::optional<std::string> text = readFile(candidatePath);
    if (!text)
      return usageError("cannot read " + candidatePath);
    candidates.push_back({fs::path(candidatePath).filename().string(),
                          fingerprint, signature, program, *text,
                          fs::path(candidatePath).extension() == ".cu"});
  } else if (!batch.empty() && fs::is_directory(batch)) {
    std::vector<fs::path> files;
    for (const auto &entry : fs::directory_iterator(batch))
      if (entry.path().extension() == ".txt" || entry.path().extension() == ".cu")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path &file : files)
      candidates.push_back({file.filename().string(), fingerprint, signature,
                            program, readFile(file).value_or(""),
                            file.extension() == ".cu"});
  } else if (!batch.empty()) {
    std::string error;
    if (!readBatchFile(batch, candidates, error))
      return usageError(error);
  } else {
    return usageError("nothing to verify: give --candidate or --batch");
  }
  for (const VerificationRequest &c : candidates)
    if (c.fingerprint.empty() || c.signature.empty())
      return usageError(c.name + ": needs --fingerprint and --signature");

  if (!artifactsDir.empty()) {
    std::error_code ec;
    fs::create_directories(artifactsDir, ec);
    if (ec) {
      std::fprintf(stderr, "dice-verify: cannot create %s: %s\n",
                   artifactsDir.c_str(), ec.message().c_str());
      return 1;
    }
  }

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
