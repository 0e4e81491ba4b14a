//===- CorrectnessTrials.cpp - the trials against the reference -----------===//
//
// The checks of results: a contained call on CPU-only machines, and on a
// GPU T trials of seeded inputs with the candidate and the reference in
// alternating order, each candidate call traced and on poisoned memory.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"
#include "DeviceLock.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

namespace dice {
namespace dynamic_check {

std::vector<at::Tensor> preciseOutputs(const ReferenceProgram &program,
                                       const std::vector<at::Tensor> &inputs,
                                       const DynamicCheckRequest &request,
                                       Json &details) {
  if (request.comparison == Comparison::KernelBench)
    return {};
  c10::Device device = inputs.empty() ? c10::Device(c10::kCPU) : inputs[0].device();
  ReferenceRun run = runReferenceProgram(inFloat64(program), inFloat64(inputs), device);
  if (!run.ok()) {
    if (!details.contains("float64_reference"))
      details["float64_reference"] =
          "does not run (" + run.error + "); tolerances stay fixed";
    return {};
  }
  return run.outputs;
}

Difference compareWithReference(const std::vector<at::Tensor> &results,
                                const std::vector<at::Tensor> &reference,
                                const std::vector<at::Tensor> &precise,
                                Distribution distribution,
                                const DynamicCheckRequest &request) {
  Difference worst;
  for (size_t i = 0; i < results.size(); ++i) {
    const at::Tensor *p = i < precise.size() ? &precise[i] : nullptr;
    Difference d = compareTensors(
        results[i], reference[i],
        trialTolerance(reference[i], p, distribution, request),
        "result " + std::to_string(i));
    worst.maxAbs = std::max(worst.maxAbs, d.maxAbs);
    worst.maxRel = std::max(worst.maxRel, d.maxRel);
    worst.normErr = std::max(worst.normErr, d.normErr);
    if (!d.problem.empty()) {
      worst.problem = d.problem;
      return worst;
    }
  }
  return worst;
}

/// CPU-only machines: shows that the call is contained, checks nothing.
void Checker::smokeRunOnCpu(const c10::OperatorHandle &op,
                          const DynamicCheckRequest &request,
                          DynamicCheckOutcome &outcome) {
  c10::Device cpu(c10::kCPU);
  std::vector<at::Tensor> inputs =
      firstTrialInputs(request.program, request.seed, cpu);
  ReferenceRun reference = runReferenceProgram(request.program, inputs, cpu);
  outcome.details["reference"] =
      reference.ok() ? Json("ran") : Json(reference.error);
  std::vector<at::Tensor> unreadable;
  for (const at::Tensor &input : inputs)
    unreadable.push_back(unreadableCopy(input));
  CallResult call = callOperator(op, unreadable, /*onCuda=*/false);
  std::string what;
  if (!call.thrown.empty()) {
    what = "the call threw (" + call.thrown + ")";
  } else if (!call.badReturn.empty()) {
    what = "the call " + call.badReturn;
  } else {
    // Only metadata: a result may share the unreadable inputs' memory.
    Json results = Json::array();
    for (const at::Tensor &result : call.results)
      results.push_back(
          result.defined()
              ? Json{{"shape", result.sizes().vec()},
                     {"dtype", dtypeString(result.scalar_type())}}
              : Json(nullptr));
    outcome.details["results"] = results;
    what = "the call returned " + std::to_string(call.results.size()) +
           (call.results.size() == 1 ? " tensor" : " tensors");
    if (otherShape) {
      // The same at the other sizes: the shapes the call returns there.
      std::vector<at::Tensor> others;
      for (const at::Tensor &input :
           makeInputs(*otherShape, Distribution::Normal, seedOfTrial(request.seed, 1), cpu))
        others.push_back(unreadableCopy(input));
      CallResult second = callOperator(op, others, /*onCuda=*/false);
      Json shapes = Json::array();
      for (const at::Tensor &result : second.results)
        shapes.push_back(result.defined() ? Json(result.sizes().vec()) : Json(nullptr));
      outcome.details["results_at_other_sizes"] =
          second.thrown.empty() && second.badReturn.empty()
              ? shapes
              : Json(second.thrown.empty() ? second.badReturn : second.thrown);
      what += second.thrown.empty() && second.badReturn.empty()
                  ? ", and " + std::to_string(second.results.size()) +
                        " at sizes other than the examples"
                  : "; at sizes other than the examples it failed";
    }
  }
  outcome.details["smoke"] = what;
  setVerdict(outcome.verdict, VerdictStatus::Unverified,
             "CPU smoke run: " + what +
                 "; nothing was checked (no CUDA device)");
}

/// One traced, poisoned call of the candidate. Returns false when it
/// decided the verdict.
bool Checker::tracedCall(const c10::OperatorHandle &op,
                       const DynamicCheckRequest &request,
                       const std::vector<at::Tensor> &inputs, int poison,
                       const std::string &when, CallResult &call,
                       DynamicCheckOutcome &outcome, int64_t &ownKernels,
                       Json &kernels) {
  Verdict &verdict = outcome.verdict;
  c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
  poisonAllocator(request.program, poison, cuda);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    throw CudaFault{cudaGetErrorName(e), cudaGetErrorString(e),
                    static_cast<int>(e)};
  bool tracing = false;
  std::string traceError;
  if (tracer) {
    tracer->setOwnLibrary(ownLibrary);
    tracing = tracer->begin(c10::cuda::getCurrentCUDAStream().stream(),
                            traceError);
    if (!tracing)
      traceIssue = traceError;
  }
  call = callOperator(op, inputs, /*onCuda=*/true);
  if (call.fault) {
    // No trace after a sticky fault: flushing CUPTI on a broken context
    // can hang.
    if (tracing && !call.sticky)
      tracer->end();
    setVerdict(verdict, VerdictStatus::Crashed,
               "the candidate left CUDA error " + call.fault->name + " (" +
                   call.fault->message + ") " + when +
                   "; check indexing and bounds in its kernels");
    outcome.contextPoisoned = call.sticky;
    return false;
  }
  if (tracing) {
    KernelTraceResult trace = tracer->end();
    kernels = kernelsJson(trace);
    if (!trace.problem.empty()) {
      traceIssue = trace.problem;
    } else if (std::string why =
                   judgeTrace(trace, ownKernels, call.thrown.empty());
               !why.empty()) {
      setVerdict(verdict, VerdictStatus::Deceptive, why + " (" + when + ")");
      return false;
    }
  }
  if (!call.thrown.empty()) {
    setVerdict(verdict, VerdictStatus::Incorrect,
               "the candidate threw " + when + ": " + call.thrown);
    return false;
  }
  if (!call.badReturn.empty()) {
    setVerdict(verdict, VerdictStatus::Incorrect,
               "the candidate " + call.badReturn + " " + when);
    return false;
  }
  return true;
}

bool Checker::checkOnCuda(const c10::OperatorHandle &op,
                        const DynamicCheckRequest &request,
                        DynamicCheckOutcome &outcome) {
  Verdict &verdict = outcome.verdict;
  Json &details = outcome.details;
  c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
  traceIssue = tracer ? "" : checkerInfo.tracing;
  int64_t trials = std::max<int64_t>(request.trials, 1);
  Json trialLog = Json::array();
  int64_t ownPerCall = -1;
  double maxAbs = 0, maxRel = 0;
  // Records the trials; false: a verdict was reached, nothing to time.
  auto finish = [&] {
    details["trials"] = trialLog;
    verdict.maxAbsErr = maxAbs;
    verdict.maxRelErr = maxRel;
    if (ownPerCall >= 0)
      verdict.launchedKernels = ownPerCall;
    return false;
  };

  for (int64_t t = 0; t < trials; ++t) {
    // The trials hold the GPU shared; a worker waiting to time goes
    // between two of them rather than after all.
    DeviceLock::process().yieldToTimers();
    Distribution distribution = distributionOfTrial(t);
    bool otherSizes = otherShape && t % 2 == 1;
    const ReferenceProgram &program = otherSizes ? *otherShape : request.program;
    std::string when = "in trial " + std::to_string(t) + " (" +
                       distributionName(distribution) + " inputs" +
                       (otherSizes ? ", at sizes other than the examples" : "") + ")";
    std::vector<at::Tensor> inputs = makeInputs(
        program, distribution, seedOfTrial(request.seed, t), cuda);
    std::vector<at::Tensor> pristine;
    for (const at::Tensor &input : inputs)
      pristine.push_back(input.clone());
    Json entry = {{"trial", t},
                  {"distribution", distributionName(distribution)},
                  {"sizes", otherSizes ? "other" : "example"},
                  {"order", t % 2 == 0 ? "candidate first" : "reference first"}};
    verdict.trials = t + 1;

    ReferenceRun reference;
    // Alternating the order keeps the candidate from finding the
    // reference's results in memory the allocator hands it.
    if (t % 2 == 1)
      reference = runReferenceProgram(program, pristine, cuda);

    // The first trial calls the candidate twice, on different poisons.
    int calls = t == 0 ? 2 : 1;
    std::vector<at::Tensor> results;
    for (int c = 0; c < calls; ++c) {
      CallResult call;
      int64_t own = 0;
      Json kernels;
      std::string callWhen =
          c == 0 ? when : "in the repeated call of trial 0";
      bool passed = tracedCall(op, request, inputs, int((t + c) % 2),
                               callWhen, call, outcome, own, kernels);
      if (!kernels.is_null() && t == 0 && c == 0)
        details["kernels"] = kernels;
      if (!kernels.is_null() && !passed && !details.contains("kernels"))
        details["kernels"] = kernels;
      if (!passed) {
        trialLog.push_back(entry);
        return finish();
      }
      if (ownPerCall < 0)
        ownPerCall = own;
      else if (own != ownPerCall)
        entry["launched_kernels"] = own;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (!bitIdentical(inputs[i], pristine[i])) {
          setVerdict(verdict, VerdictStatus::Incorrect,
                     "inputs were modified: input " + std::to_string(i) +
                         " changed during the call " + callWhen +
                         "; write results to new tensors");
          trialLog.push_back(entry);
          return finish();
        }
      if (std::string wrong = checkResults(program, call.results, cuda);
          !wrong.empty()) {
        setVerdict(verdict, VerdictStatus::Incorrect,
                   "the candidate " + wrong + " (" + callWhen + ")");
        trialLog.push_back(entry);
        return finish();
      }
      for (size_t r = 0; r < call.results.size(); ++r)
        for (size_t i = 0; i < inputs.size(); ++i)
          if (call.results[r].is_alias_of(inputs[i])) {
            setVerdict(verdict, VerdictStatus::Incorrect,
                       "result " + std::to_string(r) + " shares memory with input " +
                           std::to_string(i) + " " + callWhen +
                           "; return new tensors");
            trialLog.push_back(entry);
            return finish();
          }
      if (c == 0) {
        results = call.results;
        if (t == 0) {
          firstResults = call.results;
          firstSnapshot.clear();
          for (const at::Tensor &result : call.results)
            firstSnapshot.push_back(result.clone());
        }
        continue;
      }
      for (size_t i = 0; i < results.size(); ++i) {
        Difference d = compareTensors(
            call.results[i], results[i],
            toleranceOf(results[i].scalar_type(), request),
            "result " + std::to_string(i));
        if (!d.problem.empty()) {
          setVerdict(verdict, VerdictStatus::Incorrect,
                     "two calls on the same inputs disagree (trial 0, "
                     "memory poisoned differently): " +
                         d.problem +
                         "; the kernel reads memory it never wrote or is "
                         "not deterministic");
          trialLog.push_back(entry);
          return finish();
        }
      }
    }

    if (t % 2 == 0)
      reference = runReferenceProgram(program, pristine, cuda);
    if (!reference.ok()) {
      setVerdict(verdict, VerdictStatus::Unverified,
                 "the reference program fails " + when + ": " +
                     reference.error);
      trialLog.push_back(entry);
      finish();
      verdict.maxAbsErr.reset();
      verdict.maxRelErr.reset();
      return false;
    }
    std::vector<at::Tensor> precise =
        preciseOutputs(program, pristine, request, details);
    if (!otherSizes && t > 0 && request.comparison == Comparison::Scaled) {
      // A result that stays bit for bit what it was in trial 0 while the
      // reference's changed does not depend on the inputs, however close
      // to the reference it happens to be. The float64 runs say whether it
      // changed: the reference's own rounding moves a result that is
      // constant by algebra (a softmax's row sums), and a kernel may know.
      bool exact = !firstPrecise.empty() && !precise.empty();
      const std::vector<at::Tensor> &before = exact ? firstPrecise : firstReference;
      const std::vector<at::Tensor> &after = exact ? precise : reference.outputs;
      for (size_t i = 0; i < results.size() && i < firstSnapshot.size(); ++i)
        if (bitIdentical(results[i], firstSnapshot[i]) &&
            referenceChanged(before[i], after[i], results[i].scalar_type())) {
          setVerdict(verdict, VerdictStatus::Incorrect,
                     "result " + std::to_string(i) + " " + when +
                         " is bit for bit the result of trial 0, although the "
                         "inputs and the reference's result changed: it does "
                         "not depend on the inputs");
          entry["problem"] = "does not depend on the inputs";
          trialLog.push_back(entry);
          return finish();
        }
    }
    if (t == 0) {
      firstReference = reference.outputs;
      firstPrecise = precise;
    }
    Difference d = compareWithReference(results, reference.outputs, precise,
                                        distribution, request);
    maxAbs = std::max(maxAbs, d.maxAbs);
    maxRel = std::max(maxRel, d.maxRel);
    entry["max_abs_err"] = d.maxAbs;
    entry["max_rel_err"] = d.maxRel;
    entry["norm_err"] = d.normErr;
    if (!d.problem.empty()) {
      entry["problem"] = d.problem;
      trialLog.push_back(entry);
      setVerdict(verdict, VerdictStatus::Incorrect, d.problem + " " + when);
      return finish();
    }
    trialLog.push_back(entry);
  }
  finish();
  lap(outcome, "trials");
  bool scaledPassed = request.comparison != Comparison::Scaled ||
                      checkScaledInputs(op, request, outcome);
  lap(outcome, "scaled_trials");
  if (!scaledPassed)
    return false;

  if (!traceIssue.empty()) {
    // Without a trace a library call could have computed the result:
    // never a pass.
    setVerdict(verdict, VerdictStatus::Unverified,
               "correct in " + std::to_string(trials) +
                   " trials, but the kernels it ran could not be traced (" +
                   traceIssue + "), so it cannot be accepted");
    return false;
  }
  return true;
}

bool Checker::checkStateAcrossCalls(const c10::OperatorHandle &op,
                                    const DynamicCheckRequest &request,
                                    DynamicCheckOutcome &outcome) {
  Verdict &verdict = outcome.verdict;
  const ReferenceProgram &program = request.program;
  c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
  // Inputs no trial used: the seed after the last trial's.
  int64_t trial = std::max<int64_t>(request.trials, 1);
  std::vector<at::Tensor> inputs = makeInputs(
      program, Distribution::Normal, seedOfTrial(request.seed, trial), cuda);
  ReferenceRun reference = runReferenceProgram(program, inputs, cuda);
  if (!reference.ok()) {
    setVerdict(verdict, VerdictStatus::Unverified,
               "the reference program fails on the inputs after the timed runs: " +
                   reference.error);
    return false;
  }
  CallResult call = callOperator(op, inputs, /*onCuda=*/true);
  std::string when = "in a call on fresh inputs after the timed runs";
  if (call.fault) {
    setVerdict(verdict, VerdictStatus::Crashed,
               "the candidate left CUDA error " + call.fault->name + " " + when);
    outcome.contextPoisoned = call.sticky;
    return false;
  }
  std::string wrong = !call.thrown.empty()    ? "threw (" + call.thrown + ")"
                      : !call.badReturn.empty() ? call.badReturn
                                                : checkResults(program, call.results, cuda);
  if (wrong.empty()) {
    Difference d = compareWithReference(
        call.results, reference.outputs,
        preciseOutputs(program, inputs, request, outcome.details),
        Distribution::Normal, request);
    if (!d.problem.empty())
      wrong = d.problem + "; it keeps state across calls (a call counter, a "
                          "cache) and stops computing";
  }
  if (!wrong.empty()) {
    setVerdict(verdict, VerdictStatus::Incorrect, "the candidate " + wrong + " " + when);
    return false;
  }
  for (size_t r = 0; r < firstResults.size(); ++r) {
    bool aliased = false;
    for (const at::Tensor &result : call.results)
      aliased = aliased || result.is_alias_of(firstResults[r]);
    if (aliased || !bitIdentical(firstResults[r], firstSnapshot[r])) {
      setVerdict(verdict, VerdictStatus::Incorrect,
                 "result " + std::to_string(r) + " of the first trial " +
                     (aliased ? "shares memory with a result of a later call"
                              : "changed when the candidate was called again") +
                     ": every call must return new tensors (a static or "
                     "cached output buffer is overwritten under its caller)");
      return false;
    }
  }
  return true;
}

} // namespace dynamic_check
} // namespace dice
