//===- CandidateTiming.cpp - events, L2 flush, device speed ---------------===//
//
// Every timed run starts from a cold L2: a buffer several times the L2's
// size is written first, so that inputs come from HBM for the candidate and
// the baseline alike and a kernel cannot look fast by finding its inputs
// cached from the previous run. The flush is outside the events.
//
//===----------------------------------------------------------------------===//

#include "CandidateTiming.h"

#include "KernelTrace.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace dice {
namespace {

/// Throws the CudaFault of `error` unless it is success.
void checkCuda(cudaError_t error) {
  if (error == cudaSuccess)
    return;
  throw CudaFault{cudaGetErrorName(error), cudaGetErrorString(error),
                  static_cast<int>(error)};
}

/// Synchronizes the device; a pending error, sticky or not, becomes a
/// CudaFault.
void synchronize() {
  cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess)
    error = cudaGetLastError();
  checkCuda(error);
}

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    checkCuda(cudaEventCreate(&start));
    checkCuda(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Events(const Events &) = delete;
  Events &operator=(const Events &) = delete;
};

double quantile(const std::vector<double> &sorted, double q) {
  if (sorted.empty())
    return 0;
  double position = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(position));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = position - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

/// Times `runs` runs of `run` with events on the current stream.
std::vector<double> eventTimes(const std::function<void()> &run, int64_t runs,
                               const std::function<void()> &beforeEach) {
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  Events events;
  std::vector<double> times;
  times.reserve(static_cast<size_t>(runs));
  for (int64_t i = 0; i < runs; ++i) {
    if (beforeEach)
      beforeEach();
    checkCuda(cudaEventRecord(events.start, stream));
    run();
    checkCuda(cudaEventRecord(events.stop, stream));
    synchronize();
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, events.start, events.stop));
    times.push_back(ms);
  }
  return times;
}

/// Adds `times` to the ascending `sorted`.
void insertSorted(std::vector<double> &sorted, const std::vector<double> &times) {
  for (double t : times)
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), t), t);
}

/// Fills the order statistics of `times` (milliseconds, any order).
void summarise(std::vector<double> times, TimingStats &stats) {
  std::sort(times.begin(), times.end());
  stats.runs = static_cast<int64_t>(times.size());
  stats.minMs = times.front();
  stats.maxMs = times.back();
  stats.medianMs = quantile(times, 0.5);
  stats.p10Ms = quantile(times, 0.1);
  stats.p90Ms = quantile(times, 0.9);
}

/// A flush buffer of four times the L2 and the call that writes it.
struct L2Flush {
  at::Tensor buffer;
  int64_t bytes = 0, count = 0;
  L2Flush() {
    const cudaDeviceProp *props = at::cuda::getCurrentDeviceProperties();
    bytes = 4 * std::max<int64_t>(props->l2CacheSize, 1 << 20);
    buffer = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  }
  /// A memset, not a kernel: no kernel record of it joins a run's trace.
  void operator()() {
    checkCuda(cudaMemsetAsync(buffer.data_ptr(), static_cast<int>(++count & 0xff),
                              static_cast<size_t>(bytes),
                              c10::cuda::getCurrentCUDAStream().stream()));
  }
};

/// Warm-up runs: first-call costs (module loading, allocator growth, cuBLAS
/// heuristics for the baseline) stay out of the measurement.
void warmUp(const std::function<void()> &run, int64_t runs, TimingStats &stats) {
  stats.warmupRuns = std::clamp<int64_t>(runs / 10, 3, 10);
  for (int64_t i = 0; i < stats.warmupRuns; ++i)
    run();
  synchronize();
}

/// The runs to take next: the minimum first, then a few at a time until
/// the plan is met; all at once when the plan never stops early.
int64_t nextBlock(size_t done, const TimingPlan &plan) {
  int64_t n = static_cast<int64_t>(done);
  int64_t block = plan.precision > 0 ? (n == 0 ? plan.minRuns() : 5) : plan.maxRuns;
  return std::min(block, plan.maxRuns - n);
}

} // namespace

TimingStats deviceTimeOnCurrentStream(const std::function<void()> &run,
                                      const TimingPlan &asked,
                                      KernelTracer &tracer) {
  TimingPlan plan = asked;
  plan.maxRuns = std::max<int64_t>(plan.maxRuns, 1);
  TimingStats stats;
  L2Flush flush;
  stats.flushBytes = flush.bytes;
  warmUp(run, plan.maxRuns, stats);

  std::vector<double> sorted;
  while (!timingIsDone(sorted, plan)) {
    int64_t runs = nextBlock(sorted.size(), plan);
    std::string error;
    if (!tracer.begin(c10::cuda::getCurrentCUDAStream().stream(), error))
      throw TraceFailure{error};
    // Each run's window on CUPTI's clock: runs are separated by device
    // synchronizations, so a kernel belongs to the window it started in.
    std::vector<std::pair<uint64_t, uint64_t>> windows;
    try {
      for (int64_t i = 0; i < runs; ++i) {
        flush();
        synchronize();
        uint64_t start = KernelTracer::timestamp();
        run();
        synchronize();
        windows.emplace_back(start, KernelTracer::timestamp());
      }
    } catch (...) {
      tracer.end();
      throw;
    }
    KernelTraceResult trace = tracer.end();
    if (!trace.problem.empty())
      throw TraceFailure{"the device-time trace failed: " + trace.problem};
    std::vector<double> times(windows.size(), 0.0);
    for (auto [start, end] : trace.spans)
      for (size_t i = 0; i < windows.size(); ++i)
        if (start >= windows[i].first && start < windows[i].second) {
          times[i] += static_cast<double>(end - start) / 1e6;
          break;
        }
    insertSorted(sorted, times);
  }
  summarise(std::move(sorted), stats);
  return stats;
}

TimingStats timeOnCurrentStream(const std::function<void()> &run,
                                const TimingPlan &asked) {
  TimingPlan plan = asked;
  plan.maxRuns = std::max<int64_t>(plan.maxRuns, 1);
  TimingStats stats;
  L2Flush flushL2;
  stats.flushBytes = flushL2.bytes;
  warmUp(run, plan.maxRuns, stats);

  std::vector<double> sorted;
  while (!timingIsDone(sorted, plan))
    insertSorted(sorted, eventTimes(run, nextBlock(sorted.size(), plan),
                                    [&] { flushL2(); }));
  summarise(std::move(sorted), stats);
  return stats;
}

DeviceSpeed measureDeviceSpeed() {
  DeviceSpeed speed;
  auto cuda = at::TensorOptions().device(at::kCUDA);

  // Copy bandwidth: a device-to-device copy reads and writes every byte.
  size_t freeBytes = 0, totalBytes = 0;
  checkCuda(cudaMemGetInfo(&freeBytes, &totalBytes));
  int64_t bytes = std::min<int64_t>(int64_t(1) << 30,
                                    static_cast<int64_t>(freeBytes / 8));
  bytes = std::max<int64_t>(bytes, int64_t(64) << 20);
  at::Tensor src = at::empty({bytes}, cuda.dtype(at::kByte));
  at::Tensor dst = at::empty({bytes}, cuda.dtype(at::kByte));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  auto copy = [&] {
    checkCuda(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(),
                              static_cast<size_t>(bytes),
                              cudaMemcpyDeviceToDevice, stream));
  };
  for (int i = 0; i < 3; ++i)
    copy();
  synchronize();
  std::vector<double> copyMs = eventTimes(copy, 10, nullptr);
  double bestCopy = *std::min_element(copyMs.begin(), copyMs.end());
  speed.bandwidthGBs = 2.0 * static_cast<double>(bytes) / (bestCopy * 1e-3) / 1e9;
  src.reset();
  dst.reset();

  // Matmul peak: bf16 on tensor cores is the fastest any dtype of the
  // vocabulary computes, so the bound it gives is never too tight.
  const int64_t n = 8192;
  at::Tensor a = at::randn({n, n}, cuda.dtype(at::kBFloat16));
  at::Tensor b = at::randn({n, n}, cuda.dtype(at::kBFloat16));
  at::Tensor c = at::empty({n, n}, cuda.dtype(at::kBFloat16));
  auto matmul = [&] { at::mm_out(c, a, b); };
  for (int i = 0; i < 3; ++i)
    matmul();
  synchronize();
  std::vector<double> matmulMs = eventTimes(matmul, 10, nullptr);
  double bestMatmul = *std::min_element(matmulMs.begin(), matmulMs.end());
  speed.peakTflops =
      2.0 * double(n) * double(n) * double(n) / (bestMatmul * 1e-3) / 1e12;
  return speed;
}

double speedOfLightMs(double bytes, double flops, const DeviceSpeed &speed) {
  double memoryMs =
      speed.bandwidthGBs > 0 ? bytes / (speed.bandwidthGBs * 1e9) * 1e3 : 0;
  double computeMs =
      speed.peakTflops > 0 ? flops / (speed.peakTflops * 1e12) * 1e3 : 0;
  return std::max(memoryMs, computeMs);
}

} // namespace dice
