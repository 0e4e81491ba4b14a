//===- TimingJudgement.cpp - timing, baseline and speed of light ----------===//
//
// The last check: the candidate and the baseline timed on the same inputs,
// the speedup against the required minimum, and the speed-of-light bound
// below which a kernel is reported.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"
#include "CandidateTiming.h"
#include "DeviceLock.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>

namespace dice {
namespace dynamic_check {
namespace {

/// A kernel faster than this fraction of the speed-of-light bound is
/// reported: the bound uses measured, not datasheet, rates, so the margin
/// absorbs kernels that beat a plain copy (read-mostly access patterns).
constexpr double kSpeedOfLightMargin = 0.8;

size_t elementSize(DType dtype) {
  return c10::elementSize(toScalarType(dtype));
}

double bytesOf(const TensorType &type) {
  return double(type.numElements()) * double(elementSize(type.dtype));
}

/// Bytes any implementation must move: every input it reads (only the
/// slices, for an input the program only slices) and every result it
/// writes.
double minimumBytes(const ReferenceProgram &program) {
  int inputs = static_cast<int>(program.inputs.size());
  double bytes = 0;
  for (int id = 0; id < inputs; ++id) {
    bool used = std::count(program.outputs.begin(), program.outputs.end(), id);
    bool onlySliced = true;
    double sliced = 0;
    for (const RefOp &op : program.ops) {
      if (std::find(op.args.begin(), op.args.end(), id) == op.args.end())
        continue;
      used = true;
      if (op.fn == RefFn::Slice)
        sliced += bytesOf(op.type);
      else
        onlySliced = false;
    }
    if (used)
      bytes += onlySliced ? std::min(sliced, bytesOf(program.inputs[id]))
                          : bytesOf(program.inputs[id]);
  }
  for (int id : program.outputs)
    if (id >= inputs)
      bytes += bytesOf(program.typeOf(id));
  return bytes;
}

/// Multiply-adds of the program's matmuls and convolutions, times two.
double minimumFlops(const ReferenceProgram &program) {
  double flops = 0;
  for (const RefOp &op : program.ops) {
    if (op.args.size() < 2)
      continue;
    const TensorType &b = program.typeOf(op.args[1]);
    if (op.fn == RefFn::Matmul) {
      const TensorType &a = program.typeOf(op.args[0]);
      if (a.shape.empty())
        continue;
      flops += 2.0 * double(op.type.numElements()) * double(a.shape.back());
    } else if (op.fn == RefFn::Conv && b.shape.size() >= 2) {
      double perOutput = 1;
      for (size_t d = 1; d < b.shape.size(); ++d)
        perOutput *= double(b.shape[d]);
      flops += 2.0 * double(op.type.numElements()) * perOutput;
    }
  }
  return flops;
}

/// The baseline by name, for a reason.
std::string baselineDescription(const std::string &name) {
  if (name == "reference")
    return "the reference program";
  if (name == "eager")
    return "eager PyTorch";
  if (name == "inductor")
    return "Inductor's code";
  return "the baseline";
}

} // namespace

void Checker::timeAndJudge(const c10::OperatorHandle &op,
                         const DynamicCheckRequest &request,
                         DynamicCheckOutcome &outcome) {
  Verdict &verdict = outcome.verdict;
  const ReferenceProgram &program = request.program;
  c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
  std::vector<at::Tensor> inputs;
  {
    DeviceLock::Guard inUse = DeviceLock::process().shared();
    inputs = firstTrialInputs(program, request.seed, cuda);
  }

  // Against a device time (the torch.compile backend's Inductor time), the
  // candidate is timed by its kernels' durations too; without a kernel
  // trace that comparison cannot be made fairly, so it is not made.
  bool deviceTime = request.baselineIsDeviceTime;
  if (deviceTime && !tracer) {
    setVerdict(verdict, VerdictStatus::Unverified,
               "the baseline is a device time, and this worker cannot trace "
               "kernels to time the candidate the same way (" +
                   checkerInfo.tracing + ")");
    return;
  }
  TimingPlan plan{request.timingRuns, request.timingPrecision};
  TimingStats kernel;
  auto call = [&] {
    std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
    op.callBoxed(&stack);
  };
  try {
    // Timed runs have the GPU to themselves (DeviceLock.h).
    DeviceLock::Guard alone = DeviceLock::process().exclusive();
    kernel = deviceTime
                 ? deviceTimeOnCurrentStream(call, plan, *tracer)
                 : timeOnCurrentStream(call, plan);
  } catch (const TraceFailure &failure) {
    setVerdict(verdict, VerdictStatus::Unverified,
               "cannot time the candidate's kernels: " + failure.message);
    return;
  } catch (const CudaFault &fault) {
    setVerdict(verdict, VerdictStatus::Crashed,
               "the candidate left CUDA error " + fault.name + " (" +
                   fault.message +
                   ") during the timing runs; check indexing and bounds in "
                   "its kernels");
    outcome.contextPoisoned =
        isStickyError(static_cast<cudaError_t>(fault.code)) ||
        contextIsBroken();
    return;
  } catch (const std::exception &e) {
    setVerdict(verdict, VerdictStatus::Incorrect,
               "the candidate threw during the timing runs: " +
                   exceptionMessage(e));
    return;
  }
  lap(outcome, "timing_candidate");
  // The timed runs called the candidate many times on one input; what it
  // returns after them must still be right.
  bool stateKept;
  {
    DeviceLock::Guard inUse = DeviceLock::process().shared();
    stateKept = checkStateAcrossCalls(op, request, outcome);
  }
  lap(outcome, "state_across_calls");
  if (!stateKept)
    return;
  Json timing = {{"measure", deviceTime ? "device_time" : "event_time"},
                 {"runs", kernel.runs},
                 {"precision", plan.precision},
                 {"warmup_runs", kernel.warmupRuns},
                 {"l2_flush_bytes", kernel.flushBytes},
                 {"kernel", {{"median_ms", kernel.medianMs},
                             {"min_ms", kernel.minMs},
                             {"p10_ms", kernel.p10Ms},
                             {"p90_ms", kernel.p90Ms},
                             {"max_ms", kernel.maxMs}}}};

  // The speed to beat is the fastest of the caller's times and, unless
  // the caller measured the baseline itself, the reference program timed
  // here by the same clock as the candidate.
  verdict.baselines = request.givenBaselines;
  Json baselines = Json::object();
  for (const auto &[name, ms] : request.givenBaselines)
    baselines[name] = {{"given_ms", ms}};
  if (request.timeReference) {
    auto reference = [&] {
      ReferenceRun run = runReferenceProgram(program, inputs, cuda);
      if (!run.ok())
        throw std::runtime_error("the baseline failed: " + run.error);
    };
    TimingStats baseline;
    try {
      DeviceLock::Guard alone = DeviceLock::process().exclusive();
      baseline = deviceTime ? deviceTimeOnCurrentStream(reference, plan, *tracer)
                            : timeOnCurrentStream(reference, plan);
    } catch (const TraceFailure &failure) {
      setVerdict(verdict, VerdictStatus::Unverified,
                 "cannot time the reference program's kernels: " + failure.message);
      return;
    }
    lap(outcome, "timing_baseline");
    verdict.baselines["reference"] = baseline.medianMs;
    baselines["reference"] = {{"median_ms", baseline.medianMs},
                              {"runs", baseline.runs},
                              {"min_ms", baseline.minMs},
                              {"p10_ms", baseline.p10Ms},
                              {"p90_ms", baseline.p90Ms},
                              {"max_ms", baseline.maxMs}};
  }
  auto fastest = std::min_element(
      verdict.baselines.begin(), verdict.baselines.end(),
      [](const auto &a, const auto &b) { return a.second < b.second; });
  verdict.baseline = fastest->first;
  double baselineMs = fastest->second;
  timing["baselines"] = baselines;
  timing["baseline"] = verdict.baseline;
  outcome.details["timing"] = timing;

  double kernelMs = std::max(kernel.medianMs, 1e-6);
  double bytes = minimumBytes(program);
  double flops = minimumFlops(program);
  double boundMs = speedOfLightMs(bytes, flops, speed);
  outcome.details["speed_of_light"] = {
      {"bytes", bytes},
      {"flops", flops},
      {"bandwidth_gbs", speed.bandwidthGBs},
      {"peak_tflops", speed.peakTflops},
      {"bound_ms", boundMs},
      {"margin", kSpeedOfLightMargin}};
  verdict.setTimings(kernelMs, std::max(baselineMs, 0.0));
  if (kernelMs < kSpeedOfLightMargin * boundMs) {
    setVerdict(verdict, VerdictStatus::Deceptive,
               "faster than the hardware allows: " + number(kernelMs) +
                   " ms, but moving " + number(bytes / 1e6) + " MB at " +
                   number(speed.bandwidthGBs) + " GB/s and computing " +
                   number(flops / 1e9) + " GFLOP at " +
                   number(speed.peakTflops) + " TFLOP/s takes at least " +
                   number(boundMs) +
                   " ms; the timed calls cannot be doing the work");
    return;
  }
  if (*verdict.speedup >= request.minSpeedup) {
    setVerdict(verdict, VerdictStatus::Accepted, "");
    return;
  }
  setVerdict(verdict, VerdictStatus::Slow,
             "correct, but " + number(*verdict.speedup) + "x the speed of " +
                 baselineDescription(verdict.baseline) + " (" +
                 number(kernelMs) + " ms vs " + number(baselineMs) +
                 " ms); at least " + number(request.minSpeedup) +
                 "x is required");
}

} // namespace dynamic_check
} // namespace dice
