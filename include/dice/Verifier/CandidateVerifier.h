//===- CandidateVerifier.h - candidates in, verdicts out --------*- C++ -*-===//
//
// The verifier as the compiler and the tools see it: extraction, static
// deception analysis (where the compiler half is built), the kernel library
// build, and the dynamic checks and timing in sandboxed GPU workers. Plain
// C++ (no LLVM types, no LibTorch, no exceptions across it), so the
// `dice-verify` pass, the `dice-verify` tool and the trainer share it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIER_CANDIDATEVERIFIER_H
#define DICE_VERIFIER_CANDIDATEVERIFIER_H

#include "dice/Config/Config.h"
#include "dice/KernelBuild/KernelBuild.h"
#include "dice/VerifierCore/Verdict.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dice {

/// One candidate kernel for one request.
struct VerificationRequest {
  std::string name;        ///< file name or batch line, for tables
  std::string fingerprint; ///< the request's fingerprint
  std::string signature;   ///< the dice_forward declaration
  /// The reference program (ReferenceProgram JSON). The dynamic checks need
  /// it; without it a built candidate stays `unverified`.
  std::string programJson;
  std::string text;          ///< the model's answer, or CUDA source
  bool isCudaSource = false; ///< `text` is the hole itself, not an answer
};

/// Where a worker's check of one candidate spent its time.
struct CheckTimings {
  /// In ms by phase ("load", "trials", "scaled_trials", "timing_candidate",
  /// ...); empty when no worker ran the check.
  std::map<std::string, double> phaseMs;
  /// The part of each phase spent waiting for the device lock (other
  /// workers' hold on the GPU), in ms by phase.
  std::map<std::string, double> lockWaitMs;
  /// When the worker began the check, in seconds since the Unix epoch.
  std::optional<double> startedUnixS;
};

struct VerificationResult {
  Verdict verdict;
  std::string cudaSource;   ///< the extracted hole; empty when none
  /// The candidate's own kernel library; empty when none was built. Where
  /// candidates are checked with shared builds (`verifier.build_group`),
  /// only `accepted` and `slow` ones (the verdicts whose library is called
  /// or timed again) have one, and only with `ownLibraries`.
  std::string artifactPath;
  CheckTimings checkTimings;
};

struct CandidateVerifierOptions {
  KernelBuildOptions build;
  /// Trials, tolerances, timing, timeout, and `workers`: how many sandboxed
  /// workers at once (verifierWorkerCount).
  VerifierConfig checks;
  unsigned jobs = 1;       ///< builds at once
  /// Build an `accepted` or `slow` candidate checked from a shared build
  /// again, alone, for `artifactPath`; off where only verdicts matter
  /// (training rewards, a throughput run).
  bool ownLibraries = true;
  bool staticAnalysis = true;
  /// Stop after the static analysis: candidates it passes stay
  /// `unverified` and nothing is built (a quick screen, or a machine
  /// without nvcc).
  bool analysisOnly = false;
  /// The GPU worker executable; empty: never run candidates (`unverified`).
  std::string workerPath;
  /// Where workers get their scratch directories.
  std::string scratchDir;
  /// Run workers in the sandbox of Sandbox.h (off only to debug a worker).
  bool sandbox = true;
  /// Run built candidates in CPU-mode workers where there is no GPU: host
  /// code runs (a host crash or hang costs a `crashed` verdict), kernels
  /// do not, so the rest stays `unverified`. For machines without a GPU
  /// that still want the sandbox exercised.
  bool cpuSmokeRun = false;
  /// The seed of the first trial's inputs.
  uint64_t seed = 0;
  /// Hears how far each stage is: `stage` is "built" (kernel libraries
  /// built, cached ones included) or "checked" (candidates back from the
  /// workers), `done` of `total`. One call at a time; for progress lines.
  std::function<void(const char *stage, size_t done, size_t total)> progress;
};

class CandidateVerifier {
public:
  virtual ~CandidateVerifier() = default;

  /// One result per request, in order. Never throws and never dies with a
  /// candidate: a crash costs that candidate a `crashed` verdict.
  virtual std::vector<VerificationResult>
  verify(const std::vector<VerificationRequest> &requests) = 0;

  /// What holds for the whole run, said once ("no CUDA device: ..."); the
  /// notes gathered since the last call.
  virtual std::vector<std::string> takeNotes() = 0;
};

std::unique_ptr<CandidateVerifier>
createCandidateVerifier(CandidateVerifierOptions options);

/// This installation's build setup: its nvcc, prologue, LibTorch include
/// and library directories, light headers and bridge, with artifacts cached
/// under `cacheDir`. Each comes from the environment variable of its
/// compile-time name where that is set (an installation used on another
/// machine, docs/verifier.md, "Build").
KernelBuildOptions defaultKernelBuildOptions(const std::string &cacheDir);

/// This installation's GPU worker (`dice-verify-worker` beside the tools);
/// empty when it was not built.
std::string defaultWorkerPath();

/// Whether this machine has a usable NVIDIA driver and device.
bool haveCudaDevice();

/// How many sandboxed workers check `candidates` candidates at once:
/// `checks.workers` when it is positive; 0 picks one per CPU core, at most
/// one per candidate, for CPU-mode workers (`cpuSmokeRun` without a device)
/// and up to kGpuWorkers GPU workers, one per candidate: they check side
/// by side and take turns to time (the device lock of docs/verifier.md),
/// so no timed run shares the GPU.
unsigned verifierWorkerCount(const VerifierConfig &checks, bool onCpu,
                             size_t candidates);

/// GPU workers by default: enough that one can time while the others
/// check, few enough that their CUDA contexts (about 0.5 GB each) and
/// their share of the host do not matter.
inline constexpr unsigned kGpuWorkers = 4;

} // namespace dice

#endif // DICE_VERIFIER_CANDIDATEVERIFIER_H
