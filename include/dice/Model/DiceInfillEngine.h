//===- DiceInfillEngine.h - the embedded DICE model as an engine -*- C++ -*-===//
//
// Tokenizer + transformer + block-diffusion sampler behind
// dice::InfillEngine. Plain C++: LLVM-built code may include this header;
// the implementation is built with LibTorch.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_DICEINFILLENGINE_H
#define DICE_MODEL_DICEINFILLENGINE_H

#include "dice/Infill/InfillEngine.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <memory>
#include <string>

namespace dice {

struct DiceEngineOptions {
  std::string device = "cuda"; ///< a torch device string: "cuda", "cuda:1", "cpu"
  /// "bfloat16", "float16", "float32"; "auto" or empty: computeDType's rule
  /// (the checkpoint's type on a GPU, float32 on the CPU).
  std::string dtype = "auto";
  uint64_t seed = 0;           ///< sampling seed (each request restarts from it)
  /// An adapter folder (Adapter.h) merged into the model at load; "": none.
  std::string adapter;
};

/// Loads the model folder (config, safetensors, tokenizer files) and returns
/// an engine whose candidates are decoded by block diffusion. Never throws.
Result<std::unique_ptr<InfillEngine>>
createDiceInfillEngine(const std::string &modelDir,
                       const DiceEngineOptions &options);

} // namespace dice

#endif // DICE_MODEL_DICEINFILLENGINE_H
