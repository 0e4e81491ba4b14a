//===- fuzz_model_config.cpp - a checkpoint's config.json -----------------===//
//
// A config.json either gives a model the transformer can be built from
// (every size positive, the head counts dividing, finite positive epsilon
// and rope base) or is an error naming the file.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Model/ModelConfig.h"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dice::Result<dice::ModelConfig> config =
      dice::parseModelConfig(dice::fuzz::asText(data, size), "config.json");
  if (!config) {
    DICE_FUZZ_CHECK(config.error().file == "config.json", config.error().format());
    return 0;
  }
  const dice::ModelConfig &c = *config;
  DICE_FUZZ_CHECK(c.hiddenSize > 0 && c.intermediateSize > 0 &&
                      c.numHiddenLayers > 0 && c.vocabSize > 0 &&
                      c.blockSize > 0 && c.headDim > 0,
                  "a size is not positive");
  DICE_FUZZ_CHECK(c.numAttentionHeads > 0 && c.numKeyValueHeads > 0 &&
                      c.numAttentionHeads % c.numKeyValueHeads == 0,
                  "key/value heads must divide attention heads");
  DICE_FUZZ_CHECK(c.headDim % 2 == 0, "rotary embedding needs an even head_dim");
  DICE_FUZZ_CHECK(std::isfinite(c.rmsNormEps) && c.rmsNormEps > 0,
                  "rms_norm_eps not a positive number");
  DICE_FUZZ_CHECK(std::isfinite(c.ropeTheta) && c.ropeTheta > 0,
                  "rope_theta not a positive number");
  return 0;
}
