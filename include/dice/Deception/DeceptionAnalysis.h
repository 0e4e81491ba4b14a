//===- DeceptionAnalysis.h - static checks of candidate kernels -*- C++ -*-===//
//
// Finds the ways a candidate can pass the correctness and timing checks
// without computing the request in its own kernels: calling PyTorch or a
// vendor library, launching no kernel, escaping the timed stream, caching
// results between calls, or talking to the outside world. Clang parses the
// candidate as CUDA with the prologue the verifier compiles it with; no GPU
// is needed.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_DECEPTION_DECEPTIONANALYSIS_H
#define DICE_DECEPTION_DECEPTIONANALYSIS_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

enum class DeceptionKind {
  TorchCompute,      ///< an ATen/torch op computes instead of a kernel
  VendorLibrary,     ///< cuBLAS, cuDNN, cuFFT, cuSPARSE, thrust, cub::Device*
  NoKernel,          ///< the source defines no __global__ kernel
  UnreachableKernel, ///< a kernel dice_forward never launches
  StreamOrGraph,     ///< work moved off the timed stream
  Threads,           ///< host threads or OpenMP
  PersistentState,   ///< mutable state that survives between calls
  SystemAccess,      ///< processes, files, network, environment, dlopen
  InlinePtxControl,  ///< inline PTX that branches, traps or exits
};

/// The stable name of `kind` ("torch_compute", "no_kernel", ...), as used in
/// verdict reasons and the corpus labels.
std::string_view deceptionKindName(DeceptionKind kind);
/// The kind named `name`, or nothing.
std::optional<DeceptionKind> parseDeceptionKind(std::string_view name);

struct DeceptionFinding {
  DeceptionKind kind;
  unsigned line; ///< 1-based line in the candidate's CUDA source
  std::string message;

  /// `line N: kind: message`.
  std::string format() const;
};

enum class AnalysisOutcome {
  Analyzed,    ///< the TU parsed; `findings` is complete
  CompileError ///< clang rejected the TU; `error` says where
};

struct DeceptionReport {
  AnalysisOutcome outcome = AnalysisOutcome::Analyzed;
  std::vector<DeceptionFinding> findings; ///< in source order
  std::string error;                      ///< first clang error, with its line
  double milliseconds = 0;                ///< parse + analysis

  bool deceptive() const {
    return outcome == AnalysisOutcome::Analyzed && !findings.empty();
  }
};

/// How to parse a candidate. The defaults match the verifier's compile:
/// `prologueDir` holds dice_prologue.h and the <torch/extension.h> override.
struct AnalysisOptions {
  std::string cudaPath = "/usr/local/cuda";
  std::string gpuArch = "sm_90";
  std::string prologueDir;
  std::vector<std::string> includeDirs; ///< LibTorch's, CCCL's, ...
  /// A precompiled prologue (see buildProloguePch); empty: parse the headers
  /// for every candidate (tens of seconds).
  std::string pchPath;
  std::vector<std::string> extraArgs;
};

/// Parses `cudaSource` (the hole: includes, kernels, dice_forward) and
/// reports every deception finding. Never throws; a TU clang rejects is a
/// CompileError outcome, not a finding.
DeceptionReport analyzeCandidate(const std::string &cudaSource,
                                 const AnalysisOptions &options);

/// Precompiles the prologue to `outputPath` for `options` (pchPath is
/// ignored). Returns the error text, or nothing on success.
std::optional<std::string> buildProloguePch(const AnalysisOptions &options,
                                            const std::string &outputPath);

} // namespace dice

#endif // DICE_DECEPTION_DECEPTIONANALYSIS_H
