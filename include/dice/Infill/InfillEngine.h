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
#include "dice/Support/Result.h"

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
  /// The rest of the last decoded block after the answer's end (a stop id
  /// or max_tokens mid-block): decoded, not part of the answer, but context
  /// in which the answer's last tokens were decoded; with their steps.
  std::vector<int32_t> trailingTokens;
  std::vector<int32_t> trailingSteps;
  bool stopped = false; ///< ended on a stop id rather than max_tokens
  /// `text` is the CUDA source of the hole itself, not an answer to extract
  /// it from (a replay of sources).
  bool isCudaSource = false;
};

/// What an engine is asked to fill: one kernel request's hole.
struct InfillRequest {
  /// The request's fingerprint. Engines that answer from a record of earlier
  /// answers (a replay file) look it up; the model ignores it.
  std::string fingerprint;
  std::string prompt; ///< the full chat-formatted prompt text
};

class InfillEngine {
public:
  virtual ~InfillEngine() = default;

  /// A short name for reports ("dice-8b", "replay:kernels.jsonl").
  virtual std::string name() const = 0;

  /// Decodes `n` candidates for one request together (the verification
  /// group). An engine may return fewer (a replay has what it recorded).
  virtual Result<std::vector<Candidate>>
  generateCandidates(const InfillRequest &request, int n,
                     const SamplingConfig &params) = 0;

  /// A prompt with no request behind it (tools that try the model alone).
  Result<std::vector<Candidate>>
  generateCandidates(const std::string &prompt, int n,
                     const SamplingConfig &params) {
    return generateCandidates(InfillRequest{"", prompt}, n, params);
  }
};

} // namespace dice

#endif // DICE_INFILL_INFILLENGINE_H
