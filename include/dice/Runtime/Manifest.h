//===- Manifest.h - the manifest dice-lower writes ---------------*- C++ -*-===//
//
// The one reader and writer of `manifest.json` (docs/runtime.md): dice-lower
// writes it, and the runtime (lib/Runtime), dice-reference-run and, through
// the runtime's C ABI, python/dice read it. Plain C++: the LLVM-built
// dice-lower and the LibTorch-built runtime both link it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_RUNTIME_MANIFEST_H
#define DICE_RUNTIME_MANIFEST_H

#include "dice/Reference/ReferenceProgram.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

constexpr int kManifestVersion = 1;

/// One tensor of a kernel's signature.
struct ManifestTensor {
  std::vector<int64_t> shape; ///< -1: a size known only at run time
  DType dtype = DType::Float32;
};

/// One accepted kernel, keyed by its fingerprint in `Manifest::kernels`.
struct ManifestKernel {
  /// The kernel library, relative to the manifest's folder or absolute;
  /// empty for an op that the process registers some other way.
  std::string library;
  std::string operatorName; ///< the dispatcher op, "dice::k_<fingerprint>"
  std::string symbol;       ///< the declaration in the lowered IR
  std::vector<ManifestTensor> inputs, results;
  /// The kernel's verdict as a JSON object in the verifier's spelling
  /// (docs/verifier.md), kept as text: the manifest carries it for people
  /// and tools, and nothing here interprets it. Empty when there is none.
  std::string verdictJson;
};

struct Manifest {
  std::map<std::string, ManifestKernel> kernels;
};

/// Parses manifest text; `path` names it in errors, which carry the line
/// and column of malformed JSON and the kernel and field of a bad entry.
Result<Manifest> parseManifest(std::string_view text, const std::string &path);

/// Reads and parses the manifest at `path`.
Result<Manifest> readManifest(const std::string &path);

/// The manifest as JSON text, two-space indented, ending in a newline.
/// Fails only on an entry whose `verdictJson` is not a JSON object.
Result<std::string> printManifest(const Manifest &manifest);

/// Where `kernel`'s library is for the manifest at `manifestPath`: its
/// `library` when absolute, else beside the manifest.
std::string libraryPath(const std::string &manifestPath,
                        const ManifestKernel &kernel);

} // namespace dice

#endif // DICE_RUNTIME_MANIFEST_H
