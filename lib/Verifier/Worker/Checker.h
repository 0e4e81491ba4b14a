//===- Checker.h - the dynamic checker of one worker ------------*- C++ -*-===//
//
// The DynamicChecker createDynamicChecker returns. Its methods are defined
// along the order of a check: loading the library and the entry point
// (DynamicCheck.cpp), the trials against the reference
// (CorrectnessTrials.cpp), timing and the speed-of-light bound
// (TimingJudgement.cpp). Private to DiceVerifierWorker.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_CHECKER_H
#define DICE_VERIFIERWORKER_CHECKER_H

#include "CheckSteps.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace dice {
namespace dynamic_check {

class Checker final : public DynamicChecker {
public:
  Checker(CheckDevice device, std::unique_ptr<KernelTracer> tracer,
          CheckerInfo info, DeviceSpeed speed)
      : device(device), tracer(std::move(tracer)), checkerInfo(std::move(info)),
        speed(speed) {}

  DynamicCheckOutcome check(const DynamicCheckRequest &request) override;

  const CheckerInfo &info() const override { return checkerInfo; }

  /// Runs every step of a check except the candidate's on a small program
  /// of each floating dtype: inputs of every distribution, the reference
  /// and its float64 run, the comparison, poisoning, a kernel trace and a
  /// timing. Their first calls load kernels and grow the allocator, which
  /// would otherwise cost the worker's first candidate a few hundred ms;
  /// done at start, that time overlaps the builds. Throws what they throw.
  void warmUp();
  /// What the worker reports about its warm-up (CheckerInfo::warmUp).
  void noteWarmUp(std::string outcome) { checkerInfo.warmUp = std::move(outcome); }

private:
  static void setVerdict(Verdict &verdict, VerdictStatus status,
                         std::string reason);
  static void clearMeasurements(Verdict &verdict);

  /// Loads the library and finds its operator, or sets the verdict.
  std::optional<c10::OperatorHandle> load(const DynamicCheckRequest &request,
                                          DynamicCheckOutcome &outcome);

  /// CPU-only machines: shows that the call is contained, checks nothing.
  void smokeRunOnCpu(const c10::OperatorHandle &op,
                     const DynamicCheckRequest &request,
                     DynamicCheckOutcome &outcome);

  /// One traced, poisoned call of the candidate. Returns false when it
  /// decided the verdict.
  bool tracedCall(const c10::OperatorHandle &op,
                  const DynamicCheckRequest &request,
                  const std::vector<at::Tensor> &inputs, int poison,
                  const std::string &when, CallResult &call,
                  DynamicCheckOutcome &outcome, int64_t &ownKernels,
                  Json &kernels);

  /// The trials and the scaled trials; true when the candidate passed
  /// them and is to be timed (timeAndJudge, after the caller has given up
  /// its shared hold on the device lock).
  bool checkOnCuda(const c10::OperatorHandle &op,
                   const DynamicCheckRequest &request,
                   DynamicCheckOutcome &outcome);

  /// After the trials: the first trial's inputs scaled down and up
  /// (ScaledTrials.cpp). A kernel whose error does not shrink with its
  /// results (zeros, a fixed absolute error, half precision inside)
  /// fails there. Returns false when it decided the verdict.
  bool checkScaledInputs(const c10::OperatorHandle &op,
                         const DynamicCheckRequest &request,
                         DynamicCheckOutcome &outcome);

  void timeAndJudge(const c10::OperatorHandle &op,
                    const DynamicCheckRequest &request,
                    DynamicCheckOutcome &outcome);

  /// After the timed runs: a call on fresh inputs must still be right (a
  /// candidate that stops computing after N calls is not), its results
  /// must not share memory with its inputs, and the results of the first
  /// trial must have survived every later call (a static output buffer
  /// does not). Returns false when it decided the verdict.
  bool checkStateAcrossCalls(const c10::OperatorHandle &op,
                             const DynamicCheckRequest &request,
                             DynamicCheckOutcome &outcome);

  /// Adds the wall time since the previous lap to
  /// details["phase_ms"][phase]: where a verdict's time goes (docs/verifier.md,
  /// "Where a verdict's time goes").
  void lap(DynamicCheckOutcome &outcome, const char *phase);

  CheckDevice device;
  std::unique_ptr<KernelTracer> tracer;
  std::chrono::steady_clock::time_point lastLap;
  CheckerInfo checkerInfo;
  DeviceSpeed speed;
  /// A dynamic program at sizes other than its examples: every other trial
  /// runs there, so that a kernel that assumed the example sizes fails.
  std::optional<ReferenceProgram> otherShape;
  /// A kernel library this worker loaded.
  struct LoadedLibrary {
    std::string path; ///< its real path
    void *handle = nullptr;
    /// A light build: its operator is registered by a static object that
    /// dlclose destroys, so unloading it frees the operator's name.
    bool light = false;
    /// The process's threads before it was loaded: more afterwards means
    /// the candidate left one running, and its code must stay mapped.
    size_t threadsBefore = 0;
  };
  /// Unloads a light `library`, whose registrations go with it, to free
  /// its operators' names for other candidates of the same requests; false
  /// (and still loaded) for a full build, or when the candidate left a
  /// thread running or the device in error.
  bool unloadLight(const LoadedLibrary &library);
  /// Real path -> a library this worker holds. One light library at a
  /// time: the others are unloaded before another is loaded.
  std::map<std::string, LoadedLibrary> loaded;
  std::string ownLibrary;
  /// Why this request's kernels are not traced; empty when they are.
  std::string traceIssue;
  /// The first trial's results as returned (still held, as a caller would
  /// hold them) and a copy taken at once: later calls must not change them.
  std::vector<at::Tensor> firstResults, firstSnapshot;
  /// The reference's results of the first trial, and their float64 run
  /// (empty where it does not run).
  std::vector<at::Tensor> firstReference, firstPrecise;
};

} // namespace dynamic_check
} // namespace dice

#endif // DICE_VERIFIERWORKER_CHECKER_H
