//===- NoModelEngine.cpp - the model engine of builds without it ----------===//
//
// Builds without LibTorch (DICE_ENABLE_TORCH off) still compile with replay
// files and warm kernel databases; asking for the model says why it is not
// there.
//
//===----------------------------------------------------------------------===//

#include "dice/Infill/EngineFactory.h"

namespace dice {

std::unique_ptr<InfillEngine> createModelInfillEngine(const std::string &modelDir,
                                                      std::string &error) {
  error = "cannot load the DICE model at '" + modelDir +
          "': dice-opt was built without the model runtime "
          "(DICE_ENABLE_TORCH=OFF); use engine=replay:<file.jsonl> or a warm "
          "kernel database";
  return nullptr;
}

} // namespace dice
