//===- DynamicCheck.h - run a kernel library against its reference -*- C++ -*-===//
//
// The GPU worker's checks of one candidate: load its kernel library, call
// `dice::k_<fingerprint>` through the c10 dispatcher on seeded inputs, compare
// with the reference program run by the ATen executor, trace which kernels
// ran, and time the candidate and the baseline. docs/verifier.md ("Dynamic
// checks and timing") lists every check.
//
// Part of the worker's torch-side library (DiceVerifierWorker). The header
// itself names no LibTorch types, so the worker's request loop compiles
// without LibTorch's headers.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_DYNAMICCHECK_H
#define DICE_VERIFIERWORKER_DYNAMICCHECK_H

#include "dice/Reference/ReferenceProgram.h"
#include "dice/VerifierCore/Verdict.h"

#include "dice/Support/Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace dice {

/// How results are compared with the reference (docs/verifier.md, "Results").
enum class Comparison {
  /// Tolerances scaled to the reference's own magnitude and rounding error,
  /// a normalised error per result, trials at scaled inputs and the
  /// input-sensitivity check: what `accepted` means.
  Scaled,
  /// KernelBench's definition, for reporting its metrics: torch.allclose
  /// with atol = rtol = kernelbenchTolerance, and no scaled trials or
  /// sensitivity check.
  KernelBench,
};

/// One candidate to check; the fields of a worker request.
struct DynamicCheckRequest {
  std::string library;  ///< absolute path of k_<fp>.so
  std::string operatorName; ///< "k_<fp>", registered in namespace dice
  /// Every operator the library registers when it holds several requests'
  /// candidates (a shared build, KernelBuild.h); empty: `operatorName` only.
  std::vector<std::string> libraryOperators;
  std::string fingerprint;
  std::string candidateHash;
  ReferenceProgram program;
  int64_t trials = 5;
  double atol = 1e-4, rtol = 1e-4;         ///< float32, float64
  double halfAtol = 1e-2, halfRtol = 1e-2; ///< float16, bfloat16
  Comparison comparison = Comparison::Scaled;
  double kernelbenchTolerance = 1e-2; ///< atol = rtol under KernelBench
  int64_t timingRuns = 100;
  /// Timing stops early once the median is known within this fraction
  /// (TimingRule.h); 0: all of timingRuns.
  double timingPrecision = 0;
  uint64_t seed = 0;
  double minSpeedup = 1.0;
  /// Baselines the caller measured, in ms by name ("eager": eager PyTorch
  /// as the caller timed it, "inductor": Inductor's code; "given" for the
  /// one `baseline_ms` of a request). The fastest of these and, with
  /// `timeReference`, of the reference program timed here decides.
  std::map<std::string, double> givenBaselines;
  /// Time the reference program here as a baseline too.
  bool timeReference = true;
  /// The baselines are device times (the sum of the kernels' durations, as
  /// the torch.compile backend measures Inductor's code): the candidate,
  /// and the reference where it is timed, are then timed the same way, so
  /// that no side pays for launches another does not.
  bool baselineIsDeviceTime = false;
  /// Seconds this request may wait, in all, for the device lock that
  /// several workers share (docs/verifier.md, "The device lock"); when they
  /// run out, the request is retried. 0: no bound.
  double lockWaitSeconds = 0;
};

struct DynamicCheckOutcome {
  Verdict verdict;
  /// Launched kernels, per-trial errors, timing spread, speed of light.
  nlohmann::json details = nlohmann::json::object();
  /// The CUDA context is unusable (a sticky error): reply, then exit.
  bool contextPoisoned = false;
  /// No verdict: the request cannot be served by this process (an operator
  /// of the same name is already registered by another library). `error`
  /// says why; the caller replies with it and exits, and the request is
  /// worth retrying in a fresh worker.
  std::string retryError;
};

/// Where the checks run.
enum class CheckDevice {
  Cuda, ///< the full checks
  Cpu   ///< smoke run only: inputs on the CPU, the op's CUDA kernel called
};

/// What the worker reports once at start.
struct CheckerInfo {
  std::string gpu;    ///< device name; empty on the CPU
  std::string driver; ///< NVIDIA driver and CUDA driver API version
  std::optional<double> bandwidthGBs;
  std::optional<double> peakTflops;
  /// "cupti", or why kernels are not traced (every verdict repeats it).
  std::string tracing;
  /// "done", or why the worker's warm-up failed (a GPU worker then checks
  /// anyway: the warm-up only moves first-call costs out of the first check).
  std::string warmUp;
};

class DynamicChecker {
public:
  virtual ~DynamicChecker() = default;

  /// Checks one candidate. Never throws; a candidate that kills the
  /// process (a segfault in its host code) is the supervisor's to report.
  virtual DynamicCheckOutcome check(const DynamicCheckRequest &request) = 0;

  virtual const CheckerInfo &info() const = 0;
};

/// Initialises the device once (CUDA context, CUPTI, speed measurement).
/// An error says why the device cannot be used.
Result<std::unique_ptr<DynamicChecker>>
createDynamicChecker(CheckDevice device);

} // namespace dice

#endif // DICE_VERIFIERWORKER_DYNAMICCHECK_H
