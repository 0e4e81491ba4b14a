//===- CandidateVerifier.cpp - candidates in, verdicts out ----------------===//
//
// The stages in order: extraction, static deception analysis (with the
// compiler half), the kernel library builds (in parallel), and the dynamic
// checks in sandboxed GPU workers. A stage decides a candidate's verdict or
// passes it on; nothing a candidate does can end the run.
//
//===----------------------------------------------------------------------===//

#include "dice/Verifier/CandidateVerifier.h"

#include "dice/Verifier/BaselineTimes.h"

#include "dice/Sandbox/Subprocess.h"
#include "dice/Sandbox/WorkerPool.h"
#include "dice/Reference/ReferenceProgram.h"
#include "dice/Support/File.h"
#include "dice/Support/Sha256.h"
#include "dice/VerifierCore/Extraction.h"
#include "dice/VerifierCore/ForwardSignature.h"

#ifdef DICE_HAVE_DECEPTION
#include "dice/Deception/DeceptionAnalysis.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace dice {

namespace {

/// A candidate after the steps before the build.
struct Pending {
  Verdict verdict;
  std::string cudaSource;
  bool decided = false; ///< the verdict is final before the build
  std::string artifactPath; ///< the built kernel library
  /// Every operator `artifactPath` registers, when it is a shared build.
  std::vector<std::string> libraryOperators;
  CheckTimings checkTimings;
  /// Times measured elsewhere, in ms by name ("eager", "inductor"; device
  /// times, BaselineTimes.h). With baseline = "eager" none, and the worker
  /// times the reference program by events.
  std::map<std::string, double> baselines;
};

void decide(Pending &p, VerdictStatus status, std::string reason) {
  p.verdict.status = status;
  p.verdict.reason = std::move(reason);
  p.decided = true;
}

/// The signature must be the request's: as many tensors as the program has
/// inputs, a list exactly when it has several results.
std::string checkAgainstProgram(const DiceForwardSignature &signature,
                                const std::string &programJson) {
  Result<ReferenceProgram> program = ReferenceProgram::fromJson(programJson);
  if (!program)
    return "the reference program does not parse: " +
           program.error().describe();
  if (std::string problem = program->validate(); !problem.empty())
    return "the reference program is malformed: " + problem;
  if (signature.parameters.size() != program->inputs.size())
    return "the signature takes " + std::to_string(signature.parameters.size()) +
           " tensors, the program has " + std::to_string(program->inputs.size()) +
           " inputs";
  if (signature.returnsList != (program->outputs.size() > 1))
    return "the signature returns " +
           std::string(signature.returnsList ? "a list" : "one tensor") +
           ", the program has " + std::to_string(program->outputs.size()) +
           " results";
  return "";
}

#ifdef DICE_HAVE_DECEPTION
/// The precompiled prologue, kept in the cache beside the libraries; keyed
/// by what it is built from and by this binary (the Clang inside it).
std::string prologuePch(const AnalysisOptions &analysis,
                        const std::string &cacheDir, std::string &error) {
  Sha256 key;
  key.updateField(analysis.prologueDir);
  for (const std::string &dir : analysis.includeDirs)
    key.updateField(dir);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  key.updateField(self.string());
  if (!ec)
    key.updateField(std::to_string(
        fs::last_write_time(self, ec).time_since_epoch().count()));
  for (auto it = fs::recursive_directory_iterator(analysis.prologueDir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file()) {
      Result<std::string> text = readFile(it->path().string());
      key.updateField(it->path().string());
      key.updateField(text ? *text : std::string());
    }
  fs::path pch = fs::path(cacheDir) / "pch" / (key.finishHex() + ".pch");
  if (fs::exists(pch))
    return pch.string();
  fs::create_directories(pch.parent_path(), ec);
  fs::path partial = pch.string() + "." + std::to_string(getpid());
  if (std::optional<std::string> failed = buildProloguePch(analysis, partial)) {
    error = *failed;
    return "";
  }
  fs::rename(partial, pch, ec);
  return pch.string();
}

void analyse(std::vector<Pending> &pending,
             const CandidateVerifierOptions &options,
             std::vector<std::string> &notes) {
  AnalysisOptions analysis;
  analysis.prologueDir = options.build.prologueDir;
  analysis.includeDirs = options.build.includeDirs;
  analysis.gpuArch = options.build.gpuArch;
  bool any = false;
  for (const Pending &p : pending)
    any |= !p.decided;
  if (!any)
    return;
  std::string error;
  analysis.pchPath = prologuePch(analysis, options.build.cacheDir, error);
  if (analysis.pchPath.empty())
    notes.push_back("prologue PCH failed (" + error +
                           "); analysing without it");
  for (Pending &p : pending) {
    if (p.decided)
      continue;
    DeceptionReport found = analyzeCandidate(p.cudaSource, analysis);
    if (found.outcome == AnalysisOutcome::CompileError) {
      decide(p, VerdictStatus::CompileError, found.error);
    } else if (found.deceptive()) {
      std::string reason;
      for (const DeceptionFinding &finding : found.findings)
        reason += (reason.empty() ? "" : "; ") + finding.format();
      decide(p, VerdictStatus::Deceptive, reason);
    }
  }
}
#endif

} // namespace

bool haveCudaDevice() {
  // A device does not come or go during a compile; asking nvidia-smi once
  // spares the pass and every verify() call a child process.
  static const bool present = [] {
    if (!fs::exists("/proc/driver/nvidia/version"))
      return false;
    std::string log = "/dev/null";
    return runProcess({"nvidia-smi", "-L"}, log, 20).succeeded();
  }();
  return present;
}

unsigned verifierWorkerCount(const VerifierConfig &checks, bool onCpu,
                             size_t candidates) {
  if (checks.workers > 0)
    return unsigned(checks.workers);
  // No more than the candidates: each is a LibTorch process, started
  // before the first check.
  size_t most = onCpu ? std::max(1u, std::thread::hardware_concurrency())
                      : kGpuWorkers;
  return unsigned(std::clamp<size_t>(candidates, 1, most));
}

namespace {
/// The environment's `name` where it is set and not empty, else what the
/// build found: an installation used on another machine (a GPU node with
/// its own LibTorch and GPU half) names that machine's paths.
std::string builtOr(const char *name, const char *built) {
  const char *value = std::getenv(name);
  return value && *value ? value : built;
}
} // namespace

KernelBuildOptions defaultKernelBuildOptions(const std::string &cacheDir) {
  KernelBuildOptions build;
  build.nvccPath = builtOr("DICE_NVCC", DICE_NVCC);
  build.prologueDir =
      builtOr("DICE_CANDIDATE_PROLOGUE_DIR", DICE_CANDIDATE_PROLOGUE_DIR);
  std::stringstream dirs(
      builtOr("DICE_CANDIDATE_INCLUDE_DIRS", DICE_CANDIDATE_INCLUDE_DIRS));
  for (std::string dir; std::getline(dirs, dir, '|');)
    if (!dir.empty())
      build.includeDirs.push_back(dir);
  build.torchLibraryDir = builtOr("DICE_TORCH_LIBRARY_DIR", DICE_TORCH_LIBRARY_DIR);
  // Light first where the bridge is built; Auto falls back to the full
  // headers for a candidate the light API cannot compile.
  build.lightIncludeDir = builtOr("DICE_LIGHT_INCLUDE_DIR", DICE_LIGHT_INCLUDE_DIR);
  build.lightBridgeLibrary =
      builtOr("DICE_LIGHT_BRIDGE_LIBRARY", DICE_LIGHT_BRIDGE_LIBRARY);
  build.mode = KernelBuildMode::Auto;
  build.cacheDir = cacheDir;
  return build;
}

std::string defaultWorkerPath() {
  // DICE_VERIFY_WORKER points an installation at another worker binary
  // (a GPU node's own build).
  if (const char *path = std::getenv("DICE_VERIFY_WORKER"); path && *path)
    return path;
  std::string built = DICE_WORKER_PATH;
  return !built.empty() && access(built.c_str(), X_OK) == 0 ? built : "";
}

namespace {

class PipelineVerifier final : public CandidateVerifier {
public:
  explicit PipelineVerifier(CandidateVerifierOptions given)
      : options(std::move(given)) {
    options.build.groupSize =
        static_cast<unsigned>(std::max<int64_t>(1, options.checks.buildGroup));
  }
  ~PipelineVerifier() override {
    pool.reset();
    if (!deviceLock.empty()) {
      unlink(deviceLock.c_str());
      unlink((deviceLock + ".turnstile").c_str());
    }
  }

  std::vector<VerificationResult>
  verify(const std::vector<VerificationRequest> &requests) override;

  std::vector<std::string> takeNotes() override {
    return std::exchange(notes, {});
  }

private:
  /// With a measured baseline, gives each candidate of `toRun` its
  /// request's measured time, or decides it `unverified` when there is
  /// none; returns the candidates that still go to the workers.
  std::vector<size_t> attachBaselines(const std::vector<VerificationRequest> &requests,
                                      std::vector<Pending> &pending,
                                      std::vector<size_t> toRun);
  void runDynamicChecks(const std::vector<VerificationRequest> &requests,
                        std::vector<Pending> &pending,
                        const std::vector<size_t> &toRun, bool onCpu);
  WorkerPool *workerPool(bool onCpu, size_t candidates);
  /// A candidate loaded from a shared build that crashed its worker or did
  /// not load may have been hurt by another member (a static initialiser
  /// runs for every member at load): it is built alone and checked again,
  /// so that every verdict is the candidate's own.
  void checkAloneWhatFailedShared(const std::vector<VerificationRequest> &requests,
                                  const std::vector<KernelBuildRequest> &builds,
                                  const std::vector<size_t> &owners,
                                  std::vector<Pending> &pending,
                                  const std::vector<size_t> &checked, bool onCpu);
  /// Libraries of their own for candidates first built in shared builds.
  std::vector<KernelBuildResult>
  buildEachAlone(const std::vector<KernelBuildRequest> &builds) {
    KernelBuildOptions alone = options.build;
    alone.groupSize = 1;
    return buildAll(builds, alone, std::max(1u, options.jobs));
  }
  /// Gives each `accepted` or `slow` candidate that was checked from a
  /// shared build a library of its own (`results[i].artifactPath`).
  void buildOwnLibraries(const std::vector<KernelBuildRequest> &builds,
                         const std::vector<size_t> &owners,
                         std::vector<Pending> &pending);

  void note(std::string text) {
    if (std::find(notes.begin(), notes.end(), text) == notes.end())
      notes.push_back(std::move(text));
  }

  CandidateVerifierOptions options;
  std::vector<std::string> notes;
  /// The measured times, read once.
  std::optional<Result<BaselineTimes>> baselineTimes;
  /// Kept across verify() calls: a warm worker has its CUDA context and
  /// its device measurements already.
  std::unique_ptr<WorkerPool> pool;
  /// The workers' device lock file, when there are several GPU workers.
  std::string deviceLock;
};

/// Creates the files of the workers' device lock (DeviceLock.h in the
/// worker) under $TMPDIR, a local file system where flock works (a cache
/// on NFS may not be), and returns the lock's path; empty when they cannot
/// be made.
std::string createDeviceLock() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/dice-device-lock-XXXXXX";
  int fd = mkstemp(pattern.data());
  if (fd < 0)
    return "";
  close(fd);
  int turnstile = open((pattern + ".turnstile").c_str(),
                       O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (turnstile < 0) {
    unlink(pattern.c_str());
    return "";
  }
  close(turnstile);
  return pattern;
}

/// The pool is made on the first verify() that runs checks and kept; its
/// size comes from that call's candidates when verifier.workers is 0.
WorkerPool *PipelineVerifier::workerPool(bool onCpu, size_t candidates) {
  if (pool)
    return pool.get();
  WorkerPoolOptions poolOptions;
  poolOptions.argv = {options.workerPath, "--scratch", "{scratch}"};
  if (onCpu) {
    poolOptions.argv.push_back("--device");
    poolOptions.argv.push_back("cpu");
  }
  poolOptions.workers = verifierWorkerCount(options.checks, onCpu, candidates);
  poolOptions.scratchRoot = options.scratchDir;
  if (!onCpu && poolOptions.workers > 1) {
    deviceLock = createDeviceLock();
    if (!deviceLock.empty()) {
      poolOptions.environment.push_back("DICE_DEVICE_LOCK=" + deviceLock);
    } else {
      // Without the lock, timed runs would share the GPU: one worker.
      note("workers: cannot create the device lock file in $TMPDIR; one GPU "
           "worker instead of " + std::to_string(poolOptions.workers));
      poolOptions.workers = 1;
    }
  }
  poolOptions.sandbox.disabled = !options.sandbox;
  pool = std::make_unique<WorkerPool>(std::move(poolOptions));
  return pool.get();
}

/// The request a worker gets for one built candidate.
std::string workerRequest(const VerificationRequest &request,
                          const Pending &p, const std::string &library,
                          const CandidateVerifierOptions &options) {
  nlohmann::json program = nlohmann::json::parse(request.programJson);
  const VerifierConfig &checks = options.checks;
  nlohmann::json r = {{"library", library},
                      {"operator", "k_" + request.fingerprint},
                      {"fingerprint", request.fingerprint},
                      {"candidate_hash", p.verdict.candidateHash},
                      {"program", program},
                      {"trials", checks.trials},
                      {"atol", checks.atol},
                      {"rtol", checks.rtol},
                      {"half_atol", checks.halfAtol},
                      {"half_rtol", checks.halfRtol},
                      {"comparison", std::string(toString(checks.comparison))},
                      {"kernelbench_tolerance", checks.kernelbenchTolerance},
                      {"timing_runs", checks.timingRuns},
                      {"timing_precision", checks.timingPrecision},
                      {"seed", options.seed},
                      {"min_speedup", checks.minSpeedup},
                      // Half the watchdog: a worker that waits longer for
                      // another's candidate asks for a retry instead.
                      {"lock_wait_s", checks.timeoutSeconds / 2}};
  if (!p.libraryOperators.empty())
    r["library_operators"] = p.libraryOperators;
  if (checks.baseline != Baseline::Eager) {
    r["baselines"] = p.baselines;
    // Whoever measured them summed the run's kernel durations
    // (BaselineTimes.h); the worker times the candidate, and the reference
    // under "fastest", the same way.
    r["baseline_measure"] = "device_time";
    r["time_reference"] = checks.baseline == Baseline::Fastest;
  }
  return r.dump();
}

/// The verdict of one worker outcome (`retry` set when the worker asks for
/// the request to go to a fresh worker).
void judgeOutcome(Pending &p, const WorkerOutcome &outcome,
                  const nlohmann::json &ready, double timeoutSeconds,
                  bool &retry) {
  retry = false;
  auto stampDevice = [&](Verdict &v) {
    if (v.gpu.empty() && ready.contains("gpu") && ready["gpu"].is_string())
      v.gpu = ready["gpu"].get<std::string>();
    if (v.driver.empty() && ready.contains("driver") &&
        ready["driver"].is_string())
      v.driver = ready["driver"].get<std::string>();
  };
  std::string log = outcome.logTail.empty()
                        ? ""
                        : "\nlast lines of the worker's log:\n" + outcome.logTail;
  switch (outcome.status) {
  case WorkerOutcome::Status::Crashed:
    stampDevice(p.verdict);
    decide(p, VerdictStatus::Crashed,
           "the candidate killed its worker process (" + outcome.describe() +
               "); the worker was replaced" + log);
    return;
  case WorkerOutcome::Status::TimedOut:
    stampDevice(p.verdict);
    decide(p, VerdictStatus::Crashed,
           "the candidate did not finish within " +
               std::to_string(int(timeoutSeconds)) +
               " s (a hang or an endless kernel); its worker was killed and "
               "replaced" + log);
    return;
  case WorkerOutcome::Status::Error:
    decide(p, VerdictStatus::Unverified,
           "the GPU worker could not run the candidate: " + outcome.describe());
    return;
  case WorkerOutcome::Status::Replied:
    break;
  }
  nlohmann::json reply = nlohmann::json::parse(outcome.reply, nullptr, false);
  if (reply.contains("retry") && reply["retry"] == true) {
    retry = true;
    return;
  }
  if (!reply.contains("verdict")) {
    std::string error = reply.contains("error") ? reply["error"].dump()
                                                : outcome.reply.substr(0, 300);
    decide(p, VerdictStatus::Unverified,
           "the GPU worker rejected the request: " + error);
    return;
  }
  Result<Verdict> verdict = Verdict::fromJson(reply["verdict"].dump());
  if (!verdict) {
    decide(p, VerdictStatus::Unverified,
           "the GPU worker's verdict is malformed: " + verdict.error().message);
    return;
  }
  if (reply.contains("details") && reply["details"].is_object()) {
    const nlohmann::json &details = reply["details"];
    auto phases = [&](const char *key, std::map<std::string, double> &into) {
      if (details.contains(key) && details[key].is_object())
        for (const auto &[phase, ms] : details[key].items())
          if (ms.is_number())
            into[phase] = ms.get<double>();
    };
    phases("phase_ms", p.checkTimings.phaseMs);
    phases("lock_wait_ms", p.checkTimings.lockWaitMs);
    if (details.contains("started_unix_s") && details["started_unix_s"].is_number())
      p.checkTimings.startedUnixS = details["started_unix_s"].get<double>();
  }
  std::optional<double> compileMs = p.verdict.compileMs;
  p.verdict = std::move(*verdict);
  p.verdict.compileMs = compileMs;
  stampDevice(p.verdict);
  p.decided = true;
}

void PipelineVerifier::runDynamicChecks(
    const std::vector<VerificationRequest> &requests,
    std::vector<Pending> &pending, const std::vector<size_t> &toRun,
    bool onCpu) {
  WorkerPool *workers = workerPool(onCpu, toRun.size());
  double timeout = options.checks.timeoutSeconds;
  std::vector<size_t> queue = toRun;
  // A worker asks for a retry when a library it cannot hold beside one it
  // already loaded arrives (two candidates of one request register the same
  // operator name): the request goes again, to the worker that replaces it.
  for (int round = 0; round < 4 && !queue.empty(); ++round) {
    std::vector<std::string> batch;
    for (size_t i : queue)
      batch.push_back(workerRequest(requests[i], pending[i],
                                    pending[i].artifactPath, options));
    std::vector<WorkerOutcome> outcomes =
        workers->run(batch, timeout, [&](size_t done, size_t total) {
          if (options.progress)
            options.progress("checked", done, total);
        });
    // Workers start on the pool's thread: their ready line (the GPU and
    // driver names), what their sandbox lacks, or why none could start, is
    // known once a batch has come back.
    nlohmann::json ready =
        nlohmann::json::parse(workers->readyJson(), nullptr, false);
    if (!ready.is_object())
      ready = nlohmann::json::object();
    for (const std::string &text : workers->sandboxNotes())
      note("worker sandbox: " + text);
    if (std::string error = workers->startError(); !error.empty())
      note("workers: " + error);
    std::vector<size_t> again;
    for (size_t k = 0; k < queue.size(); ++k) {
      bool retry = false;
      judgeOutcome(pending[queue[k]], outcomes[k], ready, timeout, retry);
      if (retry)
        again.push_back(queue[k]);
    }
    queue = std::move(again);
  }
  for (size_t i : queue)
    decide(pending[i], VerdictStatus::Unverified,
           "the GPU worker kept asking for a fresh process for this library");
}

void PipelineVerifier::checkAloneWhatFailedShared(
    const std::vector<VerificationRequest> &requests,
    const std::vector<KernelBuildRequest> &builds,
    const std::vector<size_t> &owners, std::vector<Pending> &pending,
    const std::vector<size_t> &checked, bool onCpu) {
  std::vector<KernelBuildRequest> again;
  std::vector<size_t> whose;
  for (size_t i : checked) {
    const Pending &p = pending[i];
    if (p.libraryOperators.empty() ||
        (p.verdict.status != VerdictStatus::Crashed &&
         p.verdict.status != VerdictStatus::CompileError))
      continue;
    size_t r = std::find(owners.begin(), owners.end(), i) - owners.begin();
    again.push_back(builds[r]);
    whose.push_back(i);
  }
  if (again.empty())
    return;
  std::vector<KernelBuildResult> own = buildEachAlone(again);
  std::vector<size_t> toRun;
  for (size_t k = 0; k < again.size(); ++k) {
    Pending &p = pending[whose[k]];
    p.libraryOperators.clear();
    if (!own[k].ok())
      continue; // the shared verdict stands: it did not build alone either
    Verdict fresh;
    fresh.fingerprint = p.verdict.fingerprint;
    fresh.candidateHash = p.verdict.candidateHash;
    fresh.compileMs = p.verdict.compileMs;
    p.verdict = std::move(fresh);
    p.decided = false;
    p.checkTimings = {};
    p.artifactPath = own[k].artifactPath;
    toRun.push_back(whose[k]);
  }
  if (!toRun.empty())
    runDynamicChecks(requests, pending, toRun, onCpu);
}

void PipelineVerifier::buildOwnLibraries(
    const std::vector<KernelBuildRequest> &builds,
    const std::vector<size_t> &owners, std::vector<Pending> &pending) {
  std::vector<KernelBuildRequest> again;
  std::vector<size_t> whose;
  for (size_t r = 0; r < builds.size(); ++r) {
    VerdictStatus status = pending[owners[r]].verdict.status;
    if (!pending[owners[r]].libraryOperators.empty() &&
        (status == VerdictStatus::Accepted || status == VerdictStatus::Slow)) {
      again.push_back(builds[r]);
      whose.push_back(owners[r]);
    }
  }
  if (again.empty())
    return;
  std::vector<KernelBuildResult> own = buildEachAlone(again);
  for (size_t k = 0; k < again.size(); ++k) {
    if (own[k].ok()) {
      pending[whose[k]].artifactPath = own[k].artifactPath;
      pending[whose[k]].libraryOperators.clear();
      continue;
    }
    // The same text built beside others; alone it should too. If it does
    // not, nothing may call it.
    Verdict &verdict = pending[whose[k]].verdict;
    verdict.kernelMs.reset();
    verdict.baselineMs.reset();
    verdict.speedup.reset();
    decide(pending[whose[k]], VerdictStatus::Unverified,
           "checked from a shared build, but its own library did not build: " +
               own[k].reason);
  }
}

std::vector<size_t> PipelineVerifier::attachBaselines(
    const std::vector<VerificationRequest> &requests,
    std::vector<Pending> &pending, std::vector<size_t> toRun) {
  Baseline baseline = options.checks.baseline;
  if (baseline == Baseline::Eager || toRun.empty())
    return toRun;
  // Under "fastest" the times are optional: the reference program, timed
  // by the worker, is always one of the baselines.
  bool fastest = baseline == Baseline::Fastest;
  const std::string &path = options.checks.baselineTimes;
  if (fastest && path.empty())
    return toRun;
  bool inductor = baseline == Baseline::Inductor;
  std::string what = fastest    ? "no measured baselines: "
                     : inductor ? "no Inductor baseline: "
                                : "no measured eager baseline: ";
  if (!baselineTimes)
    baselineTimes =
        path.empty()
            ? Result<BaselineTimes>(Error(
                  "verifier.baseline = \"" + std::string(toString(baseline)) +
                  "\" needs verifier.baseline_times, the times measured "
                  "elsewhere (the torch.compile backend and dice-curate "
                  "write them; on the MLIR path, use baseline = \"eager\")"))
            : loadBaselineTimes(path);
  std::vector<size_t> kept;
  for (size_t i : toRun) {
    if (!*baselineTimes) {
      decide(pending[i], VerdictStatus::Unverified,
             what + baselineTimes->error().describe());
      continue;
    }
    auto found = (**baselineTimes).find(requests[i].fingerprint);
    std::map<std::string, double> &times = pending[i].baselines;
    if (found != (**baselineTimes).end()) {
      if (found->second.eagerMs && (fastest || !inductor))
        times["eager"] = *found->second.eagerMs;
      if (found->second.inductorMs && (fastest || inductor))
        times["inductor"] = *found->second.inductorMs;
    }
    if (times.empty() && !fastest) {
      decide(pending[i], VerdictStatus::Unverified,
             std::string(inductor ? "no Inductor time" : "no eager time") +
                 " for this request in " + path);
      continue;
    }
    kept.push_back(i);
  }
  if (!*baselineTimes)
    note(what + baselineTimes->error().describe());
  return kept;
}

std::vector<VerificationResult>
PipelineVerifier::verify(const std::vector<VerificationRequest> &requests) {
  std::vector<Pending> pending(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const VerificationRequest &c = requests[i];
    Pending &p = pending[i];
    p.verdict.fingerprint = c.fingerprint;
    Result<DiceForwardSignature> signature =
        parseDiceForwardSignature(c.signature);
    if (c.isCudaSource) {
      p.cudaSource = c.text;
    } else {
      ExtractionResult extracted = extractCandidateSource(c.text);
      if (!extracted.ok()) {
        p.verdict.candidateHash = sha256Hex(c.text);
        decide(p, VerdictStatus::CompileError, extracted.reason);
        continue;
      }
      p.cudaSource = extracted.cudaSource;
    }
    p.verdict.candidateHash = sha256Hex(p.cudaSource);
    if (!signature) {
      decide(p, VerdictStatus::CompileError, signature.error().message);
      continue;
    }
    if (!c.programJson.empty())
      if (std::string problem = checkAgainstProgram(*signature, c.programJson);
          !problem.empty())
        decide(p, VerdictStatus::CompileError, problem);
  }

  if (options.staticAnalysis) {
#ifdef DICE_HAVE_DECEPTION
    std::vector<std::string> analysisNotes;
    analyse(pending, options, analysisNotes);
    for (std::string &text : analysisNotes)
      note(std::move(text));
#else
    note("static deception analysis skipped: built without the compiler "
         "half (DICE_ENABLE_COMPILER)");
#endif
  }

  std::vector<KernelBuildRequest> builds;
  std::vector<size_t> owners;
  for (size_t i = 0; i < requests.size(); ++i)
    if (!pending[i].decided && options.analysisOnly)
      decide(pending[i], VerdictStatus::Unverified,
             "passed the static analysis; not built or run (analysis only)");
    else if (!pending[i].decided) {
      builds.push_back({requests[i].fingerprint, requests[i].signature,
                        pending[i].cudaSource});
      owners.push_back(i);
    }
  bool device = !builds.empty() && haveCudaDevice();
  bool runWorkers = !options.workerPath.empty() &&
                    (device || options.cpuSmokeRun);
  // The worker starts (LibTorch, the CUDA context, the device's speeds:
  // about a second) while nvcc builds, not after: a cold verdict pays for
  // the longer of the two, not for both.
  bool anyProgram = std::any_of(owners.begin(), owners.end(), [&](size_t i) {
    return !requests[i].programJson.empty();
  });
  if (runWorkers && anyProgram)
    workerPool(!device, builds.size())->waitUntilReady(0);
  // Shared builds pay off only where candidates are checked; where none
  // is, every candidate keeps a library of its own, as it would alone.
  bool sharing = runWorkers && anyProgram && options.build.groupSize > 1;
  KernelBuildOptions buildOptions = options.build;
  if (!sharing)
    buildOptions.groupSize = 1;
  std::vector<KernelBuildResult> built =
      buildAll(builds, buildOptions, std::max(1u, options.jobs),
               [&](size_t done, size_t total) {
                 if (options.progress)
                   options.progress("built", done, total);
               });

  std::vector<VerificationResult> results(requests.size());
  if (!device && !builds.empty())
    note(options.cpuSmokeRun
             ? "no CUDA device: candidates run on the CPU only (host code), "
               "their kernels are not checked"
             : "no CUDA device: candidates are analysed and built, not run");
  else if (device && !builds.empty() && options.workerPath.empty())
    note("no GPU worker (dice-verify-worker) in this installation: "
         "candidates are analysed and built, not run");
  // What each shared library registers: a worker that loads it for one
  // member must know every name it takes.
  std::map<std::string, std::vector<std::string>> sharedOperators;
  for (size_t r = 0; r < builds.size(); ++r)
    if (built[r].ok() && built[r].sharedLibrary)
      sharedOperators[built[r].artifactPath].push_back("k_" +
                                                       builds[r].fingerprint);
  std::vector<size_t> toRun;
  for (size_t r = 0; r < builds.size(); ++r) {
    Pending &p = pending[owners[r]];
    const KernelBuildResult &b = built[r];
    p.verdict.compileMs = b.milliseconds;
    if (!b.ok()) {
      // A compile that never ends is the candidate's (template recursion, a
      // huge unrolled loop); a build that cannot run is this machine's.
      bool candidatesFault = b.status == KernelBuildStatus::CompileError ||
                             b.status == KernelBuildStatus::Timeout;
      std::string reason = b.reason;
      if (candidatesFault && !b.diagnostics.empty())
        reason += "\n" + b.diagnostics;
      decide(p,
             candidatesFault ? VerdictStatus::CompileError
                             : VerdictStatus::Unverified,
             candidatesFault ? reason : "the build could not run: " + reason);
      continue;
    }
    if (b.sharedLibrary)
      p.libraryOperators = sharedOperators[b.artifactPath];
    p.artifactPath = b.artifactPath;
    if (runWorkers && !requests[owners[r]].programJson.empty()) {
      toRun.push_back(owners[r]);
      continue;
    }
    decide(p, VerdictStatus::Unverified,
           !device ? "no CUDA device: built and analysed, not run"
           : options.workerPath.empty()
               ? "built and analysed, not run: no GPU worker"
               : "built and analysed, not run: no reference program to "
                 "check it against");
  }
  toRun = attachBaselines(requests, pending, std::move(toRun));
  if (!toRun.empty()) {
    runDynamicChecks(requests, pending, toRun, !device);
    checkAloneWhatFailedShared(requests, builds, owners, pending, toRun,
                               !device);
  }
  if (options.ownLibraries)
    buildOwnLibraries(builds, owners, pending);
  for (size_t i = 0; i < requests.size(); ++i) {
    results[i].verdict = std::move(pending[i].verdict);
    results[i].cudaSource = std::move(pending[i].cudaSource);
    // A shared build's library is never the candidate's own. With shared
    // builds, only the verdicts whose library is used again keep one, so
    // what a run keeps depends on the verdicts, not on what the build
    // cache held before.
    VerdictStatus status = results[i].verdict.status;
    bool used = status == VerdictStatus::Accepted || status == VerdictStatus::Slow;
    if (pending[i].libraryOperators.empty() && (!sharing || used))
      results[i].artifactPath = pending[i].artifactPath;
    results[i].checkTimings = std::move(pending[i].checkTimings);
  }
  return results;
}

} // namespace

std::unique_ptr<CandidateVerifier>
createCandidateVerifier(CandidateVerifierOptions options) {
  return std::make_unique<PipelineVerifier>(std::move(options));
}

} // namespace dice
