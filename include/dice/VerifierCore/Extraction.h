//===- Extraction.h - the CUDA source of a model answer ---------*- C++ -*-===//
//
// Takes the hole out of what the model wrote: the CUDA C++ string assigned to
// `source` in a DICE-format answer (or the `cuda_sources` string of a
// KernelBench-style `load_inline` program). Everything around the hole is the
// compiler's, so nothing else the model wrote is kept. Plain C++ (no LLVM, no
// LibTorch): the compiler and the GPU worker both use it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_EXTRACTION_H
#define DICE_VERIFIERCORE_EXTRACTION_H

#include <string>
#include <string_view>

namespace dice {

enum class ExtractionStatus {
  Extracted,   ///< `cudaSource` holds the hole's CUDA source
  CompileError ///< the answer holds no usable source; `reason` says why
};

/// The verdict status name of `status` ("extracted", "compile_error").
std::string_view extractionStatusName(ExtractionStatus status);

struct ExtractionResult {
  ExtractionStatus status = ExtractionStatus::CompileError;
  /// A sentence naming the line of the answer at fault (empty on success).
  std::string reason;
  /// The decoded string value: what `load_inline` would have compiled.
  std::string cudaSource;
  /// The Python name the source was assigned to ("source", "cuda_source", ...).
  std::string variable;
  /// 1-based line of the model output where the string literal starts.
  unsigned line = 0;

  bool ok() const { return status == ExtractionStatus::Extracted; }
};

/// Extracts the hole from `modelOutput`: a whole DICE-format Python program,
/// an answer with a fenced ```python``` block, or the bare infilling answer
/// `source = """..."""`.
ExtractionResult extractCandidateSource(std::string_view modelOutput);

} // namespace dice

#endif // DICE_VERIFIERCORE_EXTRACTION_H
