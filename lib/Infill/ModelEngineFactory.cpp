//===- ModelEngineFactory.cpp - the embedded DICE model -------------------===//
//
// Built only with the model runtime (DICE_ENABLE_TORCH). The header it
// includes is plain C++; the LibTorch code stays in DiceModelEngine.
//
//===----------------------------------------------------------------------===//

#include "dice/Infill/EngineFactory.h"
#include "dice/Model/DiceInfillEngine.h"

namespace dice {

std::unique_ptr<InfillEngine> createModelInfillEngine(const std::string &modelDir,
                                                      std::string &error) {
  ErrorOr<std::unique_ptr<InfillEngine>> engine =
      createDiceInfillEngine(modelDir, DiceEngineOptions{});
  if (!engine) {
    error = "cannot load the DICE model: " + engine.error();
    return nullptr;
  }
  return std::move(*engine);
}

} // namespace dice
