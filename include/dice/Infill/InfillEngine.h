//===- InfillEngine.h - what fills a kernel request's hole ------*- C++ -*-===//
//
// The compiler core asks an InfillEngine for candidate kernels; the embedded
// DICE model (model/), a replay file and test doubles implement it. The
// interface is plain C++ (no LLVM, no LibTorch, no exceptions across it) so
// that LLVM-built passes and LibTorch-built engines meet here.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_INFILL_INFILLENGINE_H
#define DICE_INFILL_INFILLENGINE_H

#include "dice/Config/Config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dice {

/// One decoded answer.
struct Candidate {
  std::string text;            ///< decoded answer (no prompt)
  std::vector<int32_t> tokens; ///< generated token ids
  /// Per generated token: the denoising step (counted over the whole answer)
  /// at which it was unmasked, and its probability then. The trainer
  /// rebuilds each token's decoding context from these.
  std::vector<int32_t> unmaskStep;
  std::vector<float> probability;
  bool stopped = false; ///< ended on a stop id rather than max_tokens
};

/// Candidates, or why there are none.
struct CandidatesOrError {
  std::vector<Candidate> candidates;
  std::string error; ///< empty on success

  explicit operator bool() const { return error.empty(); }
};

class InfillEngine {
public:
  virtual ~InfillEngine() = default;

  /// A short name for reports ("dice-8b", "replay:kernels.jsonl").
  virtual std::string name() const = 0;

  /// Decodes `n` candidates for one prompt together (the verification
  /// group). `prompt` is the full chat-formatted prompt text.
  virtual CandidatesOrError generateCandidates(const std::string &prompt,
                                               int n,
                                               const SamplingConfig &params) = 0;
};

} // namespace dice

#endif // DICE_INFILL_INFILLENGINE_H
