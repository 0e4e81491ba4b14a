//===- Artifacts.h - the files a compile leaves on disk ---------*- C++ -*-===//
//
// The kernel libraries a compile keeps and the folder a lowered program
// runs from: each accepted kernel's library (a copy of the verifier's
// build, or of the one the kernel database stored), one C-interface
// trampoline per kernel that forwards the MLIR calling convention to
// dice_runtime_call, and the manifest the runtime loads them by
// (docs/runtime.md). The passes rewrite IR; the files are this library's,
// each written through the writer it is given (the driver's services: whole
// or not at all). Plain C++, like the manifest.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_RUNTIME_ARTIFACTS_H
#define DICE_RUNTIME_ARTIFACTS_H

#include "dice/Runtime/Manifest.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// Writes one file in one piece (a reader never sees half of it).
using ArtifactWriter =
    std::function<Status(const std::string &path, std::string_view contents)>;

/// The bytes of a built kernel library, to keep in the kernel database.
Result<std::vector<uint8_t>> readKernelLibrary(const std::string &path);

/// Puts a library the kernel database kept (candidate `hash`) at
/// `<dir>/db/<hash>.so`, unless those bytes are there already, and returns
/// the path.
Result<std::string> placeStoredLibrary(const std::string &dir,
                                       const std::string &hash,
                                       const std::vector<uint8_t> &bytes,
                                       const ArtifactWriter &write);

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

#endif // DICE_RUNTIME_ARTIFACTS_H
