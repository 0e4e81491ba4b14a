//===- ModelEnginePlugin.cpp - the embedded DICE model, loaded on demand --===//
//
// The one way into the model runtime (and LibTorch) from the compiler: a
// module that ModelEngineLoader.cpp opens the first time a compile asks for
// the model, so dice-opt itself never loads LibTorch (which costs most of a
// second at start-up) for replay files and warm kernel databases. Built only
// with the model runtime (DICE_ENABLE_TORCH).
//
//===----------------------------------------------------------------------===//

#include "dice/Infill/ModelEnginePlugin.h"
#include "dice/Model/DiceInfillEngine.h"

#include <torch/cuda.h>

extern "C" __attribute__((visibility("default")))
dice::Result<std::unique_ptr<dice::InfillEngine>>
DICE_MODEL_ENGINE_ENTRY(const char *modelDir, const char *adapterDir,
                        const char *device, const char *dtype) {
  dice::DiceEngineOptions options;
  options.adapter = adapterDir;
  options.device = device;
  if (options.device == "auto")
    options.device = torch::cuda::is_available() ? "cuda" : "cpu";
  options.dtype = dtype; // "auto": computeDType's rule
  dice::Result<std::unique_ptr<dice::InfillEngine>> engine =
      dice::createDiceInfillEngine(modelDir, options);
  if (!engine)
    return dice::Error("cannot load the DICE model: " +
                       engine.error().describe());
  return engine;
}
