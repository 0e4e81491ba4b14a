//===- LoweredArtifacts.h - what dice-lower leaves on disk ------*- C++ -*-===//
//
// A lowered program runs from an artifacts folder: each accepted kernel's
// library (a copy of the verifier's build), one C-interface trampoline per
// kernel that forwards the MLIR calling convention to dice_runtime_call, and
// the manifest the runtime loads them by (docs/runtime.md). dice-lower
// rewrites the IR; this library writes the folder, each file through the
// writer it is given (the driver's services: whole or not at all). Plain
// C++, like the manifest.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_RUNTIME_LOWEREDARTIFACTS_H
#define DICE_RUNTIME_LOWEREDARTIFACTS_H

#include "dice/Runtime/Manifest.h"
#include "dice/Support/Result.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// Writes one file in one piece (a reader never sees half of it).
using ArtifactWriter =
    std::function<Status(const std::string &path, std::string_view contents)>;

/// What is known of one kernel a lowered program calls.
struct LoweredKernel {
  std::string fingerprint;
  std::string builtLibrary; ///< the verifier's build of the kernel
  std::vector<ManifestTensor> inputs, results;
  std::string verdictJson; ///< the verifier's JSON of its verdict
};

/// Creates `dir` if needed; returns the absolute path of its manifest (the
/// trampolines open it wherever the program runs from).
Result<std::string> prepareArtifactsDir(const std::string &dir);

/// Writes `kernel`'s library (unless the same bytes are there) and its
/// trampoline into `dir`, and returns its manifest entry.
Result<ManifestKernel> writeKernelArtifacts(const std::string &dir,
                                            const std::string &manifestPath,
                                            const LoweredKernel &kernel,
                                            const ArtifactWriter &write);

/// Merges `entries` (by fingerprint) into the manifest at `manifestPath`,
/// holding a lock beside it so that lowerings sharing the folder merge one
/// at a time. A manifest that cannot be read is an error at its own line.
Status mergeIntoManifest(const std::string &manifestPath,
                         const std::map<std::string, ManifestKernel> &entries,
                         const ArtifactWriter &write);

/// The C source of kernel `fingerprint`'s `_mlir_ciface_dice_k_<fp>`:
/// results come first, through one pointer (a descriptor, or a struct of
/// descriptors when there are several), then one descriptor pointer per
/// input; ranks and dtypes are fixed per kernel.
std::string trampolineSource(const std::string &fingerprint,
                             const std::string &manifestPath,
                             const std::vector<ManifestTensor> &inputs,
                             const std::vector<ManifestTensor> &results);

} // namespace dice

#endif // DICE_RUNTIME_LOWEREDARTIFACTS_H
