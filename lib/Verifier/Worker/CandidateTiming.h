//===- CandidateTiming.h - timing calls on the current stream ---*- C++ -*-===//
//
// How the GPU worker times a candidate and its baseline: warm-up runs, an L2
// flush before every timed run, CUDA events around each run on the current
// stream with a device synchronize, and order statistics of the runs. Also
// the device's measured copy bandwidth and matmul peak, from which the
// worker derives a speed-of-light bound for each request.
//
// Part of the worker's torch-side library (DiceVerifierWorker); the header
// itself names no LibTorch or CUDA types.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_CANDIDATETIMING_H
#define DICE_VERIFIERWORKER_CANDIDATETIMING_H

#include "dice/VerifierCore/TimingRule.h"

#include <cstdint>
#include <functional>
#include <string>

namespace dice {

/// Milliseconds per run over `runs` timed runs (as many as the plan's rule
/// needed, TimingRule.h).
struct TimingStats {
  double medianMs = 0;
  double minMs = 0;
  double p10Ms = 0;
  double p90Ms = 0;
  double maxMs = 0;
  int64_t runs = 0;
  int64_t warmupRuns = 0;
  int64_t flushBytes = 0; ///< L2 flush written before each run
};

/// A CUDA error left by a timed run; what `timeOnCurrentStream` throws.
struct CudaFault {
  std::string name;    ///< e.g. "cudaErrorIllegalAddress"
  std::string message; ///< the runtime's description
  int code = 0;        ///< the cudaError_t
};

/// Times `run` on the current CUDA stream until `plan` is met. Throws what
/// `run` throws, or a CudaFault when a run leaves a CUDA error.
TimingStats timeOnCurrentStream(const std::function<void()> &run,
                                const TimingPlan &plan);

class KernelTracer;

/// A kernel trace that could not be taken: the machine's, not the
/// candidate's, fault.
struct TraceFailure {
  std::string message;
};

/// Times `run` by its device work: per run, the summed durations of the
/// kernels it launched (CUPTI activity records), each run after an L2
/// flush, so that launch latency and host work count for nothing. The way
/// the torch.compile backend times Inductor's code, for comparing against
/// it. Throws like timeOnCurrentStream, and TraceFailure when the trace
/// cannot be taken. Work done outside kernels (copies, memsets) is not
/// counted; the speed-of-light check still bounds what a run can skip.
/// The trace is read in blocks of runs, so that `plan`'s rule can stop it.
TimingStats deviceTimeOnCurrentStream(const std::function<void()> &run,
                                      const TimingPlan &plan,
                                      KernelTracer &tracer);

/// What one device can do, measured once per worker.
struct DeviceSpeed {
  double bandwidthGBs = 0; ///< device-to-device copy, read plus write
  double peakTflops = 0;   ///< large bf16 matmul
};

/// Measures the current device; throws c10::Error or CudaFault on failure.
DeviceSpeed measureDeviceSpeed();

/// The lower bound on a run's time: `bytes` at the measured bandwidth or
/// `flops` at the measured peak, whichever takes longer.
double speedOfLightMs(double bytes, double flops, const DeviceSpeed &speed);

} // namespace dice

#endif // DICE_VERIFIERWORKER_CANDIDATETIMING_H
