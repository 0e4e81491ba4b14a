//===- KernelBuild.h - a candidate's kernel library -------------*- C++ -*-===//
//
// Builds the artifact of a candidate: a shared object holding the candidate's
// CUDA source and a generated registration of `dice::k_<fingerprint>` with
// the c10 dispatcher (CUDA key). A light build compiles against a small
// tensor API over CUDA headers and registers through a bridge library; a
// candidate it cannot compile is built like the static analysis parses it,
// with LibTorch's headers (KernelBuildMode). Loading the library registers
// the operator;
// C++ calls it through the dispatcher, Python through
// `torch.ops.dice.k_<fingerprint>`.
//
// Builds are content addressed: the key covers everything that reaches the
// compiler, and a cached artifact is returned without compiling. Plain C++
// and POSIX (no LLVM, no LibTorch), so the GPU worker builds with it too.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_KERNELBUILD_KERNELBUILD_H
#define DICE_KERNELBUILD_KERNELBUILD_H

#include "dice/Support/Result.h"
#include "dice/VerifierCore/ForwardSignature.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// The dispatcher schema, `k_<fp>(Tensor x0, Tensor x1) -> Tensor` (`Tensor[]`
/// for several results).
std::string operatorSchema(std::string_view fingerprint,
                           const DiceForwardSignature &signature);

/// The generated registration source for `signature`. It names no
/// fingerprint (it reads the operator name from a symbol the candidate's
/// object defines), so one compiled copy serves every request of the same
/// signature.
std::string registrationSource(const DiceForwardSignature &signature);

/// The C entry and load-time registration appended to a light build's TU:
/// `dice_light_entry_k_<fp>` wraps bridge handles as light tensors and calls
/// dice_forward; a static initialiser registers `dice::k_<fp>` through the
/// bridge, and its destructor (dlclose) deregisters it.
std::string lightEntrySource(std::string_view fingerprint,
                             const DiceForwardSignature &signature);

/// Which headers a kernel library is compiled against.
enum class KernelBuildMode {
  /// Light first; a candidate that does not compile there is rebuilt with
  /// the full headers, whose diagnostics are reported. Full alone when no
  /// light include directory or bridge is configured.
  Auto,
  /// The light tensor API over CUDA headers (lightIncludeDir), linked
  /// against the bridge library; about a tenth of the full build's time.
  Light,
  /// LibTorch's headers (prologueDir, includeDirs) and a TORCH_LIBRARY
  /// registration.
  Full
};

std::string_view kernelBuildModeName(KernelBuildMode mode);

struct KernelBuildOptions {
  std::string nvccPath = "/usr/local/cuda/bin/nvcc";
  std::string gpuArch = "sm_90";
  /// Holds dice_prologue.h and the <torch/extension.h> override.
  std::string prologueDir;
  std::vector<std::string> includeDirs; ///< LibTorch's, CCCL's
  /// LibTorch's lib/ directory. The library is linked against it (with
  /// --no-undefined), so a dice_forward that does not match the signature
  /// fails the build, not the load; the worker's already-loaded torch
  /// libraries satisfy the dependencies at load time.
  std::string torchLibraryDir;
  /// Where artifacts and registration objects are kept.
  std::string cacheDir;
  double timeoutSeconds = 600; ///< per nvcc run
  /// Compile the registration once per signature into an object of its own
  /// and link it to each candidate; off: one TU with the registration
  /// appended (about 13% more nvcc time per candidate).
  bool separateRegistration = true;
  std::vector<std::string> extraFlags; ///< appended to every nvcc compile
  KernelBuildMode mode = KernelBuildMode::Auto;
  /// Holds the light dice_prologue.h, <torch/extension.h> and
  /// dice_light/bridge.h (DICE_LIGHT_INCLUDE_DIR).
  std::string lightIncludeDir;
  /// libDiceLightBridge.so (DICE_LIGHT_BRIDGE_LIBRARY); light libraries
  /// link against it with a runpath to its directory.
  std::string lightBridgeLibrary;
  /// buildAll: up to this many light candidates of distinct fingerprints
  /// share one nvcc run (GroupSource.h), a library for checking only; 1:
  /// each candidate is built alone. Fewer share a run when that leaves
  /// `jobs` idle.
  unsigned groupSize = 1;
};

struct KernelBuildRequest {
  std::string fingerprint; ///< [A-Za-z0-9_]+
  std::string signature;   ///< the dice_forward declaration
  std::string cudaSource;  ///< the extracted hole
};

enum class KernelBuildStatus {
  Built,        ///< `artifactPath` holds the library
  CompileError, ///< nvcc or the link rejected the candidate; see `diagnostics`
  Timeout,      ///< nvcc ran past the deadline and was killed
  ToolError     ///< the build could not run (no nvcc, bad request, disk)
};

std::string_view kernelBuildStatusName(KernelBuildStatus status);

struct KernelBuildResult {
  KernelBuildStatus status = KernelBuildStatus::ToolError;
  std::string key;          ///< the cache key (SHA-256 hex)
  std::string artifactPath; ///< the shared object, inside the cache
  /// One sentence with the first error and its candidate line.
  std::string reason;
  /// The first lines of the compiler output, paths reduced to
  /// `candidate.cu(LINE)` (candidate lines) and `dice_registration.cu(LINE)`.
  std::string diagnostics;
  double milliseconds = 0; ///< wall time of this call, cache hits included
  bool cacheHit = false;
  /// The headers of the build that produced this result (Light or Full).
  KernelBuildMode mode = KernelBuildMode::Full;
  /// Auto mode rebuilt with the full headers: the light build's first error.
  std::string lightFailure;
  /// The library holds other requests' candidates too (a group build): it
  /// registers every member's operator when loaded, so it is for checking,
  /// never for a kernel database or a lowered program; build the candidate
  /// alone (buildKernelLibrary) for those.
  bool sharedLibrary = false;

  bool ok() const { return status == KernelBuildStatus::Built; }
};

/// The cache key of `request` in the first mode a build tries: SHA-256 over
/// the mode, the candidate source, the generated code, nvcc's version, every
/// flag and the contents of the prologue (full) or light include directory.
Result<std::string> kernelBuildKey(const KernelBuildRequest &request,
                                   const KernelBuildOptions &options);

/// Builds (or finds in the cache) the kernel library of `request`.
KernelBuildResult buildKernelLibrary(const KernelBuildRequest &request,
                                     const KernelBuildOptions &options);

/// How far a batch is: `done` of `total` finished. Called one call at a
/// time, from whichever thread finished one.
using ProgressCallback = std::function<void(size_t done, size_t total)>;

/// Builds every request with up to `jobs` nvcc processes at once; results
/// in request order. Requests with the same key are built once (and count
/// once for `progress`). With `options.groupSize` above 1, light candidates
/// not in the cache share nvcc runs (their results are `sharedLibrary`); a
/// group that fails to build is split: the members its errors name are
/// built alone, the rest together once more, then alone; so every
/// candidate gets the verdict (and diagnostics) of its own build.
std::vector<KernelBuildResult>
buildAll(const std::vector<KernelBuildRequest> &requests,
         const KernelBuildOptions &options, unsigned jobs,
         const ProgressCallback &progress = {});

} // namespace dice

#endif // DICE_KERNELBUILD_KERNELBUILD_H
