//===- KernelTrace.h - which kernels a candidate call ran -------*- C++ -*-===//
//
// Traces the GPU kernels launched while a candidate runs, with CUPTI: launch
// callbacks say which shared object launched each kernel and on which
// stream, kernel activity records say what actually ran. The GPU worker uses
// it to tell a candidate's own kernels from ATen's, cuBLAS's or a replayed
// graph's.
//
// Part of the worker's torch-side library (DiceVerifierWorker); the header
// itself names no LibTorch or CUDA types, so the worker's driver compiles
// without them.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_KERNELTRACE_H
#define DICE_VERIFIERWORKER_KERNELTRACE_H

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dice {

/// One kernel launch seen during a trace.
struct TracedKernel {
  std::string api;    ///< the launching entry point, e.g. "cudaLaunchKernel"
  std::string name;   ///< demangled kernel name; from the activity record
  std::string module; ///< the shared object holding the launch; empty: unknown
  bool ownLibrary = false; ///< launched from the candidate's library
  bool driverApi = false;  ///< launched through cuLaunchKernel*, not the runtime
  /// Launched on the stream that was current when the trace began.
  bool onCurrentStream = true;
  bool ran = false;      ///< an activity record of its execution arrived
  uint32_t streamId = 0; ///< CUPTI's stream id; valid when `ran`
};

struct KernelTraceResult {
  std::vector<TracedKernel> launches; ///< in launch order
  /// Kernels that ran without a launch the trace saw (a CUDA graph, a
  /// launch path the trace does not hook), as demangled names.
  std::vector<std::string> untraced;
  /// What went wrong with the trace itself (dropped records); empty if
  /// nothing did. A trace with a problem must not count as clean.
  std::string problem;
  /// [start, end) of every kernel that ran, traced or not, in CUPTI's
  /// nanosecond clock (KernelTracer::timestamp).
  std::vector<std::pair<uint64_t, uint64_t>> spans;
};

/// Process-wide CUPTI subscription; at most one exists. Create it before
/// CUDA is initialised: the kernel handles of the `<<<>>>` launch path are
/// mapped to their host stubs when each library first resolves them.
class KernelTracer {
public:
  /// Subscribes to CUPTI; null with `error` set when CUPTI cannot be used
  /// (a profiler already attached, no libcupti).
  static std::unique_ptr<KernelTracer> create(std::string &error);
  ~KernelTracer();

  KernelTracer(const KernelTracer &) = delete;
  KernelTracer &operator=(const KernelTracer &) = delete;

  /// Launches from the shared object at `path` (as `dlinfo` reports it) are
  /// the candidate's own.
  void setOwnLibrary(std::string path);

  /// Starts recording launches on every thread. `currentStream` is the
  /// `cudaStream_t` the candidate is expected to launch on. Call after a
  /// device synchronize, so that no earlier work shows up.
  bool begin(const void *currentStream, std::string &error);
  /// Stops recording and returns the launches since `begin`. Call after a
  /// device synchronize, so that every kernel has finished.
  KernelTraceResult end();

  /// CUPTI's clock now, in nanoseconds: the clock of `spans`.
  static uint64_t timestamp();

private:
  KernelTracer() = default;
};

/// The file name of a module path ("libtorch_cuda.so" of ".../lib/
/// libtorch_cuda.so"); empty for an empty path.
std::string moduleBaseName(const std::string &path);

/// `mangled` without GCC's internal-linkage markers (`_ZL3foo` and the `L`
/// before a name in a nested name, `_ZN2ns_L3fooE`): nvcc gives the host
/// stub of a kernel template inside a namespace internal linkage, while
/// the kernel's own (device) name has none. Other names come back as they
/// are.
std::string withoutInternalLinkage(const std::string &mangled);

/// Whether a kernel of another library is plumbing that a candidate may
/// run: ATen's fill and copy kernels behind `torch::zeros`, `zero_`,
/// `contiguous` and friends, which the static allowlist admits. Decided by
/// the module (a LibTorch library) and the demangled name.
bool isAllowedPlumbingKernel(const TracedKernel &kernel);

} // namespace dice

#endif // DICE_VERIFIERWORKER_KERNELTRACE_H
