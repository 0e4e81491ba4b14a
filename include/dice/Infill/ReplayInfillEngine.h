//===- ReplayInfillEngine.h - candidates recorded in a file ------*- C++ -*-===//
//
// An InfillEngine that answers from a JSON-lines file instead of a model:
// reproducible compiles without a GPU, and tests of everything after the
// model. Each line is
//
//   {"fingerprint": "3f9a0c1d2e4b5a69", "candidate": "<a model answer>"}
//   {"fingerprint": "3f9a0c1d2e4b5a69", "cuda_source": "<the hole itself>"}
//
// A request gets every line of its fingerprint, in file order, whatever
// number of candidates was asked for; an unknown fingerprint gets none.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_INFILL_REPLAYINFILLENGINE_H
#define DICE_INFILL_REPLAYINFILLENGINE_H

#include "dice/Infill/InfillEngine.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dice {

class ReplayInfillEngine : public InfillEngine {
public:
  /// Reads the whole file; a malformed line is an error naming its file and
  /// line.
  static Result<std::unique_ptr<ReplayInfillEngine>>
  load(const std::string &path);

  std::string name() const override;
  Result<std::vector<Candidate>>
  generateCandidates(const InfillRequest &request, int n,
                     const SamplingConfig &params) override;
  using InfillEngine::generateCandidates;

private:
  explicit ReplayInfillEngine(std::string path) : path(std::move(path)) {}

  std::string path;
  std::map<std::string, std::vector<Candidate>> byFingerprint;
};

} // namespace dice

#endif // DICE_INFILL_REPLAYINFILLENGINE_H
